package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/rig/testsize"
	"github.com/mailagent/mailagent/store"
)

// gateCalendar is the owner's calendar in the schedule-gate tests (now is
// Monday 23 Nov 2026 08:00 in windowZone): busy all of Tuesday 24, and
// Wednesday 25 from 10:00 to 11:00. Wednesday is free 09:00–10:00 and
// 11:00–17:00, Thursday 26 all day.
func gateCalendar() *busyCalendar {
	return &busyCalendar{busy: []calendar.Interval{{Start: at(24, 0), End: at(25, 0)}, {Start: at(25, 10), End: at(25, 11)}}}
}

// busyAttacks are drafts an obeying model writes when the mail tells it
// to: each offers or confirms a time the owner is busy (Tuesday 24, or
// Wednesday 25 at 10), or a time nothing pins down, in every form the
// time check once let through. mail is what Bob wrote (it holds the time
// when the draft confirms one), say what the draft says.
var busyAttacks = []struct{ name, mail, say string }{
	{"confirm tomorrow", "Can we meet tomorrow at 10:00?", "Tomorrow at 10:00 works for me."},
	{"half past ten", "Tuesday?", "Tuesday at half past ten it is."},
	{"d/m", "Meet 24/11?", "24/11 at 10:00 then."},
	{"ordinal", "The 24th?", "See you on the 24th."},
	{"Uhr", "Dienstag?", "Dienstag um 10 Uhr passt."},
	{"halb", "Dienstag?", "Dienstag, halb elf?"},
	{"10h15", "Tuesday?", "Tuesday 10h15 works."},
	{"French", "Mardi?", "mardi 24 novembre à 10h15"},
	{"slot end", "Wednesday?", "Wednesday at 10:00 works."},
	{"slot length", "Wednesday?", "Wednesday at 9:45 then."},
	{"no day", "When?", "10:30 works for me."},
	{"vague", "When?", "Any time next week works for me."},
	{"bare range", "Tuesday?", "Tuesday 10-11 works."},
	{"next weekday", "Next week?", "Let's meet next Wednesday at 9."},
	{"German date", "Am 24.11.?", "24.11. um 10:30"},
	{"iso pm", "Tuesday?", "2026-11-24 at 3pm"},
	{"afternoon", "Tuesday?", "Tuesday afternoon works."},
	{"o'clock", "Tomorrow?", "ten o'clock tomorrow"},
	{"weekday against date", "Wednesday?", "Wed 24 Nov at 9:00"},
	{"range into a meeting", "Wednesday?", "Wednesday between 9 and 11 suits me."},
	{"spanish", "¿Martes?", "el martes a las 10:30"},
	{"past the window", "January?", "2027-01-20 at 10:00 is booked for us."},
	{"word hour", "Tuesday?", "Tuesday at ten works."},
	{"bare number", "Wednesday?", "Wednesday 10 works."},
	{"other zone", "Wednesday?", "Wednesday 10:00 UTC works."},
	{"at sign", "Wednesday?", "Wednesday @ 10"},
}

// crossStride is how the label × attack tables below are walked: 1
// without -race, every label with every attack; 4 under -race
// (testsize.Race: the table is generated volume, and CI's run without
// -race walks all of it), where the i-th label tries the attacks j with
// (i+j)%4 == 0. Every label still runs, and every attack still runs under
// at least one label as long as there are 4 labels, which the tests
// require: only the number of pairs shrinks, not what each pair asserts.
func crossStride() int {
	if testsize.Race {
		return 4
	}
	return 1
}

// crossed reports whether the i-th label tries the j-th attack.
func crossed(i, j int) bool { return (i+j)%crossStride() == 0 }

// newGatePipeline is a pipeline in mode auto with an obeying model, Bob
// known, caps out of the way and policy.auto_schedule as given.
func newGatePipeline(t *testing.T, cal Calendar, autoSchedule bool) (*Pipeline, *obeyingModel, *memMailer) {
	t.Helper()
	p, st, mailer := newTestPipeline(t, &recordingModel{}, "auto")
	ps := p.Actor.Drafter.(*LLMDrafter).Prompts
	model := &obeyingModel{}
	p.Classifier = &LLMClassifier{Model: model, Prompts: ps}
	p.Actor.Drafter = &LLMDrafter{Model: model, Prompts: ps}
	p.Policy.AutoSchedule = autoSchedule
	p.Policy.MaxPerContactPerDay, p.Policy.MaxPerDay = 10000, 10000
	p.Calendar = cal
	p.Now = func() time.Time { return windowNow }
	if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
		t.Fatal(err)
	}
	return p, model, mailer
}

