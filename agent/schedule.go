package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/store"
)

// Calendar computes an account's free slots from the owner's calendar:
// code, not the model, decides when the owner is free.
// FreeSlots returns a nil location (and no error) for an account that
// has no calendar.
type Calendar interface {
	FreeSlots(ctx context.Context, account string, now time.Time) ([]calendar.Interval, *time.Location, error)
}

// GateSchedule is the gate a scheduling reply passes only when the
// account has a calendar, every date and time the reply names lies in a
// slot the calendar offered (with room for slot_length), and
// policy.auto_schedule is on. It applies to every draft whose intents
// include scheduling and, whatever the intents, to every draft that would
// be sent on its own and names a date or time (see timeGate).
const GateSchedule = "schedule"

// IntentScheduling is the classifier's intent for mail about meeting times.
const IntentScheduling = "scheduling"

// NoCalendarReason is the schedule gate's reason on an account without a
// calendar: the model cannot be trusted to know the owner's free time.
const NoCalendarReason = "no calendar for this account: the agent cannot know your free time; scheduling replies wait for you"

// calendarKnower is a Calendar that can tell, without reading the
// calendar, whether an account has one.
type calendarKnower interface {
	HasCalendar(account string) bool
}

// noCalendarGate is the failing schedule gate for a scheduling mail on an
// account known, before any draft, to have no calendar; nil otherwise (a
// calendar that cannot say is asked when the draft is written).
func (p *Pipeline) noCalendarGate(rec *store.MessageRecord) *store.GateResult {
	if scheduleGateOff.Load() || rec.Classification == nil || !slices.Contains(rec.Classification.Intents, IntentScheduling) {
		return nil
	}
	if p.Calendar != nil {
		k, ok := p.Calendar.(calendarKnower)
		if !ok || k.HasCalendar(rec.Account) {
			return nil
		}
	}
	return &store.GateResult{Gate: GateSchedule, Reason: NoCalendarReason}
}

// WindowCalendar is a Calendar that can compute free slots for a given
// window: the days a scheduling mail asks about, when they reach past the
// default SchedulingHorizonDays. window is one ValidWindow accepted (at
// most MaxWindowDays long, ending at most MaxWindowAheadDays ahead); the
// slots lie inside it, after now plus min_notice.
type WindowCalendar interface {
	FreeSlotsIn(ctx context.Context, account string, now time.Time, window calendar.Interval) ([]calendar.Interval, *time.Location, error)
}

// offerWindow reads the calendar for the window the mail asks about when
// code accepts that window, it reaches past the default horizon, and the
// calendar can read a window; it reports whether o now holds that
// window's slots. Otherwise narrow cuts the default slots.
func (p *Pipeline) offerWindow(ctx context.Context, rec *store.MessageRecord, o *offeredSlots) bool {
	w := rec.Classification.RequestedWindow
	iv, ok, _ := ValidWindow(w, o.ref, o.loc)
	wc, can := p.Calendar.(WindowCalendar)
	if !ok || !can || !iv.End.After(o.ref.AddDate(0, 0, SchedulingHorizonDays)) {
		return false
	}
	slots, loc, err := wc.FreeSlotsIn(ctx, rec.Account, o.ref, iv)
	if err != nil || loc == nil {
		p.logger().Warn("calendar: the requested window could not be read; the default window is used", "account", rec.Account, "err", err)
		return false
	}
	var kept []calendar.Interval
	for _, s := range slots { // the calendar's answer, held to the window
		if s.Start.Before(iv.Start) || s.End.After(iv.End) || !s.End.After(s.Start) {
			continue
		}
		kept = append(kept, s)
	}
	o.slots, o.loc = kept, loc
	o.note = fmt.Sprintf("requested window %s to %s: %d free slots, read from the calendar for that window", w.Start, w.End, len(kept))
	return true
}

// maxOfferedSlots caps the slots shown to the drafter.
const maxOfferedSlots = 20

// offeredSlots is what the calendar said for one scheduling mail.
type offeredSlots struct {
	// noCalendar: the account has no calendar, so nothing was offered.
	noCalendar bool
	slots      []calendar.Interval
	loc        *time.Location
	ref        time.Time
	err        error
	// note says what became of the window the mail asked about, for the
	// trace: used (and how many slots it kept) or ignored and why.
	note string
}

