package followup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// Reply tracking (issue 11). A thread is
//
//   - needs_reply when its last message is from someone else, the
//     classification says it expects an answer (action "reply", not spam or
//     a notification) and the decision left it to the owner (queue or
//     notify); auto-sent and already-answered mail never opens one;
//   - awaiting_reply when the owner (from any client, or mailagent after an
//     approval) sent the last message, it asks something (a question mark
//     in the owner's own text) and no answer came;
//   - done when the owner's reply names the last incoming message
//     (In-Reply-To) and goes to its sender, or when an answer names one of
//     the owner's messages (In-Reply-To or References) and comes from one
//     of the owner's recipients. A message from anyone else, whatever its
//     headers or text say, changes nothing.
//
// Every state comes from mailbox facts; the only thing the model adds is a
// date ("reply by Friday", Classification.ReplyBy), which code accepts
// only when it is a real date in the future within MaxDeadline.
//
// Timers: each open followup has a Due time, indexed in the store. Fire
// moves it in one transaction that first checks it is still due, so a
// timer fires once even across restarts; the nudge queue item's id derives
// from the followup id and the nudge number, so a crash between writing
// the item and moving the timer writes the same item again, not a second.

// Policy configures reply tracking ([followup] in the config).
type Policy struct {
	// Enabled turns tracking on.
	Enabled bool
	// DefaultAfter is how long after the last message a thread without a
	// date of its own becomes stale, and the wait between later tiers
	// (default 3 days).
	DefaultAfter time.Duration
	// BusinessDays counts DefaultAfter in whole days skipping Saturday and
	// Sunday.
	BusinessDays bool
	// MaxNudges is how many reminders (needs_reply) or follow-up drafts
	// (awaiting_reply) are made before the thread is given up (default 2).
	MaxNudges int
	// AutoSendKnownContacts lets a follow-up draft go out without the
	// owner's approval, only when the thread has exactly one
	// correspondent and the owner has written to them before (a Known
	// contact) and Followups.AutoSend accepts it (the daily caps). Off by
	// default: every follow-up draft waits for approval.
	AutoSendKnownContacts bool
	// NudgeText is the follow-up draft's text, written by the owner
	// (followup.nudge_text; "" = DefaultNudgeText).
	NudgeText string
	// Lookback bounds how old the owner's sent mail may be to open an
	// awaiting_reply thread (default 14 days): the first scan of a Sent
	// folder does not turn a year of mail into followups.
	Lookback time.Duration
}

// Limits of a deadline read from a message.
const (
	// MaxDeadline is how far ahead a date read from a message may be.
	MaxDeadline = 180 * 24 * time.Hour
	// DefaultAfter is followup.default_after's default.
	DefaultAfter = 72 * time.Hour
	// DefaultMaxNudges is followup.max_nudges's default.
	DefaultMaxNudges = 2
)

func (fp Policy) after() time.Duration {
	if fp.DefaultAfter > 0 {
		return fp.DefaultAfter
	}
	return DefaultAfter
}

func (fp Policy) maxNudges() int {
	if fp.MaxNudges > 0 {
		return fp.MaxNudges
	}
	return DefaultMaxNudges
}

func (fp Policy) lookback() time.Duration {
	if fp.Lookback > 0 {
		return fp.Lookback
	}
	return 14 * 24 * time.Hour
}

// AddWait returns t plus the policy's wait: DefaultAfter, or with
// BusinessDays that many whole days (rounded up) not counting Saturdays
// and Sundays.
func (fp Policy) AddWait(t time.Time) time.Time {
	d := fp.after()
	if !fp.BusinessDays {
		return t.Add(d)
	}
	days := int((d + 24*time.Hour - 1) / (24 * time.Hour))
	for days > 0 {
		t = t.AddDate(0, 0, 1)
		if wd := t.Weekday(); wd != time.Saturday && wd != time.Sunday {
			days--
		}
	}
	return t
}

