package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent/invite"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/store"
)

// Calendar invitations are agent/invite's (invite.Handler): this file is
// the pipeline's side of them: the Handler built from the pipeline, the
// Host it calls back, the trace step, and the decision rule that keeps
// an invitation in front of the owner.

// invitations is the invitation handler over p's stores, calendar,
// accounts and outbox.
func (p *Pipeline) invitations() *invite.Handler {
	h := &invite.Handler{Host: inviteHost{p}, Accounts: p.Accounts, Calendar: p.Calendar,
		ApprovalDelay: p.Policy.ApprovalDelay, Now: p.now, Logger: p.logger()}
	if p.Store != nil {
		h.Messages = p.Store
	}
	if p.Actor != nil && p.Actor.Store != nil {
		h.Queue = p.Actor.Store
	}
	return h
}

// RSVP answers the invitation of queue item id for the owner
// (invite.Handler.RSVP): an iTIP REPLY to the verified ORGANIZER through
// the outbox and its undo window; answer is accept, decline or tentative.
// It is the only path that answers an invitation, and it runs only on the
// owner's command.
func (p *Pipeline) RSVP(ctx context.Context, id, answer string) (*store.QueueItem, error) {
	if p.Actor == nil || p.Actor.Store == nil {
		return nil, fmt.Errorf("rsvp %s: no queue", id)
	}
	return p.invitations().RSVP(ctx, id, answer)
}

// inviteHost is the pipeline as invite.Handler's Host.
type inviteHost struct{ p *Pipeline }

func (h inviteHost) Reply(item *store.QueueItem) compose.Reply {
	r := h.p.itemReply(item)
	r.ExtraHeaders = map[string]string{TraceHeader: item.ID}
	return r
}
func (h inviteHost) NewMessageID(account string) string { return h.p.newDraftMessageID(account) }
func (h inviteHost) Schedule(ob *store.OutboxRecord, now time.Time, delay time.Duration) error {
	return h.p.schedule(ob, now, delay)
}
func (h inviteHost) Deliver(ctx context.Context, id string) error { return h.p.Deliver(ctx, id) }
func (h inviteHost) Cancel(ctx context.Context, id string) error  { return h.p.Cancel(ctx, id) }
func (h inviteHost) DropDraft(ctx context.Context, item *store.QueueItem) {
	h.p.dropIMAPDraft(ctx, item)
}
func (h inviteHost) Enqueue(ctx context.Context, item *store.QueueItem) error {
	return h.p.Actor.enqueue(ctx, item, nil)
}
func (h inviteHost) Notify(kind, id, account string) {
	h.p.Actor.notify(Event{Kind: kind, ID: id, Account: account})
}

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
	default:
		applied, err = p.invitations().Apply(ctx, rec)
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

// invitationDecision keeps a message with an invitation in front of the
// owner: never auto-sent (the model's draft may say "accepted"), never
// archived or ignored.
func invitationDecision(rec *store.MessageRecord) {
	if rec.Invitation == nil {
		return
	}
	switch rec.Decision {
	case DecisionAutoSend:
		rec.Decision = DecisionQueue
	case DecisionArchive, DecisionIgnore:
		rec.Decision = DecisionNotify
	case DecisionQueue, DecisionNotify:
	default:
		return
	}
	if rec.Invitation.Method == calendar.MethodCancel {
		rec.Reasons = append(rec.Reasons, invite.ReasonInvitationCancelled)
		return
	}
	rec.Reasons = append(rec.Reasons, invite.ReasonInvitation)
}
