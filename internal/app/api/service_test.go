package api

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// modes are the two ways to reach a Local: directly, and as a Client of a
// Serve over a real unix socket. These tests read a seeded store; the
// actions run against the real pipeline in TestConformance
// (conformance_test.go, package apitest).
var modes = []struct {
	name   string
	newSvc func(t *testing.T, st *store.Store) Service
}{
	{"local", func(t *testing.T, st *store.Store) Service {
		return newLocal(st, nil)
	}},
	{"socket", func(t *testing.T, st *store.Store) Service {
		srv := startServer(t, newLocal(st, nil))
		return dial(t, srv.path)
	}},
}

func TestService(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { runServiceSuite(t, m.newSvc) })
	}
}

func ids[T any](xs []T, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

func queueIDs(xs []store.QueueItem) []string {
	return ids(xs, func(q store.QueueItem) string { return q.ID })
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want one matching %v", what, err, target)
	}
}

// runServiceSuite checks every read of the Service against a seeded store.
// Expectations come from the seed and from the store itself, so Local and
// Client must give identical results.
func runServiceSuite(t *testing.T, newSvc func(t *testing.T, st *store.Store) Service) {
	st := openStore(t)
	seed(t, st)
	svc := newSvc(t, st)
	ctx := context.Background()

	t.Run("status", func(t *testing.T) {
		s, err := svc.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := st.CountByState()
		sameJSON(t, "counts", s.Counts, want)
		if s.Counts[store.StateNeedsReview] != 2 || s.Counts[store.StateDone] != 2 {
			t.Errorf("counts: got %v, want 2 needs_review and 2 done", s.Counts)
		}
		if got, want := s.TokensToday, (store.UsageDay{Day: "2025-03-14", Calls: 2, TokensIn: 1000, TokensOut: 100}); !reflect.DeepEqual(got, want) {
			t.Errorf("tokens today: got %+v, want %+v", got, want)
		}
		if s.AutoSentToday != 2 || s.AutoSendCap != 10 {
			t.Errorf("auto-send: got %d of %d, want 2 of 10", s.AutoSentToday, s.AutoSendCap)
		}
		if s.Watcher {
			t.Errorf("watcher: got true, want false (no StatusFunc)")
		}
	})

	t.Run("queue", func(t *testing.T) {
		tests := []struct {
			name string
			f    QueueFilter
			want []string
		}{
			{"all newest first", QueueFilter{}, []string{"q_c", "q_a", "q_e", "q_b", "q_d", "q_approve", "q_reject", "q_edit", "q_snooze", "q_regen", "q_conc", "q_temp"}},
			{"status", QueueFilter{Status: store.QueueSent}, []string{"q_a"}},
			{"kind", QueueFilter{Kind: store.KindNotify}, []string{"q_b"}},
			{"account", QueueFilter{Account: "work"}, []string{"q_b"}},
			{"all three", QueueFilter{Status: store.QueuePending, Kind: store.KindNeedsReview, Account: "home"}, []string{"q_c"}},
			{"no match", QueueFilter{Status: "nosuch"}, []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := svc.Queue(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				if g := queueIDs(got); !slices.Equal(g, tt.want) {
					t.Errorf("got %v, want %v", g, tt.want)
				}
				for _, q := range got {
					want, err := st.GetQueueItem(q.ID)
					if err != nil {
						t.Fatal(err)
					}
					sameJSON(t, "item "+q.ID, q, want)
				}
			})
		}
	})

	t.Run("queue item", func(t *testing.T) {
		tests := []struct {
			name       string
			id         string
			wantThread []string
			wantOutbox string
		}{
			{"thread oldest first", "q_d", []string{"m1@x", "m2@x"}, ""},
			{"with outbox", "q_a", []string{"m1@x", "m2@x"}, "ob_q_a"},
			{"no thread id: own message", "q_e", []string{"m3@x"}, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				d, err := svc.QueueItem(ctx, tt.id)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := st.GetQueueItem(tt.id)
				sameJSON(t, "item", d.Item, want)
				got := ids(d.Thread, func(r store.MessageRecord) string { return r.MessageID })
				if !slices.Equal(got, tt.wantThread) {
					t.Errorf("thread: got %v, want %v", got, tt.wantThread)
				}
				switch {
				case tt.wantOutbox == "" && d.Outbox != nil:
					t.Errorf("outbox: got %s, want none", d.Outbox.ID)
				case tt.wantOutbox != "":
					if d.Outbox == nil || d.Outbox.ID != tt.wantOutbox {
						t.Fatalf("outbox: got %+v, want %s", d.Outbox, tt.wantOutbox)
					}
					if d.Outbox.Raw != nil {
						t.Errorf("outbox raw: got %q, want it stripped", d.Outbox.Raw)
					}
				}
			})
		}
		t.Run("scheduled auto-send found by message key", func(t *testing.T) {
			// An auto-send's record is named agent.OutboxID(key), not
			// after a queue item.
			if err := st.PutOutbox(&store.OutboxRecord{ID: agent.OutboxID(keyM3), Account: "home", Message: keyM3,
				Raw: []byte("z"), Status: store.OutboxScheduled}); err != nil {
				t.Fatal(err)
			}
			d, err := svc.QueueItem(ctx, "q_e")
			if err != nil {
				t.Fatal(err)
			}
			if d.Outbox == nil || d.Outbox.ID != agent.OutboxID(keyM3) || d.Outbox.Raw != nil {
				t.Errorf("outbox: got %+v, want %s without raw", d.Outbox, agent.OutboxID(keyM3))
			}
		})
		t.Run("missing", func(t *testing.T) {
			_, err := svc.QueueItem(ctx, "q_nosuch")
			wantErr(t, "QueueItem", err, store.ErrNotFound)
		})
		t.Run("id that needs escaping", func(t *testing.T) {
			_, err := svc.QueueItem(ctx, "a/b?c#d")
			wantErr(t, "QueueItem", err, store.ErrNotFound)
		})
	})

	t.Run("outbox", func(t *testing.T) {
		tests := []struct {
			name   string
			status string
			want   []string
		}{
			// The record the queue item test added was created at the
			// real time, after every seeded one: it comes first.
			{"all newest first", "", []string{agent.OutboxID(keyM3), "ob_sched", "ob_fail", "ob_q_a"}},
			{"by status", store.OutboxFailed, []string{"ob_fail"}},
			{"none", store.OutboxSending, []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := svc.Outbox(ctx, tt.status)
				if err != nil {
					t.Fatal(err)
				}
				if g := ids(got, func(r store.OutboxRecord) string { return r.ID }); !slices.Equal(g, tt.want) {
					t.Errorf("got %v, want %v", g, tt.want)
				}
				for _, r := range got {
					if r.Raw != nil {
						t.Errorf("%s raw: got %q, want it stripped", r.ID, r.Raw)
					}
					w, _ := st.GetOutbox(r.ID)
					w.Raw = nil
					sameJSON(t, r.ID, r, w)
				}
			})
		}
	})

	t.Run("needs review", func(t *testing.T) {
		got, err := svc.NeedsReview(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g := ids(got, func(r store.MessageRecord) string { return r.MessageID })
		slices.Sort(g)
		if want := []string{"m3@x", "m4@x"}; !slices.Equal(g, want) {
			t.Errorf("got %v, want %v", g, want)
		}
		for i := 1; i < len(got); i++ {
			if got[i].UpdatedAt.After(got[i-1].UpdatedAt) {
				t.Errorf("order: %s (updated %v) after %s (updated %v), want newest first",
					got[i].MessageID, got[i].UpdatedAt, got[i-1].MessageID, got[i-1].UpdatedAt)
			}
		}
		for _, r := range got {
			w, _ := st.GetMessage(r.MessageKey)
			sameJSON(t, r.MessageID, r, w)
		}
	})

	t.Run("contacts", func(t *testing.T) {
		tests := []struct {
			account string
			want    []string
		}{
			{"home", []string{"alice@example.org", "bob@example.org"}},
			{"work", []string{"carol@example.com"}},
			{"nosuch", []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.account, func(t *testing.T) {
				got, err := svc.Contacts(ctx, tt.account)
				if err != nil {
					t.Fatal(err)
				}
				if g := ids(got, func(c store.Contact) string { return c.Email }); !slices.Equal(g, tt.want) {
					t.Errorf("got %v, want %v", g, tt.want)
				}
				for _, c := range got {
					w, _ := st.GetContact(tt.account, c.Email)
					sameJSON(t, c.Email, c, w)
				}
			})
		}
		c, err := svc.Contact(ctx, "home", "Alice@Example.org")
		if err != nil {
			t.Fatal(err)
		}
		if !c.Known || c.Email != "alice@example.org" {
			t.Errorf("contact: got %+v, want known alice@example.org", c)
		}
		_, err = svc.Contact(ctx, "home", "nobody@example.org")
		wantErr(t, "missing contact", err, store.ErrNotFound)
		// alice is known, bob only wrote in, nobody has no contact, and
		// carol is a contact of another account.
		rs, err := svc.RecipientStatus(ctx, "home", []string{"Alice@Example.org", "bob@example.org", "nobody@example.org", "carol@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		wantRS := map[string]bool{"Alice@Example.org": true, "bob@example.org": false, "nobody@example.org": false, "carol@example.com": false}
		if !maps.Equal(rs, wantRS) {
			t.Errorf("recipient status: got %v, want %v", rs, wantRS)
		}

		if err := svc.ForgetContact(ctx, "home", "bob@example.org"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.GetContact("home", "bob@example.org"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after forget: got %v, want ErrNotFound", err)
		}
		wantErr(t, "forget again", svc.ForgetContact(ctx, "home", "bob@example.org"), store.ErrNotFound)
	})

	t.Run("explain", func(t *testing.T) {
		for _, ref := range []string{"tr2", "<M2@X>", "m2@x"} {
			t.Run(ref, func(t *testing.T) {
				e, err := svc.Explain(ctx, ref)
				if err != nil {
					t.Fatal(err)
				}
				wantTrace, _ := st.GetTrace("tr2")
				sameJSON(t, "trace", e.Trace, wantTrace)
				wantMsg, _ := st.GetMessage(keyM2)
				sameJSON(t, "message", e.Message, wantMsg)
			})
		}
		_, err := svc.Explain(ctx, "nosuch")
		wantErr(t, "explain missing", err, store.ErrNotFound)
	})

	t.Run("store", func(t *testing.T) { runStoreSuite(t, st, svc.Store()) })
}

// runStoreSuite checks the RemoteStore against the store underneath.
func runStoreSuite(t *testing.T, st *store.Store, rs RemoteStore) {
	t.Run("get message", func(t *testing.T) {
		got, err := rs.GetMessage(keyM2)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := st.GetMessage(keyM2)
		sameJSON(t, "record", got, want)
		_, err = rs.GetMessage(keyNone)
		wantErr(t, "missing", err, store.ErrNotFound)
	})
	t.Run("put message", func(t *testing.T) {
		rec := &store.MessageRecord{MessageKey: store.MessageKey{Account: "home", Mailbox: "INBOX", UIDValidity: 7, UID: 50},
			MessageID: "m50@x", ThreadID: "t50", From: mail.Address{Email: "dan@example.org"}, Subject: "new", State: store.StateParsed}
		if err := rs.PutMessage(rec); err != nil {
			t.Fatal(err)
		}
		if rec.CreatedAt.IsZero() || rec.UpdatedAt.IsZero() {
			t.Errorf("timestamps: got created %v updated %v, want both set on the caller's record", rec.CreatedAt, rec.UpdatedAt)
		}
		want, err := st.GetMessage(rec.MessageKey)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "stored", rec, want)
		bad := &store.MessageRecord{MessageKey: store.MessageKey{Account: "a\x00b", Mailbox: "INBOX", UID: 1}}
		if err := rs.PutMessage(bad); err == nil {
			t.Error("put with a NUL in the account: got nil, want an error")
		}
	})
	t.Run("thread and relabel", func(t *testing.T) {
		got, err := rs.ThreadMessages("t1", 0)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := st.ThreadMessages("t1", 0)
		sameJSON(t, "thread", got, want)
		got, _ = rs.ThreadMessages("t1", 1)
		if len(got) != 1 || got[0].MessageID != "m2@x" {
			t.Errorf("limit 1: got %v, want [m2@x]", ids(got, func(r *store.MessageRecord) string { return r.MessageID }))
		}
		if got, err := rs.ThreadMessages("nosuch", 0); err != nil || got != nil {
			t.Errorf("empty thread: got %v, %v, want nil, nil", got, err)
		}
		if err := rs.RelabelThread("t50", "t51"); err != nil {
			t.Fatal(err)
		}
		if got, _ := st.ThreadMessages("t51", 0); len(got) != 1 {
			t.Errorf("after relabel: got %d messages in t51, want 1", len(got))
		}
		if err := rs.RelabelThread("", "x"); err == nil {
			t.Error("relabel with an empty id: got nil, want an error")
		}
	})
	t.Run("put trace", func(t *testing.T) {
		tr := &store.Trace{TraceID: "tr50", Message: keyM1, MessageID: "m1@x", Started: testNow, Decision: "archive"}
		if err := rs.PutTrace(tr); err != nil {
			t.Fatal(err)
		}
		got, err := st.ResolveTrace("", "m1@x")
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "trace", got, tr)
	})
	t.Run("contact and caps", func(t *testing.T) {
		got, err := rs.GetContact("home", "alice@example.org")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := st.GetContact("home", "alice@example.org")
		sameJSON(t, "contact", got, want)
		_, err = rs.GetContact("home", "nobody@example.org")
		wantErr(t, "missing contact", err, store.ErrNotFound)
		pc, g, err := rs.AutoSendCounts("home", "alice@example.org", store.Day(testNow))
		if err != nil || pc != 2 || g != 2 {
			t.Errorf("auto-send counts: got %d, %d, %v, want 2, 2, nil", pc, g, err)
		}
	})
	t.Run("list messages", func(t *testing.T) {
		tests := []struct {
			name string
			f    store.MessageFilter
		}{
			{"all", store.MessageFilter{}},
			{"account", store.MessageFilter{Account: "work"}},
			{"state", store.MessageFilter{State: store.StateNeedsReview}},
			{"thread", store.MessageFilter{ThreadID: "t1"}},
			{"limit", store.MessageFilter{Limit: 2}},
			{"since", store.MessageFilter{Since: testNow.Add(-90 * time.Minute)}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var got, want []*store.MessageRecord
				if err := rs.ListMessages(tt.f, func(r *store.MessageRecord) error { got = append(got, r); return nil }); err != nil {
					t.Fatal(err)
				}
				if err := st.ListMessages(tt.f, func(r *store.MessageRecord) error { want = append(want, r); return nil }); err != nil {
					t.Fatal(err)
				}
				if len(want) == 0 {
					t.Fatal("the seed has no match: the case tests nothing")
				}
				sameJSON(t, "records", got, want)
			})
		}
		t.Run("callback error stops the walk", func(t *testing.T) {
			stop := errors.New("enough")
			n := 0
			err := rs.ListMessages(store.MessageFilter{}, func(*store.MessageRecord) error {
				n++
				return stop
			})
			if !errors.Is(err, stop) || n != 1 {
				t.Errorf("got %v after %d calls, want %v after 1", err, n, stop)
			}
		})
		t.Run("callback may use the store", func(t *testing.T) {
			n := 0
			err := rs.ListMessages(store.MessageFilter{ThreadID: "t1"}, func(r *store.MessageRecord) error {
				_, err := rs.GetMessage(r.MessageKey)
				n++
				return err
			})
			if err != nil || n != 2 {
				t.Errorf("got %v after %d calls, want nil after 2", err, n)
			}
		})
	})
}

