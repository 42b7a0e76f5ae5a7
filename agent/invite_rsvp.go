package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
// (rsvpSent). It is the only path that answers an invitation, and it
// runs only on the owner's command.
//
// The REPLY goes to the ORGANIZER only when it is verified: the sender
// the owner's server authenticated, or on its domain (organizerVerified).
func (p *Pipeline) RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error) {
	a := p.Actor
	partStat, ok := RSVPAnswers[strings.ToLower(answer)]
	if !ok {
		return nil, fmt.Errorf("rsvp %s: answer %q: use accept, decline or tentative", id, answer)
	}
	cur, err := a.Store.GetQueueItem(id)
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	inv := cur.Invitation
	if inv == nil || inv.Method != calendar.MethodRequest {
		return nil, fmt.Errorf("%w: %s carries no invitation to answer", ErrNotActionable, id)
	}
	if !slices.Contains(openStatuses, cur.Status) {
		return nil, notActionable(id, a.Store)
	}
	if !inv.OrganizerVerified {
		return nil, fmt.Errorf("rsvp %s: %w: %s", id, ErrOrganizerUnverified, inv.OrganizerNote)
	}
	acct := p.Accounts[cur.Account]
	ci, err := calendar.ParseICS([]byte(inv.ICS), inv.Method)
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	ics, err := ci.Reply(acct.From.Email, partStat, p.now())
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	r := p.itemReply(cur)
	r.To, r.Cc = []mail.Address{{Name: inv.OrganizerCN, Email: inv.Organizer}}, nil
	r.Body = rsvpText(acct.From, partStat, inv)
	r.Calendar, r.CalendarMethod = ics, calendar.MethodReply
	r.MessageID = p.newDraftMessageID(cur.Account)
	r.ExtraHeaders = map[string]string{TraceHeader: cur.ID}
	raw, msgID, err := compose.Build(r)
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	obID := ApprovalOutboxID(cur.ID)
	ob := &store.OutboxRecord{
		ID: obID, Account: cur.Account, From: acct.From.Email, MessageID: msgID, QueueID: cur.ID,
		InReplyTo: cur.MessageID, To: []string{inv.Organizer}, Raw: raw,
		CreatedAt: p.now(), Message: cur.Message, Subject: cur.Subject, Body: r.Body,
	}
	if err := p.schedule(ob, ob.CreatedAt, p.Policy.ApprovalDelay); err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	item, _, err := a.Store.ApproveQueueItem(id, openStatuses, func(q *store.QueueItem) error {
		if !q.UpdatedAt.Equal(cur.UpdatedAt) {
			return fmt.Errorf("%s changed while it was being answered: %w", id, store.ErrConflict)
		}
		q.DraftMessageID, q.Error = msgID, ""
		q.Invitation.RSVP = partStat
		return nil
	}, ob)
	if errors.Is(err, store.ErrConflict) {
		return nil, notActionable(id, a.Store)
	}
	if err != nil {
		return nil, fmt.Errorf("rsvp %s: %w", id, err)
	}
	if ob.Status == store.OutboxScheduled {
		a.notify(Event{Kind: "scheduled", ID: obID, Account: cur.Account})
		return item, nil
	}
	if err := p.Deliver(ctx, obID); err != nil {
		return item, err
	}
	if q, err := a.Store.GetQueueItem(id); err == nil {
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

// rsvpSent runs after an outbox record was sent: when it was the REPLY
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
func (p *Pipeline) rsvpSent(ob *store.OutboxRecord) {
	w, ok := p.Calendar.(EventWriter)
	if !ok || ob.QueueID == "" || ob.ID != ApprovalOutboxID(ob.QueueID) {
		return
	}
	item, err := p.Actor.Store.GetQueueItem(ob.QueueID)
	if err != nil || item.Invitation == nil || item.Invitation.RSVP == "" || item.Invitation.CalendarPath != "" ||
		item.Invitation.Status == store.InvitationCancelled {
		return
	}
	inv := item.Invitation
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := p.messageOf(item)
	if err != nil {
		p.recordCalendarOutcome(item, "", fmt.Sprintf("your answer was not written to your calendar: its message is not readable (%v)", err))
		return
	}
	prior, other := p.writtenEvent(rec, inv.UID, item.ID)
	if prior == nil && other != nil {
		// The UID names an event written for someone else's invitation:
		// the answer went out by mail; the calendar is left alone.
		p.uidConflict(item, other)
		return
	}
	if inv.RecurrenceID != "" && prior != nil && prior.Invitation.RecurrenceID == "" {
		p.rsvpOccurrence(ctx, rec, item, prior)
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
		if data, err = ci.Accepted(p.Accounts[item.Account].From.Email, inv.RSVP); err == nil {
			st, err = w.PutEvent(ctx, item.Account, inv.UID, data, etag)
		}
	}
	if st.Path == "" && err == nil {
		return // no writable calendar for this account
	}
	updated, terr := p.Actor.Store.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		if q.Invitation != nil {
			q.Invitation.CalendarPath, q.Invitation.CalendarETag = st.Path, st.ETag
			if err != nil {
				q.Invitation.CalendarError = calendarWriteError(err)
			}
		}
		return nil
	})
	if err == nil && prior != nil && etag != "" {
		p.handOver(prior, item.ID)
	}
	if errors.Is(err, calendar.ErrPrecondition) {
		p.queueCalendarConflict(item, calendarWriteError(err))
	}
	if err != nil || terr != nil {
		p.logger().Warn("rsvp: calendar not updated", "item", item.ID, "err", errors.Join(err, terr))
	}
	if terr == nil && err == nil && updated.Invitation != nil && updated.Invitation.Status == store.InvitationCancelled {
		// The organizer's CANCEL was applied while this event was being
		// written: it found no event to remove, so it goes now.
		p.removeWritten(ctx, updated)
	}
}

