package agent

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/store"
)

// Bounds of a requested window (Classification.RequestedWindow) that code
// accepts: at most MaxWindowDays days long, ending at most
// MaxWindowAheadDays days after today.
const (
	MaxWindowDays = 30
	// SchedulingHorizonDays is how far ahead the calendar is read for a
	// scheduling draft (the default window).
	SchedulingHorizonDays = 14
	MaxWindowAheadDays    = 60
)

// windowBoundsOff makes ValidWindow accept any two dates (end before
// start, in the past, too long, too far ahead), and windowHorizonOff makes
// narrow cut the default slots to any accepted window, even one past the
// days the calendar is read. They exist only for the positive control of
// TestHostileWindowsFallBackToDefault (never in parallel, restored before
// it returns); nothing in the product sets them.
var windowBoundsOff, windowHorizonOff atomic.Bool

// ValidWindow checks the window of days a model read in a scheduling mail,
// on loc's wall clock (the owner's time zone). It is accepted only when
// both dates parse as YYYY-MM-DD, start is not after end, the window is at
// most MaxWindowDays long, its last day is not before today and is at most
// MaxWindowAheadDays ahead. The interval runs from midnight of the first
// day to midnight after the last. reason says why a window was refused;
// it is empty for a nil window.
func ValidWindow(w *store.DateWindow, now time.Time, loc *time.Location) (iv calendar.Interval, ok bool, reason string) {
	if w == nil {
		return calendar.Interval{}, false, ""
	}
	if loc == nil {
		loc = time.UTC
	}
	start, err1 := time.ParseInLocation(time.DateOnly, w.Start, loc)
	end, err2 := time.ParseInLocation(time.DateOnly, w.End, loc)
	n := now.In(loc)
	today := time.Date(n.Year(), n.Month(), n.Day(), 0, 0, 0, 0, loc)
	days := func(a, b time.Time) int { // whole calendar days from a to b
		return int(time.Date(b.Year(), b.Month(), b.Day(), 12, 0, 0, 0, time.UTC).Sub(
			time.Date(a.Year(), a.Month(), a.Day(), 12, 0, 0, 0, time.UTC)).Hours() / 24)
	}
	switch {
	case err1 != nil || err2 != nil:
		return calendar.Interval{}, false, fmt.Sprintf("requested window %q to %q is not two dates (YYYY-MM-DD)", oneLine(w.Start, 40), oneLine(w.End, 40))
	case windowBoundsOff.Load():
		// Accepted as it is (the positive control only).
	case end.Before(start):
		return calendar.Interval{}, false, fmt.Sprintf("requested window %s to %s ends before it starts", w.Start, w.End)
	case end.Before(today):
		return calendar.Interval{}, false, fmt.Sprintf("requested window %s to %s is in the past", w.Start, w.End)
	case days(start, end)+1 > MaxWindowDays:
		return calendar.Interval{}, false, fmt.Sprintf("requested window %s to %s is longer than %d days", w.Start, w.End, MaxWindowDays)
	case days(today, end) > MaxWindowAheadDays:
		return calendar.Interval{}, false, fmt.Sprintf("requested window %s to %s ends more than %d days ahead", w.Start, w.End, MaxWindowAheadDays)
	}
	return calendar.Interval{Start: start, End: time.Date(end.Year(), end.Month(), end.Day()+1, 0, 0, 0, 0, loc)}, true, ""
}

// narrow keeps only the parts of the offered slots inside the window the
// mail asked about, when code accepts that window; otherwise the slots of
// the default window stay as they are. Either way it never offers a time
// the calendar did not: the result is a subset of the slots. It sets note.
func (o *offeredSlots) narrow(w *store.DateWindow) {
	iv, ok, why := ValidWindow(w, o.ref, o.loc)
	switch {
	case w == nil:
		return
	case !ok:
		o.note = why + ": ignored, the default window is used"
		return
	}
	// The default slots reach SchedulingHorizonDays ahead. A window past
	// that is read for itself when the calendar can (offerWindow); here
	// (a calendar that cannot) no slot is known there, and "no free time"
	// would be a lie. A window that starts there, or whose known part
	// holds no free slot while it reaches past the horizon, leaves the
	// default slots.
	horizon := o.ref.AddDate(0, 0, SchedulingHorizonDays)
	horizonOn := !windowHorizonOff.Load()
	if horizonOn && !iv.Start.Before(horizon) {
		o.note = fmt.Sprintf("requested window %s to %s lies beyond the %d days the calendar is read: ignored, the default window is used", w.Start, w.End, SchedulingHorizonDays)
		return
	}
	var kept []calendar.Interval
	for _, s := range o.slots {
		if s.End.After(iv.Start) && s.Start.Before(iv.End) {
			c := s
			if c.Start.Before(iv.Start) {
				c.Start = iv.Start
			}
			if c.End.After(iv.End) {
				c.End = iv.End
			}
			kept = append(kept, c)
		}
	}
	if horizonOn && len(kept) == 0 && iv.End.After(horizon) {
		o.note = fmt.Sprintf("requested window %s to %s: no free slot in its first %d days, the rest is not read: ignored, the default window is used", w.Start, w.End, SchedulingHorizonDays)
		return
	}
	o.note = fmt.Sprintf("requested window %s to %s: %d of %d free slots of the default window lie in it", w.Start, w.End, len(kept), len(o.slots))
	o.slots = kept
}
