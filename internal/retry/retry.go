// Package retry is the one home of mailagent's retry backoff: the wait
// after a number of failures that a stored due time is computed from
// (After, without jitter, so that the same record is due at the same time
// whenever it is computed), and the jittered backoff of a live retry loop
// (Jittered: IMAP reconnects, model calls). Both are
// github.com/cenkalti/backoff/v5's ExponentialBackOff doubling from the
// caller's first wait up to its longest; each caller passes its own. It
// imports nothing from the project (a leaf library).
package retry

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Multiplier is how much each wait grows over the one before.
const Multiplier = 2

// After returns the wait after failures failures: first, doubling with
// each further failure, at most longest (failures below 1 count as 1). It
// is deterministic.
func After(first, longest time.Duration, failures int) time.Duration {
	if first <= 0 {
		return 0
	}
	longest = max(longest, first)
	b := &backoff.ExponentialBackOff{InitialInterval: first, Multiplier: Multiplier, MaxInterval: longest}
	b.Reset()
	d := b.NextBackOff()
	for i := 1; i < failures && d < longest; i++ {
		d = b.NextBackOff()
	}
	return min(d, longest)
}

// Jittered returns a live retry loop's backoff: first, doubling, at most
// longest, each wait randomised by ±50% (backoff's default) so that many
// clients that failed together do not retry together. It is not safe for
// concurrent use; Reset starts it over.
func Jittered(first, longest time.Duration) *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{
		InitialInterval:     first,
		RandomizationFactor: backoff.DefaultRandomizationFactor,
		Multiplier:          Multiplier,
		MaxInterval:         max(longest, first),
	}
	b.Reset()
	return b
}
