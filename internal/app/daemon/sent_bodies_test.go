package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/rig/bench"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// sentRig is a Sent folder on memimap, reached through a counting proxy,
// and what a Daemon of the account "personal" (owner sentPathsOwner)
// needs around it.
type sentRig struct {
	srv   *memimap.Server
	proxy *bench.CountingProxy
	dial  func(ctx context.Context) (*imapsync.Client, error)
}

func newSentRig(t *testing.T, msgs []appendMsg) *sentRig {
	t.Helper()
	srv, _ := startIMAP(t, memimap.Options{Mailboxes: []string{"Sent", "Drafts"}})
	appendMany(t, srv, "Sent", msgs)
	proxy := bench.StartCountingProxy(t, srv.Addr())
	return &sentRig{srv: srv, proxy: proxy, dial: func(ctx context.Context) (*imapsync.Client, error) {
		return imapsync.Dial(ctx, imapsync.Options{Host: "127.0.0.1", Port: proxy.Port, Security: imapsync.SecurityInsecure,
			Username: testUser, Password: testPass, Account: "personal"})
	}}
}

// daemon returns a Daemon of the account over the rig, with reply
// tracking on, writing to st (a new store when nil) and learning examples
// through mem (st when nil).
func (r *sentRig) daemon(t *testing.T, st *store.Store, mem agent.MemoryStore) *Daemon {
	t.Helper()
	if st == nil {
		st = openSentStore(t)
	}
	if mem == nil {
		mem = st
	}
	m := &Mailer{Accounts: map[string]*AccountMailer{"personal": {Name: "personal", Dial: r.dial, Sent: "Sent"}}}
	t.Cleanup(m.Close)
	accts := agent.Accounts{"personal": {Name: "personal", Owner: sentPathsOwner}}
	p := &agent.Pipeline{Store: st, Accounts: accts, Actor: &agent.Actor{Store: st, Mailer: m, Memory: mem}}
	p.Followups = &followup.Tracker{Store: st, Accounts: accts, Policy: followup.Policy{Enabled: true}}
	return &Daemon{Store: st, Pipeline: p, Mailer: m, SentLookback: 365 * 24 * time.Hour, Concurrency: 1,
		Accounts: []Account{{Name: "personal", Mailbox: "INBOX", Dial: r.dial}}}
}

func openSentStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true}) // no fsync: no crash is tested
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// learned is what the owner's Sent bodies taught: the examples (contact,
// source, subject, text) and the followups (id, state, Message-ID,
// correspondents, deadline), each sorted.
type learned struct{ examples, followups []string }

