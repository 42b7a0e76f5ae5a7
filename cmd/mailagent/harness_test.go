package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

const (
	// testAuthservID is the authserv-id of the test owner's own server.
	testAuthservID = "mx.example.com"
	ownerAddr      = "ada@example.com"
	ownerPass      = "imap-secret-7731"
	apiKey         = "AIza-test-key-9f8e7d"
)

// harness is a real IMAP server (imapmemserver on loopback), a fake Gemini
// REST endpoint, and a config file pointing mailagent at both.
type harness struct {
	t       *testing.T
	imap    *memimap.Server
	gemini  *geminitest.Server
	openai  *oaBridge // set by newHarnessOn for an openai provider
	smtp    *smtptest.Sink
	dir     string
	cfgPath string
	// tweak, when set, changes the Factory of every run before the
	// command tree is built (a defence switched off for a positive
	// control: cmdutil.Factory's IncomingCheckOff, PrethreadOff).
	tweak func(*cmdutil.Factory)
}

// factory is a Factory over the harness's configuration (its output
// discarded, closed when the test ends), and that configuration.
func (h *harness) factory(t *testing.T) (*Factory, *config.Config) {
	t.Helper()
	var out, errb bytes.Buffer
	f := newFactory(strings.NewReader(""), &out, &errb)
	f.ConfigPath = h.cfgPath
	t.Cleanup(f.Close)
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	return f, cfg
}

func newHarness(t *testing.T, h geminitest.Handler, extraConfig string, imapOpts ...func(*memimap.Options)) *harness {
	t.Helper()
	mo := memimap.Options{
		Users:     []memimap.User{{Name: ownerAddr, Password: ownerPass}},
		Mailboxes: []string{"Sent", "Drafts"},
	}
	for _, f := range imapOpts {
		f(&mo)
	}
	srv, err := memimap.Start(mo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	g := geminitest.NewServer(t, h)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: ownerAddr, Password: ownerPass})
	dir := t.TempDir()
	// Approvals send at once in tests unless a test sets its own undo
	// window (policy.approval_delay; the 5s default has its own tests).
	if !strings.Contains(extraConfig, "approval_delay") {
		if strings.Contains(extraConfig, "[policy]\n") {
			extraConfig = strings.Replace(extraConfig, "[policy]\n", "[policy]\napproval_delay = \"0s\"\n", 1)
		} else {
			extraConfig += "\n[policy]\napproval_delay = \"0s\"\n"
		}
	}
	harnessEnv(t)
	cfg := fmt.Sprintf(`state_dir = %q
[llm]
model = "gemini-test"
api_key_env = "MA_TEST_GEMINI_KEY"
base_url = %q
concurrency = 3
[[accounts]]
name = "personal"
email = %q
display_name = "Ada Lovelace"
authserv_id = %q
  [accounts.imap]
  host = "127.0.0.1"
  port = %d
  security = "insecure"
  password_env = "MA_TEST_IMAP_PASS"
  [accounts.smtp]
  host = "127.0.0.1"
  port = %d
  security = "insecure"
  password_env = "MA_TEST_IMAP_PASS"
%s`, filepath.Join(dir, "state"), g.URL, ownerAddr, testAuthservID, srv.Port, sink.Port, extraConfig)
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, imap: srv, gemini: g, smtp: sink, dir: dir, cfgPath: path}
}

func (h *harness) deliver(raw string) {
	h.t.Helper()
	h.appendTo("INBOX", raw)
}

func (h *harness) appendTo(mailbox, raw string) {
	h.t.Helper()
	raw = strings.ReplaceAll(raw, "\n", "\r\n")
	if _, err := h.imap.Append(context.Background(), ownerAddr, mailbox, []byte(raw), nil, time.Now()); err != nil {
		h.t.Fatal(err)
	}
}

// run executes the command line in process and returns stdout, stderr and
// the exit code.
func (h *harness) run(args ...string) (string, string, int) {
	h.t.Helper()
	var out, errb bytes.Buffer
	code := root.Main(append([]string{"--config", h.cfgPath}, args...), iostreams.New(strings.NewReader(""), &out, &errb),
		func(f *cmdutil.Factory) []*cobra.Command {
			if h.tweak != nil {
				h.tweak(f)
			}
			return wireLegacy(f)
		})
	return out.String(), errb.String(), code
}

// classifyReply is a Gemini handler that classifies by keywords in the
// prompt, as a (well-behaved) model would.
func classifyReply(req *geminitest.Request) geminitest.Reply {
	user := req.UserText()
	c := map[string]any{
		"intents": []string{"information_request"}, "risk": "low", "action": "reply",
		"requires_approval": false, "confidence": 0.9, "summary": "asks a question", "comments": "plain question",
	}
	switch {
	case strings.Contains(user, "invoice"):
		c["intents"] = []string{"sensitive_legal_financial"}
		c["risk"] = "high"
		c["requires_approval"] = true
	case strings.Contains(user, "GARBAGE"):
		return geminitest.Reply{Text: `{"intents": ["nonsense"], "risk": "extreme"}`, Usage: llm.Usage{PromptTokens: 10, OutputTokens: 5, TotalTokens: 15}}
	}
	return geminitest.JSONReply(c, llm.Usage{PromptTokens: 500, OutputTokens: 40, TotalTokens: 540})
}

// rawMail is a message whose sender the owner's server authenticated: it
// carries the Authentication-Results header mx.example.com adds for a
// DMARC pass of the From domain.
func rawMail(from, subject, body string, extra ...string) string {
	return unauthenticatedMail(from, subject, body, append([]string{authResults(from, "pass")}, extra...)...)
}

// authResults is the header the owner's server adds, with the given DMARC
// (and DKIM) verdict for from's domain.
func authResults(from, verdict string) string {
	d := strings.TrimSuffix(from[strings.LastIndexByte(from, '@')+1:], ">")
	return "Authentication-Results: " + testAuthservID + "; dkim=" + verdict + " header.d=" + d + "; spf=pass smtp.mailfrom=" + d + "; dmarc=" + verdict + " header.from=" + d
}

// unauthenticatedMail is a message with only the given extra headers (put
// above the others): no Authentication-Results unless one is given.
func unauthenticatedMail(from, subject, body string, extra ...string) string {
	h := ""
	for _, e := range extra {
		h += e + "\n"
	}
	h += "From: " + from + "\nTo: Ada <ada@example.com>\nSubject: " + subject +
		"\nDate: Mon, 02 Nov 2026 10:00:00 +0000\nMessage-ID: <" + strings.ReplaceAll(strings.ToLower(subject), " ", "-") + "@test.example>\n"
	return h + "\n" + body + "\n"
}

func timeNow() time.Time { return time.Now() }

type agentEvent = agent.Event

var errNotActionable = agent.ErrNotActionable

// runMain runs the command line without a harness config.
func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}
