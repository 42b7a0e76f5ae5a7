package apitest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// waitLimit bounds every wait so that a bug fails instead of hanging.
const waitLimit = 15 * time.Second

// run is one case against one World.
type run struct {
	t    *testing.T
	ctx  context.Context
	svc  api.Service
	w    *World
	tr   *Transcript
	name string
}

// Suite runs every case against a World from newService, and returns
// what it observed. Run it once per way of reaching a Service and Compare
// the transcripts: they must be identical. A case that writes gets a
// fresh World; the cases of readOnly share one, built before the first of
// them, and each is checked to leave it as it found it (fingerprint).
func Suite(t *testing.T, newService func(t *testing.T) (api.Service, *World)) *Transcript {
	tr := &Transcript{}
	var shared api.Service
	var sharedWorld *World
	for _, c := range cases {
		if readOnly[c.name] && shared == nil {
			shared, sharedWorld = newService(t)
		}
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if !readOnly[c.name] {
				svc, w := newService(t)
				c.f(&run{t: t, ctx: ctx, svc: svc, w: w, tr: tr, name: c.name})
				return
			}
			before := fingerprint(t, sharedWorld)
			c.f(&run{t: t, ctx: ctx, svc: shared, w: sharedWorld, tr: tr, name: c.name})
			if after := fingerprint(t, sharedWorld); after != before {
				t.Errorf("case %q shares its World but changed it (%s, then %s): take it out of readOnly", c.name, before, after)
			}
		})
	}
	for name := range readOnly {
		if !slices.ContainsFunc(cases, func(c suiteCase) bool { return c.name == name }) {
			t.Errorf("readOnly names %q, which is no case", name)
		}
	}
	return tr
}

// readOnly are the cases that only read: they share one World per Suite
// (a World is most of a case's cost). Suite checks that each leaves the
// World's database and SMTP sink as it found them.
var readOnly = map[string]bool{
	"status": true, "queue list": true, "queue item": true, "outbox": true, "explain": true, "decided without asking": true,
}

// fingerprint is what a read-only case must leave unchanged: the
// database file's hash (bbolt rewrites a meta page on every commit, so
// any write changes it; a NoSync store's writes are in the file all the
// same) and the SMTP sink's count.
func fingerprint(t *testing.T, w *World) string {
	t.Helper()
	raw, err := os.ReadFile(w.Store.Path())
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return fmt.Sprintf("db %x, smtp %d", sha256.Sum256(raw), len(w.SMTP.Messages()))
}

// suiteCase is one conformance case.
type suiteCase struct {
	name string
	f    func(r *run)
}

// cases are the conformance cases, in order.
var cases = []suiteCase{
	{"status", caseStatus},
	{"queue list", caseQueueList},
	{"queue item", caseQueueItem},
	{"outbox", caseOutbox},
	{"needs review and retry", caseRetry},
	{"contacts", caseContacts},
	{"memory", caseMemory},
	{"explain", caseExplain},
	{"events", caseEvents},
	{"store forwarding", caseStore},
	{"approve", caseApprove},
	{"approve with final text", caseApproveFinal},
	{"approve what is not a draft", caseApproveNotDraft},
	{"concurrent approvals send once", caseConcurrentApprove},
	{"approve when the Sent copy fails", caseSentCopyFails},
	{"approve when Sent is unreadable", caseSentUnreadable},
	{"approve with a temporary SMTP failure", caseSMTPTemporary},
	{"approve with a permanent SMTP failure", caseSMTPPermanent},
	{"reject", caseReject},
	{"edit", caseEdit},
	{"snooze", caseSnooze},
	{"unsnooze", caseUnsnooze},
	{"detail of every kind of item", caseDetail},
	{"decided without asking", caseDecided},
	{"regenerate", caseRegenerate},
	{"cancel", caseCancel},
	{"cancel too late", caseCancelTooLate},
	{"hostile ids and text", caseHostile},
	{"followups", caseFollowups},
	{"schedule", caseSchedule},
}

// check records err and fails unless it matches want (nil: no error).
func (r *run) check(step string, err, want error) {
	r.t.Helper()
	e := Entry{Case: r.name, Step: Normalize(step), Kinds: Kinds(err)}
	if err != nil {
		e.Message, e.Temporary = Normalize(err.Error()), isTemporary(err)
	}
	r.tr.Entries = append(r.tr.Entries, e)
	switch {
	case want == nil && err != nil:
		r.t.Errorf("%s: got error %v, want none", step, err)
	case want != nil && !errors.Is(err, want):
		r.t.Errorf("%s: got error %v (%s), want one matching %v", step, err, Kinds(err), want)
	}
}

