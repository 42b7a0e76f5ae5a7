package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/mail"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/zalando/go-keyring"
	"golang.org/x/term"

	"github.com/mailagent/mailagent/internal/autoconfig"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/netpolicy"
)

// InitOptions are the flags of `mailagent init`.
type InitOptions struct {
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
}

// autoconfigOptions configures server discovery. Tests replace it to point
// discovery at httptest servers and a fake SRV resolver; the default uses
// the real network with autoconfig's short per-source timeouts.
var autoconfigOptions = func() autoconfig.Options { return autoconfig.Options{} }

// Defaults the wizard proposes.
const (
	defaultAPIKeyEnv = "GEMINI_API_KEY"
	defaultModel     = "gemini-2.5-flash"
)

func newInitCmd(f *Factory, runF func(context.Context, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create the config file with an interactive setup wizard",
		Long: `init asks for your address and name, proposes the server settings (a
built-in preset for Gmail, Fastmail, iCloud, Outlook/Office 365 and Proton
Bridge, or autodiscovery: Mozilla autoconfig, the Thunderbird ISPDB and DNS
SRV records), asks where your password lives (a command such as
"pass show mail/you", an environment variable, the system keyring, or an
OAuth2 token command), and where the Gemini API key lives. It writes the
config file with mode 0600, then runs doctor.

The file goes to --config, else $MAILAGENT_CONFIG, else
$XDG_CONFIG_HOME/mailagent/config.toml. An existing file is replaced only
with --force. Prompts go to stderr; the path of the written file goes to
stdout.

For scripts: --non-interactive with --email, --name and one of
--password-cmd, --password-env or --oauth2-token-cmd.

Exit codes: 0 written (and doctor passed); 2 bad flags or input, the file
exists, or input ended early (nothing is written); 5 written, but doctor
found problems.`,
		Example: `  mailagent init
  mailagent init --non-interactive --email ada@fastmail.com --name "Ada Lovelace" \
      --password-cmd "pass show mail/fastmail"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return initRun(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Force, "force", false, "replace an existing config file")
	fl.BoolVar(&opts.NoDoctor, "no-doctor", false, "do not run `mailagent doctor` after writing")
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
	fl.StringVar(&opts.Model, "model", "", "Gemini model (default "+defaultModel+")")
	fl.StringVar(&opts.Mode, "mode", "", "policy mode: review (never sends without approval; the default) or auto")
	return cmd
}

// validate checks the flags alone; answers typed later are checked as they
// come.
func (o *InitOptions) validate() error {
	if o.Provider != "" && o.Provider != "auto" && !slices.Contains(presetIDs(), o.Provider) {
		return usageErr("--provider %q is not one of %s, auto", o.Provider, strings.Join(presetIDs(), ", "))
	}
	if o.Mode != "" && o.Mode != config.ModeReview && o.Mode != config.ModeAuto {
		return usageErr("--mode %q is not one of review, auto", o.Mode)
	}
	if n := initCountSet(o.PasswordCmd, o.PasswordEnv, o.OAuth2TokenCmd); n > 1 {
		return usageErr("--password-cmd, --password-env and --oauth2-token-cmd: give at most one")
	}
	if o.APIKeyEnv != "" && o.APIKeyCmd != "" {
		return usageErr("--api-key-env and --api-key-cmd: give at most one")
	}
	if o.PasswordEnv != "" && !initEnvName.MatchString(o.PasswordEnv) {
		return usageErr("--password-env %q is not an environment variable name", o.PasswordEnv)
	}
	if o.APIKeyEnv != "" && !initEnvName.MatchString(o.APIKeyEnv) {
		return usageErr("--api-key-env %q is not an environment variable name", o.APIKeyEnv)
	}
	if o.Email != "" {
		if err := checkEmail(o.Email); err != nil {
			return usageErr("--email: %v", err)
		}
	}
	if o.Account != "" {
		if err := checkAccountName(o.Account); err != nil {
			return usageErr("--account: %v", err)
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
		return usageErr("--non-interactive needs %s", strings.Join(missing, ", "))
	}
	return nil
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

var initEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// errInputEnded is returned by the prompter when stdin ends mid-wizard.
var errInputEnded = errors.New("input ended before the setup was complete")

// setup is everything the wizard learned; renderConfig turns it into TOML.
type initSetup struct {
	Email, Name, Account string
	Provider, Source     string // display name and where the settings came from
	Notes                string
	IMAP, SMTP           initServer
	TLSCAFile            string // Proton Bridge's certificate, both servers
	Secret               secretChoice
	APIKeyEnv, APIKeyCmd string
	Model, Mode          string
	AuthservID           string // see init_authserv.go
}

type initServer struct {
	Host     string
	Port     int
	Security string
	Username string
	Auth     string // autoconfig.AuthPassword or AuthOAuth2, advisory
}

// Secret kinds, one per config key.
const (
	secretCmd     = "cmd"
	secretEnv     = "env"
	secretKeyring = "keyring"
	secretOAuth2  = "oauth2"
	secretLiteral = "literal"
)

// secretChoice is where the mail password lives. Value is a command or a
// variable name, never a secret; password is set only for the keyring
// and literal kinds and is never printed.
type secretChoice struct {
	Kind     string
	Value    string
	password string
}

// smtpOwnLogin reports whether SMTP needs its own username and secret
// lines: the config copies the IMAP login to SMTP only when the SMTP
// table names neither.
func (s *initSetup) smtpOwnLogin() bool { return s.SMTP.Username != s.IMAP.Username }

func initRun(ctx context.Context, f *Factory, opts *InitOptions) error {
	path, err := initPath(f.ConfigPath)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil && !opts.Force {
		return &UserError{Code: ExitUsage, Err: fmt.Errorf("config %s already exists", path),
			Hint: "pass --force to replace it, or --config FILE to write another one"}
	}

	var s *initSetup
	var data []byte
	if opts.NonInteractive {
		s, err = fromFlags(ctx, f.Stderr, opts)
		if err != nil {
			return err
		}
		data = renderConfig(s)
		if _, perr := config.Parse(data, path, 0o600); perr != nil {
			return &UserError{Code: ExitUsage, Err: fmt.Errorf("the settings do not make a valid config:\n%s", initProblems(perr)),
				Hint: "fix the flags named above, or run `mailagent init` interactively"}
		}
	} else {
		p := newPrompter(f.Stdin, f.Stderr)
		defer p.Close()
		s, data, err = interview(ctx, p, opts, path)
		if errors.Is(err, errInputEnded) {
			return &UserError{Code: ExitUsage, Err: fmt.Errorf("%w: nothing was written", err),
				Hint: "run `mailagent init` in a terminal, or script it with --non-interactive --email … --name … --password-cmd …"}
		}
		if err != nil {
			return err
		}
	}

	if err := storeInKeyring(s); err != nil {
		return err
	}
	data = initAuthserv(ctx, s, data, path, !opts.NoDoctor)
	if err := writeConfig(path, data, opts.Force); err != nil {
		forgetKeyring(s)
		if errors.Is(err, fs.ErrExist) {
			return &UserError{Code: ExitUsage, Err: fmt.Errorf("config %s already exists", path), Hint: "pass --force to replace it"}
		}
		return fmt.Errorf("write config %s: %w", path, err)
	}
	fmt.Fprintln(f.Stdout, path)
	fmt.Fprintf(f.Stderr, "\nWrote %s (mode 0600).\n", path)

	var doctorErr error
	if !opts.NoDoctor {
		fmt.Fprintln(f.Stderr, "\nChecking it with `mailagent doctor`:")
		doctorErr = runDoctorFor(ctx, f, path)
		if doctorErr != nil && ctx.Err() == nil {
			fmt.Fprintln(f.Stderr, "\nSome checks failed: fix what is named above, then run `mailagent doctor` again.")
		}
	}
	printNextSteps(f.Stderr, s, path, f.ConfigPath != "")
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
			return "", &UserError{Code: ExitUsage, Err: err, Hint: "pass --config FILE"}
		}
		p = d
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", &UserError{Code: ExitUsage, Err: fmt.Errorf("config path %s: %w", p, err)}
	}
	return abs, nil
}

// runDoctorFor runs doctor on the new file with its report on stderr, so
// that stdout carries only the path written.
func runDoctorFor(ctx context.Context, f *Factory, path string) error {
	df := newFactory(f.Stdin, f.Stderr, f.Stderr)
	defer df.Close()
	df.ConfigPath = path
	df.StateDir = f.StateDir
	df.Verbose = f.Verbose
	df.NewModel = f.NewModel
	df.Now = f.Now
	return doctorRun(ctx, df, &DoctorOptions{})
}

// printNextSteps tells what to run next; withFlag adds --config PATH to
// the commands (the file is not where they look by themselves).
func printNextSteps(w io.Writer, s *initSetup, path string, withFlag bool) {
	cfgFlag := ""
	if withFlag {
		cfgFlag = " --config " + initShellQuote(path)
	}
	fmt.Fprintln(w, "\nNext steps:")
	if s.APIKeyCmd == "" && os.Getenv(s.APIKeyEnv) == "" {
		fmt.Fprintf(w, "  export %s=…            # your Gemini API key (https://aistudio.google.com/apikey)\n", s.APIKeyEnv)
	}
	if s.Secret.Kind == secretEnv && os.Getenv(s.Secret.Value) == "" {
		fmt.Fprintf(w, "  export %s=…            # your mail password\n", s.Secret.Value)
	}
	fmt.Fprintf(w, "  mailagent%s triage --dry-run --limit 20   # see what it would do with your latest mail\n", cfgFlag)
	fmt.Fprintf(w, "  mailagent%s watch                         # handle new mail as it arrives\n", cfgFlag)
	if s.Mode == config.ModeReview {
		fmt.Fprintln(w, "  Mode is review: nothing is sent until you approve it.")
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

// ---- answers from flags ---------------------------------------------------

func fromFlags(ctx context.Context, w io.Writer, opts *InitOptions) (*initSetup, error) {
	s := &initSetup{Email: strings.TrimSpace(opts.Email), Name: strings.TrimSpace(opts.Name)}
	res, err := proposeServers(ctx, w, s.Email, opts.Provider)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &UserError{Code: ExitUsage, Err: err,
			Hint: "pass --provider (" + strings.Join(presetIDs(), ", ") + "), or run `mailagent init` interactively to type the servers"}
	}
	s.applyResult(res)
	showProposal(w, s)
	s.Account = opts.Account
	if s.Account == "" {
		s.Account = defaultAccountName(s)
	}
	switch {
	case opts.PasswordCmd != "":
		s.Secret = secretChoice{Kind: secretCmd, Value: opts.PasswordCmd}
	case opts.PasswordEnv != "":
		s.Secret = secretChoice{Kind: secretEnv, Value: opts.PasswordEnv}
	case opts.OAuth2TokenCmd != "":
		s.Secret = secretChoice{Kind: secretOAuth2, Value: opts.OAuth2TokenCmd}
	}
	s.APIKeyEnv, s.APIKeyCmd = opts.APIKeyEnv, opts.APIKeyCmd
	if s.APIKeyCmd == "" && s.APIKeyEnv == "" {
		s.APIKeyEnv = defaultAPIKeyEnv
	}
	s.Model = initDefault(opts.Model, defaultModel)
	s.Mode = initDefault(opts.Mode, config.ModeReview)
	return s, nil
}

func initDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return strings.TrimSpace(v)
}

// ---- server settings ------------------------------------------------------

func presetIDs() []string {
	var ids []string
	for _, p := range autoconfig.Presets() {
		ids = append(ids, p.ID)
	}
	return ids
}

func presetByID(id string) (autoconfig.Preset, bool) {
	for _, p := range autoconfig.Presets() {
		if p.ID == id {
			return p, true
		}
	}
	return autoconfig.Preset{}, false
}

// proposeServers finds server settings: the --provider preset, the preset for the
// address's domain, or autodiscovery.
func proposeServers(ctx context.Context, w io.Writer, email, provider string) (*autoconfig.Result, error) {
	if provider != "" && provider != "auto" {
		p, ok := presetByID(provider)
		if !ok {
			return nil, fmt.Errorf("unknown provider %q", provider)
		}
		return p.Result(email)
	}
	if p, ok := autoconfig.PresetFor(email); ok {
		return p.Result(email)
	}
	domain := email[strings.LastIndexByte(email, '@')+1:]
	fmt.Fprintf(w, "Looking up the mail servers for %s (autoconfig, Thunderbird ISPDB, DNS SRV)…\n", domain)
	res, err := autoconfig.Discover(ctx, email, autoconfigOptions())
	if err != nil {
		return nil, fmt.Errorf("discover servers for %s: %w", domain, err)
	}
	return res, nil
}

func (s *initSetup) applyResult(r *autoconfig.Result) {
	s.Provider = r.Provider
	s.Source = r.Source
	s.Notes = r.Notes
	s.IMAP = fromAutoconfig(r.IMAP, s.Email)
	if r.SMTP != nil {
		s.SMTP = fromAutoconfig(r.SMTP, s.Email)
	} else {
		// The source offered no submission server: propose the usual name.
		domain := s.Email[strings.LastIndexByte(s.Email, '@')+1:]
		s.SMTP = initServer{Host: "smtp." + domain, Port: 587, Security: config.SecurityStartTLS, Username: s.IMAP.Username, Auth: s.IMAP.Auth}
		s.Notes = strings.TrimSpace(s.Notes + " No SMTP server was found: smtp." + domain + " is a guess, check it.")
	}
	for _, warn := range r.Warnings {
		s.Notes = strings.TrimSpace(s.Notes + " Warning: " + warn + ".")
	}
}

func fromAutoconfig(a *autoconfig.Server, email string) initServer {
	if a == nil {
		return initServer{}
	}
	u := a.Username
	if u == "" {
		u = email
	}
	return initServer{Host: a.Host, Port: a.Port, Security: a.Security, Username: u, Auth: a.Auth}
}

func showProposal(w io.Writer, s *initSetup) {
	name := s.Provider
	if name == "" {
		name = "your provider"
	}
	fmt.Fprintf(w, "\nServer settings for %s (from %s):\n", name, s.Source)
	for _, e := range []struct {
		kind string
		srv  initServer
	}{{"IMAP", s.IMAP}, {"SMTP", s.SMTP}} {
		fmt.Fprintf(w, "  %s  %s port %d, %s, login %s\n", e.kind, e.srv.Host, e.srv.Port, e.srv.Security, e.srv.Username)
	}
	if s.Notes != "" {
		fmt.Fprintf(w, "  Note: %s\n", s.Notes)
	}
}

func defaultAccountName(s *initSetup) string {
	if id, ok := strings.CutPrefix(s.Source, "preset:"); ok && id != "generic" {
		id, _, _ = strings.Cut(id, ",")
		return id
	}
	domain := s.Email[strings.LastIndexByte(s.Email, '@')+1:]
	label, _, _ := strings.Cut(strings.ToLower(domain), ".")
	label = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' {
			return r
		}
		return -1
	}, label)
	if label == "" {
		return "personal"
	}
	return label
}

func checkEmail(v string) error {
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || a.Address != v || !strings.Contains(v, "@") {
		return fmt.Errorf("%q is not a bare email address such as ada@example.com", v)
	}
	return nil
}

func checkAccountName(v string) error {
	if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return fmt.Errorf("%q: use letters, digits, '-', '_' or '.', without spaces or '/'", v)
	}
	return nil
}

// ---- the interview --------------------------------------------------------

// interview asks the questions, renders the config and validates it with
// config.Parse; on problems it shows them and offers to go through the
// answers again (the previous ones become the defaults).
func interview(ctx context.Context, p *prompter, opts *InitOptions, path string) (*initSetup, []byte, error) {
	p.say("mailagent setup: press Enter to accept the [default]. Nothing is written until the end.\n")
	var prev *initSetup
	for {
		s, err := askAll(ctx, p, opts, prev)
		if err != nil {
			return nil, nil, err
		}
		data := renderConfig(s)
		_, perr := config.Parse(data, path, 0o600)
		if perr == nil {
			return s, data, nil
		}
		p.say("\nThese settings do not make a valid config:\n%s\n", initProblems(perr))
		again, err := p.yesNo(ctx, "Go through the answers again?", true)
		if err != nil {
			return nil, nil, err
		}
		if !again {
			return nil, nil, &UserError{Code: ExitUsage, Err: errors.New("setup aborted: nothing was written")}
		}
		prev = s
	}
}

func initProblems(err error) string {
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		lines = append(lines, "  - "+l)
	}
	return strings.Join(lines, "\n")
}

func askAll(ctx context.Context, p *prompter, opts *InitOptions, prev *initSetup) (*initSetup, error) {
	s := &initSetup{}
	if prev != nil {
		*s = *prev
	}
	var err error
	if s.Email, err = p.text(ctx, "Email address", initDefault(s.Email, opts.Email), checkEmail); err != nil {
		return nil, err
	}
	if s.Name, err = p.text(ctx, "Your name, as shown in From: and in the AI footer", initDefault(s.Name, opts.Name), initNonEmpty); err != nil {
		return nil, err
	}
	if prev == nil || prev.Email != s.Email {
		if err := chooseServers(ctx, p, s, opts.Provider); err != nil {
			return nil, err
		}
	}
	if err := confirmServers(ctx, p, s); err != nil {
		return nil, err
	}
	if s.Account, err = p.text(ctx, "Account name (short: used by --account and for keyring entries)",
		initDefault(s.Account, initDefault(opts.Account, defaultAccountName(s))), checkAccountName); err != nil {
		return nil, err
	}
	if err := askSecret(ctx, p, s, opts); err != nil {
		return nil, err
	}
	if err := askLLM(ctx, p, s, opts); err != nil {
		return nil, err
	}
	p.say("\nPolicy: review never sends anything without your approval; auto may send low-risk replies to known contacts when every safety gate passes.\n")
	if s.Mode, err = p.text(ctx, "Mode (review or auto)", initDefault(s.Mode, initDefault(opts.Mode, config.ModeReview)), func(v string) error {
		if v != config.ModeReview && v != config.ModeAuto {
			return fmt.Errorf("%q: type review or auto", v)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}

func initNonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("this cannot be empty")
	}
	return nil
}

// chooseServers proposes settings from a preset or autodiscovery; when
// neither finds anything it lets the user pick a provider.
func chooseServers(ctx context.Context, p *prompter, s *initSetup, provider string) error {
	res, err := proposeServers(ctx, p.w, s.Email, provider)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.say("No settings found (%v).\n", initFirstLine(err))
		return pickProvider(ctx, p, s)
	}
	s.applyResult(res)
	if s.Source == "preset:gmail" {
		s.Notes += " For OAuth2 instead, see docs/OAUTH2.md."
	}
	return nil
}

func initFirstLine(err error) string {
	l, _, _ := strings.Cut(err.Error(), "\n")
	return l
}

func pickProvider(ctx context.Context, p *prompter, s *initSetup) error {
	presets := autoconfig.Presets()
	var items []initChoice
	for _, pr := range presets {
		label := pr.Name
		if pr.ID == "generic" {
			label += ": imap." + s.Email[strings.LastIndexByte(s.Email, '@')+1:] + " and smtp…, then edit them"
		}
		items = append(items, initChoice{key: pr.ID, label: label})
	}
	id, err := p.choose(ctx, "Which provider hosts this address?", items, "generic")
	if err != nil {
		return err
	}
	pr, _ := presetByID(id)
	res, err := pr.Result(s.Email)
	if err != nil {
		return fmt.Errorf("preset %s: %w", id, err)
	}
	s.applyResult(res)
	return nil
}

func confirmServers(ctx context.Context, p *prompter, s *initSetup) error {
	for {
		showProposal(p.w, s)
		ans, err := p.text(ctx, "Use these settings? (y: yes, e: edit them, p: pick a provider)", "y", func(v string) error {
			switch strings.ToLower(v) {
			case "y", "yes", "e", "edit", "n", "no", "p":
				return nil
			}
			return fmt.Errorf("%q: type y, e or p", v)
		})
		if err != nil {
			return err
		}
		switch strings.ToLower(ans) {
		case "y", "yes":
			if netpolicy.IsLoopback(s.IMAP.Host) && strings.HasPrefix(s.Source, "preset:proton") {
				return askBridgeCA(ctx, p, s)
			}
			return nil
		case "p":
			if err := pickProvider(ctx, p, s); err != nil {
				return err
			}
		default:
			if err := editServer(ctx, p, "IMAP", "imap", &s.IMAP); err != nil {
				return err
			}
			if err := editServer(ctx, p, "SMTP", "smtp", &s.SMTP); err != nil {
				return err
			}
			if s.Source == "preset:proton" {
				s.Source = "preset:proton, edited"
			} else {
				s.Source = "your answers"
			}
			s.Notes = ""
		}
	}
}

func editServer(ctx context.Context, p *prompter, label, kind string, e *initServer) error {
	var err error
	if e.Host, err = p.text(ctx, label+" host", e.Host, func(v string) error {
		if strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '/' }) || v == "" {
			return fmt.Errorf("%q is not a host name", v)
		}
		return nil
	}); err != nil {
		return err
	}
	oldSec := e.Security
	if e.Security, err = p.text(ctx, label+" security (tls, starttls; insecure only for localhost)", e.Security, func(v string) error {
		switch v {
		case config.SecurityTLS, config.SecurityStartTLS, config.SecurityInsecure:
			return nil
		}
		return fmt.Errorf("%q: type tls, starttls or insecure", v)
	}); err != nil {
		return err
	}
	port := e.Port
	if e.Security != oldSec || port == 0 {
		port = config.DefaultPort(kind, e.Security)
	}
	ps, err := p.text(ctx, label+" port", strconv.Itoa(port), func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q is not a port number (1-65535)", v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	e.Port, _ = strconv.Atoi(ps)
	if e.Username, err = p.text(ctx, label+" login name", e.Username, initNonEmpty); err != nil {
		return err
	}
	return nil
}

func askBridgeCA(ctx context.Context, p *prompter, s *initSetup) error {
	v, err := p.text(ctx, "Path to the certificate exported from Proton Bridge (cert.pem; empty: add tls_ca_file later)", s.TLSCAFile, func(v string) error {
		if v == "" {
			return nil
		}
		if _, err := os.Stat(initExpandTilde(v)); err != nil {
			return fmt.Errorf("cannot read %s", v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if v == "" {
		s.TLSCAFile = ""
		return nil
	}
	abs, err := filepath.Abs(initExpandTilde(v))
	if err != nil {
		return fmt.Errorf("certificate path %s: %w", v, err)
	}
	s.TLSCAFile = abs
	return nil
}

func initExpandTilde(p string) string {
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[2:])
		}
	}
	return p
}

// askSecret asks where the mail password lives.
func askSecret(ctx context.Context, p *prompter, s *initSetup, opts *InitOptions) error {
	switch {
	case opts.PasswordCmd != "":
		s.Secret = secretChoice{Kind: secretCmd, Value: opts.PasswordCmd}
		return nil
	case opts.PasswordEnv != "":
		s.Secret = secretChoice{Kind: secretEnv, Value: opts.PasswordEnv}
		return nil
	case opts.OAuth2TokenCmd != "":
		s.Secret = secretChoice{Kind: secretOAuth2, Value: opts.OAuth2TokenCmd}
		return nil
	}
	items := []initChoice{
		{secretCmd, "a command that prints it (password_cmd), e.g. pass show mail/" + s.Account},
		{secretEnv, "an environment variable (password_env)"},
		{secretKeyring, "the system keyring: type it once now, mailagent stores it there"},
		{secretOAuth2, "OAuth2: a command that prints an access token (Gmail, Microsoft 365; see docs/OAUTH2.md)"},
		{secretLiteral, "in the config file itself (not recommended)"},
	}
	def := secretKeyring
	if s.IMAP.Auth == autoconfig.AuthOAuth2 {
		def = secretOAuth2
	}
	if s.Secret.Kind != "" {
		def = s.Secret.Kind
	}
	p.say("\nWhere should mailagent get your mail password? (It is never printed.)\n")
	for {
		kind, err := p.choose(ctx, "Password source", items, def)
		if err != nil {
			return err
		}
		prevValue := ""
		if s.Secret.Kind == kind {
			prevValue = s.Secret.Value
		}
		switch kind {
		case secretCmd:
			v, err := p.text(ctx, "Command that prints the password (run with sh -c)", prevValue, initNonEmpty)
			if err != nil {
				return err
			}
			s.Secret = secretChoice{Kind: kind, Value: v}
			return nil
		case secretEnv:
			v, err := p.text(ctx, "Environment variable name", initDefault(prevValue, "MAILAGENT_PASSWORD"), checkEnvName)
			if err != nil {
				return err
			}
			if os.Getenv(v) == "" {
				p.say("  Note: %s is not set in this shell; export it before running mailagent.\n", v)
			}
			s.Secret = secretChoice{Kind: kind, Value: v}
			return nil
		case secretOAuth2:
			v, err := p.text(ctx, "Command that prints a fresh access token (e.g. oama access "+s.Email+")", prevValue, initNonEmpty)
			if err != nil {
				return err
			}
			s.Secret = secretChoice{Kind: kind, Value: v}
			return nil
		case secretKeyring:
			if err := keyringAvailable(); err != nil {
				p.say("  The system keyring is not available here (%v). Choose another source.\n", err)
				items = slices.DeleteFunc(items, func(c initChoice) bool { return c.key == secretKeyring })
				def = secretCmd
				continue
			}
			pw, err := p.password(ctx, "Password (not shown)")
			if err != nil {
				return err
			}
			s.Secret = secretChoice{Kind: kind, password: pw}
			return nil
		case secretLiteral:
			p.say("  The password would be stored in plain text in the config file (mode 0600).\n")
			yes, err := p.text(ctx, `Type "yes" to do that anyway`, "no", nil)
			if err != nil {
				return err
			}
			if yes != "yes" {
				def = secretCmd
				continue
			}
			pw, err := p.password(ctx, "Password (not shown)")
			if err != nil {
				return err
			}
			s.Secret = secretChoice{Kind: kind, password: pw}
			return nil
		}
	}
}

func checkEnvName(v string) error {
	if !initEnvName.MatchString(v) {
		return fmt.Errorf("%q is not a variable name (letters, digits and _)", v)
	}
	return nil
}

// keyringProbeUser is looked up, never written, to learn whether a keyring
// answers at all.
const keyringProbeUser = "mailagent-init-probe"

// keyringAvailable reports whether the system keyring answers. A missing
// entry is an answer; no D-Bus secret service (or a locked-out keychain)
// is not.
func keyringAvailable() error {
	_, err := keyring.Get(config.KeyringService, keyringProbeUser)
	if err == nil || errors.Is(err, keyring.ErrNotFound) {
		return nil
	}
	return err
}

// keyringUsers returns the keyring users the config will read: the IMAP
// one, and the SMTP one when SMTP has its own login.
func keyringUsers(s *initSetup) []string {
	users := []string{s.Account + "/imap"}
	if s.smtpOwnLogin() {
		users = append(users, s.Account+"/smtp")
	}
	return users
}

// storeInKeyring stores the password under config.KeyringService and the
// endpoints' keyring users, just before the file is written, so an
// aborted wizard leaves nothing behind.
func storeInKeyring(s *initSetup) error {
	if s.Secret.Kind != secretKeyring {
		return nil
	}
	for _, u := range keyringUsers(s) {
		if err := keyring.Set(config.KeyringService, u, s.Secret.password); err != nil {
			forgetKeyring(s)
			return &UserError{Code: ExitFailure, Err: fmt.Errorf("store the password in the keyring (service %q, user %q): %w; nothing was written", config.KeyringService, u, err),
				Hint: "run `mailagent init` again and choose another password source"}
		}
	}
	return nil
}

func forgetKeyring(s *initSetup) {
	if s.Secret.Kind != secretKeyring {
		return
	}
	for _, u := range keyringUsers(s) {
		_ = keyring.Delete(config.KeyringService, u)
	}
}

func askLLM(ctx context.Context, p *prompter, s *initSetup, opts *InitOptions) error {
	p.say("\nThe Gemini API key is never written to the file; mailagent reads it when it runs.\n")
	def := "env"
	if initDefault(s.APIKeyCmd, opts.APIKeyCmd) != "" {
		def = "cmd"
	}
	kind, err := p.choose(ctx, "Read the Gemini API key from", []initChoice{
		{"env", "an environment variable"},
		{"cmd", "a command that prints it (api_key_cmd)"},
	}, def)
	if err != nil {
		return err
	}
	if kind == "env" {
		v, err := p.text(ctx, "Environment variable", initDefault(s.APIKeyEnv, initDefault(opts.APIKeyEnv, defaultAPIKeyEnv)), checkEnvName)
		if err != nil {
			return err
		}
		s.APIKeyEnv, s.APIKeyCmd = v, ""
		if os.Getenv(v) == "" {
			p.say("  Note: %s is not set in this shell. Get a key at https://aistudio.google.com/apikey and export it.\n", v)
		}
	} else {
		v, err := p.text(ctx, "Command that prints the API key", initDefault(s.APIKeyCmd, opts.APIKeyCmd), initNonEmpty)
		if err != nil {
			return err
		}
		s.APIKeyCmd, s.APIKeyEnv = v, ""
	}
	s.Model, err = p.text(ctx, "Gemini model", initDefault(s.Model, initDefault(opts.Model, defaultModel)), initNonEmpty)
	return err
}

// ---- rendering and writing ------------------------------------------------

// renderConfig writes s as commented TOML that config.Parse accepts. Keys
// equal to their defaults are left out, so the file stays short.
func renderConfig(s *initSetup) []byte {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# mailagent configuration, written by `mailagent init`.\n")
	w("# Check it at any time with `mailagent doctor`; the README's Configuration\n")
	w("# section describes every key. Keep this file private (mode 0600).\n\n")

	w("[llm]\n")
	w("# The API key is not stored here: mailagent reads it from this source.\n")
	if s.APIKeyCmd != "" {
		w("api_key_cmd = %s\n", initTOMLString(s.APIKeyCmd))
	} else {
		w("api_key_env = %s\n", initTOMLString(s.APIKeyEnv))
	}
	w("model = %s\n\n", initTOMLString(s.Model))

	w("[policy]\n")
	w("# review: nothing is ever sent without your approval (mailagent review).\n")
	w("# auto: low-risk replies to known contacts are sent when every safety gate passes.\n")
	w("mode = %s\n\n", initTOMLString(s.Mode))

	w("[[accounts]]\n")
	w("# The short name used by --account and for keyring entries.\n")
	w("name = %s\n", initTOMLString(s.Account))
	w("email = %s\n", initTOMLString(s.Email))
	w("display_name = %s\n", initTOMLString(s.Name))
	renderAuthserv(w, s)

	src := s.Source
	if s.Provider != "" {
		src = s.Provider + ", from " + s.Source
	}
	w("\n  # Incoming mail (%s).\n", initCommentText(src))
	w("  [accounts.imap]\n")
	renderEndpoint(&b, s.IMAP, s.Email, s.TLSCAFile)
	renderSecret(&b, s.Secret)

	w("\n  # Outgoing mail.")
	if !s.smtpOwnLogin() {
		w(" With no login here, SMTP uses the IMAP login above.")
	}
	w("\n  [accounts.smtp]\n")
	smtp := s.SMTP
	if !s.smtpOwnLogin() {
		smtp.Username = s.Email // leave it out: the IMAP login is inherited
	}
	renderEndpoint(&b, smtp, s.Email, s.TLSCAFile)
	if s.smtpOwnLogin() {
		if smtp.Username == s.Email {
			// Explicit, so that a reader sees the two logins differ.
			w("  username = %s\n", initTOMLString(smtp.Username))
		}
		renderSecret(&b, s.Secret)
	}
	return []byte(b.String())
}

func renderEndpoint(b *strings.Builder, e initServer, email, ca string) {
	fmt.Fprintf(b, "  host = %s\n", initTOMLString(e.Host))
	fmt.Fprintf(b, "  port = %d\n", e.Port)
	fmt.Fprintf(b, "  security = %s   # tls (implicit TLS) | starttls\n", initTOMLString(e.Security))
	if e.Username != email {
		fmt.Fprintf(b, "  username = %s\n", initTOMLString(e.Username))
	}
	if ca != "" {
		fmt.Fprintf(b, "  tls_ca_file = %s\n", initTOMLString(ca))
	}
}

func renderSecret(b *strings.Builder, c secretChoice) {
	switch c.Kind {
	case secretCmd:
		fmt.Fprintf(b, "  password_cmd = %s   # its output is the password\n", initTOMLString(c.Value))
	case secretEnv:
		fmt.Fprintf(b, "  password_env = %s\n", initTOMLString(c.Value))
	case secretKeyring:
		b.WriteString("  password_keyring = true   # stored in the system keyring by mailagent init\n")
	case secretOAuth2:
		b.WriteString("  # Prints a fresh OAuth2 access token; see docs/OAUTH2.md.\n")
		fmt.Fprintf(b, "  oauth2_token_cmd = %s\n", initTOMLString(c.Value))
	case secretLiteral:
		b.WriteString("  # Stored in plain text at your request: prefer password_cmd or password_keyring.\n")
		fmt.Fprintf(b, "  password = %s\n", initTOMLString(c.password))
	}
}

// tomlString quotes s as a TOML basic string. Hand-written because the
// TOML library only encodes whole documents, and JSON quoting differs
// (it leaves U+007F bare, which TOML forbids).
func initTOMLString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// commentText makes text read from the network safe inside a # comment.
func initCommentText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// writeConfig writes data with mode 0600, creating the parent directory
// with mode 0700. Without force it fails with fs.ErrExist when the file
// exists (O_EXCL, so a file created meanwhile is not clobbered); with
// force it replaces the file atomically (the target of a symlink).
func writeConfig(path string, data []byte, force bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create config dir: %w", err)
	}
	if !force {
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, werr := fh.Write(data)
		cerr := fh.Close()
		if err := errors.Join(werr, cerr); err != nil {
			_ = os.Remove(path)
			return err
		}
		return os.Chmod(path, 0o600)
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mailagent-init-*.toml")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // no-op after the rename
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ---- prompting ------------------------------------------------------------

// prompter asks questions on w and reads answers from r. Reads happen on
// one goroutine, one at a time and only on request, so that a prompt can
// give up when ctx ends (Ctrl-C) even though a read from a terminal cannot
// be interrupted. That goroutine is owned by the prompter: Close stops it
// once no read is pending; a read abandoned on cancel ends with stdin's EOF
// or the process, which exits right after.
type prompter struct {
	w    io.Writer
	in   *bufio.Reader
	fd   int // the terminal to read passwords from without echo, or -1
	reqs chan bool
	res  chan readResult
}

type readResult struct {
	line string
	err  error
}

func newPrompter(r io.Reader, w io.Writer) *prompter {
	if r == nil {
		r = strings.NewReader("")
	}
	p := &prompter{w: w, in: bufio.NewReader(r), fd: -1, reqs: make(chan bool), res: make(chan readResult, 1)}
	if fh, ok := r.(*os.File); ok && term.IsTerminal(int(fh.Fd())) {
		p.fd = int(fh.Fd())
	}
	go p.loop()
	return p
}

func (p *prompter) loop() {
	for secret := range p.reqs {
		p.res <- p.read(secret)
	}
}

// Close stops the reading goroutine.
func (p *prompter) Close() { close(p.reqs) }

func (p *prompter) read(secret bool) readResult {
	if secret && p.fd >= 0 && p.in.Buffered() == 0 {
		b, err := term.ReadPassword(p.fd)
		fmt.Fprintln(p.w)
		return readResult{line: string(b), err: err}
	}
	line, err := p.in.ReadString('\n')
	if errors.Is(err, io.EOF) && line != "" {
		err = nil // a last line without a newline still counts
	}
	return readResult{line: strings.TrimRight(line, "\r\n"), err: err}
}

// readLine reads one answer; secret answers are read without echo from a
// terminal.
func (p *prompter) readLine(ctx context.Context, secret bool) (string, error) {
	var state *term.State
	if secret && p.fd >= 0 {
		state, _ = term.GetState(p.fd)
	}
	select {
	case p.reqs <- secret:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case r := <-p.res:
		if errors.Is(r.err, io.EOF) {
			return "", errInputEnded
		}
		if r.err != nil {
			return "", fmt.Errorf("read answer: %w", r.err)
		}
		return r.line, nil
	case <-ctx.Done():
		if state != nil {
			_ = term.Restore(p.fd, state) // give the echo back
		}
		return "", ctx.Err()
	}
}

func (p *prompter) say(format string, a ...any) { fmt.Fprintf(p.w, format, a...) }

// text asks until check accepts the answer; an empty answer means def.
func (p *prompter) text(ctx context.Context, label, def string, check func(string) error) (string, error) {
	for {
		if def != "" {
			p.say("%s [%s]: ", label, def)
		} else {
			p.say("%s: ", label)
		}
		v, err := p.readLine(ctx, false)
		if err != nil {
			return "", err
		}
		v = strings.TrimSpace(v)
		if v == "" {
			v = def
		}
		if check == nil {
			return v, nil
		}
		if err := check(v); err != nil {
			p.say("  %v\n", err)
			continue
		}
		return v, nil
	}
}

// password asks for a secret until it is non-empty. The answer is never
// echoed back or logged.
func (p *prompter) password(ctx context.Context, label string) (string, error) {
	for {
		p.say("%s: ", label)
		v, err := p.readLine(ctx, true)
		if err != nil {
			return "", err
		}
		if v != "" {
			return v, nil
		}
		p.say("  the password cannot be empty\n")
	}
}

func (p *prompter) yesNo(ctx context.Context, label string, def bool) (bool, error) {
	d := "n"
	if def {
		d = "y"
	}
	v, err := p.text(ctx, label+" (y/n)", d, func(v string) error {
		switch strings.ToLower(v) {
		case "y", "yes", "n", "no":
			return nil
		}
		return fmt.Errorf("%q: type y or n", v)
	})
	if err != nil {
		return false, err
	}
	return strings.HasPrefix(strings.ToLower(v), "y"), nil
}

type initChoice struct{ key, label string }

// choose shows a numbered menu and returns the chosen key. The answer may
// be the number or the key.
func (p *prompter) choose(ctx context.Context, label string, items []initChoice, def string) (string, error) {
	p.say("%s\n", label)
	defNum := ""
	for i, c := range items {
		p.say("  %d) %s\n", i+1, c.label)
		if c.key == def {
			defNum = strconv.Itoa(i + 1)
		}
	}
	var picked string
	_, err := p.text(ctx, fmt.Sprintf("Choose 1-%d", len(items)), defNum, func(v string) error {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= len(items) {
			picked = items[n-1].key
			return nil
		}
		for _, c := range items {
			if strings.EqualFold(v, c.key) {
				picked = c.key
				return nil
			}
		}
		return fmt.Errorf("%q: type a number from 1 to %d", v, len(items))
	})
	return picked, err
}
