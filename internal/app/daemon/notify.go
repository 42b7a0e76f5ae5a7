package daemon

import (
	"context"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/notify"
	"github.com/mailagent/mailagent/store"
)

// notifyTimeout bounds one desktop notification, so a hung session bus
// costs the watcher at most this per message that needs the owner.
const notifyTimeout = 3 * time.Second

// needsOwner reports whether the outcome of processing a new message left
// something for the owner: a draft queued for approval, a message to be
// told about, or one set aside for review.
func needsOwner(out *agent.Outcome) bool {
	if out == nil || out.Skipped || out.Record == nil {
		return false
	}
	rec := out.Record
	switch rec.Decision {
	case agent.DecisionQueue, agent.DecisionNotify, agent.DecisionNeedsReview:
		return true
	}
	return rec.State == store.StateNeedsReview
}

// tellOwner tells d.Notifier about out when it needs the owner: the
// sender and the subject only (notify.Note has room for nothing else),
// the sender marked verified only when the owner's server authenticated
// that very address (MessageRecord.Correspondent). A failure is logged, never fatal: the
// item is in the queue either way.
func (d *Daemon) tellOwner(ctx context.Context, out *agent.Outcome) {
	if d.Notifier == nil || !needsOwner(out) {
		return
	}
	rec := out.Record
	ctx, cancel := context.WithTimeout(ctx, notifyTimeout)
	defer cancel()
	// Verified only when what the server vouched for is the From shown.
	c := rec.Correspondent()
	note := notify.Note{From: rec.From, Verified: c != "" && c == mail.AddrKey(rec.From.Email), Subject: rec.Subject}
	if err := d.Notifier.Notify(ctx, note); err != nil && ctx.Err() == nil {
		d.log().Warn("desktop notification", "account", rec.Account, "uid", rec.UID, "err", err)
	}
}
