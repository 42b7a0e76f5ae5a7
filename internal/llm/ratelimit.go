package llm

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
)

// WithRateLimit spaces calls to at most perMinute per minute (a burst of
// one), so that a triage of thousands of messages stays inside a quota
// instead of living on 429s. perMinute ≤ 0 returns m unchanged.
func WithRateLimit(m Model, perMinute int) Model {
	if perMinute <= 0 {
		return m
	}
	return &limited{m: m, lim: rate.NewLimiter(rate.Every(time.Minute/time.Duration(perMinute)), 1)}
}

type limited struct {
	m   Model
	lim *rate.Limiter
}

func (l *limited) Generate(ctx context.Context, req Request) (*Response, error) {
	if err := l.lim.Wait(ctx); err != nil {
		return nil, fmt.Errorf("rate limit: %w", err)
	}
	return l.m.Generate(ctx, req)
}
