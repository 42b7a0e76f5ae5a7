package api

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/rig/testsize"
	"github.com/mailagent/mailagent/store"
)

// seedQueue writes n queue items with creation times a second apart (every
// fifth pair sharing one), statuses and accounts mixed.
func seedQueue(t *testing.T, st *store.Store, n int) {
	t.Helper()
	base := testNow.Add(-time.Duration(n) * time.Second)
	for i := range n {
		at := base.Add(time.Duration(i) * time.Second)
		if i%5 == 1 {
			at = at.Add(-time.Second)
		}
		q := &store.QueueItem{ID: fmt.Sprintf("q_%04d", (i*37)%n), Kind: "draft", Account: []string{"home", "work"}[i%2],
			Status: []string{store.QueuePending, store.QueueSent, store.QueueRejected}[i%3], Subject: fmt.Sprint("s", i), CreatedAt: at}
		if err := st.PutQueueItem(q); err != nil {
			t.Fatal(err)
		}
	}
}

func walkPages(t *testing.T, svc Service, r QueuePageRequest) []string {
	t.Helper()
	var out []string
	for range 1000 {
		p, err := QueuePage(context.Background(), svc, r)
		if err != nil {
			t.Fatal(err)
		}
		if r.Limit > 0 && len(p.Items) > r.Limit {
			t.Fatalf("page of %d items; limit %d", len(p.Items), r.Limit)
		}
		out = append(out, queueIDs(p.Items)...)
		if p.Next.IsZero() {
			return out
		}
		r.After = p.Next
	}
	t.Fatal("the walk does not end")
	return nil
}

// fullOnly is a Service without QueuePager: QueuePage cuts its pages from
// Queue.
type fullOnly struct{ Service }

// TestQueuePageSocketAndStore: the pages read through the watcher's socket,
// over the store, and cut from a full read are the same, and equal the
// full listing Queue gives.
func TestQueuePageSocketAndStore(t *testing.T) {
	t.Parallel()
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	seedQueue(t, st, testsize.N(600, 200)) // generated volume: each walk is checked against the full listing
	local := &Local{DB: st, Now: func() time.Time { return testNow }}
	client := dial(t, startServer(t, local).path)
	for _, r := range []QueuePageRequest{
		{Limit: 25},
		{Status: store.QueuePending, Limit: 13},
		{Account: "work", Status: store.QueueSent},
		{Accounts: []string{"home"}, Limit: 100},
	} {
		full, err := local.Queue(context.Background(), QueueFilter{Status: r.Status, Kind: r.Kind, Account: r.Account})
		if err != nil {
			t.Fatal(err)
		}
		full = slices.DeleteFunc(full, func(q store.QueueItem) bool {
			return len(r.Accounts) > 0 && !slices.Contains(r.Accounts, q.Account)
		})
		want := queueIDs(full)
		for name, svc := range map[string]Service{"store": local, "socket": client, "full read": fullOnly{local}} {
			if got := walkPages(t, svc, r); !slices.Equal(got, want) {
				t.Errorf("%s %+v: %d items, want %d (first %v, want %v)", name, r, len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
			}
		}
	}
	// A page through the socket costs what it costs over the store.
	p, err := client.QueuePage(context.Background(), QueuePageRequest{Limit: 20})
	if err != nil || len(p.Items) != 20 || p.Loaded != 20 || p.Examined != 21 || !p.Indexed {
		t.Fatalf("socket page: %v, %d items, loaded %d, examined %d, indexed %v", err, len(p.Items), p.Loaded, p.Examined, p.Indexed)
	}
	// Bounds asked beyond the server's are brought within them.
	if b := bounded(QueuePageRequest{MaxBytes: 1 << 40, MaxScan: 1 << 40}); b.MaxBytes != MaxQueuePageBytes || b.MaxScan != MaxQueuePageScan {
		t.Errorf("bounded: %+v", b)
	}
}

// TestUsageRangeSocketAndStore: the ledger over several days reads the
// same through the socket as from the store; a Service without a ledger is
// an error, never a partial figure.
func TestUsageRangeSocketAndStore(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	for i, d := range []string{"2025-03-10", "2025-03-12", "2025-03-13", "2025-03-14"} {
		if err := st.AddUsage(d, int64(100*(i+1)), int64(10*(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	local := &Local{DB: st, Now: func() time.Time { return testNow }}
	client := dial(t, startServer(t, local).path)
	for _, rg := range [][2]string{{"2025-03-11", "2025-03-14"}, {"", ""}, {"2025-03-15", ""}, {"2025-03-10", "2025-03-10"}} {
		want, err := st.UsageRange(rg[0], rg[1])
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = []store.UsageDay{}
		}
		for name, svc := range map[string]Service{"store": local, "socket": client} {
			got, err := UsageRange(context.Background(), svc, rg[0], rg[1])
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s %v: %d days, want %d", name, rg, len(got), len(want))
			}
			sameJSON(t, name+" usage", got, want)
		}
	}
	if days, err := UsageRange(context.Background(), fullOnly{local}, "", ""); err == nil {
		t.Fatalf("a service without a ledger: %v, no error", days)
	}
}