// ValidDeadline checks a date the model read in a message ("YYYY-MM-DD").
// It is accepted only when it parses, is after now, and is at most
// MaxDeadline ahead; the deadline is the end of that day in now's
// location. reason says why a non-empty value was refused.
func ValidDeadline(s string, now time.Time) (deadline time.Time, ok bool, reason string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false, ""
	}
	d, err := time.ParseInLocation(time.DateOnly, s, now.Location())
	if err != nil {
		return time.Time{}, false, fmt.Sprintf("reply_by %q is not a date (YYYY-MM-DD)", oneLine(s, 40))
	}
	end := d.Add(24*time.Hour - time.Second)
	switch {
	case !end.After(now):
		return time.Time{}, false, fmt.Sprintf("reply_by %s is in the past", s)
	case end.Sub(now) > MaxDeadline:
		return time.Time{}, false, fmt.Sprintf("reply_by %s is more than %d days ahead", s, int(MaxDeadline.Hours()/24))
	}
	return end, true, ""
}

// Store is what reply tracking needs from the database (*store.Store
// implements it).
type Store interface {
	UpdateFollowup(id string, fn func(old *store.Followup) (*store.Followup, error)) (*store.Followup, error)
	GetFollowup(id string) (*store.Followup, error)
	DueFollowups(before time.Time, fn func(*store.Followup) error) error
	FindByMessageID(account, messageID string) ([]*store.MessageRecord, error)
	PutQueueItem(q *store.QueueItem) error
	GetQueueItem(id string) (*store.QueueItem, error)
	TransitionQueueItem(id string, from []string, to string, mutate func(*store.QueueItem) error) (*store.QueueItem, error)
}

// Tracker tracks replies per thread and runs their timers.
type Tracker struct {
	Store  Store
	Policy Policy
	// Accounts answers who the owner is and which address an account
	// sends from; nil knows no owner and no address (the owner's own mail
	// is then not told apart from its recipients, and follow-up drafts
	// get no Message-ID of their own until they are sent).
	Accounts Accounts
	// Now is the clock (tests inject one); nil is time.Now.
	Now func() time.Time
	// Notify, when set, is told of every change (kind: followup_updated,
	// followup_due, queue_added, queue_updated); it must not block.
	Notify func(kind, id, account string)
	// Known reports whether the owner has written to email (a Known
	// contact); nil means nobody is known.
	Known func(account, email string) bool
	// AutoSend sends a follow-up draft without approval, as automatic
	// mail (Pipeline.AutoNudge: never through Approve, nothing learned,
	// the caps spent only by a send that goes ahead; a draft that stays
	// for approval wraps ErrNudgeNotSent); used only with
	// Policy.AutoSendKnownContacts. nil never sends.
	AutoSend func(ctx context.Context, item *store.QueueItem) error
}

// Accounts is what reply tracking needs to know of the accounts
// (agent.Accounts implements it).
type Accounts interface {
	// IsOwner reports whether addr is one of the owner's addresses on
	// account.
	IsOwner(account, addr string) bool
	// FromAddress is the address account sends from ("" when unknown).
	FromAddress(account string) string
}

// autoSendable reports whether fu's follow-up may go out unapproved.
func (f *Tracker) autoSendable(fu *store.Followup) bool {
	return f.Policy.AutoSendKnownContacts && f.AutoSend != nil && f.Known != nil &&
		len(fu.Correspondents) == 1 && f.Known(fu.Account, fu.Correspondents[0])
}

func (f *Tracker) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Tracker) notify(kind, id, account string) {
	if f.Notify != nil {
		f.Notify(kind, id, account)
	}
}

func (f *Tracker) isOwner(account, addr string) bool {
	return f.Accounts != nil && f.Accounts.IsOwner(account, addr)
}

// farFuture is a bound that every timer is before.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// open returns the account's open followups.
func (f *Tracker) open(account string) ([]*store.Followup, error) {
	var out []*store.Followup
	err := f.Store.DueFollowups(farFuture, func(fu *store.Followup) error {
		if fu.Account == account && store.FollowupOpen(fu.State) {
			out = append(out, fu)
		}
		return nil
	})
	return out, err
}

// expectsReply reports whether code (from the validated classification and
// the decision) considers rec a message the owner has to answer.
func expectsReply(rec *store.MessageRecord) bool {
	c := rec.Classification
	if c == nil || c.Action != "reply" || !rec.External() {
		return false
	}
	if slices.Contains(c.Intents, "spam") || slices.Contains(c.Intents, "fyi_notification") {
		return false
	}
	return rec.Decision == "queue" || rec.Decision == "notify"
}

// names reports whether ids (In-Reply-To or References) name one of want.
func names(ids []string, want ...string) bool {
	for _, w := range want {
		k := mail.IDKey(w)
		if k != "" && slices.ContainsFunc(ids, func(id string) bool { return mail.IDKey(id) == k }) {
			return true
		}
	}
	return false
}

