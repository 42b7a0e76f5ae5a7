// Package initcmd is `mailagent init` ("init" is a Go keyword): the
// setup wizard. It asks through the Factory's one Prompter, tests the
// servers through internal/app/setup, writes the config with
// internal/initcfg and runs doctor (internal/cmd/doctor) on it.
package initcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/app/setup"
	"github.com/mailagent/mailagent/internal/autoconfig"
	"github.com/mailagent/mailagent/internal/cmd/doctor"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/initcfg"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/prompter"
	"github.com/mailagent/mailagent/internal/termsafe"
)

// InitOptions is what `mailagent init` needs: the streams, the one
// Prompter, where the config goes, what doctor runs with afterwards, the
// way out (Net), and the flags. NewCmdInit fills the Factory's values in
// when the command runs (the global flags are parsed by then).
type InitOptions struct {
	IO         *iostreams.IOStreams
	Prompter   func() prompter.Prompter
	ConfigPath string // --config ("": $MAILAGENT_CONFIG, then the default path)
	StateDir   string // --state-dir, for the doctor run after writing
	Now        func() time.Time
	// Doctor is the checks' way out (the logins and the model) for the
	// doctor run after writing.
	Doctor appdoctor.Env

	Force          bool // replace an existing config file
	NoDoctor       bool // do not run doctor after writing
	NonInteractive bool // take every answer from flags; never read stdin

	Email    string
	Name     string // display name
	Account  string // account name; default from the provider or domain
	Provider string // a preset ID (gmail, fastmail, …), or "auto" to discover

	// Exactly one secret source in non-interactive mode; in interactive
	// mode a set one skips the question.
	PasswordCmd    string
	PasswordEnv    string
	OAuth2TokenCmd string

	APIKeyEnv string
	APIKeyCmd string
	Model     string
	Mode      string // review | auto

	// The model server, with --non-interactive (the interview asks):
	// "gemini" (the default), a local-server preset (llm.Presets: ollama,
	// llamacpp, vllm, lmstudio, openai) or "other" with LLMBaseURL.
	LLM              string
	LLMBaseURL       string
	StructuredOutput string // json_schema | json_object | prompt; default the preset's

	// Net is how init reaches the outside world; the zero value is the
	// live network. Tests set it through NewCmdInit's runF.
	Net InitNet
}

// InitNet is init's way out: server discovery, the early connect test
// (no login) and the login test. Zero fields are the live ones.
type InitNet struct {
	// Discovery configures autoconfig.Discover; the zero value uses the
	// real network with autoconfig's short per-source timeouts. Tests
	// point it at httptest servers and a fake SRV resolver.
	Discovery autoconfig.Options
	// Probe logs in to one server; nil: setup.Probe.
	Probe serverProbe
	// Reach connects to one server without logging in; nil: the live
	// reach, bounded by ReachTimeout.
	Reach serverReach
	// ReachTimeout bounds one live reach: connect, TLS, greeting and
	// capabilities (0: defaultReachTimeout). A server that says nothing
	// in that time is reported as "no answer".
	ReachTimeout time.Duration
}

// probe is n's login test.
func (n InitNet) probe() serverProbe {
	if n.Probe != nil {
		return n.Probe
	}
	return setup.Probe
}

// reach is n's connect test.
func (n InitNet) reach() serverReach {
	if n.Reach != nil {
		return n.Reach
	}
	d := n.ReachTimeout
	if d <= 0 {
		d = defaultReachTimeout
	}
	return func(ctx context.Context, kind string, ep config.Endpoint) error { return setup.Reach(ctx, kind, ep, d) }
}

// Defaults the wizard proposes.
const (
	defaultAPIKeyEnv = "GEMINI_API_KEY"
	defaultModel     = "gemini-2.5-flash"
)

