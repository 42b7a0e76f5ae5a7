package api

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/testsize"
	"github.com/mailagent/mailagent/store"
)

// seedMessages writes n messages: accounts, decisions and senders mixed,
// some stored at one instant (ties are ordered by key).
func seedMessages(t *testing.T, st *store.Store, n int) {
	t.Helper()
	base := testNow.Add(-time.Duration(n) * time.Second)
	recs := make([]*store.MessageRecord, n)
	for i := range n {
		recs[i] = &store.MessageRecord{
			MessageKey: store.MessageKey{Account: []string{"home", "work", "club"}[i%3], Mailbox: "INBOX", UIDValidity: 1, UID: uint32(1 + (i*37)%n)},
			MessageID:  fmt.Sprintf("<p%d@example.org>", i),
			From:       mail.Address{Email: fmt.Sprintf("sender%d@example.org", i%7)},
			Subject:    fmt.Sprintf("note %d", i),
			Date:       base.Add(time.Duration(i) * time.Second),
			State:      store.StateDone,
			Decision:   []string{"archive", "queue", "ignore"}[i%3],
			CreatedAt:  base.Add(time.Duration(i-i%4) * time.Second),
		}
	}
	putMessages(t, st, recs)
}

func messageKeys(recs []store.MessageRecord) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.MessageKey.String())
	}
	return out
}

func walkMessagePages(t *testing.T, svc Service, r MessagePageRequest) []string {
	t.Helper()
	var out []string
	for range 10000 {
		p, err := MessagePage(context.Background(), svc, r)
		if err != nil {
			t.Fatal(err)
		}
		if r.Limit > 0 && len(p.Messages) > r.Limit {
			t.Fatalf("page of %d messages; limit %d", len(p.Messages), r.Limit)
		}
		out = append(out, messageKeys(p.Messages)...)
		if p.Next.IsZero() {
			return out
		}
		r.After = p.Next
	}
	t.Fatal("the walk does not end")
	return nil
}

// TestMessagePageSocketAndStore: the pages read through the watcher's
// socket, over the store, and cut from a full read are the same, and
// equal a full read filtered and sorted; the socket carries the scan
// budget (a partial page) and refuses bounds beyond the server's.
func TestMessagePageSocketAndStore(t *testing.T) {
	t.Parallel()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	// Generated volume: each walk is checked against the full read; from
	// 250, Since still leaves out some messages.
	seedMessages(t, st, testsize.N(400, 250))
	local := &Local{DB: st, Now: func() time.Time { return testNow }}
	client := dial(t, startServer(t, local).path)
	for _, r := range []MessagePageRequest{
		{Limit: 25},
		{Account: "work", Limit: 13},
		{Accounts: []string{"home", "club"}, Decisions: []string{"archive", "ignore"}, Limit: 30},
		{Correspondent: "SENDER3@", Subject: []string{"note"}, Limit: 7, MaxScan: 50},
		{Since: testNow.Add(-200 * time.Second), Limit: 100},
	} {
		var full []store.MessageRecord
		if err := st.ListMessages(store.MessageFilter{}, func(m *store.MessageRecord) error {
			if r.Match(m) {
				full = append(full, *m)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(full, func(a, b store.MessageRecord) int {
			return store.MessageCursorOf(&a).Compare(store.MessageCursorOf(&b))
		})
		want := messageKeys(full)
		if len(want) == 0 {
			t.Fatalf("%+v matches nothing", r)
		}
		for name, svc := range map[string]Service{"store": local, "socket": client, "full read": fullOnly{local}} {
			if got := walkMessagePages(t, svc, r); !slices.Equal(got, want) {
				t.Errorf("%s %+v: %d messages, want %d (first %v, want %v)", name, r, len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
			}
		}
	}
	// A page through the socket costs what it costs over the store, and
	// carries a partial page's cursor.
	p, err := client.MessagePage(context.Background(), MessagePageRequest{Limit: 20})
	if err != nil || len(p.Messages) != 20 || p.Loaded != 20 || p.Examined != 21 || !p.Indexed || p.Partial {
		t.Fatalf("socket page: %v, %d messages, loaded %d, examined %d, indexed %v", err, len(p.Messages), p.Loaded, p.Examined, p.Indexed)
	}
	p, err = client.MessagePage(context.Background(), MessagePageRequest{Correspondent: "nobody", MaxScan: 10})
	if err != nil || len(p.Messages) != 0 || !p.Partial || p.Next.Key == nil || p.Examined != 10 {
		t.Fatalf("socket partial page: %v %+v", err, p)
	}
	if b := boundedMessages(MessagePageRequest{MaxBytes: 1 << 40, MaxScan: 1 << 40}); b.MaxBytes != MaxMessagePageBytes || b.MaxScan != MaxMessagePageScan {
		t.Errorf("bounded: %+v", b)
	}
	// A cursor that names no message is refused, over the socket too.
	for name, svc := range map[string]Service{"store": local, "socket": client} {
		for _, bad := range []store.MessageKey{{Account: "", Mailbox: "INBOX"}, {Account: "home", Mailbox: "IN\x00BOX"}} {
			if _, err := MessagePage(context.Background(), svc, MessagePageRequest{After: store.MessageCursor{CreatedAt: testNow, Key: &bad}}); !errors.Is(err, ErrBadRequest) {
				t.Errorf("%s: cursor key %q: %v, want ErrBadRequest", name, bad, err)
			}
		}
	}
}
