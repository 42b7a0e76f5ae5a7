package mcpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

var benchNow = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// benchStore holds n messages, two accounts, one stored a minute apart
// (about 70 days for 100,000), 13 correspondents, five decisions, each
// with a ~300-byte excerpt, written through store.Batch (one commit per
// 2,000).
func benchStore(b *testing.B, n int) *store.Store {
	b.Helper()
	st, err := store.Open(filepath.Join(b.TempDir(), "state.db"), store.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	batch := store.NewBatch(st, 2000)
	for i := range n {
		at := benchNow.Add(-time.Duration(n-i) * time.Minute)
		r := &store.MessageRecord{MessageKey: store.MessageKey{Account: []string{"personal", "work"}[i%2], Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
			MessageID: fmt.Sprintf("m%d@example.org", i), ThreadID: fmt.Sprint("t", i), Subject: fmt.Sprintf("Quarterly report %d", i),
			From: mail.Address{Name: "Someone", Email: fmt.Sprintf("person%d@example%d.org", i%13, i%3)}, To: []mail.Address{{Email: "owner@home.test"}},
			Date: at, State: store.StateDone, Decision: []string{"archive", "queue", "ignore", "notify", "auto_send"}[i%5],
			Classification: &store.Classification{Intents: []string{"fyi"}, Summary: "a summary of the message"},
			Excerpt:        strings.Repeat("excerpt ", 40), CreatedAt: at, TraceID: fmt.Sprint("tr", i)}
		if err := batch.PutOutcome(r, &store.Trace{TraceID: r.TraceID, Message: r.MessageKey}, "2026-03-01", 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := batch.Flush(); err != nil {
		b.Fatal(err)
	}
	return st
}

// oldSearchMail is search_mail as it was before the message index: every
// record streamed past (ListMessages), filtered, and the page kept.
func (s *server) oldSearchMail(ctx context.Context, in SearchIn) (MessagesOut, error) {
	out := MessagesOut{Messages: []Message{}}
	p, err := parsePage("search_mail", fingerprint(in.Account, in.Correspondent, in.Subject, in.Since, in.Until, in.Intent, in.Decision), in.Cursor, in.Limit)
	if err != nil {
		return out, err
	}
	corr := strings.ToLower(strings.TrimSpace(in.Correspondent))
	words := strings.Fields(strings.ToLower(in.Subject))
	match := func(r *store.MessageRecord) bool {
		if !s.allowed(r.Account) || (in.Decision != "" && r.Decision != in.Decision) {
			return false
		}
		subj := strings.ToLower(r.Subject)
		for _, w := range words {
			if !strings.Contains(subj, w) {
				return false
			}
		}
		if corr != "" {
			found := strings.Contains(strings.ToLower(r.SenderAuth.Identity()), corr)
			for _, a := range slices.Concat(r.To, r.Cc, r.ReplyTo) {
				found = found || strings.Contains(strings.ToLower(a.Email), corr)
			}
			if !found && !strings.Contains(strings.ToLower(r.From.Email), corr) {
				return false
			}
		}
		return true
	}
	keyOf := func(r **store.MessageRecord) key { return key{at: (*r).Date, id: (*r).MessageKey.String()} }
	err = s.with(ctx, func(svc api.Service) error {
		top := streamPage(p, keyOf, true)
		err := svc.Store().ListMessages(store.MessageFilter{Account: in.Account}, func(r *store.MessageRecord) error {
			if match(r) {
				top.add(r)
			}
			return nil
		})
		out.Messages, out.NextCursor = finishPage(top, p, func(r **store.MessageRecord) Message { return message(*r, maxSnippet) })
		return err
	})
	return out, err
}

// oldDecisions is decisions as it was before the message index.
func (s *server) oldDecisions(ctx context.Context, in DecisionsIn) (MessagesOut, error) {
	out := MessagesOut{Messages: []Message{}}
	p, err := parsePage("decisions", fingerprint(in.Account, in.Since), in.Cursor, in.Limit)
	if err != nil {
		return out, err
	}
	since := s.o.Now().Add(-7 * 24 * time.Hour)
	err = s.with(ctx, func(svc api.Service) error {
		keyOf := func(r *store.MessageRecord) key { return key{at: r.UpdatedAt, id: r.MessageKey.String()} }
		top := streamPage(p, keyOf, true)
		err := api.EachDecidedWithoutAsking(ctx, svc, since, func(r *store.MessageRecord) error {
			if s.allowed(r.Account) {
				top.add(*r)
			}
			return nil
		})
		out.Messages, out.NextCursor = finishPage(top, p, func(r *store.MessageRecord) Message { return message(r, maxSnippet) })
		return err
	})
	return out, err
}

// BenchmarkMessageListings times the first page (20 messages) of
// search_mail (a correspondent, 1 message in 13) and of decisions (the
// default last 7 days), the tools' own functions over the store, through
// the message index and through the full read they replaced, over
// growing stores; and one search_mail call that matches nothing (its
// whole scan budget examined).
func BenchmarkMessageListings(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10000, 100000} {
		st := benchStore(b, n)
		svc := &api.Local{DB: st, Now: func() time.Time { return benchNow }}
		s := &server{o: Options{Open: func(context.Context) (api.Service, func() error, error) { return svc, func() error { return nil }, nil },
			Now: func() time.Time { return benchNow }, MaxScan: store.DefaultMessagePageScan}}
		search := SearchIn{Correspondent: "person4@"}
		check := func(out MessagesOut, err error) {
			if err != nil || len(out.Messages) != DefaultLimit {
				b.Fatalf("%v, %d messages", err, len(out.Messages))
			}
		}
		b.Run(fmt.Sprintf("n=%d/search_mail/index", n), func(b *testing.B) {
			for b.Loop() {
				_, out, err := s.searchMail(ctx, nil, search)
				check(out, err)
			}
		})
		b.Run(fmt.Sprintf("n=%d/search_mail/fullscan", n), func(b *testing.B) {
			for b.Loop() {
				check(s.oldSearchMail(ctx, search))
			}
		})
		b.Run(fmt.Sprintf("n=%d/search_mail-nomatch/index", n), func(b *testing.B) {
			// The worst case of one call: nothing matches, so the page
			// examines its whole scan budget (or the whole index when
			// smaller) and comes back empty (partial when cut).
			for b.Loop() {
				_, out, err := s.searchMail(ctx, nil, SearchIn{Correspondent: "nobody@"})
				if err != nil || len(out.Messages) != 0 || out.Partial != (n > store.DefaultMessagePageScan) {
					b.Fatalf("%v, %d messages, partial %v", err, len(out.Messages), out.Partial)
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/decisions/index", n), func(b *testing.B) {
			for b.Loop() {
				_, out, err := s.decisions(ctx, nil, DecisionsIn{})
				check(out, err)
			}
		})
		b.Run(fmt.Sprintf("n=%d/decisions/fullscan", n), func(b *testing.B) {
			for b.Loop() {
				check(s.oldDecisions(ctx, DecisionsIn{}))
			}
		})
	}
}
