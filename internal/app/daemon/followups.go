package daemon

import (
	"context"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/followup"
	"github.com/mailagent/mailagent/internal/mail"
)

// fireFollowups runs the due followup timers once.
func (d *Daemon) fireFollowups(ctx context.Context) {
	f := d.Pipeline.Followups
	if f == nil {
		return
	}
	if n, err := f.FireDue(ctx); err != nil && ctx.Err() == nil {
		d.log().Warn("followup timers", "err", err)
	} else if n > 0 {
		d.log().Info("followup timers fired", "count", n)
	}
}

// trackSent shows the owner's sent mail (any client, or approved by the
// owner; never automatic replies) to reply tracking. asks tells which
// messages ask something (their own text has a question mark).
func (d *Daemon) trackSent(ctx context.Context, account string, msgs []*mail.Message, asks map[*mail.Message]bool) error {
	f := d.Pipeline.Followups
	if f == nil || len(msgs) == 0 {
		return nil
	}
	autoByUs, err := d.autoSentIn(account, msgs)
	if err != nil {
		return err
	}
	var sent []followup.SentMail
	for _, m := range msgs {
		if agent.SentAutomatically(m, autoByUs) {
			continue
		}
		sent = append(sent, followup.SentMail{Message: m, Asks: asks[m], NudgeOf: followup.NudgeOf(m.HeaderValue(agent.TraceHeader))})
	}
	err = f.OwnerSent(ctx, account, sent...)
	d.Wake() // new timers: the scheduler re-reads the earliest
	return err
}