// NewCmdInit is `mailagent init`; runF, when not nil, runs instead of
// the wizard (tests: of the flag parsing, or giving it their Net).
func NewCmdInit(f *cmdutil.Factory, runF func(context.Context, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the config file with an interactive setup wizard",
		Long: `init asks for your address and name, proposes the server settings (a
built-in preset for Gmail, Fastmail, iCloud, Outlook/Office 365 and Proton
Bridge, or autodiscovery: Mozilla autoconfig, the Thunderbird ISPDB and DNS
SRV records), and tests each server as soon as it is entered: connect,
TLS and greeting, no login yet (for a self-hosted server whose certificate
the system does not trust, it asks for the CA file). It asks where your
password lives (a command such as "pass show mail/you", an environment
variable, the system keyring, or an OAuth2 token command), then tests the
IMAP and SMTP logins at once, and asks where the Gemini API key lives. It writes the
config file with mode 0600, then runs doctor, and suggests watch only when
doctor passes.

Answers other mail clients use are understood: ssl for tls,
imap.example.com:993 or imaps://imap.example.com in a host field.

The file goes to --config, else $MAILAGENT_CONFIG, else
$XDG_CONFIG_HOME/mailagent/config.toml. An existing file is replaced only
with --force. Prompts go to stderr; the path of the written file goes to
stdout.

For scripts: --non-interactive with --email, --name and one of
--password-cmd, --password-env or --oauth2-token-cmd. The model is Gemini
unless --llm names a local server (ollama, llamacpp, vllm, lmstudio), the
OpenAI cloud, or "other" with --llm-base-url.

Exit codes: 0 written (and doctor passed); 2 bad flags or input, the file
exists, or input ended early (nothing is written); 5 written, but doctor
found problems.`,
		Example: `  mailagent init
  mailagent init --non-interactive --email ada@fastmail.com --name "Ada Lovelace" \
      --password-cmd "pass show mail/fastmail"
  mailagent init --non-interactive --email ada@example.org --name "Ada Lovelace" \
      --password-env MAIL_PASS --llm ollama --model qwen2.5:7b`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			opts.IO, opts.Prompter, opts.Now = f.IOStreams, f.Prompter, f.Now
			opts.ConfigPath, opts.StateDir = f.ConfigPath, f.StateDir
			opts.Doctor = doctor.LiveEnv(f)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return initRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Force, "force", false, "replace an existing config file")
	fl.BoolVar(&opts.NoDoctor, "no-doctor", false, "do not run mailagent doctor after writing")
	fl.BoolVar(&opts.NonInteractive, "non-interactive", false, "ask nothing: take the answers from flags (needs --email, --name and a password source)")
	fl.StringVar(&opts.Email, "email", "", "your email address")
	fl.StringVar(&opts.Name, "name", "", "your display name")
	fl.StringVar(&opts.Account, "account", "", "short account name (default: the provider, or the domain's first label)")
	fl.StringVar(&opts.Provider, "provider", "", "server settings: "+strings.Join(presetIDs(), ", ")+", or auto (discover; the default for unknown domains)")
	fl.StringVar(&opts.PasswordCmd, "password-cmd", "", `command that prints the password, e.g. "pass show mail/you"`)
	fl.StringVar(&opts.PasswordEnv, "password-env", "", "environment variable that holds the password")
	fl.StringVar(&opts.OAuth2TokenCmd, "oauth2-token-cmd", "", "command that prints an OAuth2 access token (see docs/OAUTH2.md)")
	fl.StringVar(&opts.APIKeyEnv, "api-key-env", "", "environment variable that holds the Gemini API key (default "+defaultAPIKeyEnv+")")
	fl.StringVar(&opts.APIKeyCmd, "api-key-cmd", "", "command that prints the Gemini API key")
	fl.StringVar(&opts.Model, "model", "", "model name (default "+defaultModel+" for Gemini, the preset's example for a local server)")
	fl.StringVar(&opts.LLM, "llm", "", "model server with --non-interactive: gemini (the default), "+strings.Join(llmPresetNames(), ", ")+", or other (with --llm-base-url)")
	fl.StringVar(&opts.LLMBaseURL, "llm-base-url", "", "API root of an OpenAI-compatible server (default: the preset's, e.g. http://localhost:11434/v1)")
	fl.StringVar(&opts.StructuredOutput, "structured-output", "", "with --llm: json_schema, json_object or prompt (default: what the preset supports)")
	fl.StringVar(&opts.Mode, "mode", "", "policy mode: review (never sends without approval; the default) or auto")
	return cmd
}

