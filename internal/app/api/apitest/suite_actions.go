package apitest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

// returned records an item an action returned: nil exactly when it
// failed, the same item both ways.
func (r *run) returned(step string, q *store.QueueItem, err error) {
	r.t.Helper()
	r.state(step+" returned", ItemState(q))
	if (q == nil) != (err != nil) {
		r.t.Errorf("%s: got item %v with error %v, want an item exactly when there is no error", step, q != nil, err)
	}
}

// inMailbox counts the messages of a mailbox whose text contains s.
func (r *run) inMailbox(name, s string) int {
	n := 0
	for _, raw := range r.w.Mailbox(name) {
		if bytes.Contains(raw, []byte(s)) {
			n++
		}
	}
	return n
}

// notActionable checks that every action on a closed item fails so.
func (r *run) notActionable(id string) {
	r.t.Helper()
	q, err := r.svc.Approve(r.ctx, id, "")
	r.check("approve again", err, agent.ErrNotActionable)
	r.returned("approve again", q, err)
	r.check("reject after", r.svc.Reject(r.ctx, id, "no"), agent.ErrNotActionable)
	q, err = r.svc.Edit(r.ctx, id, "new text")
	r.check("edit after", err, agent.ErrNotActionable)
	r.returned("edit after", q, err)
	r.check("snooze after", r.svc.Snooze(r.ctx, id, time.Now().Add(time.Hour)), agent.ErrNotActionable)
	q, err = r.svc.Regenerate(r.ctx, id, "shorter")
	r.check("regenerate after", err, agent.ErrNotActionable)
	r.returned("regenerate after", q, err)
}

func caseApprove(r *run) {
	w := r.w
	before, _ := w.Store.GetQueueItem(w.Draft)
	q, err := r.svc.Approve(r.ctx, w.Draft, "")
	r.check("approve", err, nil)
	r.returned("approve", q, err)
	if q != nil && q.Status != store.QueueSent {
		r.t.Errorf("approve: got %s, want sent", q.Status)
	}
	r.item("after approve", w.Draft)
	r.smtp("after approve", 1)
	msgs := w.SMTP.Messages()
	if len(msgs) == 1 {
		m := mail.Parse(msgs[0].Data)
		if len(msgs[0].To) != 1 || msgs[0].To[0] != Carol || !slices.Contains(m.InReplyTo, "carol-1@example.org") || mail.IDKey(m.MessageID) != mail.IDKey(before.DraftMessageID) {
			r.t.Errorf("sent: got to %v, In-Reply-To %q, Message-ID %q; want Carol, her message, the draft's id %q", msgs[0].To, m.InReplyTo, m.MessageID, before.DraftMessageID)
		}
	}
	ob := r.outbox("after approve", agent.ApprovalOutboxID(w.Draft))
	if ob.Status != store.OutboxAppended {
		r.t.Errorf("outbox: got %s, want appended (sent and filed)", ob.Status)
	}
	if n := r.inMailbox("Sent", "Sure, Tuesday works"); n != 1 {
		r.t.Errorf("Sent folder: got %d copies, want 1", n)
	}
	if n := r.inMailbox("Drafts", before.DraftMessageID); n != 0 {
		r.t.Errorf("Drafts folder: the sent draft's copy is still there (%d)", n)
	}
	d, err := r.svc.QueueItem(r.ctx, w.Draft)
	r.check("detail", err, nil)
	if d != nil && (d.Outbox == nil || d.Outbox.Status != store.OutboxAppended || d.Outbox.Raw != nil) {
		r.t.Errorf("detail outbox: got %+v, want the appended record without raw", d.Outbox)
	}
	rs, err := r.svc.RecipientStatus(r.ctx, Account, []string{Carol})
	r.check("recipient status", err, nil)
	if !rs[Carol] {
		r.t.Errorf("Carol: got unknown, want known after an approved reply")
	}
	r.notActionable(w.Draft)
	r.smtp("after the refused actions", 1)
}

func caseApproveFinal(r *run) {
	w := r.w
	q, err := r.svc.Approve(r.ctx, w.Draft, "Tuesday at noon, then.")
	r.check("approve", err, nil)
	r.returned("approve", q, err)
	r.smtp("sent", 1)
	if msgs := w.SMTP.Messages(); len(msgs) == 1 && !bytes.Contains(msgs[0].Data, []byte("Tuesday at noon, then.")) {
		r.t.Errorf("sent text: got %q, want the owner's final text", msgs[0].Data)
	}
	r.item("after", w.Draft)
}

