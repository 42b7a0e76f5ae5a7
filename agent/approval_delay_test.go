package agent

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// delayedPipeline is a review-mode pipeline with a 5s undo window on a
// clock the test moves.
func delayedPipeline(t *testing.T) (*Pipeline, *store.Store, *memMailer, *time.Time) {
	t.Helper()
	model := &recordingModel{class: okClass(), draft: "Sure, Tuesday."}
	p, st, mailer := newTestPipeline(t, model, "review")
	p.Policy.ApprovalDelay = 5 * time.Second
	now := time.Now()
	p.Now = func() time.Time { return now }
	return p, st, mailer, &now
}

func sends(m *memMailer) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sent)
}

func TestApprovalUndoWindowCancelSendsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, st, mailer, now := delayedPipeline(t)
	q := queuedDraft(t, p)
	before, err := st.GetQueueItem(q.ID)
	if err != nil {
		t.Fatal(err)
	}

	item, err := p.Approve(ctx, q.ID, "Tuesday works.")
	if err != nil {
		t.Fatal(err)
	}
	if item.Status != store.QueueApproved {
		t.Fatalf("item after approve: %s, want approved", item.Status)
	}
	ob, err := st.GetOutbox(ApprovalOutboxID(q.ID))
	if err != nil {
		t.Fatal(err)
	}
	if ob.Status != store.OutboxScheduled || !ob.SendAt.Equal(now.Add(5*time.Second)) {
		t.Fatalf("outbox after approve: %s at %v, want scheduled at now+5s", ob.Status, ob.SendAt)
	}
	if n := sends(mailer); n != 0 {
		t.Fatalf("sent %d during the undo window, want 0", n)
	}
	// Inside the window the due timer sends nothing.
	*now = now.Add(4 * time.Second)
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if n := sends(mailer); n != 0 {
		t.Fatalf("sent %d before the window ended", n)
	}

	// Undo by the queue id, as `queue cancel q_…` does.
	if err := p.Cancel(ctx, q.ID); err != nil {
		t.Fatalf("cancel within the window: %v", err)
	}
	back, err := st.GetQueueItem(q.ID)
	if err != nil {
		t.Fatal(err)
	}
	if back.Status != store.QueuePending {
		t.Fatalf("item after cancel: %s, want pending", back.Status)
	}
	// Handed back whole: sender, recipients, classification, gates, draft
	// and the owner's edit.
	if !reflect.DeepEqual(back.From, before.From) || !reflect.DeepEqual(back.To, before.To) ||
		!reflect.DeepEqual(back.Classification, before.Classification) || !reflect.DeepEqual(back.Gates, before.Gates) ||
		back.Draft != before.Draft || back.Final != "Tuesday works." || len(back.Gates) == 0 {
		t.Fatalf("item lost fields on cancel:\nbefore %+v\nafter  %+v", before, back)
	}
	if ob, _ := st.GetOutbox(ApprovalOutboxID(q.ID)); ob.Status != store.OutboxCancelled {
		t.Fatalf("outbox after cancel: %s, want cancelled", ob.Status)
	}
	// Long past the window: still nothing sent.
	*now = now.Add(time.Hour)
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if n := sends(mailer); n != 0 {
		t.Fatalf("a cancelled approval was sent (%d)", n)
	}
	// A second cancel is refused, not a silent success.
	if err := p.Cancel(ctx, q.ID); !errors.Is(err, ErrNotActionable) {
		t.Fatalf("second cancel: %v, want ErrNotActionable", err)
	}

	// Approving again after an undo works and sends once.
	if _, err := p.Approve(ctx, q.ID, ""); err != nil {
		t.Fatalf("approve after undo: %v", err)
	}
	*now = now.Add(6 * time.Second)
	for range 2 {
		if err := p.SendDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := sends(mailer); n != 1 {
		t.Fatalf("sends after re-approval: %d, want 1", n)
	}
}

func TestApprovalSentOnceWhenWindowPasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, st, mailer, now := delayedPipeline(t)
	q := queuedDraft(t, p)
	if _, err := p.Approve(ctx, q.ID, ""); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(5 * time.Second)
	for range 3 {
		if err := p.SendDue(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := sends(mailer); n != 1 {
		t.Fatalf("sends: %d, want exactly 1", n)
	}
	item, _ := st.GetQueueItem(q.ID)
	if item.Status != store.QueueSent {
		t.Fatalf("item: %s, want sent", item.Status)
	}
	// Too late to undo: refused with the reason, by either id.
	for _, id := range []string{q.ID, ApprovalOutboxID(q.ID)} {
		err := p.Cancel(ctx, id)
		if !errors.Is(err, ErrNotActionable) || !strings.Contains(err.Error(), "too late") {
			t.Errorf("cancel %s after the send: %v, want too late", id, err)
		}
	}
	if item, _ := st.GetQueueItem(q.ID); item.Status != store.QueueSent {
		t.Fatalf("a late cancel changed the item to %s", item.Status)
	}
}

func TestApprovalWithoutDelaySendsAtOnce(t *testing.T) {
	t.Parallel()
	p, _, mailer, _ := delayedPipeline(t)
	p.Policy.ApprovalDelay = 0
	q := queuedDraft(t, p)
	item, err := p.Approve(context.Background(), q.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if item.Status != store.QueueSent || sends(mailer) != 1 {
		t.Fatalf("approval_delay 0: item %s, %d sends; want sent, 1", item.Status, sends(mailer))
	}
}

func TestSendApprovalWaitsThenSendsOrCancels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("window passes", func(t *testing.T) {
		p, _, mailer, now := delayedPipeline(t)
		q := queuedDraft(t, p)
		if _, err := p.Approve(ctx, q.ID, ""); err != nil {
			t.Fatal(err)
		}
		var waited time.Time
		item, err := p.SendApproval(ctx, q.ID, func(_ context.Context, at time.Time) error {
			waited = at
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !waited.Equal(now.Add(5*time.Second)) || item.Status != store.QueueSent || sends(mailer) != 1 {
			t.Fatalf("waited until %v, item %s, %d sends; want now+5s, sent, 1", waited, item.Status, sends(mailer))
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		p, st, mailer, _ := delayedPipeline(t)
		q := queuedDraft(t, p)
		if _, err := p.Approve(ctx, q.ID, ""); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		_, err := p.SendApproval(cctx, q.ID, func(ctx context.Context, _ time.Time) error {
			cancel() // Ctrl-C during the window
			return ctx.Err()
		})
		if !errors.Is(err, ErrApprovalCancelled) {
			t.Fatalf("interrupted wait: %v, want ErrApprovalCancelled", err)
		}
		item, _ := st.GetQueueItem(q.ID)
		if item.Status != store.QueuePending || sends(mailer) != 0 {
			t.Fatalf("after an interrupted window: item %s, %d sends; want pending, 0", item.Status, sends(mailer))
		}
	})
	t.Run("cancelled by another client meanwhile", func(t *testing.T) {
		p, _, mailer, _ := delayedPipeline(t)
		q := queuedDraft(t, p)
		if _, err := p.Approve(ctx, q.ID, ""); err != nil {
			t.Fatal(err)
		}
		item, err := p.SendApproval(ctx, q.ID, func(context.Context, time.Time) error {
			return p.Cancel(ctx, q.ID) // the TUI's undo lands during the wait
		})
		if err != nil || item.Status != store.QueuePending {
			t.Fatalf("after a cancel during the wait: %v, item %+v; want no error, pending", err, item)
		}
		if sends(mailer) != 0 {
			t.Fatalf("a cancelled approval was sent")
		}
	})
}
