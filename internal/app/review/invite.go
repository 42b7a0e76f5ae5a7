package review

import (
	"context"
	"errors"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
)

var _ tui.Inviter = (*Backend)(nil)

// RSVP implements tui.Inviter: the TUI's A, D and T keys answer an
// invitation through api.Inviter, as `mailagent queue rsvp` does (the
// watcher's socket or the local store with actions).
func (b *Backend) RSVP(ctx context.Context, id, answer string) error {
	return b.use(ctx, "rsvp", func(svc api.Service) error {
		inv, ok := svc.(api.Inviter)
		if !ok {
			return errors.New("rsvp: this service cannot answer invitations")
		}
		_, err := inv.RSVP(ctx, id, answer)
		return err
	})
}

// invitationTitle is tui.Item.Invitation: the title of an invitation
// the owner can answer (a REQUEST), "" for none (a CANCEL or COUNTER is
// shown but not answered).
func invitationTitle(inv *store.Invitation) string {
	if inv == nil || inv.Method != calendar.MethodRequest {
		return ""
	}
	if inv.Summary == "" {
		return "(untitled event)"
	}
	return inv.Summary
}
