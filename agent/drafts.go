package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// A queued draft has one Message-ID (store.QueueItem.DraftMessageID),
// chosen when the item is made. The copy saved to the Drafts folder carries
// it, and so does the reply sent when the owner approves the item. So:
//
//   - when the owner sends the Drafts copy from their own mail client, the
//     Sent folder holds a message with that Message-ID: the Sent scan
//     resolves the item (OwnerReplied), and a later approval finds it in
//     Sent and sends nothing (Approve, and Deliver's look in Sent before
//     SMTP);
//   - when the owner approves first, the reply goes out under that
//     Message-ID and the Drafts copy is removed.
//
// The Drafts copy does NOT carry TraceHeader. TraceHeader says "mailagent
// sent this": the Sent scan skips such mail for the owner's own replies,
// and the loop guard ignores mail carrying it. A Drafts copy is sent, if at
// all, by the owner from their own client: that is the owner's mail, and
// must count as an owner reply (resolving the item, making the recipient a
// known contact). No other marker is added either: nothing needs one (the
// Message-ID identifies the copy, and a client that gives the message a new
// Message-ID still keeps In-Reply-To and the recipient, which the
// owner-reply rule matches), and a marker would only tell the
// correspondent that a program wrote the text.

// draftErrPrefix starts every error about the Drafts-folder copy recorded
// on a queue item, so that a later success can clear it.
const draftErrPrefix = "Drafts folder: "

// Reasons recorded on an item that the owner handled outside mailagent.
const (
	reasonDraftSentByOwner = "the owner sent this draft from their mail client"
	reasonOwnerReplied     = "the owner replied from their mail client"
)

// SentReader is implemented by a Mailer that can read the Sent folder.
// Approve uses it, before sending, to find a reply the owner already sent
// from their own client that the Sent scan has not seen yet. fn gets each
// message (possibly only its header and first text part) whose
// INTERNALDATE is on or after since's day.
type SentReader interface {
	ReadSent(ctx context.Context, account string, since time.Time, fn func(raw []byte) error) error
}

// newDraftMessageID is a fresh Message-ID on the account's domain.
func (p *Pipeline) newDraftMessageID(account string) string {
	from := p.Accounts[account].From.Email
	domain := ""
	if i := strings.LastIndexByte(from, '@'); i >= 0 {
		domain = from[i+1:]
	}
	return compose.NewMessageID(domain)
}

// itemBody is the text an item would send: the owner's, else the model's.
func itemBody(q *store.QueueItem) string {
	if q.Final != "" {
		return q.Final
	}
	return q.Draft
}

// composeItem builds item's reply from r (threading and subject from the
// parent): the item's recipients (fixed when it was queued), the item's one
// Message-ID, body, and the extra headers given.
func composeItem(r compose.Reply, item *store.QueueItem, body string, headers map[string]string) ([]byte, string, error) {
	r.To, r.Cc = item.To, nil
	if len(r.To) == 0 {
		return nil, "", errors.New("the item has no recipient")
	}
	r.Body, r.MessageID, r.ExtraHeaders = body, item.DraftMessageID, headers
	r.AutoSubmitted, r.Footer = false, ""
	return compose.Build(r)
}

// itemReply is the reply skeleton for item: threaded on its message when
// the record is at hand, else only From and Subject.
func (p *Pipeline) itemReply(item *store.QueueItem) compose.Reply {
	acct := p.Accounts[item.Account]
	r := compose.Reply{From: acct.From, Subject: item.Subject, Date: p.now()}
	if followup.NudgeOf(item.ID) != "" {
		// A follow-up draft answers the owner's own last message, which
		// has no stored record: thread on its Message-ID.
		r.ParentMessageID = item.MessageID
	}
	if rec, err := p.Store.GetMessage(item.Message); err == nil {
		if parent, err := compose.NewReply(recordMessage(rec), acct.From, acct.Owner.Addresses, p.Policy.ReplyAll); err == nil {
			parent.Date = r.Date
			r = parent
		}
	}
	return r
}

// prepareDraft gives a new draft item its Message-ID and, when the account
// saves drafts to IMAP, builds the Drafts-folder copy (nil otherwise, or
// when it cannot be built: the reason is then on the item). reply is the
// reply composed for the item's message.
func (p *Pipeline) prepareDraft(item *store.QueueItem, reply compose.Reply) []byte {
	if item.DraftMessageID == "" {
		item.DraftMessageID = p.newDraftMessageID(item.Account)
	}
	if !p.Accounts[item.Account].DraftsToIMAP {
		return nil
	}
	reply.Date = p.now()
	raw, _, err := composeItem(reply, item, itemBody(item), nil)
	if err != nil {
		item.Error = draftErrPrefix + "could not build the draft: " + err.Error()
		return nil
	}
	return raw
}

