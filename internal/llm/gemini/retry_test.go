package gemini_test

// WithRetry over Gemini: the provider's HTTP failures (429 with a
// Retry-After header or RetryInfo, 5xx, a per-call timeout, a cut
// connection, 4xx, a safety block) drive the retry loop as they should.
// These tests were internal/llm's; they live here because they need the
// real client (and so genai), which internal/llm no longer links.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/gemini"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
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

// sequence answers the i-th request with replies[i], repeating the last.
func sequence(replies ...geminitest.Reply) geminitest.Handler {
	var mu sync.Mutex
	n := 0
	return func(*geminitest.Request) geminitest.Reply {
		mu.Lock()
		defer mu.Unlock()
		r := replies[min(n, len(replies)-1)]
		n++
		return r
	}
}

func TestRetry(t *testing.T) {
	t.Parallel()
	ok := geminitest.Reply{Text: "done", Usage: llm.Usage{PromptTokens: 1, OutputTokens: 1, TotalTokens: 2}}
	const heldModel = "gemini-held"
	tests := []struct {
		name         string
		replies      []geminitest.Reply
		maxAttempts  int
		wantRequests int
		wantErr      bool
		wantStatus   int    // of the *APIError in the final error, when wantErr
		wantErrText  string // substring of the final error
		wantRetries  int
		minDelays    []time.Duration // lower bound of each recorded wait
		// firstCallTimeout, when set, bounds the first call only, which
		// asks for heldModel: the server holds that reply until the client
		// gives up, and answers the others from replies. The other calls
		// run with the default timeout, so a loaded machine can neither
		// turn a prompt reply into a timeout and an extra attempt nor hand
		// the held reply to a later call.
		firstCallTimeout time.Duration
	}{
		{name: "429 retry info honoured", replies: []geminitest.Reply{geminitest.RateLimitReply("7s"), ok},
			wantRequests: 2, wantRetries: 1, minDelays: []time.Duration{7 * time.Second}},
		{name: "429 retry-after header honoured", replies: []geminitest.Reply{withHeader(geminitest.ErrorReply(429, "RESOURCE_EXHAUSTED", "x"), "Retry-After", "12"), ok},
			wantRequests: 2, wantRetries: 1, minDelays: []time.Duration{12 * time.Second}},
		{name: "503 then success", replies: []geminitest.Reply{geminitest.ErrorReply(503, "UNAVAILABLE", "busy"), ok},
			wantRequests: 2, wantRetries: 1, minDelays: []time.Duration{0}},
		{name: "two 500 then success", replies: []geminitest.Reply{geminitest.ErrorReply(500, "INTERNAL", "a"), geminitest.ErrorReply(500, "INTERNAL", "b"), ok},
			wantRequests: 3, wantRetries: 2, minDelays: []time.Duration{0, 0}},
		{name: "timeout retried", replies: []geminitest.Reply{ok}, firstCallTimeout: time.Second,
			wantRequests: 2, wantRetries: 1, minDelays: []time.Duration{0}},
		{name: "connection cut retried", replies: []geminitest.Reply{{Hangup: true}, ok},
			wantRequests: 2, wantRetries: 1, minDelays: []time.Duration{0}},
		{name: "400 not retried", replies: []geminitest.Reply{geminitest.ErrorReply(400, "INVALID_ARGUMENT", "bad"), ok},
			wantRequests: 1, wantErr: true, wantStatus: 400, wantErrText: "after 1 attempt"},
		{name: "401 not retried", replies: []geminitest.Reply{geminitest.ErrorReply(401, "UNAUTHENTICATED", "bad key"), ok},
			wantRequests: 1, wantErr: true, wantStatus: 401, wantErrText: "after 1 attempt"},
		{name: "safety block not retried", replies: []geminitest.Reply{{Text: "x", FinishReason: "SAFETY"}, ok},
			wantRequests: 1, wantErr: true, wantErrText: "after 1 attempt"},
		{name: "gives up after max attempts", replies: []geminitest.Reply{geminitest.ErrorReply(503, "UNAVAILABLE", "busy")},
			maxAttempts: 3, wantRequests: 3, wantErr: true, wantStatus: 503, wantErrText: "after 3 attempts", minDelays: []time.Duration{0, 0}},
		{name: "default max attempts is 4", replies: []geminitest.Reply{geminitest.ErrorReply(429, "RESOURCE_EXHAUSTED", "x")},
			wantRequests: 4, wantErr: true, wantStatus: 429, wantErrText: "after 4 attempts", minDelays: []time.Duration{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := sequence(tt.replies...)
			srv := geminitest.NewServer(t, func(r *geminitest.Request) geminitest.Reply {
				if r.Model == heldModel {
					return geminitest.Reply{Text: "late", Delay: time.Minute}
				}
				return next(r)
			})
			rec := &sleepRecorder{}
			var model llm.Model = srv.NewGemini(t, gemini.Config{})
			if tt.firstCallTimeout > 0 {
				first, rest := srv.NewGemini(t, gemini.Config{CallTimeout: tt.firstCallTimeout, Model: heldModel}), model
				var calls atomic.Int32
				model = llm.ModelFunc(func(ctx context.Context, req llm.Request) (*llm.Response, error) {
					if calls.Add(1) == 1 {
						return first.Generate(ctx, req)
					}
					return rest.Generate(ctx, req)
				})
			}
			m := llm.WithRetry(model,
				llm.RetryOptions{MaxAttempts: tt.maxAttempts, InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, Sleep: rec.Sleep})
			resp, err := m.Generate(t.Context(), llm.Request{Prompt: "x"})
			if got := len(srv.Requests()); got != tt.wantRequests {
				t.Errorf("requests: got %d, want %d", got, tt.wantRequests)
			}
			if reqs := srv.Requests(); tt.firstCallTimeout > 0 && (len(reqs) == 0 || reqs[0].Model != heldModel) {
				t.Errorf("requests: got %d, want the held call first", len(reqs))
			}
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got nil error, want one")
				}
				if !strings.Contains(err.Error(), tt.wantErrText) {
					t.Errorf("error: got %q, want it to contain %q", err, tt.wantErrText)
				}
				var ae *llm.APIError
				if tt.wantStatus != 0 && (!errors.As(err, &ae) || ae.StatusCode != tt.wantStatus) {
					t.Errorf("error: got %v, want *APIError with status %d", err, tt.wantStatus)
				}
			} else {
				if err != nil {
					t.Fatalf("generate: %v", err)
				}
				if resp.Text != "done" {
					t.Errorf("text: got %q, want %q", resp.Text, "done")
				}
				if resp.Retries != tt.wantRetries {
					t.Errorf("retries: got %d, want %d", resp.Retries, tt.wantRetries)
				}
			}
			delays := rec.Delays()
			if len(delays) != len(tt.minDelays) {
				t.Fatalf("waits: got %v, want %d waits", delays, len(tt.minDelays))
			}
			for i, d := range delays {
				if d < tt.minDelays[i] || d <= 0 {
					t.Errorf("wait %d: got %s, want ≥ %s and > 0", i, d, tt.minDelays[i])
				}
			}
		})
	}
}

