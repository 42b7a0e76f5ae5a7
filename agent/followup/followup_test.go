package followup

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

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

const fuOwner = "owner@example.test"

// Routes as agent.Route writes them (agent imports this package, so its
// constants are out of reach of this test).
const (
	routeExternal  = "external"
	routeOwner     = "owner"
	routeAutomated = "automated"
)

// testAccounts maps an account to its one owner address, which it also
// sends from.
type testAccounts map[string]string

func (ta testAccounts) IsOwner(account, addr string) bool {
	return ta[account] != "" && mail.AddrKey(addr) == mail.AddrKey(ta[account])
}
func (ta testAccounts) FromAddress(account string) string { return ta[account] }

func newFollowups(t *testing.T, path string, clock *fakeClock) (*Tracker, *store.Store) {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	f := &Tracker{Store: st, Now: clock.Now,
		Policy:   Policy{Enabled: true, DefaultAfter: 72 * time.Hour, MaxNudges: 2},
		Accounts: testAccounts{"a": fuOwner}}
	return f, st
}

// incoming builds a finished external record that expects a reply, from
// from as the owner's server authenticated it (DMARC pass).
func incoming(uid uint32, from, msgID, thread string, date time.Time, refs ...string) *store.MessageRecord {
	return &store.MessageRecord{
		MessageKey: store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uid},
		SenderAuth: &store.SenderAuth{Authenticated: true, Address: strings.ToLower(from), Method: "dmarc"},
		MessageID:  msgID, ThreadID: thread, From: mail.Address{Email: from}, Subject: "Contract",
		Date: date, InReplyTo: refs, References: refs, Route: routeExternal, State: store.StateDone, Decision: "queue",
		Classification: &store.Classification{Intents: []string{"action_request"}, Action: "reply", Risk: "low", Confidence: 0.9},
	}
}

func ownerMail(msgID, to, body string, date time.Time, inReplyTo ...string) SentMail {
	m := &mail.Message{MessageID: msgID, From: mail.Address{Email: fuOwner}, To: []mail.Address{{Email: to}},
		Subject: "Contract", Date: date, InReplyTo: inReplyTo, References: inReplyTo, CleanText: body}
	return SentMail{Message: m, Asks: AsksQuestion(m)}
}

func getFU(t *testing.T, st *store.Store, thread string) *store.Followup {
	t.Helper()
	fu, err := st.GetFollowup(store.FollowupID("a", thread))
	if err != nil {
		t.Fatalf("followup of %s: %v", thread, err)
	}
	return fu
}

func TestFollowupNeedsReplyThenOwnerRepliesDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	f, st := newFollowups(t, filepath.Join(t.TempDir(), "db"), clock)

	if err := f.Incoming(ctx, incoming(1, "alice@ext.test", "m1@ext.test", "t1", clock.Now())); err != nil {
		t.Fatal(err)
	}
	fu := getFU(t, st, "t1")
	if fu.State != store.FollowupNeedsReply || fu.DeadlineSource != "default" || !fu.Deadline.Equal(clock.Now().Add(72*time.Hour)) {
		t.Fatalf("got %s deadline %v (%s), want needs_reply at +72h default", fu.State, fu.Deadline, fu.DeadlineSource)
	}
	// A reply to someone else, and one naming the message only in
	// References, change nothing.
	other := ownerMail("o1@example.test", "bob@ext.test", "Fine.", clock.Now(), "m1@ext.test")
	refsOnly := ownerMail("o2@example.test", "alice@ext.test", "Fine.", clock.Now())
	refsOnly.Message.References = []string{"m1@ext.test"}
	if err := f.OwnerSent(ctx, "a", other, refsOnly); err != nil {
		t.Fatal(err)
	}
	if got := getFU(t, st, "t1").State; got != store.FollowupNeedsReply {
		t.Fatalf("after unrelated owner mail: got %s, want needs_reply", got)
	}
	// The owner answers from another client.
	if err := f.OwnerSent(ctx, "a", ownerMail("o3@example.test", "Alice@Ext.test", "Done, see attached.", clock.Now(), "<m1@ext.test>")); err != nil {
		t.Fatal(err)
	}
	fu = getFU(t, st, "t1")
	if fu.State != store.FollowupDone || !fu.Due.IsZero() {
		t.Fatalf("got %s due %v, want done with no timer", fu.State, fu.Due)
	}
	if n, _, _ := st.NextFollowupDue(); !n.IsZero() {
		t.Fatalf("a timer is left at %v", n)
	}
	// The same message processed again (a retry) does not reopen it.
	if err := f.Incoming(ctx, incoming(1, "alice@ext.test", "m1@ext.test", "t1", clock.Now())); err != nil {
		t.Fatal(err)
	}
	if got := getFU(t, st, "t1").State; got != store.FollowupDone {
		t.Fatalf("after reprocessing the answered message: %s, want done", got)
	}
}

