package daemon

import (
	"context"
	"time"
)

// DigestRunner sends the owner's digest when its period has come (see
// digest.Scheduler): RunDue sends at most one per period and reports
// whether it did.
type DigestRunner interface {
	RunDue(ctx context.Context) (bool, error)
}

// digestEvery is how often the watcher asks whether a digest is due.
const digestEvery = time.Minute

// runDigest asks d.Digest once; errors are logged (the next tick retries).
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

// digestLoop asks at start and then every digestEvery until ctx ends.
func (d *Daemon) digestLoop(ctx context.Context) error {
	d.runDigest(ctx)
	return d.tick(ctx, digestEvery, d.runDigest)
}
