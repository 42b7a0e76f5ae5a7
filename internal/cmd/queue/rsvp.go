package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

func newQueueRSVPCmd(f *cmdutil.Factory, runF func(context.Context, *QueueOptions) error) *cobra.Command {
	opts := &QueueOptions{Action: "rsvp"}
	return &cobra.Command{
		Use:   "rsvp ID accept|decline|tentative",
		Short: "Answer the calendar invitation of an item (iTIP REPLY to the organizer; the event on a writable calendar)",
		Long: `rsvp answers the invitation a queued message carries. It mails an iTIP
REPLY (METHOD:REPLY, your ATTENDEE with PARTSTAT ACCEPTED, DECLINED or
TENTATIVE, the invitation's UID, SEQUENCE and RECURRENCE-ID) to the
organizer, through the outbox: with policy.approval_delay it waits in the
undo window (mailagent queue cancel ID). Once it is sent, and when
[accounts.calendar] write = true on a CalDAV calendar, the event is stored
there with your answer.

The REPLY goes to the organizer only when the organizer is the sender
your mail server authenticated, or an address on that sender's domain;
otherwise rsvp refuses and says why. Invitations are never answered
without this command.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !actions.IsRSVPAnswer(strings.ToLower(args[1])) {
				return cmdutil.UsageErr("rsvp %s %q: answer accept, decline or tentative", args[0], args[1])
			}
			opts.ID, opts.Answer = args[0], strings.ToLower(args[1])
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), f, opts)
		},
	}
}

func queueRSVP(ctx context.Context, f *cmdutil.Factory, svc api.Service, opts *QueueOptions) error {
	inv, ok := svc.(api.Inviter)
	if !ok {
		return &cmdutil.UserError{Code: cmdutil.ExitFailure, Err: errors.New("rsvp: this service cannot answer invitations"), Hint: "check the configuration with: mailagent doctor"}
	}
	item, err := inv.RSVP(ctx, opts.ID, opts.Answer)
	if errors.Is(err, actions.ErrOrganizerUnverified) || (err != nil && strings.Contains(err.Error(), actions.ErrOrganizerUnverified.Error())) {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: err, Hint: "answer from your calendar client, or reply by mail"}
	}
	if err != nil {
		return err
	}
	switch item.Status {
	case store.QueueApproved:
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: %s reply scheduled to %s; undo with: mailagent queue cancel %s\n", termsafe.Line(item.ID),
			strings.ToLower(item.Invitation.RSVP), termsafe.Line(item.Invitation.Organizer), termsafe.Line(item.ID))
	default:
		fmt.Fprintf(f.IOStreams.ErrOut, "%s: %s reply sent to %s\n", termsafe.Line(item.ID), strings.ToLower(item.Invitation.RSVP), termsafe.Line(item.Invitation.Organizer))
	}
	if item.Invitation.CalendarPath != "" {
		fmt.Fprintf(f.IOStreams.ErrOut, "calendar: stored as %s\n", termsafe.Line(item.Invitation.CalendarPath))
	}
	if item.Invitation.CalendarError != "" {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: the calendar was not updated: %s\n", termsafe.Line(item.Invitation.CalendarError))
	}
	return nil
}
