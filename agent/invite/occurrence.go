package invite

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/store"
)

// Changes to one occurrence of a recurring invitation: a CANCEL or a
// REQUEST whose VEVENTs carry a RECURRENCE-ID (what Google Calendar,
// Outlook and Thunderbird send when the organizer deletes or drags one
// instance of a weekly meeting). Code applies them to the series on the
// owner's calendar, the event mailagent wrote when the owner answered
// the invitation: a cancelled occurrence becomes an EXDATE, a moved one
// an override (calendar.ApplyOccurrences), written back with If-Match on
// the version just read, so a change another client made meanwhile is
// never overwritten. Only the series' ORGANIZER, as the owner's server
// authenticated the sender, can do this; a moved occurrence is written
// with the PARTSTAT the organizer sent (never "accepted" by code) and
// queued for the owner to answer like any invitation.

// EventReader is the optional side of a Calendar that reads the event
// mailagent stores for uid (calendar.Source.GetEvent) with the entity tag
// of that version; a missing event wraps calendar.ErrEventGone. loc is
// the zone of the owner's floating times.
type EventReader interface {
	GetEvent(ctx context.Context, account, uid string) (data []byte, st calendar.Stored, loc *time.Location, err error)
}

// occurrenceIDs are the RECURRENCE-IDs of the message's VEVENTs.
func occurrenceIDs(inv *store.Invitation) []string {
	ids := calendar.OccurrenceIDs([]byte(inv.ICS), inv.UID)
	if len(ids) == 0 && inv.RecurrenceID != "" {
		ids = []string{inv.RecurrenceID}
	}
	return ids
}

// applyOccurrences applies the occurrence changes of rec's invitation to
// the series on the owner's calendar and records them on it
// (Invitation.Occurrences). It returns what happened in words.
func (h *Handler) applyOccurrences(ctx context.Context, rec *store.MessageRecord) string {
	inv := rec.Invitation
	identity := rec.SenderAuth.Identity()
	switch {
	case !store.AuthenticatedAs(rec, inv.Organizer) && identity == "":
		return "the changed occurrences were not applied: the sender is not authenticated, so the organizer " + noteText(inv.Organizer) + " cannot be trusted"
	case !inv.OrganizerVerified || !store.AuthenticatedAs(rec, inv.Organizer):
		return fmt.Sprintf("the changed occurrences were not applied: the organizer %q is not the authenticated sender %s", noteText(inv.Organizer), identity)
	}
	msg, err := calendar.ParseICS([]byte(inv.ICS), inv.Method)
	if err != nil {
		return "the changed occurrences were not applied: " + err.Error()
	}
	changes, note := h.changeSeries(ctx, rec, msg)
	for _, c := range changes {
		inv.Occurrences = append(inv.Occurrences, occurrenceRecord(c, inv.Summary))
	}
	var words []string
	for _, o := range inv.Occurrences {
		words = append(words, o.Text)
	}
	if note != "" {
		words = append(words, note)
	}
	return strings.Join(words, "; ")
}

