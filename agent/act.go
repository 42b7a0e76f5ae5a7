package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent/guard"
	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// Mailer performs the IMAP and SMTP side effects for an account.
type Mailer interface {
	// Send runs one SMTP transaction. Errors that may succeed later should
	// satisfy interface{ Temporary() bool } or be *TemporaryError.
	Send(ctx context.Context, account, from string, to []string, raw []byte) error
	AppendSent(ctx context.Context, account string, raw []byte) error
	SentHas(ctx context.Context, account, messageID string) (bool, error)
	AppendDraft(ctx context.Context, account string, raw []byte) (uid uint32, err error)
	DeleteDraft(ctx context.Context, account string, uid uint32) error
	// Answered reports whether the mailbox shows original answered: a
	// reply in the Sent folder that names it and is addressed to its reply
	// party, or \Answered on original itself (never on another
	// correspondent's message that reuses its Message-ID). how says which.
	// See answered.go and outbox.Mailer.
	Answered(ctx context.Context, original *store.MessageRecord) (found bool, how string, err error)
	// MarkAnswered sets \Answered on original, and on no other
	// correspondent's message.
	MarkAnswered(ctx context.Context, original *store.MessageRecord) error
}

// ActStore is what acting needs from persistent state, beyond Store.
type ActStore interface {
	Store
	PutQueueItem(q *store.QueueItem) error
	GetQueueItem(id string) (*store.QueueItem, error)
	ListQueue(status string, fn func(*store.QueueItem) error) error
	TransitionQueueItem(id string, from []string, to string, mutate func(*store.QueueItem) error) (*store.QueueItem, error)
	// ApproveQueueItem moves an item to approved and writes its outbox
	// record in one transaction (both or neither).
	ApproveQueueItem(id string, from []string, mutate func(*store.QueueItem) error, ob *store.OutboxRecord) (*store.QueueItem, *store.OutboxRecord, error)
	// CancelApproval undoes a scheduled approval: the outbox record goes
	// scheduled → cancelled and its item approved → pending, in one
	// transaction.
	CancelApproval(outboxID string) (*store.QueueItem, error)
	PutOutbox(r *store.OutboxRecord) error
	GetOutbox(id string) (*store.OutboxRecord, error)
	ListOutbox(status string, fn func(*store.OutboxRecord) error) error
	TransitionOutbox(id string, from []string, to string, mutate func(*store.OutboxRecord) error) (*store.OutboxRecord, error)
	UpdateContact(account, email string, fn func(*store.Contact) error) (*store.Contact, error)
	IncrAutoSend(account, contact, day string, perContactMax, globalMax int) (bool, error)
}

// Event tells listeners (the TUI, through the watcher's socket) that
// something changed.
type Event struct {
	Kind    string `json:"kind"` // queue_added | queue_updated | sent | scheduled | message_done | needs_review
	ID      string `json:"id,omitempty"`
	Account string `json:"account,omitempty"`
}

// EventsTo adapts a listener of Events to the notify hooks of agent's
// subpackages (outbox.Outbox.Notify, followup.Tracker.Notify), which
// speak kind, id and account. A nil f gives a nil hook.
func EventsTo(f func(Event)) func(kind, id, account string) {
	if f == nil {
		return nil
	}
	return func(kind, id, account string) { f(Event{Kind: kind, ID: id, Account: account}) }
}

// Actor turns decisions into effects: drafts, queue items and sends. The
// recipients of every reply are computed here, from the message being
// answered; nothing the model returns can add one.
type Actor struct {
	Store   ActStore
	Drafter Drafter
	Mailer  Mailer
	// Profile is the owner's profile and style notes, shown to the drafter
	// and allowed as a source of addresses and links in drafts.
	Profile string
	// Notify, when set, is called after each change (it must not block).
	Notify func(Event)
	// Summarizer refreshes contact summaries; nil keeps none.
	Summarizer Summarizer
	// SummaryEvery is the number of exchanges between summaries
	// (DefaultSummaryEvery when 0).
	SummaryEvery int
	// Memory keeps learned records and examples (learn.go); nil learns
	// nothing and drafts without them.
	Memory MemoryStore
	// MemoryBudget caps learned memory in a draft prompt, in
	// EstimateTokens (DefaultMemoryBudget when 0).
	MemoryBudget int
	// Learner distills style rules and runs the owner loop (owner.go);
	// nil distills nothing and leaves owner mail alone.
	Learner *Learner
}