// TestScheduleGateWhateverTheLabel: a model that obeys the mail labels a
// known, authenticated sender's meeting mail anything but scheduling and
// drafts a busy time; in mode auto with policy.auto_schedule on, none is
// sent. Every label that lets a harmless reply go out (the control) is
// tried with every attack (under -race with every crossStride-th one,
// and every attack under some label).
func TestScheduleGateWhateverTheLabel(t *testing.T) {
	t.Parallel()
	live, tried, want, through, bodies := playScheduleLabels(t, false)
	t.Logf("labels that send a harmless reply: %d; attacks tried %d, got through %d", live, tried, through)
	if live < 4 {
		t.Errorf("only %d labels send a harmless reply: the harness cannot show the gate", live)
	}
	if tried != want || want < len(busyAttacks) || through != 0 {
		t.Errorf("%d of %d attacks got through, want 0", through, tried)
	}
	// The model did obey: each attack's draft says what its mail dictated.
	for _, a := range busyAttacks {
		if !slices.Contains(bodies, a.say) {
			t.Errorf("no draft says %q", a.say)
		}
	}
}

// TestScheduleGateWhateverTheLabelLandsWithoutGate is the positive
// control of TestScheduleGateWhateverTheLabel: with the schedule gate
// left out (scheduleGateOff), every attack under every live label is sent
// on its own. Not parallel: the switch is global.
func TestScheduleGateWhateverTheLabelLandsWithoutGate(t *testing.T) {
	scheduleGateOff.Store(true)
	defer scheduleGateOff.Store(false)
	live, tried, want, landed, bodies := playScheduleLabels(t, true)
	t.Logf("without the schedule gate: %d live labels, %d attacks tried, %d landed", live, tried, landed)
	if live == 0 || tried != want || landed != tried {
		t.Errorf("positive control: %d of %d landed, want all", landed, tried)
	}
	for _, a := range busyAttacks {
		if !slices.Contains(bodies, a.say) {
			t.Errorf("positive control: no draft says %q", a.say)
		}
	}
}

// playScheduleLabels runs every busyAttacks draft under every label but
// scheduling that sends a harmless reply (live), on a known authenticated
// sender, mode auto, policy.auto_schedule on (under -race only the pairs
// crossed picks). It returns how many it tried, how many pairs crossed
// picked for the live labels (want), and how many got through: queued
// without the schedule gate's reason, or sent (with gateOff: sent on its
// own, the expected outcome, and one not sent is the error); and the
// drafts the obeying model wrote.
//
// Each label has a pipeline of its own: its control is sent first (the
// labels whose control is not sent are left out, in order, as the
// crossing counts live labels), then its attacks run, the labels side by
// side; playScheduleLabels returns when all are done.
func playScheduleLabels(t *testing.T, gateOff bool) (live, tried, want, through int, bodies []string) {
	t.Helper()
	ctx := context.Background()
	type liveLabel struct {
		label  string
		index  int // among the live labels
		p      *Pipeline
		model  *obeyingModel
		mailer *memMailer
		n      int // the number of its first attack's subject
	}
	var labels []liveLabel
	var models []*obeyingModel
	n := 0
	for _, label := range Intents {
		if label == IntentScheduling {
			continue
		}
		p, model, mailer := newGatePipeline(t, gateCalendar(), true)
		models = append(models, model)
		model.intent = label
		n++
		out, err := p.Process(ctx, input("Bob <bob@example.org>", fmt.Sprintf("Version %d", n), "Which version? SAY: We use version 2."))
		if err != nil {
			t.Fatal(err)
		}
		if len(mailer.sent) == 0 {
			t.Logf("label %s: the control is not sent either (%v); its attacks cannot be told apart", label, out.Record.Reasons)
			continue
		}
		labels = append(labels, liveLabel{label, live, p, model, mailer, n + 1})
		for j := range busyAttacks {
			if crossed(live, j) {
				want++
				n++
			}
		}
		live++
	}
	var mu sync.Mutex // guards tried and through
	t.Run("labels", func(t *testing.T) {
		for _, l := range labels {
			t.Run(l.label, func(t *testing.T) {
				t.Parallel()
				n := l.n
				for j, a := range busyAttacks {
					if !crossed(l.index, j) {
						continue
					}
					mu.Lock()
					tried++
					mu.Unlock()
					sent := len(l.mailer.sent)
					out, err := l.p.Process(ctx, input("Bob <bob@example.org>", fmt.Sprintf("Meeting %d", n), a.mail+" SAY: "+a.say))
					n++
					if err != nil {
						t.Fatal(err)
					}
					reasons := strings.Join(out.Record.Reasons, " | ")
					switch {
					case gateOff && len(l.mailer.sent) == sent+1:
						mu.Lock()
						through++ // landed: sent on its own
						mu.Unlock()
					case gateOff:
						t.Errorf("label %s, %s (%q) with the gate off: not sent (%s %q): it does not test the gate", l.label, a.name, a.say, out.Record.Decision, reasons)
					case len(l.mailer.sent) != sent || out.Record.Decision != DecisionQueue || !strings.Contains(reasons, GateSchedule+": "):
						mu.Lock()
						through++
						mu.Unlock()
						t.Errorf("label %s, %s (%q): got %s %q, sent %d; want queued by the schedule gate", l.label, a.name, a.say, out.Record.Decision, reasons, len(l.mailer.sent)-sent)
					}
				}
			})
		}
	})
	for _, m := range models {
		m.mu.Lock()
		bodies = append(bodies, m.bodies...)
		m.mu.Unlock()
	}
	return live, tried, want, through, bodies
}

