package daemon_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/store"
)

// These tests run the daemon against a real IMAP server (memimap), a real
// SMTP sink and the Gemini fake, through apitest.World, whose constructor
// is itself a `watch --once` (Daemon.Run with once).

func runOnce(t *testing.T, w *apitest.World) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Daemon.Run(ctx, true); err != nil {
		t.Fatalf("run once: %v", err)
	}
}

func checkpoint(t *testing.T, w *apitest.World, mailbox string) store.Checkpoint {
	t.Helper()
	cp, ok, err := w.Store.Checkpoint(apitest.Account, mailbox)
	if err != nil || !ok {
		t.Fatalf("checkpoint of %s: %v, %v", mailbox, ok, err)
	}
	return cp
}

func TestRunOnce(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	// Every message reached a terminal state, so the checkpoint is past
	// all five, the needs_review one included (it is retried on a timer,
	// not refetched).
	if cp := checkpoint(t, w, "INBOX"); cp.LastUID != 5 {
		t.Errorf("checkpoint: got %d, want 5", cp.LastUID)
	}
	for name, k := range w.UIDs {
		rec, err := w.Store.GetMessage(k)
		if err != nil || !rec.State.Terminal() {
			t.Errorf("%s: got %+v, %v; want a terminal record", name, rec, err)
		}
	}
	// The Sent scan ran before the first decisions: Bob, whom the owner
	// wrote to, is known, and the scan position is stored.
	if c, err := w.Store.GetContact(apitest.Account, apitest.Bob); err != nil || !c.Known {
		t.Errorf("Bob: got %+v, %v; want known from the Sent folder", c, err)
	}
	if cp := checkpoint(t, w, daemon.SentCheckpoint); cp.LastUID != 1 {
		t.Errorf("Sent checkpoint: got %d, want 1", cp.LastUID)
	}
	st := w.Daemon.Statuses()
	if len(st) != 1 || st[0].LastSync.IsZero() || st[0].Error != "" {
		t.Errorf("statuses: got %+v, want one synced account without error", st)
	}

	// Nothing new: a second run makes no model call and changes nothing.
	calls := len(w.Gemini.Requests())
	runOnce(t, w)
	// Frank's needs_review message is retried at every start (the model
	// works now): one classify and one draft call.
	if rec, _ := w.Store.GetMessage(w.Flaky); rec.State != store.StateDone {
		t.Errorf("Frank after the start-up retry: got %s, want done", rec.State)
	}
	if got := len(w.Gemini.Requests()) - calls; got != 2 {
		t.Errorf("model calls of the second run: got %d, want 2 (Frank's retry only)", got)
	}
	calls = len(w.Gemini.Requests())
	runOnce(t, w)
	if got := len(w.Gemini.Requests()) - calls; got != 0 {
		t.Errorf("model calls of a run with nothing new: got %d, want 0", got)
	}

	// New mail: processed, and the checkpoint moves over it.
	uid := w.Append("INBOX", apitest.Mail(apitest.Carol, "Re: Lunch on Tuesday?", "carol-2@example.org", "Or Wednesday?"))
	runOnce(t, w)
	if cp := checkpoint(t, w, "INBOX"); cp.LastUID != uid {
		t.Errorf("checkpoint after new mail: got %d, want %d", cp.LastUID, uid)
	}
	k := w.UIDs["carol"]
	k.UID = uid
	rec, err := w.Store.GetMessage(k)
	if err != nil || rec.State != store.StateDone {
		t.Fatalf("new mail: got %+v, %v; want done", rec, err)
	}
	first, _ := w.Store.GetMessage(w.UIDs["carol"])
	if rec.ThreadID != first.ThreadID {
		t.Errorf("thread: got %s, want Carol's first thread %s", rec.ThreadID, first.ThreadID)
	}
}

