package invite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// ErrOrganizerUnverified is returned by RSVP when the invitation's
// ORGANIZER is not an address code may send to (organizerVerified).
var ErrOrganizerUnverified = errors.New("the organizer is not verified")

// RSVPAnswers maps the command's words to PARTSTAT values.
var RSVPAnswers = map[string]string{
	"accept": calendar.PartStatAccepted, "decline": calendar.PartStatDeclined, "tentative": calendar.PartStatTentative,
}

// RSVP answers the invitation of a queue item for the owner: an iTIP
// REPLY (METHOD:REPLY, the owner's ATTENDEE with the PARTSTAT, the same
// UID, SEQUENCE and RECURRENCE-ID) mailed to the ORGANIZER through the
// outbox, like an approval: with policy.approval_delay it waits in the
// undo window (Cancel with the item's id takes it back). Once the REPLY
// is sent, a writable calendar gets the event with the owner's PARTSTAT
// (Sent). It is the only path that answers an invitation, and it
// runs only on the owner's command.
//
// The REPLY goes to the ORGANIZER only when it is verified: the sender
// the owner's server authenticated, or on its domain (organizerVerified).
func (h *Handler) RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error) {
	partStat, ok := RSVPAnswers[strings.ToLower(answer)]
	if !ok {
		return nil, fmt.Errorf("rsvp %s: answer %q: use accept, decline or tentative", id, answer)
	}
	cur, err := h.Queue.GetQueueItem(id)
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	inv := cur.Invitation
	if inv == nil || inv.Method != calendar.MethodRequest {
		return nil, fmt.Errorf("%w: %s carries no invitation to answer", outbox.ErrNotActionable, id)
	}
	if !slices.Contains(outbox.OpenStatuses, cur.Status) {
		return nil, h.notActionable(id)
	}
	if !inv.OrganizerVerified {
		return nil, fmt.Errorf("rsvp %s: %w: %s", id, ErrOrganizerUnverified, inv.OrganizerNote)
	}
	from := h.sender(cur.Account)
	ci, err := calendar.ParseICS([]byte(inv.ICS), inv.Method)
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	ics, err := ci.Reply(from.Email, partStat, h.now())
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	r := h.Host.Reply(cur)
	r.To, r.Cc = []mail.Address{{Name: inv.OrganizerCN, Email: inv.Organizer}}, nil
	r.Body = rsvpText(from, partStat, inv)
	r.Calendar, r.CalendarMethod = ics, calendar.MethodReply
	r.MessageID = h.Host.NewMessageID(cur.Account)
	raw, msgID, err := compose.Build(r)
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	obID := outbox.ApprovalID(cur.ID)
	ob := &store.OutboxRecord{
		ID: obID, Account: cur.Account, From: from.Email, MessageID: msgID, QueueID: cur.ID,
		InReplyTo: cur.MessageID, To: []string{inv.Organizer}, Raw: raw,
		CreatedAt: h.now(), Message: cur.Message, Subject: cur.Subject, Body: r.Body,
	}
	if err := h.Host.Schedule(ob, ob.CreatedAt, h.ApprovalDelay); err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	item, _, err := h.Queue.ApproveQueueItem(id, outbox.OpenStatuses, func(q *store.QueueItem) error {
		if !q.UpdatedAt.Equal(cur.UpdatedAt) {
			return fmt.Errorf("%s changed while it was being answered: %w", id, store.ErrConflict)
		}
		q.DraftMessageID, q.Error = msgID, ""
		q.Invitation.RSVP = partStat
		return nil
	}, ob)
	if errors.Is(err, store.ErrConflict) {
		return nil, h.notActionable(id)
	}
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	if ob.Status == store.OutboxScheduled {
		h.notify("scheduled", obID, cur.Account)
		return item, nil
	}
	if err := h.Host.Deliver(ctx, obID); err != nil {
		return item, err
	}
	if q, err := h.Queue.GetQueueItem(id); err == nil {
		item = q
	}
	return item, nil
}

// rsvpText is the plain-text part of a REPLY.
func rsvpText(from mail.Address, partStat string, inv *store.Invitation) string {
	who := from.Name
	if who == "" {
		who = from.Email
	}
	verb := map[string]string{calendar.PartStatAccepted: "accepted", calendar.PartStatDeclined: "declined",
		calendar.PartStatTentative: "tentatively accepted"}[partStat]
	return fmt.Sprintf("%s has %s the invitation: %s", who, verb, inv.Summary)
}