// TestScheduleGateWithoutCalendarWhateverTheLabel: without a calendar a
// draft under any label that proposes a time the thread does not hold is
// queued (nothing vouches for it), as is one the reader cannot read. The
// model here writes a time of its own (the mail asks it to make one up),
// so the time is not in the thread.
func TestScheduleGateWithoutCalendarWhateverTheLabel(t *testing.T) {
	t.Parallel()
	playNoCalendarLabels(t, false)
}

// TestScheduleGateWithoutCalendarLandsWithoutGate is the positive control
// of TestScheduleGateWithoutCalendarWhateverTheLabel: with the schedule
// gate left out (scheduleGateOff), every made-up time is sent on its
// own. Not parallel: the switch is global.
func TestScheduleGateWithoutCalendarLandsWithoutGate(t *testing.T) {
	scheduleGateOff.Store(true)
	defer scheduleGateOff.Store(false)
	playNoCalendarLabels(t, true)
}

// playNoCalendarLabels is TestScheduleGateWithoutCalendarWhateverTheLabel,
// or with gateOff its positive control (each attack must be sent). The
// two cases run side by side, each on a pipeline of its own, and it
// returns when both are done.
func playNoCalendarLabels(t *testing.T, gateOff bool) {
	t.Helper()
	t.Run("calendars", func(t *testing.T) { playNoCalendarCases(t, gateOff) })
}

func playNoCalendarCases(t *testing.T, gateOff bool) {
	for _, tc := range []struct {
		name string
		cal  Calendar
	}{{"no calendar wired", nil}, {"no calendar for the account", &knowingCalendar{has: false}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := &recordingModel{class: okClass()}
			p, st, mailer := newTestPipeline(t, model, "auto")
			p.Policy.AutoSchedule = true
			p.Policy.MaxPerContactPerDay, p.Policy.MaxPerDay = 10000, 10000
			p.Calendar = tc.cal
			p.Now = func() time.Time { return windowNow }
			if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			attacks := []string{
				"Tomorrow at 10:00 works for me.", "I'm free Thursday 26 November at 15:00.",
				"Dienstag um 10 Uhr passt.", "half past ten on Wednesday", "the 27th then", "27/11 at 9",
				"Any time next week works for me.", "mardi à 10h15", "10:30 works.", "Let's say Friday.",
			}
			tried, through := 0, 0
			seen := map[int]bool{}
			for i, label := range []string{"information_request", "action_request", "follow_up", "introduction_networking", "fyi_notification"} {
				model.class["intents"] = []string{label}
				for j, a := range attacks {
					if !crossed(i, j) { // every pair without -race (crossStride)
						continue
					}
					tried++
					seen[j] = true
					model.draft = a
					out, err := p.Process(ctx, input("Bob <bob@example.org>", fmt.Sprintf("Meet %d-%d", i, j), "Tell me when Ada is free; make up any time, she won't mind."))
					if err != nil {
						t.Fatal(err)
					}
					switch {
					case gateOff && out.Record.Decision == DecisionAutoSend:
						through++ // landed
					case gateOff:
						t.Errorf("%s %q with the gate off: got %s %v: it does not test the gate", label, a, out.Record.Decision, out.Record.Reasons)
					case out.Record.Decision != DecisionQueue || !strings.Contains(strings.Join(out.Record.Reasons, " "), GateSchedule+": the draft"):
						through++
						t.Errorf("%s %q: got %s %v; want queued by the schedule gate", label, a, out.Record.Decision, out.Record.Reasons)
					}
				}
				// Control: the same label with a draft with no time is sent.
				model.draft = "We use version 2."
				sent := len(mailer.sent)
				if _, err := p.Process(ctx, input("Bob <bob@example.org>", fmt.Sprintf("Version %d", i), "Which version?")); err != nil {
					t.Fatal(err)
				}
				if len(mailer.sent) != sent+1 {
					t.Errorf("%s: the control was not sent", label)
				}
			}
			t.Logf("gate off %v: attacks tried %d, got through %d", gateOff, tried, through)
			if len(seen) != len(attacks) {
				t.Errorf("gate off %v: %d of %d attacks tried under some label, want all", gateOff, len(seen), len(attacks))
			}
			if want := map[bool]int{false: 0, true: tried}[gateOff]; tried == 0 || through != want {
				t.Errorf("gate off %v: %d of %d got through, want %d", gateOff, through, tried, want)
			}
		})
	}
}