func (a *Actor) notify(e Event) {
	if a != nil && a.Notify != nil {
		a.Notify(e)
	}
}

// QueueID is the queue item id for a message: derived from its key so that
// acting twice on the same message (after a crash) never makes two items.
func QueueID(k store.MessageKey) string { return outbox.QueueID(k) }

// OutboxID is the outbox record id of a message's automatic reply.
func OutboxID(k store.MessageKey) string { return outbox.ID(k) }

// ApprovalOutboxID is the outbox record id of an approved queue item's
// reply: one per item, so approving twice cannot make two.
func ApprovalOutboxID(queueID string) string { return outbox.ApprovalID(queueID) }

// recordMessage rebuilds the parts of a parsed message that replying needs.
func recordMessage(rec *store.MessageRecord) *mail.Message {
	return &mail.Message{
		MessageID: rec.MessageID, Synthesized: rec.Synthesized, InReplyTo: rec.InReplyTo, References: rec.References,
		Subject: rec.Subject, From: rec.From, ReplyTo: rec.ReplyTo, To: rec.To, Cc: rec.Cc, Date: rec.Date,
		CleanText: rec.Excerpt, Text: rec.Excerpt,
	}
}

// trusted is what an outgoing reply to rec may repeat, and nothing the
// sender wrote: text from the owner's profile and from the owner's own
// mail in the thread that rec's authenticated sender may see
// (threadRecords); addresses of the owner, of the profile, and the reply's
// final recipients.
func (p *Pipeline) trusted(rec *store.MessageRecord, reply compose.Reply, profile string) guard.Trusted {
	var b strings.Builder
	b.WriteString(profile)
	for _, r := range p.threadRecords(rec, 0) {
		if r.Route == RouteOwner {
			b.WriteByte('\n')
			b.WriteString(r.Subject)
			b.WriteByte('\n')
			b.WriteString(r.Excerpt)
		}
	}
	t := guard.Trusted{Text: b.String()}
	t.Addresses = append(t.Addresses, p.Accounts[rec.Account].Owner.Addresses...)
	t.Addresses = append(t.Addresses, guard.Addresses(profile)...)
	for _, a := range append(slices.Clone(reply.To), reply.Cc...) {
		t.Addresses = append(t.Addresses, a.Email)
	}
	return t
}

// act carries out rec's decision. body is the message's clean text when
// it is at hand (otherwise the stored excerpt is used).
// fwds are the message's attached messages (the owner's forwards).
func (p *Pipeline) act(ctx context.Context, rec *store.MessageRecord, body string, fwds []mail.Forward, route RouteInfo, tr *tracer, out *Outcome) error {
	a := p.Actor
	acct := p.Accounts[rec.Account]
	if body == "" {
		body = rec.Excerpt
	}
	if route.Route == RouteOwner && a.Learner != nil && a.Memory != nil {
		return p.ownerMail(ctx, rec, body, fwds, tr, out) // owner.go: the owner's channel
	}
	// Memory is written only for a sender the owner's server vouches for:
	// anyone can write a known contact's address in From.
	if id := rec.SenderAuth.Identity(); route.Route == RouteExternal && id != "" {
		p.rememberInbound(rec, id)
		p.refreshSummary(ctx, rec.Account, id)
	}
	var err error
	switch rec.Decision {
	case DecisionAutoSend, DecisionQueue:
		err = p.draftAndAct(ctx, rec, body, route, acct, tr, out)
	case DecisionNotify:
		err = a.enqueue(ctx, notifyItem(rec), nil)
	}
	if err == nil && rec.State != store.StateNeedsReview {
		p.reflectInMailbox(ctx, rec, tr)
	}
	return err
}

