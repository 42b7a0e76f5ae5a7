package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/internal/compose"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// Store is what the pipeline needs from persistent state.
type Store interface {
	GetMessage(k store.MessageKey) (*store.MessageRecord, error)
	PutMessage(rec *store.MessageRecord) error
	PutTrace(t *store.Trace) error
	ThreadMessages(threadID string, limit int) ([]*store.MessageRecord, error)
	RelabelThread(from, to string) error
	GetContact(account, email string) (*store.Contact, error)
	AutoSendCounts(account, contact, day string) (perContact, global int, err error)
}

// Account is one configured mailbox owner.
type Account struct {
	Name  string
	Owner Owner
	// From is the address replies are sent from.
	From mail.Address
	// Footer is appended to auto-sent replies ("" = none).
	Footer string
	// DraftsToIMAP also saves queued drafts to the Drafts folder.
	DraftsToIMAP bool
}

// Accounts are the configured accounts by name. Reply tracking
// (followup.Tracker) reads them through followup.Accounts.
type Accounts map[string]Account

// IsOwner reports whether addr is one of the owner's addresses on account
// (Owner.IsOwner); an unknown account has no owner address.
func (as Accounts) IsOwner(account, addr string) bool {
	a, ok := as[account]
	return ok && a.Owner.IsOwner(addr)
}

// FromAddress is the address account sends from ("" for an unknown
// account).
func (as Accounts) FromAddress(account string) string { return as[account].From.Email }

// Input is one fetched message.
type Input struct {
	Key       store.MessageKey
	Raw       []byte
	Truncated bool
	// FromSent is true when the message was read from the owner's Sent
	// folder, which is how owner mail is authenticated without headers.
	FromSent bool
}

// Outcome is what the pipeline did with one message.
type Outcome struct {
	Record  *store.MessageRecord
	Trace   *store.Trace
	Usage   llm.Usage
	Skipped bool // already triaged, and redo was not asked for
}

// Pipeline routes, classifies and decides. It is safe for concurrent use
// as long as its fields are not changed while it runs.
type Pipeline struct {
	Store      Store
	Classifier Classifier
	Threader   *mail.Threader
	Policy     Policy
	Accounts   Accounts
	// MaxBodyChars caps the clean text the model sees (default 4000).
	MaxBodyChars int
	// ClassifyAutomated lets automated mail reach the model (default off:
	// it costs no call and is never answered either way).
	ClassifyAutomated bool
	// DryRun writes nothing: no record, no trace, no thread relabel.
	DryRun bool
	// SentByUs reports whether mailagent generated a Message-ID (loop guard).
	SentByUs func(account, messageID string) bool
	// Actor carries out decisions; nil for triage, which never acts.
	Actor *Actor
	// Followups, when set (watch), tracks replies per thread: every
	// message Process finishes is shown to it (followup.go).
	Followups *followup.Tracker
	Now       func() time.Time
	Logger    *slog.Logger

	// Calendar, when set, gives scheduling drafts the owner's free slots
	// and the schedule gate its answer (schedule.go).
	Calendar Calendar
	// Tools bounds the tool step before drafting and holds the external
	// (MCP) tools; nil uses the defaults and no external tool (tools.go).
	Tools *ToolStep

	// Snapshots records each step's input and output in the trace,
	// redacted by Redactor (no Redactor: none are kept). See snapshot.go.
	Snapshots bool
	Redactor  Redactor
}

const (
	maxHeaderChars     = 200 // From, To, Subject as the model sees them
	maxListed          = 8   // recipients and attachments listed
	excerptChars       = 2000
	threadExcerptChars = prompts.ExcerptLimit
	threadContext      = 3
)

func (p *Pipeline) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Pipeline) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func newTraceID() string { return traceIDAt(time.Now()) }

// traceIDAt is "tr_" and 24 hex digits: the time in milliseconds (6
// bytes), then 6 random bytes. Time first, so that each new trace is
// appended at the end of the traces and snapshots buckets (keyed by
// trace id) instead of rewriting leaf pages all over them: fully random
// ids cost a corpus triage about a tenth of its CPU (BENCHMARKS.md §2).
// 48 random bits make two ids of the same millisecond as unlikely to
// meet as the 64 of the earlier, all-random form (still read as they
// are: an id is only a key).
func traceIDAt(t time.Time) string {
	var b [12]byte
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (8 * (5 - i)))
	}
	_, _ = rand.Read(b[6:])
	return "tr_" + hex.EncodeToString(b[:])
}