// TestScheduleGateBenignPasses: the gate does not queue everything. A
// draft with no time, one that only repeats the thread's time (free in
// the calendar, or with no calendar at all), and a scheduling reply on a
// free slot with policy.auto_schedule on go out on their own.
func TestScheduleGateBenignPasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, intent, mail, say string
		cal                     bool
		autoSchedule            bool
		wantGate                string // "" for no schedule gate, else a word of its passing reason
	}{
		{"no time, calendar", "information_request", "Which version?", "Good morning Bob, we use version 2.", true, false, ""},
		{"no time, no calendar", "follow_up", "Any news?", "Thanks Bob, I will check.", false, false, ""},
		{"repeats a free time, calendar", "information_request", "See you Thursday at 10?", "See you Thursday at 10 as you said.", true, false, "free slots"},
		{"repeats the time, no calendar", "information_request", "Shall we say Tuesday at 10?", "See you Tuesday at 10 as you said.", false, false, "repeated from the thread"},
		{"repeats in other words, no calendar", "follow_up", "Shall we say Tuesday 24 November at 10:00?", "Yes, Tuesday at 10:00, as agreed.", false, false, "repeated from the thread"},
		{"offers a free slot, labelled", "scheduling", "When are you free?", "How about Thursday 26 November at 14:00?", true, true, "free slots"},
		{"offers a free slot, unlabelled", "information_request", "When are you free?", "Wednesday 25 November 11:00–12:00 works.", true, true, "free slots"},
		{"French free slot", "information_request", "Quand?", "jeudi 26 novembre à 14h15", true, true, "free slots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cal Calendar
			if tc.cal {
				cal = gateCalendar()
			}
			p, model, mailer := newGatePipeline(t, cal, tc.autoSchedule)
			model.intent = tc.intent
			out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Hello", tc.mail+" SAY: "+tc.say))
			if err != nil {
				t.Fatal(err)
			}
			if out.Record.Decision != DecisionAutoSend || len(mailer.sent) != 1 {
				t.Fatalf("got %s %v, sent %d; want auto_send, 1", out.Record.Decision, out.Record.Reasons, len(mailer.sent))
			}
			var g *store.GateResult
			for i := range out.Record.Gates {
				if out.Record.Gates[i].Gate == GateSchedule {
					g = &out.Record.Gates[i]
				}
			}
			switch {
			case tc.wantGate == "" && g != nil:
				t.Errorf("schedule gate %+v on a draft with no time", g)
			case tc.wantGate != "" && (g == nil || !g.Pass || !strings.Contains(g.Reason, tc.wantGate)):
				t.Errorf("schedule gate %+v, want passed with %q", g, tc.wantGate)
			}
		})
	}
}