func (p *Pipeline) draftAndAct(ctx context.Context, rec *store.MessageRecord, body string, route RouteInfo, acct Account, tr *tracer, out *Outcome) error {
	a := p.Actor
	qid := QueueID(rec.MessageKey)
	if _, err := a.Store.GetQueueItem(qid); err == nil {
		return nil // acted before a crash; the item exists
	}
	if ob, err := a.Store.GetOutbox(OutboxID(rec.MessageKey)); err == nil && ob != nil {
		return nil // the auto-reply is already in the outbox
	}
	if skip, err := p.skipAnswered(ctx, rec, tr); err != nil || skip {
		return err
	}
	reply, err := compose.NewReply(recordMessage(rec), acct.From, acct.Owner.Addresses, p.Policy.ReplyAll)
	if err != nil {
		// No valid recipient (for example, only the owner): nothing to
		// answer, so the owner is told instead.
		rec.Decision = DecisionNotify
		rec.Reasons = append(rec.Reasons, "no one to reply to: "+err.Error())
		return a.enqueue(ctx, notifyItem(rec), nil)
	}

	// An unauthenticated sender is nobody in particular: the prompt gets
	// no one's memory, no thread, and not the owner's profile either (its
	// reply can only go to the queue).
	profile := a.Profile
	if rec.SenderAuth.Identity() == "" {
		profile = ""
	}
	req := DraftRequest{
		Owner: prompts.Owner{Name: acct.Owner.Name, Email: first(acct.Owner.Addresses)}, Profile: profile,
		From: formatAddress(rec.From), Subject: rec.Subject,
		Body: prompts.TrimText(body, p.maxBody()),
	}
	if !rec.Date.IsZero() {
		req.Date = rec.Date.Format(time.RFC1123Z)
	}
	if rec.Classification != nil {
		req.Intents = rec.Classification.Intents
	}
	req.Memory = p.memoryFor(rec.Account, rec.SenderAuth.Identity(), req.Intents, rec.Decision != DecisionAutoSend)
	offered := p.runTools(ctx, rec, &req, tr) // tools.go: thread, contact, calendar, MCP
	done := tr.step("draft")
	d, info, err := a.Drafter.Draft(ctx, req)
	out.Usage = out.Usage.Add(info.Usage)
	done(store.Step{TokensIn: info.Usage.PromptTokens, TokensOut: info.Usage.OutputTokens, Model: info.Model, Retries: info.Retries + max(info.Attempts-1, 0),
		Snapshot: tr.snap(req, modelAnswer(info.Raw, d, err))}, err)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.markNeedsReview(rec, "drafting failed: "+err.Error())
		return nil
	}

	// The gates run again now that the draft exists, so that the output
	// guard is judged (and shown) on the real text.
	in := p.gateInput(rec, route, acct)
	in.Out = guard.Fields{Subject: mail.ReplySubject(reply.Subject), Body: d.Body}
	in.Trusted = p.trusted(rec, reply, a.Profile)
	rec.Gates = EvaluateGates(p.Policy, in)
	rec.Gates = p.scheduleGate(ctx, rec.Gates, offered, rec, req, d.Body)
	rec.Offer = p.slotOffer(offered, rec) // schedule_event.go
	recipients := append(slices.Clone(reply.To), reply.Cc...)
	if rec.Decision == DecisionQueue {
		rec.Reasons = FailedReasons(rec.Gates)
		if d.NeedsOwnerInput {
			rec.Reasons = append(rec.Reasons, "the draft needs the owner's input")
		}
	}
	if rec.Decision == DecisionAutoSend {
		switch {
		case d.NeedsOwnerInput:
			rec.Decision, rec.Reasons = DecisionQueue, []string{"the draft needs the owner's input"}
		case !AllPass(rec.Gates):
			rec.Decision, rec.Reasons = DecisionQueue, FailedReasons(rec.Gates)
		case p.ownerRuleFor(rec.Account, recipients[0].Email) != "":
			// memory_select.go: the owner's standing rules are checked by them.
			rec.Decision, rec.Reasons = DecisionQueue, []string{"owner rule: " + p.ownerRuleFor(rec.Account, recipients[0].Email)}
		case len(recipients) != 1 || !mail.SameAddr(recipients[0].Email, rec.SenderAuth.Identity()):
			// The recipients gate passed, so this cannot happen; checked
			// again here because it is what keeps a reply from going
			// anywhere but back to the authenticated sender.
			rec.Decision, rec.Reasons = DecisionQueue, []string{"recipients: an automatic reply goes only to the authenticated sender"}
		default:
			// The caps are checked and counted in one transaction, so two
			// watchers (or a race with a restart) cannot exceed them. They
			// count per recipient: the one address the reply goes to.
			day := store.Day(p.now())
			ok, err := a.Store.IncrAutoSend(rec.Account, recipients[0].Email, day, p.Policy.MaxPerContactPerDay, p.Policy.MaxPerDay)
			if err != nil {
				return fmt.Errorf("count auto-send: %w", err)
			}
			if !ok {
				rec.Decision, rec.Reasons = DecisionQueue, []string{fmt.Sprintf("caps: the daily auto-send cap (%d to %s, %d in all) was reached",
					p.Policy.MaxPerContactPerDay, recipients[0].Email, p.Policy.MaxPerDay)}
				break
			}
			return p.autoSend(ctx, rec, reply, d, acct, tr)
		}
	}
	item := &store.QueueItem{
		ID: qid, Kind: store.KindDraft, Account: rec.Account, Message: rec.MessageKey, MessageID: rec.MessageID,
		ThreadID: rec.ThreadID, From: rec.From, To: append(slices.Clone(reply.To), reply.Cc...), Subject: rec.Subject,
		Classification: rec.Classification, Gates: rec.Gates, Reasons: rec.Reasons, Draft: d.Body, Status: store.QueuePending,
		Invitation: rec.Invitation, Offer: rec.Offer,
	}
	return a.enqueue(ctx, item, p.prepareDraft(item, reply))
}