// Sent runs after an outbox record was sent (the outbox's Sent hook): when it was the REPLY
// to an invitation and the account's calendar can be written, the event
// goes there with the owner's PARTSTAT. The write is conditional: a
// first answer creates the event (If-None-Match: *), an answer to an
// update of an invitation answered before replaces the version that
// earlier answer wrote (If-Match with its ETag, taken over by this item).
// A failure is recorded on the item (the REPLY is out; the owner can add
// the event by hand); a refused precondition (someone else changed the
// event) is also queued for the owner and never retried. An invitation
// cancelled while its REPLY was going out is not written, or removed
// again at once.
func (h *Handler) Sent(ob *store.OutboxRecord) {
	w, ok := h.Calendar.(EventWriter)
	if !ok || ob.QueueID == "" || ob.ID != outbox.ApprovalID(ob.QueueID) {
		return
	}
	item, err := h.Queue.GetQueueItem(ob.QueueID)
	if err != nil || item.Invitation == nil || item.Invitation.RSVP == "" || item.Invitation.CalendarPath != "" ||
		item.Invitation.Status == store.InvitationCancelled {
		return
	}
	inv := item.Invitation
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := h.messageOf(item)
	if err != nil {
		h.recordCalendarOutcome(item, "", fmt.Sprintf("your answer was not written to your calendar: its message is not readable (%v)", err))
		return
	}
	prior, other := h.writtenEvent(rec, inv.UID, item.ID)
	if prior == nil && other != nil {
		// The UID names an event written for someone else's invitation:
		// the answer went out by mail; the calendar is left alone.
		h.uidConflict(item, other)
		return
	}
	if inv.RecurrenceID != "" && prior != nil && prior.Invitation.RecurrenceID == "" {
		h.rsvpOccurrence(ctx, rec, item, prior)
		return
	}
	etag := ""
	if prior != nil && prior.Invitation.RecurrenceID == inv.RecurrenceID {
		etag = prior.Invitation.CalendarETag
	}
	var st calendar.Stored
	ci, err := calendar.ParseICS([]byte(inv.ICS), inv.Method)
	if err == nil {
		var data []byte
		if data, err = ci.Accepted(h.sender(item.Account).Email, inv.RSVP); err == nil {
			st, err = w.PutEvent(ctx, item.Account, inv.UID, data, etag)
		}
	}
	if st.Path == "" && err == nil {
		return // no writable calendar for this account
	}
	updated, terr := h.Queue.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		if q.Invitation != nil {
			q.Invitation.CalendarPath, q.Invitation.CalendarETag = st.Path, st.ETag
			if err != nil {
				q.Invitation.CalendarError = CalendarWriteError(err)
			}
		}
		return nil
	})
	if err == nil && prior != nil && etag != "" {
		h.handOver(prior, item.ID)
	}
	if errors.Is(err, calendar.ErrPrecondition) {
		h.QueueCalendarConflict(item, CalendarWriteError(err))
	}
	if err != nil || terr != nil {
		h.logger().Warn("rsvp: calendar not updated", "item", item.ID, "err", errors.Join(err, terr))
	}
	if terr == nil && err == nil && updated.Invitation != nil && updated.Invitation.Status == store.InvitationCancelled {
		// The organizer's CANCEL was applied while this event was being
		// written: it found no event to remove, so it goes now.
		h.removeWritten(ctx, updated)
	}
}

// CalendarWriteError is how a failed calendar write reads on an item (or
// a notice): a refused precondition says another client changed the event.
func CalendarWriteError(err error) string {
	if errors.Is(err, calendar.ErrPrecondition) {
		return "the event on your calendar was changed by another client since mailagent wrote it; mailagent did not overwrite it " +
			"(update it in your calendar client): " + err.Error()
	}
	return err.Error()
}

// rsvpOccurrence writes the owner's answer to one occurrence of a series
// whose event mailagent wrote (prior holds it) into that series, as the
// override of that occurrence with the owner's PARTSTAT (changeSeries:
// If-Match on the version read), instead of a second event with the
// same UID. The outcome is recorded on item.
func (h *Handler) rsvpOccurrence(ctx context.Context, rec *store.MessageRecord, item, prior *store.QueueItem) {
	inv := item.Invitation
	note := ""
	ci, err := calendar.ParseICS([]byte(inv.ICS), inv.Method)
	var data []byte
	if err == nil {
		data, err = ci.Accepted(h.sender(item.Account).Email, inv.RSVP)
	}
	var msg *calendar.Invitation
	if err == nil {
		msg, err = calendar.ParseICS(data, calendar.MethodRequest)
	}
	if err != nil {
		note = "your answer was not written to your calendar: " + err.Error()
	} else {
		changes, why := h.changeSeries(ctx, rec, msg)
		note = why
		for _, c := range changes {
			if !c.Applied {
				note = strings.TrimPrefix(note+"; your answer was not written to your calendar: "+noteText(c.Note), "; ")
			}
		}
	}
	_, terr := h.Queue.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		q.Invitation.CalendarPath = prior.Invitation.CalendarPath // the series holds the answer
		q.Invitation.CalendarError = note
		return nil
	})
	if terr != nil || note != "" {
		h.logger().Warn("rsvp: occurrence not written to the series", "item", item.ID, "note", note, "err", terr)
	}
}

// uidConflict records on item that its invitation's UID names an event
// mailagent wrote for another correspondent's invitation (other): the
// item's status says so (queue show, the review detail, --json), a
// notice is queued, and nothing on the calendar is read or written.
func (h *Handler) uidConflict(item, other *store.QueueItem) {
	note := otherOrganizerNote(other) + "; your answer went to the organizer by mail only"
	_, err := h.Queue.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		if q.Invitation != nil {
			q.Invitation.Status, q.Invitation.StatusNote = store.InvitationUIDConflict, note
			q.Invitation.CalendarError = note
		}
		return nil
	})
	if err != nil {
		h.logger().Warn("rsvp: conflict not recorded", "item", item.ID, "err", err)
	}
	h.QueueCalendarConflict(item, note)
	h.notify("queue_updated", item.ID, item.Account)
}

// recordCalendarOutcome records why item's event was not written.
func (h *Handler) recordCalendarOutcome(item *store.QueueItem, path, why string) {
	_, err := h.Queue.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		if q.Invitation != nil {
			q.Invitation.CalendarPath, q.Invitation.CalendarError = path, why
		}
		return nil
	})
	if err != nil {
		h.logger().Warn("rsvp: calendar outcome not recorded", "item", item.ID, "err", err)
	}
}
