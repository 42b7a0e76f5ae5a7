package outbox

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// The protocol is tested over a real store (bbolt in a temporary
// directory) and a scripted mailer; recover_test.go runs it against a
// real IMAP server and SMTP sink through the agent.

// scriptMailer records what the protocol asks of the mail servers and
// fails as told.
type scriptMailer struct {
	mu          sync.Mutex
	sendErrs    []error // returned by the next sends, in order
	sent        []string
	appended    []string
	sentFolder  map[string]bool // Message-IDs in Sent
	sentHasErr  error
	answered    bool
	answeredErr error
	marked      int
	deleted     []uint32
}

func msgID(raw []byte) string {
	for _, l := range strings.Split(string(raw), "\r\n") {
		if v, ok := strings.CutPrefix(l, "Message-ID: "); ok {
			return v
		}
	}
	return ""
}

func (m *scriptMailer) Send(_ context.Context, _, _ string, _ []string, raw []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sendErrs) > 0 {
		err := m.sendErrs[0]
		m.sendErrs = m.sendErrs[1:]
		return err
	}
	m.sent = append(m.sent, msgID(raw))
	return nil
}

func (m *scriptMailer) AppendSent(_ context.Context, _ string, raw []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.appended = append(m.appended, msgID(raw))
	if m.sentFolder == nil {
		m.sentFolder = map[string]bool{}
	}
	m.sentFolder[msgID(raw)] = true
	return nil
}

func (m *scriptMailer) SentHas(_ context.Context, _, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sentFolder[id], m.sentHasErr
}

func (m *scriptMailer) DeleteDraft(_ context.Context, _ string, uid uint32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deleted = append(m.deleted, uid)
	return nil
}

func (m *scriptMailer) Answered(context.Context, *store.MessageRecord) (bool, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.answered, "a reply in Sent", m.answeredErr
}

func (m *scriptMailer) MarkAnswered(context.Context, *store.MessageRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.marked++
	return nil
}

func (m *scriptMailer) sends() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sent)
}

type temporary struct{}

func (temporary) Error() string   { return "451 try again later" }
func (temporary) Temporary() bool { return true }

type afterDot struct{}

func (afterDot) Error() string           { return "connection lost after the final dot" }
func (afterDot) MaybeDeliveredErr() bool { return true }

type world struct {
	st     *store.Store
	mailer *scriptMailer
	o      *Outbox
	events []string
	sentTo []string // the Sent hook's records
}

func newWorld(t *testing.T) *world {
	t.Helper()
	// NoSync: a world's store is never reopened, so an fsync per commit
	// bought nothing but time.
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	w := &world{st: st, mailer: &scriptMailer{}}
	var mu sync.Mutex
	w.o = &Outbox{
		Store: st, Mailer: w.mailer,
		Notify: func(kind, id, _ string) {
			mu.Lock()
			defer mu.Unlock()
			w.events = append(w.events, kind+" "+id)
		},
		Sent: func(ob *store.OutboxRecord) {
			mu.Lock()
			defer mu.Unlock()
			w.sentTo = append(w.sentTo, ob.ID)
		},
	}
	return w
}

var original = store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 7, UID: 42}

// carolRec is the record of carol's message id under key: authenticated
// as carol, so a reply to carol answers it.
func carolRec(key store.MessageKey, id string) *store.MessageRecord {
	return &store.MessageRecord{MessageKey: key, MessageID: id, Route: "external",
		From: mail.Address{Email: "carol@example.org"}, SenderAuth: &store.SenderAuth{Authenticated: true, Address: "carol@example.org", Method: store.AuthDMARC}}
}

// rekeyed is original under a new UIDVALIDITY: the same mail, another key.
var rekeyed = store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 8, UID: 3}

// approval writes an approved item and its pending record, as
// store.ApproveQueueItem leaves them.
func (w *world) approval(t *testing.T, draftUID uint32) *store.OutboxRecord {
	t.Helper()
	qid := QueueID(original)
	if err := w.st.PutQueueItem(&store.QueueItem{ID: qid, Kind: store.KindDraft, Account: "a", Message: original,
		MessageID: "<orig@example.org>", Subject: "Lunch", Draft: "Tuesday.", Status: store.QueueApproved, IMAPDraftUID: draftUID}); err != nil {
		t.Fatal(err)
	}
	return w.record(t, &store.OutboxRecord{ID: ApprovalID(qid), QueueID: qid, Status: store.OutboxPending})
}