// validate checks the flags alone; answers typed later are checked as they
// come.
func (o *InitOptions) validate() error {
	if o.Provider != "" && o.Provider != "auto" && !slices.Contains(presetIDs(), o.Provider) {
		return cmdutil.UsageErr("--provider %q is not one of %s, auto", o.Provider, strings.Join(presetIDs(), ", "))
	}
	if o.Mode != "" && o.Mode != config.ModeReview && o.Mode != config.ModeAuto {
		return cmdutil.UsageErr("--mode %q is not one of review, auto", o.Mode)
	}
	if n := initCountSet(o.PasswordCmd, o.PasswordEnv, o.OAuth2TokenCmd); n > 1 {
		return cmdutil.UsageErr("--password-cmd, --password-env and --oauth2-token-cmd: give at most one")
	}
	if o.APIKeyEnv != "" && o.APIKeyCmd != "" {
		return cmdutil.UsageErr("--api-key-env and --api-key-cmd: give at most one")
	}
	if o.PasswordEnv != "" && !initEnvName().MatchString(o.PasswordEnv) {
		return cmdutil.UsageErr("--password-env %q is not an environment variable name", o.PasswordEnv)
	}
	if o.APIKeyEnv != "" && !initEnvName().MatchString(o.APIKeyEnv) {
		return cmdutil.UsageErr("--api-key-env %q is not an environment variable name", o.APIKeyEnv)
	}
	if err := o.validateLLM(); err != nil {
		return err
	}
	if o.Email != "" {
		if err := checkEmail(o.Email); err != nil {
			return cmdutil.UsageErr("--email: %v", err)
		}
	}
	if o.Account != "" {
		if err := checkAccountName(o.Account); err != nil {
			return cmdutil.UsageErr("--account: %v", err)
		}
	}
	if !o.NonInteractive {
		return nil
	}
	var missing []string
	if o.Email == "" {
		missing = append(missing, "--email")
	}
	if strings.TrimSpace(o.Name) == "" {
		missing = append(missing, "--name")
	}
	if initCountSet(o.PasswordCmd, o.PasswordEnv, o.OAuth2TokenCmd) == 0 {
		missing = append(missing, "one of --password-cmd, --password-env, --oauth2-token-cmd")
	}
	if len(missing) > 0 {
		return cmdutil.UsageErr("--non-interactive needs %s", strings.Join(missing, ", "))
	}
	return nil
}

// validateLLM checks --llm, --llm-base-url and --structured-output.
func (o *InitOptions) validateLLM() error {
	if o.LLM == "" && o.LLMBaseURL == "" && o.StructuredOutput == "" {
		return nil
	}
	if !o.NonInteractive {
		return cmdutil.UsageErr("--llm, --llm-base-url and --structured-output go with --non-interactive (the interview asks for them)")
	}
	names := append(append([]string{"gemini"}, llmPresetNames()...), "other")
	if o.LLM != "" && !slices.Contains(names, o.LLM) {
		return cmdutil.UsageErr("--llm %q is not one of %s", o.LLM, strings.Join(names, ", "))
	}
	if o.LLM == "" || o.LLM == "gemini" {
		if o.LLMBaseURL != "" || o.StructuredOutput != "" {
			return cmdutil.UsageErr("--llm-base-url and --structured-output are for an OpenAI-compatible server: add --llm %s|other", strings.Join(llmPresetNames(), "|"))
		}
		return nil
	}
	if o.LLM == "other" && o.LLMBaseURL == "" {
		return cmdutil.UsageErr("--llm other needs --llm-base-url (the server's API root, e.g. https://gateway.example/v1)")
	}
	if o.LLMBaseURL != "" {
		if err := checkBaseURL(o.LLMBaseURL); err != nil {
			return cmdutil.UsageErr("--llm-base-url: %v", err)
		}
	}
	if o.StructuredOutput != "" {
		if err := setup.CheckStructuredOutput(o.StructuredOutput); err != nil {
			return cmdutil.UsageErr("--structured-output: %v", err)
		}
	}
	return nil
}

