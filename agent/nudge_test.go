package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

const nudgeCarol = "carol@example.org"

// fakeClock is an injectable clock for the timer tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// nudgeWorld is a pipeline with reply tracking whose follow-up drafts may
// go out on their own to known contacts (followup.auto_send_known_contacts),
// wired as cmd/mailagent wires it. Carol is known, with one example the
// owner really approved; the owner asked her something. autoSend is the
// AutoSend hook; nil wires Pipeline.AutoNudge.
func nudgeWorld(t *testing.T, autoSend func(p *Pipeline) func(context.Context, *store.QueueItem) error) (*Pipeline, *store.Store, *memMailer, *fakeClock) {
	t.Helper()
	p, st, mailer, _ := newLearnPipeline(t, "auto")
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	p.Now = clock.Now
	f := &followup.Tracker{Store: st, Now: clock.Now, Accounts: p.Accounts,
		Policy: followup.Policy{Enabled: true, DefaultAfter: 72 * time.Hour, MaxNudges: 2, AutoSendKnownContacts: true}}
	f.Known = func(account, email string) bool {
		c, err := st.GetContact(account, email)
		return err == nil && c.Known
	}
	if autoSend == nil {
		autoSend = func(p *Pipeline) func(context.Context, *store.QueueItem) error {
			return func(ctx context.Context, q *store.QueueItem) error { _, err := p.AutoNudge(ctx, q.ID); return err }
		}
	}
	f.AutoSend = autoSend(p)
	p.Followups = f
	if err := st.MarkKnown("a", []string{nudgeCarol}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddExample(&store.Example{Account: "a", Kind: store.ExampleApproved, Contact: nudgeCarol,
		Text: "Dear Carol, thank you, these are the owner's own words.", Source: "q_real"}); err != nil {
		t.Fatal(err)
	}
	ask := &mail.Message{MessageID: "ask@example.com", From: mail.Address{Email: "ada@example.com"},
		To: []mail.Address{{Email: nudgeCarol}}, Subject: "Figures", Date: clock.Now(), CleanText: "Could you send the figures?"}
	if err := f.OwnerSent(context.Background(), "a", followup.SentMail{Message: ask, Asks: true}); err != nil {
		t.Fatal(err)
	}
	return p, st, mailer, clock
}

// fireNudge runs the timers to the first follow-up draft (a reminder,
// then the draft) and returns its queue id.
func fireNudge(t *testing.T, p *Pipeline, clock *fakeClock) string {
	t.Helper()
	for range 2 {
		clock.Add(73 * time.Hour)
		if _, err := p.Followups.FireDue(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return followup.NudgeID(store.FollowupID("a", "sent:ask@example.com"), 1)
}

// learnedFrom returns the examples whose source is id.
func learnedFrom(t *testing.T, st *store.Store, id string) []store.Example {
	t.Helper()
	exs, err := st.ListExamples("a")
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Example
	for _, e := range exs {
		if e.Source == id {
			out = append(out, e)
		}
	}
	return out
}

// TestAutoNudgeIsAutomaticMail: an unattended follow-up goes out through
// the outbox as automatic mail (Auto-Submitted: auto-generated, the trace
// header, its own Auto record), exactly once, never through Approve: it
// is not learned, the owner's real example stays, it counts as an
// automatic send to Carol (not the owner's), and the daily cap is spent
// once, by the send that happened.
func TestAutoNudgeIsAutomaticMail(t *testing.T) {
	t.Parallel()
	p, st, mailer, clock := nudgeWorld(t, nil)
	p.Policy.SendDelay = time.Minute // inspect the record before it goes
	id := fireNudge(t, p, clock)
	ob, err := st.GetOutbox(ApprovalOutboxID(id))
	if err != nil {
		t.Fatalf("no outbox record for the nudge: %v", err)
	}
	raw := string(ob.Raw)
	if !ob.Auto || !strings.Contains(raw, "\r\nAuto-Submitted: auto-generated\r\n") || !strings.Contains(raw, TraceHeader+": "+id) {
		t.Fatalf("record auto=%v, headers:\n%s", ob.Auto, raw[:strings.Index(raw, "\r\n\r\n")])
	}
	clock.Add(2 * time.Minute)
	if err := p.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AutoNudge(context.Background(), id); err == nil {
		t.Error("a second AutoNudge of the same draft was accepted")
	}
	if err := p.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(mailer.sent) != 1 || len(mailer.sent[0]) != 1 || mailer.sent[0][0] != nudgeCarol {
		t.Fatalf("sent %v, want the one follow-up to Carol", mailer.sent)
	}
	if q := item(t, st, id); q.Status != store.QueueSent {
		t.Errorf("nudge item %s, want sent", q.Status)
	}
	if got := learnedFrom(t, st, id); len(got) != 0 {
		t.Errorf("the automatic follow-up became an example: %+v", got)
	}
	if got := learnedFrom(t, st, "q_real"); len(got) != 1 {
		t.Errorf("the owner's real example for Carol: %d, want it kept", len(got))
	}
	if recs := records(t, st); len(recs) != 0 {
		t.Errorf("memory records written: %+v", recs)
	}
	c, err := st.GetContact("a", nudgeCarol)
	if err != nil || c.AutoReplies != 1 || c.OwnerReplies != 0 {
		t.Errorf("Carol: %+v (%v), want one automatic send and none of the owner's", c, err)
	}
	if per, all, err := st.AutoSendCounts("a", nudgeCarol, store.Day(clock.Now())); err != nil || per != 1 || all != 1 {
		t.Errorf("caps spent %d/%d (%v), want 1/1", per, all, err)
	}
}

// TestAutoNudgeRefusesBeforeSpending: a follow-up that may not go out on
// its own (the cap reached, an unknown contact, two recipients) waits for
// approval, and nothing is counted against the caps.
func TestAutoNudgeRefusesBeforeSpending(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(p *Pipeline, st *store.Store)
	}{
		{"per-contact cap reached", func(p *Pipeline, _ *store.Store) { p.Policy.MaxPerContactPerDay = 0 }},
		{"daily cap reached", func(p *Pipeline, _ *store.Store) { p.Policy.MaxPerDay = 0 }},
		{"not a known contact", func(p *Pipeline, st *store.Store) {
			p.Followups.Known = func(string, string) bool { return false }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, st, mailer, clock := nudgeWorld(t, nil)
			c.setup(p, st)
			id := fireNudge(t, p, clock)
			if q := item(t, st, id); q.Status != store.QueuePending || len(mailer.sent) != 0 {
				t.Fatalf("nudge %s, sent %v; want it pending for approval and nothing sent", q.Status, mailer.sent)
			}
			if per, all, _ := st.AutoSendCounts("a", nudgeCarol, store.Day(clock.Now())); per != 0 || all != 0 {
				t.Errorf("caps spent %d/%d by a send that did not happen", per, all)
			}
		})
	}
	// Two recipients: refused by AutoNudge itself, before the caps.
	p, st, _, clock := nudgeWorld(t, nil)
	p.Followups.AutoSend = nil
	id := fireNudge(t, p, clock)
	if _, err := st.TransitionQueueItem(id, []string{store.QueuePending}, store.QueuePending, func(q *store.QueueItem) error {
		q.To = append(q.To, mail.Address{Email: "dave@example.org"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AutoNudge(context.Background(), id); !errors.Is(err, ErrNudgeNotSent) {
		t.Errorf("two recipients: %v, want ErrNudgeNotSent", err)
	}
	if per, all, _ := st.AutoSendCounts("a", nudgeCarol, store.Day(clock.Now())); per != 0 || all != 0 {
		t.Errorf("caps spent %d/%d by a refused nudge", per, all)
	}
}

// TestLearningAdversarial is the adversarial class "learning": mailagent's
// own automatic mail must teach nothing. Tried: the unattended nudge
// (example, memory, known), and mail in the Sent folder that carries
// Auto-Submitted or the trace header (mailagent's nudges, auto-replies,
// digests; a vacation reply). The positive control is the defence
// switched off: the old wiring that sent the nudge through Approve
// learns it as an example for Carol, and the same Sent mail without its
// headers is learned. A nudge the owner approves by hand still teaches.
func TestLearningAdversarial(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tried, through := 0, 0
	attack := func(name string, landed bool) {
		tried++
		if landed {
			through++
			t.Errorf("%s: learned", name)
		}
	}
	p, st, _, clock := nudgeWorld(t, nil)
	id := fireNudge(t, p, clock)
	if q := item(t, st, id); q.Status != store.QueueSent {
		t.Fatalf("the unattended nudge is %s, want sent", q.Status)
	}
	attack("the unattended nudge as an example", len(learnedFrom(t, st, id)) != 0)
	attack("the unattended nudge as a memory record", len(records(t, st)) != 0)
	c, _ := st.GetContact("a", nudgeCarol)
	attack("the unattended nudge counted as the owner's reply", c == nil || c.OwnerReplies != 0)

	sentMail := func(id string, headers ...string) *mail.Message {
		raw := strings.Join(headers, "\r\n")
		if raw != "" {
			raw += "\r\n"
		}
		raw += "From: Ada <ada@example.com>\r\nTo: Dave <dave@example.org>\r\nSubject: Re: Plans\r\nMessage-ID: <" + id +
			">\r\nDate: Mon, 02 Mar 2026 09:00:00 +0000\r\n\r\nAn automatic text that is not the owner's voice.\r\n"
		return mail.Parse([]byte(raw))
	}
	auto := map[string]*mail.Message{
		"mailagent's nudge in Sent":   sentMail("n1@example.com", "Auto-Submitted: auto-generated", TraceHeader+": q_fu_x_1"),
		"mailagent's auto-reply":      sentMail("n2@example.com", "Auto-Submitted: auto-replied", TraceHeader+": tr_1"),
		"a digest (Auto-Submitted)":   sentMail("n3@example.com", "Auto-Submitted: auto-generated"),
		"trace header only":           sentMail("n4@example.com", TraceHeader+": q_1"),
		"a vacation reply":            sentMail("n5@example.com", "Auto-Submitted: auto-replied; vacation"),
		"Auto-Submitted in any case":  sentMail("n6@example.com", "AUTO-SUBMITTED: Auto-Generated"),
		"unsubscribe mail (auto-gen)": sentMail("n7@example.com", "Auto-Submitted: auto-generated", TraceHeader+": unsub"),
	}
	for name, m := range auto {
		p.LearnOwnerReplies("a", []*mail.Message{m})
		attack(name, len(learnedFrom(t, st, m.MessageID)) != 0)
	}
	t.Logf("learning attacks: %d tried, %d got through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d learning attacks got through", through, tried)
	}

	// Positive control 1: the nudge through Approve (the defect) is
	// learned as an approved example for Carol.
	approve := func(p *Pipeline) func(context.Context, *store.QueueItem) error {
		return func(ctx context.Context, q *store.QueueItem) error { _, err := p.Approve(ctx, q.ID, ""); return err }
	}
	p2, st2, _, clock2 := nudgeWorld(t, approve)
	id2 := fireNudge(t, p2, clock2)
	if got := learnedFrom(t, st2, id2); len(got) != 1 || got[0].Contact != nudgeCarol {
		t.Fatalf("positive control: the nudge through Approve taught %+v, want one example for Carol", got)
	}
	// Positive control 2: the same Sent mail without its headers is the
	// owner's, and is learned.
	plain := sentMail("p1@example.com")
	p.LearnOwnerReplies("a", []*mail.Message{plain})
	if len(learnedFrom(t, st, plain.MessageID)) != 1 {
		t.Fatal("positive control: the owner's plain Sent mail was not learned")
	}

	// The owner's hand approval of a follow-up draft still teaches.
	p3, st3, _, clock3 := nudgeWorld(t, nil)
	p3.Followups.Policy.AutoSendKnownContacts = false
	id3 := fireNudge(t, p3, clock3)
	if _, err := p3.Approve(ctx, id3, ""); err != nil {
		t.Fatal(err)
	}
	if got := learnedFrom(t, st3, id3); len(got) != 1 {
		t.Errorf("the owner's approved follow-up taught %+v, want one example", got)
	}
}