func caseApproveNotDraft(r *run) {
	w := r.w
	q, err := r.svc.Approve(r.ctx, "q_nosuch", "")
	r.check("approve unknown", err, store.ErrNotFound)
	r.returned("approve unknown", q, err)
	q, err = r.svc.Approve(r.ctx, w.Notify, "")
	r.check("approve a notify item", err, agent.ErrNotActionable)
	r.returned("approve a notify item", q, err)
	q, err = r.svc.Regenerate(r.ctx, w.Notify, "")
	r.check("regenerate a notify item", err, agent.ErrNotActionable)
	r.returned("regenerate a notify item", q, err)
	q, err = r.svc.Edit(r.ctx, w.Notify, "text")
	r.check("edit a notify item", err, agent.ErrNotActionable)
	r.returned("edit a notify item", q, err)
	r.item("notify untouched", w.Notify)
	r.smtp("nothing sent", 0)
}

func caseConcurrentApprove(r *run) {
	w := r.w
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, errs[i] = r.svc.Approve(r.ctx, w.Draft2, "") })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !strings.Contains(Kinds(err), "agent.ErrNotActionable"):
			r.t.Errorf("concurrent approve: got %v (%s), want nil or ErrNotActionable", err, Kinds(err))
		}
	}
	r.state("successes", fmt.Sprint(ok))
	if ok != 1 {
		r.t.Errorf("successful approvals: got %d, want 1", ok)
	}
	r.smtp("sent once", 1)
	r.item("after", w.Draft2)
}

func caseSentCopyFails(r *run) {
	w := r.w
	w.FailSentAppend.Store(true)
	q, err := r.svc.Approve(r.ctx, w.Draft, "")
	r.fails("approve", err)
	r.returned("approve", q, err)
	if err != nil && !strings.Contains(err.Error(), "Sent") {
		r.t.Errorf("approve: got %q, want it to say the Sent copy failed", err)
	}
	// The reply went out; only its copy is missing: the item is sent, not
	// failed (a second approval would send it twice).
	r.smtp("sent", 1)
	if it := r.item("after", w.Draft); it.Status != store.QueueSent {
		r.t.Errorf("item: got %s, want sent", it.Status)
	}
	if ob := r.outbox("after", agent.ApprovalOutboxID(w.Draft)); ob.Status != store.OutboxSent {
		r.t.Errorf("outbox: got %s, want sent (delivered, not filed)", ob.Status)
	}
	r.notActionable(w.Draft)
	r.smtp("still once", 1)
	// The cause is fixed; recovery files the copy, once.
	w.FailSentAppend.Store(false)
	r.check("recover", w.Pipeline.Recover(r.ctx), nil)
	if ob := r.outbox("after recover", agent.ApprovalOutboxID(w.Draft)); ob.Status != store.OutboxAppended {
		r.t.Errorf("outbox after recover: got %s, want appended", ob.Status)
	}
	if n := r.inMailbox("Sent", "Sure, Tuesday works"); n != 1 {
		r.t.Errorf("Sent folder: got %d copies, want 1", n)
	}
	r.smtp("never resent", 1)
}

func caseSentUnreadable(r *run) {
	w := r.w
	w.FailSentSelect.Store(true)
	q, err := r.svc.Approve(r.ctx, w.Draft, "")
	r.fails("approve", err)
	r.returned("approve", q, err)
	r.smtp("nothing sent", 0)
	it := r.item("after", w.Draft)
	if it.Status != store.QueueFailed || !strings.Contains(it.Error, "nothing was sent") {
		r.t.Errorf("item: got %s %q, want failed, saying nothing was sent", it.Status, it.Error)
	}
	w.FailSentSelect.Store(false)
	q, err = r.svc.Approve(r.ctx, w.Draft, "")
	r.check("approve again", err, nil)
	r.returned("approve again", q, err)
	r.smtp("sent once", 1)
}

