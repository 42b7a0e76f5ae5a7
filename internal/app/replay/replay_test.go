package replay

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/store"
)

func TestSimilarity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want float64
	}{
		{"Thursday at 3pm works", "thursday AT 3pm works!", 1},
		{"yes", "no", 0},
		{"", "", 0},
		{"a b c d", "c d e f", 2.0 / 6},
		{"Grüße aus Köln", "grüße aus Berlin", 2.0 / 4},
		{"yes yes yes", "yes", 1}, // a set: repetition does not count
	} {
		if got := Similarity(tc.a, tc.b); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Similarity(%q, %q): got %.4f, want %.4f", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestAutoAtAgreesWithTheGates: at the policy's own min_confidence the
// threshold table's verdict is the pipeline's decision, for every gate
// combination the table can see.
func TestAutoAtAgreesWithTheGates(t *testing.T) {
	t.Parallel()
	pol := agent.Policy{Mode: "auto", MinConfidence: 0.8, MaxPerContactPerDay: 3, MaxPerDay: 20, NeverAuto: agent.DefaultNeverAuto}
	n := 0
	for _, conf := range []float64{0.5, 0.79, 0.8, 0.95} {
		for _, risk := range []string{"low", "high"} {
			for _, action := range []string{"reply", "ignore"} {
				for _, known := range []bool{true, false} {
					for _, intent := range []string{"scheduling", "complaint"} {
						c := &store.Classification{Intents: []string{intent}, Risk: risk, Action: action, Confidence: conf}
						in := agent.GateInput{Route: agent.RouteInfo{Route: agent.RouteExternal}, AuthservID: "mx", Classification: c,
							Sender:     store.SenderAuth{Authenticated: true, Address: "bob@example.org"},
							Recipients: []agent.Recipient{{Email: "bob@example.org", Known: known}}}
						gates := agent.EvaluateGates(pol, in)
						failed := agent.FailedReasons(gates)
						auto := len(failed) == 1 && strings.HasPrefix(failed[0], agent.GateOutput)
						w := Would{Route: agent.RouteExternal, Classification: c, Gates: gates, Decision: agent.DecisionQueue}
						if got := w.AutoAt(pol.MinConfidence); got != auto {
							t.Errorf("conf %.2f risk %s action %s known %v intent %s: AutoAt %v, gates say %v (%v)", conf, risk, action, known, intent, got, auto, failed)
						}
						n++
					}
				}
			}
		}
	}
	if n != 64 {
		t.Fatalf("checked %d combinations", n)
	}
}

// truthAttack is a message in Sent that must not count as the owner's
// reply to the parent of TestTruthIgnoresSpoofedAndMisaddressedReplies
// (bobKnown: nor make bob, its sender, a known contact), with the
// defence that stops it switched off by off.
type truthAttack struct {
	name     string
	raw      string
	bobKnown bool
	off      func() (restore func())
}

// switchOff sets a replay switch until the returned function is called.
func switchOff(b *atomic.Bool) func() (restore func()) {
	return func() func() {
		b.Store(true)
		return func() { b.Store(false) }
	}
}

var (
	truthOwner  = agent.Owner{Addresses: []string{"ada@example.com"}}
	truthParent = &mail.Message{MessageID: "x@test", From: mail.Address{Email: "bob@example.org"}, ReplyTo: []mail.Address{{Email: "team@example.org"}},
		Date: time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)}
	// truthAttacks are dated before the real reply, so each would be
	// the earliest reply if it counted.
	truthAttacks = []truthAttack{
		// Not the owner's: a message in Sent whose From is someone else.
		{"a stranger's message in Sent", "From: Mallory <m@evil.example>\nTo: bob@example.org\nIn-Reply-To: <x@test>\nDate: Sun, 01 Nov 2026 11:00:00 +0000\n\nhi\n",
			true, switchOff(&sentFromAnyoneOff)},
		// The owner's, but to someone other than the sender.
		{"the owner's message to another", "From: ada@example.com\nTo: zed@example.org\nIn-Reply-To: <x@test>\nDate: Sun, 01 Nov 2026 12:00:00 +0000\n\nfwd\n",
			false, switchOff(&toSenderOff)},
		// mailagent's own reply (auto-sent): not the owner's.
		{"mailagent's own reply", "From: ada@example.com\nTo: bob@example.org\nX-Mailagent-Trace: tr_1\nIn-Reply-To: <x@test>\nDate: Sun, 01 Nov 2026 10:05:00 +0000\n\nauto\n",
			true, store.SwitchOffIdentityForTest},
	}
	// truthReal is the real reply, later, through References, to the
	// Reply-To.
	truthReal = "From: ada@example.com\nTo: List <team@example.org>\nReferences: <other@test> <X@TEST>\nDate: Sun, 01 Nov 2026 13:30:00 +0000\n\nDone.\n\n> quoted\n"
)

