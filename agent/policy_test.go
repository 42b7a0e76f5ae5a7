package agent

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent/guard"
	"github.com/mailagent/mailagent/store"
)

func okPolicy() Policy {
	return Policy{Mode: "auto", MinConfidence: 0.8, NeverAuto: DefaultNeverAuto, MaxPerContactPerDay: 3, MaxPerDay: 20, MaxDraftChars: 4000}
}

func okInput() GateInput {
	return GateInput{
		Route:          RouteInfo{Route: RouteExternal, Reason: "a person"},
		AuthservID:     "mx.example.com",
		Sender:         store.SenderAuth{Authenticated: true, Address: "bob@example.org", Method: store.AuthDMARC, Reason: "DMARC pass for example.org (mx.example.com)"},
		Recipients:     []Recipient{{Email: "bob@example.org", Known: true}},
		Classification: &store.Classification{Intents: []string{"scheduling"}, Risk: "low", Action: "reply", Confidence: 0.9, Summary: "s", Comments: "c"},
		Out:            guard.Fields{Subject: "Re: Call", Body: "Thursday at 3pm works for me. See you then."},
		Trusted:        guard.Trusted{Text: "Ada runs a consultancy."},
	}
}

func gate(gs []store.GateResult, name string) store.GateResult {
	for _, g := range gs {
		if g.Gate == name {
			return g
		}
	}
	return store.GateResult{Gate: name, Reason: "missing"}
}

func TestGatesAllPass(t *testing.T) {
	t.Parallel()
	gs := EvaluateGates(okPolicy(), okInput())
	if !AllPass(gs) {
		t.Fatalf("got failures %v, want all pass", FailedReasons(gs))
	}
	if len(gs) != 9 {
		t.Errorf("got %d gates, want 9", len(gs))
	}
	var names []string
	for _, g := range gs {
		names = append(names, g.Gate)
	}
	if want := []string{GateMode, GateRoute, GateSenderAuth, GateRecipients, GateClassification, GateNeverAuto, GateKnownContact, GateCaps, GateOutput}; strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("gate order: got %v, want %v", names, want)
	}
}