func caseSMTPTemporary(r *run) {
	w := r.w
	w.SMTP.FailNext(smtptest.StageMail, 1, 451)
	q, err := r.svc.Approve(r.ctx, w.Draft, "")
	r.fails("approve", err)
	r.returned("approve", q, err)
	if !isTemporary(err) {
		r.t.Errorf("approve: got %v, want a temporary error", err)
	}
	r.smtp("not accepted", 0)
	r.item("after", w.Draft)
	if ob := r.outbox("after", agent.ApprovalOutboxID(w.Draft)); ob.Status != store.OutboxPending || ob.Attempts != 1 {
		r.t.Errorf("outbox: got %s after %d attempts, want pending after 1 (retried later)", ob.Status, ob.Attempts)
	}
	q, err = r.svc.Approve(r.ctx, w.Draft, "")
	r.check("approve while it waits", err, agent.ErrNotActionable)
	r.returned("approve while it waits", q, err)
	w.Pipeline.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	r.check("send due", w.Pipeline.SendDue(r.ctx), nil)
	r.smtp("sent by the retry", 1)
	r.item("after the retry", w.Draft)
}

func caseSMTPPermanent(r *run) {
	w := r.w
	w.SMTP.FailNext(smtptest.StageMail, 1, 550)
	q, err := r.svc.Approve(r.ctx, w.Draft, "")
	r.fails("approve", err)
	r.returned("approve", q, err)
	if isTemporary(err) {
		r.t.Errorf("approve: got a temporary error %v, want a permanent one", err)
	}
	if it := r.item("after", w.Draft); it.Status != store.QueueFailed {
		r.t.Errorf("item: got %s, want failed", it.Status)
	}
	r.outbox("after", agent.ApprovalOutboxID(w.Draft))
	q, err = r.svc.Approve(r.ctx, w.Draft, "Tuesday is fine.")
	r.check("approve again with new text", err, nil)
	r.returned("approve again with new text", q, err)
	r.smtp("sent once", 1)
	if msgs := w.SMTP.Messages(); len(msgs) == 1 && !bytes.Contains(msgs[0].Data, []byte("Tuesday is fine.")) {
		r.t.Errorf("sent: got %q, want the new text", msgs[0].Data)
	}
}

func caseReject(r *run) {
	w := r.w
	before, _ := w.Store.GetQueueItem(w.Draft)
	r.check("reject", r.svc.Reject(r.ctx, w.Draft, "not now"), nil)
	if it := r.item("after", w.Draft); it.Status != store.QueueRejected || it.RejectReason != "not now" {
		r.t.Errorf("item: got %s %q, want rejected with the reason", it.Status, it.RejectReason)
	}
	if n := r.inMailbox("Drafts", before.DraftMessageID); n != 0 {
		r.t.Errorf("Drafts: the rejected draft's copy is still there")
	}
	r.notActionable(w.Draft)
	r.check("reject unknown", r.svc.Reject(r.ctx, "q_nosuch", ""), store.ErrNotFound)
	r.check("reject a notify item", r.svc.Reject(r.ctx, w.Notify, "seen"), nil)
	r.item("notify rejected", w.Notify)
	r.smtp("nothing sent", 0)
}

func caseEdit(r *run) {
	w := r.w
	text := "Tuesday at 12:30 suits me.\nSee you there."
	q, err := r.svc.Edit(r.ctx, w.Draft, text)
	r.check("edit", err, nil)
	r.returned("edit", q, err)
	stored := r.item("after", w.Draft)
	if q != nil {
		sameJSON(r.t, "edited item", q, stored)
	}
	if stored.Final != text || stored.Draft != "Sure, Tuesday works for me." || stored.Status != store.QueuePending {
		r.t.Errorf("edit: got final %q draft %q, want the owner's text beside the model's", stored.Final, stored.Draft)
	}
	if n := r.inMailbox("Drafts", "Tuesday at 12:30 suits me."); n != 1 {
		r.t.Errorf("Drafts: got %d copies with the new text, want 1", n)
	}
	if n := r.inMailbox("Drafts", stored.DraftMessageID); n != 1 {
		r.t.Errorf("Drafts: got %d copies of this draft, want 1 (the old one replaced)", n)
	}
	q, err = r.svc.Edit(r.ctx, "q_nosuch", "x")
	r.check("edit unknown", err, store.ErrNotFound)
	r.returned("edit unknown", q, err)
	q, err = r.svc.Approve(r.ctx, w.Draft, "")
	r.check("approve the edited draft", err, nil)
	r.returned("approve the edited draft", q, err)
	if msgs := w.SMTP.Messages(); len(msgs) != 1 || !bytes.Contains(msgs[0].Data, []byte("Tuesday at 12:30 suits me.")) {
		r.t.Errorf("sent: got %d messages, want 1 with the edited text", len(msgs))
	}
	q, err = r.svc.Edit(r.ctx, w.Draft, "too late")
	r.check("edit a sent item", err, agent.ErrNotActionable)
	r.returned("edit a sent item", q, err)
}

