package initcmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/initcfg"
	"github.com/mailagent/mailagent/internal/prompter"
)

// step is one scripted answer: the question must start with label; an
// empty answer takes the default, as Enter does.
type step struct{ label, answer string }

// scriptedPrompter is a Prompter that answers from a script and checks
// that the questions come in the scripted order. When the script ends it
// behaves like stdin ending.
type scriptedPrompter struct {
	steps    []step
	said     strings.Builder
	asked    []string // every question, in order
	saidAt   []int    // len(said) when each question was asked
	rejected []string // answers a check refused
}

var _ Prompter = (*scriptedPrompter)(nil)

func (p *scriptedPrompter) next(label string) (string, error) {
	p.asked = append(p.asked, label)
	p.saidAt = append(p.saidAt, p.said.Len())
	if len(p.steps) == 0 {
		return "", prompter.ErrInputEnded
	}
	s := p.steps[0]
	p.steps = p.steps[1:]
	if !strings.HasPrefix(label, s.label) {
		return "", fmt.Errorf("asked %q, the script expected %q", label, s.label)
	}
	return s.answer, nil
}

// saidBefore reports whether text was said before the first question
// whose label starts with question was asked.
func (p *scriptedPrompter) saidBefore(text, question string) bool {
	at := strings.Index(p.said.String(), text)
	if at < 0 {
		return false
	}
	for i, q := range p.asked {
		if strings.HasPrefix(q, question) {
			return at < p.saidAt[i]
		}
	}
	return true // never asked
}

func (p *scriptedPrompter) Say(format string, a ...any) { fmt.Fprintf(&p.said, format, a...) }

func (p *scriptedPrompter) Text(_ context.Context, label, def string, check func(string) error) (string, error) {
	for {
		v, err := p.next(label)
		if err != nil {
			return "", err
		}
		if v == "" {
			v = def
		}
		if check == nil {
			return v, nil
		}
		if err := check(v); err != nil {
			p.rejected = append(p.rejected, v)
			continue
		}
		return v, nil
	}
}

func (p *scriptedPrompter) Password(_ context.Context, label string) (string, error) {
	return p.next(label)
}

func (p *scriptedPrompter) YesNo(_ context.Context, label string, def bool) (bool, error) {
	v, err := p.next(label)
	if err != nil || v == "" {
		return def, err
	}
	return v == "y", nil
}

func (p *scriptedPrompter) Confirm(question string, def bool) (bool, error) {
	v, err := p.next(question)
	if err != nil || v == "" {
		return def, nil
	}
	return v == "y", nil
}

func (p *scriptedPrompter) Choose(_ context.Context, label string, items []prompter.Choice, def string) (string, error) {
	v, err := p.next(label)
	if err != nil {
		return "", err
	}
	if v == "" {
		v = def
	}
	if !slices.ContainsFunc(items, func(c prompter.Choice) bool { return c.Key == v }) {
		return "", fmt.Errorf("%q is not offered by %q", v, label)
	}
	return v, nil
}

// TestInterviewScripted drives the interview through the Prompter seam
// alone (no stdin, no terminal): a rejected address is asked again, the
// preset is edited to give IMAP its own login, and the result renders to
// a config that parses.
func TestInterviewScripted(t *testing.T) {
	noDiscovery(t)
	p := &scriptedPrompter{steps: []step{
		{"Email address", "not an address"},
		{"Email address", "ada@fastmail.com"},
		{"Your name", "Ada Lovelace"},
		{"Use these settings?", "e"},
		{"IMAP host", ""}, {"IMAP security", ""}, {"IMAP port", ""}, {"IMAP login name", "ada-imap"},
		{"SMTP host", ""}, {"SMTP security", ""}, {"SMTP port", ""}, {"SMTP login name", ""},
		{"Use these settings?", "y"},
		{"Account name", ""},
		{"Password source", secretCmd},
		{"Command that prints the password", "pass show mail/fastmail"},
		{"Model provider", ""},
		{"Read the Gemini API key from", "cmd"},
		{"Command that prints the API key", "pass show gemini"},
		{"Gemini model", ""},
		{"Mode", "auto"},
	}}
	s, data, err := interview(t.Context(), p, &InitOptions{Net: testNet}, "/x/config.toml")
	if err != nil {
		t.Fatalf("interview: %v\nasked: %q", err, p.asked)
	}
	if len(p.steps) != 0 {
		t.Errorf("script not used up: %v", p.steps)
	}
	if !slices.Equal(p.rejected, []string{"not an address"}) {
		t.Errorf("rejected %q, want the bad address only", p.rejected)
	}
	if !strings.Contains(p.said.String(), "imap.fastmail.com port 993") {
		t.Errorf("the proposal was not shown through Say:\n%s", p.said.String())
	}
	want := initcfg.Server{Host: "imap.fastmail.com", Port: 993, Security: "tls", Username: "ada-imap"}
	if got := s.IMAP; got.Host != want.Host || got.Port != want.Port || got.Security != want.Security || got.Username != want.Username {
		t.Errorf("IMAP %+v, want %+v", got, want)
	}
	if s.Account != "fastmail" || s.Source != "your answers" || s.Mode != "auto" || s.APIKeyCmd != "pass show gemini" || s.APIKeyEnv != "" {
		t.Errorf("setup %+v", s)
	}
	cfg, err := config.Parse(data, "/x/config.toml", 0o600)
	if err != nil {
		t.Fatalf("rendered config does not parse: %v\n%s", err, data)
	}
	a := cfg.Accounts[0]
	if a.IMAP.Username != "ada-imap" || a.SMTP.Username != "ada@fastmail.com" || a.SMTP.PasswordCmd != "pass show mail/fastmail" {
		t.Errorf("imap %+v smtp %+v", a.IMAP, a.SMTP)
	}
}

