package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-ical"

	"github.com/mailagent/mailagent/agent/invite"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/store"
)

// writableCalendar offers two free slots on Wednesday 1 April 2026
// (Europe/Berlin, 10:00–11:00 and 14:00–15:00), meetings of 45 minutes,
// and records every event PUT on it.
type writableCalendar struct {
	loc  *time.Location
	fail error // PutEvent's answer when set
	mu   sync.Mutex
	puts []put
}

type put struct {
	account, uid string
	data         []byte
}

func (c *writableCalendar) FreeSlots(context.Context, string, time.Time) ([]calendar.Interval, *time.Location, error) {
	d := func(h int) time.Time { return time.Date(2026, 4, 1, h, 0, 0, 0, c.loc) }
	return []calendar.Interval{{Start: d(10), End: d(11)}, {Start: d(14), End: d(15)}}, c.loc, nil
}

var _ invite.EventWriter = (*writableCalendar)(nil) // found by type assertion: keep the signature in step

func (c *writableCalendar) SlotLength(string) time.Duration { return 45 * time.Minute }

func (c *writableCalendar) PutEvent(_ context.Context, account, uid string, data []byte, etag string) (calendar.Stored, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return calendar.Stored{}, c.fail
	}
	c.puts = append(c.puts, put{account, uid, data})
	return calendar.Stored{Path: "/cal/" + calendar.ResourceName(uid), ETag: `"1"`}, nil
}

func (c *writableCalendar) got() []put {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]put(nil), c.puts...)
}

// schedulingPipeline is a pipeline on Monday 30 March 2026 08:00 UTC
// with the writable calendar, an undo window of 5 s, a model that
// classifies every mail as scheduling and drafts draft, and Bob known.
func schedulingPipeline(t *testing.T, mode, draft string) (*Pipeline, *store.Store, *memMailer, *writableCalendar, *time.Time) {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone data:", err)
	}
	model := &recordingModel{class: okClass(), draft: draft}
	model.class["intents"] = []string{IntentScheduling}
	p, st, mailer := newTestPipeline(t, model, mode)
	cal := &writableCalendar{loc: loc}
	p.Calendar = cal
	p.Policy.ApprovalDelay = 5 * time.Second
	now := time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)
	p.Now = func() time.Time { return now }
	if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
		t.Fatal(err)
	}
	return p, st, mailer, cal, &now
}