// autoSend writes the record of an automatic reply in status.
func (w *world) autoSend(t *testing.T, status string) *store.OutboxRecord {
	t.Helper()
	return w.record(t, &store.OutboxRecord{ID: ID(original), Auto: true, Status: status})
}

func (w *world) record(t *testing.T, r *store.OutboxRecord) *store.OutboxRecord {
	t.Helper()
	r.Account, r.From, r.To = "a", "ada@example.com", []string{"carol@example.org"}
	r.Message, r.Subject, r.Body = original, "Re: Lunch", "Tuesday."
	if r.InReplyTo == "" {
		r.InReplyTo = "<orig@example.org>"
	}
	r.MessageID = "<reply-" + r.ID + "@mailagent>"
	r.Raw = []byte("Message-ID: " + r.MessageID + "\r\nSubject: Re: Lunch\r\n\r\nTuesday.\r\n")
	if err := w.st.PutOutbox(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func (w *world) status(t *testing.T, id string) *store.OutboxRecord {
	t.Helper()
	ob, err := w.st.GetOutbox(id)
	if err != nil {
		t.Fatal(err)
	}
	return ob
}

func (w *world) item(t *testing.T, id string) *store.QueueItem {
	t.Helper()
	q, err := w.st.GetQueueItem(id)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestDeliverSendsOnceFilesAndCloses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ob := w.approval(t, 9)
	ctx := context.Background()
	if err := w.o.Deliver(ctx, ob.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.o.Deliver(ctx, ob.ID); err != nil { // done: a conflict, nothing sent
		t.Fatal(err)
	}
	if got := w.mailer.sent; !slices.Equal(got, []string{ob.MessageID}) {
		t.Errorf("sent: %v, want one %s", got, ob.MessageID)
	}
	if got := w.mailer.appended; !slices.Equal(got, []string{ob.MessageID}) {
		t.Errorf("appended to Sent: %v, want one", got)
	}
	if got := w.status(t, ob.ID); got.Status != store.OutboxAppended || got.Attempts != 1 || got.SentAt.IsZero() {
		t.Errorf("record: %s, %d attempts, sent at %v; want appended after 1", got.Status, got.Attempts, got.SentAt)
	}
	if q := w.item(t, ob.QueueID); q.Status != store.QueueSent {
		t.Errorf("item: %s, want sent", q.Status)
	}
	if !slices.Equal(w.mailer.deleted, []uint32{9}) || w.mailer.marked != 1 {
		t.Errorf("draft deleted %v, \\Answered set %d times; want [9], 1", w.mailer.deleted, w.mailer.marked)
	}
	if !slices.Equal(w.sentTo, []string{ob.ID}) || !slices.Contains(w.events, "sent "+ob.ID) {
		t.Errorf("Sent hook %v, events %v", w.sentTo, w.events)
	}
}

func TestDeliverRacingCallersSendOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ob := w.approval(t, 0)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := w.o.Deliver(context.Background(), ob.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := w.mailer.sends(); n != 1 {
		t.Fatalf("8 racing Deliver calls sent %d times, want 1", n)
	}
}

func TestDeliverAlreadyInSentIsNotSentAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ob := w.approval(t, 0)
	w.mailer.sentFolder = map[string]bool{ob.MessageID: true}
	if err := w.o.Deliver(context.Background(), ob.ID); err != nil {
		t.Fatal(err)
	}
	if len(w.mailer.sent) != 0 || len(w.mailer.appended) != 0 {
		t.Errorf("sent %v, appended %v; want neither (an earlier attempt got through)", w.mailer.sent, w.mailer.appended)
	}
	if got := w.status(t, ob.ID).Status; got != store.OutboxAppended {
		t.Errorf("record: %s, want appended", got)
	}
}

// Each kind of failure means something different for the record and the
// queue item.
func TestDeliverFailureMeanings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		auto      bool
		err       error
		obStatus  string
		itemState string // "" for no item
		ambiguous bool
	}{
		{"temporary approval", false, temporary{}, store.OutboxPending, store.QueueApproved, false},
		{"temporary auto", true, &TemporaryError{Err: errors.New("421 busy")}, store.OutboxPending, "", false},
		{"maybe delivered approval", false, afterDot{}, store.OutboxFailed, store.QueueFailed, true},
		{"maybe delivered auto", true, afterDot{}, store.OutboxFailed, store.QueueFailed, true},
		{"permanent approval", false, errors.New("550 no such user"), store.OutboxFailed, store.QueueFailed, false},
		{"permanent auto", true, errors.New("550 no such user"), store.OutboxFailed, store.QueueFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			var ob *store.OutboxRecord
			if tt.auto {
				ob = w.autoSend(t, store.OutboxPending)
			} else {
				ob = w.approval(t, 0)
			}
			w.mailer.sendErrs = []error{tt.err}
			err := w.o.Deliver(context.Background(), ob.ID)
			if err == nil || !errors.Is(err, tt.err) {
				t.Fatalf("deliver: %v, want it to wrap %v", err, tt.err)
			}
			if errors.Is(err, ErrAmbiguousSend) != tt.ambiguous {
				t.Errorf("ambiguous: %v, want %v", errors.Is(err, ErrAmbiguousSend), tt.ambiguous)
			}
			got := w.status(t, ob.ID)
			if got.Status != tt.obStatus || !strings.Contains(got.Error, tt.err.Error()) {
				t.Errorf("record: %s %q, want %s with the error", got.Status, got.Error, tt.obStatus)
			}
			if failing := !got.FailingSince.IsZero(); failing != (tt.obStatus == store.OutboxPending) {
				t.Errorf("FailingSince %v: want it set exactly when the send waits to be retried", got.FailingSince)
			}
			q, qerr := w.st.GetQueueItem(QueueID(original))
			switch {
			case tt.itemState == "" && qerr == nil:
				t.Errorf("a temporary auto-send failure made a queue item: %+v", q)
			case tt.itemState != "" && (qerr != nil || q.Status != tt.itemState):
				t.Errorf("item: %+v, %v; want %s", q, qerr, tt.itemState)
			case tt.auto && tt.itemState != "" && (q.Kind != store.KindDraft || q.Draft != "Tuesday." || len(q.To) != 1 || q.To[0].Email != "carol@example.org"):
				t.Errorf("failed auto-send: the owner's draft is %+v, want the reply's text and recipient", q)
			}
			if tt.obStatus == store.OutboxPending {
				// The retry succeeds: the record is no longer failing.
				w.mailer.sendErrs = nil
				if _, err := w.st.TransitionOutbox(ob.ID, []string{store.OutboxPending}, store.OutboxPending, nil); err != nil {
					t.Fatal(err)
				}
				if err := w.o.Deliver(context.Background(), ob.ID); err != nil {
					t.Fatalf("retry: %v", err)
				}
				if r := w.status(t, ob.ID); !r.FailingSince.IsZero() {
					t.Errorf("after the retry went through, FailingSince %v, want zero", r.FailingSince)
				}
			}
			// A second Deliver never sends what failed for good or may
			// have been delivered; a temporary failure waits for SendDue.
			if err := w.o.Deliver(context.Background(), ob.ID); err != nil && tt.obStatus == store.OutboxFailed {
				t.Errorf("deliver again: %v", err)
			}
			if tt.obStatus == store.OutboxFailed && w.mailer.sends() != 0 {
				t.Errorf("a failed send was sent again")
			}
		})
	}
}