// tracer times the steps of one message.
type tracer struct {
	t         *store.Trace
	now       func() time.Time
	snapshots bool
	redact    Redactor
}

func (tr *tracer) step(name string) func(s store.Step, err error) {
	start := tr.now()
	return func(s store.Step, err error) {
		s.Name = name
		s.Start = start
		s.LatencyMS = tr.now().Sub(start).Milliseconds()
		if err != nil {
			s.Error = err.Error()
		}
		tr.t.Steps = append(tr.t.Steps, s)
	}
}

// Triage takes one message through parse → thread → route → classify →
// decide, and records it as done (or needs_review). It never sends mail.
// The error is non-nil only when the outcome could not be recorded or ctx
// ended; model failures are recorded as needs_review, not returned.
func (p *Pipeline) Triage(ctx context.Context, in Input, redo bool) (*Outcome, error) {
	if !p.DryRun && !redo {
		if old, err := p.Store.GetMessage(in.Key); err == nil && old.State.Terminal() {
			return &Outcome{Record: old, Skipped: true}, nil
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("look up uid %d: %w", in.Key.UID, err)
		}
	}
	a, err := p.analyze(ctx, in)
	if err != nil {
		return nil, err
	}
	if a.rec.State != store.StateNeedsReview {
		a.rec.State = store.StateDone
		a.rec.TriageOnly = true
	}
	return a.out, p.finish(a)
}

// Process is watch's path: like Triage, then act on the decision (draft,
// queue, send). Each transition is journaled, and a message that was cut
// off by a crash resumes from its last recorded state: a decided message
// is not classified again, and acting is idempotent (queue and outbox ids
// derive from the message key).
func (p *Pipeline) Process(ctx context.Context, in Input) (*Outcome, error) {
	if p.Actor == nil {
		return nil, errors.New("pipeline has no actor")
	}
	old, err := p.Store.GetMessage(in.Key)
	switch {
	case err == nil && old.TriageOnly && old.State == store.StateDone:
		// Triage decided but did not act: act now, from its decision.
		old.TriageOnly = false
		old.State = store.StateDecided
	case err == nil && old.State.Terminal():
		return &Outcome{Record: old, Skipped: true}, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("look up uid %d: %w", in.Key.UID, err)
	}
	var a *analysis
	if err == nil && (old.State == store.StateDecided || old.State == store.StateActed) {
		a = p.resume(old)
		p.rereadOwnerForward(a, in) // owner_forward.go
	} else {
		if a, err = p.analyze(ctx, in); err != nil {
			return nil, err
		}
	}
	return p.complete(ctx, a)
}

// complete acts on a decided message and records the outcome.
func (p *Pipeline) complete(ctx context.Context, a *analysis) (*Outcome, error) {
	if a.rec.State == store.StateDecided {
		if err := p.act(ctx, a.rec, a.body, a.fwds, a.route, a.tr, a.out); err != nil {
			return nil, err
		}
		if a.rec.State != store.StateNeedsReview {
			a.rec.State = store.StateActed
			if err := p.save(a.rec); err != nil {
				return nil, err
			}
		}
	}
	if a.rec.State == store.StateActed {
		a.rec.State = store.StateDone
	}
	if err := p.finish(a); err != nil {
		return a.out, err
	}
	if p.Followups != nil && !p.DryRun {
		// Reply tracking is derived state: a failure is logged, and the
		// message is not handled again for it.
		if err := p.Followups.Incoming(ctx, a.rec); err != nil {
			p.logger().Warn("reply tracking", "message", a.rec.MessageID, "err", err)
		}
	}
	return a.out, nil
}

// Reprocess runs a message through Process again even though it reached a
// terminal state: it is how a needs_review message is retried. Attempts
// carries over.
func (p *Pipeline) Reprocess(ctx context.Context, in Input) (*Outcome, error) {
	old, err := p.Store.GetMessage(in.Key)
	if err != nil {
		return nil, fmt.Errorf("reprocess uid %d: %w", in.Key.UID, err)
	}
	if old.State != store.StateNeedsReview {
		return &Outcome{Record: old, Skipped: true}, nil
	}
	a, err := p.analyze(ctx, in)
	if err != nil {
		return nil, err
	}
	a.rec.Attempts += old.Attempts
	return p.complete(ctx, a)
}