// Incoming updates reply tracking with a message the pipeline finished.
// An answer to an awaiting_reply thread closes it (cancelling its timer);
// a message that expects a reply opens needs_reply.
//
// Who wrote rec is its authenticated correspondent (rec.Correspondent()),
// never the From text, and a thread reached by References or a subject
// is not evidence of who may change it: an awaiting_reply followup
// closes only on mail whose correspondent is among the recipients the
// owner wrote to (store.AddressedTo) and that names one of the owner's
// messages; an existing followup is replaced only by mail of one of its
// own correspondents; mail nobody authenticated only opens a followup
// in a thread that has none, and closes nothing.
func (f *Tracker) Incoming(ctx context.Context, rec *store.MessageRecord) error {
	if !f.Policy.Enabled || rec == nil || rec.State != store.StateDone || !rec.External() {
		return nil
	}
	who := rec.Correspondent() // "" when the owner's server vouched for nobody
	refs := slices.Concat(rec.InReplyTo, rec.References)
	open, err := f.open(rec.Account)
	if err != nil {
		return fmt.Errorf("followups: %w", err)
	}
	// Answers: the authenticated sender is one of the owner's recipients
	// and the message names one of the owner's messages.
	for _, fu := range open {
		if fu.State != store.FollowupAwaitingReply || !store.AddressedTo(fu.Correspondents, who) ||
			!names(refs, append([]string{fu.MessageID}, fu.PriorIDs...)...) {
			continue
		}
		if _, err := f.close(fu.ID, fu.UpdatedAt, store.FollowupDone,
			fmt.Sprintf("%s answered (%s)", who, oneLine(rec.MessageID, 80))); err != nil {
			return err
		}
	}
	if !expectsReply(rec) || rec.ThreadID == "" {
		return nil
	}
	now := f.now()
	id := store.FollowupID(rec.Account, rec.ThreadID)
	from := who
	if from == "" {
		from = rec.ReplyParty() // the From text: it opens a new followup, never changes one
	}
	_, err = f.Store.UpdateFollowup(id, func(old *store.Followup) (*store.Followup, error) {
		if old != nil && !store.AddressedTo(old.Correspondents, who) {
			// Someone else wrote in this thread (a subject or References
			// can join any thread), or nobody authenticated the sender:
			// the followup, open or closed, stays its correspondents'.
			return nil, nil
		}
		if old != nil && !old.LastAt.IsZero() && !rec.Date.IsZero() && rec.Date.Before(old.LastAt) {
			return nil, nil // older than what the followup already knows
		}
		if old != nil && !store.FollowupOpen(old.State) && mail.IDKey(old.MessageID) == mail.IDKey(rec.MessageID) {
			return nil, nil // the same message again (a retry): it stays closed
		}
		fu := &store.Followup{Account: rec.Account, ThreadID: rec.ThreadID, State: store.FollowupNeedsReply,
			Correspondents: []string{from}, Subject: rec.Subject, MessageID: rec.MessageID, Message: rec.MessageKey,
			LastAt: rec.Date, Reason: "the last message is from " + from + " and expects an answer"}
		if who == "" {
			fu.Reason += " (the sender is not authenticated)"
		}
		if fu.LastAt.IsZero() || fu.LastAt.After(now) {
			fu.LastAt = now
		}
		if old != nil {
			fu.CreatedAt = old.CreatedAt
		}
		fu.Deadline, fu.DeadlineSource = f.Policy.AddWait(fu.LastAt), "default"
		if rec.Classification != nil {
			if d, ok, why := ValidDeadline(rec.Classification.ReplyBy, now); ok {
				fu.Deadline, fu.DeadlineSource = d, "mail"
			} else if why != "" {
				fu.Reason += "; " + why + ", the default applies"
			}
		}
		fu.Due = fu.Deadline
		return fu, nil
	})
	if err != nil {
		return fmt.Errorf("followups: %w", err)
	}
	f.notify("followup_updated", id, rec.Account)
	return nil
}

// SentMail is one message from the owner's Sent folder, as reply tracking
// needs it.
type SentMail struct {
	Message *mail.Message
	// Asks is true when the owner's own text (quotes removed) asks
	// something or asks the other side to act (AsksQuestion).
	Asks bool
	// NudgeOf is the followup id when the message is one of mailagent's
	// follow-up drafts sent after approval ("" otherwise).
	NudgeOf string
}