// changeSeries reads the series msg is about from rec's account's
// calendar, applies msg's occurrence changes and writes it back with
// If-Match. The series is the event mailagent wrote for rec's organizer
// (writtenEvent: the same authenticated correspondent, at the path it
// wrote); one written for another correspondent's invitation with the
// same UID is never read or written. The item holding the event keeps
// holding it (its ETag moves on) when it held the version read. note
// says what kept the changes off the calendar, "" when they went there.
func (h *Handler) changeSeries(ctx context.Context, rec *store.MessageRecord, msg *calendar.Invitation) ([]calendar.OccurrenceChange, string) {
	account := rec.Account
	r, rok := h.Calendar.(EventReader)
	w, wok := h.Calendar.(EventWriter)
	if !rok || !wok || h.Calendar == nil {
		return nil, "mailagent cannot read and write your calendar: change the series in your calendar client"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Messages about the same series (a CANCEL and a move handled side by
	// side by the run pool, an answer going out) take turns, so that each
	// reads what the other wrote and the item holding the series follows
	// every version mailagent writes.
	mu := seriesLock(account, msg.UID)
	mu.Lock()
	defer mu.Unlock()
	var changes []calendar.OccurrenceChange
	var note string
	// A refused write (another client, or another message about the same
	// series, wrote it since it was read) is never overwritten: the new
	// version is read again and the change applied on top of it.
	for range MaxSeriesAttempts {
		var conflict bool
		changes, note, conflict = h.changeSeriesOnce(ctx, r, w, rec, msg)
		if !conflict {
			break
		}
	}
	return changes, note
}

// seriesLocks serialize changeSeries per series (striped by a hash of
// account and UID: a fixed set, nothing to clean up).
var seriesLocks [64]sync.Mutex

func seriesLock(account, uid string) *sync.Mutex {
	h := fnv.New32a()
	_, _ = h.Write([]byte(account + "\x00" + uid)) // a hash.Hash never fails to write
	return &seriesLocks[h.Sum32()%uint32(len(seriesLocks))]
}

// MaxSeriesAttempts bounds the read-apply-write rounds of changeSeries.
const MaxSeriesAttempts = 3

// changeSeriesOnce is one round of changeSeries; conflict reports a
// write refused because the series changed since it was read.
func (h *Handler) changeSeriesOnce(ctx context.Context, r EventReader, w EventWriter, rec *store.MessageRecord,
	msg *calendar.Invitation) (_ []calendar.OccurrenceChange, _ string, conflict bool) {
	account := rec.Account
	holder, other := h.writtenEvent(rec, msg.UID, "")
	switch {
	case holder == nil && other != nil:
		return nil, otherOrganizerNote(other) + ": nothing changed", false
	case holder == nil:
		return nil, "the series is not on your calendar (mailagent changes only the event it wrote when you answered the invitation): nothing changed", false
	}
	stored, st, loc, err := r.GetEvent(ctx, account, msg.UID)
	switch {
	case errors.Is(err, calendar.ErrEventGone):
		return nil, "the series is not on your calendar (mailagent changes only the event it wrote when you answered the invitation): nothing changed", false
	case err != nil:
		return nil, "your calendar was not read (" + err.Error() + "): nothing changed", false
	case st.Path == "":
		return nil, "no writable calendar for this account: nothing changed", false
	case st.Path != holder.Invitation.CalendarPath:
		return nil, "the event read is not the one mailagent wrote at " + holder.Invitation.CalendarPath + ": nothing changed", false
	}
	data, changes, err := calendar.ApplyOccurrences(stored, msg, loc)
	switch {
	case errors.Is(err, calendar.ErrNotOrganizer):
		return nil, "the series on your calendar was organized by someone else: nothing changed", false
	case errors.Is(err, calendar.ErrNoSeries):
		return nil, "the event on your calendar is not a recurring series with this UID: nothing changed", false
	case err != nil:
		return nil, "not applied: " + err.Error(), false
	case data == nil:
		return changes, "", false
	}
	put, err := w.PutEvent(ctx, account, msg.UID, data, st.ETag)
	if err != nil {
		for i := range changes {
			if changes[i].Applied {
				changes[i].Applied, changes[i].Note = false, "not written to your calendar"
			}
		}
		if errors.Is(err, calendar.ErrPrecondition) {
			return changes, "the event on your calendar changed while mailagent was applying this (another client wrote it): not overwritten; change that occurrence in your calendar client", true
		}
		return changes, "your calendar was not updated: " + err.Error(), false
	}
	if holder.Invitation.CalendarETag == st.ETag {
		_, terr := h.Queue.TransitionQueueItem(holder.ID, []string{holder.Status}, holder.Status, func(it *store.QueueItem) error {
			if it.Invitation.CalendarETag == st.ETag {
				it.Invitation.CalendarETag = put.ETag
			}
			return nil
		})
		if terr != nil {
			h.logger().Warn("invitation: new calendar version not recorded", "item", holder.ID, "err", terr)
		}
	}
	return changes, "", false
}

// occurrenceRecord is a change as the queue item keeps it, with its
// words: "cancels the occurrence on Tue 10 March 14:00 of 'Weekly sync'".
func occurrenceRecord(c calendar.OccurrenceChange, summary string) store.OccurrenceChange {
	o := store.OccurrenceChange{Kind: c.Kind, RecurrenceID: noteText(c.RecurrenceID), Start: c.Start, AllDay: c.AllDay,
		NewStart: c.NewStart, NewEnd: c.NewEnd, Applied: c.Applied, Note: noteText(c.Note)}
	when := "at " + o.RecurrenceID
	if !c.Start.IsZero() {
		when = "on " + occurrenceTime(c.Start, c.AllDay)
	}
	title := "'" + noteText(summary) + "'"
	if summary == "" {
		title = "the series"
	}
	switch c.Kind {
	case calendar.OccurrenceCancelled:
		o.Text = fmt.Sprintf("cancels the occurrence %s of %s", when, title)
	case calendar.OccurrenceCancelledFrom:
		o.Text = fmt.Sprintf("cancels the occurrences from %s on of %s", when, title)
	default:
		o.Text = fmt.Sprintf("moves the occurrence %s of %s", when, title)
		if !c.NewStart.IsZero() {
			o.Text += " to " + occurrenceTime(c.NewStart.In(c.Start.Location()), false) + "–" + c.NewEnd.In(c.Start.Location()).Format("15:04")
		}
	}
	switch {
	case c.Applied && c.Note != "":
		o.Text += " (" + o.Note + ")"
	case c.Applied:
		o.Text += ": done on your calendar"
	default:
		o.Text += ": not applied, " + o.Note
	}
	return o
}

func occurrenceTime(t time.Time, allDay bool) string {
	if allDay {
		return t.Format("Mon 2 January 2006")
	}
	return t.Format("Mon 2 January 2006 15:04 MST")
}
