package llm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
)

// sleepRecorder records requested waits instead of sleeping.
type sleepRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleepRecorder) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays = append(s.delays, d)
	return ctx.Err()
}

func (s *sleepRecorder) Delays() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

func TestRetryBackoffGrowsAndCaps(t *testing.T) {
	t.Parallel()
	rec := &sleepRecorder{}
	fail := llm.ModelFunc(func(context.Context, llm.Request) (*llm.Response, error) {
		return nil, &llm.APIError{StatusCode: 503}
	})
	m := llm.WithRetry(fail, llm.RetryOptions{MaxAttempts: 8, InitialDelay: time.Second, MaxDelay: 4 * time.Second, Sleep: rec.Sleep})
	if _, err := m.Generate(t.Context(), llm.Request{}); err == nil {
		t.Fatal("got nil error, want one")
	}
	delays := rec.Delays()
	if len(delays) != 7 {
		t.Fatalf("waits: got %d, want 7", len(delays))
	}
	// Exponential with ±50% jitter: wait i lies within [0.5, 1.5] × min(1s·2^i, 4s).
	for i, d := range delays {
		base := min(time.Second<<i, 4*time.Second)
		if lo, hi := base/2, base*3/2; d < lo || d > hi {
			t.Errorf("wait %d: got %s, want within [%s, %s]", i, d, lo, hi)
		}
	}
}

func TestRetryRealSleepHonoursContext(t *testing.T) {
	t.Parallel()
	// In a synctest bubble the deadline's clock moves only while every
	// goroutine waits, so the deadline cannot pass before the first
	// attempt however loaded the machine is: it passes during the wait.
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		fail := llm.ModelFunc(func(context.Context, llm.Request) (*llm.Response, error) {
			calls++
			return nil, &llm.APIError{StatusCode: 429, RetryAfter: time.Hour}
		})
		// The server asks for an hour; the caller's deadline must cut the wait.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := llm.WithRetry(fail, llm.RetryOptions{}).Generate(ctx, llm.Request{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error: got %v, want context.DeadlineExceeded", err)
		}
		var ae *llm.APIError
		if !errors.As(err, &ae) {
			t.Errorf("error: got %v, want it to wrap the last *APIError", err)
		}
		if calls != 1 {
			t.Errorf("calls: got %d, want 1", calls)
		}
		if waited := time.Since(start); waited != 20*time.Millisecond {
			t.Errorf("waited: got %s, want the deadline's 20ms", waited)
		}
	})
}

func TestRetryCancelledDuringTemporaryFailure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	m := llm.WithRetry(llm.ModelFunc(func(context.Context, llm.Request) (*llm.Response, error) {
		cancel()
		return nil, &llm.APIError{StatusCode: 503}
	}), llm.RetryOptions{Sleep: (&sleepRecorder{}).Sleep})
	_, err := m.Generate(ctx, llm.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error: got %v, want context.Canceled", err)
	}
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 {
		t.Errorf("error: got %v, want it to wrap the 503", err)
	}
}
