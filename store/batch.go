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

// Batch is a Store whose PutOutcome does not wait for a commit: outcomes
// are held in memory and committed size at a time, in one transaction
// each, which is what makes a bulk import (mailagent triage) cheap: a
// bbolt commit rewrites the B+tree pages it touched, so hundreds of
// records per commit write far fewer pages than four.
//
// Reads stay consistent with the writes made through the Batch: a
// GetMessage of a held record answers from memory, and a read that could
// see a held record otherwise (ThreadMessages or RelabelThread of its
// thread, any scan) commits what is held first. Every other method is the
// Store's own.
//
// Held outcomes are lost if the process dies before Flush: use a Batch
// only where a run can simply be repeated (triage), never for watch.
// Flush must be called at the end (and on interrupt); an error from a
// commit is returned by that call and by every later write.
type Batch struct {
	*Store
	size int

	commitMu sync.Mutex // one commit at a time, in order

	mu      sync.Mutex
	pending []heldOutcome
	byKey   map[MessageKey]*MessageRecord // held and committing records
	threads map[string]int                // thread id → held and committing records
	err     error                         // the first failed commit
}

type heldOutcome struct {
	rec                 *MessageRecord
	trace               *Trace
	day                 string
	tokensIn, tokensOut int64
}

// NewBatch wraps s; size (at least 1) is how many outcomes go in a commit.
func NewBatch(s *Store, size int) *Batch {
	return &Batch{Store: s, size: max(size, 1), byKey: map[MessageKey]*MessageRecord{}, threads: map[string]int{}}
}

// PutOutcome holds rec, t and the usage for the next commit, and commits
// when size outcomes are held. rec is copied: the caller may keep using it.
func (b *Batch) PutOutcome(rec *MessageRecord, t *Trace, day string, tokensIn, tokensOut int64) error {
	if err := checkOutcome(rec, t, day, tokensIn+tokensOut > 0); err != nil {
		return err
	}
	cp := *rec
	cp.Problems = slices.Clone(rec.Problems) // putMessageTx may append
	tc := *t
	if err := presnap(&tc); err != nil {
		return err
	}
	b.mu.Lock()
	if b.err != nil {
		err := b.err
		b.mu.Unlock()
		return err
	}
	if prev, ok := b.byKey[cp.MessageKey]; ok {
		b.threads[prev.ThreadID]-- // replaced below
	}
	b.pending = append(b.pending, heldOutcome{rec: &cp, trace: &tc, day: day, tokensIn: tokensIn, tokensOut: tokensOut})
	b.byKey[cp.MessageKey] = &cp
	b.threads[cp.ThreadID]++
	full := len(b.pending) >= b.size
	b.mu.Unlock()
	if full {
		return b.Flush()
	}
	return nil
}

// Flush commits every held outcome in one transaction.
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
			if err := putMessageTx(tx, h.rec, now); err != nil {
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
	if err != nil {
		// Keep the records readable (GetMessage) and fail every later
		// write: what was held is not on disk.
		b.err = fmt.Errorf("commit %d outcomes: %w", len(batch), err)
		return b.err
	}
	for _, h := range batch {
		if b.byKey[h.rec.MessageKey] == h.rec {
			delete(b.byKey, h.rec.MessageKey)
		}
		if b.threads[h.rec.ThreadID]--; b.threads[h.rec.ThreadID] <= 0 {
			delete(b.threads, h.rec.ThreadID)
		}
	}
	return nil
}

// held reports whether a record of thread is held (or being committed).
func (b *Batch) held(thread string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.threads[thread] > 0
}

// GetMessage returns a held record, else the stored one.
func (b *Batch) GetMessage(k MessageKey) (*MessageRecord, error) {
	b.mu.Lock()
	r, ok := b.byKey[k]
	b.mu.Unlock()
	if ok {
		cp := *r
		return &cp, nil
	}
	return b.Store.GetMessage(k)
}

// ThreadMessages commits first when a record of the thread is held.
func (b *Batch) ThreadMessages(threadID string, limit int) ([]*MessageRecord, error) {
	if b.held(threadID) {
		if err := b.Flush(); err != nil {
			return nil, err
		}
	}
	return b.Store.ThreadMessages(threadID, limit)
}

// RelabelThread commits first when a record of thread from is held.
func (b *Batch) RelabelThread(from, to string) error {
	if b.held(from) {
		if err := b.Flush(); err != nil {
			return err
		}
	}
	return b.Store.RelabelThread(from, to)
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