// fails records err and fails unless it is an error (of no particular
// kind: its kinds and message are compared between runs).
func (r *run) fails(step string, err error) {
	r.t.Helper()
	e := Entry{Case: r.name, Step: Normalize(step), Kinds: Kinds(err)}
	if err != nil {
		e.Message, e.Temporary = Normalize(err.Error()), isTemporary(err)
	}
	r.tr.Entries = append(r.tr.Entries, e)
	if err == nil {
		r.t.Errorf("%s: got nil, want an error", step)
	}
}

// state records a piece of state (it must be the same in every run).
func (r *run) state(step, s string) {
	r.tr.Entries = append(r.tr.Entries, Entry{Case: r.name, Step: Normalize(step), State: Normalize(s)})
}

// item reads a queue item from the store (the truth), records and returns
// it.
func (r *run) item(step, id string) *store.QueueItem {
	r.t.Helper()
	q, err := r.w.Store.GetQueueItem(id)
	if err != nil {
		r.t.Fatalf("%s: item %s: %v", step, id, err)
	}
	r.state(step, ItemState(q))
	return q
}

// outbox reads an outbox record from the store, records and returns it.
func (r *run) outbox(step, id string) *store.OutboxRecord {
	r.t.Helper()
	ob, err := r.w.Store.GetOutbox(id)
	if err != nil {
		r.t.Fatalf("%s: outbox %s: %v", step, id, err)
	}
	r.state(step, fmt.Sprintf("outbox %s %s err=%q to=%v", ob.ID, ob.Status, ob.Error, ob.To))
	return ob
}

// ItemState is the part of an item every run must agree on.
func ItemState(q *store.QueueItem) string {
	if q == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s %s %s final=%q draft=%q err=%q reject=%q to=%v", q.ID, q.Kind, q.Status, q.Final, q.Draft, q.Error, q.RejectReason, addrs(q.To))
}

func addrs(as []mail.Address) []string {
	out := []string{}
	for _, a := range as {
		out = append(out, a.Email)
	}
	return out
}

// smtp records and returns how many messages the SMTP sink accepted.
func (r *run) smtp(step string, want int) {
	r.t.Helper()
	got := len(r.w.SMTP.Messages())
	r.state(step, fmt.Sprintf("smtp %d", got))
	if got != want {
		r.t.Errorf("%s: SMTP accepted %d messages, want %d", step, got, want)
	}
}

// sameJSON fails unless got and want encode the same.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

func caseStatus(r *run) {
	s, err := r.svc.Status(r.ctx)
	r.check("status", err, nil)
	want, _ := r.w.Store.CountByState()
	sameJSON(r.t, "counts", s.Counts, want)
	if s.Counts[store.StateDone] != 4 || s.Counts[store.StateNeedsReview] != 1 {
		r.t.Errorf("counts: got %v, want 4 done and 1 needs_review", s.Counts)
	}
	if !s.Watcher || s.PID == 0 || len(s.Accounts) != 1 || s.Accounts[0].Name != Account || s.Accounts[0].LastSync.IsZero() {
		r.t.Errorf("watcher: got %+v, want the daemon's live state with one synced account", s)
	}
	if s.AutoSentToday != 1 || s.AutoSendCap != 20 {
		r.t.Errorf("auto-send: got %d of %d, want 1 (Bob's, counted when scheduled) of 20", s.AutoSentToday, s.AutoSendCap)
	}
	if s.TokensToday.Calls == 0 || s.TokensToday.TokensIn == 0 {
		r.t.Errorf("tokens today: got %+v, want the model calls of the first sync", s.TokensToday)
	}
	r.state("status", fmt.Sprintf("counts=%v auto=%d/%d accounts=%d", s.Counts, s.AutoSentToday, s.AutoSendCap, len(s.Accounts)))
}

func queueIDs(items []store.QueueItem) []string {
	out := []string{}
	for _, q := range items {
		out = append(out, q.ID)
	}
	return out
}

