package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/owner"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// answeredHeaderBytes bounds each header read to confirm a search hit.
const answeredHeaderBytes = 64 << 10

// Answered implements agent.Mailer: it asks the server whether original
// was answered, counting only evidence about original's own
// correspondent. The Sent folder is searched for a message whose
// In-Reply-To or References names original's Message-ID (IMAP HEADER
// search, then the header is read to confirm the exact id: the search
// matches substrings) and that is addressed (To or Cc) to original's reply
// party (store.AnswersTo). Then original's mailbox for \Answered on
// original itself: at its own UID while the mailbox keeps its UIDVALIDITY
// (and the message there carries its Message-ID), or on a message carrying
// its Message-ID whose sender the owner's server authenticated as the same
// correspondent (agent.Identify on the fetched header, then
// store.SameCorrespondent). A message without Message-ID is looked up by
// its UID only.
func (m *Mailer) Answered(ctx context.Context, original *store.MessageRecord) (bool, string, error) {
	a, err := m.account(original.Account)
	if err != nil {
		return false, "", err
	}
	key := originalIDKey(original)
	how := ""
	if key != "" {
		err = a.with(ctx, sentBox, func(c *imapsync.Client) error {
			uids, err := c.SearchHeader(ctx, []string{"In-Reply-To", "References"}, mail.NormalizeID(original.MessageID))
			if err != nil {
				return err
			}
			hdrs, err := c.FetchHeaders(ctx, uids, answeredHeaderBytes)
			if err != nil {
				return err
			}
			for _, uid := range uids {
				h := mail.Parse(hdrs[uid])
				if !slices.ContainsFunc(append(slices.Clone(h.InReplyTo), h.References...), func(id string) bool { return mail.IDKey(id) == key }) {
					continue
				}
				if store.AnswersTo(recipients(h), original) {
					how = fmt.Sprintf("a reply to it is in the Sent folder, %s", describeSent(h))
					return nil
				}
			}
			return nil
		})
		// No Sent folder at all holds no reply: the flag still counts.
		if errors.Is(err, imapsync.ErrNoMailbox) {
			err = nil
		}
		if err != nil || how != "" {
			return how != "", how, err
		}
	}
	if noMailbox(original.MessageKey) {
		return false, "", nil
	}
	err = a.with(ctx, inMailbox(original.Mailbox), func(c *imapsync.Client) error {
		uids, err := a.originalUIDs(ctx, c, original, imapsync.FlagAnswered)
		if err != nil || len(uids) == 0 {
			return err
		}
		flags, err := c.Flags(ctx, uids)
		if err != nil {
			return err
		}
		for _, uid := range uids {
			if slices.Contains(flags[uid], imapsync.FlagAnswered) {
				how = `it is flagged \Answered in ` + original.Mailbox
				return nil
			}
		}
		return nil
	})
	return how != "", how, err
}

// MarkAnswered implements agent.Mailer: it sets \Answered on original:
// the message at its own UID while the mailbox keeps its UIDVALIDITY and
// that message still carries original's Message-ID (so another message
// that copies its Message-ID is left alone); else the messages of its
// mailbox carrying its Message-ID whose sender was authenticated as the
// same correspondent (store.SameCorrespondent: a stranger's message that
// reuses the id is never flagged), or, when it has no Message-ID, the one
// at its UID while the mailbox's UIDVALIDITY is unchanged.
func (m *Mailer) MarkAnswered(ctx context.Context, original *store.MessageRecord) error {
	a, err := m.account(original.Account)
	if err != nil {
		return err
	}
	if noMailbox(original.MessageKey) {
		return nil
	}
	return a.with(ctx, inMailbox(original.Mailbox), func(c *imapsync.Client) error {
		uids, err := ownUID(ctx, c, original)
		if err == nil && len(uids) == 0 {
			uids, err = a.originalUIDs(ctx, c, original)
		}
		if err != nil {
			return err
		}
		return c.StoreFlags(ctx, uids, true, []string{imapsync.FlagAnswered})
	})
}

// originalIDKey is original's Message-ID key, or "" when it has none of
// its own (the parser made one up).
func originalIDKey(original *store.MessageRecord) string {
	if original.Synthesized {
		return ""
	}
	return mail.IDKey(original.MessageID)
}

// recipients are the To and Cc addresses of h.
func recipients(h *mail.Message) []string {
	out := make([]string, 0, len(h.To)+len(h.Cc))
	for _, x := range slices.Concat(h.To, h.Cc) {
		out = append(out, x.Email)
	}
	return out
}

// ownUID is original's own UID in the selected mailbox when the mailbox
// keeps original's UIDVALIDITY and the message there carries original's
// Message-ID; else none.
func ownUID(ctx context.Context, c *imapsync.Client, original *store.MessageRecord) ([]uint32, error) {
	key := originalIDKey(original)
	_, uv, err := c.Selected()
	if err != nil || key == "" || original.UID == 0 || uv != original.UIDValidity {
		return nil, err
	}
	hdrs, err := c.FetchHeaders(ctx, []uint32{original.UID}, answeredHeaderBytes)
	if err != nil {
		return nil, err
	}
	if raw, ok := hdrs[original.UID]; ok {
		if h := mail.Parse(raw); !h.Synthesized && mail.IDKey(h.MessageID) == key {
			return []uint32{original.UID}, nil
		}
	}
	return nil, nil
}

