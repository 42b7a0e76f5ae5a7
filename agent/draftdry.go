package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mailagent/mailagent/agent/guard"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// DryDraft is what drafting would have produced for a decided message:
// the draft, the gates judged again on it, and the decision they lead to.
type DryDraft struct {
	Body            string
	NeedsOwnerInput bool
	Gates           []store.GateResult
	// Decision is auto_send or queue, as watch would have decided once the
	// draft existed (before the caps are counted).
	Decision string
	Reasons  []string
	Usage    llm.Usage
	// Calls is how many model requests the draft took: 1, one more for a
	// repair, and one per transport retry.
	Calls int
}

// DraftDryRun drafts the reply to rec as watch's drafting step does (the
// same request, the same memory and thread rules, the gates again on the
// real draft) and acts on nothing: no queue item, no outbox record, no
// cap counted, no mailbox looked at, no store written. rec must be
// decided auto_send or queue; it is not changed. body is the message's
// clean text ("" uses the stored excerpt); profile is the owner's profile.
// It is what `mailagent replay --drafts` runs.
func (p *Pipeline) DraftDryRun(ctx context.Context, rec *store.MessageRecord, body string, d Drafter, profile string) (*DryDraft, error) {
	if rec.Decision != DecisionAutoSend && rec.Decision != DecisionQueue {
		return nil, fmt.Errorf("draft dry run: decision is %q, not auto_send or queue", rec.Decision)
	}
	acct := p.Accounts[rec.Account]
	if body == "" {
		body = rec.Excerpt
	}
	route := RouteInfo{Route: rec.Route, Reason: rec.RouteReason}
	route.ClaimsOwner = rec.Route != RouteOwner && acct.Owner.IsOwner(rec.From.Email)
	reply, err := compose.NewReply(recordMessage(rec), acct.From, acct.Owner.Addresses, p.Policy.ReplyAll)
	if err != nil {
		return &DryDraft{Decision: DecisionNotify, Reasons: []string{"no one to reply to: " + err.Error()}}, nil
	}
	if rec.SenderAuth.Identity() == "" {
		profile = ""
	}
	req := DraftRequest{
		Owner: prompts.Owner{Name: acct.Owner.Name, Email: first(acct.Owner.Addresses)}, Profile: profile,
		Contact: p.contactFor(rec), Thread: p.threadContext(rec), From: formatAddress(rec.From), Subject: rec.Subject,
		Body: prompts.TrimText(body, p.maxBody()),
	}
	if !rec.Date.IsZero() {
		req.Date = rec.Date.Format(time.RFC1123Z)
	}
	if rec.Classification != nil {
		req.Intents = rec.Classification.Intents
	}
	offered := p.offerSlots(ctx, rec, &req)
	dr, info, err := d.Draft(ctx, req)
	out := &DryDraft{Usage: info.Usage, Calls: max(info.Attempts, 1) + info.Retries}
	if err != nil {
		return out, fmt.Errorf("draft: %w", err)
	}
	out.Body, out.NeedsOwnerInput = dr.Body, dr.NeedsOwnerInput
	in := p.gateInput(rec, route, acct)
	in.Out = guard.Fields{Subject: mail.ReplySubject(reply.Subject), Body: dr.Body}
	in.Trusted = p.trusted(rec, reply, profile)
	out.Gates = p.scheduleGate(ctx, EvaluateGates(p.Policy, in), offered, rec, req, dr.Body)
	recipients := append(slices.Clone(reply.To), reply.Cc...)
	out.Decision, out.Reasons = DecisionQueue, FailedReasons(out.Gates)
	switch {
	case dr.NeedsOwnerInput:
		out.Reasons = append(out.Reasons, "the draft needs the owner's input")
	case rec.Decision != DecisionAutoSend || !AllPass(out.Gates):
	case len(recipients) != 1 || !mail.SameAddr(recipients[0].Email, rec.SenderAuth.Identity()):
		out.Reasons = []string{"recipients: an automatic reply goes only to the authenticated sender"}
	default:
		out.Decision, out.Reasons = DecisionAutoSend, nil
	}
	return out, nil
}
