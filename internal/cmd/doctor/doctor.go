// Package doctor is `mailagent doctor`: it runs the checks of
// internal/app/doctor over the configuration and prints one line per
// check (or JSON); --repair salvages a damaged state database. Its tests are in internal/cmd/root
// (doctor_test.go), whose test binary holds every command's tests.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// DoctorOptions is what `mailagent doctor` needs: the streams, where the
// config is, the clock, the logins and the model (Env), and the flags.
// NewCmdDoctor fills the Factory's values in when the command runs (the
// global flags are parsed by then); init fills them in itself.
type DoctorOptions struct {
	IO         *iostreams.IOStreams
	ConfigPath string // --config ("": $MAILAGENT_CONFIG, then the default path)
	StateDir   string // --state-dir ("": the config's)
	Now        func() time.Time
	// Config is the Factory's lazily loaded config (--repair reads it).
	Config func() (*config.Config, error)
	// Env gives the checks the IMAP and SMTP logins and the model.
	Env appdoctor.Env

	JSON    bool
	Account string
	NoModel bool
	Repair  bool // salvage a damaged state database (repair.go)
	// Fix creates what doctor can create: a missing Sent or Drafts
	// folder (imapsync.Client.EnsureFolder). init sets it.
	Fix bool

	// Report, when set, receives the checks (init names the failed ones
	// in its next steps).
	Report *[]appdoctor.Check
}

// LiveEnv is the checks' way out for f: internal/app/wire's logins and
// f's model.
func LiveEnv(f *cmdutil.Factory) appdoctor.Env {
	return appdoctor.Env{IMAPOptions: wire.IMAPOptions, SMTPOptions: wire.SMTPOptions, NewModel: f.NewModel}
}

// NewCmdDoctor is `mailagent doctor`; runF, when not nil, runs instead of
// Run (tests of the flag parsing).
func NewCmdDoctor(f *cmdutil.Factory, runF func(context.Context, *DoctorOptions) error) *cobra.Command {
	opts := &DoctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, the servers and the model, one line per check",
		Long: `doctor checks that the config parses, that secrets resolve (without
showing them), that IMAP and SMTP accept the login over verified TLS, that
the mailbox, Drafts and Sent folders exist, that the model answers a
structured-output request, and that the state directory is usable. It
reads the headers of the newest messages to find the authserv-id your
server writes in Authentication-Results, and checks accounts.authserv_id
against it: without it no sender is authenticated and nothing is sent
automatically.

With --fix it also creates what is missing and can be created: the Sent
and Drafts folders of a new account (Courier-IMAP creates them only when a
client first uses them), under the server's namespace ("INBOX.Sent"). It
never takes the watched mailbox for either.

Exit codes: 0 every check passed (warnings allowed); 2 the config does not
parse; 5 some check failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.IO, opts.ConfigPath, opts.StateDir = f.IOStreams, f.ConfigPath, f.StateDir
			opts.Now, opts.Config, opts.Env = f.Now, f.Config, LiveEnv(f)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the checks as a JSON array")
	cmd.Flags().StringVar(&opts.Account, "account", "", "only this account")
	cmd.Flags().BoolVar(&opts.NoModel, "no-model", false, "skip the model round trip (costs one small call)")
	cmd.Flags().BoolVar(&opts.Fix, "fix", false, "create the missing Sent and Drafts folders")
	addRepairFlag(cmd, opts)
	return cmd
}

// Run runs the checks and prints them to opts.IO.Out (or, with Repair,
// salvages the state database). It returns cmdutil.ErrPartial when a
// check failed, and a usage error when the config does not load.
func Run(ctx context.Context, opts *DoctorOptions) error {
	if opts.Repair {
		return repairRun(opts)
	}
	cfg, file, err := config.Load(opts.ConfigPath)
	if err != nil {
		PrintChecks(opts.IO.Out, appdoctor.ConfigFailed(err), opts.JSON)
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: errors.New("the configuration does not load")}
	}
	if opts.StateDir != "" {
		cfg.OverrideStateDir(opts.StateDir)
	}
	accounts, err := cmdutil.PickAccounts(cfg, opts.Account)
	if err != nil {
		return err
	}
	checks := appdoctor.Run(ctx, opts.Env, cfg, file, accounts, opts.Now(), appdoctor.Options{Fix: opts.Fix, NoModel: opts.NoModel})
	PrintChecks(opts.IO.Out, checks, opts.JSON)
	if opts.Report != nil {
		*opts.Report = checks
	}
	if appdoctor.Failed(checks) {
		return cmdutil.ErrPartial
	}
	return nil
}

// PrintChecks writes the doctor's report: one line per check (and its
// fix), or the JSON array.
func PrintChecks(w io.Writer, checks []appdoctor.Check, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(appdoctor.ToChecksJSON(checks))
		return
	}
	for _, c := range checks {
		// Details carry server text (greetings, error replies, folder
		// names): sanitised like every untrusted string on a terminal.
		line := fmt.Sprintf("%-4s  %s", strings.ToUpper(c.Status), termsafe.Line(c.Name))
		if c.Detail != "" {
			line += ": " + termsafe.Line(c.Detail)
		}
		fmt.Fprintln(w, line)
		if c.Fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", termsafe.Line(c.Fix))
		}
	}
}
