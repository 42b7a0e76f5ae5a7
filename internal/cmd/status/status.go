// Package status is `mailagent status`: whether a watcher runs, the
// messages by state, and today's auto-sends, tokens and model latency.
// Its tests are in internal/cmd/root (status_test.go), whose test binary
// holds every command's tests.
package status

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/humantime"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// StatusOptions is what `mailagent status` needs: the streams, the
// Factory's lazy config, service and clock, and the flags.
type StatusOptions struct {
	IO      *iostreams.IOStreams
	Config  func() (*config.Config, error)
	Service func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	Now     func() time.Time

	JSON bool
}

// NewCmdStatus is `mailagent status`; runF, when not nil, runs instead of
// Run (tests of the flag parsing).
func NewCmdStatus(f *cmdutil.Factory, runF func(context.Context, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IOStreams, Config: f.Config, Service: f.Service, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Is a watcher running; messages by state; today's auto-sends and tokens",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The service is set by whoever assembles the tree, after
			// the commands are built: read it when the command runs.
			opts.Service = f.Service
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print as JSON")
	return cmd
}

// Run prints the status: whether a watcher runs, each account's state,
// the messages by state, today's auto-sends, tokens and model latency
// (as JSON with opts.JSON). An error opening the service is returned as
// is, before anything is printed.
func Run(ctx context.Context, opts *StatusOptions) error {
	out := opts.IO.Out
	svc, closeSvc, err := opts.Service(ctx, false)
	if err != nil {
		return err
	}
	defer func() { _ = closeSvc() }()
	s, err := svc.Status(ctx)
	if err != nil {
		return err
	}
	if !s.Watcher && len(s.Accounts) == 0 {
		// Without a watcher nobody syncs: every configured account says
		// so, rather than the list being empty.
		if cfg, err := opts.Config(); err == nil {
			for _, a := range cfg.Accounts {
				s.Accounts = append(s.Accounts, api.AccountStatus{Name: a.Name, State: NotWatched})
			}
		}
	}
	if opts.JSON {
		return cmdutil.WriteJSON(out, view.ToStatusJSON(&s))
	}
	if s.Watcher {
		fmt.Fprintf(out, "watcher running (pid %d, since %s)\n", s.PID, s.Started.Format("2006-01-02 15:04"))
		for _, a := range s.Accounts {
			line := fmt.Sprintf("  %s: %s", termsafe.Line(a.Name), termsafe.Line(a.State))
			if !a.LastSync.IsZero() {
				line += ", last sync " + a.LastSync.Format("15:04:05")
			}
			if !a.RetryAt.IsZero() {
				if in := a.RetryAt.Sub(opts.Now()); in > 0 {
					line += fmt.Sprintf(", next try in %s", in.Round(100*time.Millisecond))
				} else {
					line += ", trying again now"
				}
			}
			if a.Error != "" {
				line += ", error: " + termsafe.Line(a.Error)
				if !a.ErrorSince.IsZero() {
					line += " (since " + a.ErrorSince.Format("2006-01-02 15:04:05") + ")"
				}
			}
			if a.CopiesMissing > 0 {
				line += fmt.Sprintf(", %s waiting for a retry (%s)", cmdutil.PluralWord(a.CopiesMissing, "IMAP copy", "IMAP copies"), termsafe.Line(a.CopyError))
			}
			fmt.Fprintln(out, line)
			if a.ClaimNote != "" {
				fmt.Fprintf(out, "    %s\n", termsafe.Line(a.ClaimNote))
			}
			if a.HandledElsewhere > 0 {
				fmt.Fprintf(out, "    %s decided by another watcher of this account since the start\n", cmdutil.Plural(a.HandledElsewhere, "message"))
			}
			if a.LatencySamples > 0 {
				fmt.Fprintf(out, "    new mail reaches it in %s (median of the last %s; the last took %s)\n",
					humantime.Latency(a.LatencyMedian), cmdutil.Plural(a.LatencySamples, "message"), humantime.Latency(a.LatencyLast))
				if a.LatencyMedian >= slowPush {
					fmt.Fprintln(out, "    slow: the server seems to report new mail only when it polls; `mailagent doctor` names the fix")
				}
			}
		}
	} else {
		fmt.Fprintln(out, "no watcher running (start one with: mailagent watch)")
		for _, a := range s.Accounts {
			fmt.Fprintf(out, "  %s: %s\n", termsafe.Line(a.Name), termsafe.Line(a.State))
		}
		if s.PID != 0 {
			// Through the socket of another holder (api.ServeHeld).
			stateDir := ""
			if cfg, err := opts.Config(); err == nil {
				stateDir = cfg.StateDir
			}
			who := api.HolderName(stateDir, s.PID)
			fmt.Fprintf(out, "%s holds the database and serves the other commands\n", termsafe.Line(who))
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
	fmt.Fprintf(out, "messages: %s\n", strings.Join(states, ", "))
	fmt.Fprintf(out, "auto-sent today: %d of %d\n", s.AutoSentToday, s.AutoSendCap)
	// Calls counts the messages whose handling used the model; a message
	// may take several model calls (classify, draft, summary).
	fmt.Fprintf(out, "tokens today: %d in, %d out (%s)\n", s.TokensToday.TokensIn, s.TokensToday.TokensOut, cmdutil.Plural(int(s.TokensToday.Calls), "message"))
	if u := s.TokensToday; u.ModelCalls > 0 {
		p95 := "over 60s"
		if d, ok := u.LatencyP95(); ok {
			p95 = "at most " + d.String()
		}
		fmt.Fprintf(out, "model latency today: mean %s, p95 %s (%s)\n", MeanLatency(u), p95, cmdutil.Plural(int(u.ModelCalls), "model call"))
	}
	return nil
}

// slowPush is the median push latency status calls slow: a server that
// reports new mail to IDLE only when it polls (Courier without enhanced
// IDLE, Cyrus without idled: every 60 s) is far above it, one that pushes
// is far below.
const slowPush = 10 * time.Second

// NotWatched is an account's state in status when no watcher runs.
const NotWatched = "not watched (no watcher running)"

// MeanLatency is the day's mean model latency to the millisecond, and
// "under 1ms" for a model that answers faster (a mean of "0s" reads as
// a fault).
func MeanLatency(u store.UsageDay) string {
	if u.ModelCalls == 0 {
		return "-"
	}
	ms := float64(u.LatencyMS) / float64(u.ModelCalls)
	if ms < 1 {
		return "under 1ms"
	}
	return (time.Duration(ms * float64(time.Millisecond))).Round(time.Millisecond).String()
}
