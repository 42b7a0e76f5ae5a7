package daemon

import (
	"context"
	"slices"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/prompts"
	"github.com/mailagent/mailagent/store"
)

// SentBodiesCheckpoint is the mailbox name under which the body pass over
// the Sent folder keeps how far it got (not a real mailbox name): every
// message up to its LastUID whose body was wanted has been read and
// learned from. SentCheckpoint says how far the headers were read; the
// body pass never goes beyond it. Without either (a lost database) both
// passes start over from the mailbox, the record.
const SentBodiesCheckpoint = "mailagent:sent-bodies"

// The body pass: after the header scan (scanSent) of an account's Sent
// folder, the bodies of the owner's own mail of the last
// agent.SentBodyWindow are read, for what needs the words: voice examples
// (agent.Pipeline.LearnOwnerReplies) and reply tracking
// (followup.AsksQuestion). It runs once the account's watcher has
// reached idle, never during the start, on the goroutine runSentBodies
// (owned by Run's errgroup, stopped with its context), woken by
// kickSentBodies: when the watcher goes idle (after each sync) and after
// each header scan of an account that is idle (the maintenance rescan).
// New Sent mail while running takes the same path a moment after its
// headers: one path, one checkpoint.

// kickSentBodies wakes the body pass if account's watcher has been idle
// once in this process (before that the start is not over). It never
// blocks.
func (d *Daemon) kickSentBodies(account string) {
	d.mu.Lock()
	idled, kick := d.sentIdle[account], d.sentKick
	d.mu.Unlock()
	if !idled || kick == nil {
		return
	}
	select {
	case kick <- struct{}{}:
	default: // a pass is asked for already
	}
}

// sentIdleReached records that account's watcher reached idle (or
// polling) and wakes the body pass.
func (d *Daemon) sentIdleReached(account string) {
	d.mu.Lock()
	if d.sentIdle == nil {
		d.sentIdle = map[string]bool{}
	}
	d.sentIdle[account] = true
	d.mu.Unlock()
	d.kickSentBodies(account)
}

// runSentBodies runs the body pass of every idle account each time it is
// woken, until ctx ends. A pass that fails is tried again at the next
// wake (the next idle, or the maintenance rescan).
func (d *Daemon) runSentBodies(ctx context.Context, kick <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		}
		for _, a := range d.Accounts {
			d.mu.Lock()
			idled := d.sentIdle[a.Name]
			d.mu.Unlock()
			if !idled || ctx.Err() != nil {
				continue
			}
			if err := d.readSentBodies(ctx, a.Name); err != nil && ctx.Err() == nil {
				d.log().Warn("read the owner's Sent mail", "account", a.Name, "err", err)
			}
		}
	}
}