func TestDeliverNotSentWhenAnsweredElsewhere(t *testing.T) {
	t.Parallel()
	t.Run("the mailbox shows a reply", func(t *testing.T) {
		w := newWorld(t)
		ob := w.approval(t, 0)
		w.mailer.answered = true
		if err := w.o.Deliver(context.Background(), ob.ID); err != nil {
			t.Fatal(err)
		}
		if w.mailer.sends() != 0 {
			t.Fatal("sent a reply to a message answered elsewhere")
		}
		if got := w.status(t, ob.ID); got.Status != store.OutboxCancelled || !strings.HasPrefix(got.Error, ReasonAnswered) {
			t.Errorf("record: %s %q, want cancelled, already answered", got.Status, got.Error)
		}
		if q := w.item(t, ob.QueueID); q.Status != store.QueueResolved {
			t.Errorf("item: %s, want resolved", q.Status)
		}
	})
	t.Run("another record sent the same reply", func(t *testing.T) {
		w := newWorld(t)
		ob := w.approval(t, 0)
		// The same mail under a new key (UIDVALIDITY changed), answered.
		w.record(t, &store.OutboxRecord{ID: "ob_earlier", Status: store.OutboxAppended})
		var resolved []string
		w.o.Resolve = func(_ context.Context, id, reason string) error {
			resolved = append(resolved, id+": "+reason)
			return nil
		}
		if err := w.o.Deliver(context.Background(), ob.ID); err != nil {
			t.Fatal(err)
		}
		if w.mailer.sends() != 0 || len(resolved) != 1 || !strings.Contains(resolved[0], "ob_earlier") {
			t.Errorf("sends %d, resolved %v; want none and the item resolved naming ob_earlier", w.mailer.sends(), resolved)
		}
	})
	t.Run("the mailbox cannot be read", func(t *testing.T) {
		for _, auto := range []bool{true, false} {
			w := newWorld(t)
			ob := w.autoSend(t, store.OutboxPending)
			want := store.OutboxPending // an auto-reply waits and is retried
			if !auto {
				ob = w.approval(t, 0)
				want = store.OutboxFailed // an approval tells the owner
			}
			w.mailer.answeredErr = errors.New("imap: connection reset")
			if err := w.o.Deliver(context.Background(), ob.ID); err == nil {
				t.Errorf("auto=%v: got nil, want the mailbox's error", auto)
			}
			if w.mailer.sends() != 0 {
				t.Errorf("auto=%v: sent without knowing whether it was answered", auto)
			}
			if got := w.status(t, ob.ID); got.Status != want || !strings.HasPrefix(got.Error, "nothing was sent") {
				t.Errorf("auto=%v: record %s %q, want %s", auto, got.Status, got.Error, want)
			}
		}
	})
}