// calendarWriteError is how a failed calendar write reads on an item.
func calendarWriteError(err error) string {
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
func (p *Pipeline) rsvpOccurrence(ctx context.Context, rec *store.MessageRecord, item, prior *store.QueueItem) {
	inv := item.Invitation
	note := ""
	ci, err := calendar.ParseICS([]byte(inv.ICS), inv.Method)
	var data []byte
	if err == nil {
		data, err = ci.Accepted(p.Accounts[item.Account].From.Email, inv.RSVP)
	}
	var msg *calendar.Invitation
	if err == nil {
		msg, err = calendar.ParseICS(data, calendar.MethodRequest)
	}
	if err != nil {
		note = "your answer was not written to your calendar: " + err.Error()
	} else {
		changes, why := p.changeSeries(ctx, rec, msg)
		note = why
		for _, c := range changes {
			if !c.Applied {
				note = strings.TrimPrefix(note+"; your answer was not written to your calendar: "+noteText(c.Note), "; ")
			}
		}
	}
	_, terr := p.Actor.Store.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		q.Invitation.CalendarPath = prior.Invitation.CalendarPath // the series holds the answer
		q.Invitation.CalendarError = note
		return nil
	})
	if terr != nil || note != "" {
		p.logger().Warn("rsvp: occurrence not written to the series", "item", item.ID, "note", note, "err", terr)
	}
}

// uidConflict records on item that its invitation's UID names an event
// mailagent wrote for another correspondent's invitation (other): the
// item's status says so (queue show, the review detail, --json), a
// notice is queued, and nothing on the calendar is read or written.
func (p *Pipeline) uidConflict(item, other *store.QueueItem) {
	note := otherOrganizerNote(other) + "; your answer went to the organizer by mail only"
	_, err := p.Actor.Store.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		if q.Invitation != nil {
			q.Invitation.Status, q.Invitation.StatusNote = store.InvitationUIDConflict, note
			q.Invitation.CalendarError = note
		}
		return nil
	})
	if err != nil {
		p.logger().Warn("rsvp: conflict not recorded", "item", item.ID, "err", err)
	}
	p.queueCalendarConflict(item, note)
	p.Actor.notify(Event{Kind: "queue_updated", ID: item.ID, Account: item.Account})
}

// recordCalendarOutcome records why item's event was not written.
func (p *Pipeline) recordCalendarOutcome(item *store.QueueItem, path, why string) {
	_, err := p.Actor.Store.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		if q.Invitation != nil {
			q.Invitation.CalendarPath, q.Invitation.CalendarError = path, why
		}
		return nil
	})
	if err != nil {
		p.logger().Warn("rsvp: calendar outcome not recorded", "item", item.ID, "err", err)
	}
}
