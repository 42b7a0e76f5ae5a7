package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// BenchmarkRetryPassIdle is one pass of the retry timer's store work
// (needs_review retries, then IMAP copies to retry) on a store with a long
// history where nothing is due: 100k finished messages, 200 needs_review
// messages retried a moment ago, 10k finished sends, 5k queue items (1k of
// them pending with their Drafts copy made). Each part reads only its
// status index (idx_state needs_review, idx_outbox sent, idx_queue
// pending), so the cost follows those sets, not the history.
//
//	go test ./internal/app/daemon -run '^$' -bench RetryPassIdle -benchtime 20x
func BenchmarkRetryPassIdle(b *testing.B) {
	st, err := store.Open(filepath.Join(b.TempDir(), "db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	excerpt := strings.Repeat("Thanks for the update on the project, see you on Tuesday. ", 8)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 64 { // concurrent writers share group commits
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < 100_000; i += 64 {
				r := &store.MessageRecord{
					MessageKey: store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
					MessageID:  fmt.Sprintf("<m%d@example.org>", i), ThreadID: fmt.Sprintf("t%d", i/4),
					Subject: "Re: project", Excerpt: excerpt, State: store.StateDone,
				}
				if i%500 == 0 {
					r.State, r.Error, r.Attempts = store.StateNeedsReview, "model: seeded", 1
				}
				if err := st.PutMessage(r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	raw := []byte(strings.Repeat("body line of a sent reply\r\n", 80))
	for i := range 10_000 {
		if err := st.PutOutbox(&store.OutboxRecord{ID: fmt.Sprintf("ob_done%05d", i), Account: "a", MessageID: fmt.Sprintf("s%d@mailagent", i),
			Raw: raw, Body: excerpt, Status: store.OutboxAppended}); err != nil {
			b.Fatal(err)
		}
	}
	statuses := []string{store.QueueSent, store.QueueRejected, store.QueueResolved, store.QueueSent, store.QueuePending}
	for i := range 5_000 {
		q := &store.QueueItem{ID: fmt.Sprintf("q_%05d", i), Kind: store.KindDraft, Account: "a", Draft: excerpt,
			Status: statuses[i%len(statuses)], IMAPDraftUID: uint32(i + 1)}
		if err := st.PutQueueItem(q); err != nil {
			b.Fatal(err)
		}
	}
	d := &Daemon{Store: st, Pipeline: &agent.Pipeline{Store: st, Actor: &agent.Actor{Store: st}}, RetryInterval: 15 * time.Minute}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		d.retryNeedsReview(ctx, false)
		if m := d.retryCopies(ctx); len(m) != 0 {
			b.Fatalf("copies to retry: %v, want none", m)
		}
	}
}
