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

		err := s.db.Update(func(tx *bolt.Tx) error {
			for _, w := range batch {
				if err := w.fn(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			for _, w := range batch {
				w.done <- nil
			}
			continue
		}
		// One write failed and the whole transaction rolled back: run each
		// alone so that only the failing one reports an error.
		for _, w := range batch {
			w.done <- s.db.Update(w.fn)
		}
	}
}
