package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

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

// applyInvitation applies a CANCEL or an update to the earlier copies of
// the invitation, and records what it did on the message's invitation
// (Applied) and as the trace step "invitation" (explain).
func (p *Pipeline) applyInvitation(ctx context.Context, rec *store.MessageRecord, tr *tracer) {
	inv := rec.Invitation
	if inv == nil || inv.UID == "" || p.Actor == nil || (inv.Method != calendar.MethodCancel && inv.Method != calendar.MethodRequest) {
		return
	}
	done := tr.step("invitation")
	var applied string
	var err error
	switch {
	case p.DryRun && inv.Method == calendar.MethodCancel:
		applied = "dry run: the cancellation was not applied"
	case p.DryRun:
		return
	case inv.Method == calendar.MethodCancel:
		applied, err = p.applyCancel(ctx, rec)
	default:
		applied, err = p.applyUpdate(ctx, rec)
	}
	if inv.RecurrenceID != "" && !p.DryRun && err == nil && len(inv.Occurrences) == 0 {
		// One or more occurrences of a series (invite_occurrence.go).
		applied = strings.TrimSuffix(p.applyOccurrences(ctx, rec)+"; "+applied, "; ")
	}
	if applied == "" && err == nil {
		return
	}
	if err != nil {
		applied = strings.TrimPrefix(applied+"; ", "; ") + "not applied: " + err.Error()
	}
	inv.Applied = applied
	var snap *store.StepSnapshot
	if tr.on() {
		snap = tr.snap(invitationSnapshot(rec, inv), invitationOut{Applied: applied, Occurrences: inv.Occurrences})
	}
	done(store.Step{Detail: applied, Snapshot: snap}, err)
}

// invitationIn is the invitation step's input: what the message asks
// of the invitation, and who the owner's server says sent it (the rule
// for applying it is about that sender, never the From text).
type invitationIn struct {
	AuthenticatedSender string    `json:"authenticated_sender"`
	Method              string    `json:"method"`
	Organizer           string    `json:"organizer"`
	OrganizerVerified   bool      `json:"organizer_verified"`
	RecurrenceID        string    `json:"recurrence_id"`
	Sequence            int       `json:"sequence"`
	Start               time.Time `json:"start"`
	Summary             string    `json:"summary"`
	UID                 string    `json:"uid"`
}

// invitationOut is the invitation step's output: what code did.
type invitationOut struct {
	Applied     string                   `json:"applied"`
	Occurrences []store.OccurrenceChange `json:"occurrences"`
}

// invitationSnapshot fills invitationIn. The sender's text fields are
// cut to maxSnapField each, so that a hostile 100 KiB UID leaves the
// snapshot whole JSON (shown indented) under the cap.
func invitationSnapshot(rec *store.MessageRecord, inv *store.Invitation) invitationIn {
	return invitationIn{AuthenticatedSender: rec.SenderAuth.Identity(), Method: capText(inv.Method, maxSnapField),
		Organizer: capText(inv.Organizer, maxSnapField), OrganizerVerified: inv.OrganizerVerified,
		RecurrenceID: capText(inv.RecurrenceID, maxSnapField), Sequence: inv.Sequence, Start: inv.Start,
		Summary: capText(inv.Summary, maxSnapField), UID: capText(inv.UID, maxSnapField)}
}

// maxSnapField is the most bytes of one sender-written field a snapshot
// struct keeps.
const maxSnapField = 512