// originalUIDs finds original in the selected mailbox. At its own UID
// while the mailbox keeps the same UIDVALIDITY, when the message there
// carries its Message-ID (or neither has one); else by Message-ID (the
// search matches substrings, so each hit's header is read and its id
// compared), keeping only the hits whose sender, authenticated as the
// pipeline would (agent.Identify with the account's owner), is original's
// correspondent (store.SameCorrespondent). With flags, only messages
// carrying them are returned.
func (a *AccountMailer) originalUIDs(ctx context.Context, c *imapsync.Client, original *store.MessageRecord, flags ...string) ([]uint32, error) {
	key := originalIDKey(original)
	_, uv, err := c.Selected()
	if err != nil {
		return nil, err
	}
	var out []uint32
	if uv == original.UIDValidity && original.UID != 0 {
		hdrs, err := c.FetchHeaders(ctx, []uint32{original.UID}, answeredHeaderBytes)
		if err != nil {
			return nil, err
		}
		if raw, ok := hdrs[original.UID]; ok {
			if h := mail.Parse(raw); key == "" && h.Synthesized || key != "" && !h.Synthesized && mail.IDKey(h.MessageID) == key {
				out = []uint32{original.UID}
			}
		}
	}
	if len(out) == 0 && key != "" {
		cands, err := c.SearchHeader(ctx, []string{"Message-ID"}, mail.NormalizeID(original.MessageID), flags...)
		if err != nil {
			return nil, err
		}
		hdrs, err := c.FetchHeaders(ctx, cands, answeredHeaderBytes)
		if err != nil {
			return nil, err
		}
		for _, uid := range cands {
			raw, ok := hdrs[uid]
			if !ok {
				continue // gone
			}
			h := mail.Parse(raw)
			if h.Synthesized || mail.IDKey(h.MessageID) != key {
				continue // a substring hit
			}
			found := agent.Identify(store.MessageKey{Account: original.Account, Mailbox: original.Mailbox, UIDValidity: uv, UID: uid}, raw, a.Owner)
			if store.SameCorrespondent(original, found) {
				out = append(out, uid)
			}
		}
		return out, nil
	}
	if len(flags) > 0 && len(out) > 0 {
		have, err := c.Flags(ctx, out)
		if err != nil {
			return nil, err
		}
		out = slices.DeleteFunc(out, func(uid uint32) bool {
			return !slices.ContainsFunc(flags, func(f string) bool { return slices.Contains(have[uid], f) })
		})
	}
	return out, nil
}

// noMailbox reports whether original is in no real mailbox: none is
// known, or it is a record the agent made (a delegated original).
func noMailbox(original store.MessageKey) bool {
	return original.Mailbox == "" || owner.IsDelegated(original)
}

func inMailbox(name string) func(context.Context, *AccountMailer) (string, error) {
	return func(context.Context, *AccountMailer) (string, error) { return name, nil }
}

func describeSent(h *mail.Message) string {
	if h.Synthesized {
		return "without a Message-ID"
	}
	return "Message-ID <" + h.MessageID + ">"
}

var _ agent.OriginalLocator = (*Mailer)(nil)

// LocateMessageID implements agent.OriginalLocator: each of mailboxes is
// searched for messageID in the Message-ID header (a substring match: the
// caller compares each header), and the hits' headers are read, at most
// agent.MaxLocated+1 in all. A mailbox the server refuses to select (it
// has no such mailbox) is skipped; any other error ends the search.
func (m *Mailer) LocateMessageID(ctx context.Context, account string, mailboxes []string, messageID string) ([]agent.LocatedMessage, error) {
	a, err := m.account(account)
	if err != nil {
		return nil, err
	}
	if mail.IDKey(messageID) == "" {
		return nil, nil
	}
	var out []agent.LocatedMessage
	for _, mb := range mailboxes {
		if len(out) > agent.MaxLocated {
			break
		}
		err := a.with(ctx, inMailbox(mb), func(c *imapsync.Client) error {
			uids, err := c.SearchHeader(ctx, []string{"Message-ID"}, mail.NormalizeID(messageID))
			if err != nil || len(uids) == 0 {
				return err
			}
			if n := agent.MaxLocated + 1 - len(out); len(uids) > n {
				uids = uids[:n]
			}
			_, uv, err := c.Selected()
			if err != nil {
				return err
			}
			hdrs, err := c.FetchHeaders(ctx, uids, answeredHeaderBytes)
			if err != nil {
				return err
			}
			for _, uid := range uids {
				if h, ok := hdrs[uid]; ok {
					out = append(out, agent.LocatedMessage{Key: store.MessageKey{Account: account, Mailbox: mb, UIDValidity: uv, UID: uid}, Header: h})
				}
			}
			return nil
		})
		if refusedSelect(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("search %s: %w", mb, err)
		}
	}
	return out, nil
}

// MarkAnsweredAt implements agent.OriginalLocator: \Answered on the
// message at key, when its mailbox still has key's UIDVALIDITY (UIDs are
// never reused within one, so it is the same message); otherwise ErrGone.
func (m *Mailer) MarkAnsweredAt(ctx context.Context, account string, key store.MessageKey) error {
	a, err := m.account(account)
	if err != nil {
		return err
	}
	if noMailbox(key) || key.UID == 0 {
		return nil
	}
	return a.with(ctx, inMailbox(key.Mailbox), func(c *imapsync.Client) error {
		_, uv, err := c.Selected()
		if err != nil {
			return err
		}
		if uv != key.UIDValidity {
			return fmt.Errorf("%s has a new UIDVALIDITY: %w", key.Mailbox, ErrGone)
		}
		return c.StoreFlags(ctx, []uint32{key.UID}, true, []string{imapsync.FlagAnswered})
	})
}

// refusedSelect reports whether err is the server refusing to select a
// mailbox (NO: there is no such mailbox, or it may not be opened).
func refusedSelect(err error) bool {
	var ie *imap.Error
	return err != nil && errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo && strings.Contains(err.Error(), "imap select")
}
