package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// SentLookback is how far before the replayed period the Sent folder is
// read, so that the known-contact gate sees whom the owner wrote to
// before: agent.SentLookback, as watch's first Sent scan and triage.
const SentLookback = agent.SentLookback

// Account is one mail account to replay.
type Account struct {
	Name string
	// Mailbox is the incoming mailbox (INBOX).
	Mailbox string
	// SentMailbox names the Sent folder; "" finds it by SPECIAL-USE.
	SentMailbox string
	// Owner tells the owner's addresses (agent.Owner.IsOwner).
	Owner agent.Owner
	// Dial opens a logged-in IMAP connection.
	Dial func(ctx context.Context) (*imapsync.Client, error)
}

// Runner replays accounts through a pipeline and records each message's
// result.
type Runner struct {
	// Pipeline is the agent's pipeline, with its Store opened read-only
	// (or a watcher's store through the API). Run sets DryRun on a copy
	// and never writes through it.
	Pipeline *agent.Pipeline
	// Drafter, when set, drafts the reply to every message the pipeline
	// would answer (--drafts); Profile is the owner's profile for it.
	Drafter agent.Drafter
	Profile string
	Results *Results
	// Concurrency is how many messages are in flight (default 4); the
	// model's rate limit is the Pipeline's classifier's.
	Concurrency     int
	MaxMessageBytes int64
	// OnStart is told how many messages of a mailbox are left to replay;
	// OnDone is called after each (from several goroutines; it must be
	// safe for that).
	OnStart func(account, mailbox string, todo int)
	OnDone  func()
	Logger  *slog.Logger
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Run replays a's incoming mail since since (at most limit messages per
// mailbox, the newest; 0 = all): its mailbox, and the archive and trash
// folders when the server has them (their messages count as archived or
// deleted by the owner). A server without an archive folder may have an
// All Mail folder (SPECIAL-USE \All, Gmail's "[Gmail]/All Mail") that
// holds every message under every label: its messages found in no other
// folder (INBOX, Sent, Drafts, Trash, Junk; matched by Message-ID) are
// the archived ones, and only those are replayed. Messages with a result
// already are skipped. It returns the keys of every message selected,
// replayed now or before, in order. The mailbox is only EXAMINEd and read
// with BODY.PEEK.
func (r *Runner) Run(ctx context.Context, a Account, since time.Time, limit int) ([]store.MessageKey, error) {
	c, err := a.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	ix, err := r.readSent(ctx, c, a, since)
	if err != nil {
		return nil, err
	}
	boxes := []replayBox{{name: a.Mailbox}}
	find := func(attr string, names ...string) string {
		name, err := c.FindSpecialUse(ctx, attr, names...) // the attribute, else the usual names
		if err != nil || strings.EqualFold(name, a.Mailbox) {
			return ""
		}
		return name
	}
	archive := find(`\Archive`, "Archive", "Archives")
	if archive != "" {
		boxes = append(boxes, replayBox{name: archive, archived: true})
	}
	trash := find(`\Trash`)
	if trash != "" {
		boxes = append(boxes, replayBox{name: trash, trashed: true})
	}
	if archive == "" {
		if all := find(`\All`, AllMailNames...); all != "" {
			// Every other folder's mail is in All Mail too: what is left
			// once theirs is taken out is the archived mail.
			others := []string{a.Mailbox, trash, find(`\Sent`), find(`\Drafts`), find(`\Junk`)}
			if a.SentMailbox != "" {
				others = append(others, a.SentMailbox)
			}
			elsewhere, err := r.messageIDs(ctx, c, a, others, since)
			if err != nil {
				return nil, err
			}
			boxes = append(boxes, replayBox{name: all, archived: true, skip: elsewhere})
		}
	}
	var keys []store.MessageKey
	for _, b := range boxes {
		ks, err := r.replayMailbox(ctx, c, a, ix, b, since, limit)
		keys = append(keys, ks...)
		if err != nil {
			return keys, err
		}
	}
	return keys, nil
}

// AllMailNames are the names of Gmail's All Mail folder, tried when the
// server marks no folder \All.
var AllMailNames = []string{"[Gmail]/All Mail", "[Google Mail]/All Mail"}

// replayBox is one folder to replay and what its mail says of the owner.
type replayBox struct {
	name              string
	archived, trashed bool
	// skip, when set, holds the Message-IDs (IDKey of the header's id) of
	// mail that is not replayed from this folder: an All Mail folder's
	// copies of mail in the other folders.
	skip map[string]bool
}

// headerBatch is how many headers one FETCH asks for when the Message-IDs
// of a folder are collected.
const headerBatch = 500

// messageIDs returns the Message-IDs of the mail since since in the
// folders named (each once; "" is skipped), as headerIDs gives them.
func (r *Runner) messageIDs(ctx context.Context, c *imapsync.Client, a Account, folders []string, since time.Time) (map[string]bool, error) {
	ids := map[string]bool{}
	done := map[string]bool{}
	for _, f := range folders {
		if f == "" || done[strings.ToLower(f)] {
			continue
		}
		done[strings.ToLower(f)] = true
		if _, err := c.Select(ctx, f, true); err != nil {
			return nil, fmt.Errorf("account %s: examine %s: %w", a.Name, f, err)
		}
		uids, err := c.Search(ctx, imapsync.Criteria{Since: since})
		if err != nil {
			return nil, fmt.Errorf("account %s: search %s: %w", a.Name, f, err)
		}
		err = headerIDs(ctx, c, uids, func(_ uint32, id string) { ids[id] = true })
		if err != nil {
			return nil, fmt.Errorf("account %s: read %s: %w", a.Name, f, err)
		}
	}
	return ids, nil
}

// headerIDs reads the header of each of uids in the selected folder and
// calls fn with its Message-ID key. A header without a Message-ID gets
// the id mail.Parse makes up for it from the header alone, so the same
// message gives the same id in every folder.
func headerIDs(ctx context.Context, c *imapsync.Client, uids []uint32, fn func(uid uint32, id string)) error {
	for len(uids) > 0 {
		batch := uids[:min(headerBatch, len(uids))]
		uids = uids[len(batch):]
		heads, err := c.FetchHeaders(ctx, batch, 64<<10)
		if err != nil {
			return err
		}
		for _, u := range batch {
			if h, ok := heads[u]; ok {
				fn(u, mail.IDKey(mail.Parse(h).MessageID))
			}
		}
	}
	return nil
}

// readSent indexes the owner's messages in Sent since SentLookback before
// since.
func (r *Runner) readSent(ctx context.Context, c *imapsync.Client, a Account, since time.Time) (*SentIndex, error) {
	attr, names := `\Sent`, []string(nil)
	if a.SentMailbox != "" {
		attr, names = "", []string{a.SentMailbox}
	}
	sent, err := c.FindSpecialUse(ctx, attr, names...)
	if err != nil {
		return nil, fmt.Errorf("account %s: find the Sent folder: %w", a.Name, err)
	}
	if _, err := c.Select(ctx, sent, true); err != nil {
		return nil, fmt.Errorf("account %s: examine %s: %w", a.Name, sent, err)
	}
	from := time.Time{}
	if !since.IsZero() {
		from = since.Add(-SentLookback)
	}
	uids, err := c.Search(ctx, imapsync.Criteria{Since: from})
	if err != nil {
		return nil, fmt.Errorf("account %s: search Sent: %w", a.Name, err)
	}
	var msgs []*mail.Message
	err = c.Fetch(ctx, uids, imapsync.FetchOptions{MaxMessageBytes: 1 << 20}, func(m imapsync.RawMessage) error {
		msgs = append(msgs, mail.Parse(m.Raw))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("account %s: read Sent: %w", a.Name, err)
	}
	return NewSentIndex(msgs, a.Owner), nil
}

func (r *Runner) replayMailbox(ctx context.Context, c *imapsync.Client, a Account, ix *SentIndex, b replayBox,
	since time.Time, limit int) ([]store.MessageKey, error) {
	mailbox, archived, trashed := b.name, b.archived, b.trashed
	st, err := c.Select(ctx, mailbox, true) // EXAMINE: read-only
	if err != nil {
		return nil, fmt.Errorf("account %s: examine %s: %w", a.Name, mailbox, err)
	}
	uids, err := c.Search(ctx, imapsync.Criteria{Since: since})
	if err != nil {
		return nil, fmt.Errorf("account %s: search %s: %w", a.Name, mailbox, err)
	}
	if b.skip != nil { // before the limit: it counts the mail replayed from here
		drop := map[uint32]bool{}
		err := headerIDs(ctx, c, uids, func(u uint32, id string) {
			if b.skip[id] {
				drop[u] = true
			}
		})
		if err != nil {
			return nil, fmt.Errorf("account %s: read %s: %w", a.Name, mailbox, err)
		}
		uids = slices.DeleteFunc(uids, func(u uint32) bool { return drop[u] })
	}
	slices.Sort(uids)
	if limit > 0 && len(uids) > limit {
		uids = uids[len(uids)-limit:]
	}
	keys := make([]store.MessageKey, len(uids))
	for i, u := range uids {
		keys[i] = store.MessageKey{Account: a.Name, Mailbox: mailbox, UIDValidity: st.UIDValidity, UID: u}
	}
	done, err := r.Results.Done(a.Name, mailbox, st.UIDValidity)
	if err != nil {
		return keys, fmt.Errorf("replay results: %w", err)
	}
	todo := slices.DeleteFunc(slices.Clone(uids), func(u uint32) bool { return done[u] })
	r.logger().Info("replay", "account", a.Name, "mailbox", mailbox, "messages", len(uids), "todo", len(todo))
	if r.OnStart != nil {
		r.OnStart(a.Name, mailbox, len(todo))
	}
	if len(todo) == 0 {
		return keys, nil
	}
	base := *r.Pipeline
	base.DryRun = true
	base.Actor = nil
	fetch := func(ctx context.Context, send func(imapsync.RawMessage) error) error {
		// Prefetch: the next messages come in while the workers handle
		// these (send only queues; nothing else uses c meanwhile).
		return c.Fetch(ctx, todo, imapsync.FetchOptions{MaxMessageBytes: r.MaxMessageBytes, Prefetch: true}, send)
	}
	work := func(ctx context.Context, m imapsync.RawMessage) error {
		res, err := r.one(ctx, &base, ix, a, m, archived, trashed)
		if err != nil {
			return fmt.Errorf("uid %d: %w", m.UID, err)
		}
		if err := r.Results.Put(res); err != nil {
			return fmt.Errorf("replay results: %w", err)
		}
		if r.OnDone != nil {
			r.OnDone()
		}
		return nil
	}
	conc := r.Concurrency
	if conc <= 0 {
		conc = 4
	}
	if err := agent.RunPool(ctx, conc, fetch, work); err != nil {
		if ctx.Err() != nil {
			return keys, ctx.Err()
		}
		return keys, fmt.Errorf("account %s: %w", a.Name, err)
	}
	return keys, nil
}

// one replays one message.
func (r *Runner) one(ctx context.Context, base *agent.Pipeline, ix *SentIndex, a Account, m imapsync.RawMessage, archived, trashed bool) (*Result, error) {
	p := *base
	p.Store = asOf{Store: base.Store, ix: ix, at: m.InternalDate}
	key := store.MessageKey{Account: a.Name, Mailbox: m.Mailbox, UIDValidity: m.UIDValidity, UID: m.UID}
	out, err := p.Triage(ctx, agent.Input{Key: key, Raw: m.Raw, Truncated: m.Truncated}, true)
	if err != nil {
		return nil, err
	}
	rec := out.Record
	res := &Result{Key: key, MessageID: rec.MessageID, From: rec.From.Email, Subject: rec.Subject, Date: rec.Date,
		Arrived: m.InternalDate, FromOwner: a.Owner.IsOwner(rec.From.Email)}
	if res.Date.IsZero() {
		res.Date = m.InternalDate
	}
	w := Would{Route: rec.Route, Decision: rec.Decision, Classification: rec.Classification, Gates: rec.Gates, Error: rec.Error,
		TokensIn: int64(out.Usage.PromptTokens), TokensOut: int64(out.Usage.OutputTokens),
		To: mail.AddrKey(rec.SenderAuth.Identity())}
	if out.Trace != nil {
		for _, s := range out.Trace.Steps {
			if s.Name == "classify" {
				w.Calls += 1 + s.Retries // a repair or a transport retry is one more request
			}
		}
	}
	if r.Drafter != nil && w.NeedsReply() {
		dd, err := p.DraftDryRun(ctx, rec, "", r.Drafter, r.Profile)
		if dd != nil {
			w.Calls += dd.Calls
			w.TokensIn += int64(dd.Usage.PromptTokens)
			w.TokensOut += int64(dd.Usage.OutputTokens)
		}
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			// As watch does: a failed draft leaves the message for review.
			w.Decision, w.Error = agent.DecisionNeedsReview, "drafting failed: "+err.Error()
		default:
			w.Drafted, w.Draft, w.NeedsIn, w.Gates, w.Decision = true, dd.Body, dd.NeedsOwnerInput, dd.Gates, dd.Decision
		}
	}
	res.Would = w
	parent := &mail.Message{MessageID: rec.MessageID, From: rec.From, ReplyTo: rec.ReplyTo, Date: rec.Date}
	res.Truth = TruthFor(ix, parent, m.Flags, archived, trashed)
	return res, nil
}

// asOf is the agent's store as the pipeline sees it during a replay,
// rolled back to the message's arrival where the agent's memory is
// derived from dated facts (today's store would leak the future):
//   - a contact is known when the owner wrote to them before the message
//     arrived (the Sent folder says so);
//   - a contact's history keeps only the exchanges dated before it, and
//     the rolling summary only if it was written before it (it was made
//     from exchanges up to then); the owner's notes, which carry no date,
//     are kept;
//   - the thread context keeps only the messages dated before it;
//   - the daily caps read zero here: Score simulates them over the
//     results in arrival order (see simulateCaps), never from the store.
type asOf struct {
	agent.Store
	ix *SentIndex
	at time.Time
}

func (s asOf) GetContact(account, email string) (*store.Contact, error) {
	known := s.ix.KnownBefore(email, s.at)
	c, err := s.Store.GetContact(account, email)
	switch {
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, err
	case err != nil && !known:
		return nil, err
	case err != nil:
		return &store.Contact{Email: mail.AddrKey(email), Known: true}, nil
	}
	cc := *c
	cc.Known = known
	if !s.at.IsZero() {
		cc.History = slices.DeleteFunc(slices.Clone(c.History), func(h store.HistoryEntry) bool { return !h.Date.Before(s.at) })
		if !c.SummaryAt.Before(s.at) {
			cc.Summary, cc.SummaryAt, cc.SinceSummary = "", time.Time{}, len(cc.History)
		}
	}
	return &cc, nil
}

func (s asOf) ThreadMessages(threadID string, limit int) ([]*store.MessageRecord, error) {
	msgs, err := s.Store.ThreadMessages(threadID, limit)
	if err != nil || s.at.IsZero() {
		return msgs, err
	}
	return slices.DeleteFunc(msgs, func(r *store.MessageRecord) bool { return !r.Date.Before(s.at) }), nil
}

func (asOf) AutoSendCounts(string, string, string) (int, int, error) { return 0, 0, nil }

// Writes never happen in a dry run; these make sure of it.
func (asOf) PutMessage(*store.MessageRecord) error { return errReadOnly }
func (asOf) PutTrace(*store.Trace) error           { return errReadOnly }
func (asOf) RelabelThread(string, string) error    { return errReadOnly }

var errReadOnly = errors.New("replay: the agent's store is read-only")

// Load returns the results of keys, in order, skipping keys without one.
func (r *Results) Load(keys []store.MessageKey) ([]*Result, error) {
	if err := r.Flush(); err != nil {
		return nil, err
	}
	out := make([]*Result, 0, len(keys))
	err := r.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bResults)
		for _, k := range keys {
			v := b.Get(resultKey(k))
			if v == nil {
				continue
			}
			res := &Result{}
			if err := json.Unmarshal(v, res); err != nil {
				return fmt.Errorf("decode result uid %d: %w", k.UID, err)
			}
			out = append(out, res)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay results: %w", err)
	}
	return out, nil
}
