package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/smtpsend"
)

// AccountMailer is one account's IMAP "action" connection (separate from
// the watcher's IDLE connection) and its SMTP sender.
type AccountMailer struct {
	Name   string
	Dial   func(ctx context.Context) (*imapsync.Client, error)
	SMTP   func(ctx context.Context) (*smtpsend.Sender, error)
	Sent   string // configured Sent name; "" = SPECIAL-USE, then the common names
	Drafts string // configured Drafts name; "" = SPECIAL-USE, then the common names
	// Incoming reports a folder mailagent reads as incoming mail (the
	// watched mailbox): it is never used as Sent or Drafts, whatever the
	// server marks it with (an *imapsync.IncomingFolderError). nil: none.
	Incoming func(name string) bool
	// Mailbox says how decisions show in the mailbox (mailbox.go); the
	// zero value changes nothing.
	Mailbox MailboxPolicy
	// Owner is the account's owner as routing knows them (addresses and
	// authserv_id): who a message found on the server is from is decided
	// with it (agent.Identify), so a \Answered flag on another
	// correspondent's message never counts as the original's. The zero
	// value authenticates nobody.
	Owner   agent.Owner
	archive string // the Archive folder, once found
	mu      sync.Mutex
	c       *imapsync.Client
	sent    string
	drafts  string
	sender  *smtpsend.Sender
	mailbox string // currently selected
}

// ErrGone means a message is no longer on the server (expunged or moved).
var ErrGone = errors.New("the message is no longer on the server")

// Mailer implements agent.Mailer over one AccountMailer per account.
type Mailer struct {
	Accounts map[string]*AccountMailer
}

var _ agent.Mailer = (*Mailer)(nil)

func (m *Mailer) account(name string) (*AccountMailer, error) {
	a, ok := m.Accounts[name]
	if !ok {
		return nil, fmt.Errorf("no account %q", name)
	}
	return a, nil
}

// Close closes every connection.
func (m *Mailer) Close() {
	for _, a := range m.Accounts {
		a.mu.Lock()
		if a.c != nil {
			_ = a.c.Close()
			a.c = nil
		}
		a.mu.Unlock()
	}
}

// with runs f on a connected client with mailbox selected, redialling once
// if the cached connection turns out dead. mailbox (may be nil: nothing
// is selected) returns the mailbox to select, finding it on the server if
// needed.
func (a *AccountMailer) with(ctx context.Context, mailbox func(context.Context, *AccountMailer) (string, error), f func(c *imapsync.Client) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var last error
	for attempt := 0; attempt < 2; attempt++ {
		if a.c == nil {
			c, err := a.Dial(ctx)
			if err != nil {
				return err
			}
			a.c, a.mailbox = c, ""
		}
		if mailbox != nil {
			mb, err := mailbox(ctx, a)
			if err != nil {
				return err
			}
			if a.mailbox != mb {
				if _, err := a.c.Select(ctx, mb, false); err != nil {
					last = err
					// A folder found earlier may be gone since (deleted
					// in a mail client): the retry finds it again, and a
					// missing Sent or Drafts is then the setup problem it
					// is (imapsync.ErrSetupNeeded, with its fix).
					a.forget(mb)
					_ = a.c.Close()
					a.c = nil
					continue
				}
				a.mailbox = mb
			}
		}
		err := f(a.c)
		if err == nil || ctx.Err() != nil {
			return err
		}
		last = err
		// A dead connection is redialled once; other errors are final.
		select {
		case <-a.c.Done():
			a.c = nil
		default:
			return err
		}
	}
	return last
}

// sentBox and draftsBox find the account's Sent and Drafts folders on
// first use (a.mu held, a.c connected), each on its own: a missing Sent
// folder never stops drafts from being saved, nor the other way round.
// A configured name wins over SPECIAL-USE; otherwise the folder marked
// \Sent (\Drafts), else a common name under the server's personal
// namespace (imapsync.FindSpecialUse).
func sentBox(ctx context.Context, a *AccountMailer) (string, error) {
	if a.sent == "" {
		name, err := findFolder(ctx, a, `\Sent`, a.Sent)
		if err != nil {
			return "", fmt.Errorf("find the Sent folder: %w", err)
		}
		a.sent = name
	}
	return a.sent, nil
}

// forget drops the found Sent or Drafts folder named name (a.mu held), so
// the next use finds it again.
func (a *AccountMailer) forget(name string) {
	if a.sent == name {
		a.sent = ""
	}
	if a.drafts == name {
		a.drafts = ""
	}
}

func draftsBox(ctx context.Context, a *AccountMailer) (string, error) {
	if a.drafts == "" {
		name, err := findFolder(ctx, a, `\Drafts`, a.Drafts)
		if err != nil {
			return "", fmt.Errorf("find the Drafts folder: %w", err)
		}
		a.drafts = name
	}
	return a.drafts, nil
}

