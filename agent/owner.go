package agent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mailagent/mailagent/agent/guard"
	"github.com/mailagent/mailagent/agent/owner"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// The owner's channel. Only mail that routes as owner (From one of the
// owner's addresses AND authenticated by the owner's own server, or read
// from Sent) reaches ownerMail; a forged owner address routes external and
// is handled, and distrusted, like any stranger's mail. Mail the owner
// sends to the agent's address (Owner.Assistant, or the plus-address
// local+agent@domain of an owner address) or to their own address alone:
//
//   - instruction: a new message → memory records (updateContext);
//   - context: a reply in a correspondent's thread → records about that
//     correspondent only;
//   - delegate: a forwarded message → a reply to the original sender,
//     drafted and queued for approval, never sent; nothing is learned
//     from it (the forwarded text is a stranger's);
//   - observe: the owner wrote to others with the agent in Cc → records
//     about those recipients; nothing is ever sent.
//
// Each runs as a bounded tool loop (Learner.MaxSteps): the model picks one
// tool per turn from the mode's set, every call is validated by code, and
// no tool takes a recipient. What was recorded is confirmed to the owner
// as a notify item in the queue.

// IsAgentAddress reports whether addr is the agent's address on account:
// accounts.assistant_address, or the "+agent" plus-address of one of the
// owner's addresses.
func (as Accounts) IsAgentAddress(account, addr string) bool {
	o := as[account].Owner
	addr = mail.AddrKey(addr)
	if addr == "" {
		return false
	}
	if o.Assistant != "" && mail.SameAddr(o.Assistant, addr) {
		return true
	}
	for _, a := range o.Addresses {
		at := strings.LastIndexByte(a, '@')
		if at > 0 && mail.SameAddr(addr, a[:at]+"+agent"+a[at:]) {
			return true
		}
	}
	return false
}

// ownerMail handles a message that routes as owner (see the top of this
// file). Mail not meant for the agent is left alone (decision ignore).
func (p *Pipeline) ownerMail(ctx context.Context, rec *store.MessageRecord, body string, fwds []mail.Forward, tr *tracer, out *Outcome) error {
	ch := p.ownerChannel()
	mode, contacts, dels, notes := ch.Mode(rec, body, fwds)
	if mode == "" {
		return nil
	}
	if len(dels) > owner.MaxDelegations {
		// A forward of many threads: the owner picks, nothing is drafted.
		rec.Reasons = append(rec.Reasons, "owner mail for the agent (delegate): too many forwarded threads")
		return p.Actor.enqueue(ctx, p.ownerNote(rec, mode, append(owner.TooManyDelegations(dels), notes...)), nil)
	}
	done := tr.step("owner")
	var res owner.Result
	var err error
	if mode == prompts.ModeDelegate {
		// One loop per forwarded thread, each naming only its sender.
		res.Mode = mode
		for i, fw := range dels {
			fw.Index = i
			r, lerr := ch.Run(ctx, rec, body, mode, []string{mail.AddrKey(fw.From.Email)}, fw)
			res.Usage = res.Usage.Add(r.Usage)
			res.Steps, res.Rejected = append(res.Steps, r.Steps...), res.Rejected+r.Rejected
			res.Loops = append(res.Loops, r.Loops...)
			for _, t := range r.Turns {
				t.Loop = i + 1
				res.Turns = append(res.Turns, t)
			}
			if r.QueueID != "" {
				res.QueueIDs = append(res.QueueIDs, r.QueueID)
				res.QueueID = cmp.Or(res.QueueID, r.QueueID)
			}
			if err = lerr; err != nil {
				break
			}
		}
	} else {
		res, err = ch.Run(ctx, rec, body, mode, contacts, owner.Forwarded{})
	}
	out.Usage = out.Usage.Add(res.Usage)
	detail := fmt.Sprintf("%s: %d recorded, %d refused, %d steps", mode, len(res.Recorded), res.Rejected, len(res.Steps))
	var snap *store.StepSnapshot
	if tr.on() {
		snap = tr.snap(ownerSnapshot(res))
	}
	done(store.Step{Detail: detail, TokensIn: res.Usage.PromptTokens, TokensOut: res.Usage.OutputTokens, Snapshot: snap}, err)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.markNeedsReview(rec, "owner mail: "+err.Error())
		return nil
	}
	rec.Reasons = append(rec.Reasons, "owner mail for the agent ("+mode+")")
	if len(res.Recorded) == 0 && len(res.QueueIDs) == 0 && len(notes) == 0 {
		return nil
	}
	// The confirmation: what was recorded (and queued), in the queue.
	var reasons []string
	for _, l := range res.Recorded {
		reasons = append(reasons, "recorded "+l.ID+": "+l.Text)
	}
	for _, id := range res.QueueIDs {
		reasons = append(reasons, "queued a draft reply for your approval: "+id)
	}
	return p.Actor.enqueue(ctx, p.ownerNote(rec, mode, append(reasons, notes...)), nil)
}

// ownerChannel is the owner's channel over p's model, store, memory and
// accounts; p is its Host.
func (p *Pipeline) ownerChannel() *owner.Channel {
	c := &owner.Channel{MaxBody: p.maxBody(), Store: p.Store, Accounts: p.Accounts, Host: ownerHost{p}, Line: recordLine, Now: p.now}
	if a := p.Actor; a != nil {
		c.Memory = a.Memory
		if l := a.Learner; l != nil {
			c.Model, c.Prompts, c.MaxSteps = l.Model, l.Prompts, l.MaxSteps
		}
	}
	return c
}