// AsksQuestion is how Asks is decided: the owner's own text, without
// quotes and signature, asks something (a question mark) or asks the
// other side to do something ("please send", "let me know", "could you",
// "I look forward to your reply", and the same in German, French and
// Spanish; see requestPhrases). Code decides, never the model.
func AsksQuestion(m *mail.Message) bool {
	if strings.ContainsAny(m.CleanText, "?？¿") {
		return true
	}
	text := " " + strings.Join(strings.FieldsFunc(strings.ToLower(m.CleanText), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}), " ") + " "
	for _, p := range requestPhrases {
		if strings.Contains(text, " "+p+" ") {
			return true
		}
	}
	return false
}

// requestPhrases are the words, lowercased and with punctuation turned to
// single spaces, by which a mail asks the other side to act or answer
// without a question mark. A phrase must stand as whole words.
var requestPhrases = []string{
	"please send", "please let me know", "let me know", "please confirm", "please review",
	"please reply", "please get back", "get back to me", "please sign", "please advise",
	"please share", "please provide", "please check", "could you", "can you", "would you",
	"i look forward to your", "looking forward to your", "looking forward to hearing",
	"i look forward to hearing", "i'd appreciate", "i would appreciate", "send me",
	"waiting for your", "awaiting your",
	// German, French, Spanish.
	"bitte schick", "bitte senden", "bitte sende", "bitte bestätigen", "bitte bestätige", "gib mir bescheid",
	"geben sie mir bescheid", "lass mich wissen", "lassen sie mich wissen", "könntest du", "könnten sie",
	"ich freue mich auf ihre", "ich freue mich auf deine",
	"merci de me", "merci de confirmer", "pourriez vous", "pouvez vous", "peux tu", "tiens moi au courant",
	"tenez moi au courant", "j'attends votre", "dans l'attente de votre",
	"por favor envía", "por favor envíame", "por favor confirma", "podrías", "podría enviarme", "avísame",
	"quedo a la espera",
}

// OwnerSent updates reply tracking with mail the owner sent (any client,
// or mailagent after approval); automatic mail must be left out by the
// caller. A reply to the last message of a needs_reply thread that goes to
// its sender closes it; a message that asks something opens (or moves)
// awaiting_reply.
func (f *Tracker) OwnerSent(ctx context.Context, account string, sent ...SentMail) error {
	if !f.Policy.Enabled {
		return nil
	}
	for _, s := range sent {
		m := s.Message
		if m == nil || m.AutoSubmitted() {
			continue
		}
		var rcpts []string
		for _, a := range slices.Concat(m.To, m.Cc) {
			if e := mail.AddrKey(a.Email); e != "" && !f.isOwner(account, e) && !slices.Contains(rcpts, e) {
				rcpts = append(rcpts, e)
			}
		}
		open, err := f.open(account)
		if err != nil {
			return fmt.Errorf("followups: %w", err)
		}
		threadID := ""
		for _, fu := range open {
			if fu.State == store.FollowupNeedsReply && names(m.InReplyTo, fu.MessageID) &&
				slices.ContainsFunc(fu.Correspondents, func(c string) bool { return slices.Contains(rcpts, c) }) {
				threadID = fu.ThreadID
				if _, err := f.close(fu.ID, fu.UpdatedAt, store.FollowupDone,
					"the owner replied ("+oneLine(m.MessageID, 80)+")"); err != nil {
					return err
				}
			}
			if fu.State == store.FollowupAwaitingReply && names(slices.Concat(m.InReplyTo, m.References), append([]string{fu.MessageID}, fu.PriorIDs...)...) {
				threadID = fu.ThreadID
			}
		}
		if !s.Asks || len(rcpts) == 0 || m.Synthesized {
			continue
		}
		if d := m.Date; !d.IsZero() && f.now().Sub(d) > f.Policy.lookback() {
			continue
		}
		if threadID == "" {
			threadID = f.threadOf(account, m)
		}
		if err := f.openAwaiting(ctx, account, threadID, s, rcpts); err != nil {
			return err
		}
	}
	return nil
}

// threadOf finds the thread of an owner's message from the stored records
// it names, else makes one from its own Message-ID.
func (f *Tracker) threadOf(account string, m *mail.Message) string {
	for _, id := range slices.Concat(m.InReplyTo, m.References) {
		recs, err := f.Store.FindByMessageID(account, id)
		if err == nil && len(recs) > 0 && recs[0].ThreadID != "" {
			return recs[0].ThreadID
		}
	}
	return "sent:" + mail.IDKey(m.MessageID)
}

