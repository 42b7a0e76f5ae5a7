package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// The watcher's timed work, as jobs of its Scheduler. Each job has a fixed
// ID, so a restart re-puts the same job instead of adding one, and each
// handler is idempotent (see JobHandler), for the reason given with it.
const (
	// JobSends runs the scheduled sends, the send retries and the snooze
	// ends that are due (agent.Pipeline.SendDue, over the outbox's and the
	// queue's due-time indexes). It is due at the earliest of them
	// (store.NextDue), read again on every wake (a new outbox record, a
	// snooze, an approval or a cancel comes with an agent event) and after
	// each run, at most DueCap ahead (changes by another process).
	// Idempotent: an outbox record is delivered exactly once by the
	// outbox's own protocol (claimed in the store before the SMTP
	// transaction, recorded sent after; an interrupted delivery is
	// recovered by Pipeline.Recover, never sent blind), and a snooze end
	// only moves an item that is still snoozed.
	JobSends = "sends"
	// JobFollowups fires the reply-tracking timers that are due. It is due
	// at the earliest open followup's timer (store.NextFollowupDue), read
	// again on every wake (a new timer comes with an agent event) and
	// after each run. Idempotent: followup.Tracker.FireDue fires by the ids
	// the store's index shows due and moves each out of the index in the
	// same write, so a second run finds nothing to fire.
	JobFollowups = "followups"
	// JobDigest sends the owner's digest; its cron spec comes from
	// digest.schedule. Idempotent: DigestRunner.RunDue records the period
	// it sends for and sends nothing for a recorded period.
	JobDigest = "digest"
	// JobNeedsReview retries the messages that need review whose back-off
	// has passed, every RetryInterval. Idempotent: a retry runs the
	// message through the pipeline, which acts once per message record
	// (a terminal record is not acted on again).
	JobNeedsReview = "needs_review"
	// JobMaintenance, every RetryInterval, retries the copies to the Sent
	// folder that failed, bounds the threader and rescans each Sent
	// folder. Idempotent: copies are looked up by Message-ID before they
	// are appended, and the rest only reads or rebuilds caches.
	JobMaintenance = "maintenance"
)

// DigestCron is what a DigestRunner may also implement: the cron spec of
// its schedule (robfig/cron/v3 standard form). Without it the digest job
// asks every minute.
type DigestCron interface {
	CronSpec() string
}