// llmPresetNames are the OpenAI-compatible servers init knows, in menu
// order.
func llmPresetNames() []string {
	names := make([]string, 0, len(setup.LLMPresets()))
	for _, p := range setup.LLMPresets() {
		names = append(names, p.Name)
	}
	return names
}

func initCountSet(vals ...string) int {
	n := 0
	for _, v := range vals {
		if v != "" {
			n++
		}
	}
	return n
}

var initEnvName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// The setup the wizard fills in and internal/initcfg renders. Aliases keep
// the command's names short; the types and their rules live in initcfg.
type (
	initSetup    = initcfg.Setup
	initServer   = initcfg.Server
	secretChoice = initcfg.Secret
)

// Secret kinds, one per config key (see initcfg).
const (
	secretCmd     = initcfg.SecretCmd
	secretEnv     = initcfg.SecretEnv
	secretKeyring = initcfg.SecretKeyring
	secretOAuth2  = initcfg.SecretOAuth2
	secretLiteral = initcfg.SecretLiteral
)

// initRun is the wizard: the answers (flags or interview), the keyring,
// the file, then doctor and the next steps.
func initRun(ctx context.Context, opts *InitOptions) error {
	stdout, stderr := opts.IO.Out, opts.IO.ErrOut
	path, err := initPath(opts.ConfigPath)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil && !opts.Force {
		return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("config %s already exists", path),
			Hint: "pass --force to replace it, or --config FILE to write another one"}
	}

	var s *initSetup
	var data []byte
	if opts.NonInteractive {
		s, err = fromFlags(ctx, stderr, opts)
		if err != nil {
			return err
		}
		data = initcfg.Render(s)
		if _, perr := config.Parse(data, path, 0o600); perr != nil {
			return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("the settings do not make a valid config:\n%s", initProblems(perr)),
				Hint: "fix the flags named above, or run `mailagent init` interactively"}
		}
	} else {
		p := opts.Prompter()
		s, data, err = interview(ctx, p, opts, path)
		if errors.Is(err, prompter.ErrInputEnded) {
			return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("%w: nothing was written", err),
				Hint: "run `mailagent init` in a terminal, or script it with --non-interactive --email … --name … --password-cmd …"}
		}
		if err != nil {
			return err
		}
	}

	if err := setup.StoreInKeyring(s); err != nil {
		return &cmdutil.UserError{Code: cmdutil.ExitFailure, Err: err,
			Hint: "run `mailagent init` again and choose another source for it"}
	}
	data = initAuthserv(ctx, s, data, path, !opts.NoDoctor)
	backup, err := initcfg.Write(path, data, opts.Force)
	if err != nil {
		setup.ForgetKeyring(s)
		if errors.Is(err, fs.ErrExist) {
			return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("config %s already exists", path), Hint: "pass --force to replace it"}
		}
		return fmt.Errorf("write config %s: %w", path, err)
	}
	fmt.Fprintln(stdout, path)
	fmt.Fprintf(stderr, "\nWrote %s (mode 0600).\n", path)
	if backup != "" {
		fmt.Fprintf(stderr, "The file it replaced is kept as %s.\n", backup)
	}

	var doctorErr error
	var checks []appdoctor.Check
	if !opts.NoDoctor {
		fmt.Fprintln(stderr, "\nChecking it with `mailagent doctor`:")
		checks, doctorErr = runDoctorFor(ctx, opts, path)
		if ctx.Err() != nil {
			return doctorErr
		}
	}
	printNextSteps(stderr, s, path, opts.ConfigPath != "", !opts.NoDoctor, checks)
	return doctorErr
}

// initPath is where the config goes: --config, $MAILAGENT_CONFIG, then
// the default path. Unlike config.Find it does not need the file to exist.
func initPath(explicit string) (string, error) {
	p := explicit
	if p == "" {
		p = os.Getenv(config.EnvConfig)
	}
	if p == "" {
		d, err := config.DefaultPath()
		if err != nil {
			return "", &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: err, Hint: "pass --config FILE"}
		}
		p = d
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("config path %s: %w", p, err)}
	}
	return abs, nil
}