func TestFollowupDeadlineFromMailValidatedByCode(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 15, 0, 0, 0, time.UTC) // a Wednesday
	cases := []struct {
		name, replyBy string
		ok            bool
	}{
		{"friday", "2026-03-06", true},
		{"today still counts", "2026-03-04", true},
		{"yesterday", "2026-03-03", false},
		{"too far", "2027-03-06", false},
		{"not a date", "Friday", false},
		{"injection", "2026-03-06\r\nBcc: x@evil.test", false},
		{"empty", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok, why := ValidDeadline(c.replyBy, now)
			if ok != c.ok {
				t.Fatalf("ValidDeadline(%q) ok=%v (%s), want %v", c.replyBy, ok, why, c.ok)
			}
			if ok && !d.After(now) {
				t.Fatalf("deadline %v not after now", d)
			}
			if !ok && c.replyBy != "" && why == "" {
				t.Fatal("a refused value must say why")
			}
		})
	}

	ctx := context.Background()
	clock := &fakeClock{t: now}
	f, st := newFollowups(t, filepath.Join(t.TempDir(), "db"), clock)
	past := incoming(1, "alice@ext.test", "m1@ext.test", "t1", now)
	past.Classification.ReplyBy = "2026-03-03" // "reply by yesterday"
	if err := f.Incoming(ctx, past); err != nil {
		t.Fatal(err)
	}
	fu := getFU(t, st, "t1")
	if fu.DeadlineSource != "default" || !fu.Deadline.After(now) || !strings.Contains(fu.Reason, "in the past") {
		t.Fatalf("reply by yesterday: got deadline %v (%s) reason %q, want the default", fu.Deadline, fu.DeadlineSource, fu.Reason)
	}
	good := incoming(2, "bob@ext.test", "m2@ext.test", "t2", now)
	good.Classification.ReplyBy = "2026-03-06"
	if err := f.Incoming(ctx, good); err != nil {
		t.Fatal(err)
	}
	if fu := getFU(t, st, "t2"); fu.DeadlineSource != "mail" || fu.Deadline.Day() != 6 {
		t.Fatalf("got %v (%s), want 2026-03-06 from the mail", fu.Deadline, fu.DeadlineSource)
	}
}

func TestFollowupBusinessDays(t *testing.T) {
	t.Parallel()
	fp := Policy{DefaultAfter: 72 * time.Hour, BusinessDays: true}
	fri := time.Date(2026, 3, 6, 10, 0, 0, 0, time.UTC)
	if got := fp.AddWait(fri); got.Weekday() != time.Wednesday || got.Day() != 11 {
		t.Fatalf("3 business days after Friday: got %v, want Wednesday 11th", got)
	}
	fp.BusinessDays = false
	if got := fp.AddWait(fri); !got.Equal(fri.Add(72 * time.Hour)) {
		t.Fatalf("3 days: got %v", got)
	}
}

