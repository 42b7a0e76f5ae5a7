package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// flakyMailer fails sends as told, then records them.
type flakyMailer struct {
	memMailer
	fail []error // returned by the next sends, in order
	raws [][]byte
}

func (m *flakyMailer) Send(ctx context.Context, acct, from string, to []string, raw []byte) error {
	m.mu.Lock()
	if len(m.fail) > 0 {
		err := m.fail[0]
		m.fail = m.fail[1:]
		m.mu.Unlock()
		return err
	}
	m.raws = append(m.raws, raw)
	m.mu.Unlock()
	return m.memMailer.Send(ctx, acct, from, to, raw)
}

type maybeDeliveredErr struct{}

func (maybeDeliveredErr) Error() string           { return "connection lost after the final dot" }
func (maybeDeliveredErr) MaybeDeliveredErr() bool { return true }

func queuedDraft(t *testing.T, p *Pipeline) *store.QueueItem {
	t.Helper()
	out, err := p.Process(context.Background(), input("Carol <carol@example.org>", "Lunch", "Lunch?"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.Actor.Store.GetQueueItem(QueueID(out.Record.MessageKey))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestTemporarySendFailureIsRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure, Tuesday."}
	p, st, _ := newTestPipeline(t, model, "review")
	mailer := &flakyMailer{fail: []error{&TemporaryError{Err: errors.New("451 try later")}}}
	p.Actor.Mailer = mailer
	q := queuedDraft(t, p)
	if _, err := p.Approve(context.Background(), q.ID, ""); err == nil {
		t.Fatal("approve: got nil, want the temporary failure")
	}
	ob, _ := st.GetOutbox(ApprovalOutboxID(q.ID))
	if ob.Status != store.OutboxPending || ob.Attempts != 1 {
		t.Fatalf("outbox after a temporary failure: %s, %d attempts; want pending, 1", ob.Status, ob.Attempts)
	}
	// Too early: nothing is sent.
	if err := p.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(mailer.raws) != 0 {
		t.Fatal("retried before the backoff")
	}
	// After the backoff the send goes out, once.
	p.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if err := p.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(mailer.raws) != 1 {
		t.Errorf("sends: got %d, want 1", len(mailer.raws))
	}
	if q, _ := st.GetQueueItem(q.ID); q.Status != store.QueueSent {
		t.Errorf("item: got %s, want sent", q.Status)
	}
}

func TestMaybeDeliveredIsNeverResent(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure, Tuesday."}
	p, st, _ := newTestPipeline(t, model, "review")
	mailer := &flakyMailer{fail: []error{maybeDeliveredErr{}}}
	p.Actor.Mailer = mailer
	q := queuedDraft(t, p)
	if _, err := p.Approve(context.Background(), q.ID, ""); !errors.Is(err, ErrAmbiguousSend) {
		t.Fatalf("approve: got %v, want ErrAmbiguousSend", err)
	}
	ob, _ := st.GetOutbox(ApprovalOutboxID(q.ID))
	if ob.Status != store.OutboxFailed {
		t.Errorf("outbox: got %s, want failed", ob.Status)
	}
	item, _ := st.GetQueueItem(q.ID)
	if item.Status != store.QueueFailed || !strings.Contains(item.Error, "may have been delivered") {
		t.Errorf("item: got %s %q, want failed and saying it may have been delivered", item.Status, item.Error)
	}
	p.Now = func() time.Time { return time.Now().Add(24 * time.Hour) }
	_ = p.SendDue(context.Background())
	_ = p.Recover(context.Background())
	if len(mailer.raws) != 0 {
		t.Errorf("an ambiguous send was retried on its own: %d sends", len(mailer.raws))
	}
}

func TestReapprovalAfterFailureSendsTheEditedText(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure, Tuesday."}
	p, _, _ := newTestPipeline(t, model, "review")
	mailer := &flakyMailer{fail: []error{errors.New("550 mailbox unavailable")}}
	p.Actor.Mailer = mailer
	q := queuedDraft(t, p)
	if _, err := p.Approve(context.Background(), q.ID, ""); err == nil {
		t.Fatal("approve: want the permanent failure")
	}
	if _, err := p.Approve(context.Background(), q.ID, "Wednesday works better, see you then."); err != nil {
		t.Fatalf("second approve: %v", err)
	}
	if len(mailer.raws) != 1 || !strings.Contains(string(mailer.raws[0]), "Wednesday works better") {
		t.Errorf("sent %d messages; want 1 with the edited text", len(mailer.raws))
	}
}