func TestRetryContextCancellation(t *testing.T) {
	t.Parallel()
	t.Run("cancel during wait stops retries", func(t *testing.T) {
		srv := geminitest.NewServer(t, sequence(geminitest.ErrorReply(503, "UNAVAILABLE", "busy")))
		ctx, cancel := context.WithCancel(t.Context())
		sleep := func(ctx context.Context, d time.Duration) error {
			cancel()
			return ctx.Err()
		}
		m := llm.WithRetry(srv.NewGemini(t, gemini.Config{}), llm.RetryOptions{Sleep: sleep})
		_, err := m.Generate(ctx, llm.Request{Prompt: "x"})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error: got %v, want context.Canceled", err)
		}
		var ae *llm.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 503 {
			t.Errorf("error: got %v, want it to wrap the last 503", err)
		}
		if got := len(srv.Requests()); got != 1 {
			t.Errorf("requests: got %d, want 1", got)
		}
	})
	t.Run("cancelled before the first attempt", func(t *testing.T) {
		srv := geminitest.NewServer(t, nil)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		m := llm.WithRetry(srv.NewGemini(t, gemini.Config{}), llm.RetryOptions{})
		_, err := m.Generate(ctx, llm.Request{Prompt: "x"})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error: got %v, want context.Canceled", err)
		}
		if got := len(srv.Requests()); got != 0 {
			t.Errorf("requests: got %d, want 0", got)
		}
	})
	t.Run("cancel during a call is not retried", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		srv := geminitest.NewServer(t, func(*geminitest.Request) geminitest.Reply {
			cancel()
			return geminitest.Reply{Text: "late", Delay: time.Minute}
		})
		rec := &sleepRecorder{}
		m := llm.WithRetry(srv.NewGemini(t, gemini.Config{}), llm.RetryOptions{Sleep: rec.Sleep})
		_, err := m.Generate(ctx, llm.Request{Prompt: "x"})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error: got %v, want context.Canceled", err)
		}
		if got := len(srv.Requests()); got != 1 {
			t.Errorf("requests: got %d, want 1", got)
		}
		if got := len(rec.Delays()); got != 0 {
			t.Errorf("waits: got %d, want 0", got)
		}
	})
}