// Replies of other accounts, and hostile spellings of the Message-ID,
// are judged by the normalised id and the account: another account's
// reply never blocks one (a lost reply), and a different bracket or case
// does not hide a reply that was sent (a duplicate send). Positive
// control: TestAnsweredInOutboxAdversarialLandsWithoutDefence.
func TestAnsweredInOutboxAdversarial(t *testing.T) {
	tried, through := answeredInOutboxAttacks(t, true)
	t.Logf("%d attacks tried, %d got through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d attacks got through", through, tried)
	}
}

// TestAnsweredInOutboxAdversarialLandsWithoutDefence is the positive
// control of TestAnsweredInOutboxAdversarial: the same attacks through
// the same Answered, each class with only its defence switched off: the
// account scoping for the lost replies (another account's reply counts),
// mail.IDKey for the duplicate sends (the Message-ID compared as
// written, so a bracket, case or space hides the sent reply). Every
// attack must land. Not parallel: it sets package switches.
func TestAnsweredInOutboxAdversarialLandsWithoutDefence(t *testing.T) {
	tried, through := answeredInOutboxAttacks(t, false)
	t.Logf("defences off: %d attacks tried, %d got through", tried, through)
	if through != tried {
		t.Fatalf("positive control: %d of %d attacks got through with the defences off, want all", through, tried)
	}
}

// answeredInOutboxAttacks runs the attacks of
// TestAnsweredInOutboxAdversarial on a new world and counts them; with
// report set each one that gets through is an error, and without it
// each class runs with its defence switched off (the positive control).
// The reply under
// attack answers carol's <orig@example.org>, seen again under a new
// UIDVALIDITY (rekeyed), so only its Message-ID links the two.
func answeredInOutboxAttacks(t *testing.T, report bool) (tried, through int) {
	t.Helper()
	ctx := context.Background()
	w := newWorld(t)
	r := w.record(t, &store.OutboxRecord{ID: "ob_other", Status: store.OutboxAppended})
	r.Account = "b" // the same Message-ID in another account
	if err := w.st.PutOutbox(r); err != nil {
		t.Fatal(err)
	}
	// switchOff sets sw for the rest of the class when this is the
	// control, and returns its restore.
	switchOff := func(sw *atomic.Bool) func() {
		if report {
			return func() {}
		}
		sw.Store(true)
		return func() { sw.Store(false) }
	}
	// Lost reply: account b's reply must not answer account a's message.
	restore := switchOff(&answeredAnyAccountForTest)
	defer restore()
	for _, id := range []string{"<orig@example.org>", "orig@example.org", " <orig@example.org> "} {
		tried++
		found, reason, err := w.o.Answered(ctx, carolRec(rekeyed, id), "", true)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			through++
			if report {
				t.Errorf("%q in account a: found, %q; another account's reply must not count", id, reason)
			}
		}
	}
	restore()
	w.record(t, &store.OutboxRecord{ID: "ob_mine", Status: store.OutboxSent})
	// The spelling the reply names is found (a baseline, not an attack).
	if found, _, err := w.o.Answered(ctx, carolRec(rekeyed, "<orig@example.org>"), "", true); err != nil || !found {
		t.Fatalf("the sent reply's own spelling: found=%v, %v; want found", found, err)
	}
	// Duplicate send: another spelling of the same id must not hide it.
	restore = switchOff(&answeredRawIDForTest)
	defer restore()
	for _, id := range []string{"<ORIG@example.org>", "orig@example.org", " <orig@example.org> "} {
		tried++
		found, _, err := w.o.Answered(ctx, carolRec(rekeyed, id), "", true)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			through++
			if report {
				t.Errorf("%q: a sent reply was not found", id)
			}
		}
	}
	restore()
	if found, _, _ := w.o.Answered(ctx, carolRec(original, "<orig@example.org>"), "ob_mine", true); found {
		t.Error("a record counted against itself")
	}
	return tried, through
}