// usageLedger is implemented by stores that keep a daily token count.
type usageLedger interface {
	AddUsage(day string, tokensIn, tokensOut int64) error
}

// analysis is one message on its way through the pipeline.
type analysis struct {
	rec   *store.MessageRecord
	route RouteInfo
	body  string         // clean text; empty when resumed from a record
	fwds  []mail.Forward // attached messages; none when resumed
	tr    *tracer
	out   *Outcome
}

func (p *Pipeline) resume(rec *store.MessageRecord) *analysis {
	acct := p.Accounts[rec.Account]
	route := RouteInfo{Route: rec.Route, Reason: rec.RouteReason}
	route.ClaimsOwner = rec.Route != RouteOwner && acct.Owner.IsOwner(rec.From.Email)
	tr := p.newTracer(&store.Trace{TraceID: rec.TraceID, Message: rec.MessageKey, MessageID: rec.MessageID, Started: p.now()})
	if old, err := p.traceOf(rec.TraceID); err == nil {
		tr.t = old
	}
	var snap *store.StepSnapshot
	if tr.on() {
		snap = tr.snap(p.resumeSnapshot(rec, tr.t.Steps))
	}
	tr.step("resume")(store.Step{Detail: "resumed at state " + string(rec.State), Snapshot: snap}, nil)
	return &analysis{rec: rec, route: route, tr: tr, out: &Outcome{Record: rec, Trace: tr.t}}
}

func (p *Pipeline) traceOf(id string) (*store.Trace, error) {
	g, ok := p.Store.(interface {
		GetTrace(id string) (*store.Trace, error)
	})
	if !ok {
		return nil, store.ErrNotFound
	}
	return g.GetTrace(id)
}

// finish records the outcome and the trace, in one transaction when the
// store can.
func (p *Pipeline) finish(a *analysis) error {
	a.tr.t.Decision, a.tr.t.Reasons, a.tr.t.Gates = a.rec.Decision, a.rec.Reasons, a.rec.Gates
	if !p.DryRun {
		u := a.out.Usage
		day := store.Day(p.now())
		a.rec.UpdatedAt = p.now()
		var err error
		if p.Actor == nil {
			err = p.storeOnce(a, day, u)
		} else if o, ok := p.Store.(outcomeStore); ok {
			if err = o.PutOutcome(a.rec, a.tr.t, day, int64(u.PromptTokens), int64(u.OutputTokens)); err != nil {
				err = fmt.Errorf("save uid %d: %w", a.rec.UID, err)
			}
		} else {
			err = p.saveEach(a, day, u)
		}
		if err != nil {
			return err
		}
	}
	if p.Actor != nil {
		kind := "message_done"
		if a.rec.State == store.StateNeedsReview {
			kind = "needs_review"
		}
		p.Actor.notify(Event{Kind: kind, ID: a.rec.TraceID, Account: a.rec.Account})
	}
	return nil
}

// storeOnce is triage's one write of a record. A merge of its thread since
// the thread step moved only the records stored or held then, so the
// record takes its thread's id at the moment it is stored, with no merge
// in between: inside a store.Batch's hold, else under the threader's
// LockMerges, which the thread step's merges take too.
func (p *Pipeline) storeOnce(a *analysis, day string, u llm.Usage) error {
	in := mail.ThreadInput{MessageID: a.rec.MessageID, Subject: a.rec.Subject, Date: a.rec.Date}
	if h, ok := p.Store.(outcomeHolder); ok {
		id, full, err := h.HoldOutcome(a.rec, a.tr.t, day, int64(u.PromptTokens), int64(u.OutputTokens),
			func() string { return p.Threader.ThreadOf(in) })
		if err == nil && full {
			err = h.Flush() // outside every lock: a commit takes milliseconds
		}
		if err != nil {
			return fmt.Errorf("save uid %d: %w", a.rec.UID, err)
		}
		a.rec.ThreadID = id
		return nil
	}
	defer p.Threader.LockMerges()()
	if id := p.Threader.ThreadOf(in); id != "" {
		a.rec.ThreadID = id
	}
	if o, ok := p.Store.(outcomeStore); ok {
		if err := o.PutOutcome(a.rec, a.tr.t, day, int64(u.PromptTokens), int64(u.OutputTokens)); err != nil {
			return fmt.Errorf("save uid %d: %w", a.rec.UID, err)
		}
		return nil
	}
	return p.saveEach(a, day, u)
}

