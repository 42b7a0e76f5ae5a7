package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	bolt "go.etcd.io/bbolt"
)

// Batch is a Store whose PutOutcome and RelabelThread do not wait for a
// commit: outcomes and thread merges are held in memory, in order, and
// committed size at a time, in one transaction each, which is what makes
// a bulk import (mailagent triage) cheap: a bbolt commit rewrites the
// B+tree pages it touched, so hundreds of records per commit write far
// fewer pages than four, and a thread merge that waited for its own
// commit (and committed everything held before it) made a fresh triage
// of a mailing-list archive commit every 20 messages.
//
// Reads stay consistent with the writes made through the Batch: a
// GetMessage answers from memory for a held record, and with the held
// thread merges applied for a stored one; a read that could see a held
// record or merge otherwise (ThreadMessages of its thread, any scan)
// commits what is held first. Every other method is the Store's own.
//
// Held outcomes are lost if the process dies before Flush: use a Batch
// only where a run can simply be repeated (triage), never for watch.
// Flush must be called at the end (and on interrupt); an error from a
// commit is returned by that call and by every later write.
type Batch struct {
	*Store
	size int

	commitMu sync.Mutex // one commit at a time, in order

	mu       sync.Mutex
	pending  []heldOp
	byKey    map[MessageKey]heldRecord // held and committing records
	threads  map[string]int            // thread id → held and committing records and merges
	relabels int                       // held and committing thread merges
	commits  uint64                    // commits ended (GetMessage's check)
	err      error                     // the first failed commit
}

// heldOp is one held write: an outcome, or a thread merge (relabel set).
type heldOp struct {
	rec                 *MessageRecord
	trace               *Trace
	day                 string
	tokensIn, tokensOut int64
	relabel             *relabel
	thread              func() string // the record's thread id when held
}

type relabel struct{ from, to string }

// heldRecord is what reads see of a held outcome (rec: its record with
// the thread merges held after it applied) and the record that commits
// (origin: as put; the merges commit after it, in order).
type heldRecord struct {
	rec, origin *MessageRecord
}

// NewBatch wraps s; size (at least 1) is how many writes go in a commit.
func NewBatch(s *Store, size int) *Batch {
	return &Batch{Store: s, size: max(size, 1), byKey: map[MessageKey]heldRecord{}, threads: map[string]int{}}
}

// PutOutcome holds rec, t and the usage for the next commit, and commits
// when size writes are held. rec is copied: the caller may keep using it.
func (b *Batch) PutOutcome(rec *MessageRecord, t *Trace, day string, tokensIn, tokensOut int64) error {
	_, full, err := b.HoldOutcome(rec, t, day, tokensIn, tokensOut, nil)
	if err != nil || !full {
		return err
	}
	return b.Flush()
}

// HoldOutcome is PutOutcome for a record whose thread may merge while it
// is on its way: thread, called at the moment the record is held, gives
// its thread id then ("" keeps rec's), so that a merge held before it
// has already named the record's new thread and one held after it moves
// the record. It returns the thread id the record was held with, and
// whether size writes are now held: the caller is to call Flush then.
func (b *Batch) HoldOutcome(rec *MessageRecord, t *Trace, day string, tokensIn, tokensOut int64, thread func() string) (threadID string, full bool, err error) {
	if err := checkOutcome(rec, t, day, tokensIn+tokensOut > 0); err != nil {
		return "", false, err
	}
	cp := *rec
	cp.Problems = slices.Clone(rec.Problems) // putMessageTx may append
	tc := *t
	if err := presnap(&tc); err != nil {
		return "", false, err
	}
	full, err = b.hold(heldOp{rec: &cp, trace: &tc, day: day, tokensIn: tokensIn, tokensOut: tokensOut, thread: thread})
	return cp.ThreadID, full, err
}

