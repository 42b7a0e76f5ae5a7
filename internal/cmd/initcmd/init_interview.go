package initcmd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/autoconfig"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/initcfg"
	"github.com/mailagent/mailagent/internal/prompter"

	"github.com/mailagent/mailagent/internal/app/setup"
	"github.com/mailagent/mailagent/internal/cmdutil"
)

// Prompter is the one prompter (internal/prompter): the interview
// depends only on it; tests script the answers.
type Prompter = prompter.Prompter

// sayWriter lets code that writes to an io.Writer talk through a Prompter.
type sayWriter struct{ p Prompter }

func (w sayWriter) Write(b []byte) (int, error) {
	w.p.Say("%s", b)
	return len(b), nil
}

// interview asks the questions, renders the config and validates it with
// config.Parse; on problems it shows them and offers to go through the
// answers again (the previous ones become the defaults).
func interview(ctx context.Context, p Prompter, opts *InitOptions, path string) (*initSetup, []byte, error) {
	p.Say("mailagent setup: press Enter to accept the [default]. Nothing is written until the end.\n")
	var prev *initSetup
	for {
		s, err := askAll(ctx, p, opts, prev)
		if err != nil {
			return nil, nil, err
		}
		data := initcfg.Render(s)
		_, perr := config.Parse(data, path, 0o600)
		if perr == nil {
			return s, data, nil
		}
		p.Say("\nThese settings do not make a valid config:\n%s\n", initProblems(perr))
		again, err := p.YesNo(ctx, "Go through the answers again?", true)
		if err != nil {
			return nil, nil, err
		}
		if !again {
			return nil, nil, &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: errors.New("setup aborted: nothing was written")}
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

// countingPrompter counts the answers given through it, so that a step
// knows whether "back" leaves the step or only restarts it.
type countingPrompter struct {
	Prompter
	answers int
}

func (c *countingPrompter) count(err error) error {
	if err == nil {
		c.answers++
	}
	return err
}

func (c *countingPrompter) Text(ctx context.Context, label, def string, check func(string) error) (string, error) {
	v, err := c.Prompter.Text(ctx, label, def, check)
	return v, c.count(err)
}

func (c *countingPrompter) Password(ctx context.Context, label string) (string, error) {
	v, err := c.Prompter.Password(ctx, label)
	return v, c.count(err)
}

func (c *countingPrompter) YesNo(ctx context.Context, label string, def bool) (bool, error) {
	v, err := c.Prompter.YesNo(ctx, label, def)
	return v, c.count(err)
}

func (c *countingPrompter) Choose(ctx context.Context, label string, items []prompter.Choice, def string) (string, error) {
	v, err := c.Prompter.Choose(ctx, label, items, def)
	return v, c.count(err)
}

// askAll asks every question in steps. Every answer given is the default
// when a question comes again, so going back (prompter.ErrBack) and forward
// keeps what was answered: back inside a step asks that step again from
// its first question, back at its first question goes to the step
// before.
func askAll(ctx context.Context, p Prompter, opts *InitOptions, prev *initSetup) (*initSetup, error) {
	s := &initSetup{}
	if prev != nil {
		*s = *prev
	}
	serversFor := "" // the address the servers were chosen for
	if prev != nil {
		serversFor = prev.Email
	}
	reach := newReachState(opts.Net)
	cp := &countingPrompter{Prompter: p}
	steps := []func() error{
		func() (err error) {
			s.Email, err = cp.Text(ctx, "Email address", initDefault(s.Email, opts.Email), checkEmail)
			return err
		},
		func() (err error) {
			s.Name, err = cp.Text(ctx, "Your name, as shown in From: and in the AI footer", initDefault(s.Name, opts.Name), initNonEmpty)
			return err
		},
		func() error {
			if serversFor != s.Email {
				if err := chooseServers(ctx, cp, s, opts.Provider, opts.Net.Discovery); err != nil {
					return err
				}
				serversFor = s.Email
			}
			return confirmServers(ctx, cp, s, reach)
		},
		func() (err error) {
			s.Account, err = cp.Text(ctx, "Account name (short: used by --account and for keyring entries)",
				initDefault(s.Account, initDefault(opts.Account, defaultAccountName(s))), checkAccountName)
			return err
		},
		func() error {
			if err := askSecret(ctx, cp, s, opts); err != nil {
				return err
			}
			return testServers(ctx, cp, s, opts, reach)
		},
		func() error { return askLLM(ctx, cp, s, opts) },
		func() (err error) {
			p.Say("\nPolicy: review never sends anything without your approval; auto may send low-risk replies to known contacts when every safety gate passes.\n")
			s.Mode, err = cp.Text(ctx, "Mode (review or auto)", initDefault(s.Mode, initDefault(opts.Mode, config.ModeReview)), func(v string) error {
				if v != config.ModeReview && v != config.ModeAuto {
					return fmt.Errorf("%q: type review or auto", v)
				}
				return nil
			})
			return err
		},
	}
	for i := 0; i < len(steps); {
		cp.answers = 0
		err := steps[i]()
		switch {
		case errors.Is(err, prompter.ErrBack):
			if cp.answers == 0 && i > 0 {
				i--
			}
			p.Say("(back)\n")
		case err != nil:
			return nil, err
		default:
			i++
		}
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
func chooseServers(ctx context.Context, p Prompter, s *initSetup, provider string, disc autoconfig.Options) error {
	res, err := proposeServers(ctx, sayWriter{p}, s.Email, provider, disc)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var none *noSettingsError
		if errors.As(err, &none) {
			p.Say("No settings found for %s: pick your provider below (Enter: type the servers yourself).\n", none.domain)
		} else {
			p.Say("Could not look up the servers: %s\n", initFirstLine(err))
		}
		return pickProvider(ctx, p, s)
	}
	applyResult(s, res)
	if s.Source == "preset:gmail" {
		s.Notes += " For OAuth2 instead, see docs/OAUTH2.md."
	}
	return nil
}

func initFirstLine(err error) string {
	l, _, _ := strings.Cut(err.Error(), "\n")
	return l
}

func pickProvider(ctx context.Context, p Prompter, s *initSetup) error {
	presets := autoconfig.Presets()
	var items []prompter.Choice
	for _, pr := range presets {
		label := pr.Name
		if pr.ID == "generic" {
			label += ": imap." + s.Email[strings.LastIndexByte(s.Email, '@')+1:] + " and smtp…, then edit them"
		}
		items = append(items, prompter.Choice{Key: pr.ID, Label: label})
	}
	id, err := p.Choose(ctx, "Which provider hosts this address?", items, "generic")
	if err != nil {
		return err
	}
	pr, _ := presetByID(id)
	res, err := pr.Result(s.Email)
	if err != nil {
		return fmt.Errorf("preset %s: %w", id, err)
	}
	applyResult(s, res)
	return nil
}

// confirmServers shows the proposed settings until they are accepted,
// edited or replaced by a provider's. Each server is reached as soon as
// its section is answered (edited), or both when the settings are
// accepted as shown; the login is tested after the password source.
func confirmServers(ctx context.Context, p Prompter, s *initSetup, reach *reachState) error {
	for {
		showProposal(sayWriter{p}, s)
		ans, err := p.Text(ctx, "Use these settings? (y: yes, e: edit them, p: pick a provider)", "y", func(v string) error {
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
			if setup.IsLoopback(s.IMAP.Host) && strings.HasPrefix(s.Source, "preset:proton") {
				if err := askBridgeCA(ctx, p, s); err != nil {
					return err
				}
			}
			return reachServers(ctx, p, s, reach)
		case "p":
			if err := pickProvider(ctx, p, s); err != nil {
				return err
			}
		default:
			for _, e := range []struct {
				label, kind string
				srv         *initServer
			}{{"IMAP", "imap", &s.IMAP}, {"SMTP", "smtp", &s.SMTP}} {
				if err := editServer(ctx, p, e.label, e.kind, e.srv); err != nil {
					return err
				}
				reach.forgetKept(s, e.kind)
				if err := reachServer(ctx, p, s, e.kind, reach); err != nil {
					return err
				}
			}
			markEdited(s)
		}
	}
}

func editServer(ctx context.Context, p Prompter, label, kind string, e *initServer) error {
	var given hostAnswer
	hostDef := e.Host
	if _, err := parseHostAnswer(kind, hostDef); err != nil {
		hostDef = "" // not a default worth offering
	}
	if _, err := p.Text(ctx, label+" host", hostDef, func(v string) error {
		a, err := parseHostAnswer(kind, v)
		given = a
		return err
	}); err != nil {
		return err
	}
	e.Host = given.Host
	oldSec := e.Security
	if given.Security != "" {
		e.Security = given.Security
	}
	if given.Port != 0 {
		e.Port = given.Port
	}
	// What the host answer carried ("host:993", "imaps://host") is not
	// asked again.
	if given.Security == "" {
		secDef := e.Security
		if secDef == "" {
			secDef = config.SecurityTLS
		}
		var sec string
		if _, err := p.Text(ctx, label+" security (tls, starttls; insecure only for localhost)", secDef, func(v string) error {
			var err error
			sec, err = parseSecurity(v)
			return err
		}); err != nil {
			return err
		}
		e.Security = sec
	}
	if given.Port == 0 {
		port := e.Port
		if e.Security != oldSec || port == 0 {
			port = config.DefaultPort(kind, e.Security)
		}
		ps, err := p.Text(ctx, label+" port", strconv.Itoa(port), func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("%q is not a port number (1-65535; usually %s)", v, initPortHint(kind))
			}
			return nil
		})
		if err != nil {
			return err
		}
		e.Port, _ = strconv.Atoi(ps)
		if fitted, note := fitPortSecurity(kind, e.Port, e.Security); note != "" {
			p.Say("  %s\n", note)
			e.Security = fitted
		}
	}
	if given.Port != 0 && given.Security != "" {
		p.Say("  %s: port %d, %s (%s)\n", label, e.Port, e.Security, appdoctor.SecurityMode(e.Security))
	}
	var err error
	if e.Username, err = p.Text(ctx, label+" login name", e.Username, initNonEmpty); err != nil {
		return err
	}
	return nil
}

func initPortHint(kind string) string {
	if kind == "smtp" {
		return "465 for tls, 587 for starttls"
	}
	return "993 for tls, 143 for starttls"
}

func askBridgeCA(ctx context.Context, p Prompter, s *initSetup) error {
	v, err := p.Text(ctx, "Path to the certificate exported from Proton Bridge (cert.pem; empty: add tls_ca_file later)", s.TLSCAFile, func(v string) error {
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
func askSecret(ctx context.Context, p Prompter, s *initSetup, opts *InitOptions) error {
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
	items := []prompter.Choice{
		{Key: secretCmd, Label: "a command that prints it (password_cmd), e.g. pass show mail/" + s.Account},
		{Key: secretEnv, Label: "an environment variable (password_env)"},
		{Key: secretKeyring, Label: "the system keyring: type it once now, mailagent stores it there"},
		{Key: secretOAuth2, Label: "OAuth2: a command that prints an access token (Gmail, Microsoft 365; see docs/OAUTH2.md)"},
		{Key: secretLiteral, Label: "in the config file itself (not recommended)"},
	}
	def := secretKeyring
	// Probed once, before the menu: an unavailable keyring keeps its
	// number (answers typed from habit or a script stay right) and says
	// why it cannot be chosen.
	keyringErr := setup.KeyringAvailable()
	if keyringErr != nil {
		items[2].Label = "the system keyring: not available here"
		def = secretCmd
	}
	if s.IMAP.Auth == autoconfig.AuthOAuth2 {
		def = secretOAuth2
	}
	if s.Secret.Kind != "" {
		def = s.Secret.Kind
	}
	p.Say("\nWhere should mailagent get your mail password? (It is never printed.)\n")
	for {
		kind, err := p.Choose(ctx, "Password source", items, def)
		if err != nil {
			return err
		}
		prevValue := ""
		if s.Secret.Kind == kind {
			prevValue = s.Secret.Value
		}
		askPassword := func(kind string) error {
			pw, err := p.Password(ctx, "Password (not shown)")
			if err != nil {
				return err
			}
			s.Secret = secretChoice{Kind: kind, Password: pw}
			return nil
		}
		switch kind {
		case secretCmd:
			v, err := p.Text(ctx, "Command that prints the password (run with sh -c)", prevValue, initNonEmpty)
			if err != nil {
				return err
			}
			s.Secret = secretChoice{Kind: kind, Value: v}
			return nil
		case secretEnv:
			v, err := p.Text(ctx, "Environment variable name", initDefault(prevValue, "MAILAGENT_PASSWORD"), checkEnvName)
			if err != nil {
				return err
			}
			if os.Getenv(v) == "" {
				p.Say("  Note: %s is not set in this shell; export it before running mailagent.\n", v)
			}
			s.Secret = secretChoice{Kind: kind, Value: v}
			return nil
		case secretOAuth2:
			v, err := p.Text(ctx, "Command that prints a fresh access token (e.g. oama access "+s.Email+")", prevValue, initNonEmpty)
			if err != nil {
				return err
			}
			s.Secret = secretChoice{Kind: kind, Value: v}
			return nil
		case secretKeyring:
			if keyringErr != nil {
				p.Say("  The system keyring is not available here (%s). Choose another source.\n", initFirstLine(keyringErr))
				def = secretCmd
				continue
			}
			return askPassword(kind)
		case secretLiteral:
			p.Say("  The password would be stored in plain text in the config file (mode 0600).\n")
			yes, err := p.Text(ctx, `Type "yes" to do that anyway`, "no", nil)
			if err != nil {
				return err
			}
			if yes != "yes" {
				def = secretCmd
				continue
			}
			return askPassword(kind)
		}
	}
}

func checkEnvName(v string) error {
	if !initEnvName().MatchString(v) {
		return fmt.Errorf("%q is not a variable name (letters, digits and _)", v)
	}
	return nil
}

func askLLM(ctx context.Context, p Prompter, s *initSetup, opts *InitOptions) error {
	items := []prompter.Choice{{Key: "gemini", Label: "Google Gemini (cloud; needs an API key)"}}
	for _, pr := range setup.LLMPresets() {
		items = append(items, prompter.Choice{Key: pr.Name, Label: pr.Title + " (" + pr.BaseURL + ")"})
	}
	items = append(items, prompter.Choice{Key: "other", Label: "another OpenAI-compatible server or gateway"})
	def := "gemini"
	if s.LLMProvider == config.ProviderOpenAI {
		def = initDefault(s.LLMPreset, "other")
	}
	choice, err := p.Choose(ctx, "Model provider", items, def)
	if err != nil {
		return err
	}
	if choice == "gemini" {
		if s.LLMProvider != "" { // answered another provider before: its model and key do not apply
			s.Model, s.APIKeyEnv, s.APIKeyCmd, s.APIKey = "", "", "", secretChoice{}
		}
		s.LLMProvider, s.LLMPreset, s.LLMBaseURL, s.LLMStructuredOutput = "", "", "", ""
		return askGemini(ctx, p, s, opts)
	}
	return askOpenAI(ctx, p, s, choice)
}

// askOpenAI asks for an OpenAI-compatible server: its base URL, the model
// name as the server lists it, the structured-output mode and the key
// (none for a local server).
func askOpenAI(ctx context.Context, p Prompter, s *initSetup, choice string) error {
	pr, known := setup.LLMPresetByName(choice)
	if !known {
		pr = setup.LLMPreset{Name: "other", BaseURL: "http://localhost:8000/v1", StructuredOutput: setup.OutputJSONObject,
			ModelNaming: "the id the server lists at /v1/models"}
	}
	if s.LLMPreset != pr.Name {
		s.LLMBaseURL, s.Model, s.LLMStructuredOutput = "", "", ""
		s.APIKeyEnv, s.APIKeyCmd, s.APIKey = "", "", secretChoice{}
	}
	s.LLMProvider, s.LLMPreset = config.ProviderOpenAI, pr.Name
	if !pr.NeedsKey {
		p.Say("\nA local server keeps your mail on this machine. Model names: %s.\n", pr.ModelNaming)
	}
	if pr.Notes != "" {
		p.Say("  Note: %s.\n", pr.Notes)
	}
	var err error
	if s.LLMBaseURL, err = p.Text(ctx, "Server base URL", initDefault(s.LLMBaseURL, pr.BaseURL), checkBaseURL); err != nil {
		return err
	}
	if s.Model, err = p.Text(ctx, "Model name", initDefault(s.Model, pr.ExampleModel), initNonEmpty); err != nil {
		return err
	}
	mode, err := p.Choose(ctx, "Structured output", []prompter.Choice{
		{Key: string(setup.OutputJSONSchema), Label: "response_format json_schema (the server enforces the schema)"},
		{Key: string(setup.OutputJSONObject), Label: "JSON mode only; the schema goes into the prompt"},
		{Key: string(setup.OutputPrompt), Label: "neither; the schema goes into the prompt"},
	}, initDefault(s.LLMStructuredOutput, string(pr.StructuredOutput)))
	if err != nil {
		return err
	}
	s.LLMStructuredOutput = mode
	keyDef := "none"
	switch {
	case s.APIKey.Kind == secretKeyring:
		keyDef = apiKeyKeyring
	case s.APIKeyCmd != "":
		keyDef = "cmd"
	case s.APIKeyEnv != "" || pr.NeedsKey:
		keyDef = "env"
	}
	keyringErr := setup.KeyringAvailable()
	for {
		kind, err := p.Choose(ctx, "API key", []prompter.Choice{
			{Key: "none", Label: "none (local servers need none)"},
			{Key: "env", Label: "an environment variable"},
			{Key: "cmd", Label: "a command that prints it (api_key_cmd)"},
			apiKeyKeyringChoice(keyringErr),
		}, keyDef)
		if err != nil {
			return err
		}
		switch kind {
		case "none":
			s.APIKeyEnv, s.APIKeyCmd, s.APIKey = "", "", secretChoice{}
		case "env":
			v, err := p.Text(ctx, "Environment variable", initDefault(s.APIKeyEnv, initDefault(pr.KeyEnv, "OPENAI_API_KEY")), checkEnvName)
			if err != nil {
				return err
			}
			s.APIKeyEnv, s.APIKeyCmd, s.APIKey = v, "", secretChoice{}
		case apiKeyKeyring:
			ok, err := askKeyringAPIKey(ctx, p, s, keyringErr)
			if err != nil {
				return err
			}
			if !ok {
				keyDef = "env"
				continue
			}
		default:
			v, err := p.Text(ctx, "Command that prints the API key", s.APIKeyCmd, initNonEmpty)
			if err != nil {
				return err
			}
			s.APIKeyCmd, s.APIKeyEnv, s.APIKey = v, "", secretChoice{}
		}
		return nil
	}
}

func checkBaseURL(v string) error {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL such as http://localhost:11434/v1", v)
	}
	return nil
}

func askGemini(ctx context.Context, p Prompter, s *initSetup, opts *InitOptions) error {
	p.Say("\nThe Gemini API key is never written to the file; mailagent reads it when it runs.\n")
	def := "env"
	switch {
	case s.APIKey.Kind == secretKeyring:
		def = apiKeyKeyring
	case initDefault(s.APIKeyCmd, opts.APIKeyCmd) != "":
		def = "cmd"
	}
	// Probed once, before the menu, as for the mail password: an
	// unavailable keyring keeps its number and says why it cannot be chosen.
	keyringErr := setup.KeyringAvailable()
	for {
		kind, err := p.Choose(ctx, "Read the Gemini API key from", []prompter.Choice{
			{Key: "env", Label: "an environment variable"},
			{Key: "cmd", Label: "a command that prints it (api_key_cmd)"},
			apiKeyKeyringChoice(keyringErr),
		}, def)
		if err != nil {
			return err
		}
		switch kind {
		case "env":
			v, err := p.Text(ctx, "Environment variable", initDefault(s.APIKeyEnv, initDefault(opts.APIKeyEnv, defaultAPIKeyEnv)), checkEnvName)
			if err != nil {
				return err
			}
			s.APIKeyEnv, s.APIKeyCmd, s.APIKey = v, "", secretChoice{}
			if os.Getenv(v) == "" {
				p.Say("  Note: %s is not set in this shell. Get a key at https://aistudio.google.com/apikey and export it.\n", v)
			}
		case apiKeyKeyring:
			ok, err := askKeyringAPIKey(ctx, p, s, keyringErr)
			if err != nil {
				return err
			}
			if !ok {
				def = "env"
				continue
			}
		default:
			v, err := p.Text(ctx, "Command that prints the API key", initDefault(s.APIKeyCmd, opts.APIKeyCmd), initNonEmpty)
			if err != nil {
				return err
			}
			s.APIKeyCmd, s.APIKeyEnv, s.APIKey = v, "", secretChoice{}
		}
		break
	}
	var err error
	s.Model, err = p.Text(ctx, "Gemini model", initDefault(s.Model, initDefault(opts.Model, defaultModel)), initNonEmpty)
	return err
}
