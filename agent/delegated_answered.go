package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mailagent/mailagent/agent/owner"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// A delegated reply (the owner forwarded a message to the agent, approved
// the draft, and it was sent) answers a message that is in the owner's
// mailbox, but its record (DelegatedMailbox) names no mailbox: the agent
// only read a copy of it inside the owner's forward. After the send the
// original is found by its Message-ID and flagged \Answered, as an
// ordinary reply flags its own, and its open queue item is closed.
//
// The copy is the owner's mail, but every header of it is what a
// stranger wrote. So a message is flagged only when all of these hold:
//
//   - the forward routed as the owner's own mail (authenticated by the
//     account's server, or read from Sent), checked again here from its
//     record (store.MessageRecord.DelegatedBy);
//   - the reply went to exactly one address, the forwarded copy's sender,
//     and answers (In-Reply-To) the copy's Message-ID;
//   - the server's message carries exactly that Message-ID (the IMAP
//     search matches substrings: each hit's header is compared) and the
//     owner's server authenticated its sender as that same address
//     (Identify; its From text alone proves nothing);
//   - no other message found with that Message-ID is from anyone else,
//     or from nobody authenticated (a forged copy naming someone else's
//     Message-ID flags nothing), and no more than MaxLocated carry it.
//
// Nothing happens before the send: a rejected draft, or an approval
// cancelled in its undo window, flags nothing.

// MaxLocated bounds the messages one Message-ID may name for a delegated
// original to be flagged: more, and nothing is flagged.
const MaxLocated = 8

// OriginalLocator finds messages by Message-ID and flags one of them. An
// Actor.Mailer that implements it (daemon.Mailer does) has the original
// of a delegated reply flagged \Answered after the send.
type OriginalLocator interface {
	// LocateMessageID returns the messages of account, in each of
	// mailboxes (one the server does not have is skipped), whose
	// Message-ID header contains messageID, with their header, at most
	// MaxLocated+1 of them. The server matches substrings: the caller
	// compares the header's Message-ID.
	LocateMessageID(ctx context.Context, account string, mailboxes []string, messageID string) ([]LocatedMessage, error)
	// MarkAnsweredAt sets \Answered on the message at key, if its
	// mailbox still has key's UIDVALIDITY.
	MarkAnsweredAt(ctx context.Context, account string, key store.MessageKey) error
}

// LocatedMessage is one message LocateMessageID found.
type LocatedMessage struct {
	Key    store.MessageKey // Account, Mailbox, UIDValidity and UID on the server
	Header []byte           // its header as the server has it
}

// messageFinder is the store's Message-ID index (store.Store has it).
type messageFinder interface {
	FindByMessageID(account, messageID string) ([]*store.MessageRecord, error)
}

// markAnswered flags the original of a delivered reply \Answered: for a
// delegated reply, the message in the mailbox it answers (answerDelegated);
// otherwise ob.Message itself (Mailer.MarkAnswered). It is the outbox's
// MarkAnswered hook, which the outbox calls only for a reply addressed to
// the original's reply party (store.AnswersTo).
func (p *Pipeline) markAnswered(ctx context.Context, ob *store.OutboxRecord) error {
	if !owner.IsDelegated(ob.Message) {
		original, err := p.outbox().Original(ob)
		if err != nil {
			return err
		}
		return p.Actor.Mailer.MarkAnswered(ctx, original)
	}
	flagged, refused, err := p.answerDelegated(ctx, ob)
	switch {
	case err != nil:
		return fmt.Errorf("delegated reply %s: %w", ob.ID, err)
	case refused != "":
		p.logger().Info(`delegated reply: original not flagged \Answered: `+refused, "account", ob.Account, "outbox", ob.ID)
	default:
		p.logger().Info(`delegated reply: original flagged \Answered`, "account", ob.Account, "outbox", ob.ID, "messages", len(flagged))
	}
	return nil
}

