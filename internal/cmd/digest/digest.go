// Package digest is `mailagent digest`: the report of what the agent did
// in a period, printed or mailed to the owner. internal/app/digest
// builds and formats it, internal/app/digestmail sends it; this package
// only wires and prints. Its tests are in internal/cmd/root (digest_test.go,
// digest_remote_test.go), whose test binary holds every command's tests.
package digest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/digest"
	"github.com/mailagent/mailagent/internal/app/digestmail"
	"github.com/mailagent/mailagent/internal/app/view"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

// DigestOptions are the flags of `mailagent digest`.
type DigestOptions struct {
	IO        *iostreams.IOStreams
	Config    func() (*config.Config, error)
	Now       func() time.Time
	Service   func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	OpenStore func(readOnly bool) (*store.Store, error)
	// Remote: --remote is set; the report comes from that watcher
	// (Service) instead of this machine's database.
	Remote bool

	Since string
	JSON  bool
	Send  bool
}

// NewCmdDigest is `mailagent digest`; runF, when not nil, runs instead of
// Run (after the flags are checked).
func NewCmdDigest(f *cmdutil.Factory, runF func(context.Context, *DigestOptions) error) *cobra.Command {
	opts := &DigestOptions{IO: f.IOStreams, Config: f.Config, OpenStore: f.OpenStore}
	cmd := &cobra.Command{
		Use:   "digest",
		Short: "What the agent did: sent, waiting, archived, needing review, and what it cost",
		Long: `digest reports what the agent did in a period: the replies it sent on its
own (recipients and subjects), what is queued and still waiting for you,
what it archived or ignored (by category), what needs review, and the
model's tokens with their estimated cost.

With --send the report is mailed to you (digest.to, default the account's
address) through the outbox (the watcher's when one runs) and the
account's SMTP server. The mail carries the
X-Mailagent-Digest header and mailagent's own loop-guard header, so
mailagent never processes its own digest. digest.schedule = "daily 08:00"
makes watch send one per day, once per period even across restarts.

Exit codes: 0 done; 2 bad flags or config; 3 the SMTP server could not be
reached (--send); 4 the state database is in use.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := cmdutil.ParseSince(opts.Since, time.Now()); err != nil || strings.TrimSpace(opts.Since) == "" {
				return cmdutil.UsageErr("--since: %q is neither a duration (24h, 7d) nor a date (2026-01-02)", opts.Since)
			}
			if opts.JSON && opts.Send {
				return cmdutil.UsageErr("--json and --send do not go together: --send mails the plain-text report")
			}
			opts.Now, opts.Service = f.Now, f.Service
			opts.Remote = f.RemoteURL() != ""
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Since, "since", "24h", "the period: since a duration ago (24h, 7d) or a date (2026-01-02)")
	fl.BoolVar(&opts.JSON, "json", false, "the report as one JSON object on stdout")
	fl.BoolVar(&opts.Send, "send", false, "mail the report to the owner instead of printing it")
	return cmd
}

// Run builds the digest of opts.Since and prints it (text or --json) or,
// with Send, mails it to the owner; with Remote it reads the remote
// watcher's Service instead of this machine's database.
func Run(ctx context.Context, opts *DigestOptions) error {
	cfg, err := opts.Config()
	if err != nil && !opts.Remote {
		return err
	}
	if err != nil {
		// --remote needs no configuration here: the report comes from
		// that host's watcher (only the model's name for the cost is
		// then unknown).
		cfg, err = &config.Config{}, nil
	}
	now := opts.Now()
	since, _ := cmdutil.ParseSince(opts.Since, now)
	var src digest.Source = digestmail.NoState{}
	var svc api.Service
	switch {
	case opts.Send || opts.Remote:
		// --send goes through the outbox: the watcher's, or this
		// process's pipeline over the store (created when missing).
		// --remote reads (and sends through) that host's watcher.
		var closeSvc func() error
		svc, closeSvc, err = opts.Service(ctx, opts.Send)
		if err != nil {
			return err
		}
		defer func() { _ = closeSvc() }()
	default:
		if _, err := os.Stat(cmdutil.DBPath(cfg)); err == nil || !errors.Is(err, fs.ErrNotExist) {
			var closeSvc func() error
			svc, closeSvc, err = api.Open(ctx, cfg.StateDir, func() (*store.Store, error) { return opts.OpenStore(true) }, nil)
			if err != nil {
				return err
			}
			defer func() { _ = closeSvc() }()
		}
	}
	if svc != nil {
		src = digestmail.ServiceSource{Ctx: ctx, Svc: svc}
		if l, ok := svc.(*api.Local); ok {
			src = l.DB
		}
	}
	rep, err := digest.Build(src, since, now, cfg.LLM.Model)
	if err != nil {
		return err
	}
	switch {
	case opts.JSON:
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(toDigestJSON(rep)); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		return nil
	case opts.Send:
		m, ok := svc.(api.OwnMailer)
		if !ok {
			return fmt.Errorf("digest --send: %w", api.ErrNoActions)
		}
		id, to, err := digestmail.Send(ctx, cfg, m, rep, "manual", now)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "digest sent to %s (Message-ID <%s>)\n", to, id)
		return nil
	}
	return digest.Text(opts.IO.Out, rep)
}

func toDigestJSON(r *digest.Report) view.DigestJSON {
	j := view.DigestJSON{Since: r.Since, Until: r.Until, Processed: r.Processed,
		AutoSent: []view.DigestSendJSON{}, Scheduled: []view.DigestSendJSON{}, Waiting: []view.DigestWaitingJSON{}, NeedsReview: []view.DigestReviewJSON{},
		FollowupsDue: []view.DigestDueJSON{}, Archived: map[string]int{}, Ignored: map[string]int{}}
	for _, s := range r.AutoSent {
		j.AutoSent = append(j.AutoSent, view.DigestSendJSON{Account: s.Account, To: view.EmailsJSON(s.To), Subject: s.Subject, At: s.SentAt})
	}
	for _, s := range r.Scheduled {
		j.Scheduled = append(j.Scheduled, view.DigestSendJSON{Account: s.Account, To: view.EmailsJSON(s.To), Subject: s.Subject, At: s.SentAt})
	}
	for _, q := range r.Waiting {
		j.Waiting = append(j.Waiting, view.DigestWaitingJSON{ID: q.ID, Kind: q.Kind, Account: q.Account, From: view.ToAddressJSON(q.From), Subject: q.Subject, Since: q.Since, New: q.New})
	}
	for _, m := range r.NeedsReview {
		j.NeedsReview = append(j.NeedsReview, view.DigestReviewJSON{Message: view.ToKeyJSON(m.Key), From: view.ToAddressJSON(m.From), Subject: m.Subject, Error: m.Error})
	}
	for _, d := range r.FollowupsDue {
		j.FollowupsDue = append(j.FollowupsDue, view.DigestDueJSON{ID: d.ID, Account: d.Account, State: d.State,
			Correspondents: view.Strs(d.Correspondents), Subject: d.Subject, Deadline: d.Deadline, Nudges: d.Nudges})
	}
	for k, v := range r.Archived {
		j.Archived[k] = v
	}
	for k, v := range r.Ignored {
		j.Ignored[k] = v
	}
	j.Cost = view.ToCostJSON(r.Usage.Calls, r.Usage.TokensIn, r.Usage.TokensOut, r.Model, r.USD, r.PriceKnown)
	return j
}
