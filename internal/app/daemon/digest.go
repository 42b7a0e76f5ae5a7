package daemon

import (
	"context"
)

// DigestRunner sends the owner's digest when its period has come (see
// digest.Scheduler): RunDue sends at most one per period and reports
// whether it did.
type DigestRunner interface {
	RunDue(ctx context.Context) (bool, error)
}

// runDigest asks d.Digest once; errors are logged (watch --once; the watcher runs the digest job, see scheduler_jobs.go).
func (d *Daemon) runDigest(ctx context.Context) {
	if d.Digest == nil {
		return
	}
	sent, err := d.Digest.RunDue(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		d.log().Warn("digest", "err", err)
	case sent:
		d.log().Info("digest sent")
	}
}
