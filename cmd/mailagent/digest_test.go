package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/digest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

// digestWorld is a watcher that auto-sent one reply (Bob), queued one
// draft (Carol), archived a newsletter and has one message in review,
// with a hostile subject among them.
func digestWorld(t *testing.T, extra string) *harness {
	t.Helper()
	h := newHarness(t, compromisedModel, autoPolicy+extra)
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Bob <bob@example.org>\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <earlier@example.com>\n\nHi Bob\n")
	h.deliver(rawMail("Bob <bob@example.org>", "Call on Thursday", "Can we move our call to Thursday 3pm?"))
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch \x1b]8;;https://evil.example\x07click\x1b]8;;\x07", "Lunch next week?"))
	h.deliver(rawMail("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>"))
	h.watchOnce(t)
	return h
}

func TestDigestContentAndJSON(t *testing.T) {
	t.Parallel()
	h := digestWorld(t, "")
	out, stderr, code := h.run("digest", "--json")
	if code != 0 {
		t.Fatalf("digest --json: exit %d: %s", code, stderr)
	}
	var j DigestJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("digest --json: %v\n%s", err, out)
	}
	if len(j.AutoSent) != 1 || len(j.AutoSent[0].To) != 1 || j.AutoSent[0].To[0].Email != "bob@example.org" || !strings.Contains(j.AutoSent[0].Subject, "Call on Thursday") {
		t.Errorf("auto_sent: got %+v, want one reply to bob@example.org about the call", j.AutoSent)
	}
	if len(j.Waiting) != 1 || j.Waiting[0].From.Email != "carol@example.org" || !j.Waiting[0].New || j.Waiting[0].Kind != "draft" {
		t.Errorf("waiting: got %+v, want Carol's new draft", j.Waiting)
	}
	if j.Archived["automated"] != 1 || j.Processed != 3 {
		t.Errorf("archived/processed: got %v / %d, want automated 1 / 3", j.Archived, j.Processed)
	}
	if j.Cost.Calls == 0 || j.Cost.TokensIn == 0 || j.Cost.Model != "gemini-test" || j.Cost.EstimatedUSD != nil {
		t.Errorf("cost: got %+v, want today's calls and tokens, price unknown for gemini-test", j.Cost)
	}
	if j.NeedsReview == nil || j.Scheduled == nil || j.Ignored == nil {
		t.Errorf("lists and maps must be present, not null: %s", out)
	}

	text, stderr, code := h.run("digest")
	if code != 0 {
		t.Fatalf("digest: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Sent on its own (1)", "bob@example.org", "Call on Thursday", "Waiting for you (1, 1 new)", "carol@example.org", "archived: automated 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("digest text lacks %q:\n%s", want, text)
		}
	}
	if strings.ContainsAny(text, "\x1b\x07") {
		t.Errorf("digest text carries a terminal escape from a subject:\n%q", text)
	}
	// An empty period reports nothing done.
	out, _, code = h.run("digest", "--json", "--since", "2000-01-01")
	if code != 0 || !strings.Contains(out, `"auto_sent"`) {
		t.Fatalf("digest --since 2000-01-01: exit %d\n%s", code, out)
	}
}

func TestDigestBeforeAnyState(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	out, stderr, code := h.run("digest", "--json")
	if code != 0 {
		t.Fatalf("digest with no state: exit %d: %s", code, stderr)
	}
	var j DigestJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil || len(j.AutoSent) != 0 || j.Processed != 0 {
		t.Errorf("digest with no state: %v %s", err, out)
	}
}

func TestDigestFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--since", "soon"}, {"--json", "--send"}, {"x"}} {
		if _, _, code := runMain(t, append([]string{"digest"}, args...)...); code != ExitUsage {
			t.Errorf("digest %v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}

// digestMails returns the digests the SMTP sink received.
func digestMails(sink *smtptest.Sink) []smtptest.Received {
	var out []smtptest.Received
	for _, m := range sink.Messages() {
		if mail.Parse(m.Data).HeaderValue(digest.Header) != "" {
			out = append(out, m)
		}
	}
	return out
}

// TestDigestSendIsIgnoredByThePipeline mails the digest through the SMTP
// path, delivers it back to the inbox as the server would, and checks that
// watch routes it as mailagent's own: no model call, no queue item, no
// reply.
func TestDigestSendIsIgnoredByThePipeline(t *testing.T) {
	t.Parallel()
	h := digestWorld(t, "")
	sent0 := len(h.smtp.Messages())
	_, stderr, code := h.run("digest", "--send")
	if code != 0 {
		t.Fatalf("digest --send: exit %d: %s", code, stderr)
	}
	ds := digestMails(h.smtp)
	if len(ds) != 1 || len(h.smtp.Messages()) != sent0+1 {
		t.Fatalf("sink: got %d digests (%d mails, %d before), want 1", len(ds), len(h.smtp.Messages()), sent0)
	}
	d := ds[0]
	if len(d.To) != 1 || d.To[0] != ownerAddr {
		t.Errorf("digest went to %v, want the owner", d.To)
	}
	m := mail.Parse(d.Data)
	if !strings.HasPrefix(m.MessageID, digest.MessageIDPrefix) || m.HeaderValue("Auto-Submitted") != "auto-generated" {
		t.Errorf("digest headers: Message-ID %q, Auto-Submitted %q", m.MessageID, m.HeaderValue("Auto-Submitted"))
	}
	if !strings.Contains(m.Text, "Call on Thursday") || strings.ContainsAny(m.Text, "\x1b\x07") {
		t.Errorf("digest body: %q", m.Text)
	}

	// Delivered back to the inbox as the server would (already CRLF).
	if _, err := h.imap.Append(context.Background(), ownerAddr, "INBOX", d.Data, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := h.run("triage", "--dry-run", "--json")
	if code != 0 && code != ExitPartial {
		t.Fatalf("triage: exit %d: %s", code, stderr)
	}
	var found bool
	for _, l := range decodeLines(t, out) {
		if strings.HasPrefix(l.Subject, "mailagent digest") {
			found = true
			if l.Route != "self" || sv(l.Decision) != "ignore" {
				t.Errorf("digest triaged as route %s, decision %s; want self, ignore", l.Route, sv(l.Decision))
			}
		}
	}
	if !found {
		t.Fatalf("triage printed no line for the digest:\n%s", out)
	}
	calls := len(h.gemini.Requests())
	h.watchOnce(t)
	if got := len(h.gemini.Requests()) - calls; got != 0 {
		t.Errorf("the digest cost %d model calls, want 0", got)
	}
	if got := len(h.smtp.Messages()); got != sent0+1 {
		t.Errorf("after watch: %d mails sent, want %d (nothing answers the digest)", got, sent0+1)
	}
	qs, _, _ := h.run("queue", "list", "--json")
	if strings.Contains(qs, "mailagent digest") {
		t.Errorf("the digest was queued:\n%s", qs)
	}
}

// TestDigestScheduleOncePerPeriodAcrossRestarts runs watch three times
// (each a restart) with digest.schedule set: one digest, not three.
func TestDigestScheduleOncePerPeriodAcrossRestarts(t *testing.T) {
	t.Parallel()
	h := digestWorld(t, "\n[digest]\nschedule = \"daily 00:00\"\n")
	if n := len(digestMails(h.smtp)); n != 1 {
		t.Fatalf("after the first watch: %d digests, want 1", n)
	}
	h.watchOnce(t)
	h.watchOnce(t)
	if n := len(digestMails(h.smtp)); n != 1 {
		t.Errorf("after two restarts in the same period: %d digests, want 1", n)
	}
}

// TestDigestThroughOutbox: `digest --send` makes one outbox record of
// kind digest (sent, automatic), which the next digest does not count as
// an auto-reply; a digest.to that is an address literal is refused by the
// outbox's address rule with nothing sent (class "outbox-address").
func TestDigestThroughOutbox(t *testing.T) {
	t.Parallel()
	h := digestWorld(t, "")
	if _, stderr, code := h.run("digest", "--send"); code != 0 {
		t.Fatalf("digest --send: exit %d: %s", code, stderr)
	}
	st := h.openStore(t)
	var recs []*store.OutboxRecord
	if err := st.ListOutbox("", func(r *store.OutboxRecord) error {
		if r.Kind == store.OutboxKindDigest {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	if len(recs) != 1 || recs[0].Status != store.OutboxAppended || !recs[0].Auto || recs[0].To[0] != ownerAddr {
		t.Fatalf("digest outbox records: %+v, want one appended to the owner", recs)
	}
	out, _, code := h.run("digest", "--json")
	var j DigestJSON
	if code != 0 || json.Unmarshal([]byte(out), &j) != nil || len(j.AutoSent) != 1 {
		t.Errorf("the next digest lists %+v as auto-sent, want only the one reply", j.AutoSent)
	}

	bad := digestWorld(t, "\n[digest]\nto = \"me@[127.0.0.1]\"\n")
	sent := len(bad.smtp.Messages())
	_, stderr, code := bad.run("digest", "--send")
	if code == 0 || !strings.Contains(stderr, "not a public mail address") {
		t.Errorf("digest to an address literal: exit %d, %q; want refused", code, stderr)
	}
	if len(bad.smtp.Messages()) != sent {
		t.Errorf("a digest to an address literal reached the SMTP server")
	}
}