// RelabelThread holds the merge of thread from into thread to for the
// next commit, where it runs after the writes held before it, as
// Store.RelabelThread would have run then. Held records of thread from
// are moved at once, for reads. A thread with queue items is merged at
// once instead, through the Store (triage writes no queue items, so a
// held merge never has to find one that was added after it).
func (b *Batch) RelabelThread(from, to string) error {
	if from == "" || to == "" {
		return errors.New("relabel thread: empty thread id")
	}
	if from == to {
		return nil
	}
	var queued []*QueueItem
	if err := b.view(func(tx *bolt.Tx) (err error) {
		queued, err = threadQueueTx(tx, from)
		return err
	}); err != nil {
		return fmt.Errorf("relabel thread %q as %q: %w", from, to, err)
	}
	if len(queued) > 0 {
		if err := b.Flush(); err != nil {
			return err
		}
		return b.Store.RelabelThread(from, to)
	}
	full, err := b.hold(heldOp{relabel: &relabel{from: from, to: to}})
	if err != nil || !full {
		return err
	}
	return b.Flush()
}

// hold adds op to what the next commit writes, and reports whether size
// writes are held.
func (b *Batch) hold(op heldOp) (full bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return false, b.err
	}
	if r := op.relabel; r != nil {
		for k, h := range b.byKey {
			if h.rec.ThreadID == r.from {
				moved := *h.rec
				moved.ThreadID = r.to
				b.byKey[k] = heldRecord{rec: &moved, origin: h.origin}
				b.unpin(r.from)
				b.threads[r.to]++
			}
		}
		// Until it commits, a read of either thread commits first.
		b.threads[r.from]++
		b.threads[r.to]++
		b.relabels++
	} else {
		if op.thread != nil {
			if id := op.thread(); id != "" {
				op.rec.ThreadID = id
			}
		}
		if prev, ok := b.byKey[op.rec.MessageKey]; ok {
			b.unpin(prev.rec.ThreadID) // replaced below
		}
		b.byKey[op.rec.MessageKey] = heldRecord{rec: op.rec, origin: op.rec}
		b.threads[op.rec.ThreadID]++
	}
	b.pending = append(b.pending, op)
	return len(b.pending) >= b.size, nil
}

// unpin drops one hold on thread. b.mu is held.
func (b *Batch) unpin(thread string) {
	if b.threads[thread]--; b.threads[thread] <= 0 {
		delete(b.threads, thread)
	}
}

