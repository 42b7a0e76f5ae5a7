package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// TestSendDueThroughIndexes: SendDue sends a scheduled reply when its time
// comes (not before), wakes a snoozed item, and once a day prunes finished
// sends older than the retention.
func TestSendDueThroughIndexes(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure, Tuesday."}
	p, st, mailer := newTestPipeline(t, model, "review")
	ctx := context.Background()
	t0 := time.Now()
	raw := []byte("From: ada@example.com\r\nTo: bob@example.org\r\nMessage-ID: <sched@x>\r\nSubject: hi\r\n\r\nhi\r\n")
	if err := st.PutOutbox(&store.OutboxRecord{ID: "ob_sched", Account: "a", From: "ada@example.com", MessageID: "<sched@x>",
		To: []string{"bob@example.org"}, Raw: raw, Status: store.OutboxScheduled, SendAt: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutOutbox(&store.OutboxRecord{ID: "ob_old", Account: "a", Raw: raw, Status: store.OutboxAppended}); err != nil {
		t.Fatal(err)
	}
	q := queuedDraft(t, p)
	if err := p.Snooze(ctx, q.ID, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	p.Now = func() time.Time { return t0.Add(30 * time.Second) }
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(mailer.sent); n != 0 {
		t.Fatalf("sent %d before the scheduled time", n)
	}
	p.Now = func() time.Time { return t0.Add(2 * time.Minute) }
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if ob, _ := st.GetOutbox("ob_sched"); ob.Status != store.OutboxAppended && ob.Status != store.OutboxSent {
		t.Fatalf("scheduled send is %s after its time", ob.Status)
	}
	if got, _ := st.GetQueueItem(q.ID); got.Status != store.QueueSnoozed {
		t.Fatalf("woken early: %s", got.Status)
	}
	p.Now = func() time.Time { return t0.Add(61 * time.Minute) }
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetQueueItem(q.ID); got.Status != store.QueuePending {
		t.Fatalf("snoozed item not woken: %s", got.Status)
	}
	// 100 days later: the daily prune drops finished sends past the
	// default retention (90 days).
	p.Now = func() time.Time { return t0.Add(100 * 24 * time.Hour) }
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetOutbox("ob_old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("finished send past retention: %v", err)
	}
}