// ownerHost is the pipeline as the owner channel's Host: it drafts and
// queues a delegated reply.
type ownerHost struct{ p *Pipeline }

// Owner is the owner as the prompts name them.
func (h ownerHost) Owner(account string) prompts.Owner { return h.p.ownerOf(account) }

// Draft drafts the reply to the forwarded original, with the
// owner's note as the instruction. The original sender is vouched for by
// the owner's forward, so their memory is used.
func (h ownerHost) Draft(ctx context.Context, rec *store.MessageRecord, fw owner.Forwarded, instruction string) (string, llm.Usage, error) {
	p := h.p
	a := p.Actor
	if instruction == "" {
		instruction = oneLine(rec.Excerpt, 300) // the owner's note above the forward
	}
	who := mail.AddrKey(fw.From.Email)
	req := DraftRequest{Owner: p.ownerOf(rec.Account), Profile: a.Profile, From: formatAddress(fw.From), Subject: fw.Subject,
		Body: prompts.TrimText(fw.Body, p.maxBody()), Instruction: instruction, Memory: p.memoryFor(rec.Account, who, nil, true)}
	if c, err := p.Store.GetContact(rec.Account, who); err == nil {
		req.Contact = c
	}
	d, info, err := a.Drafter.Draft(ctx, req)
	if err != nil {
		return "", info.Usage, fmt.Errorf("delegated draft: %w", err)
	}
	return d.Body, info.Usage, nil
}

// Queue records the forwarded original as a message of its own
// (DelegatedMailbox) and queues the draft as a reply to it. The recipient
// is the original's sender, chosen here by code; the gates are evaluated
// on it as for any reply, and the item waits for the owner's approval
// whatever they say.
func (h ownerHost) Queue(ctx context.Context, rec *store.MessageRecord, fw owner.Forwarded, body string) (string, error) {
	p := h.p
	a := p.Actor
	acct := p.Accounts[rec.Account]
	key := owner.DelegatedKey(rec, fw.Index)
	// No Reply-To, Cc or other To on the record: the reply built from it
	// on approval goes to fw.From alone, as the item says.
	orig := &store.MessageRecord{MessageKey: key, MessageID: fw.MessageID, From: fw.From, To: []mail.Address{acct.From},
		Subject: fw.Subject, Excerpt: prompts.TrimText(fw.Body, excerptChars), Route: RouteExternal,
		RouteReason: "forwarded by the owner to the agent", Decision: DecisionQueue, State: store.StateDone,
		TraceID: rec.TraceID, CreatedAt: p.now(), Date: cmp.Or(fw.Date, rec.Date),
		InReplyTo: fw.InReplyTo, References: fw.References, DelegatedBy: ptr(rec.MessageKey)}
	if orig.MessageID == "" {
		orig.MessageID, orig.Synthesized = "delegated."+rec.MessageID, true
		if fw.Index > 0 {
			orig.MessageID = fmt.Sprintf("delegated%d.%s", fw.Index+1, rec.MessageID)
		}
	}
	if orig.Subject == "" {
		orig.Subject = owner.ForwardSubject(rec.Subject)
	}
	if err := p.Store.PutMessage(orig); err != nil {
		return "", fmt.Errorf("delegate: %w", err)
	}
	in := GateInput{Route: RouteInfo{Route: RouteExternal, Reason: "forwarded by the owner"}, AuthservID: acct.Owner.AuthservID,
		Recipients: []Recipient{{Email: mail.AddrKey(fw.From.Email)}},
		Out:        guard.Fields{Subject: mail.ReplySubject(orig.Subject), Body: body}}
	if c, err := p.Store.GetContact(rec.Account, fw.From.Email); err == nil {
		in.Recipients[0].Known = c.Known
	}
	gates := EvaluateGates(p.Policy, in)
	item := &store.QueueItem{
		ID: QueueID(key), Kind: store.KindDraft, Account: rec.Account, Message: key, MessageID: orig.MessageID,
		From: fw.From, To: []mail.Address{fw.From}, Subject: orig.Subject, Gates: gates, Draft: body, Status: store.QueuePending,
		Reasons: slices.Concat([]string{"delegated by the owner (forwarded to the agent): always waits for approval"}, owner.DelegateNotes(fw), FailedReasons(gates)),
	}
	if _, err := a.Store.GetQueueItem(item.ID); err == nil {
		return item.ID, nil // queued before a crash
	}
	return item.ID, a.enqueue(ctx, item, nil)
}

// rereadOwnerForward gives a resumed owner message (cut off by a crash,
// or triaged before it was acted on) its forward again: the record keeps
// only an excerpt of the owner's note, and without the forwarded message
// the delegation would become an instruction.
func (p *Pipeline) rereadOwnerForward(a *analysis, in Input) {
	if a.rec.Route != RouteOwner || len(in.Raw) == 0 {
		return
	}
	if m := mail.Parse(in.Raw); m.Forwarded {
		a.body, a.fwds = m.Text, m.Forwards
	}
}

// ownerNote queues a notify item on the owner's message with reasons, for
// what the owner must know but nothing was done about.
func (p *Pipeline) ownerNote(rec *store.MessageRecord, mode string, reasons []string) *store.QueueItem {
	item := notifyItem(rec)
	item.Reasons = append([]string{"the agent read your " + cmp.Or(mode, prompts.ModeDelegate) + " mail"}, reasons...)
	rec.Decision = DecisionNotify
	return item
}