// saveEach writes the record, the trace and the usage one after another,
// for a store that cannot write them in one commit.
func (p *Pipeline) saveEach(a *analysis, day string, u llm.Usage) error {
	if err := p.save(a.rec); err != nil {
		return err
	}
	if err := p.Store.PutTrace(a.tr.t); err != nil {
		return fmt.Errorf("save trace %s: %w", a.tr.t.TraceID, err)
	}
	if l, ok := p.Store.(usageLedger); ok && u.PromptTokens+u.OutputTokens > 0 {
		if err := l.AddUsage(day, int64(u.PromptTokens), int64(u.OutputTokens)); err != nil {
			p.logger().Warn("usage ledger", "err", err)
		}
	}
	return nil
}

// outcomeHolder holds outcomes for a later commit (store.Batch).
type outcomeHolder interface {
	HoldOutcome(rec *store.MessageRecord, t *store.Trace, day string, tokensIn, tokensOut int64, thread func() string) (threadID string, full bool, err error)
	Flush() error
}

// outcomeStore writes a record, its trace and the usage in one commit.
type outcomeStore interface {
	PutOutcome(rec *store.MessageRecord, t *store.Trace, day string, tokensIn, tokensOut int64) error
}

// analyze runs parse → thread → route → classify → decide, journaling each
// transition, and leaves the record decided or needs_review.
func (p *Pipeline) analyze(ctx context.Context, in Input) (*analysis, error) {
	acct, ok := p.Accounts[in.Key.Account]
	if !ok {
		return nil, fmt.Errorf("unknown account %q", in.Key.Account)
	}
	now := p.now()
	rec := &store.MessageRecord{MessageKey: in.Key, State: store.StateFetched, TraceID: newTraceID(), CreatedAt: now}
	tr := p.newTracer(&store.Trace{TraceID: rec.TraceID, Message: in.Key, Started: now})
	out := &Outcome{Record: rec, Trace: tr.t}

	// Parse: never fails; problems are recorded on the message.
	done := tr.step("parse")
	m := mail.Parse(in.Raw)
	if in.Truncated {
		m.Truncated = true
		m.Problems = append(m.Problems, "message larger than max_message_bytes: only the headers and first text part were fetched")
	}
	fillRecord(rec, m)
	tr.t.MessageID = rec.MessageID
	done(store.Step{Detail: fmt.Sprintf("%d bytes, %d problems", len(in.Raw), len(m.Problems)),
		Snapshot: tr.snap(rawHeaders(in.Raw), parseSummary(m))}, nil)
	rec.State = store.StateParsed

	done = tr.step("thread")
	tin := mail.InputOf(m)
	unlock := p.Threader.LockMerges() // see storeOnce
	threadID, merged := p.Threader.Add(tin)
	rec.ThreadID = threadID
	var relabelErr error
	if !p.DryRun {
		for _, old := range merged {
			if err := p.Store.RelabelThread(old, threadID); err != nil {
				relabelErr = errors.Join(relabelErr, err)
			}
		}
	}
	unlock()
	var threadSnap *store.StepSnapshot
	if tr.on() {
		threadSnap = tr.snap(threadSnapshot(tin, p.Threader, threadID, merged))
	}
	done(store.Step{Detail: threadID, Snapshot: threadSnap}, relabelErr)
	if relabelErr != nil {
		return nil, fmt.Errorf("relabel thread: %w", relabelErr)
	}

	done = tr.step("authenticate")
	auth := senderAuthOf(m, acct.Owner, in.FromSent)
	rec.SenderAuth = &auth
	verdict := "not authenticated"
	if auth.Authenticated {
		verdict = "authenticated " + auth.Address
	}
	done(store.Step{Detail: verdict + ": " + auth.Reason, Snapshot: tr.snap(authIn{
		From: m.From.Email, FromSentFolder: in.FromSent, AuthservID: acct.Owner.AuthservID,
		AuthenticationResults: m.Header["Authentication-Results"]}, auth)}, nil)
	p.invitations().Read(ctx, rec, m, in.Raw) // agent/invite
	p.applyInvitation(ctx, rec, tr)           // invite.go: a CANCEL or an update of one answered before

	done = tr.step("route")
	var sentByUs func(string) bool
	if p.SentByUs != nil {
		sentByUs = func(id string) bool { return p.SentByUs(in.Key.Account, id) }
	}
	route := Route(m, acct.Owner, in.FromSent, sentByUs)
	rec.Route, rec.RouteReason = route.Route, route.Reason
	done(store.Step{Detail: route.Route + ": " + route.Reason, Snapshot: tr.snap(routeInputs(m, in.FromSent), route)}, nil)
	if err := p.journal(rec); err != nil {
		return nil, err
	}
	if err := p.rethread(rec, m); err != nil {
		return nil, err
	}

	needsModel := route.Route == RouteExternal || (route.Route == RouteAutomated && p.ClassifyAutomated)
	if needsModel {
		if err := p.classify(ctx, rec, m, acct, tr, out); err != nil {
			return nil, err
		}
	}
	if rec.State != store.StateNeedsReview {
		p.decide(rec, route, acct, tr)
		invitationDecision(rec) // invite.go: never auto-sent, never archived
		if err := p.journal(rec); err != nil {
			return nil, err
		}
	}
	body := m.CleanText
	if route.Route == RouteOwner && m.Forwarded {
		body = m.Text // the owner's forward: the loop reads the forwarded block (owner.go)
	}
	return &analysis{rec: rec, route: route, body: body, fwds: m.Forwards, tr: tr, out: out}, nil
}