// TestInterviewScriptedAgainAndEnd: an invalid config is shown and the
// answers are asked again through YesNo; declining aborts, and a script
// that ends mid-way is prompter.ErrInputEnded.
func TestInterviewScriptedAgainAndEnd(t *testing.T) {
	noDiscovery(t)
	insecure := []step{
		{"Email address", "ada@fastmail.com"}, {"Your name", "Ada"},
		{"Use these settings?", "e"},
		{"IMAP host", ""}, {"IMAP security", "insecure"}, {"IMAP port", ""}, {"IMAP login name", ""},
		{"SMTP host", ""}, {"SMTP security", ""}, {"SMTP port", ""}, {"SMTP login name", ""},
		{"Use these settings?", "y"},
		{"Account name", ""}, {"Password source", secretEnv}, {"Environment variable name", "MAIL_PASS"},
		{"Model provider", ""}, {"Read the Gemini API key from", "env"}, {"Environment variable", ""}, {"Gemini model", ""}, {"Mode", ""},
	}
	t.Run("decline", func(t *testing.T) {
		p := &scriptedPrompter{steps: append(slices.Clone(insecure), step{"Go through the answers again?", "n"})}
		_, _, err := interview(t.Context(), p, &InitOptions{Net: testNet}, "/x/config.toml")
		var ue *cmdutil.UserError
		if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage || !strings.Contains(err.Error(), "nothing was written") {
			t.Fatalf("got %v, want a usage error that nothing was written", err)
		}
		if !strings.Contains(p.said.String(), `"insecure" is refused`) {
			t.Errorf("the config problem was not said:\n%s", p.said.String())
		}
	})
	t.Run("again with the previous answers as defaults", func(t *testing.T) {
		p := &scriptedPrompter{steps: append(slices.Clone(insecure),
			step{"Go through the answers again?", "y"},
			step{"Email address", ""}, step{"Your name", ""},
			step{"Use these settings?", "e"},
			step{"IMAP host", ""}, step{"IMAP security", "tls"}, step{"IMAP port", ""}, step{"IMAP login name", ""},
			step{"SMTP host", ""}, step{"SMTP security", ""}, step{"SMTP port", ""}, step{"SMTP login name", ""},
			step{"Use these settings?", "y"},
			step{"Account name", ""}, step{"Password source", ""}, step{"Environment variable name", ""},
			step{"Model provider", ""}, step{"Read the Gemini API key from", ""}, step{"Environment variable", ""}, step{"Gemini model", ""}, step{"Mode", ""},
		)}
		s, _, err := interview(t.Context(), p, &InitOptions{Net: testNet}, "/x/config.toml")
		if err != nil {
			t.Fatalf("interview: %v\nasked: %q", err, p.asked)
		}
		if s.IMAP.Security != "tls" || s.IMAP.Port != 993 || s.Secret.Kind != secretEnv || s.Secret.Value != "MAIL_PASS" || s.Name != "Ada" {
			t.Errorf("setup %+v", s)
		}
	})
	t.Run("input ends", func(t *testing.T) {
		p := &scriptedPrompter{steps: insecure[:3]}
		_, _, err := interview(t.Context(), p, &InitOptions{Net: testNet}, "/x/config.toml")
		if !errors.Is(err, prompter.ErrInputEnded) {
			t.Fatalf("got %v, want prompter.ErrInputEnded", err)
		}
	})
}
