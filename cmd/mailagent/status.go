package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// StatusOptions are the flags of `mailagent status`.
type StatusOptions struct{ JSON bool }

func newStatusCmd(f *Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Is a watcher running; messages by state; today's auto-sends and tokens",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return statusRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

func statusRun(ctx context.Context, f *Factory, opts *StatusOptions) error {
	svc, closeSvc, err := f.Service(ctx, false)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	s, err := svc.Status(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(f.Stdout, toStatusJSON(&s))
	}
	if s.Watcher {
		fmt.Fprintf(f.Stdout, "watcher running (pid %d, since %s)\n", s.PID, s.Started.Format("2006-01-02 15:04"))
		for _, a := range s.Accounts {
			line := fmt.Sprintf("  %s: %s", termsafe.Line(a.Name), termsafe.Line(a.State))
			if !a.LastSync.IsZero() {
				line += ", last sync " + a.LastSync.Format("15:04:05")
			}
			if a.Error != "" {
				line += ", error: " + termsafe.Line(a.Error)
				if !a.ErrorSince.IsZero() {
					line += " (since " + a.ErrorSince.Format("2006-01-02 15:04:05") + ")"
				}
			}
			if a.CopiesMissing > 0 {
				line += fmt.Sprintf(", %s waiting for a retry (%s)", pluralWord(a.CopiesMissing, "IMAP copy", "IMAP copies"), termsafe.Line(a.CopyError))
			}
			fmt.Fprintln(f.Stdout, line)
		}
	} else {
		fmt.Fprintln(f.Stdout, "no watcher running (start one with: mailagent watch)")
		if s.PID != 0 {
			// Through the socket of another holder (api.ServeHeld).
			stateDir := ""
			if cfg, err := f.Config(); err == nil {
				stateDir = cfg.StateDir
			}
			who := api.HolderName(stateDir, s.PID)
			fmt.Fprintf(f.Stdout, "%s holds the database and serves the other commands\n", termsafe.Line(who))
		}
	}
	var states []string
	for k, v := range s.Counts {
		states = append(states, fmt.Sprintf("%s %d", termsafe.Line(string(k)), v))
	}
	sort.Strings(states)
	if len(states) == 0 {
		states = append(states, "none yet")
	}
	fmt.Fprintf(f.Stdout, "messages: %s\n", strings.Join(states, ", "))
	fmt.Fprintf(f.Stdout, "auto-sent today: %d of %d\n", s.AutoSentToday, s.AutoSendCap)
	fmt.Fprintf(f.Stdout, "tokens today: %d in, %d out (%s)\n", s.TokensToday.TokensIn, s.TokensToday.TokensOut, plural(int(s.TokensToday.Calls), "call"))
	if u := s.TokensToday; u.ModelCalls > 0 {
		p95 := "over 60s"
		if d, ok := u.LatencyP95(); ok {
			p95 = "at most " + d.String()
		}
		fmt.Fprintf(f.Stdout, "model latency today: mean %s, p95 %s (%s)\n", u.LatencyMean(), p95, plural(int(u.ModelCalls), "model call"))
	}
	return nil
}