func learnedIn(t *testing.T, st *store.Store) learned {
	t.Helper()
	es, err := st.ListExamples("personal")
	if err != nil {
		t.Fatal(err)
	}
	var l learned
	for _, e := range es {
		l.examples = append(l.examples, fmt.Sprintf("%s|%s|%s|%q", e.Contact, e.Source, e.Subject, e.Text))
	}
	err = st.ListFollowups(store.FollowupFilter{Account: "personal"}, func(f *store.Followup) error {
		l.followups = append(l.followups, fmt.Sprintf("%s|%s|%s|%v|%s", f.ID, f.State, f.MessageID, f.Correspondents, f.Deadline.UTC().Format(time.RFC3339)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(l.examples)
	slices.Sort(l.followups)
	return l
}

// oldPathLearned is what the scan before the body pass was deferred
// learned from the same folder, read whole: the owner's mail of the body
// window, parsed whole, through the same steps in the same order (the
// outbox's automatic sends, agent.OwnerWrote, LearnOwnerReplies, then
// reply tracking with followup.AsksQuestion), into a store of its own.
func oldPathLearned(t *testing.T, r *sentRig) learned {
	t.Helper()
	st := openSentStore(t)
	d := r.daemon(t, st, nil)
	msgs, err := r.srv.Messages(context.Background(), testUser, "Sent")
	if err != nil {
		t.Fatal(err)
	}
	owner := sentPathsOwner
	bodyFrom := time.Now().Add(-agent.SentBodyWindow)
	var mine []*mail.Message
	asks := map[*mail.Message]bool{}
	for _, raw := range msgs {
		m := mail.Parse(raw.Raw)
		if !owner.IsOwner(m.From.Email) || (!m.Date.IsZero() && m.Date.Before(bodyFrom)) {
			continue
		}
		kept := sentKept(m, prompts.TrimText(m.CleanText, store.MaxExampleText))
		mine = append(mine, kept)
		asks[kept] = followup.AsksQuestion(m)
	}
	ours, err := st.OutboxByMessageID("personal", nil)
	if err != nil {
		t.Fatal(err)
	}
	var byOwner []*mail.Message
	for _, m := range mine {
		if agent.OwnerWrote(m, owner, autoSentBy(ours)) {
			byOwner = append(byOwner, m)
		}
	}
	d.Pipeline.LearnOwnerReplies("personal", byOwner)
	if err := d.trackSent(context.Background(), "personal", mine, asks); err != nil {
		t.Fatal(err)
	}
	return learnedIn(t, st)
}

// ownerNote is a message of the owner's in Sent, dated date, to to, that
// asks something, with a body of about size bytes.
func ownerNote(i int, to string, date time.Time, size int) appendMsg {
	var b strings.Builder
	fmt.Fprintf(&b, "From: Ada <%s>\r\nTo: <%s>\r\nSubject: figures %d\r\nMessage-ID: <note-%d@example.com>\r\nDate: %s\r\n\r\nCould you send me the figures for project %d?\r\n",
		testUser, to, i, i, date.Format(time.RFC1123Z), i)
	for b.Len() < size {
		b.WriteString(strings.Repeat("w", 70) + "\r\n")
	}
	return appendMsg{raw: []byte(b.String()), date: date}
}

// Issue 28: watch's first start reads Sent by headers only until it
// reports idle; the owner's recent bodies are read after, and teach the
// same examples and start the same reply tracking as the scan that read
// them during the start (oldPathLearned, over the same folder). Bytes are
// counted through a proxy: until idle they are the headers (the bodies
// are 64 KiB each), and the control is the whole run, which must count
// the bodies.
func TestFirstStartReadsSentByHeadersUntilIdle(t *testing.T) {
	t.Parallel()
	const recent, old, body = 8, 4, 64 << 10
	var msgs []appendMsg
	for i := range recent {
		msgs = append(msgs, ownerNote(i, fmt.Sprintf("friend%d@example.org", i), time.Now().Add(-time.Duration(i+1)*24*time.Hour), body))
	}
	for i := range old { // older than the body window: headers only, always
		msgs = append(msgs, ownerNote(recent+i, fmt.Sprintf("old%d@example.org", i), time.Now().Add(-200*24*time.Hour), body))
	}
	for i := range 3 { // not the owner's
		raw := fmt.Sprintf("From: <mallory@evil.example>\r\nTo: <stranger%d@evil.example>\r\nSubject: x\r\nMessage-ID: <m-%d@evil.example>\r\nDate: %s\r\n\r\nCould you?\r\n",
			i, i, time.Now().Format(time.RFC1123Z))
		msgs = append(msgs, appendMsg{raw: []byte(raw), date: time.Now()})
	}
	r := newSentRig(t, msgs)
	d := r.daemon(t, nil, nil)
	type atIdle struct {
		bytes               int64
		examples, followups int
		known               bool
	}
	idle := make(chan atIdle, 1)
	var once sync.Once
	d.OnState = func(_ string, s imapsync.State) {
		if s != imapsync.StateIdle && s != imapsync.StatePolling {
			return
		}
		once.Do(func() {
			l := learnedIn(t, d.Store)
			c, err := d.Store.GetContact("personal", "old0@example.org")
			idle <- atIdle{r.proxy.Down(), len(l.examples), len(l.followups), err == nil && c.Known}
		})
	}
	defer runDaemon(t, d)()
	var at atIdle
	select {
	case at = <-idle:
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher never reached idle")
	}
	t.Logf("until idle: %d bytes from the server for %d Sent messages of %d KiB", at.bytes, len(msgs), body>>10)
	if limit := int64(len(msgs)*2<<10 + 16<<10); at.bytes > limit {
		t.Errorf("until idle the server sent %d bytes, want at most %d (Sent by headers only)", at.bytes, limit)
	}
	if at.examples != 0 || at.followups != 0 || !at.known {
		t.Errorf("at idle: %d examples, %d followups, old recipient known %v; want 0, 0 and known (headers before, bodies after)",
			at.examples, at.followups, at.known)
	}
	want := oldPathLearned(t, r)
	if len(want.examples) != recent || len(want.followups) != recent {
		t.Fatalf("the old path learned %d examples and %d followups, want %d each: the folder does not test what it should",
			len(want.examples), len(want.followups), recent)
	}
	var got learned
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got = learnedIn(t, d.Store)
		if slices.Equal(got.examples, want.examples) && slices.Equal(got.followups, want.followups) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after idle: got examples %q and followups %q,\nwant (the old path's) %q and %q", got.examples, got.followups, want.examples, want.followups)
		}
	}
	// Control: the counter counts the bodies once they are read.
	if total := r.proxy.Down(); total < int64(recent*body) {
		t.Errorf("control: %d bytes over the whole run, want at least %d (the recent bodies)", total, recent*body)
	}
	if cp, ok, err := d.Store.Checkpoint("personal", SentBodiesCheckpoint); err != nil || !ok || cp.LastUID != uint32(len(msgs)) {
		t.Errorf("body checkpoint %+v %v %v; want LastUID %d", cp, ok, err, len(msgs))
	}
}

// stopAfterFirstBatch is the examples' store of a run stopped after the
// body pass's first batch: it records every example it is given (to find
// one learned twice) and, after its first call, ends the run.
type stopAfterFirstBatch struct {
	agent.MemoryStore
	mu      sync.Mutex
	sources *[]string
	stop    context.CancelFunc
}

func (s *stopAfterFirstBatch) AddExamples(es []*store.Example) error {
	s.mu.Lock()
	for _, e := range es {
		*s.sources = append(*s.sources, e.Source)
	}
	s.mu.Unlock()
	err := s.MemoryStore.AddExamples(es)
	if s.stop != nil {
		s.stop()
	}
	return err
}

// A stop in the middle of the body pass: the restart (a new Daemon on the
// same store) reads the rest from the body checkpoint, and across both
// runs every one of the owner's recent messages is learned from exactly
// once, none skipped: the examples given to the store, the examples
// stored, the followups started.
func TestSentBodyPassResumesAfterAStop(t *testing.T) {
	t.Parallel()
	const n, batch = 10, 3
	var msgs []appendMsg
	for i := range n {
		msgs = append(msgs, ownerNote(i, fmt.Sprintf("friend%d@example.org", i), time.Now().Add(-time.Duration(i+1)*time.Hour), 1<<10))
	}
	r := newSentRig(t, msgs)
	st := openSentStore(t)
	var sources []string
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The first run: headers, then the body pass, stopped after a batch.
	runCtx, stop := context.WithCancel(ctx)
	d := r.daemon(t, st, &stopAfterFirstBatch{MemoryStore: st, sources: &sources, stop: stop})
	d.sentBodyBatch = batch
	d.scanSent(runCtx, "personal", true)
	if err := d.readSentBodies(runCtx, "personal"); err == nil {
		t.Fatal("the first body pass: got nil, want it stopped")
	}
	cp, ok, err := st.Checkpoint("personal", SentBodiesCheckpoint)
	if err != nil || !ok || cp.LastUID != batch {
		t.Fatalf("body checkpoint after the stop: %+v %v %v; want LastUID %d (the first batch)", cp, ok, err, batch)
	}
	if got := len(learnedIn(t, st).examples); got != batch {
		t.Fatalf("examples after the stop: %d, want %d", got, batch)
	}

	// The restart.
	before := r.proxy.Down()
	d2 := r.daemon(t, st, &stopAfterFirstBatch{MemoryStore: st, sources: &sources})
	d2.sentBodyBatch = batch
	d2.scanSent(ctx, "personal", true)
	if err := d2.readSentBodies(ctx, "personal"); err != nil {
		t.Fatal(err)
	}
	read := r.proxy.Down() - before
	counts := map[string]int{}
	for _, s := range sources {
		counts[s]++
	}
	twice := 0
	for s, c := range counts {
		if c != 1 {
			twice++
			t.Errorf("example %s given to the store %d times, want once", s, c)
		}
	}
	l := learnedIn(t, st)
	t.Logf("restart: %d bytes read; examples given %d (%d more than once), stored %d; followups %d", read, len(sources), twice, len(l.examples), len(l.followups))
	if len(counts) != n || len(l.examples) != n || len(l.followups) != n {
		t.Errorf("after the restart: %d messages learned from, %d examples, %d followups; want %d each (none skipped)", len(counts), len(l.examples), len(l.followups), n)
	}
	if cp, _, _ := st.Checkpoint("personal", SentBodiesCheckpoint); cp.LastUID != n {
		t.Errorf("body checkpoint: %d, want %d", cp.LastUID, n)
	}
	// The restart reads the bodies not learned from, not the first batch
	// again: each note is about 1 KiB.
	if limit := int64((n-batch)*(1<<10) + n*(1<<10) + 16<<10); read > limit {
		t.Errorf("the restart read %d bytes, want at most %d", read, limit)
	}
	// A third pass finds nothing to do.
	before = r.proxy.Down()
	if err := d2.readSentBodies(ctx, "personal"); err != nil {
		t.Fatal(err)
	}
	if again := r.proxy.Down() - before; again != 0 {
		t.Errorf("a pass with nothing left read %d bytes, want 0 (no connection)", again)
	}
}

// bodyAttacks are the owner's Sent mail that must teach no voice example
// and start no reply tracking through the body pass, each within the
// window, to a stranger, asking something: sentAttacks (automatic mail in
// every spelling, mail not the owner's, the owner as display name only;
// mailagent's trace counts for examples only: an approved nudge is the
// owner's send, tracked as before) and a borrowed Message-ID (not the
// owner's, carrying the Message-ID of a note of the owner's).
func bodyAttacks(benign bool) (msgs []appendMsg, names []string, tracked []bool) {
	now := time.Now().Add(-time.Hour)
	add := func(name, headers, id string, track bool, i int) {
		if benign { // the control: the same message, the owner's by hand
			headers, id = "From: Ada <"+testUser+">\n", fmt.Sprintf("benign-%d@example.com", i)
		}
		raw := strings.ReplaceAll(headers+"To: "+attackTarget(i)+"\nSubject: s\nDate: "+now.Format(time.RFC1123Z)+
			"\nMessage-ID: <"+id+">\n\nCould you call me back?\n", "\n", "\r\n")
		msgs = append(msgs, appendMsg{raw: []byte(raw), date: now})
		names, tracked = append(names, name), append(tracked, track)
	}
	for i, a := range sentAttacks {
		add(a.name, a.headers, fmt.Sprintf("attack-%d@example.com", i), a.name != "mailagent trace", i)
	}
	add("borrowed Message-ID", "From: Mallory <mallory@evil.example>\n", "note-0@example.com", true, len(sentAttacks))
	msgs = append(msgs, ownerNote(0, "friend0@example.org", now, 1<<10)) // the note whose Message-ID is borrowed
	return msgs, names, tracked
}

// Adversarial: through the deferred body pass (in a running watcher, after
// idle), no attack teaches an example or starts reply tracking for its
// stranger: tried N, through 0. The positive control runs each attack's
// benign twin (the same message, the owner's by hand) through the same
// watcher: every one lands, so the test can tell. (The identity switch
// is no control here: examples and reply tracking check automatic mail
// again on their own, store.SwitchOffIdentityForTest or not;
// TestKnownFromSentAttackLandsWithCheckOff is the header side's.)
func TestSentBodyPassAttacks(t *testing.T) {
	t.Parallel()
	run := func(benign bool) (examples, followups map[string]bool, names []string, tracked []bool) {
		msgs, names, tracked := bodyAttacks(benign)
		r := newSentRig(t, msgs)
		d := r.daemon(t, nil, nil)
		defer runDaemon(t, d)()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			cp, ok, err := d.Store.Checkpoint("personal", SentBodiesCheckpoint)
			if err == nil && ok && cp.LastUID == uint32(len(msgs)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the body pass did not finish: %+v %v %v", cp, ok, err)
			}
		}
		examples, followups = map[string]bool{}, map[string]bool{}
		es, err := d.Store.ListExamples("personal")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			examples[e.Contact] = true
		}
		err = d.Store.ListFollowups(store.FollowupFilter{Account: "personal"}, func(f *store.Followup) error {
			for _, c := range f.Correspondents {
				followups[c] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !examples["friend0@example.org"] || !followups["friend0@example.org"] {
			t.Errorf("the owner's own note (benign %v): example %v, followup %v; want both", benign, examples["friend0@example.org"], followups["friend0@example.org"])
		}
		return examples, followups, names, tracked
	}
	examples, followups, names, tracked := run(false)
	tried, through := 0, 0
	for i, name := range names {
		tried++
		if examples[attackTarget(i)] {
			through++
			t.Errorf("attack %q taught an example for %s", name, attackTarget(i))
		}
		if tracked[i] {
			tried++
			if followups[attackTarget(i)] {
				through++
				t.Errorf("attack %q started reply tracking of %s", name, attackTarget(i))
			}
		}
	}
	wantTried := 2*len(names) - 1 // the trace is tried for examples only
	t.Logf("Sent body-pass attacks: tried %d, through %d", tried, through)
	if tried != wantTried || through != 0 {
		t.Fatalf("tried %d, through %d; want %d tried, 0 through", tried, through, wantTried)
	}

	// The positive control: the benign twins land.
	examples, followups, names, tracked = run(true)
	landed := 0
	for i := range names {
		if examples[attackTarget(i)] {
			landed++
		}
		if tracked[i] && followups[attackTarget(i)] {
			landed++
		}
	}
	if landed != wantTried {
		t.Errorf("control: %d of %d benign twins landed, want all", landed, wantTried)
	}
}

// The body pass tracks the owner's questions after the start, so an
// answer decided during the start (the INBOX's first window) came first:
// it still closes the question's followup, as when the Sent scan ran
// before the first decisions (the old order: the question tracked, then
// the answer decided, over a store of its own). A message from someone
// the owner did not ask, naming the same question, closes nothing.
func TestSentBodyPassSeesAnswersDecidedBefore(t *testing.T) {
	t.Parallel()
	asked := time.Now().Add(-3 * 24 * time.Hour)
	r := newSentRig(t, []appendMsg{
		ownerNote(0, "friend0@example.org", asked, 1<<10),
		ownerNote(1, "friend1@example.org", asked, 1<<10),
	})
	answer := func(uid uint32, from, id, question string) *store.MessageRecord {
		return &store.MessageRecord{
			MessageKey: store.MessageKey{Account: "personal", Mailbox: "INBOX", UIDValidity: 1, UID: uid},
			SenderAuth: &store.SenderAuth{Authenticated: true, Address: from, Method: "dmarc"},
			MessageID:  id, ThreadID: "t-" + id, From: mail.Address{Email: from}, Subject: "Re: figures",
			Date: time.Now().Add(-time.Hour), InReplyTo: []string{question}, References: []string{question},
			Route: "external", State: store.StateDone, Decision: "queue",
		}
	}
	recs := []*store.MessageRecord{
		answer(1, "friend0@example.org", "answer-0@example.org", "note-0@example.com"),
		answer(2, "mallory@evil.example", "answer-1@evil.example", "note-1@example.com"), // not whom the owner asked
	}
	state := func(st *store.Store, id string) string {
		f, err := st.GetFollowup(store.FollowupID("personal", "sent:"+id))
		if err != nil {
			t.Fatalf("followup of %s: %v", id, err)
		}
		return f.State
	}

	// The old order, as the reference.
	ref := r.daemon(t, nil, nil)
	var qs []*mail.Message
	asks := map[*mail.Message]bool{}
	msgs, err := r.srv.Messages(context.Background(), testUser, "Sent")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range msgs {
		m := mail.Parse(raw.Raw)
		qs = append(qs, m)
		asks[m] = followup.AsksQuestion(m)
	}
	if err := ref.trackSent(context.Background(), "personal", qs, asks); err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if err := ref.Pipeline.Followups.Incoming(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	want0, want1 := state(ref.Store, "note-0@example.com"), state(ref.Store, "note-1@example.com")
	if want0 != store.FollowupDone || want1 != store.FollowupAwaitingReply {
		t.Fatalf("reference: %s and %s, want done and awaiting_reply: the case tests nothing", want0, want1)
	}

	// The deferred order: the answers are decided first.
	d := r.daemon(t, nil, nil)
	for _, rec := range recs {
		if err := d.Store.PutMessage(rec); err != nil {
			t.Fatal(err)
		}
		if err := d.Pipeline.Followups.Incoming(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d.scanSent(ctx, "personal", true)
	if err := d.readSentBodies(ctx, "personal"); err != nil {
		t.Fatal(err)
	}
	if got0, got1 := state(d.Store, "note-0@example.com"), state(d.Store, "note-1@example.com"); got0 != want0 || got1 != want1 {
		t.Errorf("the question to friend0 is %s, to friend1 %s; want %s and %s (as the old order)", got0, got1, want0, want1)
	}
}

// runDaemon runs d.Run (not once) on a goroutine until the returned stop
// is called, which cancels it, waits for it and reports its error.
func runDaemon(t *testing.T, d *Daemon) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, false) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}