func TestSendDueSchedulesRetriesAndWakes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	now := time.Now()
	clock := now
	w.o.Now = func() time.Time { return clock }
	ctx := context.Background()

	// Three replies to three different messages.
	later := w.record(t, &store.OutboxRecord{ID: "ob_later", Auto: true, Status: store.OutboxScheduled, SendAt: now.Add(time.Hour), InReplyTo: "<m1@example.org>"})
	due := w.record(t, &store.OutboxRecord{ID: "ob_due", Auto: true, Status: store.OutboxScheduled, SendAt: now.Add(-time.Second), InReplyTo: "<m2@example.org>"})
	retry := w.record(t, &store.OutboxRecord{ID: "ob_retry", Auto: true, Status: store.OutboxPending, Attempts: 1, InReplyTo: "<m3@example.org>"})
	for i, r := range []*store.OutboxRecord{later, due, retry} {
		r.Message.UID = uint32(100 + i) // each answers a message of its own
		if err := w.st.PutOutbox(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.st.PutQueueItem(&store.QueueItem{ID: "q_snoozed", Kind: store.KindNotify, Account: "a", Status: store.QueueSnoozed, SnoozeUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := w.o.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.mailer.sent; !slices.Equal(got, []string{due.MessageID}) {
		t.Fatalf("first tick sent %v, want only the due one (the retry waits out its backoff)", got)
	}
	if got := w.status(t, later.ID).Status; got != store.OutboxScheduled {
		t.Errorf("a send scheduled in an hour is %s", got)
	}
	clock = now.Add(store.RetryBackoff(1) + time.Second)
	if err := w.o.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.mailer.sent; !slices.Equal(got, []string{due.MessageID, retry.MessageID}) {
		t.Errorf("after the backoff: sent %v, want the retry too", got)
	}
	if q := w.item(t, "q_snoozed"); q.Status != store.QueuePending {
		t.Errorf("snoozed item: %s, want pending once its time came", q.Status)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("a delayed auto-send becomes the owner's draft", func(t *testing.T) {
		w := newWorld(t)
		ob := w.autoSend(t, store.OutboxScheduled)
		if err := w.o.Cancel(ctx, ob.ID); err != nil {
			t.Fatal(err)
		}
		if got := w.status(t, ob.ID).Status; got != store.OutboxCancelled {
			t.Errorf("record: %s, want cancelled", got)
		}
		q := w.item(t, QueueID(original))
		if q.Status != store.QueuePending || q.Draft != "Tuesday." || q.MessageID != "<orig@example.org>" {
			t.Errorf("draft: %+v", q)
		}
		if err := w.o.Cancel(ctx, ob.ID); !errors.Is(err, ErrNotActionable) || !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("cancel twice: %v, want ErrNotActionable naming the status", err)
		}
		if err := w.o.SendDue(ctx); err != nil || w.mailer.sends() != 0 {
			t.Errorf("a cancelled send went out (%v)", err)
		}
	})
	t.Run("an approval by its queue id", func(t *testing.T) {
		w := newWorld(t)
		ob := w.approval(t, 0)
		if _, err := w.st.TransitionOutbox(ob.ID, []string{store.OutboxPending}, store.OutboxScheduled, func(r *store.OutboxRecord) error {
			r.SendAt = time.Now().Add(time.Minute)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := w.o.Cancel(ctx, ob.QueueID); err != nil {
			t.Fatal(err)
		}
		if q := w.item(t, ob.QueueID); q.Status != store.QueuePending || q.Draft != "Tuesday." {
			t.Errorf("item: %s %q, want pending with its draft", q.Status, q.Draft)
		}
	})
	t.Run("too late once sending", func(t *testing.T) {
		w := newWorld(t)
		ob := w.autoSend(t, store.OutboxSending)
		if err := w.o.Cancel(ctx, ob.ID); !errors.Is(err, ErrNotActionable) {
			t.Errorf("cancel a send under way: %v, want ErrNotActionable", err)
		}
		if err := w.o.Cancel(ctx, "ob_nosuch"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("cancel unknown: %v, want ErrNotFound", err)
		}
	})
}

func TestSendApprovalCancelledWhenTheWaitEnds(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ob := w.approval(t, 0)
	if _, err := w.st.TransitionOutbox(ob.ID, []string{store.OutboxPending}, store.OutboxScheduled, func(r *store.OutboxRecord) error {
		r.SendAt = time.Now().Add(time.Hour)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err := w.o.SendApproval(ctx, ob.QueueID, func(context.Context, time.Time) error {
		cancel() // Ctrl-C during the undo window
		return ctx.Err()
	})
	if !errors.Is(err, ErrApprovalCancelled) {
		t.Fatalf("got %v, want ErrApprovalCancelled", err)
	}
	if w.mailer.sends() != 0 || w.item(t, ob.QueueID).Status != store.QueuePending {
		t.Errorf("sends %d, item %s; want none and pending", w.mailer.sends(), w.item(t, ob.QueueID).Status)
	}
}

func TestRecoverNeverResendsAnInterruptedTransaction(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ob := w.autoSend(t, store.OutboxSending)
	if err := w.o.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.mailer.sends() != 0 {
		t.Fatal("re-sent a message that may have been delivered")
	}
	if got := w.status(t, ob.ID); got.Status != store.OutboxFailed || got.Error != ErrAmbiguousSend.Error() {
		t.Errorf("record: %s %q, want failed, ambiguous", got.Status, got.Error)
	}
	if q := w.item(t, QueueID(original)); q.Status != store.QueueFailed || q.Kind != store.KindDraft {
		t.Errorf("the owner's copy: %+v, want a failed draft", q)
	}
	// It may have been delivered, so a new auto-reply to the same message
	// is held too.
	if found, _, _ := w.o.Answered(context.Background(), carolRec(rekeyed, "<orig@example.org>"), "", true); !found {
		t.Error("an ambiguous auto-send does not count as possibly answered")
	}
}

func TestRecoverSentHasErrorIsReported(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.autoSend(t, store.OutboxSending)
	w.mailer.sentHasErr = errors.New("imap: connection reset")
	if err := w.o.Recover(context.Background()); err == nil || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("recover: %v, want the mailbox's error", err)
	}
	if got := w.status(t, ID(original)).Status; got != store.OutboxSending {
		t.Errorf("record: %s, want left sending for the next start", got)
	}
}

func TestIDsAreStableAndDistinct(t *testing.T) {
	t.Parallel()
	other := original
	other.UIDValidity++
	again := original // an equal key, built anew
	if QueueID(original) != QueueID(again) || QueueID(original) == QueueID(other) || ID(original) == ID(other) {
		t.Error("ids must be derived from the whole key, the same every time")
	}
	if !strings.HasPrefix(QueueID(original), "q_") || !strings.HasPrefix(ID(original), "ob_") || ApprovalID("q_x") != "ob_q_x" {
		t.Errorf("ids: %s %s %s", QueueID(original), ID(original), ApprovalID("q_x"))
	}
}

func TestScheduleFirstStatus(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ob := store.OutboxRecord{From: "ada@example.com", To: []string{"carol@example.org"}}
	if err := Schedule(&ob, now, 0); err != nil {
		t.Fatal(err)
	}
	if ob.Status != store.OutboxPending || !ob.SendAt.IsZero() {
		t.Errorf("no delay: %s at %v, want pending now", ob.Status, ob.SendAt)
	}
	if err := Schedule(&ob, now, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if ob.Status != store.OutboxScheduled || !ob.SendAt.Equal(now.Add(5*time.Second)) {
		t.Errorf("5s delay: %s at %v, want scheduled 5s on", ob.Status, ob.SendAt)
	}
	if err := Schedule(&ob, now, -time.Second); err != nil {
		t.Fatal(err)
	}
	if ob.Status != store.OutboxPending || !ob.SendAt.IsZero() {
		t.Errorf("negative delay: %s at %v, want pending now", ob.Status, ob.SendAt)
	}
}

// Without a mailer (a process that cannot send) Recover still hands back
// stranded approvals and says so when sends are left, touching none.
func TestRecoverWithoutMailer(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.o.Mailer = nil
	if err := w.o.Recover(context.Background()); err != nil {
		t.Fatalf("nothing to finish: %v", err)
	}
	ob := w.autoSend(t, store.OutboxSending)
	if err := w.o.Recover(context.Background()); err == nil {
		t.Fatal("a send left to finish and no mailer: got nil")
	}
	if got := w.status(t, ob.ID).Status; got != store.OutboxSending {
		t.Errorf("record: %s, want left sending", got)
	}
	if err := w.o.Deliver(context.Background(), ob.ID); err == nil {
		t.Error("deliver with no mailer: got nil")
	}
}

// Another outbox record answers the original only when it is for the same
// message, or names its Message-ID AND went to its reply party: a reply to
// a stranger who borrowed the id (their own, or in References) never does.
func TestAnsweredInOutboxNeedsTheCorrespondent(t *testing.T) {
	cases := []struct {
		name   string
		to     string
		key    store.MessageKey
		attack bool // true: must not count
	}{
		{"a reply to a stranger who reused the Message-ID", "mallory@evil.example", rekeyed, true},
		{"a reply to a stranger, Reply-To spelled like the contact", "carol@example.org.evil.example", rekeyed, true},
		{"a reply to the contact under another key (UIDVALIDITY change)", "Carol@Example.org", rekeyed, false},
		{"a reply for the same message", "mallory@evil.example", original, false},
	}
	run := func(t *testing.T) (tried, through int) {
		for _, tc := range cases {
			w := newWorld(t)
			r := w.record(t, &store.OutboxRecord{ID: "ob_other", Status: store.OutboxAppended})
			r.To, r.Message = []string{tc.to}, tc.key
			if err := w.st.PutOutbox(r); err != nil {
				t.Fatal(err)
			}
			orig := carolRec(original, "<orig@example.org>") // Carol's message, under its own key
			if tc.key != original {
				orig.MessageKey = store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 9, UID: 1}
			}
			found, reason, err := w.o.Answered(context.Background(), orig, "", true)
			if err != nil {
				t.Fatal(err)
			}
			if tc.attack {
				tried++
				if found {
					through++
					t.Logf("%s: counted as the answer (%s)", tc.name, reason)
				}
			} else if !found {
				t.Errorf("%s: not counted, want it to count", tc.name)
			}
		}
		return tried, through
	}
	tried, through := run(t)
	t.Logf("outbox answered attacks: %d tried, %d got through", tried, through)
	if tried == 0 || through != 0 {
		t.Errorf("outbox answered attacks: %d tried, %d got through; want 0", tried, through)
	}
	restore := store.SwitchOffIdentityForTest()
	tried, through = run(t)
	restore()
	if through != tried {
		t.Errorf("positive control: with identity checks off %d of %d attacks landed, want all", through, tried)
	}
}

// TestSendRetryAfterAMinuteOutage: an SMTP server that answered 454 for
// a minute, while restarts of the watcher counted forty attempts, gets
// the send again about a minute after it came back, not an hour later
// as forty attempts of the old schedule would make it wait.
func TestSendRetryAfterAMinuteOutage(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var clock time.Time
	w.o.Now = func() time.Time { return clock }
	start := time.Now() // the store stamps UpdatedAt with the real clock
	ob := w.autoSend(t, store.OutboxPending)
	clock = start.Add(-time.Minute) // the first failure, a minute ago
	w.mailer.sendErrs = []error{&TemporaryError{Err: errors.New("454 4.7.0 Temporary authentication failure")}}
	if err := w.o.Deliver(context.Background(), ob.ID); err == nil {
		t.Fatal("deliver: got nil, want the 454")
	}
	if _, err := w.st.TransitionOutbox(ob.ID, []string{store.OutboxPending}, store.OutboxPending, func(r *store.OutboxRecord) error {
		r.Attempts = 40 // a kill -9 storm: every restart's recovery counted one
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	clock = start.Add(20 * time.Second) // the server is back; too early
	if err := w.o.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := w.mailer.sends(); n != 0 {
		t.Fatalf("sent %d before the retry was due", n)
	}
	clock = start.Add(75 * time.Second) // about a minute after it came back
	if err := w.o.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := w.mailer.sends(); n != 1 {
		t.Fatalf("a minute after the server came back: %d sends, want 1", n)
	}
	// The control: forty attempts alone would have waited an hour.
	if store.RetryBackoff(40) < time.Hour {
		t.Errorf("control: RetryBackoff(40) = %v, want the hour ceiling", store.RetryBackoff(40))
	}
}

// TestCancelledAutoSendGivesTheCapBack: an automatic reply counts
// against the daily caps when it is decided; when it is then never sent
// (the original was answered meanwhile, or the owner cancelled it in
// policy.send_delay) the reservation is given back, once. One that goes
// out keeps it, and an approval's cancel gives back nothing.
func TestCancelledAutoSendGivesTheCapBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	created := time.Date(2026, 3, 2, 23, 50, 0, 0, time.UTC)
	day := store.Day(created)
	reserve := func(t *testing.T, w *world) {
		t.Helper()
		if ok, err := w.st.IncrAutoSend("a", "carol@example.org", day, 1, 10); !ok || err != nil {
			t.Fatalf("reserve: %v %v", ok, err)
		}
	}
	counts := func(t *testing.T, w *world) (int, int) {
		t.Helper()
		pc, g, err := w.st.AutoSendCounts("a", "carol@example.org", day)
		if err != nil {
			t.Fatal(err)
		}
		return pc, g
	}
	auto := func(t *testing.T, w *world, status string) *store.OutboxRecord {
		t.Helper()
		return w.record(t, &store.OutboxRecord{ID: ID(original), Auto: true, Status: status, CreatedAt: created})
	}
	t.Run("answered meanwhile", func(t *testing.T) {
		w := newWorld(t)
		reserve(t, w)
		ob := auto(t, w, store.OutboxPending)
		w.mailer.answered = true
		if err := w.o.Deliver(ctx, ob.ID); err != nil {
			t.Fatal(err)
		}
		if got := w.status(t, ob.ID); got.Status != store.OutboxCancelled || w.mailer.sends() != 0 {
			t.Fatalf("record %s, %d sends; want cancelled, none", got.Status, w.mailer.sends())
		}
		if pc, g := counts(t, w); pc != 0 || g != 0 {
			t.Errorf("caps after a cancelled auto-send: %d/%d, want 0/0", pc, g)
		}
		// Delivering the cancelled record again refunds nothing more.
		if ok, _ := w.st.IncrAutoSend("a", "carol@example.org", day, 1, 10); !ok {
			t.Fatal("the cap was not given back")
		}
		_ = w.o.Deliver(ctx, ob.ID)
		if pc, _ := counts(t, w); pc != 1 {
			t.Errorf("after a second Deliver of the cancelled record: %d, want 1 (refunded once)", pc)
		}
	})
	t.Run("cancelled by the owner in the delay", func(t *testing.T) {
		w := newWorld(t)
		reserve(t, w)
		ob := auto(t, w, store.OutboxScheduled)
		if err := w.o.Cancel(ctx, ob.ID); err != nil {
			t.Fatal(err)
		}
		if pc, g := counts(t, w); pc != 0 || g != 0 {
			t.Errorf("caps after the owner's cancel: %d/%d, want 0/0", pc, g)
		}
	})
	t.Run("sent keeps it", func(t *testing.T) {
		w := newWorld(t)
		reserve(t, w)
		ob := auto(t, w, store.OutboxPending)
		if err := w.o.Deliver(ctx, ob.ID); err != nil {
			t.Fatal(err)
		}
		if w.mailer.sends() != 1 {
			t.Fatalf("sends: %d, want 1", w.mailer.sends())
		}
		if pc, g := counts(t, w); pc != 1 || g != 1 {
			t.Errorf("caps after a sent auto-send: %d/%d, want 1/1", pc, g)
		}
	})
	t.Run("an approval's cancel refunds nothing", func(t *testing.T) {
		w := newWorld(t)
		reserve(t, w) // another automatic reply to carol that day
		ob := w.approval(t, 0)
		if _, err := w.st.TransitionOutbox(ob.ID, []string{store.OutboxPending}, store.OutboxScheduled, nil); err != nil {
			t.Fatal(err)
		}
		if err := w.o.Cancel(ctx, ob.QueueID); err != nil {
			t.Fatal(err)
		}
		if pc, g := counts(t, w); pc != 1 || g != 1 {
			t.Errorf("caps after cancelling an approval: %d/%d, want 1/1", pc, g)
		}
	})
}