// A model that is down leaves the message needs_review: terminal, so the
// checkpoint passes it, and it is kept for the retry.
func TestModelDownDoesNotHoldTheCheckpoint(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	w.ModelDown.Store(true)
	uid := w.Append("INBOX", apitest.Mail(apitest.Erin, "Dinner", "erin-2@example.org", "Dinner on Friday?"))
	runOnce(t, w)
	if cp := checkpoint(t, w, "INBOX"); cp.LastUID != uid {
		t.Errorf("checkpoint: got %d, want %d", cp.LastUID, uid)
	}
	k := w.UIDs["erin"]
	k.UID = uid
	rec, err := w.Store.GetMessage(k)
	if err != nil || rec.State != store.StateNeedsReview || !strings.Contains(rec.Error, "model is down") {
		t.Fatalf("got %+v, %v; want needs_review with the model's error", rec, err)
	}
	// Retry (what `queue retry` and the timer call) refetches it from the
	// server and runs it again.
	w.ModelDown.Store(false)
	if err := w.Daemon.Retry(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if rec, _ := w.Store.GetMessage(k); rec.State != store.StateDone || rec.Attempts != 1 {
		t.Errorf("after retry: got %s after %d attempts, want done (1 failed attempt carried over)", rec.State, rec.Attempts)
	}
	if _, err := w.Store.GetQueueItem(agent.QueueID(k)); err != nil {
		t.Errorf("after retry: %v, want Erin's new draft queued", err)
	}
	gone := k
	gone.UID = 4242
	if err := w.Daemon.Retry(context.Background(), gone); !errors.Is(err, daemon.ErrGone) {
		t.Errorf("retry of a message the server does not have: got %v, want ErrGone", err)
	}
}

// After a UIDVALIDITY change the mailbox is rescanned and mail handled
// before is recognised by Message-ID: no second draft, no second model
// call.
func TestUIDValidityChangeRescans(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	old := checkpoint(t, w, "INBOX")
	if err := w.IMAP.Recreate(context.Background(), apitest.Owner, "INBOX"); err != nil {
		t.Fatal(err)
	}
	again := w.Append("INBOX", apitest.Mail(apitest.Carol, "Lunch on Tuesday?", "carol-1@example.org", "Are you free for lunch on Tuesday?"))
	fresh := w.Append("INBOX", apitest.Mail(apitest.Erin, "Dinner", "erin-2@example.org", "Dinner on Friday?"))
	calls := len(w.Gemini.Requests())
	runOnce(t, w)
	cp := checkpoint(t, w, "INBOX")
	if cp.UIDValidity == old.UIDValidity || cp.LastUID != fresh {
		t.Fatalf("checkpoint: got %+v, want the new UIDVALIDITY and uid %d", cp, fresh)
	}
	k := store.MessageKey{Account: apitest.Account, Mailbox: "INBOX", UIDValidity: cp.UIDValidity, UID: again}
	rec, err := w.Store.GetMessage(k)
	if err != nil || !rec.State.Terminal() || !strings.Contains(strings.Join(rec.Reasons, " "), "already handled") {
		t.Fatalf("Carol's message under its new UID: got %+v, %v; want it recorded as handled before", rec, err)
	}
	if _, err := w.Store.GetQueueItem(agent.QueueID(k)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a second item for Carol's message: %v", err)
	}
	// Erin's new mail: classified and drafted (2 calls). Carol's costs
	// none; nor does Frank's retry, whose UID is void now (it stays
	// needs_review, shown to the owner).
	if got := len(w.Gemini.Requests()) - calls; got != 2 {
		t.Errorf("model calls: got %d, want 2 (none for the message handled before)", got)
	}
	if rec, err := w.Store.GetMessage(store.MessageKey{Account: apitest.Account, Mailbox: "INBOX", UIDValidity: cp.UIDValidity, UID: fresh}); err != nil || rec.State != store.StateDone {
		t.Errorf("Erin's new mail: got %+v, %v; want done", rec, err)
	}
	if rec, _ := w.Store.GetMessage(w.Flaky); rec.State != store.StateNeedsReview {
		t.Errorf("Frank's message under the void UIDVALIDITY: got %s, want needs_review kept", rec.State)
	}
}

// A reply the owner sent from their own client resolves the item it
// answers (read by the Sent scan), and only that one.
func TestSentScanResolvesTheOwnersReply(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	w.Append("Sent", []byte("From: Ada <"+apitest.Owner+">\r\nTo: <"+apitest.Carol+">\r\nSubject: Re: Lunch on Tuesday?\r\n"+
		"Date: "+time.Now().Format(time.RFC1123Z)+"\r\nMessage-ID: <ada-reply-1@example.com>\r\nIn-Reply-To: <carol-1@example.org>\r\n\r\nYes!\r\n"))
	// A hostile copy: In-Reply-To names Erin's message but the reply went
	// to someone else. It must not close Erin's item.
	w.Append("Sent", []byte("From: Ada <"+apitest.Owner+">\r\nTo: <mallory@example.net>\r\nSubject: Re: Coffee?\r\n"+
		"Date: "+time.Now().Format(time.RFC1123Z)+"\r\nMessage-ID: <ada-reply-2@example.com>\r\nIn-Reply-To: <erin-1@example.org>\r\n\r\nfwd\r\n"))
	// A sync rescans Sent at most every 30s: a minute later it does.
	w.Daemon.Now = func() time.Time { return time.Now().Add(time.Minute) }
	runOnce(t, w)
	if q, _ := w.Store.GetQueueItem(w.Draft); q.Status != store.QueueResolved {
		t.Errorf("Carol's item: got %s, want resolved", q.Status)
	}
	if q, _ := w.Store.GetQueueItem(w.Draft2); q.Status != store.QueuePending {
		t.Errorf("Erin's item: got %s, want pending (the reply went to someone else)", q.Status)
	}
	if c, err := w.Store.GetContact(apitest.Account, apitest.Carol); err != nil || !c.Known || c.OwnerReplies != 1 {
		t.Errorf("Carol: got %+v, %v; want known, one owner reply", c, err)
	}
	if cp := checkpoint(t, w, daemon.SentCheckpoint); cp.LastUID != 3 {
		t.Errorf("Sent checkpoint: got %d, want 3", cp.LastUID)
	}
	if len(w.SMTP.Messages()) != 0 {
		t.Errorf("sent %d messages, want none", len(w.SMTP.Messages()))
	}
}

// The long-running watch: IDLE picks up new mail, the timers send a due
// reply, retry a needs_review message and file a Sent copy that failed;
// Run returns nil when its context ends.
func TestWatchTimers(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	d := w.Daemon
	d.RetryInterval = 50 * time.Millisecond
	// A reply goes out while Sent refuses its copy: delivered, not filed.
	w.FailSentAppend.Store(true)
	if _, err := w.Pipeline.Approve(context.Background(), w.Draft, ""); err == nil {
		t.Fatal("approve: got nil, want the failed Sent copy reported")
	}
	w.FailSentAppend.Store(false)
	// Frank's message fails once more before the watch starts.
	w.ModelDown.Store(true)
	k := w.Flaky
	if err := d.Retry(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	w.ModelDown.Store(false)
	// Time has moved on: Bob's delayed reply is due, the Sent copy has
	// settled, Frank's backoff is over.
	later := func() time.Time { return time.Now().Add(3 * time.Hour) }
	w.Pipeline.Now, d.Now = later, later

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, false) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: got %v, want nil after its context ended", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	}()
	uid := w.Append("INBOX", apitest.Mail(apitest.Erin, "Dinner", "erin-2@example.org", "Dinner on Friday?"))
	newKey := w.UIDs["erin"]
	newKey.UID = uid

	deadline := time.Now().Add(15 * time.Second)
	for {
		var missing []string
		if rec, err := w.Store.GetMessage(newKey); err != nil || rec.State != store.StateDone {
			missing = append(missing, "new mail processed")
		}
		if rec, _ := w.Store.GetMessage(k); rec.State != store.StateDone {
			missing = append(missing, "Frank retried")
		}
		if ob, _ := w.Store.GetOutbox(w.Scheduled); ob.Status != store.OutboxAppended {
			missing = append(missing, "Bob's reply sent ("+ob.Status+")")
		}
		if ob, _ := w.Store.GetOutbox(agent.ApprovalOutboxID(w.Draft)); ob.Status != store.OutboxAppended {
			missing = append(missing, "Carol's reply filed in Sent ("+ob.Status+")")
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 15s still waiting for: %s", strings.Join(missing, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(w.SMTP.Messages()); n != 2 {
		t.Errorf("SMTP: got %d messages, want 2 (Carol's approval, Bob's auto-reply), nothing twice", n)
	}
	sent := 0
	for _, raw := range w.Mailbox("Sent") {
		if strings.Contains(string(raw), "Sure, Tuesday works") {
			sent++
		}
	}
	if sent != 2 {
		t.Errorf("Sent folder: got %d copies of the replies, want 2", sent)
	}
	st := d.Statuses()
	if len(st) != 1 || st[0].CopiesMissing != 0 || st[0].State == "" {
		t.Errorf("status: got %+v, want a live account with no copy missing", st)
	}
}
