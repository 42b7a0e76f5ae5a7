package daemon

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// TestThreaderStaysBounded pins what docs/ARCHITECTURE.md says of a
// long-running watcher: the threader is rebuilt from the start-up window
// (the newest ThreadLimit messages of ThreadWindow) once it holds a
// quarter more than ThreadLimit, or a day after the last rebuild, and is
// left alone otherwise.
func TestThreaderStaysBounded(t *testing.T) {
	t.Parallel()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	now := time.Now()
	const limit = 40
	for i := range 60 { // 60 stored messages; the window holds the newest 40
		if err := st.PutMessage(&store.MessageRecord{
			MessageKey: store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
			MessageID:  fmt.Sprintf("<m%d@example.org>", i), Subject: fmt.Sprintf("topic %d", i),
			Date: now.Add(-time.Duration(60-i) * time.Minute), State: store.StateDone,
		}); err != nil {
			t.Fatal(err)
		}
	}
	th := mail.NewThreader()
	grow := func(n int) {
		for i := range n {
			th.Add(mail.ThreadInput{MessageID: fmt.Sprintf("<mem%d-%d@example.org>", th.Len(), i), Subject: fmt.Sprintf("in memory %d %d", th.Len(), i), Date: now})
		}
	}
	clock := now
	d := &Daemon{Store: st, Pipeline: &agent.Pipeline{Threader: th}, ThreadLimit: limit, ThreadWindow: 24 * time.Hour,
		Now: func() time.Time { return clock }}
	d.threadsRebuilt = clock

	grow(limit + limit/4) // exactly a quarter more: not yet
	d.boundThreader()
	if got := th.Len(); got != limit+limit/4 {
		t.Fatalf("at the bound: %d messages, want it untouched (%d)", got, limit+limit/4)
	}
	grow(1) // past it: rebuilt from the window
	d.boundThreader()
	if got := th.Len(); got != limit {
		t.Fatalf("past the bound: %d messages, want the window's %d", got, limit)
	}
	if !d.threadsRebuilt.Equal(clock) {
		t.Errorf("rebuild time not recorded")
	}

	grow(3) // small, but a day later: rebuilt anyway
	clock = clock.Add(24*time.Hour + time.Minute)
	d.ThreadWindow = 48 * time.Hour
	d.boundThreader()
	if got := th.Len(); got != limit {
		t.Fatalf("a day later: %d messages, want the window's %d", got, limit)
	}
	grow(3) // and not again within the day
	clock = clock.Add(time.Hour)
	d.boundThreader()
	if got := th.Len(); got != limit+3 {
		t.Fatalf("an hour after a rebuild: %d messages, want %d (untouched)", got, limit+3)
	}
}
