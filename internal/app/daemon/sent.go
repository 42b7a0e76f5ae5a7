package daemon

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/retry"
	"github.com/mailagent/mailagent/store"
)

// SentCheckpoint is the mailbox name under which the Sent folder's scan
// position is kept in the store (not a real mailbox name).
const SentCheckpoint = "mailagent:sent-folder"

// minSentScanInterval keeps a busy INBOX from rescanning Sent on every
// new message.
const minSentScanInterval = 30 * time.Second

// sentHandleBatch is how many of the owner's Sent messages the scan holds
// before handling them (known contacts, owner-answered items; voice
// examples and reply tracking in the body pass: one commit each per
// batch).
const sentHandleBatch = 500

// scanSent reads new messages in the Sent folder by their headers: the
// recipients of mail the owner wrote or approved become known contacts
// (the known-contact gate; automatic replies never count), and a reply
// the owner sent from their own client resolves the queue item it answers
// (see agent.Pipeline.OwnerReplied). No body is read here: the owner's
// recent words (voice examples, reply tracking) are read by the body pass
// (readSentBodies), which runs once the account's watcher is idle, from
// its own checkpoint (SentBodiesCheckpoint).
func (d *Daemon) scanSent(ctx context.Context, account string, force bool) {
	d.mu.Lock()
	if d.sentScan == nil {
		d.sentScan = map[string]time.Time{}
	}
	if !force && d.now().Sub(d.sentScan[account]) < minSentScanInterval {
		d.mu.Unlock()
		return
	}
	d.sentScan[account] = d.now()
	d.mu.Unlock()

	cp, ok, err := d.Store.Checkpoint(account, SentCheckpoint)
	if err != nil {
		d.log().Warn("sent checkpoint", "account", account, "err", err)
		return
	}
	var since time.Time
	if !ok {
		since = d.now().Add(-orDefault(d.SentLookback, agent.SentLookback))
	}
	acct := d.Pipeline.Accounts[account]
	last := cp.LastUID
	// The owner's messages are handled in batches of sentHandleBatch as
	// their headers arrive (a first start reads a year of Sent: 6,315
	// messages in issue 28's million-message mailbox). The scan runs on a
	// connection of its own, so the handling may use the account's action
	// connection (to drop drafts) meanwhile. A batch handled before a
	// later one fails is handled again by the next scan (the checkpoint
	// moves only at the end).
	var mine []*mail.Message
	var headerErr error // a failed batch: the scan stops
	pick := func(uv, uid uint32, header []byte) bool {
		if ok && uv != cp.UIDValidity {
			return false // handled below: rescan from scratch
		}
		if uid > last {
			last = uid
		}
		h := mail.Parse(header)
		if headerErr != nil || !acct.Owner.IsOwner(h.From.Email) {
			return false
		}
		mine = append(mine, sentKept(h, ""))
		if len(mine) >= sentHandleBatch {
			headerErr = d.handleSent(ctx, account, acct.Owner, mine)
			mine = nil
		}
		return false // headers only
	}
	uv, err := d.Mailer.FetchSentPicked(ctx, account, cp.LastUID, since, agent.SentFetchBytes, pick, func(imapsync.RawMessage) error { return nil })
	if err == nil {
		err = headerErr
	}
	if err == nil && len(mine) > 0 {
		err = d.handleSent(ctx, account, acct.Owner, mine)
	}
	if err != nil {
		if ctx.Err() == nil {
			d.log().Warn("scan Sent", "account", account, "err", err)
		}
		return
	}
	if ok && uv != cp.UIDValidity {
		last = 0 // the folder was recreated: next scan starts over
	}
	if err := d.Store.SetCheckpoint(account, SentCheckpoint, store.Checkpoint{UIDValidity: uv, LastUID: last}); err != nil {
		d.log().Warn("sent checkpoint", "account", account, "err", err)
		return
	}
	d.kickSentBodies(account)
}

