package outbox_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

// Recover is tested against a real IMAP server (memimap), a real SMTP
// sink and the Gemini fake (apitest.World): the crash states are made by
// stopping a real approval at the step in question.

// pendingApproval approves Carol's draft while SMTP fails temporarily: the
// item is approved and its outbox record pending, as a crash before SMTP
// leaves it.
func pendingApproval(t *testing.T, w *apitest.World) *store.OutboxRecord {
	t.Helper()
	w.SMTP.FailNext(smtptest.StageMail, 1, 451)
	if _, err := w.Pipeline.Approve(context.Background(), w.Draft, ""); err == nil {
		t.Fatal("approve: got nil, want the temporary failure")
	}
	ob, err := w.Store.GetOutbox(agent.ApprovalOutboxID(w.Draft))
	if err != nil || ob.Status != store.OutboxPending {
		t.Fatalf("outbox: got %+v, %v; want pending", ob, err)
	}
	return ob
}

// toSending moves a pending record to sending, as a crash in the middle
// of the SMTP transaction leaves it.
func toSending(t *testing.T, w *apitest.World, id string) *store.OutboxRecord {
	t.Helper()
	ob, err := w.Store.TransitionOutbox(id, []string{store.OutboxPending}, store.OutboxSending, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ob
}

func recoverOK(t *testing.T, w *apitest.World) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Pipeline.Recover(ctx); err != nil {
		t.Fatalf("recover: %v", err)
	}
}

func wantStatus(t *testing.T, w *apitest.World, outboxID, obStatus, itemID, itemStatus string) {
	t.Helper()
	if ob, err := w.Store.GetOutbox(outboxID); err != nil || ob.Status != obStatus {
		t.Errorf("outbox %s: got %+v, %v; want %s", outboxID, ob, err, obStatus)
	}
	if itemID == "" {
		return
	}
	if q, err := w.Store.GetQueueItem(itemID); err != nil || q.Status != itemStatus {
		t.Errorf("item %s: got %+v, %v; want %s", itemID, q, err, itemStatus)
	}
}

// copies counts the messages in Sent carrying the record's Message-ID.
func copies(w *apitest.World, ob *store.OutboxRecord) int {
	n := 0
	for _, raw := range w.Mailbox("Sent") {
		if bytes.Contains(raw, []byte(ob.MessageID)) {
			n++
		}
	}
	return n
}

func TestRecoverPendingIsSent(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ob := pendingApproval(t, w)
	recoverOK(t, w)
	wantStatus(t, w, ob.ID, store.OutboxAppended, w.Draft, store.QueueSent)
	if n := len(w.SMTP.Messages()); n != 1 {
		t.Errorf("SMTP: got %d, want 1", n)
	}
	if n := copies(w, ob); n != 1 {
		t.Errorf("Sent: got %d copies, want 1", n)
	}
	// Recovering again does nothing more.
	recoverOK(t, w)
	if n := len(w.SMTP.Messages()); n != 1 {
		t.Errorf("SMTP after a second recover: got %d, want 1", n)
	}
}

// An earlier attempt got through before the crash: the Sent folder has
// it, so it is not sent again.
func TestRecoverPendingAlreadyInSent(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ob := pendingApproval(t, w)
	w.Append("Sent", ob.Raw)
	recoverOK(t, w)
	wantStatus(t, w, ob.ID, store.OutboxAppended, w.Draft, store.QueueSent)
	if n := len(w.SMTP.Messages()); n != 0 {
		t.Errorf("SMTP: got %d, want 0 (it was delivered before)", n)
	}
	if n := copies(w, ob); n != 1 {
		t.Errorf("Sent: got %d copies, want 1", n)
	}
}

func TestRecoverSendingFoundInSent(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ob := toSending(t, w, pendingApproval(t, w).ID)
	w.Append("Sent", ob.Raw)
	recoverOK(t, w)
	wantStatus(t, w, ob.ID, store.OutboxAppended, w.Draft, store.QueueSent)
	if n := len(w.SMTP.Messages()); n != 0 {
		t.Errorf("SMTP: got %d, want 0", n)
	}
	if n := copies(w, ob); n != 1 {
		t.Errorf("Sent: got %d copies, want 1 (not appended twice)", n)
	}
}

// Cut off mid-transaction and not in Sent: it may have been delivered, so
// it is never re-sent on its own; the owner decides.
func TestRecoverSendingIsNotResent(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ob := toSending(t, w, pendingApproval(t, w).ID)
	recoverOK(t, w)
	wantStatus(t, w, ob.ID, store.OutboxFailed, w.Draft, store.QueueFailed)
	q, _ := w.Store.GetQueueItem(w.Draft)
	if !strings.Contains(q.Error, "may have been delivered") {
		t.Errorf("item error: got %q, want it to say it may have been delivered", q.Error)
	}
	recoverOK(t, w)
	_ = w.Pipeline.SendDue(context.Background())
	if n := len(w.SMTP.Messages()); n != 0 {
		t.Errorf("SMTP: got %d, want 0", n)
	}
	// The owner approves again: sent once.
	if _, err := w.Pipeline.Approve(context.Background(), w.Draft, ""); err != nil {
		t.Fatal(err)
	}
	if n := len(w.SMTP.Messages()); n != 1 {
		t.Errorf("SMTP after re-approval: got %d, want 1", n)
	}
}

