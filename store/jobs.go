package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The durable scheduler's jobs live in two buckets:
//
//	jobs     id → Job (JSON)
//	idx_job  be64(due) \0 id → id   due: Due when pending, LeaseUntil when
//	                                 running; done and failed jobs are not
//	                                 indexed
//
// so that an idle watcher reads one key (NextJobDue) to know how long it
// may sleep, and a claim reads only what is due. Every write of a job goes
// through putJobTx, which keeps the index in the same transaction.
//
// Firing is exactly-once in effect, at-least-once in invocation: ClaimJobs
// moves a due job to running under a lease in one transaction, and only
// JobDone with the claim's number finishes it. A process killed between
// the claim and JobDone leaves the job running; RecoverJobs (at start-up,
// under the store's exclusive lock, so no other process can hold a claim)
// or the lease's expiry makes it due again, and its handler runs again.
// Handlers must therefore be idempotent by the job's ID.

var (
	bJobs   = []byte("jobs")
	bIdxJob = []byte("idx_job")
)

// JobState is where a job is in its life.
type JobState string

// The states of a job.
const (
	JobPending JobState = "pending" // waits for Due
	JobRunning JobState = "running" // claimed; LeaseUntil bounds the claim
	JobDone    JobState = "done"    // ran, and has no next time
	JobFailed  JobState = "failed"  // gave up after MaxAttempts
)

// DefaultJobAttempts is how many failures in a row a job without
// MaxAttempts is allowed before it is recorded as failed.
const DefaultJobAttempts = 8

// ErrJobRunning is returned by PutJob for a job that is claimed now: its
// definition cannot change under the handler running it.
var ErrJobRunning = errors.New("the job is running")

// ErrJobLost is returned by JobDone and JobFailed when the job is no longer
// held by that claim (its lease expired and it was claimed again, or it
// was replaced).
var ErrJobLost = errors.New("the job's claim was lost")