// sentKept is what the Sent scan keeps of one of the owner's messages: its
// headers' fields and text (the owner's words, trimmed; "" for mail read
// by its headers alone).
func sentKept(m *mail.Message, text string) *mail.Message {
	return &mail.Message{MessageID: m.MessageID, Synthesized: m.Synthesized, From: m.From, To: m.To, Cc: m.Cc,
		Subject: m.Subject, Date: m.Date, CleanText: text,
		InReplyTo: m.InReplyTo, References: m.References, Header: m.Header}
}

// autoSentIn looks up mailagent's outbox records of msgs (Sent mail) and
// reports, through autoSentBy, whether a Message-ID is one of its
// automatic sends.
func (d *Daemon) autoSentIn(account string, msgs []*mail.Message) (func(messageID string) bool, error) {
	ids := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if !m.Synthesized {
			ids = append(ids, m.MessageID)
		}
	}
	ours, err := d.Store.OutboxByMessageID(account, ids)
	if err != nil {
		return nil, err
	}
	return autoSentBy(ours), nil
}

// autoSentBy reports, from mailagent's outbox records of some Sent
// messages, whether a Message-ID is one of its automatic sends.
func autoSentBy(ours map[string]store.OutboxRef) func(messageID string) bool {
	return func(id string) bool { ob, ok := ours[mail.IDKey(id)]; return ok && ob.Auto }
}

// handleSent learns known contacts from the mail the owner wrote
// (agent.KnownFromSent: never from automatic replies, and a reply the owner
// approved was counted when it was sent), and resolves the queue items the
// owner answered in their own client. It reads headers only (msgs have no
// text): the body pass (learnSent) teaches the voice and tracks replies.
func (d *Daemon) handleSent(ctx context.Context, account string, owner agent.Owner, msgs []*mail.Message) error {
	autoByUs, err := d.autoSentIn(account, msgs)
	if err != nil {
		return err
	}
	var byOwner []*mail.Message
	// Every recipient the batch makes known, with how many of the owner's
	// messages went to it, written in one transaction (one commit per
	// scan, not two per recipient per message: a first start reads a
	// year of Sent). An error stops the scan before its checkpoint moves,
	// and nothing of this batch was counted.
	replies := map[string]int{}
	var rcpts []string
	for _, m := range msgs {
		if !agent.OwnerWrote(m, owner, autoByUs) {
			continue // automatic, or mailagent's: makes no one known
		}
		byOwner = append(byOwner, m)
		for _, rc := range agent.KnownFromSent(m, owner, autoByUs) {
			if replies[rc] == 0 {
				rcpts = append(rcpts, rc)
			}
			replies[rc]++
		}
	}
	if len(rcpts) > 0 {
		if err := d.Store.UpdateContacts(account, rcpts, func(rc string, c *store.Contact) error {
			c.OwnerReplies += replies[rc]
			c.Known = true
			return nil
		}); err != nil {
			return err
		}
	}
	return d.Pipeline.OwnerReplied(ctx, account, byOwner...)
}

