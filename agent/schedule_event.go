package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/mailagent/mailagent/agent/invite"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// DefaultSlotLength is the meeting length when the calendar does not
// say (scheduling.slot_length's default).
const DefaultSlotLength = 30 * time.Minute

// slotLengther is a Calendar that knows the meeting length of an account
// (scheduling.slot_length).
type slotLengther interface {
	SlotLength(account string) time.Duration
}

// slotOffer is what a scheduling draft was offered, kept on the message
// (and from there the queue item and the outbox record) so that the reply
// that goes out is checked against exactly that. nil when nothing was
// offered (no calendar, a calendar error, no free slot) or the sender is
// not authenticated.
func (p *Pipeline) slotOffer(o *offeredSlots, rec *store.MessageRecord) *store.SlotOffer {
	if o == nil || o.noCalendar || o.err != nil || o.loc == nil || len(o.slots) == 0 || rec.SenderAuth.Identity() == "" {
		return nil
	}
	so := &store.SlotOffer{TZ: o.loc.String(), Ref: o.ref, Length: p.slotLength(rec.Account), Attendee: rec.SenderAuth.Identity()}
	for _, s := range o.slots[:min(len(o.slots), maxOfferedSlots)] {
		so.Slots = append(so.Slots, store.Span{Start: s.Start, End: s.End})
	}
	return so
}

// ScheduleEventUID is the UID of the event a reply to the message with
// key k creates: derived from the key, so a retried send replaces the
// event instead of adding a second one.
func ScheduleEventUID(k store.MessageKey) string {
	h := sha256.Sum256([]byte(k.String()))
	return "mailagent-meeting-" + hex.EncodeToString(h[:16]) + "@mailagent"
}

// scheduleSent runs after an outbox record was sent (never for one
// cancelled in the undo window, which is never sent): when it is a
// scheduling reply that the owner approved, or that policy.auto_schedule
// sent, to the one authenticated correspondent, and its text confirms
// exactly one offered slot (calendar.ConfirmedSlot: code decides), a
// tentative event goes on the owner's writable calendar. Zero or several
// times, a recipient that is not the correspondent, or no writable
// calendar: nothing. A failed write is logged and noted on the approved
// item (the reply is out; the owner can add the event by hand).
func (p *Pipeline) scheduleSent(ob *store.OutboxRecord) {
	o := ob.Offer
	w, ok := p.Calendar.(invite.EventWriter)
	if o == nil || !ok {
		return
	}
	approved := ob.QueueID != "" && ob.ID == ApprovalOutboxID(ob.QueueID) && !ob.Auto
	if !approved && !(ob.Auto && p.Policy.AutoSchedule) {
		return
	}
	if o.Attendee == "" || len(ob.To) != 1 || !mail.SameAddr(ob.To[0], o.Attendee) {
		return
	}
	loc, err := time.LoadLocation(o.TZ)
	if err != nil {
		p.logger().Warn("schedule: no event", "outbox", ob.ID, "err", err)
		return
	}
	offered := make([]calendar.Interval, 0, len(o.Slots))
	for _, s := range o.Slots {
		offered = append(offered, calendar.Interval{Start: s.Start, End: s.End})
	}
	length := o.Length
	if length <= 0 {
		length = DefaultSlotLength
	}
	start, ok := calendar.ConfirmedSlot(ob.Body, offered, length, o.Ref, loc)
	if !ok {
		return
	}
	acct := p.Accounts[ob.Account]
	uid := ScheduleEventUID(ob.Message)
	data, err := calendar.TentativeEvent(calendar.NewEvent{UID: uid, Summary: ob.Subject, Organizer: acct.From.Email,
		Attendee: o.Attendee, Start: start, End: start.Add(length), Stamp: p.now()})
	if err != nil {
		p.logger().Warn("schedule: no event", "outbox", ob.ID, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A create only (If-None-Match: *): an event already there under this
	// UID (written before a crash, or changed by another client) is never
	// overwritten; the owner is told instead.
	stored, err := w.PutEvent(ctx, ob.Account, uid, data, "")
	if err != nil {
		p.logger().Warn("schedule: calendar not updated", "outbox", ob.ID, "err", err)
		reason := "the tentative event was not created: " + invite.CalendarWriteError(err)
		p.noteOnSentItem(ob, "calendar: "+reason)
		if errors.Is(err, calendar.ErrPrecondition) {
			p.invitations().QueueCalendarConflict(p.sentItemOf(ob), reason)
		}
		return
	}
	if stored.Path != "" {
		p.logger().Info("schedule: tentative event created", "outbox", ob.ID, "path", stored.Path, "start", start)
	}
}

// sentItemOf is what a notice about a sent reply is queued after: the
// approved item, or for an auto-send the message it answered.
func (p *Pipeline) sentItemOf(ob *store.OutboxRecord) *store.QueueItem {
	if ob.QueueID != "" {
		if q, err := p.Actor.Store.GetQueueItem(ob.QueueID); err == nil {
			return q
		}
	}
	return &store.QueueItem{ID: QueueID(ob.Message), Account: ob.Account, Message: ob.Message, MessageID: ob.InReplyTo, Subject: ob.Subject}
}

// noteOnSentItem adds reason to the sent queue item of an approval, so a
// side effect that failed after the send (the reply is out) is shown in
// its detail and by explain, not only in the log. An auto-send has no
// item: the log is its record.
func (p *Pipeline) noteOnSentItem(ob *store.OutboxRecord, reason string) {
	if ob.QueueID == "" {
		return
	}
	_, err := p.Actor.Store.TransitionQueueItem(ob.QueueID, []string{store.QueueSent}, store.QueueSent, func(q *store.QueueItem) error {
		q.Reasons = append(q.Reasons, reason)
		return nil
	})
	if err != nil {
		p.logger().Warn("schedule: note not recorded on the item", "queue", ob.QueueID, "err", err)
	}
}
