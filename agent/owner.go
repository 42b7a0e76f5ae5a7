package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	netmail "net/mail"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent/guard"
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

// DefaultOwnerSteps is the hard step limit of the owner loop.
const DefaultOwnerSteps = 6

// Owner-loop tools.
const (
	ToolUpdateContext = "update_context"
	ToolGenerateDraft = "generate_reply_draft"
	ToolProposeSend   = "propose_send"
	ToolDone          = "done"
)

// DelegatedMailbox is the mailbox name of the records mailagent makes for
// the original of a delegated (forwarded) message: they are not in any
// real mailbox.
const DelegatedMailbox = "mailagent:delegated"

// isAgentAddress reports whether addr is the agent's address on account:
// accounts.assistant_address, or the "+agent" plus-address of one of the
// owner's addresses.
func (p *Pipeline) isAgentAddress(account, addr string) bool {
	o := p.Accounts[account].Owner
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

var forwardSubject = regexp.MustCompile(`(?i)^\s*(fwd?|wg|tr|rv)\s*:`)

// ownerMode sorts an owner message: "" when it is not for the agent, and
// the addresses records may name. For a delegation, dels are the
// forwarded originals (owner_forward.go); notes say what forwarded
// content could not be delegated, whatever the mode.
func (p *Pipeline) ownerMode(rec *store.MessageRecord, body string, fwds []mail.Forward) (mode string, contacts []string, dels []forwarded, notes []string) {
	o := p.Accounts[rec.Account].Owner
	toAgent, toSelf := false, false
	var others []string
	for _, a := range append(slices.Clone(rec.To), rec.Cc...) {
		e := mail.AddrKey(a.Email)
		switch {
		case p.isAgentAddress(rec.Account, e):
			toAgent = true
		case o.IsOwner(e):
			toSelf = true
		case e != "" && !slices.Contains(others, e):
			others = append(others, e)
		}
	}
	if len(others) > 0 {
		if toAgent {
			return prompts.ModeObserve, others, nil, nil
		}
		return "", nil, nil, nil // the owner's ordinary mail, perhaps with a copy to themselves
	}
	if !toAgent && !toSelf {
		return "", nil, nil, nil
	}
	if dels, notes = p.delegations(rec, body, fwds); len(dels) > 0 {
		for _, d := range dels {
			if e := mail.AddrKey(d.From.Email); !slices.Contains(contacts, e) {
				contacts = append(contacts, e)
			}
		}
		return prompts.ModeDelegate, contacts, dels, notes
	}
	if c := p.threadCorrespondent(rec); c != "" {
		return prompts.ModeContext, []string{c}, nil, notes
	}
	return prompts.ModeInstruction, addressesIn(body), nil, notes
}

// threadCorrespondent is the authenticated external sender of the thread
// rec replies to, or "".
func (p *Pipeline) threadCorrespondent(rec *store.MessageRecord) string {
	if len(rec.InReplyTo) == 0 || rec.ThreadID == "" {
		return ""
	}
	recs, err := p.Store.ThreadMessages(rec.ThreadID, 0)
	if err != nil {
		return ""
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Route == RouteExternal {
			if id := r.SenderAuth.Identity(); id != "" {
				return mail.AddrKey(id)
			}
		}
	}
	return ""
}

var addrPattern = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)