// An auto-reply cut off mid-transaction comes back to the owner as a
// failed draft.
func TestRecoverSendingAutoReplyGoesToTheOwner(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	if _, err := w.Store.TransitionOutbox(w.Scheduled, []string{store.OutboxScheduled}, store.OutboxPending, nil); err != nil {
		t.Fatal(err)
	}
	toSending(t, w, w.Scheduled)
	recoverOK(t, w)
	qid := agent.QueueID(w.UIDs["bob"])
	wantStatus(t, w, w.Scheduled, store.OutboxFailed, qid, store.QueueFailed)
	if q, _ := w.Store.GetQueueItem(qid); q.Kind != store.KindDraft || q.Draft == "" || len(q.To) != 1 || q.To[0].Email != apitest.Bob {
		t.Errorf("item: got %+v, want Bob's reply as a draft", q)
	}
	if n := len(w.SMTP.Messages()); n != 0 {
		t.Errorf("SMTP: got %d, want 0", n)
	}
}

// Sent cannot be read: the record stays sending (nothing is decided
// blindly) and the error is returned; a later recover settles it.
func TestRecoverSendingWhenSentIsUnreadable(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	ob := toSending(t, w, pendingApproval(t, w).ID)
	w.FailSentSelect.Store(true)
	if err := w.Pipeline.Recover(context.Background()); err == nil {
		t.Fatal("recover: got nil, want the Sent folder's error")
	}
	wantStatus(t, w, ob.ID, store.OutboxSending, w.Draft, store.QueueApproved)
	w.FailSentSelect.Store(false)
	w.Append("Sent", ob.Raw)
	recoverOK(t, w)
	wantStatus(t, w, ob.ID, store.OutboxAppended, w.Draft, store.QueueSent)
	if n := len(w.SMTP.Messages()); n != 0 {
		t.Errorf("SMTP: got %d, want 0", n)
	}
}

// Delivered but not filed: the copy is appended, once.
func TestRecoverSentIsAppended(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	w.FailSentAppend.Store(true)
	if _, err := w.Pipeline.Approve(context.Background(), w.Draft, ""); err == nil {
		t.Fatal("approve: got nil, want the failed Sent copy")
	}
	id := agent.ApprovalOutboxID(w.Draft)
	wantStatus(t, w, id, store.OutboxSent, w.Draft, store.QueueSent)
	// Still refused: the error is returned, the record kept for later.
	if err := w.Pipeline.Recover(context.Background()); err == nil {
		t.Error("recover while Sent refuses the copy: got nil, want the error")
	}
	wantStatus(t, w, id, store.OutboxSent, "", "")
	w.FailSentAppend.Store(false)
	recoverOK(t, w)
	ob, _ := w.Store.GetOutbox(id)
	wantStatus(t, w, id, store.OutboxAppended, w.Draft, store.QueueSent)
	if n := copies(w, ob); n != 1 {
		t.Errorf("Sent: got %d copies, want 1", n)
	}
	if n := len(w.SMTP.Messages()); n != 1 {
		t.Errorf("SMTP: got %d, want 1", n)
	}
}

// A record marked sent whose copy is already in Sent (the crash came after
// the APPEND) is marked appended without a second copy.
func TestRecoverSentAlreadyFiled(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	w.FailSentAppend.Store(true)
	_, _ = w.Pipeline.Approve(context.Background(), w.Draft, "")
	w.FailSentAppend.Store(false)
	ob, _ := w.Store.GetOutbox(agent.ApprovalOutboxID(w.Draft))
	w.Append("Sent", ob.Raw)
	recoverOK(t, w)
	wantStatus(t, w, ob.ID, store.OutboxAppended, "", "")
	if n := copies(w, ob); n != 1 {
		t.Errorf("Sent: got %d copies, want 1", n)
	}
}

// A failed send is the owner's to retry: Recover leaves it.
func TestRecoverLeavesFailed(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	w.SMTP.FailNext(smtptest.StageMail, 1, 550)
	if _, err := w.Pipeline.Approve(context.Background(), w.Draft, ""); err == nil {
		t.Fatal("approve: got nil, want the permanent failure")
	}
	id := agent.ApprovalOutboxID(w.Draft)
	recoverOK(t, w)
	wantStatus(t, w, id, store.OutboxFailed, w.Draft, store.QueueFailed)
	if n := len(w.SMTP.Messages()); n != 0 {
		t.Errorf("SMTP: got %d, want 0", n)
	}
}

// An approval stranded by an older version (approved, no outbox record)
// goes back to the owner; approving it again sends it once. A scheduled
// auto-reply is not Recover's: it waits for its time.
func TestRecoverStrandedApprovalAndScheduled(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	if _, err := w.Store.TransitionQueueItem(w.Draft, []string{store.QueuePending}, store.QueueApproved, nil); err != nil {
		t.Fatal(err)
	}
	recoverOK(t, w)
	q, _ := w.Store.GetQueueItem(w.Draft)
	if q.Status != store.QueueFailed || !strings.Contains(q.Error, "approve it again") {
		t.Fatalf("stranded item: got %s %q, want failed, asking to approve again", q.Status, q.Error)
	}
	wantStatus(t, w, w.Scheduled, store.OutboxScheduled, "", "")
	if n := len(w.SMTP.Messages()); n != 0 {
		t.Fatalf("SMTP: got %d, want 0", n)
	}
	if _, err := w.Pipeline.Approve(context.Background(), w.Draft, ""); err != nil {
		t.Fatal(err)
	}
	if n := len(w.SMTP.Messages()); n != 1 {
		t.Errorf("SMTP after re-approval: got %d, want 1", n)
	}
}
