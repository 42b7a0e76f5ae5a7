package agent

import (
	"context"
	"fmt"
	"slices"
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
// slot the calendar offered, and policy.auto_schedule is on. It applies
// to every draft whose intents include scheduling.
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
	if rec.Classification == nil || !slices.Contains(rec.Classification.Intents, IntentScheduling) {
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
		o.narrow(rec.Classification.RequestedWindow)
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

// scheduleGate appends the schedule gate to gates for a scheduling reply:
// the account must have a calendar, every date and time in the draft must
// lie in an offered slot (times the thread already holds are named apart:
// fine to queue, never to send on its own), and policy.auto_schedule must
// be on. Without a calendar it fails whatever the policy says.
func (p *Pipeline) scheduleGate(gates []store.GateResult, o *offeredSlots, req DraftRequest, draft string) []store.GateResult {
	if o == nil {
		return gates
	}
	thread := req.Body
	for _, m := range req.Thread {
		thread += "\n" + m.Text
	}
	g := store.GateResult{Gate: GateSchedule}
	var c calendar.TimeCheck
	if o.err == nil && !o.noCalendar {
		c = calendar.CheckTimes(draft, thread, o.slots[:min(len(o.slots), maxOfferedSlots)], o.ref, o.loc)
	}
	switch {
	case o.noCalendar:
		g.Reason = NoCalendarReason
	case o.err != nil:
		g.Reason = fmt.Sprintf("the calendar could not be read (%v): a scheduling reply waits for you", o.err)
	case len(c.Outside) > 0:
		g.Reason = fmt.Sprintf("the draft proposes %s, not among the free slots offered", quoteList(c.Outside))
	case len(c.FromThread) > 0:
		g.Reason = fmt.Sprintf("the draft repeats %s from the thread, not a free slot from the calendar", quoteList(c.FromThread))
	case !p.Policy.AutoSchedule:
		g.Reason = fmt.Sprintf("policy.auto_schedule is off: scheduling replies wait for you (%d dates and times checked, all offered)", c.Mentions)
	default:
		g.Pass = true
		g.Reason = fmt.Sprintf("%d dates and times, all in the calendar's free slots", c.Mentions)
	}
	return append(gates, g)
}