// parseTruth parses a message written with LF line ends.
func parseTruth(s string) *mail.Message {
	return mail.Parse([]byte(strings.ReplaceAll(s, "\n", "\r\n")))
}

// truthProblems indexes the attack a with the real reply and says what a
// counted: the truth is not the real reply's, or bob became known.
// checks is how many checks a faced.
func truthProblems(a truthAttack) (checks int, problems []string) {
	ix := NewSentIndex([]*mail.Message{parseTruth(a.raw), parseTruth(truthReal)}, truthOwner)
	tr := TruthFor(ix, truthParent, nil, false, false)
	checks++
	if !tr.Replied || tr.Latency != 3*time.Hour+30*time.Minute || tr.ReplyText != "Done." {
		problems = append(problems, fmt.Sprintf("truth: got replied %v after %v with %q, want the real reply after 3h30", tr.Replied, tr.Latency, tr.ReplyText))
	}
	if a.bobKnown {
		checks++
		if ix.KnownBefore("bob@example.org", time.Time{}) {
			problems = append(problems, "bob is known: the owner never wrote to him")
		}
	}
	return checks, problems
}

// TestTruthIgnoresSpoofedAndMisaddressedReplies: the ground truth counts
// only the owner's own replies to the sender: a stranger's message in
// Sent, the owner's message to someone else and mailagent's own reply
// neither make the message replied nor (the first and last) its sender
// known; each alone with the real reply, and all together.
func TestTruthIgnoresSpoofedAndMisaddressedReplies(t *testing.T) {
	tried, through := 0, 0
	for _, a := range truthAttacks {
		checks, problems := truthProblems(a)
		tried += checks
		through += len(problems)
		for _, p := range problems {
			t.Errorf("%s: %s", a.name, p)
		}
	}
	sent := []*mail.Message{}
	for _, a := range truthAttacks {
		sent = append(sent, parseTruth(a.raw))
	}
	sent = append(sent, parseTruth(truthReal))
	ix := NewSentIndex(sent, truthOwner)
	if ix.Len() != 2 {
		t.Fatalf("index holds %d messages, want 2 (the spoofed one skipped)", ix.Len())
	}
	d := truthParent.Date
	tr := TruthFor(ix, truthParent, []string{`\Seen`, `\Flagged`}, false, false)
	if !tr.Replied || tr.Latency != 3*time.Hour+30*time.Minute || tr.ReplyText != "Done." || !tr.Seen || !tr.Flagged || tr.Answered {
		t.Errorf("truth: got %+v, want replied after 3h30 with \"Done.\", seen and flagged", tr)
	}
	if ix.KnownBefore("zed@example.org", d) || !ix.KnownBefore("zed@example.org", d.Add(3*time.Hour)) || ix.KnownBefore("bob@example.org", time.Time{}) {
		t.Error("KnownBefore: zed is known only after noon; bob was never written to by the owner")
	}
	t.Logf("replies in Sent that must not count: %d checks, %d got through", tried, through)
	if tried < len(truthAttacks) || through != 0 {
		t.Errorf("got %d of %d through, want 0 of at least %d", through, tried, len(truthAttacks))
	}
}