// invitationItems returns the queue items of account that carry a
// REQUEST with uid, except the one of message self.
func (p *Pipeline) invitationItems(account, uid string, self store.MessageKey) ([]*store.QueueItem, error) {
	var out []*store.QueueItem
	err := p.Actor.Store.ListQueue("", func(q *store.QueueItem) error {
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
func (p *Pipeline) newestSequence(rec *store.MessageRecord, items []*store.QueueItem, organizer string) (int, string) {
	seq, id := -1, ""
	for _, q := range items {
		if q.Invitation.OrganizerVerified && mail.SameAddr(q.Invitation.Organizer, organizer) && q.Invitation.Sequence > seq &&
			p.sameOrganizer(rec, q) {
			seq, id = q.Invitation.Sequence, q.ID
		}
	}
	return seq, id
}

// fromOrganizer says why the message cannot change the invitation of
// item q ("" when it can): its sender must be authenticated, be the
// message's ORGANIZER, and be q's organizer too.
func fromOrganizer(inv *store.Invitation, identity string, q *store.QueueItem) string {
	switch {
	case identity == "":
		return "the sender is not authenticated, so the organizer " + inv.Organizer + " cannot be trusted"
	case inv.Organizer == "" || !mail.SameAddr(inv.Organizer, identity):
		return fmt.Sprintf("the organizer %q is not the authenticated sender %s", noteText(inv.Organizer), identity)
	case !mail.SameAddr(q.Invitation.Organizer, identity):
		return fmt.Sprintf("%s was organized by %s, not by the sender %s", q.ID, q.Invitation.Organizer, identity)
	}
	return ""
}

// applyCancel applies a CANCEL: every earlier copy of the invitation is
// marked cancelled; one still waiting is resolved (no RSVP goes out),
// one whose REPLY waits in the undo window has it cancelled, and the
// event mailagent wrote for it is removed from the calendar.
func (p *Pipeline) applyCancel(ctx context.Context, rec *store.MessageRecord) (string, error) {
	inv := rec.Invitation
	items, err := p.invitationItems(rec.Account, inv.UID, rec.MessageKey)
	if err != nil {
		return "", err
	}
	if len(items) == 0 && inv.RecurrenceID != "" {
		return "", nil // the series on the calendar is applyOccurrences'
	}
	if len(items) == 0 {
		return "no invitation with this UID came through mailagent: nothing changed", nil
	}
	if seq, id := p.newestSequence(rec, items, inv.Organizer); inv.Sequence < seq {
		return fmt.Sprintf("not applied: its SEQUENCE %d is older than the invitation's current one (%d, %s)", inv.Sequence, seq, id), nil
	}
	identity := rec.SenderAuth.Identity()
	rids := occurrenceIDs(inv)
	var notes []string
	for _, q := range items {
		if why := fromOrganizer(inv, identity, q); why != "" {
			notes = append(notes, "not applied to "+q.ID+": "+why)
			continue
		}
		if !p.sameOrganizer(rec, q) {
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
		notes = append(notes, p.cancelOne(ctx, rec, q))
	}
	return strings.Join(notes, "; "), nil
}

// cancelOne applies a verified CANCEL to item q.
func (p *Pipeline) cancelOne(ctx context.Context, rec *store.MessageRecord, q *store.QueueItem) string {
	st := p.Actor.Store
	what := []string{}
	if q.Status == store.QueueApproved {
		err := p.Cancel(ctx, q.ID)
		switch {
		case err == nil:
			what = append(what, "its "+strings.ToLower(q.Invitation.RSVP)+" REPLY, still in the undo window, was cancelled")
		case errors.Is(err, ErrNotActionable):
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
	if slices.Contains(openStatuses, q.Status) {
		to = store.QueueResolved
		what = append(what, "no RSVP will be sent for it")
	}
	// Marked first, so that a REPLY sent meanwhile writes no event
	// (rsvpSent checks the mark, and removes what it wrote after it).
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
		p.dropIMAPDraft(ctx, cur) // the reply drafted for it is moot
	}
	p.Actor.notify(Event{Kind: "queue_updated", ID: cur.ID, Account: cur.Account})
	if cur, err = st.GetQueueItem(q.ID); err != nil {
		return q.ID + ": marked cancelled; " + err.Error()
	}
	if r := p.removeWritten(ctx, cur); r != "" {
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
func (p *Pipeline) removeWritten(ctx context.Context, q *store.QueueItem) string {
	inv := q.Invitation
	if inv == nil || inv.CalendarETag == "" || inv.CalendarPath == "" {
		return ""
	}
	d, ok := p.Calendar.(EventDeleter)
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
	_, terr := p.Actor.Store.TransitionQueueItem(q.ID, []string{q.Status}, q.Status, func(it *store.QueueItem) error {
		if err == nil {
			it.Invitation.CalendarETag = "" // nothing of mailagent's is left there
		} else {
			it.Invitation.CalendarError = out
		}
		it.Invitation.StatusNote = strings.TrimPrefix(it.Invitation.StatusNote+"; "+out, "; ")
		return nil
	})
	if terr != nil {
		p.logger().Warn("invitation: outcome not recorded", "item", q.ID, "err", terr)
	}
	return out
}

// applyUpdate applies a REQUEST with a higher SEQUENCE than the copies
// of the invitation mailagent has: each earlier copy is marked
// superseded; one still waiting is resolved, and one whose REPLY waits
// in the undo window has it cancelled (it answers the old version). The
// new message is queued like any invitation, so the owner answers again;
// that answer replaces the event an earlier answer wrote (rsvpSent).
func (p *Pipeline) applyUpdate(ctx context.Context, rec *store.MessageRecord) (string, error) {
	inv := rec.Invitation
	items, err := p.invitationItems(rec.Account, inv.UID, rec.MessageKey)
	if err != nil || len(items) == 0 {
		return "", err
	}
	identity := rec.SenderAuth.Identity()
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
		if why := fromOrganizer(inv, identity, q); why != "" {
			notes = append(notes, fmt.Sprintf("claims to update %s (%s) but %s: nothing changed there", q.ID, answered, why))
			continue
		}
		if !p.sameOrganizer(rec, q) {
			notes = append(notes, fmt.Sprintf("names the UID of %s (%s), which came from another correspondent: nothing changed there", q.ID, answered))
			continue
		}
		notes = append(notes, p.supersede(ctx, rec, q, answered))
	}
	return strings.Join(notes, "; "), nil
}

// supersede marks item q as replaced by the update rec.
func (p *Pipeline) supersede(ctx context.Context, rec *store.MessageRecord, q *store.QueueItem, answered string) string {
	st := p.Actor.Store
	what := fmt.Sprintf("updates %s (%s, SEQUENCE %d → %d): answer this one", q.ID, answered, q.Invitation.Sequence, rec.Invitation.Sequence)
	if q.Status == store.QueueApproved {
		err := p.Cancel(ctx, q.ID)
		switch {
		case err == nil:
			what += "; the REPLY to the old version, still in the undo window, was cancelled"
		case !errors.Is(err, ErrNotActionable):
			return what + "; the REPLY to the old version was not cancelled: " + err.Error()
		}
		if cur, err := st.GetQueueItem(q.ID); err == nil {
			q = cur
		}
	}
	to := q.Status
	if slices.Contains(openStatuses, q.Status) {
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
		p.dropIMAPDraft(ctx, cur)
	}
	p.Actor.notify(Event{Kind: "queue_updated", ID: cur.ID, Account: cur.Account})
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
func (p *Pipeline) writtenEvent(rec *store.MessageRecord, uid, exceptID string) (own, other *store.QueueItem) {
	items, err := p.invitationItems(rec.Account, uid, store.MessageKey{})
	if err != nil {
		p.logger().Warn("invitation: earlier answers not read", "uid", uid, "err", err)
		return nil, nil
	}
	for _, q := range items {
		if q.ID == exceptID || q.Invitation.CalendarETag == "" {
			continue
		}
		switch {
		case !p.sameOrganizer(rec, q):
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
func (p *Pipeline) sameOrganizer(rec *store.MessageRecord, q *store.QueueItem) bool {
	if rec.MessageKey == q.Message {
		return true
	}
	qrec, err := p.messageOf(q)
	if err != nil {
		return false // nothing says whose it is
	}
	return store.MayResolve(rec, qrec)
}

// messageOf reads the message record of item q.
func (p *Pipeline) messageOf(q *store.QueueItem) (*store.MessageRecord, error) {
	if p.Store == nil {
		return nil, fmt.Errorf("message of %s: no message store", q.ID)
	}
	return p.Store.GetMessage(q.Message)
}

// otherOrganizerNote is how an invitation whose UID names an event
// mailagent wrote for another organizer's invitation reads.
func otherOrganizerNote(other *store.QueueItem) string {
	return fmt.Sprintf("another organizer's invitation with the same UID (%s, organizer %s) holds the event on your calendar: "+
		"mailagent did not read, change or remove it", other.ID, noteText(other.Invitation.Organizer))
}

// handOver moves the record of the written event from prior to the item
// newID, whose answer rewrote it: exactly one item holds an event's ETag.
func (p *Pipeline) handOver(prior *store.QueueItem, newID string) {
	_, err := p.Actor.Store.TransitionQueueItem(prior.ID, []string{prior.Status}, prior.Status, func(it *store.QueueItem) error {
		it.Invitation.CalendarETag = ""
		it.Invitation.StatusNote = strings.TrimPrefix(it.Invitation.StatusNote+"; the event on your calendar is now kept by "+newID, "; ")
		return nil
	})
	if err != nil {
		p.logger().Warn("invitation: earlier answer not updated", "item", prior.ID, "err", err)
	}
}

// queueCalendarConflict puts a notice in the queue when the calendar
// refused a write because another client changed the event (HTTP 412):
// the owner decides, mailagent never retries it blindly. base is the
// item (or the message) the write was for.
func (p *Pipeline) queueCalendarConflict(base *store.QueueItem, reason string) {
	q := &store.QueueItem{
		ID: base.ID + "_calendar", Kind: store.KindNotify, Account: base.Account, Message: base.Message,
		MessageID: base.MessageID, ThreadID: base.ThreadID, From: base.From, Subject: base.Subject,
		Reasons: []string{"calendar: " + reason}, Status: store.QueuePending,
	}
	if err := p.Actor.enqueue(context.Background(), q, nil); err != nil {
		p.logger().Warn("calendar conflict not queued", "item", base.ID, "err", err)
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
