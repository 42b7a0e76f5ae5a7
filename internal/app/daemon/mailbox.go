package daemon

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Values of MailboxPolicy.Archive (config mailbox.archive).
const (
	ArchiveOff     = "off"
	ArchiveMove    = "move"
	ArchiveKeyword = "keyword"
)

// Keywords mailagent sets (only with MailboxPolicy.Keywords, or
// ArchiveKeyword, and only where PERMANENTFLAGS allows).
const (
	KeywordQueued   = "$mailagent-queued"
	KeywordArchived = "$mailagent-archived"
)

// MailboxPolicy is how the agent's decisions show in one account's
// mailbox. The zero value changes nothing.
type MailboxPolicy struct {
	// Archive: "" or ArchiveOff leaves archived mail in place; ArchiveMove
	// moves it to the Archive folder; ArchiveKeyword only sets
	// KeywordArchived.
	Archive string
	// ArchiveFolder names the folder; "" finds the one marked \Archive
	// (SPECIAL-USE), else "Archive" or "Archives", also under the personal
	// namespace ("INBOX.Archive" on Courier-style servers).
	ArchiveFolder string
	// Keywords sets KeywordQueued and "$mailagent-<intent>" labels.
	Keywords bool
}

var _ agent.MailboxActor = (*Mailer)(nil)

// archiveBox finds the Archive folder on first use (a.mu held).
func archiveBox(ctx context.Context, a *AccountMailer) (string, error) {
	if a.archive == "" {
		name, err := findFolder(ctx, a, `\Archive`, a.Mailbox.ArchiveFolder)
		var nf *imapsync.NoMailboxError
		if errors.As(err, &nf) && nf.Create != "" {
			// The owner asked for archiving by moving: make the folder
			// (under the personal namespace, "INBOX.Archive" on Courier).
			if err = a.c.CreateMailbox(ctx, nf.Create); err == nil {
				name = nf.Create
			}
		}
		if err != nil {
			return "", fmt.Errorf("find the Archive folder: %w", err)
		}
		a.archive = name
	}
	return a.archive, nil
}

// Archive carries out an "archive" decision on original as the account's
// MailboxPolicy says: a move to the Archive folder (imapsync.MoveByID:
// the message is never in neither place), or the archived keyword, or
// nothing. done says what happened ("" when the policy is off).
func (m *Mailer) Archive(ctx context.Context, account string, original store.MessageKey, messageID string) (done string, err error) {
	a, err := m.account(account)
	if err != nil {
		return "", err
	}
	switch a.Mailbox.Archive {
	case "", ArchiveOff:
		return "", nil
	case ArchiveKeyword:
		if err := m.Label(ctx, account, original, messageID, []string{KeywordArchived}); err != nil {
			return "", err
		}
		return "keyword " + KeywordArchived, nil
	case ArchiveMove:
	default:
		return "", fmt.Errorf("mailbox.archive %q is not off, move or keyword", a.Mailbox.Archive)
	}
	if noMailbox(original) {
		return "", nil
	}
	err = a.with(ctx, inMailbox(original.Mailbox), func(c *imapsync.Client) error {
		dest, err := archiveBox(ctx, a)
		if err != nil {
			return err
		}
		if strings.EqualFold(dest, original.Mailbox) {
			return nil
		}
		uids, err := a.messageUIDs(ctx, c, original, messageID)
		if err != nil {
			return err
		}
		if len(uids) == 0 {
			return fmt.Errorf("archive: %w", ErrGone)
		}
		a.mailbox = "" // MoveByID selects the Archive folder on the way
		for _, uid := range uids {
			if err := c.MoveByID(ctx, original.Mailbox, uid, messageID, dest); err != nil {
				return err
			}
		}
		a.mailbox = original.Mailbox
		done = fmt.Sprintf("moved to %s (UID %s of %s)", dest, joinUIDs(uids), original.Mailbox)
		return nil
	})
	return done, err
}