// replaceIMAPDraft saves item's current text as its Drafts-folder copy
// (after an edit or a regeneration): the new copy is appended, then the
// old one deleted, and the new UID recorded. Failures are recorded on the
// item, never dropped; the returned item is the stored one.
func (p *Pipeline) replaceIMAPDraft(ctx context.Context, item *store.QueueItem) *store.QueueItem {
	a := p.Actor
	if item.Kind != store.KindDraft || !p.Accounts[item.Account].DraftsToIMAP || a == nil || a.Mailer == nil {
		return item
	}
	body := itemBody(item)
	msgID := item.DraftMessageID
	if msgID == "" {
		msgID = p.newDraftMessageID(item.Account)
	}
	withID := *item
	withID.DraftMessageID = msgID
	raw, _, err := composeItem(p.itemReply(item), &withID, body, nil)
	if err != nil {
		return p.noteDraftError(item, "could not build the draft: "+err.Error())
	}
	uid, err := a.Mailer.AppendDraft(ctx, item.Account, raw)
	if err != nil {
		msg := "could not save the new text: " + err.Error()
		if item.IMAPDraftUID != 0 {
			msg += " (the copy there still has the previous text)"
		}
		return p.noteDraftError(item, msg)
	}
	old := item.IMAPDraftUID
	var oldErr error
	if old != 0 {
		oldErr = a.Mailer.DeleteDraft(ctx, item.Account, old)
	}
	updated, err := a.Store.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		if itemBody(q) != body || q.IMAPDraftUID != old {
			return errStaleDraft // changed meanwhile: the newer change saves its own copy
		}
		q.IMAPDraftUID, q.DraftMessageID = uid, msgID
		clearDraftError(q)
		if oldErr != nil {
			q.Error = fmt.Sprintf("%sthe new text is saved, but the previous copy (uid %d) could not be removed: %v", draftErrPrefix, old, oldErr)
		}
		return nil
	})
	if err != nil {
		// The item moved on (sent, rejected, edited again): this copy is
		// not wanted.
		if derr := a.Mailer.DeleteDraft(context.WithoutCancel(ctx), item.Account, uid); derr != nil {
			p.logger().Warn("delete unwanted IMAP draft", "queue", item.ID, "uid", uid, "err", derr)
		}
		if cur, gerr := a.Store.GetQueueItem(item.ID); gerr == nil {
			return cur
		}
		return item
	}
	return updated
}

var errStaleDraft = errors.New("the item changed while its draft was saved")

// clearDraftError forgets an earlier Drafts-folder error.
func clearDraftError(q *store.QueueItem) {
	if DraftCopyFailure(q) != "" {
		q.Error = ""
	}
}

// DraftCopyFailure returns why q's copy in the Drafts folder failed (the
// error recorded on the item), or "" when it did not: commands that
// changed the draft report it at once instead of claiming success.
func DraftCopyFailure(q *store.QueueItem) string {
	if q != nil && (strings.HasPrefix(q.Error, draftErrPrefix) || strings.Contains(q.Error, "to the Drafts folder")) {
		return q.Error
	}
	return ""
}

// noteDraftError records a Drafts-folder failure on the item (in whatever
// status it is) and returns the stored item.
func (p *Pipeline) noteDraftError(item *store.QueueItem, msg string) *store.QueueItem {
	p.logger().Warn("IMAP draft", "queue", item.ID, "err", msg)
	updated, err := p.Actor.Store.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		q.Error = draftErrPrefix + msg
		return nil
	})
	if err != nil {
		return item
	}
	return updated
}

// dropIMAPDraft removes an item's Drafts-folder copy, if it has one. A
// failure is recorded on the item.
func (p *Pipeline) dropIMAPDraft(ctx context.Context, item *store.QueueItem) {
	if item.IMAPDraftUID == 0 || p.Actor.Mailer == nil {
		return
	}
	uid := item.IMAPDraftUID
	err := p.Actor.Mailer.DeleteDraft(ctx, item.Account, uid)
	_, terr := p.Actor.Store.TransitionQueueItem(item.ID, []string{item.Status}, item.Status, func(q *store.QueueItem) error {
		if q.IMAPDraftUID != uid {
			return errStaleDraft
		}
		if err != nil {
			q.Error = fmt.Sprintf("%sthe copy (uid %d) could not be removed: %v", draftErrPrefix, uid, err)
			return nil
		}
		q.IMAPDraftUID = 0
		return nil
	})
	if err != nil || (terr != nil && !errors.Is(terr, store.ErrConflict) && !errors.Is(terr, errStaleDraft)) {
		p.logger().Warn("delete IMAP draft", "queue", item.ID, "err", errors.Join(err, terr))
	}
}