func caseQueueList(r *run) {
	w := r.w
	tests := []struct {
		name string
		f    api.QueueFilter
		want []string
	}{
		{"all, newest first", api.QueueFilter{}, []string{w.Draft2, w.Notify, w.Draft}},
		{"kind", api.QueueFilter{Kind: store.KindNotify}, []string{w.Notify}},
		{"status", api.QueueFilter{Status: store.QueuePending, Kind: store.KindDraft}, []string{w.Draft2, w.Draft}},
		{"account", api.QueueFilter{Account: Account}, []string{w.Draft2, w.Notify, w.Draft}},
		{"no match", api.QueueFilter{Account: "nosuch"}, []string{}},
	}
	for _, tt := range tests {
		got, err := r.svc.Queue(r.ctx, tt.f)
		r.check("queue "+tt.name, err, nil)
		if g := queueIDs(got); !slices.Equal(g, tt.want) {
			r.t.Errorf("queue %s: got %v, want %v", tt.name, g, tt.want)
		}
		for _, q := range got {
			want, _ := w.Store.GetQueueItem(q.ID)
			sameJSON(r.t, "item "+q.ID, q, want)
			r.state("queue "+tt.name, ItemState(&q))
		}
	}
}

func caseQueueItem(r *run) {
	w := r.w
	d, err := r.svc.QueueItem(r.ctx, w.Draft)
	r.check("queue item", err, nil)
	if d != nil {
		want, _ := w.Store.GetQueueItem(w.Draft)
		sameJSON(r.t, "item", d.Item, want)
		if len(d.Thread) != 1 || d.Thread[0].MessageKey != w.UIDs["carol"] || d.Outbox != nil {
			r.t.Errorf("detail: got %d thread messages, outbox %v; want Carol's message and no outbox", len(d.Thread), d.Outbox)
		}
		if d.Item.DraftMessageID == "" || d.Item.IMAPDraftUID == 0 {
			r.t.Errorf("draft: got Message-ID %q, Drafts UID %d; want both set (the Drafts copy was saved)", d.Item.DraftMessageID, d.Item.IMAPDraftUID)
		}
		r.state("queue item", ItemState(&d.Item))
	}
	_, err = r.svc.QueueItem(r.ctx, "q_nosuch")
	r.check("unknown id", err, store.ErrNotFound)
	_, err = r.svc.QueueItem(r.ctx, "a/b?c#d %")
	r.check("id that needs escaping", err, store.ErrNotFound)
}

func caseOutbox(r *run) {
	w := r.w
	for _, tt := range []struct {
		status string
		want   []string
	}{{"", []string{w.Scheduled}}, {store.OutboxScheduled, []string{w.Scheduled}}, {store.OutboxSent, []string{}}} {
		got, err := r.svc.Outbox(r.ctx, tt.status)
		r.check("outbox "+tt.status, err, nil)
		ids := []string{}
		for _, ob := range got {
			ids = append(ids, ob.ID)
			if ob.Raw != nil {
				r.t.Errorf("outbox %s: raw not stripped", ob.ID)
			}
			want, _ := w.Store.GetOutbox(ob.ID)
			want.Raw = nil
			sameJSON(r.t, "outbox "+ob.ID, ob, want)
		}
		if !slices.Equal(ids, tt.want) {
			r.t.Errorf("outbox %q: got %v, want %v", tt.status, ids, tt.want)
		}
		r.state("outbox "+tt.status, fmt.Sprint(len(ids)))
	}
	// Bob's scheduled reply goes to him alone, the authenticated sender.
	ob := r.outbox("scheduled", w.Scheduled)
	if !ob.Auto || !slices.Equal(ob.To, []string{Bob}) || ob.SendAt.IsZero() {
		r.t.Errorf("scheduled: got %+v, want an auto-send to %s with a send time", ob, Bob)
	}
}