// retryNeedsReview refetches the messages that need review and runs them
// through the pipeline again. Messages are never dropped: one that fails
// again stays needs_review with the new reason. A message that keeps
// failing waits longer each time (RetryInterval doubled per attempt, at
// most a day), so a message the model cannot handle does not cost a call
// every few minutes forever; a retry asked for from the queue is always
// immediate.
// At start (all) every one is due. A pass takes at most RetryBatch
// messages, the longest-waiting first, RetryConcurrency at a time.
func (d *Daemon) retryNeedsReview(ctx context.Context, all bool) {
	type due struct {
		key     store.MessageKey
		updated time.Time
	}
	var keys []due
	now := d.now()
	err := d.Store.ListMessages(store.MessageFilter{State: store.StateNeedsReview}, func(r *store.MessageRecord) error {
		if all || now.Sub(r.UpdatedAt) >= retry.After(orDefault(d.RetryInterval, config.DefaultRetryInterval), 24*time.Hour, r.Attempts) {
			keys = append(keys, due{r.MessageKey, r.UpdatedAt})
		}
		return nil
	})
	if err != nil {
		d.log().Error("list messages to retry", "err", err)
		return
	}
	slices.SortStableFunc(keys, func(a, b due) int { return a.updated.Compare(b.updated) })
	batch := d.RetryBatch
	if batch <= 0 {
		batch = defaultRetryBatch
	}
	if len(keys) > batch {
		d.log().Info("retry pass", "due", len(keys), "now", batch)
		keys = keys[:batch]
	}
	sem := make(chan struct{}, max(d.RetryConcurrency, 1))
	if d.RetryConcurrency <= 0 {
		sem = make(chan struct{}, defaultRetryConcurrency)
	}
	var wg sync.WaitGroup
	for _, k := range keys {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := d.Retry(ctx, k.key); err != nil && ctx.Err() == nil {
				d.log().Warn("retry", "account", k.key.Account, "uid", k.key.UID, "err", err)
			}
		}()
	}
	wg.Wait()
}

// Defaults of RetryBatch and RetryConcurrency.
const (
	defaultRetryBatch       = 50
	defaultRetryConcurrency = 2
)

// resumeStranded finishes messages left in a non-terminal state below the
// checkpoint: a retry (or a triage-then-watch hand-over) cut off by a stop
// or a crash. Messages above the checkpoint are resumed by the first sync.
func (d *Daemon) resumeStranded(ctx context.Context) {
	var keys []store.MessageKey
	for _, st := range []store.State{store.StateFetched, store.StateParsed, store.StateClassified, store.StateDecided, store.StateActed} {
		err := d.Store.ListMessages(store.MessageFilter{State: st}, func(r *store.MessageRecord) error {
			cp, ok, err := d.Store.Checkpoint(r.Account, r.Mailbox)
			if err != nil {
				return err
			}
			if ok && cp.UIDValidity == r.UIDValidity && r.UID <= cp.LastUID {
				keys = append(keys, r.MessageKey)
			}
			return nil
		})
		if err != nil {
			d.log().Error("list stranded messages", "state", st, "err", err)
		}
	}
	for _, k := range keys {
		if ctx.Err() != nil {
			return
		}
		raw, err := d.Mailer.FetchUID(ctx, k.Account, k.Mailbox, k.UIDValidity, k.UID, d.MaxMessageBytes)
		if errors.Is(err, ErrGone) {
			// Nothing left to act on: record why, so the message ends in a
			// state the owner can see.
			rec, gerr := d.Store.GetMessage(k)
			if gerr == nil {
				rec.State, rec.Decision, rec.Error = store.StateNeedsReview, agent.DecisionNeedsReview, err.Error()
				rec.Reasons = []string{"interrupted, and " + err.Error()}
				gerr = d.Store.PutMessage(rec)
			}
			if gerr != nil {
				d.log().Error("record a stranded message as gone", "account", k.Account, "uid", k.UID, "err", gerr)
			}
			continue
		}
		if err != nil {
			d.log().Warn("resume message", "account", k.Account, "uid", k.UID, "err", err)
			continue
		}
		if _, err := d.Pipeline.Process(ctx, agent.Input{Key: k, Raw: raw.Raw, Truncated: raw.Truncated}); err != nil {
			d.log().Warn("resume message", "account", k.Account, "uid", k.UID, "err", err)
		}
	}
}

// Retry refetches one message and processes it again.
func (d *Daemon) Retry(ctx context.Context, k store.MessageKey) error {
	raw, err := d.Mailer.FetchUID(ctx, k.Account, k.Mailbox, k.UIDValidity, k.UID, d.MaxMessageBytes)
	if err != nil {
		return err
	}
	_, err = d.Pipeline.Reprocess(ctx, agent.Input{Key: k, Raw: raw.Raw, Truncated: raw.Truncated})
	return err
}