// offerSlots asks the calendar for the owner's free slots when the mail
// is about scheduling, and gives them to the drafter. nil only when the
// mail is not about scheduling; an account without a calendar gets a
// result with noCalendar set, which the schedule gate fails.
func (p *Pipeline) offerSlots(ctx context.Context, rec *store.MessageRecord, req *DraftRequest) *offeredSlots {
	if rec.Classification == nil || !slices.Contains(rec.Classification.Intents, IntentScheduling) {
		return nil
	}
	o := &offeredSlots{ref: p.now()}
	if p.Calendar == nil {
		o.noCalendar = true
		return o
	}
	o.slots, o.loc, o.err = p.Calendar.FreeSlots(ctx, rec.Account, o.ref)
	if o.err == nil && o.loc == nil {
		o.noCalendar = true // the account has no calendar
		return o
	}
	if o.err == nil {
		if !p.offerWindow(ctx, rec, o) {
			o.narrow(rec.Classification.RequestedWindow)
		}
		if o.note != "" {
			p.logger().Info("calendar: "+o.note, "account", rec.Account)
		}
	}
	switch {
	case o.err != nil:
		p.logger().Warn("calendar: no free slots for a scheduling draft", "account", rec.Account, "err", o.err)
	case len(o.slots) == 0:
		req.FreeSlots = "(none: the owner has no free time in this window)"
	default:
		req.FreeSlots = calendar.FormatSlots(o.slots[:min(len(o.slots), maxOfferedSlots)], o.loc)
	}
	return o
}

// scheduleGateOff leaves the schedule gate out of a draft's gates. It
// exists only for the positive control of the schedule-gate attacks (a
// model that obeys the mail drafts a busy time under any label); nothing
// in the product sets it. Never from a parallel test.
var scheduleGateOff atomic.Bool

// scheduleGate appends the schedule gate to gates. The label the model
// chose does not switch it off: it runs on every scheduling reply and on
// every draft that would be sent on its own (rec.Decision auto_send).
//
// A scheduling reply (the classifier said scheduling, so the calendar
// was asked and the drafter offered its slots) passes only when the
// account has a calendar, every date and time in the draft lies in an
// offered slot with room for the whole slot_length (times the thread
// already holds are named apart: fine to queue, never to send on its
// own), every phrase that looks like a time was read, and
// policy.auto_schedule is on. Without a calendar it fails whatever the
// policy says.
//
// Any other draft on its way out is checked by timeGate.
func (p *Pipeline) scheduleGate(ctx context.Context, gates []store.GateResult, o *offeredSlots, rec *store.MessageRecord, req DraftRequest, draft string) []store.GateResult {
	if scheduleGateOff.Load() {
		return gates
	}
	if o == nil {
		if rec.Decision != DecisionAutoSend {
			return gates
		}
		return p.timeGate(ctx, gates, rec, req, draft)
	}
	g := store.GateResult{Gate: GateSchedule}
	var c calendar.TimeCheck
	length := p.slotLength(rec.Account)
	if o.err == nil && !o.noCalendar {
		c = calendar.CheckTimes(draft, threadText(rec, req), o.slots[:min(len(o.slots), maxOfferedSlots)], length, o.ref, o.loc)
	}
	switch problems := timeProblems(c, length, true); {
	case o.noCalendar:
		g.Reason = NoCalendarReason
	case o.err != nil:
		g.Reason = fmt.Sprintf("the calendar could not be read (%v): a scheduling reply waits for you", o.err)
	case len(problems) > 0:
		g.Reason = "the draft " + strings.Join(problems, "; ")
	case !p.Policy.AutoSchedule:
		g.Reason = fmt.Sprintf("policy.auto_schedule is off: scheduling replies wait for you (%s checked, all offered)", datesAndTimes(c.Mentions))
	default:
		g.Pass = true
		g.Reason = datesAndTimes(c.Mentions) + ", all in the calendar's free slots"
	}
	return append(gates, g)
}