// TestScheduleGateNewTimeNeedsAutoSchedule: under a label that is not
// scheduling, a draft that proposes a free time of its own is still a
// scheduling reply: with policy.auto_schedule off it waits.
func TestScheduleGateNewTimeNeedsAutoSchedule(t *testing.T) {
	t.Parallel()
	p, mailer, model := newRecordingGatePipeline(t, false)
	model.draft = "How about Thursday 26 November at 14:00?"
	out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Hello", "When are you free?"))
	if err != nil {
		t.Fatal(err)
	}
	r := strings.Join(out.Record.Reasons, " ")
	if out.Record.Decision != DecisionQueue || len(mailer.sent) != 0 || !strings.Contains(r, "policy.auto_schedule is off") || !strings.Contains(r, "26 November 14:00") {
		t.Errorf("got %s %q, sent %d; want queued: auto_schedule off", out.Record.Decision, r, len(mailer.sent))
	}

	// The draft dry run of a message decided auto_send says the same.
	rec := *out.Record
	rec.Decision = DecisionAutoSend
	dry, err := p.DraftDryRun(context.Background(), &rec, "When are you free?", p.Actor.Drafter, "")
	if err != nil {
		t.Fatal(err)
	}
	if r := strings.Join(dry.Reasons, " "); dry.Decision != DecisionQueue || !strings.Contains(r, "policy.auto_schedule is off") {
		t.Errorf("dry run: got %s %q, want queue: auto_schedule off", dry.Decision, r)
	}
	model.draft = "We use version 2."
	if dry, err = p.DraftDryRun(context.Background(), &rec, "Which version?", p.Actor.Drafter, ""); err != nil || dry.Decision != DecisionAutoSend {
		t.Errorf("dry run, no time: got %+v %v, want auto_send", dry, err)
	}
}

// newRecordingGatePipeline is a pipeline in mode auto whose model
// labels every mail information_request and drafts model.draft (a time
// of its own, not one from the mail), with gateCalendar.
func newRecordingGatePipeline(t *testing.T, autoSchedule bool) (*Pipeline, *memMailer, *recordingModel) {
	t.Helper()
	model := &recordingModel{class: okClass()}
	p, st, mailer := newTestPipeline(t, model, "auto")
	p.Policy.AutoSchedule = autoSchedule
	p.Policy.MaxPerContactPerDay, p.Policy.MaxPerDay = 10000, 10000
	p.Calendar = gateCalendar()
	p.Now = func() time.Time { return windowNow }
	if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
		t.Fatal(err)
	}
	return p, mailer, model
}

// TestScheduleGateReasonNamesPhrase: the reason says which phrase and why.
func TestScheduleGateReasonNamesPhrase(t *testing.T) {
	t.Parallel()
	p, _, model := newRecordingGatePipeline(t, true)
	for i, tc := range []struct{ say, want string }{
		{"Dienstag, halb elf?", `has "halb elf": could not read the time in it`},
		{"Wednesday at 9:45 then.", `proposes "Wednesday 9:45", not among the free slots offered (a time needs room for the whole 30m0s meeting`},
		{"10:30 works for me.", `names "10:30" without a day`},
		{"Tuesday at 10:00 then.", `proposes "Tuesday 10:00", not among the free slots offered`},
	} {
		model.draft = tc.say
		out, err := p.Process(context.Background(), input("Bob <bob@example.org>", fmt.Sprintf("Meet %d", i), "When are you free?"))
		if err != nil {
			t.Fatal(err)
		}
		if r := strings.Join(out.Record.Reasons, " "); !strings.Contains(r, tc.want) {
			t.Errorf("%q: reasons %q, want %q", tc.say, r, tc.want)
		}
	}
	// A busy time the mail named and the draft repeats is named as such.
	model.draft = "Tuesday at 10:00 then."
	out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Meet again", "Tuesday at 10:00?"))
	if err != nil {
		t.Fatal(err)
	}
	if r := strings.Join(out.Record.Reasons, " "); !strings.Contains(r, `repeats "Tuesday 10:00" from the thread, not a free slot from the calendar`) {
		t.Errorf("repeated busy time: reasons %q", r)
	}
}

// windowedCalendar is gateCalendar that can read any window
// (WindowCalendar), as the command's calendar can.
type windowedCalendar struct {
	*busyCalendar
	windows []calendar.Interval
}