// Flush commits every held write in one transaction, in order.
func (b *Batch) Flush() error {
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	b.mu.Lock()
	batch := b.pending
	b.pending = nil
	err := b.err
	b.mu.Unlock()
	if err != nil || len(batch) == 0 {
		return err
	}
	now := b.now().UTC()
	err = b.update(func(tx *bolt.Tx) error {
		for _, h := range batch {
			if r := h.relabel; r != nil {
				if err := relabelMessagesTx(tx, r.from, r.to, now); err != nil {
					return fmt.Errorf("relabel thread %q as %q: %w", r.from, r.to, err)
				}
				continue
			}
			rec := *h.rec // putMessageTx sets its times; readers copy h.rec meanwhile
			if err := putMessageTx(tx, &rec, now); err != nil {
				return fmt.Errorf("put outcome %s: %w", h.rec.MessageKey, err)
			}
			if err := putTraceTx(tx, h.trace); err != nil {
				return fmt.Errorf("put outcome %s: %w", h.rec.MessageKey, err)
			}
			if h.tokensIn+h.tokensOut > 0 {
				if err := addUsageTx(tx, h.day, h.tokensIn, h.tokensOut, h.trace); err != nil {
					return fmt.Errorf("put outcome %s: %w", h.rec.MessageKey, err)
				}
			}
		}
		return nil
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	b.commits++
	if err != nil {
		// Keep the records readable (GetMessage) and fail every later
		// write: what was held is not on disk.
		b.err = fmt.Errorf("commit %d writes: %w", len(batch), err)
		return b.err
	}
	for _, h := range batch {
		if r := h.relabel; r != nil {
			b.unpin(r.from)
			b.unpin(r.to)
			b.relabels--
			continue
		}
		if cur, ok := b.byKey[h.rec.MessageKey]; ok && cur.origin == h.rec {
			delete(b.byKey, h.rec.MessageKey)
			b.unpin(cur.rec.ThreadID)
		}
	}
	return nil
}

// held reports whether a record or a merge of thread is held (or being
// committed).
func (b *Batch) held(thread string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.threads[thread] > 0
}

// GetMessage returns a held record, else the stored one with the held
// thread merges applied.
//
// It reads without waiting for a commit in progress when it can tell
// that none ended meanwhile: then a record it finds neither held nor
// stored did not exist at the moment of the read, and one stored with no
// merge held is as stored. Otherwise (a merge held, or a commit ended
// during the read) it reads again with commits held off. Triage looks up
// every message before working on it, and waiting for each commit of 256
// outcomes held every worker up for its length.
func (b *Batch) GetMessage(k MessageKey) (*MessageRecord, error) {
	b.mu.Lock()
	h, ok := b.byKey[k]
	commits := b.commits
	b.mu.Unlock()
	if ok {
		cp := *h.rec
		return &cp, nil
	}
	r, err := b.Store.GetMessage(k)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	b.mu.Lock()
	h, ok = b.byKey[k] // put during the read: newer than what is stored
	settled := b.commits == commits && (err != nil || b.relabels == 0)
	b.mu.Unlock()
	switch {
	case ok:
		cp := *h.rec
		return &cp, nil
	case settled:
		return r, err
	}
	// No commit may land between reading the record and applying the
	// merges that are not in it yet.
	b.commitMu.Lock()
	defer b.commitMu.Unlock()
	b.mu.Lock()
	h, ok = b.byKey[k]
	var merges []relabel
	for _, op := range b.pending {
		if op.relabel != nil {
			merges = append(merges, *op.relabel)
		}
	}
	b.mu.Unlock()
	if ok {
		cp := *h.rec
		return &cp, nil
	}
	r, err = b.Store.GetMessage(k)
	if err != nil {
		return nil, err
	}
	for _, m := range merges {
		if r.ThreadID == m.from {
			r.ThreadID = m.to
		}
	}
	return r, nil
}

// ThreadMessages commits first when a record or a merge of the thread is
// held, or when a stored record of the thread has a held successor (which
// may have left the thread).
func (b *Batch) ThreadMessages(threadID string, limit int) ([]*MessageRecord, error) {
	if b.held(threadID) {
		if err := b.Flush(); err != nil {
			return nil, err
		}
	}
	msgs, err := b.Store.ThreadMessages(threadID, limit)
	if err != nil || !b.holdsAny(msgs) {
		return msgs, err
	}
	if err := b.Flush(); err != nil {
		return nil, err
	}
	return b.Store.ThreadMessages(threadID, limit)
}

// holdsAny reports whether a newer version of one of msgs is held.
func (b *Batch) holdsAny(msgs []*MessageRecord) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range msgs {
		if _, ok := b.byKey[m.MessageKey]; ok {
			return true
		}
	}
	return false
}

// PutMessage commits what is held first, so that writes stay in order.
func (b *Batch) PutMessage(rec *MessageRecord) error {
	if err := b.Flush(); err != nil {
		return err
	}
	return b.Store.PutMessage(rec)
}

// ListMessages commits what is held first.
func (b *Batch) ListMessages(f MessageFilter, fn func(*MessageRecord) error) error {
	if err := b.Flush(); err != nil {
		return err
	}
	return b.Store.ListMessages(f, fn)
}

// FindByMessageID commits what is held first.
func (b *Batch) FindByMessageID(account, messageID string) ([]*MessageRecord, error) {
	if err := b.Flush(); err != nil {
		return nil, err
	}
	return b.Store.FindByMessageID(account, messageID)
}

// GetTrace commits what is held first.
func (b *Batch) GetTrace(id string) (*Trace, error) {
	if err := b.Flush(); err != nil {
		return nil, err
	}
	return b.Store.GetTrace(id)
}

// ThreadInputs commits what is held first.
func (b *Batch) ThreadInputs(since time.Time, limit int, fn func(mail.ThreadInput) error) error {
	if err := b.Flush(); err != nil {
		return err
	}
	return b.Store.ThreadInputs(since, limit, fn)
}

// Close commits what is held, then closes the store; both errors count.
func (b *Batch) Close() error {
	return errors.Join(b.Flush(), b.Store.Close())
}

func checkOutcome(rec *MessageRecord, t *Trace, day string, withUsage bool) error {
	if rec == nil || t == nil {
		return errors.New("put outcome: nil record or trace")
	}
	if err := rec.check(); err != nil {
		return fmt.Errorf("put outcome: %w", err)
	}
	if err := checkName("trace id", t.TraceID); err != nil {
		return fmt.Errorf("put outcome: %w", err)
	}
	if withUsage {
		if err := checkDay(day); err != nil {
			return fmt.Errorf("put outcome: %w", err)
		}
	}
	return nil
}
