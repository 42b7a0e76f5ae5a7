package digestmail

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/app/digest"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// outboxFunc is an api.OwnMailer whose outbox answers with fn.
type outboxFunc func(agent.OwnMail) (*store.OutboxRecord, error)

func (f outboxFunc) SendOwnMail(_ context.Context, m agent.OwnMail) (*store.OutboxRecord, error) {
	return f(m)
}

func appCode(err error) int {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return 0
}

// TestSendErrors: the digest goes to digest.to through the outbox, once
// per period ref; each failure carries the exit code the command line
// reports (a refused digest.to is usage, an unsent mail unreachable).
func TestSendErrors(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	rep, err := digest.Build(NoState{}, now.Add(-24*time.Hour), now, "gemini-2.5-flash")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Accounts: []config.Account{{Name: "home", Email: "owner@example.org"}}}
	cfg.Digest.To = "me@example.net"
	ctx := context.Background()

	var got agent.OwnMail
	id, to, err := Send(ctx, cfg, outboxFunc(func(m agent.OwnMail) (*store.OutboxRecord, error) {
		got = m
		return &store.OutboxRecord{Status: store.OutboxSent, MessageID: "d1@example.org"}, nil
	}), rep, "2026-11-28", now)
	if err != nil || id != "d1@example.org" || to != "me@example.net" {
		t.Fatalf("Send = %q %q %v", id, to, err)
	}
	if got.Kind != store.OutboxKindDigest || got.Account != "home" || got.To != "me@example.net" || got.Ref != "2026-11-28" || len(got.Raw) == 0 {
		t.Errorf("outbox got %+v", got)
	}

	cases := []struct {
		name string
		fn   outboxFunc
		code int
	}{
		{"refused recipient", func(agent.OwnMail) (*store.OutboxRecord, error) {
			return nil, fmt.Errorf("bad address: %w", api.ErrBadRequest)
		}, apperr.CodeUsage},
		{"left failed", func(agent.OwnMail) (*store.OutboxRecord, error) {
			return &store.OutboxRecord{Status: store.OutboxFailed, Error: "550 no"}, nil
		}, apperr.CodeUnreachable},
		{"smtp down", func(agent.OwnMail) (*store.OutboxRecord, error) {
			return nil, errors.New("dial tcp: connection refused")
		}, apperr.CodeUnreachable},
	}
	for _, c := range cases {
		if _, _, err := Send(ctx, cfg, c.fn, rep, "manual", now); appCode(err) != c.code {
			t.Errorf("%s: %v (code %d), want code %d", c.name, err, appCode(err), c.code)
		}
	}

	if _, _, err := Account(&config.Config{}); appCode(err) != apperr.CodeUsage {
		t.Errorf("no account: %v, want a usage error", err)
	}
	bad := *cfg
	bad.Digest.Account = "nobody"
	if _, _, err := Account(&bad); appCode(err) != apperr.CodeUsage {
		t.Errorf("unknown digest.account: %v, want a usage error", err)
	}
	if s, err := NewScheduler(&config.Config{}, nil, nil, time.Now); s != nil || err != nil {
		t.Errorf("no digest.schedule: %v %v, want no scheduler", s, err)
	}
	bad.Digest.Schedule = "hourly at noon"
	bad.Digest.Account = ""
	if _, err := NewScheduler(&bad, nil, nil, time.Now); appCode(err) != apperr.CodeUsage {
		t.Errorf("bad digest.schedule: %v, want a usage error", err)
	}
}