// DefaultMaxBodyChars is how much of a message's clean text the model sees
// by default: about 1,000 tokens, which keeps 95 % of classify prompts under
// 1,500 tokens on the SpamAssassin corpus (BENCHMARKS.md).
const DefaultMaxBodyChars = 4000

func (p *Pipeline) maxBody() int {
	if p.MaxBodyChars > 0 {
		return p.MaxBodyChars
	}
	return DefaultMaxBodyChars
}

func (p *Pipeline) markNeedsReview(rec *store.MessageRecord, reason string) {
	rec.State = store.StateNeedsReview
	rec.Decision = DecisionNeedsReview
	rec.Error = reason
	rec.Attempts++
	rec.Reasons = []string{reason}
}

// enqueue stores a queue item, then appends its IMAP draft when asked and
// records the draft's UID. The item is written first: a crash in between
// leaves at most a draft mailagent does not know about, never a second
// copy (a restart finds the item and does not act again).
func (a *Actor) enqueue(ctx context.Context, item *store.QueueItem, draftRaw []byte) error {
	if _, err := a.Store.GetQueueItem(item.ID); err == nil {
		return nil // acted on before (a resumed or re-triaged message)
	}
	if err := a.Store.PutQueueItem(item); err != nil {
		return fmt.Errorf("queue %s: %w", item.ID, err)
	}
	if draftRaw != nil && a.Mailer != nil {
		uid, err := a.Mailer.AppendDraft(ctx, item.Account, draftRaw)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		_, terr := a.Store.TransitionQueueItem(item.ID, []string{store.QueuePending}, store.QueuePending, func(q *store.QueueItem) error {
			if err != nil {
				q.Error = "could not save the draft to the Drafts folder: " + err.Error()
			} else {
				q.IMAPDraftUID = uid
			}
			return nil
		})
		if terr != nil && !errors.Is(terr, store.ErrConflict) {
			return fmt.Errorf("queue %s: %w", item.ID, terr)
		}
	}
	a.notify(Event{Kind: "queue_added", ID: item.ID, Account: item.Account})
	return nil
}