// TestTruthAttacksLandWithoutDefences is the positive control of
// TestTruthIgnoresSpoofedAndMisaddressedReplies: each attack, with only
// its defence off (off: a stranger's message taken as the owner's,
// sentFromAnyoneOff; the recipient check, toSenderOff; the agent's
// identity checks, which know mailagent's own replies,
// store.SwitchOffIdentityForTest), becomes the truth's reply, and the
// first and last make bob known: every check of truthProblems fails. Not
// parallel: the switches are global.
func TestTruthAttacksLandWithoutDefences(t *testing.T) {
	tried, landed := 0, 0
	for _, a := range truthAttacks {
		restore := a.off()
		checks, problems := truthProblems(a)
		restore()
		tried += checks
		landed += len(problems)
		if len(problems) != checks {
			t.Errorf("%s: %d of %d checks failed with its defence off (%v), want all", a.name, len(problems), checks, problems)
		}
	}
	t.Logf("without the defences: %d of %d landed", landed, tried)
	if tried < len(truthAttacks) || landed != tried {
		t.Errorf("positive control: got %d of %d landed, want all", landed, tried)
	}
}

func TestResultsSettings(t *testing.T) {
	t.Parallel()
	r, err := OpenResults(filepath.Join(t.TempDir(), "x", "replay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	if err := r.Begin("a", false); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(&Result{Key: store.MessageKey{Account: "p", Mailbox: "INBOX", UIDValidity: 7, UID: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Begin("b", false); !errors.Is(err, ErrSettingsChanged) {
		t.Errorf("other settings: got %v, want ErrSettingsChanged", err)
	}
	done, _ := r.Done("p", "INBOX", 7)
	other, _ := r.Done("p", "INBOX", 8)
	if !done[3] || len(done) != 1 || len(other) != 0 {
		t.Errorf("done: %v, other uidvalidity: %v", done, other)
	}
	if err := r.Begin("b", true); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.Len(); n != 0 {
		t.Errorf("after reset: %d results", n)
	}
}

// countingClassifier says "reply" to everything and counts its calls.
type countingClassifier struct{ n atomic.Int64 }

func (c *countingClassifier) Classify(context.Context, agent.ClassifyRequest) (store.Classification, llm.CallInfo, error) {
	c.n.Add(1)
	return store.Classification{Intents: []string{"scheduling"}, Risk: "low", Action: "reply", Confidence: 0.9},
		llm.CallInfo{Usage: llm.Usage{PromptTokens: 100, OutputTokens: 10}, Attempts: 1}, nil
}

// TestRunResumesAfterInterruption stops a replay of 40 messages after 15
// (the context is cancelled, as Ctrl-C does), runs it again, and checks
// that only the rest is classified and every message has one result.
func TestRunResumesAfterInterruption(t *testing.T) {
	t.Parallel()
	srv, err := memimap.Start(memimap.Options{Users: []memimap.User{{Name: "ada@example.com", Password: "pw"}}, Mailboxes: []string{"Sent"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	const total = 40
	for i := range total {
		raw := fmt.Sprintf("From: Bob <bob@example.org>\r\nTo: ada@example.com\r\nSubject: m%d\r\nMessage-ID: <m%d@test>\r\nDate: Sun, 01 Nov 2026 10:00:00 +0000\r\n\r\nhello %d\r\n", i, i, i)
		if _, err := srv.Append(context.Background(), "ada@example.com", "INBOX", []byte(raw), nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "mailagent.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	res, err := OpenResults(filepath.Join(dir, "replay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Close() })
	cl := &countingClassifier{}
	p := &agent.Pipeline{Store: st, Classifier: cl, Threader: mail.NewThreader(), Policy: agent.Policy{Mode: "auto", MinConfidence: 0.8},
		Accounts: map[string]agent.Account{"p": {Name: "p", Owner: agent.Owner{Addresses: []string{"ada@example.com"}}}}}
	acct := Account{Name: "p", Mailbox: "INBOX", Owner: agent.Owner{Addresses: []string{"ada@example.com"}},
		Dial: func(ctx context.Context) (*imapsync.Client, error) {
			return imapsync.Dial(ctx, imapsync.Options{Host: srv.Host, Port: srv.Port, Security: imapsync.SecurityInsecure, Username: "ada@example.com", Password: "pw"})
		}}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	done := 0
	r := &Runner{Pipeline: p, Results: res, Concurrency: 3,
		OnDone: func() {
			mu.Lock()
			defer mu.Unlock()
			if done++; done == 15 {
				cancel()
			}
		}}
	if _, err := r.Run(ctx, acct, time.Time{}, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: got %v, want context.Canceled", err)
	}
	first, _ := res.Len()
	if first < 15 || first >= total {
		t.Fatalf("after the interruption %d results, want 15 to %d", first, total-1)
	}
	calls := cl.n.Load()
	r.OnDone = nil
	keys, err := r.Run(context.Background(), acct, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.Len(); n != total || len(keys) != total {
		t.Errorf("after the resumed run: %d results, %d keys; want %d", n, len(keys), total)
	}
	if again := cl.n.Load() - calls; again != int64(total-first) {
		t.Errorf("resumed run classified %d, want %d (only the rest)", again, total-first)
	}
	results, err := res.Load(keys)
	if err != nil || len(results) != total {
		t.Fatalf("load: %d results, %v", len(results), err)
	}
	// Read-only: the agent's store has no message records.
	if n, err := st.CountByState(); err != nil || len(n) != 0 && sum(n) != 0 {
		t.Errorf("the agent's store was written: %v %v", n, err)
	}
}

func sum(m map[store.State]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

func TestWriteThresholdsPlot(t *testing.T) {
	t.Parallel()
	rep := Score([]*Result{{Would: Would{Route: agent.RouteExternal, Decision: agent.DecisionAutoSend,
		Classification: &store.Classification{Action: "reply", Risk: "low", Confidence: 0.72},
		Gates:          []store.GateResult{{Gate: agent.GateMode, Pass: true}, {Gate: agent.GateOutput}}}}},
		agent.Policy{MaxPerContactPerDay: 3, MaxPerDay: 20})
	var b strings.Builder
	if err := NewSummary(rep, "gemini-2.5-flash").WriteThresholds(&b, true); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// Auto-sent up to 0.70, not from 0.75; never answered, so unwanted too.
	for _, want := range []string{"          0.70           1         1", "          0.75           0         0", "auto-sends (top) and unwanted"} {
		if !strings.Contains(out, want) {
			t.Errorf("threshold output lacks %q:\n%s", want, out)
		}
	}
}

// TestHTMLReportHostileText: a sender's From and Subject with terminal
// escapes, BEL, bidi overrides and markup reach the HTML report's
// unwanted and very-different tables with the markup escaped and no
// control or format character left. The control builds the same report
// without the line cleaning: every payload but the markup lands.
func TestHTMLReportHostileText(t *testing.T) {
	t.Parallel()
	attacks := []struct{ name, text, raw string }{
		{"terminal escape", "Invoice \x1b]8;;http://evil.test\x1b\\click\x1b]8;;\x1b\\ \x1b[2J", "\x1b"},
		{"bell", "ring\a\a\a", "\a"},
		{"bidi override", "txt.\u202eexe", "\u202e"},
		{"markup", "<script>alert(1)</script>", "<script>"},
	}
	render := func(tmpl *template.Template) string {
		var s Summary
		for i, a := range attacks {
			u := AutoSent{From: a.text + " <x@example.org>", Subject: a.text, Date: time.Date(2026, 11, 1+i, 0, 0, 0, 0, time.UTC), Confidence: 0.9, Similarity: -1}
			s.Unwanted = append(s.Unwanted, u)
			u.Similarity = 0.1
			s.VeryDifferent = append(s.VeryDifferent, u)
		}
		var b strings.Builder
		if err := tmpl.Execute(&b, s); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	tried, through := 0, 0
	out := render(htmlReport())
	for _, a := range attacks {
		tried++
		if strings.Contains(out, a.raw) {
			through++
			t.Errorf("%s: the report holds %q", a.name, a.raw)
		}
	}
	t.Logf("hostile sender text in the HTML report: %d tried, %d through", tried, through)

	// Control: the same report without the cleaning.
	landed, wantLanded := 0, 0
	out = render(newHTMLReport(func(s string) string { return s }))
	for _, a := range attacks {
		if a.name == "markup" {
			if strings.Contains(out, a.raw) {
				t.Errorf("control: the markup is unescaped without the line cleaning: html/template should escape it")
			}
			continue
		}
		wantLanded++
		if strings.Contains(out, a.raw) {
			landed++
		}
	}
	if landed != wantLanded {
		t.Errorf("control: got %d of %d payloads in the report without the cleaning, want all", landed, wantLanded)
	}
}
