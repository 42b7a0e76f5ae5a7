package llm

import (
	"context"
	"errors"
	"testing"
)

func TestWithRateLimit(t *testing.T) {
	t.Parallel()
	calls := 0
	m := ModelFunc(func(context.Context, Request) (*Response, error) { calls++; return &Response{Text: "{}"}, nil })
	if got := WithRateLimit(m, 0); got == nil {
		t.Fatal("nil model")
	}
	lim := WithRateLimit(m, 1) // one call a minute: the second must wait
	if _, err := lim.Generate(context.Background(), Request{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := lim.Generate(ctx, Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("second call with a cancelled context: got %v, want context.Canceled", err)
	}
	if calls != 1 {
		t.Errorf("calls: got %d, want 1", calls)
	}
}
