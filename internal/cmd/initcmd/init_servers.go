package initcmd

import (
	"context"
	"fmt"
	"io"
	"net/mail"
	"strings"
	"unicode"

	"github.com/mailagent/mailagent/internal/autoconfig"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/termsafe"

	"github.com/mailagent/mailagent/internal/app/setup"
	"github.com/mailagent/mailagent/internal/cmdutil"
)

// The answers init gets without asking: from flags (--non-interactive),
// and the server settings proposed from a preset or autodiscovery, with
// the checks shared by flags and the interview.

func fromFlags(ctx context.Context, w io.Writer, opts *InitOptions) (*initSetup, error) {
	s := &initSetup{Email: strings.TrimSpace(opts.Email), Name: strings.TrimSpace(opts.Name)}
	res, err := proposeServers(ctx, w, s.Email, opts.Provider, opts.Net.Discovery)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: err,
			Hint: "pass --provider (" + strings.Join(presetIDs(), ", ") + "), or run `mailagent init` interactively to type the servers"}
	}
	applyResult(s, res)
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
	s.Mode = initDefault(opts.Mode, config.ModeReview)
	if opts.LLM != "" && opts.LLM != "gemini" {
		llmFromFlags(s, opts)
		return s, nil
	}
	if s.APIKeyCmd == "" && s.APIKeyEnv == "" {
		s.APIKeyEnv = defaultAPIKeyEnv
	}
	s.Model = initDefault(opts.Model, defaultModel)
	return s, nil
}

// llmFromFlags fills in an OpenAI-compatible server from --llm (a preset,
// or "other"), --llm-base-url, --model and --structured-output, as the
// interview's answers would: a local server gets no key unless one was
// given, a server that needs one gets its conventional variable.
func llmFromFlags(s *initSetup, opts *InitOptions) {
	pr, known := setup.LLMPresetByName(opts.LLM)
	if !known {
		pr = setup.LLMPreset{Name: "other", StructuredOutput: setup.OutputJSONObject}
	}
	s.LLMProvider, s.LLMPreset = config.ProviderOpenAI, pr.Name
	s.LLMBaseURL = initDefault(opts.LLMBaseURL, pr.BaseURL)
	s.Model = initDefault(opts.Model, pr.ExampleModel)
	s.LLMStructuredOutput = initDefault(opts.StructuredOutput, string(pr.StructuredOutput))
	if s.APIKeyEnv == "" && s.APIKeyCmd == "" && pr.NeedsKey {
		s.APIKeyEnv = pr.KeyEnv
	}
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
func proposeServers(ctx context.Context, w io.Writer, email, provider string, disc autoconfig.Options) (*autoconfig.Result, error) {
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
	res, err := autoconfig.Discover(ctx, email, disc)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &noSettingsError{domain: domain, cause: err}
	}
	return res, nil
}

// applyResult takes the server settings of r into s.
func applyResult(s *initSetup, r *autoconfig.Result) {
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
	// Names, logins and notes may come from the network (autoconfig,
	// ISPDB): sanitised like any untrusted text on a terminal.
	fmt.Fprintf(w, "\nServer settings for %s (from %s):\n", termsafe.Line(name), termsafe.Line(s.Source))
	for _, e := range []struct {
		kind string
		srv  initServer
	}{{"IMAP", s.IMAP}, {"SMTP", s.SMTP}} {
		fmt.Fprintf(w, "  %s  %s port %d, %s, login %s\n", e.kind, termsafe.Line(e.srv.Host), e.srv.Port, termsafe.Line(e.srv.Security), termsafe.Line(e.srv.Username))
	}
	if s.Notes != "" {
		fmt.Fprintf(w, "  Note: %s\n", termsafe.Line(s.Notes))
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

// noSettingsError is autodiscovery finding nothing. It reads as one short
// line: the per-source reasons (404s, timeouts, NXDOMAIN) stay in the
// chain for errors.Is, not on the screen.
type noSettingsError struct {
	domain string
	cause  error
}

func (e *noSettingsError) Error() string {
	return "no server settings found for " + e.domain + " (autoconfig, Thunderbird ISPDB and DNS SRV have none)"
}

func (e *noSettingsError) Unwrap() error { return e.cause }
