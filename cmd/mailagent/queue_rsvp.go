package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent/invite"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/config"
)

// Busy gives the agent an account's busy times in window (an
// invitation's conflicts); invite.BusyCalendar.
func (c agentCalendar) Busy(ctx context.Context, account string, window calendar.Interval, exceptUID string) ([]calendar.Interval, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() {
		return nil, nil
	}
	prefs, err := schedulingPrefs(c.cfg.Scheduling)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	src := calendarSource(a)
	src.SkipUID = exceptUID
	busy, err := src.Busy(ctx, window, prefs.Location)
	if err != nil {
		return nil, calendarErr(a, err)
	}
	return busy, nil
}

// PutEvent stores an event on the account's calendar when
// [accounts.calendar] write = true and it is CalDAV, conditionally (etag
// "": create only; else replace only that version); invite.EventWriter.
func (c agentCalendar) PutEvent(ctx context.Context, account, uid string, data []byte, etag string) (calendar.Stored, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() || !a.Calendar.Write || a.Calendar.Kind == config.CalendarICS {
		return calendar.Stored{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	st, err := calendarSource(a).PutEvent(ctx, uid, data, etag)
	if errors.Is(err, calendar.ErrPrecondition) {
		return st, fmt.Errorf("account %q calendar: %w", a.Name, err) // the agent queues it for the owner
	}
	if err != nil {
		return st, calendarErr(a, err)
	}
	return st, nil
}

// The calendar sides the agent looks for (by type assertion, so a
// signature drift would silently switch them off).
var (
	_ invite.EventWriter  = agentCalendar{}
	_ invite.EventDeleter = agentCalendar{}
	_ invite.BusyCalendar = agentCalendar{}
	_ invite.EventReader  = agentCalendar{}
)

// GetEvent reads the event mailagent stores for uid on the account's
// writable calendar, with its ETag and the owner's zone (floating
// times); invite.EventReader. A zero Stored: no writable calendar.
func (c agentCalendar) GetEvent(ctx context.Context, account, uid string) ([]byte, calendar.Stored, *time.Location, error) {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() || !a.Calendar.Write || a.Calendar.Kind == config.CalendarICS {
		return nil, calendar.Stored{}, nil, nil
	}
	loc := time.UTC
	if prefs, err := schedulingPrefs(c.cfg.Scheduling); err == nil && prefs.Location != nil {
		loc = prefs.Location
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	data, st, err := calendarSource(a).GetEvent(ctx, uid)
	if errors.Is(err, calendar.ErrEventGone) {
		return nil, st, loc, fmt.Errorf("account %q calendar: %w", a.Name, err)
	}
	if err != nil {
		return nil, st, loc, calendarErr(a, err)
	}
	return data, st, loc, nil
}

// DeleteEvent removes an event mailagent wrote, in the version etag
// names; invite.EventDeleter.
func (c agentCalendar) DeleteEvent(ctx context.Context, account, uid, path, etag string) error {
	a, ok := c.cfg.Account(account)
	if !ok || !a.Calendar.Configured() || !a.Calendar.Write || a.Calendar.Kind == config.CalendarICS {
		return fmt.Errorf("account %q calendar: %w", account, calendar.ErrReadOnly)
	}
	ctx, cancel := context.WithTimeout(ctx, calendarTimeout(a))
	defer cancel()
	if err := calendarSource(a).DeleteEvent(ctx, uid, path, etag); err != nil {
		return fmt.Errorf("account %q calendar: %w", a.Name, err)
	}
	return nil
}

func calendarTimeout(a *config.Account) time.Duration {
	if t := a.Calendar.Timeout.D(); t > 0 {
		return t
	}
	return 30 * time.Second
}

func newQueueRSVPCmd(f *Factory, runF func(context.Context, *QueueOptions) error) *cobra.Command {
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
			if _, ok := invite.RSVPAnswers[strings.ToLower(args[1])]; !ok {
				return usageErr("rsvp %s %q: answer accept, decline or tentative", args[0], args[1])
			}
			opts.ID, opts.Answer = args[0], strings.ToLower(args[1])
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return queueRun(cmd.Context(), f, opts)
		},
	}
}

func queueRSVP(ctx context.Context, f *Factory, svc api.Service, opts *QueueOptions) error {
	inv, ok := svc.(api.Inviter)
	if !ok {
		return &UserError{Code: ExitFailure, Err: errors.New("rsvp: this service cannot answer invitations"), Hint: "check the configuration with: mailagent doctor"}
	}
	item, err := inv.RSVP(ctx, opts.ID, opts.Answer)
	if errors.Is(err, invite.ErrOrganizerUnverified) || (err != nil && strings.Contains(err.Error(), invite.ErrOrganizerUnverified.Error())) {
		return &UserError{Code: ExitUsage, Err: err, Hint: "answer from your calendar client, or reply by mail"}
	}
	if err != nil {
		return err
	}
	switch item.Status {
	case store.QueueApproved:
		fmt.Fprintf(f.Stderr, "%s: %s reply scheduled to %s; undo with: mailagent queue cancel %s\n", termsafe.Line(item.ID),
			strings.ToLower(item.Invitation.RSVP), termsafe.Line(item.Invitation.Organizer), termsafe.Line(item.ID))
	default:
		fmt.Fprintf(f.Stderr, "%s: %s reply sent to %s\n", termsafe.Line(item.ID), strings.ToLower(item.Invitation.RSVP), termsafe.Line(item.Invitation.Organizer))
	}
	if item.Invitation.CalendarPath != "" {
		fmt.Fprintf(f.Stderr, "calendar: stored as %s\n", termsafe.Line(item.Invitation.CalendarPath))
	}
	if item.Invitation.CalendarError != "" {
		fmt.Fprintf(f.Stderr, "warning: the calendar was not updated: %s\n", termsafe.Line(item.Invitation.CalendarError))
	}
	return nil
}