// timeGate checks a draft that would be sent on its own although the
// classifier did not call the mail scheduling: a model that obeys the
// mail can choose any label. A draft with no date or time in it (and no
// phrase that looks like one) gets no gate. Otherwise:
//   - on an account with a calendar, code reads the free slots (the
//     default window) and every date and time must lie in one with room
//     for slot_length, repeated from the thread or not (confirming the
//     sender's busy time is what this stops); a time the draft proposes
//     itself (not in the thread) also needs policy.auto_schedule, as any
//     scheduling reply does;
//   - without a calendar nothing vouches for a new time: every date and
//     time must repeat one the thread already holds ("see you Tuesday at
//     10 as you said");
//   - a phrase that looks like a date or time but was not read fails.
func (p *Pipeline) timeGate(ctx context.Context, gates []store.GateResult, rec *store.MessageRecord, req DraftRequest, draft string) []store.GateResult {
	ref := p.now()
	thread := threadText(rec, req)
	if len(req.Thread) == 0 {
		for _, m := range p.threadContext(rec) {
			thread += "\n" + m.Text
		}
	}
	read := calendar.ReadTimes(draft, thread, ref, ref.Location())
	c := read.Check(nil, 0)
	if c.Mentions == 0 {
		return gates
	}
	g := store.GateResult{Gate: GateSchedule}
	var slots []calendar.Interval
	var loc *time.Location
	var err error
	if p.accountMayHaveCalendar(rec.Account) {
		slots, loc, err = p.Calendar.FreeSlots(ctx, rec.Account, ref)
	}
	length := p.slotLength(rec.Account)
	switch {
	case err != nil:
		g.Reason = fmt.Sprintf("the draft names dates or times and the calendar could not be read (%v): it waits for you", err)
		return append(gates, g)
	case loc == read.Location(): // read in the calendar's zone already
		c = read.Check(slots, length)
	case loc != nil:
		c = calendar.CheckTimes(draft, thread, slots, length, ref, loc)
	}
	problems := timeProblems(c, length, loc != nil)
	if loc != nil && len(c.Fresh) > 0 && !p.Policy.AutoSchedule {
		problems = append(problems, fmt.Sprintf("proposes %s itself: a reply that offers times is a scheduling reply, and policy.auto_schedule is off", quoteList(c.Fresh)))
	}
	switch {
	case len(problems) > 0:
		g.Reason = "the draft " + strings.Join(problems, "; ")
	case loc != nil:
		g.Pass = true
		g.Reason = datesAndTimes(c.Mentions) + ", all in the calendar's free slots"
	default:
		g.Pass = true
		g.Reason = datesAndTimes(c.Mentions) + ", all repeated from the thread"
	}
	return append(gates, g)
}

// timeProblems says what is wrong with the times of a draft, one clause
// per kind, each naming its phrases. A time repeated from the thread is
// wrong only when a calendar was read (and found it not free).
func timeProblems(c calendar.TimeCheck, length time.Duration, calendarRead bool) []string {
	var out []string
	if len(c.Outside) > 0 {
		if calendarRead {
			out = append(out, fmt.Sprintf("proposes %s, not among the free slots offered (a time needs room for the whole %s meeting inside one free slot, whose end is not free)", quoteList(c.Outside), length))
		} else {
			out = append(out, fmt.Sprintf("proposes %s, which the thread does not hold and no calendar vouches for", quoteList(c.Outside)))
		}
	}
	if len(c.FromThread) > 0 && calendarRead {
		out = append(out, fmt.Sprintf("repeats %s from the thread, not a free slot from the calendar", quoteList(c.FromThread)))
	}
	if len(c.Undated) > 0 {
		out = append(out, fmt.Sprintf("names %s without a day", quoteList(c.Undated)))
	}
	for i, u := range c.Unread {
		if i == 3 {
			out = append(out, fmt.Sprintf("and %d more phrases it could not read", len(c.Unread)-i))
			break
		}
		out = append(out, fmt.Sprintf("has %s: could not read the time in it (%s)", quoteList([]string{u.Text}), u.Why))
	}
	return out
}

// threadText is the text the draft answers: the subject, the mail and
// the earlier messages the drafter saw.
func threadText(rec *store.MessageRecord, req DraftRequest) string {
	thread := rec.Subject + "\n" + req.Body
	for _, m := range req.Thread {
		thread += "\n" + m.Text
	}
	return thread
}

// accountMayHaveCalendar reports whether the calendar should be asked
// about account: one is wired and does not say the account has none.
func (p *Pipeline) accountMayHaveCalendar(account string) bool {
	if p.Calendar == nil {
		return false
	}
	k, ok := p.Calendar.(calendarKnower)
	return !ok || k.HasCalendar(account)
}

// slotLength is the meeting length of account (scheduling.slot_length).
func (p *Pipeline) slotLength(account string) time.Duration {
	if l, ok := p.Calendar.(slotLengther); ok && l.SlotLength(account) > 0 {
		return l.SlotLength(account)
	}
	return DefaultSlotLength
}

// datesAndTimes counts the mentions a gate checked: "1 date or time",
// "3 dates and times".
func datesAndTimes(n int) string {
	if n == 1 {
		return "1 date or time"
	}
	return fmt.Sprintf("%d dates and times", n)
}