func (f *Tracker) openAwaiting(ctx context.Context, account, threadID string, s SentMail, rcpts []string) error {
	m := s.Message
	now := f.now()
	id := store.FollowupID(account, threadID)
	_, err := f.Store.UpdateFollowup(id, func(old *store.Followup) (*store.Followup, error) {
		last := m.Date
		if last.IsZero() || last.After(now) {
			last = now
		}
		if old != nil && (mail.IDKey(old.MessageID) == mail.IDKey(m.MessageID) ||
			slices.ContainsFunc(old.PriorIDs, func(p string) bool { return mail.IDKey(p) == mail.IDKey(m.MessageID) })) {
			return nil, nil // seen already (a rescan of Sent)
		}
		if old != nil && last.Before(old.LastAt) {
			return nil, nil
		}
		fu := &store.Followup{Account: account, ThreadID: threadID, State: store.FollowupAwaitingReply,
			Correspondents: rcpts, Subject: m.Subject, MessageID: m.MessageID, LastAt: last,
			Reason: "the owner asked " + strings.Join(rcpts, ", ") + " and no answer came"}
		fu.Deadline, fu.DeadlineSource = f.Policy.AddWait(last), "default"
		fu.Due = fu.Deadline
		if old != nil && old.State == store.FollowupAwaitingReply {
			fu.PriorIDs = append(old.PriorIDs, old.MessageID)
			if s.NudgeOf == id {
				// Our own nudge went out: the escalation goes on from
				// where it was.
				fu.Tier, fu.Nudges, fu.NudgeIDs = old.Tier, old.Nudges, old.NudgeIDs
				fu.Deadline, fu.DeadlineSource = old.Deadline, old.DeadlineSource
			}
		}
		return fu, nil
	})
	if err != nil {
		return fmt.Errorf("followups: %w", err)
	}
	f.notify("followup_updated", id, account)
	return nil
}

// close moves an open followup to state (done or gave_up), if it has not
// changed since updated (zero: whatever it is). It reports whether it did.
func (f *Tracker) close(id string, updated time.Time, state, reason string) (bool, error) {
	did := false
	fu, err := f.Store.UpdateFollowup(id, func(old *store.Followup) (*store.Followup, error) {
		if old == nil || !store.FollowupOpen(old.State) || (!updated.IsZero() && !old.UpdatedAt.Equal(updated)) {
			return nil, nil
		}
		old.State, old.Reason, old.Due = state, reason, time.Time{}
		did = true
		return old, nil
	})
	if err != nil {
		return false, fmt.Errorf("followups: close %s: %w", id, err)
	}
	if did {
		// Follow-up drafts still waiting for approval are moot now.
		for _, q := range append(slices.Clone(fu.NudgeIDs), NudgeID(id, fu.Nudges+1)) {
			_, err := f.Store.TransitionQueueItem(q, outbox.OpenStatuses, store.QueueResolved, func(it *store.QueueItem) error {
				it.Reasons = append(it.Reasons, "not needed: "+reason)
				return nil
			})
			if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
				return true, fmt.Errorf("followups: resolve nudge %s: %w", q, err)
			}
		}
		f.notify("followup_updated", id, fu.Account)
	}
	return did, nil
}

// ErrClosed: the followup is done or given up. It matches
// outbox.ErrNotActionable (agent.ErrNotActionable).
var ErrClosed = fmt.Errorf("%w: the followup is closed", outbox.ErrNotActionable)

// MarkDone closes a followup at the owner's request.
func (f *Tracker) MarkDone(ctx context.Context, id string) error {
	if _, err := f.Store.GetFollowup(id); err != nil {
		return err
	}
	did, err := f.close(id, time.Time{}, store.FollowupDone, "marked done by the owner")
	if err != nil {
		return err
	}
	if !did {
		return fmt.Errorf("mark %s done: %w", id, ErrClosed)
	}
	return nil
}