// approveAndSend queues Bob's mail, approves the draft and lets the undo
// window pass.
func approveAndSend(t *testing.T, p *Pipeline, now *time.Time, subject string) (*store.QueueItem, *store.MessageRecord) {
	t.Helper()
	ctx := context.Background()
	out, err := p.Process(ctx, input("Bob <bob@example.org>", subject, "Could we meet Wednesday?"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Record.Decision != DecisionQueue {
		t.Fatalf("decision %s %v, want queue", out.Record.Decision, out.Record.Reasons)
	}
	q, err := p.Approve(ctx, QueueID(out.Record.MessageKey), "")
	if err != nil {
		t.Fatal(err)
	}
	*now = now.Add(6 * time.Second)
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	return q, out.Record
}

func decodeEvent(t *testing.T, data []byte) *ical.Component {
	t.Helper()
	cal, err := ical.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		t.Fatalf("event does not parse: %v\n%s", err, data)
	}
	evs := cal.Events()
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	return evs[0].Component
}

// TestScheduleEventAfterApprovedSend: an approved reply naming one
// offered slot creates one tentative event, only once the undo window
// has passed and the reply is sent: the slot's start, slot_length long,
// the owner as ORGANIZER, Bob as the one ATTENDEE, the UID from the
// message key.
func TestScheduleEventAfterApprovedSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _, mailer, cal, now := schedulingPipeline(t, "review", "Wednesday at 10:00 works for me, see you then.")
	out, err := p.Process(ctx, input("Bob <bob@example.org>", "Meeting", "Could we meet Wednesday?"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Record.Offer == nil || len(out.Record.Offer.Slots) != 2 || out.Record.Offer.Attendee != "bob@example.org" {
		t.Fatalf("offer on the record: %+v", out.Record.Offer)
	}
	if _, err := p.Approve(ctx, QueueID(out.Record.MessageKey), ""); err != nil {
		t.Fatal(err)
	}
	if n := len(cal.got()); n != 0 {
		t.Fatalf("%d events PUT inside the undo window, want 0", n)
	}
	*now = now.Add(6 * time.Second)
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if sends(mailer) != 1 {
		t.Fatalf("sent %d, want 1", sends(mailer))
	}
	puts := cal.got()
	if len(puts) != 1 {
		t.Fatalf("%d events PUT, want 1", len(puts))
	}
	if puts[0].account != "a" || puts[0].uid != ScheduleEventUID(out.Record.MessageKey) {
		t.Errorf("PUT %s %s, want a %s", puts[0].account, puts[0].uid, ScheduleEventUID(out.Record.MessageKey))
	}
	ev := decodeEvent(t, puts[0].data)
	want := map[string]string{
		ical.PropStatus: "TENTATIVE", ical.PropSummary: "Meeting", ical.PropUID: puts[0].uid,
		ical.PropDateTimeStart: "20260401T080000Z", ical.PropDateTimeEnd: "20260401T084500Z",
		ical.PropOrganizer: "mailto:ada@example.com",
	}
	for k, v := range want {
		if got := ev.Props.Get(k); got == nil || got.Value != v {
			t.Errorf("%s = %v, want %s", k, got, v)
		}
	}
	atts := ev.Props.Values(ical.PropAttendee)
	if len(atts) != 1 || atts[0].Value != "mailto:bob@example.org" {
		t.Errorf("attendees %+v, want only mailto:bob@example.org", atts)
	}
}

// TestScheduleEventFailedWriteIsNoted: a calendar that refuses the
// event leaves the reply sent and says so on the approved item.
func TestScheduleEventFailedWriteIsNoted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, st, mailer, cal, now := schedulingPipeline(t, "review", "Wednesday at 10:00 works for me.")
	cal.fail = errors.New("403 forbidden")
	out, err := p.Process(ctx, input("Bob <bob@example.org>", "Meeting", "Could we meet Wednesday?"))
	if err != nil {
		t.Fatal(err)
	}
	id := QueueID(out.Record.MessageKey)
	if _, err := p.Approve(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(6 * time.Second)
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if sends(mailer) != 1 {
		t.Fatalf("sent %d, want 1", sends(mailer))
	}
	item, err := st.GetQueueItem(id)
	if err != nil {
		t.Fatal(err)
	}
	want := "calendar: the tentative event was not created: 403 forbidden"
	if item.Status != store.QueueSent || !slices.Contains(item.Reasons, want) {
		t.Errorf("item %s %v, want sent with %q", item.Status, item.Reasons, want)
	}
}

// TestScheduleEventCancelledInUndoWindow: cancelling within the undo
// window sends nothing and creates no event, even after the window.
func TestScheduleEventCancelledInUndoWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _, mailer, cal, now := schedulingPipeline(t, "review", "Wednesday at 10:00 works for me.")
	out, err := p.Process(ctx, input("Bob <bob@example.org>", "Meeting", "Could we meet Wednesday?"))
	if err != nil {
		t.Fatal(err)
	}
	id := QueueID(out.Record.MessageKey)
	if _, err := p.Approve(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(2 * time.Second)
	if err := p.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Minute)
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if sends(mailer) != 0 || len(cal.got()) != 0 {
		t.Errorf("after cancel: sent %d, events %d; want 0, 0", sends(mailer), len(cal.got()))
	}
}

// TestScheduleEventOnlyForOneOfferedSlot: a reply naming two slots, no
// time, a day without a time, or a time the calendar never offered (the
// owner approved it anyway) creates no event; the control creates one.
func TestScheduleEventOnlyForOneOfferedSlot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		draft string
		want  int
	}{
		{"Wednesday at 10:00 or 14:00, whichever suits you.", 0},
		{"Wednesday at 10:00 works. Or Wednesday at 14:00.", 0},
		{"Thanks, I will check my calendar and come back to you.", 0},
		{"Wednesday works for me.", 0},
		{"Wednesday at 16:00 works for me.", 0},     // not offered
		{"Wednesday at 10:30 is fine by me.", 0},    // 10:30 + 45 min runs past the slot
		{"Thursday at 10:00 works for me.", 0},      // another day
		{"Wednesday at 14:00 works for me.", 1},     // control
		{"Wednesday 1 April at 10:00, see you.", 1}, // day named twice, one slot
	} {
		t.Run(tc.draft, func(t *testing.T) {
			p, _, mailer, cal, now := schedulingPipeline(t, "review", tc.draft)
			approveAndSend(t, p, now, "Meeting")
			if sends(mailer) != 1 {
				t.Fatalf("sent %d, want 1", sends(mailer))
			}
			if n := len(cal.got()); n != tc.want {
				t.Errorf("%d events, want %d", n, tc.want)
			}
		})
	}
}

