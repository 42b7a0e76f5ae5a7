// Package sentlearn is triage's Sent-folder learning: it reads an
// account's Sent folder (read-only: EXAMINE, BODY.PEEK) and records as
// known contacts the people the owner wrote to, so that triage's
// known-contact gate sees them as watch's does. What a Sent message
// teaches is agent.KnownFromSent's decision, the same one watch's Sent
// scan (internal/app/daemon) and replay's Sent index ask: this package
// only reads the folder and records the answer.
package sentlearn

import (
	"context"
	"fmt"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Account is one account's Sent folder and owner.
type Account struct {
	Name string
	// SentMailbox names the Sent folder; "" finds it by SPECIAL-USE.
	SentMailbox string
	// Owner tells the owner's addresses (agent.Owner.IsOwner).
	Owner agent.Owner
}

// Store records known contacts. A store that also implements OutboxIndex
// tells which Sent messages are mailagent's automatic sends.
type Store interface {
	MarkKnown(account string, emails []string) error
}

// OutboxIndex finds mailagent's outbox records by Message-ID (store.Store
// implements it).
type OutboxIndex interface {
	OutboxByMessageID(account string, ids []string) (map[string]store.OutboxRef, error)
}

// HeaderBytes caps each Sent message's header read by Learn (a header
// longer than this is cut, as the whole message was cut before).
const HeaderBytes = 64 << 10

// headerBatch is how many Sent messages one UID FETCH asks for, so that a
// big folder is not held in memory at once.
const headerBatch = 500

// Learn reads the headers of the Sent folder of a (messages dated since
// since) over c, read-only (BODY.PEEK[HEADER], no body), and marks the recipients agent.KnownFromSent names as known
// contacts in st, in one transaction. It returns the addresses marked, in
// the order first seen. c stays open and selected on the Sent folder. An
// error leaves st unchanged.
func Learn(ctx context.Context, c *imapsync.Client, a Account, st Store, since time.Time) ([]string, error) {
	attr, names := `\Sent`, []string(nil)
	if a.SentMailbox != "" {
		attr, names = "", []string{a.SentMailbox}
	}
	sent, err := c.FindSpecialUse(ctx, attr, names...)
	if err != nil {
		return nil, fmt.Errorf("account %s: find the Sent folder: %w", a.Name, err)
	}
	if _, err := c.Select(ctx, sent, true); err != nil {
		return nil, fmt.Errorf("account %s: %w", a.Name, err)
	}
	uids, err := c.Search(ctx, imapsync.Criteria{Since: since})
	if err != nil {
		return nil, fmt.Errorf("account %s: search Sent: %w", a.Name, err)
	}
	// Headers only (BODY.PEEK[HEADER]): agent.KnownFromSent reads From,
	// To, Cc, Bcc, Message-ID and the headers that mark automatic or
	// mailagent's mail, never a body. A big Sent folder costs its headers,
	// not its attachments.
	var msgs []*mail.Message
	for start := 0; start < len(uids); start += headerBatch {
		batch := uids[start:min(start+headerBatch, len(uids))]
		hdrs, err := c.FetchHeaders(ctx, batch, HeaderBytes)
		if err != nil {
			return nil, fmt.Errorf("account %s: read Sent: %w", a.Name, err)
		}
		for _, uid := range batch {
			h, ok := hdrs[uid]
			if !ok {
				continue // expunged meanwhile
			}
			// A header alone parses as a message with an empty body. A
			// Message-ID synthesized from it differs from one synthesized
			// from the whole message; Known never looks those up.
			m := mail.Parse(h)
			if a.Owner.IsOwner(m.From.Email) {
				msgs = append(msgs, &mail.Message{MessageID: m.MessageID, Synthesized: m.Synthesized, From: m.From, To: m.To, Cc: m.Cc,
					Header: m.Header})
			}
		}
	}
	known, err := Known(a, st, msgs)
	if err != nil || len(known) == 0 {
		return nil, err
	}
	if err := st.MarkKnown(a.Name, known); err != nil {
		return nil, fmt.Errorf("account %s: record known contacts: %w", a.Name, err)
	}
	return known, nil
}

// Known returns the addresses msgs (read from a's Sent folder) make known
// contacts, by agent.KnownFromSent, deduplicated in the order first seen.
// When st is an OutboxIndex, mailagent's own automatic sends are told by
// their Message-ID too.
func Known(a Account, st Store, msgs []*mail.Message) ([]string, error) {
	var autoByUs func(string) bool
	if ix, ok := st.(OutboxIndex); ok && len(msgs) > 0 {
		ids := make([]string, 0, len(msgs))
		for _, m := range msgs {
			if !m.Synthesized {
				ids = append(ids, m.MessageID)
			}
		}
		ours, err := ix.OutboxByMessageID(a.Name, ids)
		if err != nil {
			return nil, fmt.Errorf("account %s: mailagent's sends: %w", a.Name, err)
		}
		autoByUs = func(id string) bool { ob, ok := ours[mail.IDKey(id)]; return ok && ob.Auto }
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range msgs {
		for _, k := range agent.KnownFromSent(m, a.Owner, autoByUs) {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out, nil
}

// LearnInto is triage's Sent learning over whatever store triage runs
// on: when st records known contacts (a Store: the local state database)
// it dials a read-only connection with dial, runs Learn over it (mail
// dated since since) and closes it; for any other store (a dry run, or a
// watcher's socket: the watcher scans Sent itself) it does nothing and
// dials nothing.
func LearnInto(ctx context.Context, dial func(context.Context) (*imapsync.Client, error), a Account, st any, since time.Time) error {
	km, ok := st.(Store)
	if !ok {
		return nil
	}
	c, err := dial(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_, err = Learn(ctx, c, a, km, since)
	return err
}
