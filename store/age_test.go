package store

import (
	"testing"
	"time"
)

// TestQueueItemKeepsItsMessagesDate: an item written for a stored
// message takes the message's Date once, keeps it through later writes,
// and AGE's base falls back to creation when there is no message.
func TestQueueItemKeepsItsMessagesDate(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	written := time.Date(2025, 2, 20, 9, 30, 0, 0, time.UTC)
	k := MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: 7}
	if err := s.PutMessage(&MessageRecord{MessageKey: k, MessageID: "m@x", Date: written, State: StateDone}); err != nil {
		t.Fatal(err)
	}
	q := &QueueItem{ID: "q1", Kind: KindDraft, Account: "a", Message: k, Status: QueuePending}
	if err := s.PutQueueItem(q); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetQueueItem("q1")
	if err != nil || !got.MessageDate.Equal(written) || !got.Written().Equal(written) {
		t.Fatalf("item %+v (%v): MessageDate want %v", got, err, written)
	}
	if _, err := s.TransitionQueueItem("q1", []string{QueuePending}, QueueRejected, func(q *QueueItem) error { q.MessageDate = time.Time{}; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetQueueItem("q1"); !got.MessageDate.Equal(written) {
		t.Errorf("after a transition MessageDate %v, want %v kept", got.MessageDate, written)
	}
	orphan := &QueueItem{ID: "q2", Kind: KindNotify, Account: "a", Status: QueuePending}
	if err := s.PutQueueItem(orphan); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetQueueItem("q2"); !got.MessageDate.IsZero() || !got.Written().Equal(got.CreatedAt) {
		t.Errorf("an item without a message: MessageDate %v, Written %v; want zero and its creation", got.MessageDate, got.Written())
	}
	rec := &MessageRecord{CreatedAt: written}
	if !rec.Written().Equal(written) {
		t.Error("a message without Date is not aged from its storing")
	}
}

// TestSendRetryFollowsTheTimeFailing: a send that has been failing for a
// minute is tried again within about a minute however many attempts (a
// kill -9 storm counts one per restart) it has; the first retry comes
// quickly; a long outage is tried at least hourly; a record that never
// failed keeps the attempt-count schedule.
func TestSendRetryFollowsTheTimeFailing(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		r       OutboxRecord
		atMost  time.Duration // after UpdatedAt
		atLeast time.Duration
	}{
		{"first failure", OutboxRecord{FailingSince: t0, UpdatedAt: t0, Attempts: 1}, 10 * time.Second, 10 * time.Second},
		{"a minute of failures, 40 attempts", OutboxRecord{FailingSince: t0, UpdatedAt: t0.Add(time.Minute), Attempts: 40}, time.Minute, time.Minute},
		{"a day down", OutboxRecord{FailingSince: t0, UpdatedAt: t0.Add(24 * time.Hour), Attempts: 3}, time.Hour, time.Hour},
		{"never failed", OutboxRecord{UpdatedAt: t0, Attempts: 2}, RetryBackoff(2), RetryBackoff(2)},
	} {
		wait := SendRetryAt(&c.r).Sub(c.r.UpdatedAt)
		if wait > c.atMost || wait < c.atLeast {
			t.Errorf("%s: retry after %v, want between %v and %v", c.name, wait, c.atLeast, c.atMost)
		}
	}
	// The attempt count alone (the old schedule) would have waited an hour
	// after 40 attempts: the positive control of the test above.
	if RetryBackoff(40) != time.Hour {
		t.Errorf("RetryBackoff(40) = %v, the control assumes an hour", RetryBackoff(40))
	}
}