func caseRetry(r *run) {
	w := r.w
	recs, err := r.svc.NeedsReview(r.ctx)
	r.check("needs review", err, nil)
	if len(recs) != 1 || recs[0].MessageKey != w.Flaky || !strings.Contains(recs[0].Error, "model is down") {
		r.t.Fatalf("needs review: got %d records (%+v), want Frank's with the model's error", len(recs), recs)
	}
	want, _ := w.Store.GetMessage(w.Flaky)
	sameJSON(r.t, "record", recs[0], want)

	// The model fails again: the message stays needs_review, not lost.
	w.ModelDown.Store(true)
	r.check("retry while the model is down", r.svc.Retry(r.ctx, w.Flaky), nil)
	rec, _ := w.Store.GetMessage(w.Flaky)
	r.state("after a failed retry", string(rec.State))
	if rec.State != store.StateNeedsReview || rec.Attempts < 2 {
		r.t.Errorf("after a failed retry: got %s after %d attempts, want needs_review after 2", rec.State, rec.Attempts)
	}
	w.ModelDown.Store(false)
	r.check("retry", r.svc.Retry(r.ctx, w.Flaky), nil)
	rec, _ = w.Store.GetMessage(w.Flaky)
	r.state("after retry", string(rec.State)+" "+rec.Decision)
	if rec.State != store.StateDone || rec.Decision != agent.DecisionQueue {
		r.t.Errorf("after retry: got %s/%s, want done/queue", rec.State, rec.Decision)
	}
	r.item("queued by the retry", agent.QueueID(w.Flaky))
	recs, err = r.svc.NeedsReview(r.ctx)
	r.check("needs review after retry", err, nil)
	if len(recs) != 0 {
		r.t.Errorf("needs review after retry: got %d, want 0", len(recs))
	}
	unknown := w.Flaky
	unknown.UID = 999
	r.check("retry an unknown message", r.svc.Retry(r.ctx, unknown), store.ErrNotFound)
}

func caseContacts(r *run) {
	w := r.w
	got, err := r.svc.Contacts(r.ctx, Account)
	r.check("contacts", err, nil)
	var want []store.Contact
	_ = w.Store.ListContacts(Account, func(c *store.Contact) error { want = append(want, *c); return nil })
	sameJSON(r.t, "contacts", got, want)
	emails := []string{}
	for _, c := range got {
		emails = append(emails, fmt.Sprintf("%s known=%v", c.Email, c.Known))
	}
	r.state("contacts", strings.Join(emails, ", "))
	if len(got) < 4 {
		r.t.Errorf("contacts: got %v, want Bob (known) and the authenticated senders", emails)
	}
	c, err := r.svc.Contact(r.ctx, Account, "BOB@Example.net")
	r.check("contact", err, nil)
	if c == nil || !c.Known || c.Email != Bob {
		r.t.Errorf("contact: got %+v, want %s known", c, Bob)
	}
	_, err = r.svc.Contact(r.ctx, Account, "nobody@example.org")
	r.check("unknown contact", err, store.ErrNotFound)
	rs, err := r.svc.RecipientStatus(r.ctx, Account, []string{"Bob@Example.net", Carol, "nobody@example.org"})
	r.check("recipient status", err, nil)
	if !rs["Bob@Example.net"] || rs[Carol] || rs["nobody@example.org"] || len(rs) != 3 {
		r.t.Errorf("recipient status: got %v, want only Bob known", rs)
	}
	r.check("note", r.svc.NoteContact(r.ctx, Account, Carol, "  prefers mornings  "), nil)
	// A note is a manual fact record about the contact, so it can be
	// forgotten on its own; forgetting the contact takes it too.
	if recs, _ := w.Store.ListMemory(store.MemoryFilter{Account: Account, Contact: Carol}); len(recs) != 1 ||
		recs[0].Text != "prefers mornings" || recs[0].Kind != store.MemoryFact || recs[0].Source != store.SourceManual {
		r.t.Errorf("note: got %+v, want one trimmed manual fact about carol", recs)
	}
	r.check("empty note", r.svc.NoteContact(r.ctx, Account, Carol, " \n "), api.ErrBadRequest)
	r.check("forget", r.svc.ForgetContact(r.ctx, Account, Carol), nil)
	if _, err := w.Store.GetContact(Account, Carol); !errors.Is(err, store.ErrNotFound) {
		r.t.Errorf("after forget: got %v, want not found", err)
	}
	if recs, _ := w.Store.ListMemory(store.MemoryFilter{Account: Account, Contact: Carol}); len(recs) != 0 {
		r.t.Errorf("after forget: %d records about carol are left", len(recs))
	}
	r.check("forget again", r.svc.ForgetContact(r.ctx, Account, Carol), store.ErrNotFound)
}

func caseExplain(r *run) {
	w := r.w
	rec, err := w.Store.GetMessage(w.UIDs["carol"])
	if err != nil {
		r.t.Fatal(err)
	}
	for _, ref := range []string{rec.TraceID, "<carol-1@example.org>", "CAROL-1@example.org"} {
		e, err := r.svc.Explain(r.ctx, ref)
		r.check("explain "+ref, err, nil)
		if e == nil || e.Trace == nil || e.Trace.TraceID != rec.TraceID || e.Message == nil || e.Message.MessageKey != rec.MessageKey {
			r.t.Errorf("explain %s: got %+v, want Carol's trace and record", ref, e)
			continue
		}
		want, _ := w.Store.GetTrace(rec.TraceID)
		sameJSON(r.t, "trace", e.Trace, want)
		r.state("explain "+ref, e.Trace.Decision+" "+fmt.Sprint(len(e.Trace.Gates))+" gates")
	}
	_, err = r.svc.Explain(r.ctx, "nosuch@example.org")
	r.check("explain unknown", err, store.ErrNotFound)
}

