package calendar

import (
	"fmt"
	"strings"
	"time"
)

// Problem is one phrase a time check refused, and why.
type Problem struct {
	Text string
	Why  string
}

// TimeCheck is the verdict on the dates and times a draft proposes.
type TimeCheck struct {
	Mentions int
	// Outside lists mentions that lie in no offered slot and were not
	// already in the thread: the draft must not go out as written.
	Outside []string
	// FromThread lists mentions that are not in an offered slot but
	// repeat a time from the thread (a confirmation or a refusal): fine
	// for a queued draft, never for an automatic send of a scheduling
	// reply.
	FromThread []string
	// Fresh lists mentions inside an offered slot that the thread does not
	// hold: times the draft itself proposes.
	Fresh []string
	// Undated lists times with no day before them in the draft, not
	// repeated from the thread: which day they mean is a guess.
	Undated []string
	// Unread lists phrases that look like a date or time but could not be
	// pinned down: the check cannot vouch for them.
	Unread []Problem
}

// OK reports whether every mention was read and came from the offered
// slots.
func (c TimeCheck) OK() bool {
	return len(c.Outside) == 0 && len(c.FromThread) == 0 && len(c.Undated) == 0 && len(c.Unread) == 0
}

// CheckTimes checks every date and time in draft against the offered
// slots and the dates and times already in thread. length is the meeting
// length (scheduling.slot_length; at most a moment when zero). A slot is
// half-open: its end is not free.
//   - a day and time must start a meeting of length inside one slot;
//   - a range ("10:00–11:00") must lie inside one slot;
//   - an end ("until 17:30") must end a meeting of length inside one slot;
//   - a part of a day ("Tuesday morning") must hold length of one slot;
//   - a day alone must hold length of one slot;
//   - a time with no day is never offered (Undated, unless the thread
//     has it);
//   - a phrase Mentions could not read is Unread.
func CheckTimes(draft, thread string, offered []Interval, length time.Duration, ref time.Time, loc *time.Location) TimeCheck {
	return ReadTimes(draft, thread, ref, loc).Check(offered, length)
}

// TimeReading is what CheckTimes reads in a draft and its thread before
// holding it against the offered slots: read once (ReadTimes), it can be
// checked against several sets of slots in the same zone.
type TimeReading struct {
	draft    []Mention
	inThread map[string]bool
	loc      *time.Location
}

// ReadTimes reads the dates and times of draft and thread (see
// CheckTimes).
func ReadTimes(draft, thread string, ref time.Time, loc *time.Location) *TimeReading {
	if loc == nil {
		loc = time.UTC
	}
	inThread := map[string]bool{}
	for _, m := range Mentions(thread, ref, loc) {
		if m.Unread != "" {
			continue
		}
		inThread[mentionKey(m)] = true
		if m.HasTime {
			k := m
			k.Day = time.Time{}
			inThread[mentionKey(k)] = true
		}
		if !m.Day.IsZero() {
			inThread[mentionKey(Mention{Day: m.Day, Minute: -1})] = true
		}
	}
	return &TimeReading{draft: Mentions(draft, ref, loc), inThread: inThread, loc: loc}
}

// Location is the zone the reading was made in.
func (r *TimeReading) Location() *time.Location { return r.loc }

// Check holds the reading against offered (see CheckTimes).
func (r *TimeReading) Check(offered []Interval, length time.Duration) TimeCheck {
	if length <= 0 {
		length = time.Nanosecond
	}
	var c TimeCheck
	for _, m := range r.draft {
		c.Mentions++
		switch {
		case m.Unread != "":
			c.Unread = append(c.Unread, Problem{Text: m.Text, Why: m.Unread})
		case offeredMention(m, offered, length, r.loc):
			if !r.inThread[mentionKey(m)] {
				c.Fresh = append(c.Fresh, m.Text)
			}
		case r.inThread[mentionKey(m)]:
			c.FromThread = append(c.FromThread, m.Text)
		case m.Day.IsZero():
			c.Undated = append(c.Undated, m.Text)
		default:
			c.Outside = append(c.Outside, m.Text)
		}
	}
	return c
}

func mentionKey(m Mention) string {
	day := ""
	if !m.Day.IsZero() {
		day = m.Day.Format("2006-01-02")
	}
	switch {
	case m.Range:
		return fmt.Sprintf("%s/%d-%d", day, m.Minute, m.End)
	case m.Period:
		return fmt.Sprintf("%s/p%d-%d", day, m.Minute, m.End)
	case m.Until:
		return fmt.Sprintf("%s/-%d", day, m.Minute)
	}
	return fmt.Sprintf("%s/%d", day, m.Minute)
}

func offeredMention(m Mention, offered []Interval, length time.Duration, loc *time.Location) bool {
	if m.Day.IsZero() || m.Unread != "" {
		return false
	}
	wall := func(min int) time.Time {
		return time.Date(m.Day.Year(), m.Day.Month(), m.Day.Day(), min/60, min%60, 0, 0, loc)
	}
	for _, s := range offered {
		st, en := s.Start.In(loc), s.End.In(loc)
		fits := func(a, b time.Time) bool { return !a.Before(st) && !b.After(en) && b.After(a) }
		switch {
		case !m.HasTime: // a day: room for a meeting on it
			if overlap(st, en, wall(0), wall(24*60)) >= length {
				return true
			}
		case m.Period:
			if overlap(st, en, wall(m.Minute), wall(m.End)) >= length {
				return true
			}
		case m.Range:
			if fits(wall(m.Minute), wall(m.End)) {
				return true
			}
		case m.Until:
			if e := wall(m.Minute); fits(e.Add(-length), e) {
				return true
			}
		default:
			if a := wall(m.Minute); fits(a, a.Add(length)) {
				return true
			}
		}
	}
	return false
}

// overlap is how long [a, b) and [c, d) share.
func overlap(a, b, c, d time.Time) time.Duration {
	if c.After(a) {
		a = c
	}
	if d.Before(b) {
		b = d
	}
	if !b.After(a) {
		return 0
	}
	return b.Sub(a)
}

func sameDay(a, b time.Time) bool {
	return a.Year() == b.Year() && a.Month() == b.Month() && a.Day() == b.Day()
}

// FormatSlots renders slots for the drafting prompt, one per line, in
// loc: "Tue 31 Mar 2026 09:00–10:00 (Europe/Berlin)".
func FormatSlots(slots []Interval, loc *time.Location) string {
	var b strings.Builder
	for _, s := range slots {
		st, en := s.Start.In(loc), s.End.In(loc)
		fmt.Fprintf(&b, "%s–%s (%s)\n", st.Format("Mon 02 Jan 2006 15:04"), en.Format("15:04"), loc)
	}
	return b.String()
}