// startJobs builds the daemon's Scheduler, registers its handlers and puts
// its standing jobs, due now (the start-up catch-up the loops did).
func (d *Daemon) startJobs() (*Scheduler, error) {
	s := &Scheduler{Store: d.Store, Logger: d.log(), Now: d.Now, MaxSleep: d.JobMaxSleep}
	s.Refresh = func() {
		d.refreshSendsJob()
		d.refreshFollowupJob()
	}
	now := d.now()
	every := orDefault(d.RetryInterval, config.DefaultRetryInterval)
	var errs error
	put := func(j *store.Job) {
		if err := s.Add(j); err != nil && !errors.Is(err, store.ErrJobRunning) {
			errs = errors.Join(errs, err)
		}
	}
	if d.Pipeline != nil {
		s.Handle(JobSends, func(ctx context.Context, _ *store.Job) (time.Time, error) {
			d.sendDue(ctx)
			d.duePasses.Add(1)
			now := d.now()
			return now.Add(d.untilDue(now)), nil
		})
		put(&store.Job{ID: JobSends, Kind: JobSends, Due: now, Reason: "send the scheduled replies and retries, wake snoozed items"})
	}
	s.Handle(JobNeedsReview, func(ctx context.Context, _ *store.Job) (time.Time, error) {
		d.retryNeedsReview(ctx, false)
		return d.now().Add(every), nil
	})
	put(&store.Job{ID: JobNeedsReview, Kind: JobNeedsReview, Due: now.Add(every),
		Reason: fmt.Sprintf("retry messages that need review, every %s (each with its own back-off)", every)})
	s.Handle(JobMaintenance, func(ctx context.Context, _ *store.Job) (time.Time, error) {
		d.recordCopies(d.retryCopies(ctx))
		d.boundThreader()
		for _, a := range d.Accounts {
			d.scanSent(ctx, a.Name, true)
		}
		return d.now().Add(every), nil
	})
	put(&store.Job{ID: JobMaintenance, Kind: JobMaintenance, Due: now.Add(every),
		Reason: fmt.Sprintf("retry Sent copies, bound the threader, rescan Sent folders, every %s", every)})
	if d.Pipeline != nil && d.Pipeline.Followups != nil {
		s.Handle(JobFollowups, func(ctx context.Context, _ *store.Job) (time.Time, error) {
			n, err := d.Pipeline.Followups.FireDue(ctx)
			if err != nil {
				return time.Time{}, fmt.Errorf("followup timers: %w", err)
			}
			if n > 0 {
				d.log().Info("followup timers fired", "count", n)
			}
			next, ok, err := d.Store.NextFollowupDue()
			if err != nil || !ok {
				return time.Time{}, err // none waits: done until a new timer wakes it
			}
			return maxTime(next, d.now()), nil
		})
		put(&store.Job{ID: JobFollowups, Kind: JobFollowups, Due: now, Reason: "fire the reply-tracking timers that are due"})
	}
	if d.Digest != nil {
		s.Handle(JobDigest, func(ctx context.Context, j *store.Job) (time.Time, error) {
			sent, err := d.Digest.RunDue(ctx)
			if err != nil {
				return time.Time{}, fmt.Errorf("digest: %w", err)
			}
			if sent {
				d.log().Info("digest sent")
			}
			if j.Cron == "" {
				return d.now().Add(time.Minute), nil
			}
			return time.Time{}, nil // the cron spec's next time
		})
		j := &store.Job{ID: JobDigest, Kind: JobDigest, Due: now, Reason: "send the owner's digest once per period"}
		if c, ok := d.Digest.(DigestCron); ok {
			j.Cron = c.CronSpec()
			j.Reason += " (" + j.Cron + ")"
		}
		put(j)
	}
	return s, errs
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// refreshFollowupJob moves the followups job to the earliest followup
// timer when that is sooner than the job's due time (a timer was added
// since the job last ran). Two reads of one key each when nothing moved.
func (d *Daemon) refreshFollowupJob() {
	if d.Pipeline == nil || d.Pipeline.Followups == nil {
		return
	}
	next, ok, err := d.Store.NextFollowupDue()
	if err != nil || !ok {
		return
	}
	j, err := d.Store.GetJob(JobFollowups)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return
	}
	if j != nil && (j.State == store.JobRunning || (j.State == store.JobPending && !j.Due.After(next))) {
		return
	}
	nj := &store.Job{ID: JobFollowups, Kind: JobFollowups, Due: next, Reason: "fire the reply-tracking timers that are due"}
	if err := d.Store.PutJob(nj); err != nil && !errors.Is(err, store.ErrJobRunning) {
		d.log().Warn("schedule the followup timers", "err", err)
	}
}

// refreshSendsJob moves the sends job to the earliest scheduled send,
// send retry or snooze end when that is sooner than the job's due time.
func (d *Daemon) refreshSendsJob() {
	if d.Pipeline == nil {
		return
	}
	next, ok, err := d.Store.NextDue()
	if err != nil || !ok {
		return
	}
	j, err := d.Store.GetJob(JobSends)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return
	}
	if j != nil && (j.State == store.JobRunning || (j.State == store.JobPending && !j.Due.After(next))) {
		return
	}
	nj := &store.Job{ID: JobSends, Kind: JobSends, Due: next, Reason: "send the scheduled replies and retries, wake snoozed items"}
	if err := d.Store.PutJob(nj); err != nil && !errors.Is(err, store.ErrJobRunning) {
		d.log().Warn("schedule the due sends", "err", err)
	}
}