// answerDelegated finds and flags the original of the delegated reply ob
// under the rules at the top of this file. It returns the messages it
// flagged, or why it flagged none.
func (p *Pipeline) answerDelegated(ctx context.Context, ob *store.OutboxRecord) (flagged []store.MessageKey, refused string, err error) {
	loc, ok := p.Actor.Mailer.(OriginalLocator)
	if !ok {
		return nil, "the mailer cannot search the mailbox", nil
	}
	rec, err := p.Store.GetMessage(ob.Message)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "the delegated original has no record", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("delegated original: %w", err)
	}
	who, why := p.delegatedCorrespondent(ob, rec)
	if why != "" {
		return nil, why, nil
	}
	if why, err := p.checkForward(ob.Account, rec); err != nil || why != "" {
		return nil, why, err
	}
	boxes := p.originalMailboxes(ob.Account, rec)
	found, err := loc.LocateMessageID(ctx, ob.Account, boxes, rec.MessageID)
	if err != nil {
		return nil, "", fmt.Errorf("find the original: %w", err)
	}
	if len(found) > MaxLocated {
		return nil, fmt.Sprintf("more than %d messages carry its Message-ID", MaxLocated), nil
	}
	key := mail.IDKey(rec.MessageID)
	var match []store.MessageKey
	for _, f := range found {
		h := mail.Parse(f.Header)
		if h.Synthesized || mail.IDKey(h.MessageID) != key || f.Key.Account != ob.Account {
			continue // a substring hit, or no id of its own
		}
		if !store.AuthenticatedAs(Identify(f.Key, f.Header, p.Accounts[ob.Account].Owner), who) {
			return nil, "its Message-ID is also on a message not authenticated as from " + who, nil
		}
		match = append(match, f.Key)
	}
	if len(match) == 0 {
		return nil, "no message with its Message-ID from " + who + " in " + strings.Join(boxes, ", "), nil
	}
	for _, k := range match {
		if err := loc.MarkAnsweredAt(ctx, ob.Account, k); err != nil {
			return flagged, "", fmt.Errorf(`set \Answered in %s: %w`, k.Mailbox, err)
		}
		flagged = append(flagged, k)
		p.answeredInStore(ctx, ob, k, who)
	}
	return flagged, "", nil
}

// delegatedCorrespondent is the one address the delegated reply ob went
// to, when it is the forwarded copy's sender and ob answers the copy's
// Message-ID; otherwise why not.
func (p *Pipeline) delegatedCorrespondent(ob *store.OutboxRecord, rec *store.MessageRecord) (who, why string) {
	who = mail.AddrKey(rec.From.Email)
	key := mail.IDKey(rec.MessageID)
	switch {
	case ob.Auto:
		return "", "an automatic reply never answers a delegated message"
	case rec.Synthesized || key == "":
		return "", "the forwarded message had no Message-ID"
	case mail.IDKey(ob.InReplyTo) != key:
		return "", "the reply does not answer the forwarded message's Message-ID"
	case who == "" || len(ob.To) != 1 || !mail.SameAddr(ob.To[0], who):
		return "", "the reply did not go to the forwarded message's sender alone"
	case p.Accounts[ob.Account].Owner.IsOwner(who) || p.Accounts.IsAgentAddress(ob.Account, who):
		return "", "the forwarded message is from the owner's own address"
	}
	return who, ""
}

// checkForward reports why the owner's forward that delegated rec does
// not vouch for it ("" when it does): it must be on record and have routed
// as the owner's own mail.
func (p *Pipeline) checkForward(account string, rec *store.MessageRecord) (string, error) {
	if rec.DelegatedBy == nil {
		return "no record of the owner's forward", nil
	}
	fwd, err := p.Store.GetMessage(*rec.DelegatedBy)
	if errors.Is(err, store.ErrNotFound) {
		return "no record of the owner's forward", nil
	}
	if err != nil {
		return "", fmt.Errorf("the owner's forward: %w", err)
	}
	if fwd.Account != account || fwd.Route != RouteOwner || !p.Accounts[account].Owner.IsOwner(fwd.From.Email) {
		return "the forward was not the owner's authenticated mail", nil
	}
	return "", nil
}

// originalMailboxes are where the original of rec is looked for: INBOX,
// the mailbox the owner's forward arrived in, and every mailbox the store
// has a message with its Message-ID in.
func (p *Pipeline) originalMailboxes(account string, rec *store.MessageRecord) []string {
	boxes := []string{"INBOX"}
	add := func(mb string) {
		if mb != "" && !owner.IsDelegated(store.MessageKey{Mailbox: mb}) && !slices.ContainsFunc(boxes, func(b string) bool {
			return b == mb || strings.EqualFold(b, "INBOX") && strings.EqualFold(mb, "INBOX")
		}) {
			boxes = append(boxes, mb)
		}
	}
	if rec.DelegatedBy != nil {
		add(rec.DelegatedBy.Mailbox)
	}
	if f, ok := p.Store.(messageFinder); ok {
		recs, err := f.FindByMessageID(account, rec.MessageID)
		if err != nil {
			p.logger().Warn("find the delegated original's records", "account", account, "err", err)
		}
		for _, r := range recs {
			add(r.Mailbox)
		}
	}
	return boxes
}

// answeredInStore records in the store what the delegated reply answered,
// as an ordinary reply leaves it: the original's open queue item (a draft
// or a notice the agent queued for it) is closed. Only the record of the
// very message flagged (same key and UIDVALIDITY, same sender) is touched.
func (p *Pipeline) answeredInStore(ctx context.Context, ob *store.OutboxRecord, k store.MessageKey, who string) {
	orig, err := p.Store.GetMessage(k)
	if err != nil || !store.AuthenticatedAs(orig, who) {
		return
	}
	reason := "answered by the delegated reply " + ob.QueueID + " (the owner forwarded this message to the agent)"
	_, err = p.resolveItem(ctx, QueueID(k), openStatuses, reason)
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		p.logger().Warn("close the delegated original's queue item", "account", ob.Account, "queue", QueueID(k), "err", err)
	}
}