func caseEvents(r *run) {
	w := r.w
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	ch, err := r.svc.Events(ctx)
	r.check("subscribe", err, nil)
	if ch == nil {
		r.t.Fatal("events: nil channel from a watcher with a broker")
	}
	r.check("reject", r.svc.Reject(r.ctx, w.Draft, ""), nil)
	_, err = r.svc.Approve(r.ctx, w.Draft2, "")
	r.check("approve", err, nil)
	want := map[string]bool{"queue_updated " + w.Draft: false, "sent " + agent.ApprovalOutboxID(w.Draft2): false}
	deadline := time.After(waitLimit)
	for missing := len(want); missing > 0; {
		select {
		case e, ok := <-ch:
			if !ok {
				r.t.Fatal("events: the stream closed early")
			}
			if seen, ok := want[e.Kind+" "+e.ID]; ok && !seen {
				want[e.Kind+" "+e.ID] = true
				missing--
			}
		case <-deadline:
			r.t.Fatalf("events: got %v, want all of them", want)
		}
	}
	r.state("events", "queue_updated and sent seen")
	cancel()
	for range ch { // the stream closes when ctx ends
	}
}

func caseStore(r *run) {
	w := r.w
	rs := r.svc.Store()
	key := w.UIDs["carol"]
	got, err := rs.GetMessage(key)
	r.check("get message", err, nil)
	want, _ := w.Store.GetMessage(key)
	sameJSON(r.t, "record", got, want)
	_, err = rs.GetMessage(store.MessageKey{Account: Account, Mailbox: "INBOX", UIDValidity: key.UIDValidity, UID: 999})
	r.check("get unknown message", err, store.ErrNotFound)
	n, g, err := rs.AutoSendCounts(Account, Bob, store.Day(time.Now()))
	r.check("auto-send counts", err, nil)
	if n != 1 || g != 1 {
		r.t.Errorf("auto-send counts: got %d, %d, want 1, 1", n, g)
	}
	var states []string
	r.check("list needs review", rs.ListMessages(store.MessageFilter{State: store.StateNeedsReview}, func(m *store.MessageRecord) error {
		states = append(states, m.From.Email)
		return nil
	}), nil)
	if !slices.Equal(states, []string{Frank}) {
		r.t.Errorf("list needs review: got %v, want [%s]", states, Frank)
	}
	// Triage runs the real pipeline over the forwarded store: its record
	// lands in the watcher's database.
	ps, _ := prompts.Load("")
	gem := w.Gemini.NewGemini(r.t, gemini.Config{})
	p := &agent.Pipeline{Store: rs, Classifier: &agent.LLMClassifier{Model: gem, Prompts: ps}, Threader: mail.NewThreader(),
		Policy: w.Pipeline.Policy, Accounts: w.Pipeline.Accounts}
	k := store.MessageKey{Account: Account, Mailbox: "INBOX", UIDValidity: key.UIDValidity, UID: 500}
	raw := bytes.Replace(Mail(Carol, "Re: Lunch on Tuesday?", "carol-2@example.org", "Or Wednesday?"),
		[]byte("\r\n\r\n"), []byte("\r\nIn-Reply-To: <carol-1@example.org>\r\n\r\n"), 1)
	out, err := p.Triage(r.ctx, agent.Input{Key: k, Raw: raw}, false)
	r.check("triage through the store", err, nil)
	stored, err := w.Store.GetMessage(k)
	if err != nil || out == nil || stored.State != store.StateDone || !stored.TriageOnly || stored.ThreadID == "" {
		r.t.Fatalf("triaged record: got %+v, %v; want it done, triage-only and threaded", stored, err)
	}
	r.state("triaged", string(stored.State)+" "+stored.Decision)
	thread, err := rs.ThreadMessages(stored.ThreadID, 0)
	r.check("thread", err, nil)
	if len(thread) != 2 {
		r.t.Errorf("thread: got %d messages, want Carol's two", len(thread))
	}
}