func findFolder(ctx context.Context, a *AccountMailer, attr, configured string) (string, error) {
	use, names := attr, []string(nil)
	if configured != "" {
		attr, names = "", []string{configured}
	}
	name, err := a.c.FindSpecialUse(ctx, attr, names...)
	if err == nil && (use == `\Sent` || use == `\Drafts`) && a.Incoming != nil && a.Incoming(name) {
		return "", &imapsync.IncomingFolderError{Attr: use, Name: name}
	}
	return name, err
}

// Send runs one SMTP transaction.
func (m *Mailer) Send(ctx context.Context, account, from string, to []string, raw []byte) error {
	return m.SendStaged(ctx, account, from, to, raw, nil)
}

// SendStaged runs one SMTP transaction and calls beforeData just before
// the DATA command (smtpsend.Sender.SendStaged): it implements
// outbox.StagedMailer.
func (m *Mailer) SendStaged(ctx context.Context, account, from string, to []string, raw []byte, beforeData func() error) error {
	a, err := m.account(account)
	if err != nil {
		return err
	}
	a.mu.Lock()
	s := a.sender
	a.mu.Unlock()
	if s == nil {
		if s, err = a.SMTP(ctx); err != nil {
			return err
		}
		a.mu.Lock()
		a.sender = s
		a.mu.Unlock()
	}
	err = s.SendStaged(ctx, from, to, raw, beforeData)
	var se *smtpsend.SendError
	if errors.As(err, &se) && se.Temporary {
		return &agent.TemporaryError{Err: err}
	}
	return err
}

// AppendSent files a copy of a sent message.
func (m *Mailer) AppendSent(ctx context.Context, account string, raw []byte) error {
	a, err := m.account(account)
	if err != nil {
		return err
	}
	return a.with(ctx, nil, func(c *imapsync.Client) error {
		sent, err := sentBox(ctx, a)
		if err != nil {
			return err
		}
		_, err = c.Append(ctx, sent, []string{`\Seen`}, time.Now(), raw)
		return err
	})
}

// SentHas looks for a Message-ID in the Sent folder.
func (m *Mailer) SentHas(ctx context.Context, account, messageID string) (bool, error) {
	a, err := m.account(account)
	if err != nil {
		return false, err
	}
	var found bool
	err = a.with(ctx, sentBox, func(c *imapsync.Client) error {
		uids, err := c.Search(ctx, imapsync.Criteria{HeaderMessageID: messageID})
		found = len(uids) > 0
		return err
	})
	return found, err
}

// AppendDraft saves a draft with \Draft and returns its UID.
func (m *Mailer) AppendDraft(ctx context.Context, account string, raw []byte) (uint32, error) {
	a, err := m.account(account)
	if err != nil {
		return 0, err
	}
	var uid uint32
	err = a.with(ctx, nil, func(c *imapsync.Client) error {
		drafts, err := draftsBox(ctx, a)
		if err != nil {
			return err
		}
		uid, err = c.Append(ctx, drafts, []string{`\Draft`, `\Seen`}, time.Now(), raw)
		return err
	})
	return uid, err
}

// DeleteDraft removes a draft saved by AppendDraft.
func (m *Mailer) DeleteDraft(ctx context.Context, account string, uid uint32) error {
	a, err := m.account(account)
	if err != nil {
		return err
	}
	return a.with(ctx, draftsBox, func(c *imapsync.Client) error {
		return c.Delete(ctx, []uint32{uid})
	})
}

// FetchSent streams Sent-folder messages with UID > after (the owner's own
// mail: it is how contacts become known and how owner replies resolve
// queue items). It returns the folder's UIDVALIDITY.
//
// The scan may read a year of mail, so it runs on a connection of its
// own, closed at the end: the account's action connection (sends,
// approvals, drafts) is never held for it.
func (m *Mailer) FetchSent(ctx context.Context, account string, after uint32, since time.Time, maxBytes int64, fn func(imapsync.RawMessage) error) (uidvalidity uint32, err error) {
	return m.withSent(ctx, account, after, since, func(c *imapsync.Client, _ uint32, uids []uint32) error {
		return c.Fetch(ctx, uids, imapsync.FetchOptions{MaxMessageBytes: maxBytes}, fn)
	})
}

// FetchSentPicked is FetchSent in two passes: the header of every Sent
// message with UID > after (dated since since) is read first
// (BODY.PEEK[HEADER]), in UID order, and pick, given the folder's
// UIDVALIDITY, the UID and the header, says whether the message's body is
// needed; fn then gets each picked message (up to maxBytes of it, as
// FetchSent), in UID order. A Sent folder costs its headers plus the
// bodies asked for, not every body. It returns the folder's UIDVALIDITY.
func (m *Mailer) FetchSentPicked(ctx context.Context, account string, after uint32, since time.Time, maxBytes int64,
	pick func(uidvalidity, uid uint32, header []byte) bool, fn func(imapsync.RawMessage) error) (uint32, error) {
	return m.withSent(ctx, account, after, since, func(c *imapsync.Client, uv uint32, uids []uint32) error {
		slices.Sort(uids)
		var picked []uint32
		for start := 0; start < len(uids); start += sentCheckBatch {
			batch := uids[start:min(start+sentCheckBatch, len(uids))]
			hdrs, err := c.FetchHeaders(ctx, batch, sentCheckBytes)
			if err != nil {
				return err
			}
			for _, uid := range batch {
				if h, ok := hdrs[uid]; ok && pick(uv, uid, h) {
					picked = append(picked, uid)
				}
			}
		}
		return c.Fetch(ctx, picked, imapsync.FetchOptions{MaxMessageBytes: maxBytes}, fn)
	})
}