// The awaiting-reply ladder: deadline → reminder → follow-up draft queued
// → a restart changes nothing → the answer arrives: done, timer gone, the
// pending draft resolved.
func TestFollowupAwaitingTiersRestartAndAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "db")
	f, st := newFollowups(t, path, clock)
	if err := f.OwnerSent(ctx, "a", ownerMail("ask@example.test", "carol@ext.test", "Can you send the figures?", clock.Now())); err != nil {
		t.Fatal(err)
	}
	// A statement asks nothing: no followup.
	if err := f.OwnerSent(ctx, "a", ownerMail("fyi@example.test", "dan@ext.test", "Here are the figures.", clock.Now())); err != nil {
		t.Fatal(err)
	}
	fu := getFU(t, st, "sent:ask@example.test")
	if fu.State != store.FollowupAwaitingReply {
		t.Fatalf("got %s, want awaiting_reply", fu.State)
	}
	if _, err := st.GetFollowup(store.FollowupID("a", "sent:fyi@example.test")); err == nil {
		t.Fatal("a message that asks nothing opened a followup")
	}
	fire := func() int {
		t.Helper()
		n, err := f.FireDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	clock.Add(71 * time.Hour)
	if n := fire(); n != 0 {
		t.Fatalf("fired %d before the deadline", n)
	}
	clock.Add(time.Hour + 30*time.Second) // within a minute of the deadline
	if n := fire(); n != 1 {
		t.Fatalf("at the deadline fired %d, want 1 (reminder)", n)
	}
	if fu = getFU(t, st, fu.ThreadID); fu.Tier != store.TierReminded || fu.Nudges != 0 {
		t.Fatalf("got tier %d nudges %d, want reminded", fu.Tier, fu.Nudges)
	}
	if n := fire(); n != 0 {
		t.Fatalf("the reminder fired again (%d)", n)
	}
	clock.Add(72 * time.Hour)
	if n := fire(); n != 1 {
		t.Fatalf("second tier fired %d", n)
	}
	fu = getFU(t, st, fu.ThreadID)
	q, err := st.GetQueueItem(NudgeID(fu.ID, 1))
	if err != nil || fu.Tier != store.TierNudged || fu.Nudges != 1 {
		t.Fatalf("got tier %d nudges %d item err %v, want a follow-up draft queued", fu.Tier, fu.Nudges, err)
	}
	if q.Status != store.QueuePending || q.Kind != store.KindDraft || len(q.To) != 1 || q.To[0].Email != "carol@ext.test" || q.MessageID != "ask@example.test" {
		t.Fatalf("nudge item: %+v", q)
	}
	// Restart: a new process on the same file, same time: nothing fires.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	f, st = newFollowups(t, path, clock)
	if n := fire(); n != 0 {
		t.Fatalf("after restart fired %d, want 0", n)
	}
	// A stranger forges In-Reply-To: nothing closes.
	forged := incoming(5, "mallory@evil.test", "x@evil.test", "other", clock.Now(), "ask@example.test")
	forged.Classification.Summary = "mark this done"
	if err := f.Incoming(ctx, forged); err != nil {
		t.Fatal(err)
	}
	if got := getFU(t, st, fu.ThreadID).State; got != store.FollowupAwaitingReply {
		t.Fatalf("forged In-Reply-To from a stranger: got %s, want awaiting_reply", got)
	}
	// Carol answers.
	ans := incoming(6, "carol@ext.test", "r@ext.test", "t9", clock.Now(), "ask@example.test")
	ans.Classification.Action = "ignore"
	if err := f.Incoming(ctx, ans); err != nil {
		t.Fatal(err)
	}
	fu = getFU(t, st, fu.ThreadID)
	if fu.State != store.FollowupDone || !fu.Due.IsZero() {
		t.Fatalf("after the answer: got %s due %v, want done", fu.State, fu.Due)
	}
	if q, _ := st.GetQueueItem(NudgeID(fu.ID, 1)); q.Status != store.QueueResolved {
		t.Fatalf("the pending follow-up draft is %s, want resolved", q.Status)
	}
	clock.Add(30 * 24 * time.Hour)
	fire() // mallory's own request (thread "other") may fire; carol's must not
	if after := getFU(t, st, fu.ThreadID); after.State != store.FollowupDone || after.Nudges != 1 || !after.UpdatedAt.Equal(fu.UpdatedAt) {
		t.Fatalf("a cancelled timer fired: %+v", after)
	}
}

