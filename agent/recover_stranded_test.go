package agent

import (
	"context"
	"testing"

	"github.com/mailagent/mailagent/store"
)

func TestRecoverStrandedApproval(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Sure."}
	p, st, mailer := newTestPipeline(t, model, "review")
	q := queuedDraft(t, p)
	if _, err := st.TransitionQueueItem(q.ID, openStatuses, store.QueueApproved, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := st.GetQueueItem(q.ID)
	if got.Status != store.QueueFailed || len(mailer.sent) != 0 {
		t.Fatalf("%s, %d sent", got.Status, len(mailer.sent))
	}
	if _, err := p.Approve(context.Background(), q.ID, ""); err != nil {
		t.Fatal(err)
	}
	if len(mailer.sent) != 1 {
		t.Fatalf("sent %d after re-approval", len(mailer.sent))
	}
}
