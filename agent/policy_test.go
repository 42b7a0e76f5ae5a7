package agent

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/store"
)

func okPolicy() Policy {
	return Policy{Mode: "auto", MinConfidence: 0.8, NeverAuto: DefaultNeverAuto, MaxPerContactPerDay: 3, MaxPerDay: 20, MaxDraftChars: 4000}
}

func okInput() GateInput {
	return GateInput{
		Route:          RouteInfo{Route: RouteExternal, Reason: "a person"},
		Classification: &store.Classification{Intents: []string{"scheduling"}, Risk: "low", Action: "reply", Confidence: 0.9, Summary: "s", Comments: "c"},
		ContactKnown:   true,
		Draft:          "Thursday at 3pm works for me. See you then.",
		Allowed:        "Can we move our call to Thursday 3pm?",
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
	gs := EvaluateGates(okPolicy(), okInput())
	if !AllPass(gs) {
		t.Fatalf("got failures %v, want all pass", FailedReasons(gs))
	}
	if len(gs) != 7 {
		t.Errorf("got %d gates, want 7", len(gs))
	}
}

func TestEachGateEdge(t *testing.T) {
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
		{"unknown contact", func(_ *Policy, in *GateInput) { in.ContactKnown = false }, GateKnownContact, false},
		{"unknown contact allowed", func(p *Policy, in *GateInput) { in.ContactKnown = false; p.AutoSendNewContacts = true }, GateKnownContact, true},
		{"contact cap one below", func(_ *Policy, in *GateInput) { in.SentToContactToday = 2 }, GateCaps, true},
		{"contact cap reached", func(_ *Policy, in *GateInput) { in.SentToContactToday = 3 }, GateCaps, false},
		{"global cap one below", func(_ *Policy, in *GateInput) { in.SentToday = 19 }, GateCaps, true},
		{"global cap reached", func(_ *Policy, in *GateInput) { in.SentToday = 20 }, GateCaps, false},
		{"zero caps", func(p *Policy, _ *GateInput) { p.MaxPerDay = 0 }, GateCaps, false},
		{"draft pending", func(_ *Policy, in *GateInput) { in.Draft = "" }, GateOutput, false},
		{"draft new address", func(_ *Policy, in *GateInput) { in.Draft = "Please also write to eve@evil.example." }, GateOutput, false},
		{"draft too long", func(p *Policy, in *GateInput) { p.MaxDraftChars = 10 }, GateOutput, false},
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
					if !(tt.name == "no classification" && other.Gate == GateNeverAuto) {
						t.Errorf("unrelated gate %s failed: %s", other.Gate, other.Reason)
					}
				}
			}
		})
	}
}

func TestFailedReasonsNamesGate(t *testing.T) {
	p := okPolicy()
	p.Mode = "review"
	got := FailedReasons(EvaluateGates(p, okInput()))
	if len(got) != 1 || !strings.HasPrefix(got[0], "mode: ") {
		t.Errorf("got %q, want one reason starting with mode:", got)
	}
}