func addressesIn(s string) []string {
	var out []string
	for _, a := range addrPattern.FindAllString(s, 20) {
		if a = mail.AddrKey(a); !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// forwarded is the original message inside an inline forward, or an
// attached one (owner_forward.go).
type forwarded struct {
	From      mail.Address
	Subject   string
	MessageID string
	Body      string
	// Of an attached original only: its thread ids, date and Reply-To
	// (shown, never a recipient), its part, and what was wrong with it.
	InReplyTo, References []string
	ReplyTo               []mail.Address
	Date                  time.Time
	Part                  string
	Attached              bool
	Problems              []string
	// Index is the original's position among the message's delegations
	// (its record and queue item: delegatedKey).
	Index int
}

var forwardLine = regexp.MustCompile(`(?im)^\s*(-{2,}\s*(forwarded message|original message|weitergeleitete nachricht)\s*-*|begin forwarded message:)\s*$`)

// forwardedBlock is the text from the first forward marker on, or "".
func forwardedBlock(body string) string {
	loc := forwardLine.FindStringIndex(body)
	if loc == nil {
		return ""
	}
	return body[loc[1]:]
}

// parseForwarded reads the header lines (From, Subject, Message-ID) that
// clients put at the top of an inline forward, and the text after them.
func parseForwarded(body string) forwarded {
	var fw forwarded
	block := strings.TrimLeft(forwardedBlock(body), "\r\n")
	lines := strings.Split(block, "\n")
	i := 0
	for ; i < len(lines); i++ {
		l := strings.TrimSpace(strings.TrimPrefix(lines[i], ">"))
		if l == "" {
			break
		}
		name, val, ok := strings.Cut(l, ":")
		if !ok {
			break
		}
		val = strings.TrimSpace(val)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "from", "von", "de":
			if a, err := netmail.ParseAddress(val); err == nil {
				fw.From = mail.Address{Name: a.Name, Email: a.Address}
			} else if as := addressesIn(val); len(as) > 0 {
				fw.From = mail.Address{Email: as[0]}
			}
		case "subject", "betreff", "objet", "asunto":
			fw.Subject = val
		case "message-id":
			fw.MessageID = strings.Trim(val, "<> ")
		}
	}
	if i < len(lines) {
		fw.Body = strings.TrimSpace(strings.Join(lines[i:], "\n"))
	}
	return fw
}

// ownerTurn is one tool call of the owner loop.
type ownerTurn struct {
	Tool        *string `json:"tool"`
	Kind        string  `json:"kind"`
	Contact     string  `json:"contact"`
	Text        string  `json:"text"`
	Expires     string  `json:"expires"`
	Instruction string  `json:"instruction"`
}

// OwnerTurnSchema is the ResponseSchema of one owner-loop turn.
func OwnerTurnSchema() *llm.Schema {
	str := func(desc string) *llm.Schema { return &llm.Schema{Type: "string", Description: desc} }
	return &llm.Schema{Type: "object",
		Properties: map[string]*llm.Schema{
			"tool":        {Type: "string", Enum: []string{ToolUpdateContext, ToolGenerateDraft, ToolProposeSend, ToolDone}},
			"kind":        {Type: "string", Enum: []string{"", store.MemoryFact, store.MemoryPreference, store.MemoryRule, store.MemoryStyle, store.MemoryTemporary}},
			"contact":     str("an address from the list, @domain, or empty"),
			"text":        {Type: "string", MaxLength: ptr[int64](store.MaxMemoryText)},
			"expires":     str("YYYY-MM-DD for a temporary record, else empty"),
			"instruction": str("for generate_reply_draft: what the reply should say"),
		},
		Required:         []string{"tool", "kind", "contact", "text", "expires", "instruction"},
		PropertyOrdering: []string{"tool", "kind", "contact", "text", "expires", "instruction"},
	}
}

// OwnerResult is what one owner message led to.
type OwnerResult struct {
	Mode     string
	Recorded []store.Learned
	// QueueID is the delegated draft's queue item ("" when none); with a
	// forward of several threads, the first of QueueIDs.
	QueueID  string
	QueueIDs []string
	// Steps are the loop's calls, as shown to the model; Rejected counts
	// calls that code refused (a contact not offered, a tool outside the
	// mode, …).
	Steps    []string
	Rejected int
	// Usage is the tokens of every model call of the loop.
	Usage llm.Usage

	// loops and turns are the prompt variables of each loop and every
	// turn, for the owner step's snapshot (snapshot.go).
	loops []ownerLoopInput
	turns []ownerTurnSnap
}

// ownerMail handles a message that routes as owner (see the top of this
// file). Mail not meant for the agent is left alone (decision ignore).
func (p *Pipeline) ownerMail(ctx context.Context, rec *store.MessageRecord, body string, fwds []mail.Forward, tr *tracer, out *Outcome) error {
	mode, contacts, dels, notes := p.ownerMode(rec, body, fwds)
	if mode == "" {
		return nil
	}
	if len(dels) > MaxDelegations {
		// A forward of many threads: the owner picks, nothing is drafted.
		rec.Reasons = append(rec.Reasons, "owner mail for the agent (delegate): too many forwarded threads")
		return p.Actor.enqueue(ctx, p.ownerNote(rec, mode, append(tooManyDelegations(dels), notes...)), nil)
	}
	done := tr.step("owner")
	var res OwnerResult
	var err error
	if mode == prompts.ModeDelegate {
		// One loop per forwarded thread, each naming only its sender.
		res.Mode = mode
		for i, fw := range dels {
			fw.Index = i
			r, lerr := p.runOwnerLoop(ctx, rec, body, mode, []string{mail.AddrKey(fw.From.Email)}, fw)
			res.Usage = res.Usage.Add(r.Usage)
			res.Steps, res.Rejected = append(res.Steps, r.Steps...), res.Rejected+r.Rejected
			res.loops = append(res.loops, r.loops...)
			for _, t := range r.turns {
				t.Loop = i + 1
				res.turns = append(res.turns, t)
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
		res, err = p.runOwnerLoop(ctx, rec, body, mode, contacts, forwarded{})
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

// runOwnerLoop runs the bounded tool loop for one owner message.
// fw is the forwarded original of a delegation.
func (p *Pipeline) runOwnerLoop(ctx context.Context, rec *store.MessageRecord, body, mode string, contacts []string, fw forwarded) (OwnerResult, error) {
	a := p.Actor
	l := a.Learner
	res := OwnerResult{Mode: mode}
	steps := l.MaxSteps
	if steps <= 0 {
		steps = DefaultOwnerSteps
	}
	now := p.now()
	data := prompts.OwnerData{Owner: p.ownerOf(rec.Account), Mode: mode, Today: now.Format("2006-01-02"), Contacts: contacts,
		From: formatAddress(rec.From), To: formatAddresses(append(slices.Clone(rec.To), rec.Cc...)), Subject: rec.Subject,
		Text: prompts.TrimText(loopText(body, fw), p.maxBody())}
	res.loops = []ownerLoopInput{{Mode: mode, Owner: formatAddress(mail.Address{Name: data.Owner.Name, Email: data.Owner.Email}), Today: data.Today,
		Contacts: contacts, From: data.From, To: data.To, Subject: data.Subject, Text: data.Text, MaxSteps: steps}}
	if fw.From.Email != "" {
		res.loops[0].Forwarded = formatAddress(fw.From)
	}
	var draft *Draft
	// record keeps the model's answer of this turn and what came of it.
	record := func(answer, result, drafted string) {
		res.turns = append(res.turns, ownerTurnSnap{Turn: len(res.turns) + 1, Answer: answer, Result: result, Draft: drafted})
	}
	for range steps {
		data.Boundary, data.Steps = prompts.NewBoundary(), res.Steps
		system, user, err := l.Prompts.OwnerTurn(data)
		if err != nil {
			return res, fmt.Errorf("render owner prompt: %w", err)
		}
		refused := ""
		turn, info, err := llm.GenerateJSON(ctx, l.Model, llm.Request{System: system, Prompt: user, Schema: OwnerTurnSchema()}, func(t *ownerTurn) error {
			if why := p.checkTurn(t, mode, contacts, draft != nil, now); why != "" {
				refused = why
				return &ValidationError{Problems: []string{why}}
			}
			return nil
		})
		res.Usage = res.Usage.Add(info.Usage)
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			var ve *ValidationError
			if refused != "" && errors.As(err, &ve) {
				// The model insisted on something code does not allow:
				// the loop stops; nothing of it was done.
				res.Rejected++
				res.Steps = append(res.Steps, "refused: "+refused)
				record(info.Raw, "refused: "+refused, "")
				break
			}
			record(info.Raw, "error: "+err.Error(), "")
			return res, fmt.Errorf("owner loop: %w", err)
		}
		switch *turn.Tool {
		case ToolDone:
			res.Steps = append(res.Steps, "done")
			record(info.Raw, "done", "")
			return p.finishDelegate(ctx, rec, fw, draft, res)
		case ToolUpdateContext:
			r := &store.MemoryRecord{Account: rec.Account, Kind: turn.Kind, Contact: turn.Contact, Text: turn.Text,
				Source: store.SourceMail + rec.MessageID}
			if turn.Kind == store.MemoryTemporary {
				day, _ := time.Parse("2006-01-02", turn.Expires)
				r.Expires = day.AddDate(0, 0, 1)
			}
			saved, err := a.Memory.AddMemory(r)
			if err != nil {
				res.Rejected++
				res.Steps = append(res.Steps, "update_context refused: "+err.Error())
				record(info.Raw, res.Steps[len(res.Steps)-1], "")
				continue
			}
			res.Recorded = append(res.Recorded, store.Learned{ID: saved.ID, Text: recordLine(*saved)})
			res.Steps = append(res.Steps, "update_context: recorded "+saved.ID)
			record(info.Raw, res.Steps[len(res.Steps)-1], "")
		case ToolGenerateDraft:
			d, u, err := p.delegateDraft(ctx, rec, fw, turn.Instruction)
			res.Usage = res.Usage.Add(u)
			if err != nil {
				record(info.Raw, "generate_reply_draft failed: "+err.Error(), "")
				return res, err
			}
			draft = &d
			res.Steps = append(res.Steps, fmt.Sprintf("generate_reply_draft: drafted %d characters", len(d.Body)))
			record(info.Raw, res.Steps[len(res.Steps)-1], d.Body)
		case ToolProposeSend:
			qid, err := p.queueDelegated(ctx, rec, fw, *draft)
			if err != nil {
				record(info.Raw, "propose_send failed: "+err.Error(), "")
				return res, err
			}
			res.QueueID = qid
			res.Steps = append(res.Steps, "propose_send: queued "+qid+" for the owner's approval")
			record(info.Raw, res.Steps[len(res.Steps)-1], "")
		}
	}
	return p.finishDelegate(ctx, rec, fw, draft, res)
}

// finishDelegate makes sure a delegation ends with a queued draft: the
// owner asked for one, and queueing sends nothing.
func (p *Pipeline) finishDelegate(ctx context.Context, rec *store.MessageRecord, fw forwarded, draft *Draft, res OwnerResult) (OwnerResult, error) {
	if res.Mode != prompts.ModeDelegate || res.QueueID != "" {
		return res, nil
	}
	drafted := ""
	if draft == nil {
		d, u, err := p.delegateDraft(ctx, rec, fw, "")
		res.Usage = res.Usage.Add(u)
		if err != nil {
			return res, err
		}
		draft, drafted = &d, d.Body
	}
	qid, err := p.queueDelegated(ctx, rec, fw, *draft)
	res.QueueID = qid
	// Not a model turn: code finishing what the owner asked for.
	result := "code: the loop ended without propose_send; queued " + qid + " for the owner's approval"
	if err != nil {
		result = "code: queueing the delegated draft failed: " + err.Error()
	}
	res.turns = append(res.turns, ownerTurnSnap{Turn: len(res.turns) + 1, Result: result, Draft: drafted})
	return res, err
}

// checkTurn is code's veto on one tool call; "" allows it.
func (p *Pipeline) checkTurn(t *ownerTurn, mode string, contacts []string, haveDraft bool, now time.Time) string {
	if t.Tool == nil {
		return "tool: required"
	}
	switch *t.Tool {
	case ToolDone:
		return ""
	case ToolGenerateDraft:
		if mode != prompts.ModeDelegate {
			return "generate_reply_draft is only for a forwarded message"
		}
		return ""
	case ToolProposeSend:
		switch {
		case mode != prompts.ModeDelegate:
			return "propose_send is only for a forwarded message; nothing is sent from " + mode + " mail"
		case !haveDraft:
			return "propose_send needs generate_reply_draft first"
		}
		return ""
	case ToolUpdateContext:
		if mode == prompts.ModeDelegate {
			// The forwarded text is a stranger's: nothing is learned from it.
			return "update_context is not available for a forwarded message"
		}
	default:
		return fmt.Sprintf("unknown tool %q", *t.Tool)
	}
	c := mail.AddrKey(t.Contact)
	t.Contact = c
	switch {
	case !slices.Contains([]string{store.MemoryFact, store.MemoryPreference, store.MemoryRule, store.MemoryStyle, store.MemoryTemporary}, t.Kind):
		return fmt.Sprintf("kind %q is not a memory kind", t.Kind)
	case strings.TrimSpace(t.Text) == "":
		return "text: empty"
	case t.Kind == store.MemoryStyle && c != "":
		return "a style record is global: contact must be empty"
	case mode == prompts.ModeInstruction && (c == "" || slices.Contains(contacts, c) || validDomain(c)):
	case mode != prompts.ModeInstruction && slices.Contains(contacts, c):
	default:
		return fmt.Sprintf("contact %q is not one this mail may name (%s)", c, strings.Join(contacts, ", "))
	}
	if t.Kind == store.MemoryTemporary {
		day, err := time.Parse("2006-01-02", strings.TrimSpace(t.Expires))
		if err != nil {
			return "expires: a temporary record needs YYYY-MM-DD"
		}
		if !day.AddDate(0, 0, 1).After(now) {
			return "expires: the date has passed"
		}
		t.Expires = day.Format("2006-01-02")
	}
	return ""
}

var domainPattern = regexp.MustCompile(`^@[a-z0-9\-]+(\.[a-z0-9\-]+)+$`)

func validDomain(c string) bool { return domainPattern.MatchString(c) }

// delegateDraft drafts the reply to the forwarded original, with the
// owner's note as the instruction. The original sender is vouched for by
// the owner's forward, so their memory is used.
func (p *Pipeline) delegateDraft(ctx context.Context, rec *store.MessageRecord, fw forwarded, instruction string) (Draft, llm.Usage, error) {
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
		return Draft{}, info.Usage, fmt.Errorf("delegated draft: %w", err)
	}
	return d, info.Usage, nil
}

// queueDelegated records the forwarded original as a message of its own
// (DelegatedMailbox) and queues the draft as a reply to it. The recipient
// is the original's sender, chosen here by code; the gates are evaluated
// on it as for any reply, and the item waits for the owner's approval
// whatever they say.
func (p *Pipeline) queueDelegated(ctx context.Context, rec *store.MessageRecord, fw forwarded, d Draft) (string, error) {
	a := p.Actor
	acct := p.Accounts[rec.Account]
	key := delegatedKey(rec, fw.Index) // owner_forward.go
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
		orig.Subject = strings.TrimSpace(forwardSubject.ReplaceAllString(rec.Subject, ""))
	}
	if err := p.Store.PutMessage(orig); err != nil {
		return "", fmt.Errorf("delegate: %w", err)
	}
	in := GateInput{Route: RouteInfo{Route: RouteExternal, Reason: "forwarded by the owner"}, AuthservID: acct.Owner.AuthservID,
		Recipients: []Recipient{{Email: mail.AddrKey(fw.From.Email)}},
		Out:        guard.Fields{Subject: mail.ReplySubject(orig.Subject), Body: d.Body}}
	if c, err := p.Store.GetContact(rec.Account, fw.From.Email); err == nil {
		in.Recipients[0].Known = c.Known
	}
	gates := EvaluateGates(p.Policy, in)
	item := &store.QueueItem{
		ID: QueueID(key), Kind: store.KindDraft, Account: rec.Account, Message: key, MessageID: orig.MessageID,
		From: fw.From, To: []mail.Address{fw.From}, Subject: orig.Subject, Gates: gates, Draft: d.Body, Status: store.QueuePending,
		Reasons: slices.Concat([]string{"delegated by the owner (forwarded to the agent): always waits for approval"}, delegateNotes(fw), FailedReasons(gates)),
	}
	if _, err := a.Store.GetQueueItem(item.ID); err == nil {
		return item.ID, nil // queued before a crash
	}
	return item.ID, a.enqueue(ctx, item, nil)
}