// Label sets IMAP keywords on original, those the server keeps
// (PERMANENTFLAGS); a server that keeps none is not an error.
func (m *Mailer) Label(ctx context.Context, account string, original store.MessageKey, messageID string, keywords []string) error {
	a, err := m.account(account)
	if err != nil {
		return err
	}
	if noMailbox(original) || len(keywords) == 0 {
		return nil
	}
	return a.with(ctx, inMailbox(original.Mailbox), func(c *imapsync.Client) error {
		uids, err := a.messageUIDs(ctx, c, original, messageID)
		if err != nil || len(uids) == 0 {
			return err
		}
		_, err = c.SetKeywords(ctx, uids, keywords)
		if errors.Is(err, imapsync.ErrKeywordsRefused) {
			return nil
		}
		return err
	})
}

// Labels returns the keywords for a decision, when the account sets them.
func (m *Mailer) Labels(account string, rec *store.MessageRecord) []string {
	a, err := m.account(account)
	if err != nil || !a.Mailbox.Keywords || rec == nil {
		return nil
	}
	var out []string
	if rec.Decision == agent.DecisionQueue {
		out = append(out, KeywordQueued)
	}
	if rec.Classification != nil {
		for _, in := range rec.Classification.Intents {
			out = append(out, "$mailagent-"+strings.ReplaceAll(in, "_", "-"))
		}
	}
	return out
}

// joinUIDs lists uids as "5" or "5,9" for a trace step.
func joinUIDs(uids []uint32) string {
	parts := make([]string, len(uids))
	for i, u := range uids {
		parts[i] = strconv.FormatUint(uint64(u), 10)
	}
	return strings.Join(parts, ",")
}

// messageUIDs finds the message at original in the selected mailbox for
// the mailbox actions (Archive, Label), which know its key and Message-ID
// but not its sender: the message at its own UID while the mailbox keeps
// its UIDVALIDITY and that message carries messageID (a stranger's message
// that reuses the id is then never touched); else, after a UIDVALIDITY
// change, the messages carrying messageID (the search matches substrings,
// so each hit's header is read and its id compared), but none when they
// are not all from one authenticated correspondent (agent.Identify): the
// action does not know whose the original is, and a stranger's message
// that reuses the id must not take the contact's with it; else, for a
// Message-ID the server's search cannot match as written (one with a
// comment or folding whitespace) or none at all, the message at its UID
// while the mailbox keeps the same UIDVALIDITY.
func (a *AccountMailer) messageUIDs(ctx context.Context, c *imapsync.Client, original store.MessageKey, messageID string) ([]uint32, error) {
	if own, err := ownUID(ctx, c, &store.MessageRecord{MessageKey: original, MessageID: messageID}); err != nil || len(own) > 0 {
		return own, err
	}
	key := mail.IDKey(messageID)
	var cands []uint32
	if key != "" {
		var err error
		if cands, err = c.SearchHeader(ctx, []string{"Message-ID"}, mail.NormalizeID(messageID)); err != nil {
			return nil, err
		}
	}
	byUID := false
	if len(cands) == 0 {
		_, uv, err := c.Selected()
		if err != nil || uv != original.UIDValidity || original.UID == 0 {
			return nil, err
		}
		cands, byUID = []uint32{original.UID}, true
	}
	hdrs, err := c.FetchHeaders(ctx, cands, answeredHeaderBytes)
	if err != nil {
		return nil, err
	}
	var out []uint32
	senders := map[string]bool{}
	for _, uid := range cands {
		raw, ok := hdrs[uid]
		if !ok {
			continue // gone
		}
		if h := mail.Parse(raw); key == "" && byUID || !h.Synthesized && mail.IDKey(h.MessageID) == key {
			out = append(out, uid)
			senders[agent.Identify(original, raw, a.Owner).Correspondent()] = true
		}
	}
	if len(out) > 1 && (len(senders) > 1 || senders[""]) && !store.IdentityChecksOff() {
		// Several senders' messages carry the id: whose is the original
		// is unknown, so none is touched.
		return nil, fmt.Errorf("%d messages from different senders carry Message-ID %s: none touched", len(out), mail.NormalizeID(messageID))
	}
	return out, nil
}