func caseSnooze(r *run) {
	w := r.w
	until := time.Now().Add(2 * time.Hour).Truncate(time.Second).In(time.FixedZone("CET", 3600))
	r.check("snooze", r.svc.Snooze(r.ctx, w.Draft, until), nil)
	it := r.item("after", w.Draft)
	if it.Status != store.QueueSnoozed || !it.SnoozeUntil.Equal(until) {
		r.t.Errorf("snooze: got %s until %v, want snoozed until %v", it.Status, it.SnoozeUntil, until)
	}
	r.check("snooze in the past", r.svc.Snooze(r.ctx, w.Draft2, time.Now().Add(-time.Minute)), api.ErrBadRequest)
	r.item("past snooze changed nothing", w.Draft2)
	r.check("snooze unknown", r.svc.Snooze(r.ctx, "q_nosuch", until), store.ErrNotFound)
	// A snoozed item can still be approved.
	q, err := r.svc.Approve(r.ctx, w.Draft, "")
	r.check("approve a snoozed item", err, nil)
	r.returned("approve a snoozed item", q, err)
	r.check("snooze a sent item", r.svc.Snooze(r.ctx, w.Draft, until), agent.ErrNotActionable)
	// The timer wakes a snoozed item when its time comes.
	r.check("snooze", r.svc.Snooze(r.ctx, w.Draft2, until), nil)
	w.Pipeline.Now = func() time.Time { return until.Add(time.Minute) }
	r.check("send due", w.Pipeline.SendDue(r.ctx), nil)
	if it := r.item("woken", w.Draft2); it.Status != store.QueuePending {
		r.t.Errorf("after its time: got %s, want pending", it.Status)
	}
}

func caseRegenerate(r *run) {
	w := r.w
	if _, err := r.svc.Edit(r.ctx, w.Draft, "my own words"); err != nil {
		r.t.Fatal(err)
	}
	q, err := r.svc.Regenerate(r.ctx, w.Draft, "make it shorter")
	r.check("regenerate", err, nil)
	r.returned("regenerate", q, err)
	it := r.item("after", w.Draft)
	if it.Draft != "Yes." || it.Final != "" {
		r.t.Errorf("regenerate: got draft %q final %q, want the new draft and the owner's text cleared", it.Draft, it.Final)
	}
	if n := r.inMailbox("Drafts", it.DraftMessageID); n != 1 || r.inMailbox("Drafts", "my own words") != 0 {
		r.t.Errorf("Drafts: got %d copies of the draft, want 1 with the new text", n)
	}
	w.ModelDown.Store(true)
	q, err = r.svc.Regenerate(r.ctx, w.Draft, "again")
	r.fails("regenerate while the model is down", err)
	r.returned("regenerate while the model is down", q, err)
	r.item("unchanged", w.Draft)
	w.ModelDown.Store(false)
	q, err = r.svc.Regenerate(r.ctx, "q_nosuch", "")
	r.check("regenerate unknown", err, store.ErrNotFound)
	r.returned("regenerate unknown", q, err)
	r.smtp("nothing sent", 0)
}

func caseCancel(r *run) {
	w := r.w
	r.check("cancel", r.svc.Cancel(r.ctx, w.Scheduled), nil)
	if ob := r.outbox("after", w.Scheduled); ob.Status != store.OutboxCancelled {
		r.t.Errorf("outbox: got %s, want cancelled", ob.Status)
	}
	// Its draft comes to the queue, with the auto-send's record.
	qid := agent.QueueID(w.UIDs["bob"])
	it := r.item("queued", qid)
	if it.Kind != store.KindDraft || it.Status != store.QueuePending || it.Draft == "" {
		r.t.Errorf("queued: got %s, want a pending draft with the reply", ItemState(it))
	}
	d, err := r.svc.QueueItem(r.ctx, qid)
	r.check("detail", err, nil)
	if d != nil && (d.Outbox == nil || d.Outbox.ID != w.Scheduled || d.Outbox.Raw != nil) {
		r.t.Errorf("detail: got outbox %+v, want the cancelled auto-send without raw", d.Outbox)
	}
	r.check("cancel again", r.svc.Cancel(r.ctx, w.Scheduled), agent.ErrNotActionable)
	r.check("cancel unknown", r.svc.Cancel(r.ctx, "ob_nosuch"), store.ErrNotFound)
	w.Pipeline.Now = func() time.Time { return time.Now().Add(2 * SendDelay) }
	r.check("send due", w.Pipeline.SendDue(r.ctx), nil)
	r.smtp("a cancelled send never goes", 0)
}

