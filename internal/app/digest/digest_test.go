package digest

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

func TestParseSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Schedule
		ok   bool
	}{
		{"daily 08:00", Schedule{8, 0}, true},
		{"Daily 23:59", Schedule{23, 59}, true},
		{"daily 24:00", Schedule{}, false},
		{"daily 8:5", Schedule{}, false},
		{"weekly 08:00", Schedule{}, false},
		{"daily", Schedule{}, false},
		{"", Schedule{}, false},
	} {
		got, err := ParseSchedule(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSchedule(%q): got %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestPeriodStart(t *testing.T) {
	t.Parallel()
	s := Schedule{8, 0}
	loc := time.UTC
	for _, tc := range []struct{ now, want string }{
		{"2026-11-23T09:00", "2026-11-23T08:00"},
		{"2026-11-23T08:00", "2026-11-23T08:00"},
		{"2026-11-23T07:59", "2026-11-22T08:00"},
		{"2026-03-01T00:00", "2026-02-28T08:00"},
	} {
		now, _ := time.ParseInLocation(periodFormat, tc.now, loc)
		if got := PeriodKey(s.PeriodStart(now)); got != tc.want {
			t.Errorf("PeriodStart(%s): got %s, want %s", tc.now, got, tc.want)
		}
	}
}

// TestSchedulerOncePerPeriodAcrossRestart uses the real store file: a
// restart (close and open) mid-period sends nothing; the next period
// sends again; a failed send is retried.
func TestSchedulerOncePerPeriodAcrossRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mailagent.db")
	now := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	var sent []string
	var fail error
	run := func() bool {
		t.Helper()
		st, err := store.Open(path, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = st.Close() }()
		s := &Scheduler{Schedule: Schedule{8, 0}, State: st, Now: func() time.Time { return now },
			Send: func(_ context.Context, since, until time.Time, period string) error {
				if fail != nil {
					return fail
				}
				if until.Sub(since) != 24*time.Hour {
					t.Errorf("period %s: [%s, %s) is not a day", period, since, until)
				}
				sent = append(sent, period)
				return nil
			}}
		ok, err := s.RunDue(context.Background())
		if err != nil && fail == nil {
			t.Fatal(err)
		}
		return ok
	}
	if !run() {
		t.Fatal("first start: no digest")
	}
	now = now.Add(3 * time.Hour) // restart mid-period
	if run() {
		t.Error("restart in the same period sent a second digest")
	}
	now = now.Add(22 * time.Hour) // next day 10:00
	fail = errors.New("smtp down")
	if run() {
		t.Error("a failed send reported as sent")
	}
	fail = nil
	if !run() {
		t.Error("the failed period was not retried")
	}
	if run() {
		t.Error("sent twice after the retry")
	}
	if want := []string{"2026-11-23T08:00", "2026-11-24T08:00"}; strings.Join(sent, ",") != strings.Join(want, ",") {
		t.Errorf("sent: got %v, want %v", sent, want)
	}
}

// TestDigestMailRoutesSelf: the pipeline's router sees the digest as
// mailagent's own mail, whatever the report says (hostile subjects
// included); a stranger's mail with only the digest header is not.
func TestDigestMailRoutesSelf(t *testing.T) {
	t.Parallel()
	r := &Report{Since: time.Now().Add(-24 * time.Hour), Until: time.Now(), Archived: map[string]int{}, Ignored: map[string]int{},
		AutoSent: []Sent{{To: []string{"bob@example.org\r\nBcc: evil@attacker.example"}, Subject: "x\r\nX-Mailagent-Trace: no\x1b[31m"}}}
	raw, id, err := Message(r, "ada@example.com", "ada@example.com", "2026-11-23T08:00", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	m := mail.Parse(raw)
	if m.MessageID != id || !strings.HasPrefix(id, MessageIDPrefix) || m.HeaderValue(Header) != "2026-11-23T08-00" {
		t.Errorf("Message-ID %q (returned %q), %s %q", m.MessageID, id, Header, m.HeaderValue(Header))
	}
	if len(m.Header["Bcc"]) != 0 || strings.Contains(m.Subject, "\n") || len(m.To) != 1 {
		t.Errorf("hostile text reached a header: %v", m.Header)
	}
	if strings.ContainsAny(m.Text, "\x1b") {
		t.Errorf("escape sequence in the body: %q", m.Text)
	}
	owner := agent.Owner{Addresses: []string{"ada@example.com"}}
	if got := agent.Route(m, owner, false, nil); got.Route != agent.RouteSelf {
		t.Errorf("digest routed %s (%s), want self", got.Route, got.Reason)
	}
	forged := mail.Parse([]byte("From: Mallory <m@evil.example>\r\nTo: ada@example.com\r\nSubject: hi\r\n" + Header + ": 1\r\nMessage-ID: <digest.1@evil.example>\r\n\r\nhello\r\n"))
	if got := agent.Route(forged, owner, false, nil); got.Route != agent.RouteExternal {
		t.Errorf("a stranger's mail with only %s routed %s, want external (the header alone proves nothing)", Header, got.Route)
	}
}

type fakeSource struct {
	msgs  []*store.MessageRecord
	queue []*store.QueueItem
	out   []*store.OutboxRecord
	usage []store.UsageDay
}

func (f fakeSource) ListMessages(flt store.MessageFilter, fn func(*store.MessageRecord) error) error {
	for _, m := range f.msgs {
		d := m.Date // as the store does, with the record's time for an undated message
		if d.IsZero() {
			d = m.UpdatedAt
		}
		if flt.State != "" && m.State != flt.State || !flt.Since.IsZero() && d.Before(flt.Since) {
			continue
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}
func (f fakeSource) ListQueue(status string, fn func(*store.QueueItem) error) error {
	for _, q := range f.queue {
		if q.Status == status {
			if err := fn(q); err != nil {
				return err
			}
		}
	}
	return nil
}
func (f fakeSource) ListOutbox(_ string, fn func(*store.OutboxRecord) error) error {
	for _, o := range f.out {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}
func (f fakeSource) UsageRange(string, string) ([]store.UsageDay, error) { return f.usage, nil }

func TestBuildCountsByHand(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	since := until.Add(-24 * time.Hour)
	in, old := until.Add(-time.Hour), since.Add(-time.Hour)
	cl := func(intent string) *store.Classification { return &store.Classification{Intents: []string{intent}} }
	src := fakeSource{
		msgs: []*store.MessageRecord{
			{Route: "automated", Decision: "archive", State: store.StateDone, UpdatedAt: in},
			{Route: "automated", Decision: "archive", State: store.StateDone, UpdatedAt: old}, // before the period
			{Route: "external", Decision: "ignore", Classification: cl("newsletter"), State: store.StateDone, UpdatedAt: in},
			{Route: "owner", Decision: "ignore", State: store.StateDone, UpdatedAt: in},
			{Route: "external", Decision: "auto_send", State: store.StateDone, UpdatedAt: in},
			{Route: "external", Decision: "needs_review", State: store.StateNeedsReview, UpdatedAt: old, Subject: "broken", Error: "model down"},
			// Dated (by its sender) long before the period, processed in it: counted.
			{Route: "automated", Decision: "archive", State: store.StateDone, UpdatedAt: in, Date: time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC)},
		},
		queue: []*store.QueueItem{
			{ID: "q1", Kind: "draft", Status: store.QueuePending, CreatedAt: in},
			{ID: "q2", Kind: "notify", Status: store.QueueSnoozed, CreatedAt: old},
			{ID: "q3", Kind: "draft", Status: store.QueueSent, CreatedAt: in},
		},
		out: []*store.OutboxRecord{
			{Auto: true, Status: store.OutboxAppended, SentAt: in, To: []string{"bob@example.org"}, Subject: "Re: call"},
			{Auto: true, Status: store.OutboxSent, SentAt: old, To: []string{"old@example.org"}},
			{Auto: false, Status: store.OutboxAppended, SentAt: in, To: []string{"approved@example.org"}},
			{Auto: true, Status: store.OutboxScheduled, SendAt: until.Add(time.Minute), To: []string{"later@example.org"}},
		},
		usage: []store.UsageDay{{Calls: 3, TokensIn: 1000, TokensOut: 100}, {Calls: 1, TokensIn: 1000000, TokensOut: 0}},
	}
	r, err := Build(src, since, until, "gemini-2.5-flash")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.AutoSent) != 1 || r.AutoSent[0].To[0] != "bob@example.org" || len(r.Scheduled) != 1 {
		t.Errorf("auto-sent %+v scheduled %+v: want bob's only, and one scheduled", r.AutoSent, r.Scheduled)
	}
	if len(r.Waiting) != 2 || !r.Waiting[1].New || r.Waiting[0].New {
		t.Errorf("waiting: got %+v, want q2 (old) then q1 (new)", r.Waiting)
	}
	if r.Archived["automated"] != 2 || r.Ignored["newsletter"] != 1 || r.Ignored["owner"] != 1 || r.Processed != 5 {
		t.Errorf("archived %v ignored %v processed %d", r.Archived, r.Ignored, r.Processed)
	}
	if len(r.NeedsReview) != 1 || r.NeedsReview[0].Error != "model down" {
		t.Errorf("needs review: %+v", r.NeedsReview)
	}
	// 1,001,000 in at $0.30/M + 100 out at $2.50/M.
	if r.Usage.Calls != 4 || !r.PriceKnown || r.USD < 0.30030-1e-6 || r.USD > 0.30030+1e-6+0.00025 {
		t.Errorf("usage %+v, price known %v, $%f", r.Usage, r.PriceKnown, r.USD)
	}
}

// followupSource is a fakeSource with reply tracking.
type followupSource struct {
	fakeSource
	fus []*store.Followup
}

func (f followupSource) ListFollowups(ff store.FollowupFilter, fn func(*store.Followup) error) error {
	for _, fu := range f.fus {
		if ff.Match(fu) {
			if err := fn(fu); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestBuildListsFollowupsDue: open threads past their deadline at the end
// of the period are listed, oldest deadline first; a deadline still ahead,
// a snooze past the period and a closed thread are not. Subjects are
// cleaned in the text.
func TestBuildListsFollowupsDue(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	since := until.Add(-24 * time.Hour)
	src := followupSource{fus: []*store.Followup{
		{ID: "fu_late", State: store.FollowupAwaitingReply, Correspondents: []string{"dan@example.org"}, Subject: "Invoice?", Deadline: until.Add(-72 * time.Hour), Nudges: 1},
		{ID: "fu_owe", State: store.FollowupNeedsReply, Correspondents: []string{"bob@example.org"}, Subject: "Budget \x1b[31mnow", Deadline: until.Add(-time.Hour)},
		{ID: "fu_ahead", State: store.FollowupNeedsReply, Correspondents: []string{"eve@example.org"}, Subject: "later", Deadline: until.Add(time.Hour)},
		{ID: "fu_snoozed", State: store.FollowupNeedsReply, Correspondents: []string{"fay@example.org"}, Subject: "snoozed", Deadline: since, SnoozeUntil: until.Add(time.Hour)},
		{ID: "fu_done", State: store.FollowupDone, Correspondents: []string{"gus@example.org"}, Subject: "done", Deadline: since},
	}}
	r, err := Build(src, since, until, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range r.FollowupsDue {
		got = append(got, d.ID)
	}
	if strings.Join(got, ",") != "fu_late,fu_owe" {
		t.Fatalf("followups due: got %v, want [fu_late fu_owe]", got)
	}
	var b strings.Builder
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"Follow-ups due (2)", "waiting for a reply from dan@example.org: Invoice?", "you owe a reply to bob@example.org"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Errorf("text carries an escape from a subject:\n%q", text)
	}
	// A source without reply tracking lists none and still builds.
	if r, err := Build(fakeSource{}, since, until, ""); err != nil || len(r.FollowupsDue) != 0 {
		t.Errorf("no tracking: got %v, %v", r.FollowupsDue, err)
	}
}