// rethread adds the message to the threader again once its first journal
// entry is stored. A watcher rebuilds its threader from the store
// (daemon.boundThreader); a rebuild that read the store between the
// thread step and that commit dropped the message, and a reply arriving
// later would start a thread of its own. Adding a message again is a
// no-op when it is still there, and Threader.Rebuild keeps every Add made
// while it loads, so after this call the message is held whichever way
// the two interleave. When the message had been dropped and its thread
// id comes out different, the stored records are relabelled as in the
// thread step.
func (p *Pipeline) rethread(rec *store.MessageRecord, m *mail.Message) error {
	if p.Actor == nil || p.DryRun {
		return nil // no journal and no watcher: nothing rebuilds meanwhile
	}
	defer p.Threader.LockMerges()()
	threadID, merged := p.Threader.Add(mail.InputOf(m))
	if threadID == rec.ThreadID && len(merged) == 0 {
		return nil
	}
	var err error
	for _, old := range append(merged, rec.ThreadID) {
		if old != threadID {
			err = errors.Join(err, p.Store.RelabelThread(old, threadID))
		}
	}
	if err != nil {
		return fmt.Errorf("relabel thread: %w", err)
	}
	rec.ThreadID = threadID
	return nil
}

// journal records an intermediate state. Only watch needs the journal (a
// crash resumes from it, and the checkpoint waits for it); triage writes
// each message once, when it is done, and is simply run again after a
// crash.
func (p *Pipeline) journal(rec *store.MessageRecord) error {
	if p.Actor == nil {
		return nil
	}
	return p.save(rec)
}

func (p *Pipeline) save(rec *store.MessageRecord) error {
	if p.DryRun {
		return nil
	}
	rec.UpdatedAt = p.now()
	if err := p.Store.PutMessage(rec); err != nil {
		return fmt.Errorf("save uid %d: %w", rec.UID, err)
	}
	return nil
}

func fillRecord(rec *store.MessageRecord, m *mail.Message) {
	rec.MessageID = m.MessageID
	rec.From = m.From
	rec.ReplyTo, rec.To, rec.Cc = m.ReplyTo, m.To, m.Cc
	rec.Subject = m.Subject
	rec.Date = m.Date
	rec.InReplyTo, rec.References = m.InReplyTo, m.References
	rec.Synthesized = m.Synthesized
	rec.Excerpt = prompts.TrimText(m.CleanText, excerptChars)
	rec.Problems = m.Problems
}

