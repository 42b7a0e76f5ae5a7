package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mailagent/mailagent/agent/guard"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// ErrProposalRefused: a reply proposed from outside mailagent (an MCP
// client) cannot be queued for this message; the error says why.
var ErrProposalRefused = errors.New("proposal refused")

// MaxProposalChars bounds the text of a proposed reply.
const MaxProposalChars = 20000

// ProposalID is the queue id of the reply proposed from outside for the
// message k: one proposal per message, so a client cannot fill the queue.
func ProposalID(k store.MessageKey) string { return QueueID(k) + "_proposed" }

// ProposedReason is the first Reasons entry of a proposed draft: who
// proposed it. The review shows it like any reason.
func ProposedReason(source string) string {
	return "proposed by the MCP client " + strings.TrimSpace(source) + ", not written by mailagent: review it like any draft"
}

// Propose queues text, written by source (an MCP client), as a draft reply
// to the message k. Nothing is sent: the draft waits in the approval queue
// as pending, with the gates judged on its text like any draft. Its only
// recipient is chosen here, by code: the message's authenticated sender
// (never Reply-To, Cc or anything the caller says); a message whose sender
// is not authenticated, the owner's own mail, automated mail and mail the
// loop guard caught are refused (ErrProposalRefused). A second proposal
// for the same message is refused while the first exists.
func (p *Pipeline) Propose(ctx context.Context, k store.MessageKey, text, source string) (*store.QueueItem, error) {
	a := p.Actor
	text = strings.TrimSpace(strings.ToValidUTF8(text, "\uFFFD"))
	switch {
	case text == "":
		return nil, fmt.Errorf("propose: %w: the text is empty", ErrProposalRefused)
	case utf8.RuneCountInString(text) > MaxProposalChars:
		return nil, fmt.Errorf("propose: %w: the text is longer than %d characters", ErrProposalRefused, MaxProposalChars)
	}
	rec, err := p.Store.GetMessage(k)
	if err != nil {
		return nil, fmt.Errorf("propose: message: %w", err)
	}
	acct, ok := p.Accounts[rec.Account]
	if !ok {
		return nil, fmt.Errorf("propose: %w: unknown account %q", ErrProposalRefused, rec.Account)
	}
	if rec.Route != RouteExternal {
		return nil, fmt.Errorf("propose: %w: mailagent does not answer %s mail", ErrProposalRefused, rec.Route)
	}
	who := rec.Correspondent() // the identity layer's key: never From, Reply-To or the caller's words
	if who == "" {
		return nil, fmt.Errorf("propose: %w: the sender is not authenticated, so there is no one to reply to safely", ErrProposalRefused)
	}
	for _, o := range acct.Owner.Addresses {
		if mail.AddrKey(o) == who {
			return nil, fmt.Errorf("propose: %w: the sender is the owner", ErrProposalRefused)
		}
	}
	qid := ProposalID(k)
	if _, err := a.Store.GetQueueItem(qid); err == nil {
		return nil, fmt.Errorf("propose: %w: a proposed reply to this message is already queued (%s)", ErrProposalRefused, qid)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("propose: %w", err)
	}
	reply, err := compose.NewReply(recordMessage(rec), acct.From, acct.Owner.Addresses, false)
	if err != nil {
		return nil, fmt.Errorf("propose: %w: %v", ErrProposalRefused, err)
	}
	to := mail.Address{Email: rec.Correspondent()}
	if mail.AddrKey(rec.From.Email) == who {
		to.Name = rec.From.Name
	}
	reply.To, reply.Cc = []mail.Address{to}, nil

	in := p.gateInput(rec, RouteInfo{Route: rec.Route, Reason: rec.RouteReason}, acct)
	r := Recipient{Email: to.Email}
	if c, err := p.Store.GetContact(rec.Account, to.Email); err == nil {
		r.Known = c.Known
	}
	if n, _, err := p.Store.AutoSendCounts(rec.Account, to.Email, store.Day(p.now())); err == nil {
		r.SentToday = n
	}
	in.Recipients = []Recipient{r}
	in.Out = guard.Fields{Subject: mail.ReplySubject(reply.Subject), Body: text}
	in.Trusted = p.trusted(rec, reply, a.Profile)
	gates := EvaluateGates(p.Policy, in)

	item := &store.QueueItem{
		ID: qid, Kind: store.KindDraft, Account: rec.Account, Message: rec.MessageKey, MessageID: rec.MessageID,
		ThreadID: rec.ThreadID, From: rec.From, To: reply.To, Subject: rec.Subject,
		Classification: rec.Classification, Gates: gates,
		Reasons: append([]string{ProposedReason(source)}, FailedReasons(gates)...),
		Draft:   text, Status: store.QueuePending,
	}
	if err := a.enqueue(ctx, item, p.prepareDraft(item, reply)); err != nil {
		return nil, fmt.Errorf("propose: %w", err)
	}
	return a.Store.GetQueueItem(qid)
}