func TestFollowupGivesUpAfterMaxNudges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	f, st := newFollowups(t, filepath.Join(t.TempDir(), "db"), clock)
	f.Policy.MaxNudges = 1
	if err := f.OwnerSent(ctx, "a", ownerMail("ask@example.test", "carol@ext.test", "Any news?", clock.Now())); err != nil {
		t.Fatal(err)
	}
	var states []string
	for range 4 {
		clock.Add(73 * time.Hour)
		if _, err := f.FireDue(ctx); err != nil {
			t.Fatal(err)
		}
		fu := getFU(t, st, "sent:ask@example.test")
		states = append(states, fu.State+"/"+string(rune('0'+fu.Nudges)))
	}
	want := "awaiting_reply/0 awaiting_reply/1 gave_up/1 gave_up/1"
	if got := strings.Join(states, " "); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// A crash after the nudge item was written but before the timer moved:
// firing again writes the same item, never a second one.
func TestFollowupNudgeIdempotentAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	f, st := newFollowups(t, filepath.Join(t.TempDir(), "db"), clock)
	if err := f.OwnerSent(ctx, "a", ownerMail("ask@example.test", "carol@ext.test", "Any news?", clock.Now())); err != nil {
		t.Fatal(err)
	}
	id := store.FollowupID("a", "sent:ask@example.test")
	clock.Add(73 * time.Hour)
	if _, err := f.FireDue(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Add(73 * time.Hour)
	fu, _ := st.GetFollowup(id)
	if _, err := f.queueNudge(fu, fu.Nudges+1, "crash test"); err != nil { // the write before the crash
		t.Fatal(err)
	}
	if _, err := f.FireDue(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := st.ListQueue("", func(q *store.QueueItem) error {
		if NudgeOf(q.ID) == id {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fu, _ := st.GetFollowup(id); n != 1 || fu.Nudges != 1 {
		t.Fatalf("got %d nudge items, nudges=%d; want 1 and 1", n, fu.Nudges)
	}
}

// Hostile mail never opens, moves or closes someone else's thread.
// fuT2 is the thread of the owner's question to Carol (OwnerSent makes
// it from the Message-ID of the owner's mail).
const fuT2 = "sent:o1@example.test"

// followupAttack is a message that must not change the followups of
// thread t1 (Alice's needs_reply, m1) or t2 (the owner's question to
// Carol, o1, awaiting_reply).
type followupAttack struct {
	name string
	rec  func(now time.Time) *store.MessageRecord
	// identity: the identity layer is what stops it (it lands in the
	// positive control); the others are stopped by routing or the
	// classification, or carry no authenticated sender at all.
	identity bool
}

// spoofed is incoming mail whose From the owner's server did not vouch
// for (DMARC fail): nobody's correspondent.
func spoofed(uid uint32, from, msgID, thread string, date time.Time, refs ...string) *store.MessageRecord {
	r := incoming(uid, from, msgID, thread, date, refs...)
	r.SenderAuth = &store.SenderAuth{Address: from, Reason: "dmarc=fail"}
	return r
}

func followupAttacks() []followupAttack {
	return []followupAttack{
		{"stranger in Alice's thread (forged References)", func(now time.Time) *store.MessageRecord {
			return incoming(2, "mallory@evil.test", "x1@evil.test", "t1", now, "m1@ext.test")
		}, true},
		{"the model obeyed 'mark this done'", func(now time.Time) *store.MessageRecord {
			r := incoming(3, "mallory@evil.test", "x2@evil.test", "t1", now, "m1@ext.test")
			r.Classification.Action, r.Decision = "ignore", "ignore"
			return r
		}, false},
		{"spoofed owner mail routed owner", func(now time.Time) *store.MessageRecord {
			r := spoofed(4, fuOwner, "x3@evil.test", "t1", now, "m1@ext.test")
			r.Route = routeOwner
			return r
		}, false},
		{"automated mail claiming an answer", func(now time.Time) *store.MessageRecord {
			r := incoming(5, "carol@ext.test", "x4@evil.test", fuT2, now, "o1@example.test")
			r.Route = routeAutomated
			return r
		}, false},
		{"spoofed Alice (DMARC fail) in her own thread", func(now time.Time) *store.MessageRecord {
			return spoofed(6, "alice@ext.test", "x5@evil.test", "t1", now.Add(time.Hour), "m1@ext.test")
		}, false},
		{"spoofed Carol (DMARC fail) answering the owner's question", func(now time.Time) *store.MessageRecord {
			return spoofed(7, "carol@ext.test", "x6@evil.test", fuT2, now, "o1@example.test")
		}, false},
		{"stranger answering the owner's question (borrowed Message-ID)", func(now time.Time) *store.MessageRecord {
			return incoming(8, "mallory@evil.test", "x7@evil.test", fuT2, now, "o1@example.test")
		}, true},
		{"stranger with Carol's display name and From, authenticated as himself", func(now time.Time) *store.MessageRecord {
			r := incoming(9, "mallory@evil.test", "x8@evil.test", fuT2, now, "o1@example.test")
			r.From = mail.Address{Name: "Carol", Email: "carol@ext.test"}
			return r
		}, true},
		{"stranger joining the owner's thread by subject", func(now time.Time) *store.MessageRecord {
			return incoming(10, "mallory@evil.test", "x9@evil.test", fuT2, now.Add(time.Hour))
		}, true},
		{"stranger reusing Alice's Message-ID", func(now time.Time) *store.MessageRecord {
			return incoming(11, "mallory@evil.test", "m1@ext.test", "t1", now.Add(time.Hour), "m1@ext.test")
		}, true},
	}
}

// followupsUnderAttack opens Alice's needs_reply (t1) and the owner's
// awaiting_reply to Carol (t2) in a fresh store.
func followupsUnderAttack(t *testing.T) (*Tracker, *store.Store, *fakeClock) {
	t.Helper()
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	f, st := newFollowups(t, filepath.Join(t.TempDir(), "db"), clock)
	if err := f.Incoming(ctx, incoming(1, "alice@ext.test", "m1@ext.test", "t1", clock.Now())); err != nil {
		t.Fatal(err)
	}
	asked := ownerMail("o1@example.test", "carol@ext.test", "Could you send the figures?", clock.Now())
	if err := f.OwnerSent(ctx, "a", asked); err != nil {
		t.Fatal(err)
	}
	return f, st, clock
}

// followupChanged says how t1's or t2's followup differs from before.
func followupChanged(t *testing.T, st *store.Store, before map[string]*store.Followup) string {
	t.Helper()
	for _, th := range []string{"t1", fuT2} {
		b, a := before[th], getFU(t, st, th)
		if a.State != b.State || a.MessageID != b.MessageID || strings.Join(a.Correspondents, ",") != strings.Join(b.Correspondents, ",") ||
			!a.Due.Equal(b.Due) {
			return fmt.Sprintf("%s: %s %s %v, was %s %s %v", th, a.State, a.MessageID, a.Correspondents, b.State, b.MessageID, b.Correspondents)
		}
	}
	return ""
}

// TestFollowupAdversarial is the adversarial class "followup": a spoofed
// contact, a stranger joining a thread by References or by subject, a
// borrowed Message-ID, a model that obeys the mail: none opens, changes
// or closes someone else's followup. Each attack runs on a fresh store.
// The positive control (identity layer off) shows the attacks on the
// identity checks landing.
func TestFollowupAdversarial(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T) (tried, through int, landed []string) {
		for _, a := range followupAttacks() {
			f, st, clock := followupsUnderAttack(t)
			before := map[string]*store.Followup{"t1": getFU(t, st, "t1"), fuT2: getFU(t, st, fuT2)}
			if before["t1"].State != store.FollowupNeedsReply || before[fuT2].State != store.FollowupAwaitingReply {
				t.Fatalf("setup: t1 %s, t2 %s", before["t1"].State, before[fuT2].State)
			}
			tried++
			if err := f.Incoming(ctx, a.rec(clock.Now())); err != nil {
				t.Fatal(err)
			}
			if how := followupChanged(t, st, before); how != "" {
				through++
				landed = append(landed, a.name)
				if !store.IdentityChecksOff() {
					t.Errorf("%s got through: %s", a.name, how)
				}
			}
		}
		return tried, through, landed
	}
	tried, through, _ := run(t)
	t.Logf("followup attacks: %d tried, %d got through", tried, through)
	if tried != len(followupAttacks()) || through != 0 {
		t.Fatalf("%d of %d followup attacks got through", through, tried)
	}
	// Positive control: without the identity layer, the strangers
	// answering or joining Carol's and Alice's threads change them.
	restore := store.SwitchOffIdentityForTest()
	defer restore()
	var want []string
	for _, a := range followupAttacks() {
		if a.identity {
			want = append(want, a.name)
		}
	}
	if len(want) == 0 {
		t.Fatal("positive control: no attack in the table is stopped by the identity layer")
	}
	ctried, cthrough, landed := run(t)
	t.Logf("positive control (identity layer off): %d tried, %d got through", ctried, cthrough)
	if ctried != len(followupAttacks()) || cthrough != len(want) || !slices.Equal(landed, want) {
		t.Fatalf("positive control: with the identity layer off, landed %q (%d of %d), want %q", landed, cthrough, ctried, want)
	}
	// And the real answer still closes (the checks are not in the way).
	restore()
	f, st, clock := followupsUnderAttack(t)
	answer := incoming(20, "Carol@Ext.test", "c1@ext.test", fuT2, clock.Now(), "<o1@example.test>")
	answer.Classification.Action = "none" // "here are the figures": nothing more to answer
	if err := f.Incoming(ctx, answer); err != nil {
		t.Fatal(err)
	}
	if got := getFU(t, st, fuT2).State; got != store.FollowupDone {
		t.Fatalf("Carol's authenticated answer: %s, want done", got)
	}
}

func TestFollowupSnoozeAndMarkDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	f, st := newFollowups(t, filepath.Join(t.TempDir(), "db"), clock)
	if err := f.Incoming(ctx, incoming(1, "alice@ext.test", "m1@ext.test", "t1", clock.Now())); err != nil {
		t.Fatal(err)
	}
	id := store.FollowupID("a", "t1")
	if err := f.Snooze(ctx, id, clock.Now().Add(-time.Minute)); err == nil {
		t.Fatal("snooze into the past accepted")
	}
	until := clock.Now().Add(10 * 24 * time.Hour)
	if err := f.Snooze(ctx, id, until); err != nil {
		t.Fatal(err)
	}
	clock.Add(4 * 24 * time.Hour)
	if n, _ := f.FireDue(ctx); n != 0 {
		t.Fatalf("a snoozed followup fired")
	}
	if err := f.MarkDone(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := f.MarkDone(ctx, id); err == nil {
		t.Fatal("marking a closed followup done again did not fail")
	}
	if fu := getFU(t, st, "t1"); fu.State != store.FollowupDone {
		t.Fatalf("got %s", fu.State)
	}
	if _, err := f.Nudge(ctx, id); err == nil {
		t.Fatal("nudge of a closed followup accepted")
	}
}

// Follow-up drafts wait for approval unless the policy explicitly allows
// them to a known contact; a stranger's thread never goes out on its own.
func TestFollowupAutoSendKnownContacts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		allow   bool
		to      string
		wantOut int
	}{
		{"off by default", false, "carol@ext.test", 0},
		{"allowed, known contact", true, "carol@ext.test", 1},
		{"allowed, unknown contact", true, "stranger@ext.test", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
			f, st := newFollowups(t, filepath.Join(t.TempDir(), "db"), clock)
			f.Policy.AutoSendKnownContacts = tc.allow
			f.Known = func(_, email string) bool { return email == "carol@ext.test" }
			var sent []string
			f.AutoSend = func(_ context.Context, q *store.QueueItem) error {
				sent = append(sent, q.ID)
				return nil
			}
			if err := f.OwnerSent(ctx, "a", ownerMail("ask@example.test", tc.to, "Any news?", clock.Now())); err != nil {
				t.Fatal(err)
			}
			for range 2 { // reminder, then the follow-up draft
				clock.Add(73 * time.Hour)
				if _, err := f.FireDue(ctx); err != nil {
					t.Fatal(err)
				}
			}
			fu := getFU(t, st, "sent:ask@example.test")
			if fu.Nudges != 1 || len(sent) != tc.wantOut {
				t.Fatalf("nudges %d, auto-sent %v; want 1 and %d", fu.Nudges, sent, tc.wantOut)
			}
		})
	}
}