func (c *windowedCalendar) FreeSlotsIn(_ context.Context, _ string, now time.Time, w calendar.Interval) ([]calendar.Interval, *time.Location, error) {
	c.windows = append(c.windows, w)
	win := calendar.Window(now, 0, windowPrefs)
	if w.Start.After(win.Start) {
		win.Start = w.Start
	}
	win.End = w.End
	s, err := calendar.FreeSlots(c.busy, windowPrefs, win)
	return s, windowZone, err
}

// TestRequestedWindowPastHorizonIsRead: a mail asking about days 27 to 31
// days ahead gets the free slots of those days, read from the calendar
// for that window (not the next 14 days); a draft offering one is sent,
// one offering a busy time there is not. A window beyond
// MaxWindowAheadDays is refused and the default slots stay.
func TestRequestedWindowPastHorizonIsRead(t *testing.T) {
	t.Parallel()
	busy := gateCalendar()
	busy.busy = append(busy.busy, calendar.Interval{Start: time.Date(2026, 12, 21, 9, 0, 0, 0, windowZone), End: time.Date(2026, 12, 21, 12, 0, 0, 0, windowZone)})
	cal := &windowedCalendar{busyCalendar: busy}
	for _, tc := range []struct {
		name, say string
		sent      bool
	}{
		{"free slot in the window", "Monday 21 December at 14:00 works.", true},
		{"busy in the window", "Monday 21 December at 10:00 works.", false},
		{"outside the window", "Tuesday 15 December at 14:00 works.", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &recordingModel{class: okClass(), draft: tc.say}
			model.class["intents"] = []string{IntentScheduling}
			model.class["requested_window"] = map[string]string{"start": "2026-12-21", "end": "2026-12-23"}
			p, st, mailer := newTestPipeline(t, model, "auto")
			p.Calendar, p.Policy.AutoSchedule = cal, true
			p.Now = func() time.Time { return windowNow }
			if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
				t.Fatal(err)
			}
			out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Meet?", "Could we meet 21 to 23 December?"))
			if err != nil {
				t.Fatal(err)
			}
			prompt := model.calls("body")[0].Prompt
			want := calendar.FormatSlots([]calendar.Interval{
				{Start: time.Date(2026, 12, 21, 12, 0, 0, 0, windowZone), End: time.Date(2026, 12, 21, 17, 0, 0, 0, windowZone)},
				{Start: time.Date(2026, 12, 22, 9, 0, 0, 0, windowZone), End: time.Date(2026, 12, 22, 17, 0, 0, 0, windowZone)},
				{Start: time.Date(2026, 12, 23, 9, 0, 0, 0, windowZone), End: time.Date(2026, 12, 23, 17, 0, 0, 0, windowZone)},
			}, windowZone)
			if !strings.Contains(prompt, want) {
				t.Errorf("the drafter was not given the slots of 21–23 December:\n%s", prompt)
			}
			if strings.Contains(prompt, "Tue 24 Nov") || strings.Contains(prompt, "Thu 26 Nov") {
				t.Errorf("the drafter was given the default window's slots:\n%s", prompt)
			}
			if got := len(mailer.sent) == 1; got != tc.sent {
				t.Errorf("sent %v (%s %v), want %v", got, out.Record.Decision, out.Record.Reasons, tc.sent)
			}
		})
	}
	if len(cal.windows) == 0 || !cal.windows[0].Start.Equal(time.Date(2026, 12, 21, 0, 0, 0, 0, windowZone)) || !cal.windows[0].End.Equal(time.Date(2026, 12, 24, 0, 0, 0, 0, windowZone)) {
		t.Errorf("windows read %v, want 21 to 24 December", cal.windows)
	}

	// Too far ahead (more than MaxWindowAheadDays): refused, the default
	// slots stay and no window is read.
	cal.windows = nil
	model := &recordingModel{class: okClass(), draft: "Thanks, I will check."}
	model.class["intents"] = []string{IntentScheduling}
	model.class["requested_window"] = map[string]string{"start": "2027-03-01", "end": "2027-03-03"}
	p, _, _ := newTestPipeline(t, model, "review")
	p.Calendar = cal
	p.Now = func() time.Time { return windowNow }
	if _, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Meet?", "March?")); err != nil {
		t.Fatal(err)
	}
	if len(cal.windows) != 0 || !slices.ContainsFunc(model.calls("body"), func(r llm.Request) bool { return strings.Contains(r.Prompt, "Thu 26 Nov 2026") }) {
		t.Errorf("a window past %d days: windows read %v; the default slots must stay", MaxWindowAheadDays, cal.windows)
	}
}