// Snooze hides a followup and delays its timer until until (which must be
// in the future).
func (f *Tracker) Snooze(ctx context.Context, id string, until time.Time) error {
	if !until.After(f.now()) {
		return fmt.Errorf("snooze %s: %s is not in the future", id, until.Format(time.RFC3339))
	}
	closed := false
	fu, err := f.Store.UpdateFollowup(id, func(old *store.Followup) (*store.Followup, error) {
		if old == nil {
			return nil, store.ErrNotFound
		}
		if !store.FollowupOpen(old.State) {
			closed = true
			return nil, nil
		}
		old.SnoozeUntil, old.Due = until, until
		return old, nil
	})
	if err != nil {
		return fmt.Errorf("snooze %s: %w", id, err)
	}
	if closed {
		return fmt.Errorf("snooze %s: %w", id, ErrClosed)
	}
	f.notify("followup_updated", id, fu.Account)
	return nil
}

// NudgeID is the queue id of a followup's n-th follow-up draft.
func NudgeID(followupID string, n int) string { return fmt.Sprintf("q_%s_%d", followupID, n) }

// NudgeOf returns the followup id a nudge queue id belongs to ("" when
// id is not a nudge's).
func NudgeOf(queueID string) string {
	rest, ok := strings.CutPrefix(queueID, "q_fu_")
	if !ok {
		return ""
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 {
		return ""
	}
	return "fu_" + rest[:i]
}

// DefaultNudgeText is a follow-up draft's text when the owner wrote none.
const DefaultNudgeText = "Hello,\n\nI am following up on my message below. Could you let me know where things stand?\n\nThank you."

// nudgeText is the follow-up draft: the owner's text (or the default), no
// model, nothing from the other side's mail, so a stale thread cannot be
// used to make the agent say something; the owner edits it in review.
func (fp Policy) nudgeText() string {
	if strings.TrimSpace(fp.NudgeText) != "" {
		return fp.NudgeText
	}
	return DefaultNudgeText
}

// Nudge queues a follow-up draft for an awaiting_reply followup now, at
// the owner's request; it returns the queue item.
func (f *Tracker) Nudge(ctx context.Context, id string) (*store.QueueItem, error) {
	fu, err := f.Store.GetFollowup(id)
	if err != nil {
		return nil, err
	}
	if !store.FollowupOpen(fu.State) {
		return nil, fmt.Errorf("nudge %s: %w", id, ErrClosed)
	}
	if fu.State != store.FollowupAwaitingReply {
		return nil, fmt.Errorf("nudge %s: %w: only a thread awaiting an answer gets a follow-up draft (this one needs the owner's reply)", id, outbox.ErrNotActionable)
	}
	q, err := f.queueNudge(fu, fu.Nudges+1, "the owner asked for a follow-up")
	if err != nil {
		return nil, err
	}
	// Counted like a timer's nudge; the next tier waits from now.
	now := f.now()
	_, err = f.Store.UpdateFollowup(id, func(old *store.Followup) (*store.Followup, error) {
		if old == nil || !store.FollowupOpen(old.State) || slices.Contains(old.NudgeIDs, q.ID) {
			return nil, nil
		}
		old.Nudges++
		old.NudgeIDs = append(old.NudgeIDs, q.ID)
		old.Tier = store.TierNudged
		old.Due = f.Policy.AddWait(now)
		old.Reason = fmt.Sprintf("follow-up draft %d queued for approval (asked by the owner)", old.Nudges)
		return old, nil
	})
	if err != nil {
		return nil, fmt.Errorf("nudge %s: %w", id, err)
	}
	return q, nil
}

// queueNudge writes the n-th follow-up draft of fu, unless it exists.
func (f *Tracker) queueNudge(fu *store.Followup, n int, why string) (*store.QueueItem, error) {
	qid := NudgeID(fu.ID, n)
	if q, err := f.Store.GetQueueItem(qid); err == nil {
		return q, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	to := make([]mail.Address, 0, len(fu.Correspondents))
	for _, c := range fu.Correspondents {
		to = append(to, mail.Address{Email: c})
	}
	var from mail.Address
	if len(to) > 0 {
		from = to[0]
	}
	q := &store.QueueItem{ID: qid, Kind: store.KindDraft, Account: fu.Account, Message: fu.Message,
		MessageID: fu.MessageID, ThreadID: fu.ThreadID, From: from, To: to, Subject: fu.Subject,
		Draft: f.Policy.nudgeText(), Status: store.QueuePending,
		Reasons: []string{fmt.Sprintf("follow-up %d: no answer since %s (%s)", n, fu.LastAt.Format(time.DateOnly), why)}}
	if f.Accounts != nil {
		if from := f.Accounts.FromAddress(fu.Account); from != "" {
			q.DraftMessageID = fmt.Sprintf("%s.nudge@%s", qid, from[strings.LastIndexByte(from, '@')+1:])
		}
	}
	if err := f.Store.PutQueueItem(q); err != nil {
		return nil, err
	}
	f.notify("queue_added", qid, fu.Account)
	return q, nil
}

// FireDue runs every timer due at now: a first reminder, then follow-up
// drafts (awaiting_reply) or more reminders (needs_reply), then gave_up
// after MaxNudges. It returns how many fired.
func (f *Tracker) FireDue(ctx context.Context) (int, error) {
	if !f.Policy.Enabled {
		return 0, nil
	}
	now := f.now()
	var due []*store.Followup
	if err := f.Store.DueFollowups(now, func(fu *store.Followup) error {
		due = append(due, fu)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("followups: %w", err)
	}
	n := 0
	var errs error
	for _, fu := range due {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		fired, err := f.fire(ctx, fu, now)
		if err != nil {
			errs = errors.Join(errs, err)
		}
		if fired {
			n++
		}
	}
	return n, errs
}

func (f *Tracker) fire(ctx context.Context, fu *store.Followup, now time.Time) (bool, error) {
	if !store.FollowupOpen(fu.State) || fu.Due.After(now) {
		return false, nil
	}
	max := f.Policy.maxNudges()
	// The side effect (a queue item with a derived id) goes first; the
	// timer then moves only if nobody moved it meanwhile.
	var nudge *store.QueueItem
	if fu.Tier >= store.TierReminded && fu.State == store.FollowupAwaitingReply && fu.Nudges < max {
		q, err := f.queueNudge(fu, fu.Nudges+1, "deadline "+fu.Deadline.Format(time.DateOnly)+" passed")
		if err != nil {
			return false, fmt.Errorf("followups: nudge %s: %w", fu.ID, err)
		}
		nudge = q
	}
	fired := false
	out, err := f.Store.UpdateFollowup(fu.ID, func(old *store.Followup) (*store.Followup, error) {
		if old == nil || !store.FollowupOpen(old.State) || !old.Due.Equal(fu.Due) || old.Tier != fu.Tier || old.Nudges != fu.Nudges {
			return nil, nil // closed, snoozed or fired meanwhile
		}
		fired = true
		old.SnoozeUntil = time.Time{}
		switch {
		case old.Tier == store.TierNone:
			old.Tier = store.TierReminded
			old.Reason = "stale: deadline " + old.Deadline.Format(time.DateOnly) + " passed (reminder)"
		case old.Nudges >= max:
			old.State = store.FollowupGaveUp
			old.Reason = fmt.Sprintf("no answer after %d follow-ups", old.Nudges)
			return old, nil
		case nudge != nil:
			old.Tier = store.TierNudged
			old.Nudges++
			old.NudgeIDs = append(old.NudgeIDs, nudge.ID)
			old.Reason = fmt.Sprintf("follow-up draft %d queued for approval", old.Nudges)
		default:
			old.Nudges++
			old.Reason = fmt.Sprintf("still unanswered (reminder %d)", old.Nudges+1)
		}
		old.Due = f.Policy.AddWait(now)
		return old, nil
	})
	if err != nil {
		return false, fmt.Errorf("followups: fire %s: %w", fu.ID, err)
	}
	if fired {
		f.notify("followup_due", fu.ID, out.Account)
	}
	if fired && nudge != nil && nudge.Status == store.QueuePending && f.autoSendable(out) {
		// The policy allows it: the draft goes out as automatic mail
		// through the outbox (the Sent check, policy.send_delay), not as
		// an approval, so it teaches nothing. Over the caps it waits for
		// the owner like any follow-up draft.
		err := f.AutoSend(ctx, nudge)
		switch {
		case errors.Is(err, ErrNudgeNotSent):
			f.notify("queue_updated", nudge.ID, out.Account)
		case err != nil:
			return true, fmt.Errorf("followups: auto-send %s: %w", nudge.ID, err)
		}
	}
	return fired, nil
}

// ErrNudgeNotSent is wrapped when a follow-up draft does not go out on
// its own and waits for the owner's approval instead (the reason
// follows); nothing was counted against the daily caps. Tracker.AutoSend
// returns it for a draft that stays for approval.
var ErrNudgeNotSent = errors.New("the follow-up draft waits for approval")

// oneLine collapses s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