// Job is one unit of timed work. ID is the idempotency key ("followup:…",
// "digest", "send:ob_…"): a job with the same ID replaces the old one.
type Job struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Due is when the job runs next (pending), or ran last (done).
	Due time.Time `json:"due"`
	// Cron, when set, is a cron spec (five fields or a descriptor such as
	// "@every 15m", as robfig/cron/v3's standard parser reads it): after
	// each run the job is due again at the spec's next time.
	Cron string `json:"cron,omitempty"`
	// Reason says why the job exists, for `schedule list`.
	Reason string   `json:"reason,omitempty"`
	State  JobState `json:"state"`
	// Attempts counts the failures since the last success; LastError is
	// the last failure's text.
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"max_attempts,omitempty"`
	LastError   string `json:"last_error,omitempty"`
	// Claim numbers the claims of the job; a running job's claim is the
	// number JobDone and JobFailed must present.
	Claim      int       `json:"claim"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Runs counts successful runs; LastRun is the last one's end.
	Runs      int       `json:"runs"`
	LastRun   time.Time `json:"last_run,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// jobDue is the time the index holds for j; ok is false when j is not
// indexed.
func jobDue(j *Job) (time.Time, bool) {
	switch j.State {
	case JobPending:
		return j.Due, true
	case JobRunning:
		return j.LeaseUntil, true
	}
	return time.Time{}, false
}

func jobIdxKey(due time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(nil, timeKey(due))
	k = append(k, 0)
	return append(k, id...)
}

func jobBuckets(tx *bolt.Tx) (b, idx *bolt.Bucket, err error) {
	if tx.Writable() {
		if b, err = tx.CreateBucketIfNotExists(bJobs); err != nil {
			return nil, nil, err
		}
		if idx, err = tx.CreateBucketIfNotExists(bIdxJob); err != nil {
			return nil, nil, err
		}
		return b, idx, nil
	}
	return tx.Bucket(bJobs), tx.Bucket(bIdxJob), nil
}

func getJobTx(tx *bolt.Tx, id string) (*Job, error) {
	var j Job
	if err := getJSON(tx.Bucket(bJobs), []byte(id), &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// putJobTx writes j and moves its index entry from old's.
func putJobTx(tx *bolt.Tx, j, old *Job) error {
	b, idx, err := jobBuckets(tx)
	if err != nil {
		return err
	}
	if old != nil {
		if due, ok := jobDue(old); ok {
			if err := idx.Delete(jobIdxKey(due, old.ID)); err != nil {
				return err
			}
		}
	}
	if due, ok := jobDue(j); ok {
		if err := idx.Put(jobIdxKey(due, j.ID), []byte(j.ID)); err != nil {
			return err
		}
	}
	return putJSON(b, []byte(j.ID), j)
}

// PutJob schedules j: a new job, or a new definition for the job of that
// ID (its history, Runs and CreatedAt, is kept). j is pending unless its
// State says otherwise. A job that is running now is left alone and
// ErrJobRunning returned.
func (s *Store) PutJob(j *Job) error {
	if j.ID == "" || j.Kind == "" {
		return fmt.Errorf("put job: a job needs an id and a kind")
	}
	now := s.now().UTC()
	err := s.update(func(tx *bolt.Tx) error { return scheduleJobTx(tx, j, now) })
	if err != nil {
		return fmt.Errorf("put job %s: %w", j.ID, err)
	}
	return nil
}

// scheduleJobTx is PutJob's write, in the caller's transaction.
func scheduleJobTx(tx *bolt.Tx, j *Job, now time.Time) error {
	old, err := getJobTx(tx, j.ID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	n := *j
	if n.State == "" {
		n.State = JobPending
	}
	n.UpdatedAt = now
	if n.CreatedAt.IsZero() {
		n.CreatedAt = now
	}
	if old != nil {
		if old.State == JobRunning {
			return ErrJobRunning
		}
		n.CreatedAt, n.Runs, n.LastRun, n.Claim = old.CreatedAt, old.Runs, old.LastRun, old.Claim
	}
	return putJobTx(tx, &n, old)
}

// GetJob reads one job.
func (s *Store) GetJob(id string) (*Job, error) {
	var j *Job
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		j, err = getJobTx(tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return j, nil
}

// DeleteJob removes a job that is not running; a missing job is no error.
func (s *Store) DeleteJob(id string) error {
	err := s.update(func(tx *bolt.Tx) error {
		old, err := getJobTx(tx, id)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if old.State == JobRunning {
			return ErrJobRunning
		}
		_, idx, err := jobBuckets(tx)
		if err != nil {
			return err
		}
		if due, ok := jobDue(old); ok {
			if err := idx.Delete(jobIdxKey(due, id)); err != nil {
				return err
			}
		}
		return tx.Bucket(bJobs).Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("delete job %s: %w", id, err)
	}
	return nil
}

// ClaimJobs moves up to max jobs due at or before now (pending ones, and
// running ones whose lease has expired) to running, with a lease until
// now+lease, in one transaction, and returns them earliest first. Only the
// due part of the index is read.
func (s *Store) ClaimJobs(now time.Time, lease time.Duration, max int) ([]*Job, error) {
	if max <= 0 {
		max = 100
	}
	now = now.UTC()
	// A read first: a wake with nothing due costs no write transaction.
	if next, ok, err := s.NextJobDue(); err != nil || !ok || next.After(now) {
		return nil, err
	}
	var out []*Job
	err := s.update(func(tx *bolt.Tx) error {
		out = out[:0]
		_, idx, err := jobBuckets(tx)
		if err != nil {
			return err
		}
		end := timeKey(now)
		var keys [][]byte
		c := idx.Cursor()
		for k, _ := c.First(); k != nil && len(keys) < max; k, _ = c.Next() {
			if len(k) < 9 || binary.BigEndian.Uint64(k) > end {
				break
			}
			keys = append(keys, bytes.Clone(k))
		}
		for _, k := range keys {
			id := string(k[9:])
			old, err := getJobTx(tx, id)
			if err != nil {
				return fmt.Errorf("job %s: %w", id, err)
			}
			j := *old
			j.State, j.Claim, j.LeaseUntil, j.UpdatedAt = JobRunning, old.Claim+1, now.Add(lease), now
			if err := putJobTx(tx, &j, old); err != nil {
				return err
			}
			out = append(out, &j)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	return out, nil
}

// finishJob applies fn to the job held by claim, in one transaction.
func (s *Store) finishJob(id string, claim int, fn func(j *Job)) error {
	return s.update(func(tx *bolt.Tx) error {
		old, err := getJobTx(tx, id)
		if err != nil {
			return err
		}
		if old.State != JobRunning || old.Claim != claim {
			return ErrJobLost
		}
		j := *old
		j.LeaseUntil = time.Time{}
		j.UpdatedAt = s.now().UTC()
		fn(&j)
		return putJobTx(tx, &j, old)
	})
}

// JobDone records a successful run of the job held by claim. With a
// non-zero next the job is pending again at next (a cron job's next
// time); otherwise it is done.
func (s *Store) JobDone(id string, claim int, next time.Time) error {
	err := s.finishJob(id, claim, func(j *Job) {
		j.Runs++
		j.LastRun = j.UpdatedAt
		j.Attempts, j.LastError = 0, ""
		if next.IsZero() {
			j.State = JobDone
			return
		}
		j.State, j.Due = JobPending, next.UTC()
	})
	if err != nil {
		return fmt.Errorf("job %s done: %w", id, err)
	}
	return nil
}

// JobFailed records a failed run of the job held by claim: it is due
// again after RetryBackoff(attempts), or, once it has failed MaxAttempts
// (DefaultJobAttempts) times in a row, recorded as failed; a job with a
// non-zero next (a cron job) then waits for next instead, its attempts
// reset.
func (s *Store) JobFailed(id string, claim int, cause error, next time.Time) error {
	err := s.finishJob(id, claim, func(j *Job) {
		j.Attempts++
		j.LastError = cause.Error()
		limit := j.MaxAttempts
		if limit <= 0 {
			limit = DefaultJobAttempts
		}
		switch {
		case j.Attempts < limit:
			j.State, j.Due = JobPending, j.UpdatedAt.Add(RetryBackoff(j.Attempts))
		case !next.IsZero():
			j.State, j.Due, j.Attempts = JobPending, next.UTC(), 0
		default:
			j.State = JobFailed
		}
	})
	if err != nil {
		return fmt.Errorf("job %s failed: %w", id, err)
	}
	return nil
}

// RecoverJobs makes every running job due at now: the claims of a process
// that ended (killed, crashed) before it marked them done. Call it only at
// start-up, while holding the store (Open's exclusive lock means no other
// process can be running them). It returns how many it resumed. It reads
// the jobs the index holds (the pending and running ones), not the done
// and failed ones, which are kept and grow with the watcher's history.
func (s *Store) RecoverJobs(now time.Time) (int, error) {
	n := 0
	err := s.update(func(tx *bolt.Tx) error {
		n = 0
		_, idx, err := jobBuckets(tx)
		if err != nil {
			return err
		}
		var stale []*Job
		err = idx.ForEach(func(_, id []byte) error {
			j, err := getJobTx(tx, string(id))
			if err != nil {
				return fmt.Errorf("job %s: %w", id, err)
			}
			if j.State == JobRunning {
				stale = append(stale, j)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, old := range stale {
			j := *old
			j.State, j.Due, j.LeaseUntil, j.UpdatedAt = JobPending, now.UTC(), time.Time{}, now.UTC()
			j.LastError = fmt.Sprintf("resumed after a restart (claim %d was not marked done)", old.Claim)
			if err := putJobTx(tx, &j, old); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recover jobs: %w", err)
	}
	return n, nil
}

// NextJobDue returns the earliest time a job is due (a running job's lease
// end counts); ok is false when no job waits. It reads one index key.
func (s *Store) NextJobDue() (next time.Time, ok bool, err error) {
	next, ok, err = s.firstDue(bIdxJob)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next job: %w", err)
	}
	return next, ok, nil
}

// ListJobs calls fn with every job, in ID order.
func (s *Store) ListJobs(fn func(*Job) error) error {
	return scan(s, bJobs, nil, func(_ *bolt.Tx, _, v []byte) (*Job, bool, error) {
		var j Job
		if err := json.Unmarshal(v, &j); err != nil {
			return nil, false, err
		}
		return &j, true, nil
	}, fn)
}

// rebuildJobIndex rebuilds idx_job from the jobs (Repair; the caller
// emptied the index).
func rebuildJobIndex(tx *bolt.Tx) error {
	b, idx, err := jobBuckets(tx)
	if err != nil {
		return err
	}
	return b.ForEach(func(k, _ []byte) error {
		j, err := getJobTx(tx, string(k))
		if err != nil {
			return nil // undecodable: left for Repair's own report
		}
		if due, ok := jobDue(j); ok {
			return idx.Put(jobIdxKey(due, j.ID), []byte(j.ID))
		}
		return nil
	})
}