// hostileEventSubjects are subjects that try to write the tentative
// event's ATTENDEE, ORGANIZER or STATUS, or put terminal escapes and bidi
// overrides in its SUMMARY. lands says what each does when the SUMMARY is
// not cleaned (calendar.SwitchOffTextCleanForTest); "" when the iCalendar
// encoder alone keeps it harmless (it escapes ";" and "," in a TEXT value,
// and text on one line is one property whatever it says). No subject
// adds a property without the cleaning either: go-ical's encoder refuses
// a value with CR or LF (SetText writes LF as "\n"), so the cleaning is
// what keeps the event from being refused, and the terminal text out.
var hostileEventSubjects = []struct{ subject, lands string }{
	{"=?utf-8?q?Meeting=0D=0AATTENDEE:mailto:eve@evil.example=0D=0ASTATUS:CONFIRMED?=", "a CR in the SUMMARY: the encoder refuses the event, the approved meeting gets none"},
	{"=?utf-8?q?Re:_Meeting_=1B[31m=E2=80=AEred=0AORGANIZER:mailto:eve@evil.example?=", "an escape sequence and a bidi override in the SUMMARY"},
	{"Meeting; ATTENDEE:mailto:eve@evil.example, STATUS:CONFIRMED", ""},
}

// scheduleHostileSubjects approves and sends a reply confirming a slot to
// a mail with each hostile subject and returns, per subject, what is
// wrong with the event it made ("" when nothing is: an attack that did
// not get through).
func scheduleHostileSubjects(t *testing.T) []string {
	t.Helper()
	if _, err := time.LoadLocation("Europe/Berlin"); err != nil {
		t.Skip("no time zone data:", err) // here, not in a subtest: a skipped subject would read as a pass
	}
	out := make([]string, len(hostileEventSubjects))
	// The subjects run side by side, each on a pipeline of its own; the
	// group returns when all are done.
	t.Run("subjects", func(t *testing.T) {
		for i, h := range hostileEventSubjects {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				p, _, _, cal, now := schedulingPipeline(t, "review", "Wednesday at 10:00 works for me.")
				approveAndSend(t, p, now, h.subject)
				puts := cal.got()
				if len(puts) != 1 {
					out[i] = fmt.Sprintf("got %d events, want 1", len(puts))
					return
				}
				ev := decodeEvent(t, puts[0].data)
				sum := ev.Props.Get(ical.PropSummary).Value
				atts := ev.Props.Values(ical.PropAttendee)
				bad := strings.ContainsAny(sum, "\r\n\x1b\u202e") || len(atts) != 1 || atts[0].Value != "mailto:bob@example.org" ||
					ev.Props.Get(ical.PropOrganizer).Value != "mailto:ada@example.com" || ev.Props.Get(ical.PropStatus).Value != "TENTATIVE" ||
					strings.HasPrefix(sum, "Re:")
				if bad {
					out[i] = fmt.Sprintf("SUMMARY %q, attendees %+v\n%s", sum, atts, puts[0].data)
				}
			})
		}
	})
	return out
}

// TestScheduleEventHostileSubject: a subject carrying CR LF and iCalendar
// lines, terminal escapes and bidi overrides ends up as one clean SUMMARY;
// no second ATTENDEE, ORGANIZER or STATUS gets into the event. Positive
// control: TestScheduleEventHostileSubjectLandsWithoutClean.
func TestScheduleEventHostileSubject(t *testing.T) {
	t.Parallel()
	got := scheduleHostileSubjects(t)
	tried, through := 0, 0
	for i, h := range hostileEventSubjects {
		tried++
		if got[i] != "" {
			through++
			t.Errorf("%q: %s", h.subject, got[i])
		}
	}
	t.Logf("hostile subjects: %d tried, %d through", tried, through)
	if through != 0 {
		t.Fatalf("%d of %d hostile subjects got through, want 0", through, tried)
	}
}