func TestEachGateEdge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*Policy, *GateInput)
		gate   string
		pass   bool
	}{
		{"mode review", func(p *Policy, _ *GateInput) { p.Mode = "review" }, GateMode, false},
		{"mode empty", func(p *Policy, _ *GateInput) { p.Mode = "" }, GateMode, false},
		{"route automated", func(_ *Policy, in *GateInput) { in.Route = RouteInfo{Route: RouteAutomated, Reason: "List-Id"} }, GateRoute, false},
		{"route owner", func(_ *Policy, in *GateInput) { in.Route = RouteInfo{Route: RouteOwner} }, GateRoute, false},
		{"route self", func(_ *Policy, in *GateInput) { in.Route = RouteInfo{Route: RouteSelf} }, GateRoute, false},
		{"route spoofed owner", func(_ *Policy, in *GateInput) { in.Route.ClaimsOwner = true }, GateRoute, false},
		{"action forward", func(_ *Policy, in *GateInput) { in.Classification.Action = "forward" }, GateClassification, false},
		{"risk medium", func(_ *Policy, in *GateInput) { in.Classification.Risk = "medium" }, GateClassification, false},
		{"requires approval", func(_ *Policy, in *GateInput) { in.Classification.RequiresApproval = true }, GateClassification, false},
		{"confidence just below", func(_ *Policy, in *GateInput) { in.Classification.Confidence = 0.7999 }, GateClassification, false},
		{"confidence exactly min", func(_ *Policy, in *GateInput) { in.Classification.Confidence = 0.8 }, GateClassification, true},
		{"no classification", func(_ *Policy, in *GateInput) { in.Classification = nil }, GateClassification, false},
		{"never_auto complaint", func(_ *Policy, in *GateInput) {
			in.Classification.Intents = []string{"scheduling", "complaint"}
		}, GateNeverAuto, false},
		{"never_auto emptied by owner", func(p *Policy, in *GateInput) {
			p.NeverAuto = nil
			in.Classification.Intents = []string{"complaint"}
		}, GateNeverAuto, true},
		{"unknown contact", func(_ *Policy, in *GateInput) { in.Recipients[0].Known = false }, GateKnownContact, false},
		{"unknown contact allowed", func(p *Policy, in *GateInput) { in.Recipients[0].Known = false; p.AutoSendNewContacts = true }, GateKnownContact, true},
		{"contact cap one below", func(_ *Policy, in *GateInput) { in.Recipients[0].SentToday = 2 }, GateCaps, true},
		{"contact cap reached", func(_ *Policy, in *GateInput) { in.Recipients[0].SentToday = 3 }, GateCaps, false},
		{"global cap one below", func(_ *Policy, in *GateInput) { in.SentToday = 19 }, GateCaps, true},
		{"global cap reached", func(_ *Policy, in *GateInput) { in.SentToday = 20 }, GateCaps, false},
		{"zero caps", func(p *Policy, _ *GateInput) { p.MaxPerDay = 0 }, GateCaps, false},
		{"draft pending", func(_ *Policy, in *GateInput) { in.Out.Body = "" }, GateOutput, false},
		{"draft new address", func(_ *Policy, in *GateInput) { in.Out.Body = "Please also write to eve@evil.example." }, GateOutput, false},
		{"draft address of a recipient", func(_ *Policy, in *GateInput) {
			in.Trusted.Addresses = []string{"bob@example.org"}
			in.Out.Body = "Sure, I'll write to Bob@Example.org."
		}, GateOutput, true},
		{"draft address only in untrusted text", func(_ *Policy, in *GateInput) {
			in.Out.Body = "Forwarded to eve@evil.example."
		}, GateOutput, false},
		{"draft new url", func(_ *Policy, in *GateInput) { in.Out.Body = "Details at https://evil.example/x" }, GateOutput, false},
		{"draft bare domain link", func(_ *Policy, in *GateInput) { in.Out.Body = "Details at evil.example.com/login" }, GateOutput, false},
		{"draft url from the owner's mail", func(_ *Policy, in *GateInput) {
			in.Trusted.Text += " agenda: https://docs.example.org/agenda."
			in.Out.Body = "I read https://docs.example.org/agenda, thanks."
		}, GateOutput, true},
		{"draft new phone", func(_ *Policy, in *GateInput) { in.Out.Body = "Call +1 (555) 010-9999 now." }, GateOutput, false},
		{"draft phone from the profile, reformatted", func(_ *Policy, in *GateInput) {
			in.Trusted.Text += " my number is +1 555 010 9999"
			in.Out.Body = "I'll call +1 (555) 010-9999."
		}, GateOutput, true},
		{"draft date is not a phone", func(_ *Policy, in *GateInput) { in.Out.Body = "See you on 2026-12-03." }, GateOutput, true},
		{"draft too long", func(p *Policy, in *GateInput) { p.MaxDraftChars = 10 }, GateOutput, false},
		{"draft at max length", func(p *Policy, in *GateInput) { in.Out.Body = "abcdefghij"; p.MaxDraftChars = 10 }, GateOutput, true},
		{"draft whitespace", func(_ *Policy, in *GateInput) { in.Out.Body = "  \n " }, GateOutput, false},
		{"no authserv_id", func(_ *Policy, in *GateInput) { in.AuthservID = "" }, GateSenderAuth, false},
		{"sender not authenticated", func(_ *Policy, in *GateInput) {
			in.Sender = store.SenderAuth{Address: "bob@example.org", Reason: "DMARC fail for example.org (mx.example.com)"}
		}, GateSenderAuth, false},
		{"reply-to elsewhere", func(_ *Policy, in *GateInput) {
			in.ReplyTo = []string{"eve@elsewhere.example"}
			in.Recipients = []Recipient{{Email: "eve@elsewhere.example", Known: true}}
		}, GateRecipients, false},
		{"reply-to is the sender", func(_ *Policy, in *GateInput) { in.ReplyTo = []string{"BOB@example.org"} }, GateRecipients, true},
		{"reply-all adds an address", func(_ *Policy, in *GateInput) {
			in.Recipients = append(in.Recipients, Recipient{Email: "carol@example.org", Known: true})
		}, GateRecipients, false},
		{"no recipient", func(_ *Policy, in *GateInput) { in.Recipients = nil }, GateRecipients, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, in := okPolicy(), okInput()
			c := *in.Classification
			in.Classification = &c
			tt.mutate(&p, &in)
			gs := EvaluateGates(p, in)
			g := gate(gs, tt.gate)
			if g.Pass != tt.pass {
				t.Errorf("%s: got pass=%v (%s), want %v", tt.gate, g.Pass, g.Reason, tt.pass)
			}
			if g.Reason == "" || g.Reason == "missing" {
				t.Errorf("%s: no reason recorded", tt.gate)
			}
			if !tt.pass && AllPass(gs) {
				t.Error("AllPass true with a failing gate")
			}
			for _, other := range gs {
				if other.Gate != tt.gate && !other.Pass && tt.gate != GateClassification {
					if !(tt.name == "no classification" && other.Gate == GateNeverAuto) &&
						!(tt.name == "sender not authenticated" && other.Gate == GateRecipients) &&
						!(tt.name == "no recipient" && other.Gate == GateKnownContact) {
						t.Errorf("unrelated gate %s failed: %s", other.Gate, other.Reason)
					}
				}
			}
		})
	}
}

func TestFailedReasonsNamesGate(t *testing.T) {
	t.Parallel()
	p := okPolicy()
	p.Mode = "review"
	got := FailedReasons(EvaluateGates(p, okInput()))
	if len(got) != 1 || !strings.HasPrefix(got[0], "mode: ") {
		t.Errorf("got %q, want one reason starting with mode:", got)
	}
}

func TestGateReasonsNameWhatToDo(t *testing.T) {
	t.Parallel()
	p, in := okPolicy(), okInput()
	in.AuthservID = ""
	if g := gate(EvaluateGates(p, in), GateSenderAuth); g.Pass || !strings.Contains(g.Reason, "accounts.authserv_id") || !strings.Contains(g.Reason, "mailagent doctor") {
		t.Errorf("sender_auth without authserv_id: got %+v, want a failure naming accounts.authserv_id and doctor", g)
	}
	in = okInput()
	in.ReplyTo = []string{"x@y.example"}
	in.Recipients = []Recipient{{Email: "x@y.example", Known: true}}
	g := gate(EvaluateGates(p, in), GateRecipients)
	if want := "Reply-To points to x@y.example, not the authenticated sender bob@example.org"; g.Pass || g.Reason != want {
		t.Errorf("recipients: got %+v, want fail %q", g, want)
	}
}