// classify calls the model and records the outcome on rec: classified, or
// needs_review with the reason. It returns an error only when ctx ended.
func (p *Pipeline) classify(ctx context.Context, rec *store.MessageRecord, m *mail.Message, acct Account, tr *tracer, out *Outcome) error {
	maxBody := p.maxBody()
	// Every field is capped, not only the body: a message to 300 people
	// or with 80 attachments must not blow up the prompt.
	req := ClassifyRequest{
		Owner:   prompts.Owner{Name: acct.Owner.Name, Email: first(acct.Owner.Addresses)},
		Thread:  p.threadContext(rec),
		From:    prompts.TrimText(formatAddress(m.From), maxHeaderChars),
		To:      prompts.TrimText(formatAddresses(firstN(m.To, maxListed)), maxHeaderChars),
		Subject: prompts.TrimText(m.Subject, maxHeaderChars),
		Body:    prompts.TrimText(m.CleanText, maxBody),
		Route:   rec.Route,
	}
	if n := len(m.To); n > maxListed {
		req.To += fmt.Sprintf(" and %d more", n-maxListed)
	}
	if !m.Date.IsZero() {
		req.Date = m.Date.Format(time.RFC1123Z)
	}
	for i, a := range m.Attachments {
		if i == maxListed {
			req.Attachments = append(req.Attachments, fmt.Sprintf("and %d more", len(m.Attachments)-maxListed))
			break
		}
		req.Attachments = append(req.Attachments, prompts.TrimText(fmt.Sprintf("%s (%s, %d bytes)", a.Filename, a.ContentType, a.Size), 120))
	}
	done := tr.step("classify")
	c, info, err := p.Classifier.Classify(ctx, req)
	out.Usage = out.Usage.Add(info.Usage)
	done(store.Step{TokensIn: info.Usage.PromptTokens, TokensOut: info.Usage.OutputTokens, Model: info.Model, Retries: info.Retries + max(info.Attempts-1, 0),
		Snapshot: tr.snap(req, modelAnswer(info.Raw, c, err))}, err)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rec.State = store.StateNeedsReview
		rec.Decision = DecisionNeedsReview
		rec.Error = err.Error()
		rec.Attempts++
		rec.Reasons = []string{"classification failed: " + err.Error()}
		p.logger().Warn("classification failed", "uid", rec.UID, "message_id", rec.MessageID, "err", err)
		return nil
	}
	rec.Classification = &c
	rec.State = store.StateClassified
	return nil
}

// threadScan bounds how many of a thread's newest messages are read to
// find the ones a prompt may show.
const threadScan = 50