func TestNoActions(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			st := openStore(t)
			seed(t, st)
			svc := m.newSvc(t, st)
			ctx := context.Background()
			calls := []struct {
				name string
				call func() error
			}{
				{"approve", func() error { _, err := svc.Approve(ctx, "q_d", ""); return err }},
				{"reject", func() error { return svc.Reject(ctx, "q_d", "") }},
				{"edit", func() error { _, err := svc.Edit(ctx, "q_d", ""); return err }},
				{"snooze", func() error { return svc.Snooze(ctx, "q_d", testNow) }},
				{"regenerate", func() error { _, err := svc.Regenerate(ctx, "q_d", ""); return err }},
				{"cancel", func() error { return svc.Cancel(ctx, "ob_sched") }},
				{"retry", func() error { return svc.Retry(ctx, keyM3) }},
			}
			for _, c := range calls {
				t.Run(c.name, func(t *testing.T) {
					err := c.call()
					wantErr(t, c.name, err, ErrNoActions)
					if err != nil && !strings.Contains(err.Error(), "mailagent watch") {
						t.Errorf("got %q, want a hint naming `mailagent watch`", err)
					}
				})
			}
			if q, _ := st.GetQueueItem("q_d"); q.Status != store.QueuePending {
				t.Errorf("q_d status: got %q, want it untouched (pending)", q.Status)
			}
		})
	}
}

func TestStatusFunc(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	seed(t, st)
	started := testNow.Add(-time.Hour)
	l := newLocal(st, nil)
	l.StatusFunc = func(context.Context) Status {
		return Status{Watcher: true, PID: 4242, Started: started, AutoSendCap: 25,
			Accounts: []AccountStatus{{Name: "home", State: "idle", LastSync: testNow}, {Name: "work", State: "reconnecting", Error: "dial: refused"}}}
	}
	srv := startServer(t, l)
	c := dial(t, srv.path)
	want, err := l.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "status", got, want)
	if !got.Watcher || got.PID != 4242 || !got.Started.Equal(started) || got.AutoSendCap != 25 || len(got.Accounts) != 2 {
		t.Errorf("got %+v, want the watcher's live state", got)
	}
}
