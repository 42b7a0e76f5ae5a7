package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// Check is one line of the doctor's report (internal/app/doctor runs the
// checks).
type Check = doctor.Check

// DoctorOptions are the flags of `mailagent doctor`.
type DoctorOptions struct {
	JSON    bool
	Account string
	NoModel bool
	Repair  bool // salvage a damaged state database (doctor_repair.go)
	// Fix creates what doctor can create: a missing Sent or Drafts
	// folder (imapsync.Client.EnsureFolder). init sets it.
	Fix bool

	// report, when set, receives the checks (init names the failed ones
	// in its next steps).
	report *[]doctor.Check
}

func newDoctorCmd(f *Factory, runF func(context.Context, *DoctorOptions) error) *cobra.Command {
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
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return doctorRun(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the checks as a JSON array")
	cmd.Flags().StringVar(&opts.Account, "account", "", "only this account")
	cmd.Flags().BoolVar(&opts.NoModel, "no-model", false, "skip the model round trip (costs one small call)")
	cmd.Flags().BoolVar(&opts.Fix, "fix", false, "create the missing Sent and Drafts folders")
	addRepairFlag(cmd, opts)
	return cmd
}

func doctorRun(ctx context.Context, f *Factory, opts *DoctorOptions) error {
	if opts.Repair {
		return repairRun(f, opts)
	}
	cfg, file, err := config.Load(f.ConfigPath)
	if err != nil {
		printChecks(f.Stdout, doctor.ConfigFailed(err), opts.JSON)
		return &UserError{Code: ExitUsage, Err: errors.New("the configuration does not load")}
	}
	if f.StateDir != "" {
		cfg.OverrideStateDir(f.StateDir)
	}
	accounts, err := cmdutil.PickAccounts(cfg, opts.Account)
	if err != nil {
		return err
	}
	env := doctor.Env{IMAPOptions: IMAPOptions, SMTPOptions: SMTPOptions, NewModel: f.NewModel}
	checks := doctor.Run(ctx, env, cfg, file, accounts, f.Now(), doctor.Options{Fix: opts.Fix, NoModel: opts.NoModel})
	printChecks(f.Stdout, checks, opts.JSON)
	if opts.report != nil {
		*opts.report = checks
	}
	if doctor.Failed(checks) {
		return errPartial
	}
	return nil
}

// printChecks writes the doctor's report: one line per check (and its
// fix), or the JSON array.
func printChecks(w io.Writer, checks []doctor.Check, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(doctor.ToChecksJSON(checks))
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