func caseCancelTooLate(r *run) {
	w := r.w
	w.Pipeline.Now = func() time.Time { return time.Now().Add(2 * SendDelay) }
	r.check("send due", w.Pipeline.SendDue(r.ctx), nil)
	r.smtp("sent when due", 1)
	r.check("cancel", r.svc.Cancel(r.ctx, w.Scheduled), agent.ErrNotActionable)
	if ob := r.outbox("after", w.Scheduled); ob.Status != store.OutboxAppended {
		r.t.Errorf("outbox: got %s, want appended", ob.Status)
	}
}

// caseHostile sends what a compromised client or a pasted mail could:
// ids that try to leave their route or the store's key space, and text
// that tries to add headers or recipients to the reply. Nothing may reach
// another item, another route or another recipient; each attempt counts.
func caseHostile(r *run) {
	w := r.w
	tried, through := 0, 0
	for _, id := range []string{"../status", "..%2F..%2Fv1%2Fstatus", w.Draft + "/../" + w.Draft2, w.Draft + "\x00", "q_\r\nX-Evil: 1",
		strings.Repeat("q", 10000), "", " " + w.Draft} {
		tried++
		q, err := r.svc.Approve(r.ctx, id, "")
		want := store.ErrNotFound
		if id == "" {
			want = api.ErrBadRequest
		}
		r.check(fmt.Sprintf("approve %.40q", id), err, want)
		if err == nil || q != nil {
			through++
		}
	}
	// The empty id, which no route can carry, fails the same way for
	// every operation.
	_, err := r.svc.QueueItem(r.ctx, "")
	r.check("queue item with no id", err, api.ErrBadRequest)
	r.check("reject with no id", r.svc.Reject(r.ctx, "", ""), api.ErrBadRequest)
	_, err = r.svc.Edit(r.ctx, "", "x")
	r.check("edit with no id", err, api.ErrBadRequest)
	r.check("snooze with no id", r.svc.Snooze(r.ctx, "", time.Now().Add(time.Hour)), api.ErrBadRequest)
	_, err = r.svc.Regenerate(r.ctx, "", "")
	r.check("regenerate with no id", err, api.ErrBadRequest)
	r.check("cancel with no id", r.svc.Cancel(r.ctx, ""), api.ErrBadRequest)
	r.check("cancel a hostile id", r.svc.Cancel(r.ctx, "../"+w.Scheduled), store.ErrNotFound)
	r.smtp("nothing sent by a hostile id", 0)
	for _, id := range []string{w.Draft, w.Draft2, w.Notify} {
		if it := r.item("untouched", id); it.Status != store.QueuePending {
			through++
		}
	}
	// Header injection through the owner's text: it is the body, never a
	// header, and the reply goes to Carol alone.
	text := "Fine.\r\nBcc: mallory@example.net\r\n\r\nTo: mallory@example.net\nSubject: wire money\x00"
	tried++
	var q *store.QueueItem
	q, err = r.svc.Approve(r.ctx, w.Draft, text)
	r.check("approve with hostile text", err, nil)
	r.returned("approve with hostile text", q, err)
	msgs := w.SMTP.Messages()
	r.smtp("sent once", 1)
	if len(msgs) == 1 {
		m := mail.Parse(msgs[0].Data)
		if len(msgs[0].To) != 1 || msgs[0].To[0] != Carol || m.HeaderValue("Bcc") != "" || len(m.To) != 1 || m.To[0].Email != Carol ||
			strings.Contains(m.Subject, "wire money") {
			through++
			r.t.Errorf("hostile text: got envelope %v, To %v, Bcc %q, Subject %q; want Carol alone and the text in the body", msgs[0].To, m.To, m.HeaderValue("Bcc"), m.Subject)
		}
	}
	tried++
	r.check("reject with hostile reason", r.svc.Reject(r.ctx, w.Draft2, "no\r\n\x1b]52;c;ZXZpbA==\x07"), nil)
	if it := r.item("reason kept as given", w.Draft2); it.RejectReason != "no\r\n\x1b]52;c;ZXZpbA==\x07" {
		through++
		r.t.Errorf("reject reason: got %q, want it stored exactly (terminals escape it on display)", it.RejectReason)
	}
	r.state("attacks", fmt.Sprintf("%d tried, %d got through", tried, through))
	if through != 0 {
		r.t.Errorf("attacks: %d of %d got through", through, tried)
	}
}
