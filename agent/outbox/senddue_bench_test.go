package outbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/store"
)

// benchDB builds (once per process, in a temporary directory) a state
// database with a long history: 100k messages, 10k finished sends with
// their raw messages, 5k queue items (most closed), plus a few scheduled
// sends, a send waiting out its retry backoff, and snoozed items, none of
// them due. It returns a copy for the benchmark to open.
var benchDB = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "senddue-bench-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "state.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		return "", err
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
		return "", err
	}
	raw := []byte(strings.Repeat("Received: from mx\r\n", 40) + strings.Repeat("body line of a sent reply\r\n", 80))
	now := time.Now()
	for i := range 10_000 {
		if err := st.PutOutbox(&store.OutboxRecord{ID: fmt.Sprintf("ob_done%05d", i), Account: "a", From: "ada@example.com",
			MessageID: fmt.Sprintf("<s%d@mailagent>", i), To: []string{"bob@example.org"}, Raw: raw,
			Subject: "Re: project", Body: excerpt, Status: store.OutboxAppended}); err != nil {
			return "", err
		}
	}
	for i := range 20 {
		if err := st.PutOutbox(&store.OutboxRecord{ID: fmt.Sprintf("ob_sched%02d", i), Account: "a", Raw: raw,
			Status: store.OutboxScheduled, SendAt: now.Add(time.Duration(i+1) * time.Hour)}); err != nil {
			return "", err
		}
	}
	if err := st.PutOutbox(&store.OutboxRecord{ID: "ob_retry", Account: "a", Raw: raw, Status: store.OutboxPending, Attempts: 6}); err != nil {
		return "", err
	}
	statuses := []string{store.QueueSent, store.QueueRejected, store.QueueResolved, store.QueueSent, store.QueuePending}
	for i := range 5_000 {
		q := &store.QueueItem{ID: fmt.Sprintf("q_%05d", i), Kind: store.KindDraft, Account: "a",
			Subject: "Re: project", Draft: excerpt, Status: statuses[i%len(statuses)]}
		if i%50 == 0 {
			q.Status, q.SnoozeUntil = store.QueueSnoozed, now.Add(24*time.Hour)
		}
		if err := st.PutQueueItem(q); err != nil {
			return "", err
		}
	}
	return path, nil
})

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSendDueIdleTick is one tick of the watcher's 1-second timer on
// a store with a long history and nothing due.
//
//	go test ./agent/outbox -run '^$' -bench SendDueIdleTick -benchtime 50x
func BenchmarkSendDueIdleTick(b *testing.B) {
	src, err := benchDB()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "state.db")
	copyFile(b, src, path)
	st, err := store.Open(path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	o := &Outbox{Store: st, Mailer: &scriptMailer{}}
	ctx := context.Background()
	if err := o.SendDue(ctx); err != nil { // the first tick may prune
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := o.SendDue(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
