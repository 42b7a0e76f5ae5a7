package outbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

// cutAutoReply starts Bob's auto-reply (pending, sent by Recover at once),
// holds the SMTP transaction at stage on the real sink, and stops the
// process there (its context ends, as a crash or SIGTERM mid-send would
// stop it): the record is left "sending". It returns the record as the
// crash left it and the sink's release, which the caller calls to let
// the server finish its side.
func cutAutoReply(t *testing.T, w *apitest.World, stage smtptest.Stage) (*store.OutboxRecord, func()) {
	t.Helper()
	if _, err := w.Store.TransitionOutbox(w.Scheduled, []string{store.OutboxScheduled}, store.OutboxPending, nil); err != nil {
		t.Fatal(err)
	}
	reached, release := w.SMTP.Hold(stage)
	t.Cleanup(release)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Pipeline.Recover(ctx) }()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("the send ended (%v) before the transaction reached stage %d", err, stage)
	case <-time.After(30 * time.Second):
		t.Fatalf("the transaction never reached stage %d", stage)
	}
	cancel()
	select {
	case err := <-done:
		t.Logf("the cut send returned: %v", err) // cut on purpose: any error is expected
	case <-time.After(30 * time.Second):
		t.Fatal("the cut send did not return")
	}
	ob, err := w.Store.GetOutbox(w.Scheduled)
	if err != nil || ob.Status != store.OutboxSending {
		t.Fatalf("after the cut: got %+v, %v; want the record left sending", ob, err)
	}
	return ob, release
}

// A crash before SMTP DATA (here: the server still answering RCPT) cannot
// have delivered anything. The daemon's mailer reports the moment before
// DATA, so the record says so, and the next start sends it: exactly one
// message, no owner's draft. Before this, every such record went to the
// owner as "may have been delivered": in the issue-26 kill -9 storm under
// a flapping SMTP server, 14 of 100 auto-replies were never sent.
func TestRecoverSendingBeforeDataIsResent(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ob, release := cutAutoReply(t, w, smtptest.StageRcpt)
	release()
	if !ob.BeforeData {
		t.Fatalf("cut at RCPT: got BeforeData false, want true (the daemon's mailer is a StagedMailer)")
	}
	recoverOK(t, w)
	wantStatus(t, w, ob.ID, store.OutboxAppended, "", "")
	if n := len(w.SMTP.Messages()); n != 1 {
		t.Errorf("SMTP: got %d messages, want 1", n)
	}
	if n := copies(w, ob); n != 1 {
		t.Errorf("Sent: got %d copies, want 1", n)
	}
	if q, err := w.Store.GetQueueItem(agent.QueueID(w.UIDs["bob"])); err == nil {
		t.Errorf("queue: got item %s (%s), want none: nothing was ambiguous", q.ID, q.Error)
	}
	recoverOK(t, w)
	_ = w.Pipeline.SendDue(context.Background())
	if n := len(w.SMTP.Messages()); n != 1 {
		t.Errorf("SMTP after another recover: got %d, want 1", n)
	}
}

// The control: the same crash once DATA went out (the server has the
// message and is about to accept it) leaves a send that did go through.
// It must not be resent, or Bob gets two: it goes to the owner.
func TestRecoverSendingAfterDataIsNotResent(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ob, release := cutAutoReply(t, w, smtptest.StageData)
	release() // the server accepts what it has
	if err := w.SMTP.WaitFor(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if ob.BeforeData {
		t.Fatalf("cut after DATA: got BeforeData true, want false")
	}
	recoverOK(t, w)
	qid := agent.QueueID(w.UIDs["bob"])
	wantStatus(t, w, ob.ID, store.OutboxFailed, qid, store.QueueFailed)
	if q, _ := w.Store.GetQueueItem(qid); q == nil || !strings.Contains(q.Error, "may have been delivered") {
		t.Errorf("item: got %+v, want the owner told it may have been delivered", q)
	}
	_ = w.Pipeline.SendDue(context.Background())
	if n := len(w.SMTP.Messages()); n != 1 {
		t.Errorf("SMTP: got %d messages, want 1 (the cut transaction's, never a second)", n)
	}
}
