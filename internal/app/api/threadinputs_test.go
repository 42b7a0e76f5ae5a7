package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Defect 7: triage beside a running watcher rebuilt its threader by
// streaming the whole database (every record) under one one-minute
// timeout. It now asks for the thread inputs of its window only, and the
// stream's deadline moves on with each page.
func TestRemoteThreadInputs(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	base := time.Now().Add(-time.Hour)
	const n = 1200
	recs := make([]*store.MessageRecord, n)
	for i := range n {
		recs[i] = &store.MessageRecord{
			MessageKey: store.MessageKey{Account: "home", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
			MessageID:  fmt.Sprintf("m%d@x", i), Subject: fmt.Sprintf("s%d", i%50), Date: base,
			References: []string{fmt.Sprintf("m%d@x", i/2)}, State: store.StateDone,
			CreatedAt: base.Add(time.Duration(i) * time.Millisecond),
		}
	}
	putMessages(t, st, recs)
	srv := startServer(t, newLocal(st, nil))
	c := dial(t, srv.path)
	rs := c.Store().(interface {
		ThreadInputs(since time.Time, limit int, fn func(mail.ThreadInput) error) error
	})

	collect := func(f func(time.Time, int, func(mail.ThreadInput) error) error, since time.Time, limit int) []string {
		t.Helper()
		var ids []string
		if err := f(since, limit, func(in mail.ThreadInput) error { ids = append(ids, in.MessageID); return nil }); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	for _, tc := range []struct {
		name  string
		since time.Time
		limit int
		want  int
	}{
		{"window by count", time.Time{}, 500, 500},
		{"window by time", base.Add(700 * time.Millisecond), 0, n - 700},
		{"everything", time.Time{}, 0, n},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := collect(rs.ThreadInputs, tc.since, tc.limit)
			want := collect(st.ThreadInputs, tc.since, tc.limit)
			if len(got) != tc.want || strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("got %d inputs, want %d equal to the store's (%d)", len(got), tc.want, len(want))
			}
		})
	}

	// A long walk (a slow consumer) is not cut off by StoreTimeout as the
	// old one-shot timeout did: only silence from the watcher is. Each
	// pause is shorter than StoreTimeout, all three together longer
	// (a one-shot timeout of the whole walk fails this at 500ms).
	c.StoreTimeout = 500 * time.Millisecond
	start := time.Now()
	seen := 0
	err := rs.ThreadInputs(time.Time{}, 0, func(mail.ThreadInput) error {
		seen++
		if seen%400 == 0 {
			time.Sleep(c.StoreTimeout / 2) // a slow consumer: the whole walk outlasts StoreTimeout
		}
		return nil
	})
	if err != nil || seen != n {
		t.Fatalf("slow but steady walk: %v after %d of %d (%v)", err, seen, n, time.Since(start))
	}
	if time.Since(start) < c.StoreTimeout {
		t.Fatalf("the walk took %v, less than StoreTimeout: the test proves nothing", time.Since(start))
	}
}