// readSentBodies is the body pass of one account: the owner's Sent mail
// above SentBodiesCheckpoint, up to SentCheckpoint, dated within
// agent.SentBodyWindow, is read whole (From the owner by its header, then
// by the parsed message), in batches of sentBodyBatch (learnSent); the
// checkpoint moves after each batch to below the first message not yet
// learned from, so a stop neither repeats a finished batch nor skips an
// unfinished one (a batch cut off between its writes and its checkpoint
// is learned again: examples and reply tracking are idempotent by
// Message-ID).
func (d *Daemon) readSentBodies(ctx context.Context, account string) error {
	hcp, ok, err := d.Store.Checkpoint(account, SentCheckpoint)
	if err != nil || !ok || hcp.LastUID == 0 {
		return err // no headers read yet: nothing to read the bodies of
	}
	bcp, bok, err := d.Store.Checkpoint(account, SentBodiesCheckpoint)
	if err != nil {
		return err
	}
	bodyFrom := d.now().Add(-orDefault(d.sentBodyWindow, agent.SentBodyWindow))
	var after uint32
	since := bodyFrom.Add(-24 * time.Hour) // IMAP SINCE is a date; Date decides below
	if bok && bcp.UIDValidity == hcp.UIDValidity {
		if bcp.LastUID >= hcp.LastUID {
			return nil // done
		}
		after, since = bcp.LastUID, time.Time{}
	}
	upTo := hcp.LastUID
	acct := d.Pipeline.Accounts[account]
	batch := d.sentBodyBatch
	if batch <= 0 {
		batch = sentHandleBatch
	}
	var (
		picked  []uint32 // in UID order
		done    = map[uint32]bool{}
		next    int             // picked[:next] are learned from
		inBatch []uint32        // read since the last flush
		mine    []*mail.Message // the owner's, of inBatch
		asks    = map[*mail.Message]bool{}
		changed bool // the folder is not the one the headers were read from
	)
	mark := func(uv uint32) error {
		y := upTo
		if next < len(picked) {
			y = picked[next] - 1
		}
		if y <= after {
			return nil
		}
		return d.Store.SetCheckpoint(account, SentBodiesCheckpoint, store.Checkpoint{UIDValidity: uv, LastUID: y})
	}
	uv := hcp.UIDValidity
	start, read := time.Now(), 0
	flush := func() error {
		if len(inBatch) == 0 {
			return nil
		}
		if err := d.learnSent(ctx, account, acct.Owner, mine, asks); err != nil {
			return err
		}
		if err := d.reshowAnswers(ctx, account, mine, asks); err != nil {
			return err
		}
		for _, uid := range inBatch {
			done[uid] = true
		}
		for next < len(picked) && done[picked[next]] {
			next++
		}
		inBatch, mine, asks = nil, nil, map[*mail.Message]bool{}
		return mark(uv)
	}
	pick := func(v, uid uint32, header []byte) bool {
		uv = v
		if v != hcp.UIDValidity {
			changed = true // the header scan starts over first
			return false
		}
		if uid > upTo {
			return false // its headers are not handled yet
		}
		h := mail.Parse(header)
		if !acct.Owner.IsOwner(h.From.Email) || (!h.Date.IsZero() && h.Date.Before(bodyFrom)) {
			return false
		}
		picked = append(picked, uid)
		return true
	}
	got, err := d.Mailer.FetchSentPicked(ctx, account, after, since, agent.SentFetchBytes, pick, func(r imapsync.RawMessage) error {
		if err := ctx.Err(); err != nil {
			return err // stopping: the checkpoint holds what was learned
		}
		inBatch = append(inBatch, r.UID)
		read++
		m := mail.Parse(r.Raw)
		if acct.Owner.IsOwner(m.From.Email) {
			// Keep what is needed, not the bodies: the owner's own words,
			// trimmed (drafts to the same recipient learn their voice
			// from them: agent.LearnOwnerReplies).
			kept := sentKept(m, prompts.TrimText(m.CleanText, store.MaxExampleText))
			mine = append(mine, kept)
			asks[kept] = followup.AsksQuestion(m)
		}
		if len(inBatch) >= batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil || changed || got != hcp.UIDValidity {
		return err // a changed folder: its header scan starts over first
	}
	next = len(picked) // every picked message was read or is gone
	if err := mark(uv); err != nil {
		return err
	}
	if read > 0 {
		d.log().Info("owner's Sent mail read", "account", account, "messages", read,
			"took", time.Since(start).Round(time.Millisecond).String())
	}
	return nil
}

// learnSent learns from the owner's Sent mail read whole (msgs, with
// their text; asks says which ask something): the mail the owner wrote
// (agent.OwnerWrote: not automatic, not mailagent's) teaches drafts the
// owner's voice, and reply tracking sees all of it but automatic mail
// (trackSent).
func (d *Daemon) learnSent(ctx context.Context, account string, owner agent.Owner, msgs []*mail.Message, asks map[*mail.Message]bool) error {
	if len(msgs) == 0 {
		return nil
	}
	autoByUs, err := d.autoSentIn(account, msgs)
	if err != nil {
		return err
	}
	var byOwner []*mail.Message
	for _, m := range msgs {
		if agent.OwnerWrote(m, owner, autoByUs) {
			byOwner = append(byOwner, m)
		}
	}
	d.Pipeline.LearnOwnerReplies(account, byOwner)
	return d.trackSent(ctx, account, msgs, asks)
}

// reshowAnswers shows reply tracking again the mail already decided since
// the oldest of msgs that asks something. The body pass tracks the
// owner's questions after the start, so an answer decided during the
// start (INBOX's first window) came before the question it answers was
// tracked; shown again (followup.Tracker.Incoming, idempotent: a closed
// followup stays closed, an older message changes nothing), it closes it
// as when the Sent scan ran before the first decisions.
func (d *Daemon) reshowAnswers(ctx context.Context, account string, msgs []*mail.Message, asks map[*mail.Message]bool) error {
	f := d.Pipeline.Followups
	if f == nil {
		return nil
	}
	var since time.Time
	for _, m := range msgs {
		if asks[m] && !m.Date.IsZero() && (since.IsZero() || m.Date.Before(since)) {
			since = m.Date
		}
	}
	if since.IsZero() {
		return nil
	}
	var recs []*store.MessageRecord
	err := d.Store.ListMessages(store.MessageFilter{Account: account, State: store.StateDone, Since: since}, func(r *store.MessageRecord) error {
		if r.External() {
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(recs, func(a, b *store.MessageRecord) int { return a.Date.Compare(b.Date) })
	for _, r := range recs {
		if err := f.Incoming(ctx, r); err != nil {
			return err
		}
	}
	return nil
}
