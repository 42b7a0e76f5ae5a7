package invite

import (
	"context"
	"fmt"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Calendar invitations (iMIP). Code reads them, code computes their
// conflicts with the owner's calendar, and only the owner answers them
// (RSVP): an invitation is never accepted, declined or answered on its
// own, whatever the mail or the model says.

// BusyCalendar is the optional side of a Calendar that gives the owner's
// busy times (for an invitation's conflicts).
type BusyCalendar interface {
	// Busy leaves out the events with exceptUID (the invitation's own copy
	// when the owner's calendar already holds it).
	Busy(ctx context.Context, account string, window calendar.Interval, exceptUID string) ([]calendar.Interval, error)
}

// EventWriter is the optional side of a Calendar that stores an event
// on the owner's writable calendar (calendar.Source.PutEvent): with etag
// "" it only creates, with an etag it only replaces that version; a
// refusal wraps calendar.ErrPrecondition. It returns where, with the new
// version's entity tag, or a zero Stored when the account's calendar
// cannot be written.
type EventWriter interface {
	PutEvent(ctx context.Context, account, uid string, data []byte, etag string) (calendar.Stored, error)
}

// EventDeleter is the optional side of a Calendar that removes an event
// mailagent wrote, in the version etag names (calendar.Source.DeleteEvent).
type EventDeleter interface {
	DeleteEvent(ctx context.Context, account, uid, path, etag string) error
}

// ReasonInvitation is the queue reason of every message with an
// invitation (agent's decision step adds it).
const ReasonInvitation = "calendar invitation: only you answer it (mailagent queue rsvp ID accept|decline|tentative)"

// Read parses the invitation of a raw message onto rec (rec.Invitation),
// with its conflicts with the owner's calendar, computed by code. A
// broken one is a problem recorded on the message, never a failure.
func (h *Handler) Read(ctx context.Context, rec *store.MessageRecord, m *mail.Message, raw []byte) {
	if !m.Calendar {
		return // no part an invitation could be in (mail.Message.Calendar)
	}
	inv, err := calendar.ParseInvitation(raw)
	if err != nil {
		rec.Problems = append(rec.Problems, "calendar invitation not read: "+err.Error())
		return
	}
	if inv == nil {
		return
	}
	si := &store.Invitation{
		Method: inv.Method, UID: inv.UID, Sequence: inv.Sequence, RecurrenceID: inv.RecurrenceID,
		Summary: inv.Summary, Location: inv.Location, Organizer: inv.Organizer, OrganizerCN: inv.OrganizerCN,
		Start: inv.Start, End: inv.End, AllDay: inv.AllDay, TZID: inv.TZID, Recurring: inv.Recurring,
		ICS: string(inv.ICS), Conflicts: []store.TimeSpan{},
	}
	si.OrganizerVerified, si.OrganizerNote = organizerVerified(inv.Organizer, rec, func(a string) bool { return h.isOwner(rec.Account, a) })
	// The owner's calendar may hold an event with this UID that mailagent
	// wrote for another correspondent's invitation: that is another event
	// (a UID is the sender's text), so it counts as busy time, and the
	// invitation is shown as a UID conflict before anyone answers it.
	except := inv.UID
	other := h.foreignEvent(rec, inv.UID)
	if other != nil {
		except = ""
	}
	si.Conflicts, si.ConflictError = h.conflicts(ctx, rec.Account, inv, except)
	if other != nil && inv.Method == calendar.MethodRequest {
		si.Status = store.InvitationUIDConflict
		si.StatusNote = otherOrganizerNote(other) + "; an answer to this one goes to its organizer by mail only"
	}
	rec.Invitation = si
}

// foreignEvent is the item holding the event mailagent wrote for another
// correspondent's invitation with uid when none was written for rec's
// own correspondent (writtenEvent); nil otherwise, or without a queue.
func (h *Handler) foreignEvent(rec *store.MessageRecord, uid string) *store.QueueItem {
	if h.Queue == nil || uid == "" {
		return nil
	}
	own, other := h.writtenEvent(rec, uid, "")
	if own != nil {
		return nil
	}
	return other
}

// organizerVerified is the rule for where a REPLY may go: the ORGANIZER
// must be the sender the owner's server authenticated for rec (not merely
// an address on its domain: any stranger at a large provider shares it;
// store.AuthenticatedAs), and never one of the owner's own addresses.
// Anything else would let a mail make the owner's client write to an
// address the mail chose.
func organizerVerified(organizer string, rec *store.MessageRecord, isOwner func(string) bool) (bool, string) {
	identity := rec.SenderAuth.Identity()
	switch {
	case organizer == "":
		return false, "the invitation names no organizer address"
	case isOwner(organizer):
		return false, "the organizer is you"
	case store.AuthenticatedAs(rec, organizer):
		return true, ""
	case identity == "":
		return false, "the sender is not authenticated, so the organizer " + organizer + " cannot be trusted"
	}
	return false, fmt.Sprintf("the organizer %s is not the authenticated sender %s", organizer, identity)
}

// conflicts computes the busy times overlapping the invitation, by code;
// events with exceptUID (the invitation's own copy) are not counted.
func (h *Handler) conflicts(ctx context.Context, account string, inv *calendar.Invitation, exceptUID string) ([]store.TimeSpan, string) {
	out := []store.TimeSpan{}
	if inv.Method != calendar.MethodRequest && inv.Method != calendar.MethodCounter {
		return out, ""
	}
	bc, ok := h.Calendar.(BusyCalendar)
	if !ok || h.Calendar == nil {
		return out, "no calendar configured"
	}
	occ, err := inv.Occurrences()
	if err != nil {
		return out, err.Error()
	}
	if len(occ) == 0 {
		return out, ""
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	busy, err := bc.Busy(ctx, account, calendar.Interval{Start: occ[0].Start, End: occ[len(occ)-1].End}, exceptUID)
	if err != nil {
		return out, "calendar not read: " + err.Error()
	}
	c, err := inv.Conflicts(busy)
	if err != nil {
		return out, err.Error()
	}
	for _, iv := range c {
		out = append(out, store.TimeSpan{Start: iv.Start, End: iv.End})
	}
	return out, ""
}