// withSent runs f on a connection of its own with the account's Sent
// folder selected read-only (f gets its UIDVALIDITY) and the UIDs above
// after dated since since found; it returns the folder's UIDVALIDITY.
func (m *Mailer) withSent(ctx context.Context, account string, after uint32, since time.Time, f func(c *imapsync.Client, uidvalidity uint32, uids []uint32) error) (uint32, error) {
	a, err := m.account(account)
	if err != nil {
		return 0, err
	}
	sent, err := a.sentFolder(ctx)
	if err != nil {
		return 0, err
	}
	c, err := a.Dial(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Close() }()
	st, err := c.Select(ctx, sent, true)
	if err != nil {
		// The folder found earlier may be gone since (deleted in a mail
		// client): find it again, so that a missing Sent is the setup
		// problem it is (imapsync.ErrSetupNeeded, with its fix) whether
		// or not this process had found it before.
		a.mu.Lock()
		a.forget(sent)
		a.mu.Unlock()
		if again, ferr := a.sentFolder(ctx); ferr != nil {
			if errors.Is(ferr, imapsync.ErrSetupNeeded) {
				return 0, ferr
			}
		} else if again != sent {
			st, err = c.Select(ctx, again, true)
		}
		if err != nil {
			return 0, err
		}
	}
	uids, err := c.Search(ctx, imapsync.Criteria{UIDMin: after + 1, Since: since})
	if err != nil {
		return 0, err
	}
	if err := f(c, st.UIDValidity, uids); err != nil {
		return 0, err
	}
	return st.UIDValidity, nil
}

// sentFolder returns the Sent folder's name, finding it first if needed
// (on the action connection, briefly).
func (a *AccountMailer) sentFolder(ctx context.Context) (string, error) {
	var name string
	err := a.with(ctx, nil, func(*imapsync.Client) error {
		var err error
		name, err = sentBox(ctx, a)
		return err
	})
	return name, err
}

// sentCheckBytes caps each Sent header ReadSent fetches.
const sentCheckBytes = 64 << 10

// sentCheckBatch is how many Sent headers one UID FETCH of ReadSent asks
// for.
const sentCheckBatch = 500

var _ agent.SentReader = (*Mailer)(nil)

// ReadSent implements agent.SentReader: fn gets the header (BODY.PEEK[HEADER],
// no body) of each Sent-folder message from since's day on, in UID order.
// What it is read for (agent's ownerAnsweredInSent) asks From, To, Cc,
// In-Reply-To, Message-ID and the automatic and trace headers, never a body.
func (m *Mailer) ReadSent(ctx context.Context, account string, since time.Time, fn func(raw []byte) error) error {
	_, err := m.withSent(ctx, account, 0, since, func(c *imapsync.Client, _ uint32, uids []uint32) error {
		slices.Sort(uids)
		for start := 0; start < len(uids); start += sentCheckBatch {
			batch := uids[start:min(start+sentCheckBatch, len(uids))]
			hdrs, err := c.FetchHeaders(ctx, batch, sentCheckBytes)
			if err != nil {
				return err
			}
			for _, uid := range batch {
				if h, ok := hdrs[uid]; ok {
					if err := fn(h); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	return err
}

// FetchUID refetches one message (used to retry needs_review messages).
func (m *Mailer) FetchUID(ctx context.Context, account, mailbox string, uidvalidity, uid uint32, maxBytes int64) (*imapsync.RawMessage, error) {
	a, err := m.account(account)
	if err != nil {
		return nil, err
	}
	var out *imapsync.RawMessage
	err = a.with(ctx, nil, func(c *imapsync.Client) error {
		st, err := c.Select(ctx, mailbox, true)
		a.mailbox = ""
		if err != nil {
			return err
		}
		if st.UIDValidity != uidvalidity {
			return fmt.Errorf("%s: UIDVALIDITY changed from %d to %d", mailbox, uidvalidity, st.UIDValidity)
		}
		err = c.Fetch(ctx, []uint32{uid}, imapsync.FetchOptions{MaxMessageBytes: maxBytes}, func(r imapsync.RawMessage) error {
			out = &r
			return nil
		})
		if err != nil || out != nil {
			return err
		}
		// Not returned: gone only if a fresh search agrees.
		missing, err := c.Missing(ctx, []uint32{uid})
		if err != nil {
			return err
		}
		if len(missing) == 0 {
			return fmt.Errorf("uid %d of %s: the server did not return it", uid, mailbox)
		}
		return fmt.Errorf("uid %d of %s: %w", uid, mailbox, ErrGone)
	})
	return out, err
}
