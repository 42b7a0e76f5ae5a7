package invite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Changes to an invitation the owner already has: a CANCEL (RFC 5546
// 3.2.5) and a REQUEST with a higher SEQUENCE (an update, 3.2.2). Code
// applies them to the earlier invitation's queue item and to the event
// mailagent wrote for it, and only when the mail comes from that
// invitation's organizer as the owner's server authenticated it
// (SenderAuth, never the From text), for the same UID, with a SEQUENCE
// no older than the newest one known. Everything else is shown, never
// applied. mailagent only ever removes the one event version it wrote
// itself (the item holding its CalendarETag); a calendar the owner or
// another client changed since is left alone.

// ReasonInvitationCancelled is the queue reason of a message that
// cancels an invitation.
const ReasonInvitationCancelled = "calendar: the organizer cancelled an invitation (see what mailagent did about it in the item's detail)"

// Apply applies rec's invitation to the earlier copies of it: a CANCEL
// (applyCancel) or a REQUEST with a higher SEQUENCE (applyUpdate), and
// the occurrence changes of a series (applyOccurrences). It returns what
// it did in words ("" when nothing applies), which the caller keeps on
// the invitation (Invitation.Applied) and in its trace; an error means
// the earlier copies could not be read. Only mail whose authenticated
// sender is the organizer of the earlier copies, of the same
// correspondent (store.MayResolve), changes anything.
func (h *Handler) Apply(ctx context.Context, rec *store.MessageRecord) (string, error) {
	inv := rec.Invitation
	if inv == nil || inv.UID == "" || h.Queue == nil || (inv.Method != calendar.MethodCancel && inv.Method != calendar.MethodRequest) {
		return "", nil
	}
	var applied string
	var err error
	if inv.Method == calendar.MethodCancel {
		applied, err = h.applyCancel(ctx, rec)
	} else {
		applied, err = h.applyUpdate(ctx, rec)
	}
	if inv.RecurrenceID != "" && err == nil && len(inv.Occurrences) == 0 {
		// One or more occurrences of a series (occurrence.go).
		applied = strings.TrimSuffix(h.applyOccurrences(ctx, rec)+"; "+applied, "; ")
	}
	return applied, err
}

// invitationItems returns the queue items of account that carry a
// REQUEST with uid, except the one of message self.
func (h *Handler) invitationItems(account, uid string, self store.MessageKey) ([]*store.QueueItem, error) {
	var out []*store.QueueItem
	err := h.Queue.ListQueue("", func(q *store.QueueItem) error {
		if q.Account == account && q.Message != self && q.Invitation != nil &&
			q.Invitation.Method == calendar.MethodRequest && q.Invitation.UID == uid {
			out = append(out, q)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find the invitation %s: %w", uid, err)
	}
	return out, nil
}

// newestSequence is the highest SEQUENCE among the items of rec's own
// correspondent (sameOrganizer) whose organizer was verified and is
// organizer (a spoofed REQUEST, another authenticated sender's REQUEST
// naming itself organizer of the same UID, or a colleague on the
// organizer's domain naming the organizer, with a huge SEQUENCE, must not
// make the real organizer's CANCEL look stale), and the item that has it.
func (h *Handler) newestSequence(rec *store.MessageRecord, items []*store.QueueItem, organizer string) (int, string) {
	seq, id := -1, ""
	for _, q := range items {
		if q.Invitation.OrganizerVerified && mail.SameAddr(q.Invitation.Organizer, organizer) && q.Invitation.Sequence > seq &&
			h.sameOrganizer(rec, q) {
			seq, id = q.Invitation.Sequence, q.ID
		}
	}
	return seq, id
}

// fromOrganizer says why rec cannot change the invitation of item q (""
// when it can): its sender must be authenticated, be rec's ORGANIZER, and
// be q's organizer too (store.AuthenticatedAs, the identity layer's
// rule, so that its test switch covers this check as well).
func fromOrganizer(rec *store.MessageRecord, q *store.QueueItem) string {
	inv, identity := rec.Invitation, rec.SenderAuth.Identity()
	switch {
	case !store.AuthenticatedAs(rec, inv.Organizer) && identity == "":
		return "the sender is not authenticated, so the organizer " + inv.Organizer + " cannot be trusted"
	case !store.AuthenticatedAs(rec, inv.Organizer):
		return fmt.Sprintf("the organizer %q is not the authenticated sender %s", noteText(inv.Organizer), identity)
	case !store.AuthenticatedAs(rec, q.Invitation.Organizer):
		return fmt.Sprintf("%s was organized by %s, not by the sender %s", q.ID, q.Invitation.Organizer, identity)
	}
	return ""
}

// applyCancel applies a CANCEL: every earlier copy of the invitation is
// marked cancelled; one still waiting is resolved (no RSVP goes out),
// one whose REPLY waits in the undo window has it cancelled, and the
// event mailagent wrote for it is removed from the calendar.
func (h *Handler) applyCancel(ctx context.Context, rec *store.MessageRecord) (string, error) {
	inv := rec.Invitation
	items, err := h.invitationItems(rec.Account, inv.UID, rec.MessageKey)
	if err != nil {
		return "", err
	}
	if len(items) == 0 && inv.RecurrenceID != "" {
		return "", nil // the series on the calendar is applyOccurrences'
	}
	if len(items) == 0 {
		return "no invitation with this UID came through mailagent: nothing changed", nil
	}
	if seq, id := h.newestSequence(rec, items, inv.Organizer); inv.Sequence < seq {
		return fmt.Sprintf("not applied: its SEQUENCE %d is older than the invitation's current one (%d, %s)", inv.Sequence, seq, id), nil
	}
	rids := occurrenceIDs(inv)
	var notes []string
	for _, q := range items {
		if why := fromOrganizer(rec, q); why != "" {
			notes = append(notes, "not applied to "+q.ID+": "+why)
			continue
		}
		if !h.sameOrganizer(rec, q) {
			notes = append(notes, "not applied to "+q.ID+": it came from another correspondent (the same UID is another event)")
			continue
		}
		switch qr := q.Invitation.RecurrenceID; {
		case inv.RecurrenceID == "", slices.Contains(rids, qr):
		default:
			// Another occurrence, or the series: the series on the
			// calendar keeps the rest (applyOccurrences).
			continue
		}
		notes = append(notes, h.cancelOne(ctx, rec, q))
	}
	return strings.Join(notes, "; "), nil
}

// cancelOne applies a verified CANCEL to item q.
func (h *Handler) cancelOne(ctx context.Context, rec *store.MessageRecord, q *store.QueueItem) string {
	st := h.Queue
	what := []string{}
	if q.Status == store.QueueApproved {
		err := h.Host.Cancel(ctx, q.ID)
		switch {
		case err == nil:
			what = append(what, "its "+strings.ToLower(q.Invitation.RSVP)+" REPLY, still in the undo window, was cancelled")
		case errors.Is(err, outbox.ErrNotActionable):
			// Too late: the REPLY is out; the event may be written.
		default:
			return q.ID + ": the REPLY in the undo window was not cancelled: " + err.Error()
		}
		if cur, err := st.GetQueueItem(q.ID); err == nil {
			q = cur
		}
	}
	note := fmt.Sprintf("cancelled by the organizer (message <%s>, SEQUENCE %d)", noteText(rec.MessageID), rec.Invitation.Sequence)
	to := q.Status
	if slices.Contains(outbox.OpenStatuses, q.Status) {
		to = store.QueueResolved
		what = append(what, "no RSVP will be sent for it")
	}
	// Marked first, so that a REPLY sent meanwhile writes no event
	// (Sent checks the mark, and removes what it wrote after it).
	cur, err := st.TransitionQueueItem(q.ID, []string{q.Status}, to, func(it *store.QueueItem) error {
		if it.Invitation.Status != store.InvitationCancelled { // else applied before: its note stays
			it.Invitation.Status, it.Invitation.StatusNote = store.InvitationCancelled, note
		}
		if to != it.Status {
			it.Reasons = append(it.Reasons, "the organizer cancelled this invitation")
		}
		return nil
	})
	if err != nil {
		return q.ID + ": not marked cancelled: " + err.Error()
	}
	if to != q.Status {
		h.Host.DropDraft(ctx, cur) // the reply drafted for it is moot
	}
	h.notify("queue_updated", cur.ID, cur.Account)
	if cur, err = st.GetQueueItem(q.ID); err != nil {
		return q.ID + ": marked cancelled; " + err.Error()
	}
	if r := h.removeWritten(ctx, cur); r != "" {
		what = append(what, r)
	}
	if len(what) == 0 {
		what = append(what, "marked cancelled")
	}
	return q.ID + ": " + strings.Join(what, ", ")
}

// removeWritten removes the event mailagent wrote for item q (the one
// holding its ETag), in exactly that version, and records the outcome on
// q. It returns what happened, "" when q holds no event.
func (h *Handler) removeWritten(ctx context.Context, q *store.QueueItem) string {
	inv := q.Invitation
	if inv == nil || inv.CalendarETag == "" || inv.CalendarPath == "" {
		return ""
	}
	d, ok := h.Calendar.(EventDeleter)
	if !ok {
		return "mailagent cannot write this calendar any more: remove the event " + inv.CalendarPath + " yourself"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := d.DeleteEvent(ctx, q.Account, inv.UID, inv.CalendarPath, inv.CalendarETag)
	var out string
	switch {
	case err == nil:
		out = "the event mailagent wrote was removed from your calendar"
	case errors.Is(err, calendar.ErrEventGone):
		out, err = "the event mailagent wrote was already gone from your calendar", nil
	case errors.Is(err, calendar.ErrPrecondition):
		out = "the event on your calendar was changed by another client since mailagent wrote it, so mailagent did not remove it: remove it yourself if the meeting is off"
	default:
		out = "the event mailagent wrote was not removed (" + err.Error() + "): remove it yourself"
	}
	_, terr := h.Queue.TransitionQueueItem(q.ID, []string{q.Status}, q.Status, func(it *store.QueueItem) error {
		if err == nil {
			it.Invitation.CalendarETag = "" // nothing of mailagent's is left there
		} else {
			it.Invitation.CalendarError = out
		}
		it.Invitation.StatusNote = strings.TrimPrefix(it.Invitation.StatusNote+"; "+out, "; ")
		return nil
	})
	if terr != nil {
		h.logger().Warn("invitation: outcome not recorded", "item", q.ID, "err", terr)
	}
	return out
}

// applyUpdate applies a REQUEST with a higher SEQUENCE than the copies
// of the invitation mailagent has: each earlier copy is marked
// superseded; one still waiting is resolved, and one whose REPLY waits
// in the undo window has it cancelled (it answers the old version). The
// new message is queued like any invitation, so the owner answers again;
// that answer replaces the event an earlier answer wrote (Sent).
func (h *Handler) applyUpdate(ctx context.Context, rec *store.MessageRecord) (string, error) {
	inv := rec.Invitation
	items, err := h.invitationItems(rec.Account, inv.UID, rec.MessageKey)
	if err != nil || len(items) == 0 {
		return "", err
	}
	var notes []string
	for _, q := range items {
		qi := q.Invitation
		if qi.RecurrenceID != inv.RecurrenceID || !qi.OrganizerVerified {
			continue // another occurrence, or a copy nobody vouched for (rsvp refuses it anyway)
		}
		if qi.Status == store.InvitationSuperseded && strings.Contains(qi.StatusNote, "<"+noteText(rec.MessageID)+">") {
			notes = append(notes, "updates "+q.ID+" (applied before)") // a resumed message
			continue
		}
		if qi.Status != "" && qi.Status != store.InvitationUIDConflict {
			continue // cancelled or superseded already
		}
		answered := "still waiting for your answer"
		if qi.RSVP != "" {
			answered = "answered " + qi.RSVP
		}
		if inv.Sequence <= qi.Sequence {
			notes = append(notes, fmt.Sprintf("not an update of %s (%s): its SEQUENCE %d is not newer than %d", q.ID, answered, inv.Sequence, qi.Sequence))
			continue
		}
		if why := fromOrganizer(rec, q); why != "" {
			notes = append(notes, fmt.Sprintf("claims to update %s (%s) but %s: nothing changed there", q.ID, answered, why))
			continue
		}
		if !h.sameOrganizer(rec, q) {
			notes = append(notes, fmt.Sprintf("names the UID of %s (%s), which came from another correspondent: nothing changed there", q.ID, answered))
			continue
		}
		notes = append(notes, h.supersede(ctx, rec, q, answered))
	}
	return strings.Join(notes, "; "), nil
}

// supersede marks item q as replaced by the update rec.
func (h *Handler) supersede(ctx context.Context, rec *store.MessageRecord, q *store.QueueItem, answered string) string {
	st := h.Queue
	what := fmt.Sprintf("updates %s (%s, SEQUENCE %d → %d): answer this one", q.ID, answered, q.Invitation.Sequence, rec.Invitation.Sequence)
	if q.Status == store.QueueApproved {
		err := h.Host.Cancel(ctx, q.ID)
		switch {
		case err == nil:
			what += "; the REPLY to the old version, still in the undo window, was cancelled"
		case !errors.Is(err, outbox.ErrNotActionable):
			return what + "; the REPLY to the old version was not cancelled: " + err.Error()
		}
		if cur, err := st.GetQueueItem(q.ID); err == nil {
			q = cur
		}
	}
	to := q.Status
	if slices.Contains(outbox.OpenStatuses, q.Status) {
		to = store.QueueResolved
	}
	note := fmt.Sprintf("replaced by the update in message <%s> (SEQUENCE %d)", noteText(rec.MessageID), rec.Invitation.Sequence)
	cur, err := st.TransitionQueueItem(q.ID, []string{q.Status}, to, func(it *store.QueueItem) error {
		it.Invitation.Status, it.Invitation.StatusNote = store.InvitationSuperseded, note
		if to != it.Status {
			it.Reasons = append(it.Reasons, "the organizer sent an update of this invitation")
		}
		return nil
	})
	if err != nil {
		return what + "; " + q.ID + " not marked: " + err.Error()
	}
	if to != q.Status {
		h.Host.DropDraft(ctx, cur)
	}
	h.notify("queue_updated", cur.ID, cur.Account)
	if q.Invitation.CalendarETag != "" {
		what += "; your answer will replace the event mailagent wrote for the old version"
	}
	return what
}

// writtenEvent finds, among account's items with a REQUEST for uid other
// than exceptID, the ones holding the event mailagent wrote for uid on
// the calendar (its CalendarETag). own is the newest written for rec's
// organizer (sameOrganizer); other is one written for another
// correspondent's invitation with the same UID: a UID is text a sender
// chose, so that event is never read, replaced or removed for rec. Both
// are nil when there is none.
func (h *Handler) writtenEvent(rec *store.MessageRecord, uid, exceptID string) (own, other *store.QueueItem) {
	items, err := h.invitationItems(rec.Account, uid, store.MessageKey{})
	if err != nil {
		h.logger().Warn("invitation: earlier answers not read", "uid", uid, "err", err)
		return nil, nil
	}
	for _, q := range items {
		if q.ID == exceptID || q.Invitation.CalendarETag == "" {
			continue
		}
		switch {
		case !h.sameOrganizer(rec, q):
			other = q
		case own == nil || q.UpdatedAt.After(own.UpdatedAt):
			own = q
		}
	}
	return own, other
}

// sameOrganizer reports whether the invitation in rec may refer to the
// one of item q: q's message is of the same authenticated correspondent
// (store.MayResolve). A calendar UID is sender-written text, so an
// invitation from anyone else with the same UID is another event.
func (h *Handler) sameOrganizer(rec *store.MessageRecord, q *store.QueueItem) bool {
	if rec.MessageKey == q.Message {
		return true
	}
	qrec, err := h.messageOf(q)
	if err != nil {
		return false // nothing says whose it is
	}
	return store.MayResolve(rec, qrec)
}

// messageOf reads the message record of item q.
func (h *Handler) messageOf(q *store.QueueItem) (*store.MessageRecord, error) {
	if h.Messages == nil {
		return nil, fmt.Errorf("message of %s: no message store", q.ID)
	}
	return h.Messages.GetMessage(q.Message)
}

// otherOrganizerNote is how an invitation whose UID names an event
// mailagent wrote for another organizer's invitation reads.
func otherOrganizerNote(other *store.QueueItem) string {
	return fmt.Sprintf("another organizer's invitation with the same UID (%s, organizer %s) holds the event on your calendar: "+
		"mailagent did not read, change or remove it", other.ID, noteText(other.Invitation.Organizer))
}

// handOver moves the record of the written event from prior to the item
// newID, whose answer rewrote it: exactly one item holds an event's ETag.
func (h *Handler) handOver(prior *store.QueueItem, newID string) {
	_, err := h.Queue.TransitionQueueItem(prior.ID, []string{prior.Status}, prior.Status, func(it *store.QueueItem) error {
		it.Invitation.CalendarETag = ""
		it.Invitation.StatusNote = strings.TrimPrefix(it.Invitation.StatusNote+"; the event on your calendar is now kept by "+newID, "; ")
		return nil
	})
	if err != nil {
		h.logger().Warn("invitation: earlier answer not updated", "item", prior.ID, "err", err)
	}
}

// QueueCalendarConflict puts a notice in the queue when the calendar
// refused a write because another client changed the event (HTTP 412):
// the owner decides, mailagent never retries it blindly. base is the
// item (or the message) the write was for.
func (h *Handler) QueueCalendarConflict(base *store.QueueItem, reason string) {
	q := &store.QueueItem{
		ID: base.ID + "_calendar", Kind: store.KindNotify, Account: base.Account, Message: base.Message,
		MessageID: base.MessageID, ThreadID: base.ThreadID, From: base.From, Subject: base.Subject,
		Reasons: []string{"calendar: " + reason}, Status: store.QueuePending,
	}
	if err := h.Host.Enqueue(context.Background(), q); err != nil {
		h.logger().Warn("calendar conflict not queued", "item", base.ID, "err", err)
	}
}

// noteText is mail-borne text as a note quotes it: without control or
// format characters (CR, LF, NUL, escapes, bidi overrides), capped.
func noteText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if r := []rune(s); len(r) > 120 {
		return string(r[:119]) + "…"
	}
	return s
}