func (p *Pipeline) autoSend(ctx context.Context, rec *store.MessageRecord, reply compose.Reply, d Draft, acct Account, tr *tracer) error {
	a := p.Actor
	reply.Body = d.Body
	reply.Footer = acct.Footer
	reply.AutoSubmitted = true
	reply.ExtraHeaders = map[string]string{TraceHeader: rec.TraceID}
	reply.Date = p.now()
	raw, msgID, err := compose.Build(reply)
	if err != nil {
		p.markNeedsReview(rec, "could not build the reply: "+err.Error())
		return nil
	}
	now := p.now()
	ob := &store.OutboxRecord{
		ID: OutboxID(rec.MessageKey), Account: rec.Account, From: acct.From.Email, MessageID: msgID,
		InReplyTo: rec.MessageID, To: addrStrings(append(slices.Clone(reply.To), reply.Cc...)), Raw: raw,
		Auto: true, CreatedAt: now, Message: rec.MessageKey, Subject: rec.Subject,
		Body: d.Body, Offer: rec.Offer,
	}
	if err := p.schedule(ob, now, p.Policy.SendDelay); err != nil {
		p.markNeedsReview(rec, "not sent: "+err.Error())
		return nil
	}
	// The record is written before any SMTP traffic: see Deliver.
	if err := a.Store.PutOutbox(ob); err != nil {
		return fmt.Errorf("outbox %s: %w", ob.ID, err)
	}
	rec.Reasons = []string{"every gate passed"}
	if ob.Status == store.OutboxScheduled {
		rec.Reasons = append(rec.Reasons, "sending at "+ob.SendAt.Format(time.TimeOnly)+" (policy.send_delay); cancel from the queue")
		a.notify(Event{Kind: "scheduled", ID: ob.ID, Account: ob.Account})
		return nil
	}
	done := tr.step("send")
	err = p.Deliver(ctx, ob.ID)
	detail := "Message-ID <" + msgID + ">"
	if cur, gerr := a.Store.GetOutbox(ob.ID); gerr == nil && cur.Status == store.OutboxCancelled {
		// Deliver found the message answered already: nothing was sent.
		rec.Reasons = []string{"not sent: " + cur.Error}
		detail = "not sent: " + cur.Error
	}
	done(store.Step{Detail: detail, Snapshot: tr.snap(map[string]any{"outbox": ob.ID, "to": ob.To, "subject": ob.Subject}, detail)}, err)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	// A failed send is recorded on the outbox record (and retried or shown
	// to the owner); the message itself has been handled.
	return nil
}

func addrStrings(as []mail.Address) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Email
	}
	return out
}

// notifyItem is the queue item that shows the owner a message without a
// draft.
func notifyItem(rec *store.MessageRecord) *store.QueueItem {
	return &store.QueueItem{
		ID: QueueID(rec.MessageKey), Kind: store.KindNotify, Account: rec.Account, Message: rec.MessageKey,
		MessageID: rec.MessageID, ThreadID: rec.ThreadID, From: rec.From, Subject: rec.Subject,
		Classification: rec.Classification, Gates: rec.Gates, Reasons: rec.Reasons, Status: store.QueuePending,
		Invitation: rec.Invitation,
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// rememberInbound adds an inbound exchange to the memory of id, the
// message's authenticated sender. It is keyed on the message id, so a
// resumed message is not counted twice.
func (p *Pipeline) rememberInbound(rec *store.MessageRecord, id string) {
	summary := ""
	if rec.Classification != nil {
		summary = rec.Classification.Summary
	}
	_, err := p.Actor.Store.UpdateContact(rec.Account, id, func(c *store.Contact) error {
		for _, h := range c.History {
			if h.MessageID != "" && h.MessageID == rec.MessageID {
				return nil
			}
		}
		if c.Name == "" {
			c.Name = rec.From.Name
		}
		when := rec.Date
		if when.IsZero() {
			when = p.now()
		}
		if c.FirstSeen.IsZero() || when.Before(c.FirstSeen) {
			c.FirstSeen = when
		}
		if when.After(c.LastSeen) {
			c.LastSeen = when
		}
		c.Inbound++
		c.SinceSummary++
		c.History = append(c.History, store.HistoryEntry{Date: when, Direction: "in", Subject: rec.Subject, Summary: summary, MessageID: rec.MessageID})
		return nil
	})
	if err != nil {
		p.logger().Warn("update contact", "err", err)
	}
}