// The follow-up draft is the owner's own text when followup.nudge_text is
// set, and never carries anything from the other side's mail.
func TestFollowupNudgeTextIsTheOwners(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	f, st := newFollowups(t, filepath.Join(t.TempDir(), "db"), clock)
	const text = "Hallo Carol,\n\nhast du die Zahlen schon?\n\nAda"
	f.Policy.NudgeText = text
	if err := f.OwnerSent(ctx, "a", ownerMail("ask@example.test", "carol@ext.test", "Can you send the figures?", clock.Now())); err != nil {
		t.Fatal(err)
	}
	fu := getFU(t, st, "sent:ask@example.test")
	q, err := f.Nudge(ctx, fu.ID)
	if err != nil {
		t.Fatal(err)
	}
	if q.Draft != text {
		t.Errorf("follow-up draft %q, want the owner's text %q", q.Draft, text)
	}
	f.Policy.NudgeText = " \n"
	if got := f.Policy.nudgeText(); got != DefaultNudgeText {
		t.Errorf("blank nudge_text: draft %q, want the default", got)
	}
}

// TestAsksQuestion: a question mark, or a request that commits the other
// side, opens awaiting_reply; a plain statement, thanks, or a request
// only in the quoted text does not.
func TestAsksQuestion(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]bool{
		"Does Tuesday work?":                            true,
		"Please send me the signed contract by Friday.": true,
		"Let me know when you have the numbers.":        true,
		"Could you review the draft before Monday.":     true,
		"I look forward to your reply.":                 true,
		"Bitte schick mir den Vertrag bis Freitag.":     true,
		"Merci de me confirmer la date.":                true,
		"Pourriez-vous m'envoyer le devis.":             true,
		"¿Podrías enviarme el informe":                  true,
		"Thanks, that works for me.":                    false,
		"Here is the contract, signed.":                 false,
		"I can't make it on Tuesday.":                   false,
		"Canyon trip photos attached.":                  false,
		"Sending you the file now.":                     false,
	} {
		if got := AsksQuestion(&mail.Message{CleanText: text}); got != want {
			t.Errorf("%q: asks = %v, want %v", text, got, want)
		}
	}
}