// answersItem reports whether sent, a message the owner sent, answers
// item's message: its In-Reply-To names that message (a References chain
// alone is not enough: it names every ancestor, and a stranger can put
// any id in the parent it sends), and the identity layer says it is
// addressed to the one who must get the answer: store.AnswersTo on rec,
// item's message record (its authenticated correspondent, or the From of
// mail nobody authenticated, or an authenticated Reply-To), never the
// item's From text. Without a record (a follow-up draft on the owner's
// own message), the recipients code chose for the item count. The owner's
// own addresses never do: mail to the owner answers nothing.
func answersItem(item *store.QueueItem, rec *store.MessageRecord, sent *mail.Message, owner Owner) bool {
	key := mail.IDKey(item.MessageID)
	if key == "" || !slices.ContainsFunc(sent.InReplyTo, func(id string) bool { return mail.IDKey(id) == key }) {
		return false
	}
	var rcpts []string
	for _, a := range slices.Concat(sent.To, sent.Cc) {
		if e := mail.AddrKey(a.Email); e != "" && !owner.IsOwner(e) {
			rcpts = append(rcpts, e)
		}
	}
	if rec != nil {
		return store.AnswersTo(rcpts, rec)
	}
	return slices.ContainsFunc(item.To, func(a mail.Address) bool {
		return !owner.IsOwner(a.Email) && store.AddressedTo(rcpts, a.Email)
	})
}

// itemRecord is the message record of item, nil when there is none (or
// no message store).
func (p *Pipeline) itemRecord(item *store.QueueItem) *store.MessageRecord {
	if p.Store == nil {
		return nil
	}
	rec, err := p.Store.GetMessage(item.Message)
	if err != nil {
		return nil
	}
	return rec
}

// isDraftCopy reports whether sent is item's own message (its Drafts copy
// or its approved reply), by Message-ID.
func isDraftCopy(item *store.QueueItem, sent *mail.Message) bool {
	k := mail.IDKey(item.DraftMessageID)
	return k != "" && !sent.Synthesized && mail.IDKey(sent.MessageID) == k
}

// IsAutomatic reports whether m declares itself automatic (an
// Auto-Submitted keyword other than "no", RFC 3834; mail.Message's
// AutoSubmitted is the one reader of the header): mailagent's auto-replies
// carry it, and so do vacation replies. Route's automated route asks the
// same question first.
func IsAutomatic(m *mail.Message) bool { return m.AutoSubmitted() }

// IsMachineSent reports whether m, a message in the owner's Sent folder,
// was not written by the owner by hand: it declares itself automatic
// (IsAutomatic) or carries TraceHeader (mailagent sent it; an approved
// reply was counted when it was sent). Such mail never makes anyone a
// known contact (KnownFromSent) and never counts as the owner's own words.
func IsMachineSent(m *mail.Message) bool {
	return IsAutomatic(m) || m.HeaderValue(TraceHeader) != ""
}

// ownerAnsweredInSent reads the Sent folder (when the Mailer can) for a
// reply the owner wrote in their own client that answers item. Mail
// mailagent sent (TraceHeader) and automatic mail do not count.
func (p *Pipeline) ownerAnsweredInSent(ctx context.Context, item *store.QueueItem) (bool, error) {
	sr, ok := p.Actor.Mailer.(SentReader)
	if !ok || item.MessageID == "" {
		return false, nil
	}
	owner := p.Accounts[item.Account].Owner
	rec := p.itemRecord(item)
	found := false
	err := sr.ReadSent(ctx, item.Account, item.CreatedAt.Add(-24*time.Hour), func(raw []byte) error {
		m := mail.Parse(raw)
		if found || !owner.IsOwner(m.From.Email) || IsMachineSent(m) {
			return nil
		}
		found = answersItem(item, rec, m, owner) || isDraftCopy(item, m)
		return nil
	})
	return found, err
}

// resolveItem closes an open (or, from Approve, approved) item that the
// owner handled outside mailagent, removing its Drafts copy.
func (p *Pipeline) resolveItem(ctx context.Context, id string, from []string, reason string) (*store.QueueItem, error) {
	item, err := p.Actor.Store.TransitionQueueItem(id, from, store.QueueResolved, func(q *store.QueueItem) error {
		q.Reasons = append(q.Reasons, reason)
		q.Error = ""
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.dropIMAPDraft(ctx, item)
	p.Actor.notify(Event{Kind: "queue_updated", ID: item.ID, Account: item.Account})
	if cur, err := p.Actor.Store.GetQueueItem(id); err == nil {
		item = cur
	}
	return item, nil
}
