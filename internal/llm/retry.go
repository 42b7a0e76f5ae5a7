package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailagent/mailagent/internal/retry"
)

// RetryOptions configures WithRetry. The zero value is usable.
type RetryOptions struct {
	// MaxAttempts is the total number of calls, the first included.
	// Zero means 4.
	MaxAttempts int
	// InitialDelay is the first backoff delay; zero means 1s.
	InitialDelay time.Duration
	// MaxDelay caps the exponential backoff delay; zero means 30s. A
	// server-requested delay (APIError.RetryAfter) may exceed it.
	MaxDelay time.Duration
	// Sleep waits d or until ctx is done. Nil means a real timer; tests
	// inject a recorder.
	Sleep func(ctx context.Context, d time.Duration) error
}

// WithRetry wraps m so temporary failures (see IsTemporary) are retried with
// exponential backoff and jitter, waiting at least the server's requested
// delay. Permanent errors and a done ctx end the loop at once. The returned
// Response's Retries counts the calls beyond the first. The result is safe
// for concurrent use when m is.
func WithRetry(m Model, opts RetryOptions) Model {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 4
	}
	if opts.InitialDelay <= 0 {
		opts.InitialDelay = time.Second
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = 30 * time.Second
	}
	if opts.MaxDelay < opts.InitialDelay {
		opts.MaxDelay = opts.InitialDelay
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	return &retryModel{m: m, opts: opts}
}

type retryModel struct {
	m    Model
	opts RetryOptions
}

// Generate runs the retry loop. It is hand-rolled around backoff's delay
// schedule rather than backoff.Retry because the wait must be injectable,
// must honour the server's Retry-After as a floor, and the final error must
// count the attempts.
func (r *retryModel) Generate(ctx context.Context, req Request) (*Response, error) {
	b := retry.Jittered(r.opts.InitialDelay, r.opts.MaxDelay)
	var lastErr error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if lastErr == nil {
				return nil, fmt.Errorf("model call: %w", err)
			}
			return nil, fmt.Errorf("model call stopped after %d attempts: %w (last error: %w)", attempt-1, err, lastErr)
		}
		resp, err := r.m.Generate(ctx, req)
		if err == nil {
			resp.Retries = attempt - 1
			return resp, nil
		}
		lastErr = err
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			return nil, fmt.Errorf("model call stopped after %d attempt(s): %w (last error: %w)", attempt, cerr, err)
		}
		if ctx.Err() != nil || !IsTemporary(err) {
			return nil, fmt.Errorf("model call failed after %d attempt(s): %w", attempt, err)
		}
		if attempt >= r.opts.MaxAttempts {
			return nil, fmt.Errorf("model call gave up after %d attempts: %w", attempt, err)
		}
		d := b.NextBackOff()
		if ra := retryAfter(err); ra > d {
			d = ra
		}
		if serr := r.opts.Sleep(ctx, d); serr != nil {
			return nil, fmt.Errorf("model call stopped after %d attempts: %w (last error: %w)", attempt, serr, lastErr)
		}
	}
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