// TestScheduleEventHostileSubjectLandsWithoutClean is the positive
// control of TestScheduleEventHostileSubject: the same subjects through
// the same approval, send and event with the cleaning of calendar text
// off (calendar.SwitchOffTextCleanForTest). The subjects the table says
// land must; the other must still pass (the encoder's escaping, not the
// cleaning, keeps it harmless). Not parallel: it sets a package switch
// of internal/calendar.
func TestScheduleEventHostileSubjectLandsWithoutClean(t *testing.T) {
	restore := calendar.SwitchOffTextCleanForTest()
	defer restore()
	got := scheduleHostileSubjects(t)
	tried, landed, want := 0, 0, 0
	for i, h := range hostileEventSubjects {
		tried++
		if h.lands != "" {
			want++
		}
		switch {
		case got[i] != "" && h.lands != "":
			landed++
			t.Logf("%q landed (%s): %.120q", h.subject, h.lands, got[i])
		case got[i] != "":
			landed++
			t.Errorf("%q landed with the cleaning off, though the table says the encoder stops it: %s", h.subject, got[i])
		case h.lands != "":
			t.Errorf("%q did not land with the cleaning off, want: %s", h.subject, h.lands)
		}
	}
	t.Logf("hostile subjects, cleaning off: %d tried, %d landed (want %d)", tried, landed, want)
	if landed != want {
		t.Fatalf("positive control: got %d of %d landed with the cleaning off, want %d", landed, tried, want)
	}
}

// TestScheduleEventNeverWithoutApprovalOrPolicy: with policy.auto_schedule
// off a scheduling reply in mode auto waits in the queue and no event is
// made; with it on the reply is sent and the event made; a sent outbox
// record that was neither approved nor allowed by the policy makes none.
func TestScheduleEventNeverWithoutApprovalOrPolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, _, mailer, cal, _ := schedulingPipeline(t, "auto", "Wednesday at 10:00 works for me.")
	p.Policy.SendDelay = 0
	out, err := p.Process(ctx, input("Bob <bob@example.org>", "Meeting", "Could we meet Wednesday?"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Record.Decision != DecisionQueue || sends(mailer) != 0 || len(cal.got()) != 0 {
		t.Fatalf("auto_schedule off: %s, sent %d, events %d; want queue, 0, 0", out.Record.Decision, sends(mailer), len(cal.got()))
	}

	p.Policy.AutoSchedule = true
	out, err = p.Process(ctx, input("Bob <bob@example.org>", "Meeting 2", "Could we meet Wednesday?"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Record.Decision != DecisionAutoSend || sends(mailer) != 1 || len(cal.got()) != 1 {
		t.Fatalf("auto_schedule on: %s %v, sent %d, events %d; want auto_send, 1, 1", out.Record.Decision, out.Record.Reasons, sends(mailer), len(cal.got()))
	}
	ob, err := p.Actor.Store.GetOutbox(OutboxID(out.Record.MessageKey))
	if err != nil {
		t.Fatal(err)
	}
	// The same record, had the policy been off when it went out.
	p.Policy.AutoSchedule = false
	p.scheduleSent(ob)
	// A record with no approval behind it (not the item's approval record).
	manual := *ob
	manual.Auto, manual.ID, manual.QueueID = false, "ob_other", "q_x"
	p.scheduleSent(&manual)
	// Sent to someone other than the correspondent.
	p.Policy.AutoSchedule = true
	other := *ob
	other.To = []string{"eve@evil.example"}
	p.scheduleSent(&other)
	if n := len(cal.got()); n != 1 {
		t.Errorf("%d events, want still 1", n)
	}
}

// TestScheduleEventCreateConflictQueued: the tentative event is only
// created (If-None-Match: *); when the calendar already holds one under
// its UID (HTTP 412), nothing is overwritten, the approved item says so
// and a notice waits in the queue.
func TestScheduleEventCreateConflictQueued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, st, mailer, cal, now := schedulingPipeline(t, "review", "Wednesday at 10:00 works for me.")
	cal.fail = fmt.Errorf("calendar: PUT /cal/x.ics: %w", calendar.ErrPrecondition)
	out, err := p.Process(ctx, input("Bob <bob@example.org>", "Meeting", "Could we meet Wednesday?"))
	if err != nil {
		t.Fatal(err)
	}
	id := QueueID(out.Record.MessageKey)
	if _, err := p.Approve(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(6 * time.Second)
	if err := p.SendDue(ctx); err != nil {
		t.Fatal(err)
	}
	if sends(mailer) != 1 {
		t.Fatalf("sent %d, want 1", sends(mailer))
	}
	item, err := st.GetQueueItem(id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(item.Reasons, func(r string) bool { return strings.Contains(r, "changed by another client") }) {
		t.Errorf("item reasons %v", item.Reasons)
	}
	n, err := st.GetQueueItem(id + "_calendar")
	if err != nil || n.Status != store.QueuePending || n.Kind != store.KindNotify {
		t.Fatalf("notice: %+v, %v", n, err)
	}
}
