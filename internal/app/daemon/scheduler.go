package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/mailagent/mailagent/store"
)

// JobHandler runs one claimed job. It returns the time the job is due
// again (zero: at its cron spec's next time, or never), or an error, after
// which the job is retried with back-off (store.JobFailed).
//
// A handler must be idempotent by the job's ID: a process killed after the
// handler acted but before the store recorded the job done runs the
// handler again on the next start (store.RecoverJobs). That is what makes
// firing exactly-once in effect.
type JobHandler func(ctx context.Context, j *store.Job) (next time.Time, err error)

// Scheduler is the watcher's one durable timer: it sleeps until the
// store's next due job (store.NextJobDue) or a Wake, claims the due jobs
// with a lease (store.ClaimJobs), and runs the handler registered for each
// job's Kind, each on its own goroutine. An idle scheduler with any number
// of future jobs wakes once per MaxSleep at most.
type Scheduler struct {
	Store *store.Store
	// Lease is how long a claim holds (default 1h); a handler's context
	// ends a minute before it, so a handler that hangs is cancelled before
	// its job can be claimed twice in one process.
	Lease time.Duration
	// Batch bounds one claim (default 100).
	Batch int
	// MaxSleep bounds a sleep when nothing is due (default 1h): it covers
	// a wall-clock jump the monotonic timer does not see.
	MaxSleep time.Duration
	// Refresh, when set, runs on each wake before the next due time is
	// read (the daemon re-reads the followup timers' next due time there).
	Refresh func()
	Logger  *slog.Logger
	Now     func() time.Time

	mu       sync.Mutex
	handlers map[string]JobHandler
	wake     chan struct{}
	// Wakeups counts the loop's wake-ups (the idle benchmark reads it).
	Wakeups atomic.Int64
	// Fired counts the handler runs that ended (tests).
	Fired atomic.Int64
}

func (s *Scheduler) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Scheduler) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Handle registers h for jobs of kind.
func (s *Scheduler) Handle(kind string, h JobHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handlers == nil {
		s.handlers = map[string]JobHandler{}
	}
	s.handlers[kind] = h
}

func (s *Scheduler) handler(kind string) JobHandler {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handlers[kind]
}

func (s *Scheduler) wakeCh() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
	}
	return s.wake
}

// Wake makes the loop read the next due time again. It never blocks.
func (s *Scheduler) Wake() {
	select {
	case s.wakeCh() <- struct{}{}:
	default:
	}
}

// Add schedules j (store.PutJob) and wakes the loop. A job of that ID
// that is running now is left alone (store.ErrJobRunning).
func (s *Scheduler) Add(j *store.Job) error {
	if j.Cron != "" {
		if _, err := ParseCron(j.Cron); err != nil {
			return err
		}
	}
	if err := s.Store.PutJob(j); err != nil {
		return err
	}
	s.Wake()
	return nil
}

// ParseCron reads a cron spec as robfig/cron/v3's standard parser does:
// five fields ("0 8 * * *") or a descriptor ("@daily", "@every 15m"),
// optionally prefixed with CRON_TZ=Zone.
func ParseCron(spec string) (cron.Schedule, error) {
	sch, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("cron spec %q: %w", spec, err)
	}
	return sch, nil
}

func (s *Scheduler) lease() time.Duration { return orDefault(s.Lease, time.Hour) }

// Run resumes the jobs a previous process claimed but did not finish, then
// fires due jobs until ctx ends; it waits for running handlers before it
// returns nil.
func (s *Scheduler) Run(ctx context.Context) error {
	if n, err := s.Store.RecoverJobs(s.now()); err != nil {
		s.log().Warn("resume jobs", "err", err)
	} else if n > 0 {
		s.log().Info("jobs resumed after a restart", "count", n)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wake := s.wakeCh()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		s.Wakeups.Add(1)
		jobs, err := s.Store.ClaimJobs(s.now(), s.lease(), orInt(s.Batch, 100))
		if err != nil && ctx.Err() == nil {
			s.log().Warn("claim jobs", "err", err)
		}
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.fire(ctx, j)
			}()
		}
		t.Reset(s.untilNext(len(jobs) > 0 || err != nil))
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			if s.Refresh != nil {
				s.Refresh()
			}
		case <-t.C:
		}
	}
}

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// untilNext is how long the loop sleeps: until the next due job, at most
// MaxSleep; after a busy pass (or an error) at least a short gap, so a job
// that is due again at once cannot spin the loop.
func (s *Scheduler) untilNext(busy bool) time.Duration {
	const gap = 50 * time.Millisecond
	next, ok, err := s.Store.NextJobDue()
	if err != nil {
		s.log().Warn("next job", "err", err)
		return time.Second
	}
	wait := orDefault(s.MaxSleep, time.Hour)
	if ok {
		wait = min(wait, next.Sub(s.now()))
	}
	if busy {
		wait = max(wait, gap)
	}
	return max(wait, 0)
}

// fire runs j's handler and records the outcome.
func (s *Scheduler) fire(ctx context.Context, j *store.Job) {
	defer s.Fired.Add(1)
	// The loop slept while the job ran (until its lease's end): once its
	// outcome is recorded, it must read the job's next due time.
	defer s.Wake()
	var next time.Time
	var sch cron.Schedule
	if j.Cron != "" {
		var err error
		if sch, err = ParseCron(j.Cron); err != nil {
			s.finish(j, fmt.Errorf("job %s: %w", j.ID, err), time.Time{})
			return
		}
	}
	h := s.handler(j.Kind)
	if h == nil {
		s.finish(j, fmt.Errorf("job %s: no handler for kind %q", j.ID, j.Kind), time.Time{})
		return
	}
	hctx, cancel := context.WithTimeout(ctx, max(s.lease()-time.Minute, s.lease()/2))
	defer cancel()
	next, err := runHandler(hctx, h, j)
	if ctx.Err() != nil {
		return // stopping: the claim is resumed on the next start
	}
	if next.IsZero() && sch != nil {
		next = sch.Next(s.now())
	}
	s.finish(j, err, next)
}

func (s *Scheduler) finish(j *store.Job, runErr error, next time.Time) {
	var err error
	if runErr != nil {
		s.log().Warn("job failed", "job", j.ID, "attempt", j.Attempts+1, "err", runErr)
		err = s.Store.JobFailed(j.ID, j.Claim, runErr, next)
	} else {
		err = s.Store.JobDone(j.ID, j.Claim, next)
	}
	if errors.Is(err, store.ErrJobLost) {
		s.log().Warn("job claim lost (it ran past its lease)", "job", j.ID)
	} else if err != nil {
		s.log().Error("record job outcome", "job", j.ID, "err", err)
	}
}

// runHandler runs h, turning a panic into the job's error: a handler's
// bug fails its job (retried with back-off, then failed) and never stops
// the watcher.
func runHandler(ctx context.Context, h JobHandler, j *store.Job) (next time.Time, err error) {
	defer func() {
		if p := recover(); p != nil {
			next, err = time.Time{}, fmt.Errorf("job %s: handler panicked: %v", j.ID, p)
		}
	}()
	return h(ctx, j)
}
