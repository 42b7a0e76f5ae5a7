package store

import (
	"sync"

	bolt "go.etcd.io/bbolt"
)

// groupCommit batches concurrent writes into shared transactions without a
// timer: the first writer commits at once; writers that arrive while a
// commit is running wait and go together in the next one. One pipeline
// worker is never delayed, and N workers share a commit (and its fsync).
//
// bbolt's DB.Batch does the same with a fixed wait (MaxBatchDelay) before
// each commit unless MaxBatchSize callers have joined, which throttles a
// few steady writers to one commit per delay; hence this small type.
type groupCommit struct {
	mu      sync.Mutex
	pending []groupWrite
	running bool
}

type groupWrite struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// update runs fn in a write transaction shared with other concurrent
// callers. fn may run more than once (alone, after a shared transaction
// failed), so it must only depend on the transaction it is given.
func (s *Store) update(fn func(*bolt.Tx) error) error {
	w := groupWrite{fn: fn, done: make(chan error, 1)}
	s.group.mu.Lock()
	s.group.pending = append(s.group.pending, w)
	if !s.group.running {
		s.group.running = true
		// The committer belongs to the store and ends as soon as nothing
		// is pending, so it never outlives the writes that started it.
		go s.commitPending()
	}
	s.group.mu.Unlock()
	return <-w.done
}

func (s *Store) commitPending() {
	for {
		s.group.mu.Lock()
		batch := s.group.pending
		s.group.pending = nil
		if len(batch) == 0 {
			s.group.running = false
			s.group.mu.Unlock()
			return
		}
		s.group.mu.Unlock()
		s.commitBatch(batch)
	}
}

// commitBatch commits the writes of batch in one transaction. A write that
// fails (or panics: the panic is recovered into an error for its caller
// alone, since it runs on the committer's goroutine) is answered with its
// error and left out, and the others run again together without it, as
// bbolt's DB.Batch does.
func (s *Store) commitBatch(batch []groupWrite) {
	for len(batch) > 0 {
		failed, ferr := -1, error(nil)
		err := guard(s.path, func() error {
			return s.db.Update(func(tx *bolt.Tx) error {
				for i, w := range batch {
					if err := guard(s.path, func() error { return w.fn(tx) }); err != nil {
						failed, ferr = i, err
						return err
					}
				}
				return nil
			})
		})
		switch {
		case err == nil:
			for _, w := range batch {
				w.done <- nil
			}
			return
		case failed >= 0:
			batch[failed].done <- ferr
			batch = append(batch[:failed:failed], batch[failed+1:]...)
		default:
			// The commit itself failed (a full disk, say): each write alone,
			// so that each caller gets its own answer.
			for _, w := range batch {
				w.done <- s.updateTx(w.fn)
			}
			return
		}
	}
}