// threadRecords returns the thread's other messages that a prompt about
// rec's sender may show, oldest first, at most limit (the newest): those
// store.MayResolve lets rec reach (the identity layer's one rule: the
// messages authenticated as that sender, and the owner's own mail
// addressed to them). Never another correspondent's mail: a subject or a
// References header can join any thread, and the sender chose both. An
// unauthenticated sender is nobody in particular, so it gets none.
func (p *Pipeline) threadRecords(rec *store.MessageRecord, limit int) []*store.MessageRecord {
	id := rec.SenderAuth.Identity()
	if rec.ThreadID == "" || id == "" {
		return nil
	}
	msgs, err := p.Store.ThreadMessages(rec.ThreadID, threadScan)
	if err != nil {
		p.logger().Warn("thread context unavailable", "thread", rec.ThreadID, "err", err)
		return nil
	}
	var out []*store.MessageRecord
	for _, r := range msgs {
		if r.MessageKey == rec.MessageKey || mail.IDKey(r.MessageID) == mail.IDKey(rec.MessageID) {
			continue
		}
		if r.Account != rec.Account {
			continue
		}
		if store.MayResolve(rec, r) {
			out = append(out, r)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// threadContext is the thread as the model sees it (see threadRecords).
func (p *Pipeline) threadContext(rec *store.MessageRecord) []prompts.ThreadMessage {
	var out []prompts.ThreadMessage
	for _, r := range p.threadRecords(rec, threadContext) {
		tm := prompts.ThreadMessage{From: prompts.TrimText(formatAddress(r.From), maxHeaderChars),
			Subject: prompts.TrimText(r.Subject, maxHeaderChars), Text: prompts.TrimText(r.Excerpt, threadExcerptChars)}
		if !r.Date.IsZero() {
			tm.Date = r.Date.Format(time.RFC1123Z)
		}
		out = append(out, tm)
	}
	return out
}

// contactFor returns the memory of rec's authenticated sender, or nil:
// unauthenticated mail reads no one's memory.
func (p *Pipeline) contactFor(rec *store.MessageRecord) *store.Contact {
	id := rec.SenderAuth.Identity()
	if id == "" {
		return nil
	}
	c, err := p.Store.GetContact(rec.Account, id)
	if err != nil {
		return nil
	}
	return c
}

// gateInput collects what the gates need, all of it computed by code:
// the authenticated sender, the reply's final recipients (who they are,
// whether the owner knows them, today's auto-sends to each) and the day's
// total. The output guard's fields are left for the caller.
func (p *Pipeline) gateInput(rec *store.MessageRecord, route RouteInfo, acct Account) GateInput {
	in := GateInput{Route: route, Classification: rec.Classification, AuthservID: acct.Owner.AuthservID}
	if rec.SenderAuth != nil {
		in.Sender = *rec.SenderAuth
	}
	for _, a := range rec.ReplyTo {
		in.ReplyTo = append(in.ReplyTo, a.Email)
	}
	day := store.Day(p.now())
	if _, g, err := p.Store.AutoSendCounts(rec.Account, "", day); err == nil {
		in.SentToday = g
	}
	to, cc, err := compose.Recipients(recordMessage(rec), acct.Owner.Addresses, p.Policy.ReplyAll)
	if err != nil {
		return in
	}
	for _, a := range append(to, cc...) {
		r := Recipient{Email: mail.AddrKey(a.Email)}
		if c, err := p.Store.GetContact(rec.Account, a.Email); err == nil {
			r.Known = c.Known
		}
		if pc, _, err := p.Store.AutoSendCounts(rec.Account, a.Email, day); err == nil {
			r.SentToday = pc
		}
		in.Recipients = append(in.Recipients, r)
	}
	return in
}

// decide turns the route and classification into a decision with reasons.
func (p *Pipeline) decide(rec *store.MessageRecord, route RouteInfo, acct Account, tr *tracer) {
	done := tr.step("decide")
	var gateIn any = decideIn{Route: route, Classification: rec.Classification}
	defer func() {
		done(store.Step{Detail: rec.Decision, Snapshot: tr.snap(gateIn, decisionSnapshot(rec))}, nil)
	}()
	rec.State = store.StateDecided
	c := rec.Classification
	switch route.Route {
	case RouteSelf:
		rec.Decision, rec.Reasons = DecisionIgnore, []string{"loop guard: " + route.Reason}
		return
	case RouteOwner:
		rec.Decision, rec.Reasons = DecisionIgnore, []string{"the owner's own mail: " + route.Reason}
		return
	case RouteAutomated:
		if c != nil && c.Action == "forward" {
			rec.Decision, rec.Reasons = DecisionNotify, []string{"automated mail is never answered (" + route.Reason + "); the model flagged it for the owner"}
			return
		}
		rec.Decision, rec.Reasons = DecisionArchive, []string{"automated mail is never answered: " + route.Reason}
		return
	}
	switch c.Action {
	case "ignore":
		rec.Decision, rec.Reasons = DecisionIgnore, []string{"classified as needing no action: " + c.Summary}
		return
	case "forward":
		rec.Decision, rec.Reasons = DecisionNotify, []string{"classified as something the owner should see: " + c.Summary}
		return
	}
	in := p.gateInput(rec, route, acct)
	gateIn = in
	rec.Gates = EvaluateGates(p.Policy, in)
	if g := p.noCalendarGate(rec); g != nil {
		rec.Gates = append(rec.Gates, *g)
	}
	failed := FailedReasons(rec.Gates)
	// With no draft yet the output guard is pending; the decision shown is
	// what would happen if the draft passes it.
	if len(failed) == 1 && rec.Gates[len(rec.Gates)-1].Gate == GateOutput && !rec.Gates[len(rec.Gates)-1].Pass {
		rec.Decision = DecisionAutoSend
		rec.Reasons = []string{"every gate passes; the reply is sent only if its draft passes the output guard"}
		return
	}
	rec.Decision = DecisionQueue
	rec.Reasons = failed
}

func firstN[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

func first(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}

func formatAddress(a mail.Address) string {
	if a.Name == "" {
		return a.Email
	}
	return a.Name + " <" + a.Email + ">"
}

func formatAddresses(as []mail.Address) string {
	s := ""
	for i, a := range as {
		if i > 0 {
			s += ", "
		}
		s += formatAddress(a)
	}
	return s
}

// Sender is the address (with the owner's name) account sends from (a
// zero Address for an unknown account).
func (as Accounts) Sender(account string) mail.Address { return as[account].From }
