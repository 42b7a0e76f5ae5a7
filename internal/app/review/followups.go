package review

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	appunsub "github.com/mailagent/mailagent/internal/app/unsubscribe"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
)

// The review TUI's followups view and unsubscribe key (tui/followups.go),
// over the same api.Service as the rest of review.

var (
	_ tui.FollowupBackend = (*Backend)(nil)
	_ tui.Unsubscriber    = (*Backend)(nil)
)

// Followups implements tui.FollowupBackend.
func (b *Backend) Followups(ctx context.Context) ([]tui.Followup, error) {
	var out []tui.Followup
	err := b.use(ctx, "", func(svc api.Service) error {
		fs, err := svc.Followups(ctx, api.FollowupFilter{})
		if err != nil {
			return err
		}
		out = make([]tui.Followup, 0, len(fs))
		now := b.Now()
		for _, f := range fs {
			tier := []string{"", "reminded", "nudged"}[min(max(f.Tier, 0), 2)]
			if f.SnoozeUntil.After(now) {
				tier = "snoozed"
			}
			out = append(out, tui.Followup{ID: f.ID, State: f.State, With: strings.Join(f.Correspondents, ", "),
				Subject: f.Subject, LastAt: f.LastAt, Deadline: f.Deadline, Tier: tier})
		}
		return nil
	})
	return out, err
}

// FollowupDone implements tui.FollowupBackend.
func (b *Backend) FollowupDone(ctx context.Context, id string) error {
	return b.use(ctx, "mark done", func(svc api.Service) error {
		_, err := svc.FollowupAction(ctx, id, api.FollowupActDone, time.Time{})
		return err
	})
}

// FollowupSnooze implements tui.FollowupBackend.
func (b *Backend) FollowupSnooze(ctx context.Context, id string, until time.Time) error {
	return b.use(ctx, "snooze", func(svc api.Service) error {
		_, err := svc.FollowupAction(ctx, id, api.FollowupActSnooze, until)
		return err
	})
}

// FollowupNudge implements tui.FollowupBackend.
func (b *Backend) FollowupNudge(ctx context.Context, id string) (string, error) {
	var q string
	err := b.use(ctx, "nudge", func(svc api.Service) error {
		res, err := svc.FollowupAction(ctx, id, api.FollowupActNudge, time.Time{})
		if err == nil {
			q = res.QueueID
		}
		return err
	})
	return q, err
}

// errNoUnsubscribe: review runs without a configuration to reach the mail
// server with.
var errNoUnsubscribe = errors.New("unsubscribing needs the configuration (run review with --config)")

// unsubscribeRef is the Message-ID of a queue item.
func unsubscribeRef(ctx context.Context, svc api.Service, id string) (string, error) {
	d, err := svc.QueueItem(ctx, id)
	if err != nil {
		return "", err
	}
	if d.Item.MessageID == "" {
		return "", store.ErrNotFound
	}
	return d.Item.MessageID, nil
}

// UnsubscribePlan implements tui.Unsubscriber: what unsubscribing from the
// item's list would send. Nothing is sent.
func (b *Backend) UnsubscribePlan(ctx context.Context, id string) (string, error) {
	if b.UnsubscribeEnv == nil {
		return "", errNoUnsubscribe
	}
	var what string
	err := b.use(ctx, "", func(svc api.Service) error {
		ref, err := unsubscribeRef(ctx, svc, id)
		if err != nil {
			return err
		}
		p, err := appunsub.NewPlan(ctx, b.UnsubscribeEnv, svc, ref)
		if err != nil {
			return err
		}
		defer p.Close()
		what = p.What
		return nil
	})
	return what, err
}

// Unsubscribe implements tui.Unsubscriber, after the TUI's confirmation.
func (b *Backend) Unsubscribe(ctx context.Context, id string) error {
	if b.UnsubscribeEnv == nil {
		return errNoUnsubscribe
	}
	return b.use(ctx, "unsubscribe", func(svc api.Service) error {
		ref, err := unsubscribeRef(ctx, svc, id)
		if err != nil {
			return err
		}
		p, err := appunsub.NewPlan(ctx, b.UnsubscribeEnv, svc, ref)
		if err != nil {
			return err
		}
		defer p.Close()
		return p.Execute(ctx, svc)
	})
}