// runDoctorFor runs doctor on the new file with its report on stderr, so
// that stdout carries only the path written, and returns its checks. It
// runs as `doctor --fix`: a new account's missing Sent and Drafts folders
// are created (never the watched mailbox taken for them).
func runDoctorFor(ctx context.Context, opts *InitOptions, path string) ([]appdoctor.Check, error) {
	var checks []appdoctor.Check
	err := doctor.Run(ctx, &doctor.DoctorOptions{
		IO:         iostreams.New(opts.IO.In, opts.IO.ErrOut, opts.IO.ErrOut),
		ConfigPath: path, StateDir: opts.StateDir, Now: opts.Now, Env: opts.Doctor,
		Report: &checks, Fix: true,
	})
	return checks, err
}

// printNextSteps tells what to run next; withFlag adds --config PATH to
// the commands (the file is not where they look by themselves). watch is
// suggested only after a passing doctor: when a check failed, the steps
// are its fix and doctor again.
func printNextSteps(w io.Writer, s *initSetup, path string, withFlag, doctorRan bool, checks []appdoctor.Check) {
	cfgFlag := ""
	if withFlag {
		cfgFlag = " --config " + initShellQuote(path)
	}
	var failed []appdoctor.Check
	for _, c := range checks {
		if c.Status == "fail" {
			failed = append(failed, c)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nNot ready yet: doctor found %s.\n", cmdutil.Plural(len(failed), "problem"))
		for _, c := range failed {
			fmt.Fprintf(w, "  - %s\n      fix: %s\n", termsafe.Line(c.Name), termsafe.Line(initDefault(c.Fix, "see the line above")))
		}
		fmt.Fprintf(w, "Then run `mailagent%s doctor` again.\n", cfgFlag)
		return
	}
	fmt.Fprintln(w, "\nNext steps:")
	if s.APIKeyCmd == "" && s.APIKeyEnv != "" && os.Getenv(s.APIKeyEnv) == "" {
		what := "your Gemini API key (https://aistudio.google.com/apikey)"
		if s.LLMProvider != "" {
			what = "your model server's API key"
		}
		fmt.Fprintf(w, "  export %s=…            # %s\n", s.APIKeyEnv, what)
	}
	if s.Secret.Kind == secretEnv && os.Getenv(s.Secret.Value) == "" {
		fmt.Fprintf(w, "  export %s=…            # your mail password\n", s.Secret.Value)
	}
	if !doctorRan {
		fmt.Fprintf(w, "  mailagent%s doctor                        # test the servers and the model first\n", cfgFlag)
	}
	fmt.Fprintf(w, "  mailagent%s triage --dry-run --limit 20   # see what it would do with your latest mail\n", cfgFlag)
	if doctorRan {
		fmt.Fprintf(w, "  mailagent%s watch                         # handle new mail as it arrives\n", cfgFlag)
	} else {
		fmt.Fprintf(w, "  mailagent%s watch                         # once doctor passes: handle new mail as it arrives\n", cfgFlag)
	}
	switch {
	case s.Mode == config.ModeReview:
		fmt.Fprintln(w, "  Mode is review: nothing is sent until you approve it.")
	case s.AuthservID == "":
		// Auto mode asked for, but no sender can be authenticated yet:
		// say it here, not only as a commented key in the file.
		fmt.Fprintln(w, "  Mode is auto, but authserv_id is not set: no sender can be authenticated, so nothing")
		fmt.Fprintln(w, "  is sent automatically yet (every reply waits for you). Set accounts.authserv_id to the id")
		fmt.Fprintf(w, "  at the top of your mail's Authentication-Results; `mailagent%s doctor` suggests it once mail has arrived.\n", cfgFlag)
	}
}

// shellQuote quotes p for a POSIX shell when it needs it.
func initShellQuote(p string) string {
	if p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("/._-+:@", r))
	}) < 0 {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}
