package initcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
	"github.com/zalando/go-keyring"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/autoconfig"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

// None of these tests is parallel: they set testNet (init's way out,
// given to every init they run), go-keyring's global provider and
// environment variables.

// testNet is what the init of a test reaches the world through (runInit
// passes it to init through NewCmdInit's runF, the interview tests put it
// in their InitOptions); the helpers below set it for one test.
var testNet InitNet

// setNet changes testNet for the test, and restores it after.
func setNet(t *testing.T, change func(*InitNet)) {
	t.Helper()
	// sequential: testNet is the package's; every test reads it.
	old := testNet
	change(&testNet)
	t.Cleanup(func() { testNet = old })
}

// runInit runs `mailagent init args…` in process with stdin as the typed
// answers, and returns the exit code, stdout and stderr. The command is
// NewCmdInit under a root with the global flags (testRoot), its runF
// giving the wizard testNet.
func runInit(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(config.EnvConfig, "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errb bytes.Buffer
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	f := cmdutil.New(iostreams.New(strings.NewReader(stdin), &out, &errb))
	defer f.Close()
	cmd := NewCmdInit(f, func(ctx context.Context, o *InitOptions) error {
		o.Net = testNet
		return initRun(ctx, o)
	})
	root := testRoot(f, cmd)
	root.SetArgs(append([]string{"init"}, args...))
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	code = cmdutil.Report(f.IOStreams.ErrOut, root.ExecuteContext(ctx))
	return code, out.String(), errb.String()
}

// testRoot is cmd under a `mailagent` root with the global flags and the
// usage rules internal/cmd/root gives the real tree (which a test of
// this package cannot import: root imports it).
func testRoot(f *cmdutil.Factory, cmd *cobra.Command) *cobra.Command {
	root := &cobra.Command{Use: "mailagent", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().StringVar(&f.ConfigPath, "config", "", "config file")
	root.PersistentFlags().StringVar(&f.StateDir, "state-dir", "", "state directory")
	root.PersistentFlags().BoolVarP(&f.Verbose, "verbose", "v", false, "also log to stderr")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.UsageErr("%v", err) })
	root.AddCommand(cmd)
	cmdutil.UsageArgs(root)
	return root
}

// answers joins typed answers, one per line; "" is pressing Enter.
func answers(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// withDiscovery points autodiscovery at opts for the test.
func withDiscovery(t *testing.T, opts autoconfig.Options) {
	t.Helper()
	setNet(t, func(n *InitNet) { n.Discovery = opts })
}

// noDiscovery fails the test when discovery touches the network, and
// turns the server tests of the interview off (they would dial the
// presets' real servers); liveProbes turns them back on.
func noDiscovery(t *testing.T) {
	t.Helper()
	withProbe(t, func(context.Context, string, *config.Account) error { return nil })
	withReach(t, func(context.Context, string, config.Endpoint) error { return nil })
	withDiscovery(t, autoconfig.Options{
		HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			t.Errorf("unexpected HTTP request to %s", r.URL)
			return nil, errors.New("network disabled in test")
		})},
		Resolver: &srvTable{},
	})
}

// withProbe replaces the interview's server test for the test.
func withProbe(t *testing.T, probe serverProbe) {
	t.Helper()
	setNet(t, func(n *InitNet) { n.Probe = probe })
}

// withReach replaces the interview's early connect test (no login) for
// the test.
func withReach(t *testing.T, reach serverReach) {
	t.Helper()
	setNet(t, func(n *InitNet) { n.Reach = reach })
}

// liveProbes lets the interview dial the servers typed (loopback test
// servers): the early connect test and the login test.
func liveProbes(t *testing.T) {
	setNet(t, func(n *InitNet) { n.Probe, n.Reach = nil, nil }) // nil: the live ones
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// srvTable answers SRV queries from records keyed "_service._proto.name".
type srvTable struct {
	mu      sync.Mutex
	records map[string][]*net.SRV
}

func (s *srvTable) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	key := fmt.Sprintf("_%s._%s.%s", service, proto, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	if recs, ok := s.records[key]; ok {
		return key, recs, nil
	}
	return "", nil, &net.DNSError{Err: "no such host", Name: key, IsNotFound: true}
}

// loadConfig loads path with config.Load and checks its mode.
func loadConfig(t *testing.T, path string) (*config.Config, string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("config not written: %v", err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("config mode: got %04o, want 0600", got)
	}
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, string(raw)
}

type wantEndpoint struct {
	host     string
	port     int
	security string
	username string
}

func checkEndpoint(t *testing.T, kind string, got config.Endpoint, want wantEndpoint) {
	t.Helper()
	if got.Host != want.host || got.Port != want.port || got.Security != want.security || got.Username != want.username {
		t.Errorf("%s: got %s:%d %s login %s, want %s:%d %s login %s", kind,
			got.Host, got.Port, got.Security, got.Username, want.host, want.port, want.security, want.username)
	}
}

// fastmailScript answers every question for ada@fastmail.com; secret holds
// the answers of the password step.
func fastmailScript(secret ...string) string {
	lines := []string{
		"ada@fastmail.com", // email
		"Ada Lovelace",     // name
		"y",                // use the preset's servers
		"",                 // account name: fastmail
	}
	lines = append(lines, secret...)
	lines = append(lines,
		"", // model provider: gemini
		"", // API key from an environment variable
		"", // GEMINI_API_KEY
		"", // model
		"", // mode: review
	)
	return answers(lines...)
}

func TestInitFastmailPresetWithPasswordCmd(t *testing.T) {
	noDiscovery(t)
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "config.toml")
	code, stdout, stderr := runInit(t, fastmailScript("1", "pass show mail/ada"), "--config", path, "--no-doctor")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
	}
	if stdout != path+"\n" {
		t.Errorf("stdout: got %q, want the path %q", stdout, path+"\n")
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("parent dir: got %v (err %v), want mode 0700", fi.Mode().Perm(), err)
	}
	cfg, raw := loadConfig(t, path)
	acct := cfg.Accounts[0]
	if acct.Name != "fastmail" || acct.Email != "ada@fastmail.com" || acct.DisplayName != "Ada Lovelace" {
		t.Errorf("account: got name %q email %q display %q, want fastmail ada@fastmail.com Ada Lovelace", acct.Name, acct.Email, acct.DisplayName)
	}
	checkEndpoint(t, "imap", acct.IMAP, wantEndpoint{"imap.fastmail.com", 993, "tls", "ada@fastmail.com"})
	checkEndpoint(t, "smtp", acct.SMTP, wantEndpoint{"smtp.fastmail.com", 465, "tls", "ada@fastmail.com"})
	if acct.IMAP.PasswordCmd != "pass show mail/ada" {
		t.Errorf("imap password_cmd: got %q, want %q", acct.IMAP.PasswordCmd, "pass show mail/ada")
	}
	if acct.SMTP.PasswordCmd != "pass show mail/ada" {
		t.Errorf("smtp password_cmd (inherited): got %q, want %q", acct.SMTP.PasswordCmd, "pass show mail/ada")
	}
	if !acct.IMAP.Password.Empty() || strings.Contains(raw, "password =") {
		t.Errorf("the file holds a literal password:\n%s", raw)
	}
	if cfg.LLM.APIKeyEnv != "GEMINI_API_KEY" || cfg.LLM.Model != "gemini-2.5-flash" || cfg.Policy.Mode != config.ModeReview {
		t.Errorf("llm/policy: got key env %q model %q mode %q, want GEMINI_API_KEY gemini-2.5-flash review",
			cfg.LLM.APIKeyEnv, cfg.LLM.Model, cfg.Policy.Mode)
	}
	if !strings.Contains(raw, "# ") {
		t.Errorf("the file has no comments for the user:\n%s", raw)
	}
	for _, want := range []string{"Email address", "Fastmail", "mailagent --config " + path + " triage --dry-run --limit 20", "watch"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

const autoconfigXML = `<?xml version="1.0" encoding="UTF-8"?>
<clientConfig version="1.1">
  <emailProvider id="example.org">
    <domain>example.org</domain>
    <displayName>Example Mail</displayName>
    <incomingServer type="imap">
      <hostname>imap.%EMAILDOMAIN%</hostname>
      <port>993</port>
      <socketType>SSL</socketType>
      <username>%EMAILLOCALPART%</username>
      <authentication>password-cleartext</authentication>
    </incomingServer>
    <outgoingServer type="smtp">
      <hostname>smtp.example.org</hostname>
      <port>587</port>
      <socketType>STARTTLS</socketType>
      <username>%EMAILADDRESS%</username>
      <authentication>password-cleartext</authentication>
    </outgoingServer>
  </emailProvider>
</clientConfig>`

const ispdbXML = `<?xml version="1.0"?>
<clientConfig version="1.1">
  <emailProvider id="example.org">
    <domain>example.org</domain>
    <displayName>Example via ISPDB</displayName>
    <incomingServer type="imap">
      <hostname>mail.example.org</hostname>
      <port>143</port>
      <socketType>STARTTLS</socketType>
      <username>%EMAILADDRESS%</username>
      <authentication>password-cleartext</authentication>
    </incomingServer>
    <outgoingServer type="smtp">
      <hostname>mail.example.org</hostname>
      <port>465</port>
      <socketType>SSL</socketType>
      <username>%EMAILADDRESS%</username>
      <authentication>password-cleartext</authentication>
    </outgoingServer>
  </emailProvider>
</clientConfig>`

func TestInitAutodiscovery(t *testing.T) {
	const email = "ada@example.org"
	tests := []struct {
		name       string
		routes     map[string]string // path → XML served
		srv        map[string][]*net.SRV
		serverStep []string // answers between "name" and "account name"
		wantSource string   // in stderr
		imap, smtp wantEndpoint
		// smtpOwn: the SMTP login differs from IMAP's, so SMTP has its
		// own secret source rather than inheriting.
		smtpOwn bool
	}{
		{
			name:       "domain autoconfig",
			routes:     map[string]string{"/autoconfig/example.org/mail/config-v1.1.xml": autoconfigXML},
			serverStep: []string{"y"},
			wantSource: "autoconfig:",
			imap:       wantEndpoint{"imap.example.org", 993, "tls", "ada"},
			smtp:       wantEndpoint{"smtp.example.org", 587, "starttls", email},
			smtpOwn:    true,
		},
		{
			name:       "ispdb",
			routes:     map[string]string{"/ispdb/example.org": ispdbXML},
			serverStep: []string{"y"},
			wantSource: "ispdb",
			imap:       wantEndpoint{"mail.example.org", 143, "starttls", email},
			smtp:       wantEndpoint{"mail.example.org", 465, "tls", email},
		},
		{
			name: "dns srv",
			srv: map[string][]*net.SRV{
				"_imaps._tcp.example.org":      {{Target: "imap.mx.example.org.", Port: 993}},
				"_submission._tcp.example.org": {{Target: "smtp.mx.example.org.", Port: 587}},
			},
			serverStep: []string{"y"},
			wantSource: "srv",
			imap:       wantEndpoint{"imap.mx.example.org", 993, "tls", email},
			smtp:       wantEndpoint{"smtp.mx.example.org", 587, "starttls", email},
		},
		{
			name: "nothing found: generic, then edited",
			serverStep: []string{
				"",                             // provider menu: generic
				"e",                            // edit
				"mail.example.org", "", "", "", // IMAP host, security tls, port 993, login
				"mail.example.org", "tls", "", "", // SMTP host, security tls → port 465, login
				"y",
			},
			wantSource: "No settings found",
			imap:       wantEndpoint{"mail.example.org", 993, "tls", email},
			smtp:       wantEndpoint{"mail.example.org", 465, "tls", email},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.URL.Path)
				mu.Unlock()
				if body, ok := tt.routes[r.URL.Path]; ok {
					w.Header().Set("Content-Type", "text/xml")
					_, _ = io.WriteString(w, body)
					return
				}
				http.NotFound(w, r)
			}))
			t.Cleanup(hs.Close)
			withDiscovery(t, autoconfig.Options{
				HTTPClient: hs.Client(),
				Resolver:   &srvTable{records: tt.srv},
				ISPDBURL:   hs.URL + "/ispdb/",
				AutoconfigURL: func(domain string) []string {
					return []string{hs.URL + "/autoconfig/" + domain + "/mail/config-v1.1.xml"}
				},
			})
			withProbe(t, func(context.Context, string, *config.Account) error { return nil }) // the hosts are made up
			withReach(t, func(context.Context, string, config.Endpoint) error { return nil })
			t.Setenv("MA_TEST_MAIL_PASS", "x")
			lines := []string{email, "Ada Lovelace"}
			lines = append(lines, tt.serverStep...)
			lines = append(lines, "", "2", "MA_TEST_MAIL_PASS", "", "", "", "", "")
			path := filepath.Join(t.TempDir(), "config.toml")
			code, _, stderr := runInit(t, answers(lines...), "--config", path, "--no-doctor")
			if code != cmdutil.ExitOK {
				t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
			}
			if !strings.Contains(stderr, tt.wantSource) {
				t.Errorf("stderr does not name the source %q:\n%s", tt.wantSource, stderr)
			}
			mu.Lock()
			if len(seen) == 0 {
				t.Errorf("discovery made no request to the test server")
			}
			mu.Unlock()
			cfg, _ := loadConfig(t, path)
			acct := cfg.Accounts[0]
			if acct.Name != "example" {
				t.Errorf("account name: got %q, want example", acct.Name)
			}
			checkEndpoint(t, "imap", acct.IMAP, tt.imap)
			checkEndpoint(t, "smtp", acct.SMTP, tt.smtp)
			for kind, e := range map[string]config.Endpoint{"imap": acct.IMAP, "smtp": acct.SMTP} {
				if e.PasswordEnv != "MA_TEST_MAIL_PASS" {
					t.Errorf("%s password_env: got %q, want MA_TEST_MAIL_PASS", kind, e.PasswordEnv)
				}
				if _, err := e.ResolvePassword(context.Background()); err != nil {
					t.Errorf("%s: resolve password: %v", kind, err)
				}
			}
			raw, _ := os.ReadFile(path)
			if got := strings.Count(string(raw), "password_env ="); (got == 2) != tt.smtpOwn {
				t.Errorf("password_env lines: got %d, want SMTP's own login %v", got, tt.smtpOwn)
			}
		})
	}
}

func TestInitRefusesToOverwrite(t *testing.T) {
	noDiscovery(t)
	tests := []struct {
		name         string
		args         []string
		wantCode     int
		wantReplaced bool
	}{
		{name: "interactive without --force", wantCode: cmdutil.ExitUsage},
		{name: "non-interactive without --force", args: []string{"--non-interactive", "--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P"}, wantCode: cmdutil.ExitUsage},
		{name: "with --force", args: []string{"--force", "--non-interactive", "--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P"}, wantCode: cmdutil.ExitOK, wantReplaced: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			const old = "# my hand-written config\n"
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"--config", path, "--no-doctor"}, tt.args...)
			code, _, stderr := runInit(t, fastmailScript("1", "pass show mail/ada"), args...)
			if code != tt.wantCode {
				t.Fatalf("exit code: got %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			raw, _ := os.ReadFile(path)
			if replaced := string(raw) != old; replaced != tt.wantReplaced {
				t.Errorf("file replaced: got %v, want %v", replaced, tt.wantReplaced)
			}
			if !tt.wantReplaced {
				if !strings.Contains(stderr, "already exists") || !strings.Contains(stderr, "--force") {
					t.Errorf("stderr should say the file exists and name --force:\n%s", stderr)
				}
				if strings.Contains(stderr, "Email address") {
					t.Errorf("init asked questions before refusing:\n%s", stderr)
				}
				return
			}
			loadConfig(t, path) // mode 0600 and valid
		})
	}
}

func TestInitEOFWritesNothing(t *testing.T) {
	noDiscovery(t)
	full := strings.Split(strings.TrimSuffix(fastmailScript("3", "app-pass-Zq81"), "\n"), "\n")
	for n := 0; n < len(full); n++ {
		t.Run(fmt.Sprintf("after %d answers", n), func(t *testing.T) {
			keyring.MockInit()
			path := filepath.Join(t.TempDir(), "sub", "config.toml")
			script := ""
			if n > 0 {
				script = answers(full[:n]...)
			}
			code, stdout, stderr := runInit(t, script, "--config", path, "--no-doctor")
			if code != cmdutil.ExitUsage {
				t.Fatalf("exit code: got %d, want %d; stderr:\n%s", code, cmdutil.ExitUsage, stderr)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("config exists after EOF (stat err %v)", err)
			}
			if stdout != "" {
				t.Errorf("stdout: got %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, "nothing was written") {
				t.Errorf("stderr does not say nothing was written:\n%s", stderr)
			}
			if _, err := keyring.Get(config.KeyringService, "fastmail/imap"); !errors.Is(err, keyring.ErrNotFound) {
				t.Errorf("keyring entry after EOF: got err %v, want ErrNotFound", err)
			}
		})
	}
}

func TestInitKeyring(t *testing.T) {
	noDiscovery(t)
	const pw = "app-pass-Zq81"
	tests := []struct {
		name      string
		script    string
		wantUsers []string
		imap      wantEndpoint
	}{
		{
			name:      "fastmail: one entry, smtp inherits",
			script:    fastmailScript("3", pw),
			wantUsers: []string{"fastmail/imap"},
			imap:      wantEndpoint{"imap.fastmail.com", 993, "tls", "ada@fastmail.com"},
		},
		{
			name: "icloud: the logins differ, so smtp has its own entry",
			script: answers("ada@icloud.com", "Ada Lovelace", "y", "", "3", pw,
				"", "", "", "", ""),
			wantUsers: []string{"icloud/imap", "icloud/smtp"},
			imap:      wantEndpoint{"imap.mail.me.com", 993, "tls", "ada"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keyring.MockInit()
			path := filepath.Join(t.TempDir(), "config.toml")
			code, stdout, stderr := runInit(t, tt.script, "--config", path, "--no-doctor")
			if code != cmdutil.ExitOK {
				t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
			}
			if strings.Contains(stdout+stderr, pw) {
				t.Errorf("the password was printed:\nstdout: %s\nstderr: %s", stdout, stderr)
			}
			for _, u := range tt.wantUsers {
				got, err := keyring.Get(config.KeyringService, u)
				if err != nil || got != pw {
					t.Errorf("keyring %s/%s: got %q (err %v), want the typed password", config.KeyringService, u, got, err)
				}
			}
			cfg, raw := loadConfig(t, path)
			if strings.Contains(raw, pw) {
				t.Errorf("the file holds the password:\n%s", raw)
			}
			acct := cfg.Accounts[0]
			checkEndpoint(t, "imap", acct.IMAP, tt.imap)
			if !acct.IMAP.PasswordKeyring {
				t.Errorf("imap password_keyring: got false, want true")
			}
			if got := acct.IMAP.KeyringUser(); got != tt.wantUsers[0] {
				t.Errorf("imap keyring user: got %q, want %q", got, tt.wantUsers[0])
			}
			for kind, e := range map[string]config.Endpoint{"imap": acct.IMAP, "smtp": acct.SMTP} {
				got, err := e.ResolvePassword(context.Background())
				if err != nil || got.Reveal() != pw {
					t.Errorf("%s resolves from the keyring: got err %v, want the typed password", kind, err)
				}
			}
		})
	}
}

func TestInitKeyringUnavailableOffersOthers(t *testing.T) {
	noDiscovery(t)
	keyring.MockInitWithError(errors.New("no secret service on the session bus"))
	t.Cleanup(keyring.MockInit)
	path := filepath.Join(t.TempDir(), "config.toml")
	// 3 = keyring, refused; the menu is then cmd, env, oauth2, literal.
	code, _, stderr := runInit(t, fastmailScript("3", "1", "pass show mail/ada"), "--config", path, "--no-doctor")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "keyring is not available") {
		t.Errorf("stderr does not say the keyring is unavailable:\n%s", stderr)
	}
	cfg, _ := loadConfig(t, path)
	if got := cfg.Accounts[0].IMAP; got.PasswordKeyring || got.PasswordCmd != "pass show mail/ada" {
		t.Errorf("imap: got password_keyring %v password_cmd %q, want false and %q", got.PasswordKeyring, got.PasswordCmd, "pass show mail/ada")
	}
}

func TestInitLiteralPasswordOnlyWhenInsisted(t *testing.T) {
	noDiscovery(t)
	const pw = "literal-Pw-5521"
	tests := []struct {
		name        string
		secret      []string
		wantLiteral bool
	}{
		{name: "declined, falls back to a command", secret: []string{"5", "no", "1", "pass show mail/ada"}},
		{name: "insisted", secret: []string{"5", "yes", pw}, wantLiteral: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			code, stdout, stderr := runInit(t, fastmailScript(tt.secret...), "--config", path, "--no-doctor")
			if code != cmdutil.ExitOK {
				t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
			}
			if strings.Contains(stdout+stderr, pw) {
				t.Errorf("the password was printed")
			}
			cfg, _ := loadConfig(t, path)
			got := cfg.Accounts[0].IMAP.Password
			if got.Empty() == tt.wantLiteral || (tt.wantLiteral && got.Reveal() != pw) {
				t.Errorf("literal password set: got %v, want %v", !got.Empty(), tt.wantLiteral)
			}
		})
	}
}

func TestInitInvalidSettings(t *testing.T) {
	noDiscovery(t)
	// Edit the Fastmail preset to plain IMAP on a public host, which the
	// config refuses.
	insecure := []string{
		"ada@fastmail.com", "Ada Lovelace",
		"e", "", "insecure", "", "", // IMAP: host, security, port 143, login
		"", "", "", "", // SMTP unchanged
		"y", "", "1", "pass show mail/ada", "", "", "", "", "",
	}
	tests := []struct {
		name     string
		then     []string
		wantCode int
	}{
		{name: "abort", then: []string{"n"}, wantCode: cmdutil.ExitUsage},
		{
			name: "answer again",
			then: []string{
				"y", "", "", // again; email and name kept
				"e", "", "tls", "", "", "", "", "", "", "y", // back to tls: port follows to 993
				"", "", "", "", "", "", "", "", // account, secret kept, llm, mode
			},
			wantCode: cmdutil.ExitOK,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			code, _, stderr := runInit(t, answers(append(insecure, tt.then...)...), "--config", path, "--no-doctor")
			if code != tt.wantCode {
				t.Fatalf("exit code: got %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			if !strings.Contains(stderr, `"insecure" is refused`) {
				t.Errorf("stderr does not show the config problem:\n%s", stderr)
			}
			if tt.wantCode != cmdutil.ExitOK {
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("config written after abort (stat err %v)", err)
				}
				return
			}
			cfg, _ := loadConfig(t, path)
			checkEndpoint(t, "imap", cfg.Accounts[0].IMAP, wantEndpoint{"imap.fastmail.com", 993, "tls", "ada@fastmail.com"})
			if got := cfg.Accounts[0].IMAP.PasswordCmd; got != "pass show mail/ada" {
				t.Errorf("password_cmd kept from the first round: got %q", got)
			}
		})
	}
}

func TestInitNonInteractive(t *testing.T) {
	base := []string{"--non-interactive", "--no-doctor"}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		check    func(t *testing.T, cfg *config.Config)
	}{
		{
			name:     "fastmail with password env and a name that needs quoting",
			args:     []string{"--email", "ada@fastmail.com", "--name", `Ada "Countess" Lovelace \ Byron`, "--password-env", "FM_PASS"},
			wantCode: cmdutil.ExitOK,
			check: func(t *testing.T, cfg *config.Config) {
				a := cfg.Accounts[0]
				checkEndpoint(t, "imap", a.IMAP, wantEndpoint{"imap.fastmail.com", 993, "tls", "ada@fastmail.com"})
				if a.DisplayName != `Ada "Countess" Lovelace \ Byron` {
					t.Errorf("display name: got %q", a.DisplayName)
				}
				if a.IMAP.PasswordEnv != "FM_PASS" || a.SMTP.PasswordEnv != "FM_PASS" {
					t.Errorf("password_env: got imap %q smtp %q, want FM_PASS", a.IMAP.PasswordEnv, a.SMTP.PasswordEnv)
				}
			},
		},
		{
			name:     "gmail with oauth2 and auto mode",
			args:     []string{"--email", "ada@gmail.com", "--name", "Ada", "--oauth2-token-cmd", "oama access ada@gmail.com", "--mode", "auto", "--api-key-cmd", "pass show gemini"},
			wantCode: cmdutil.ExitOK,
			check: func(t *testing.T, cfg *config.Config) {
				a := cfg.Accounts[0]
				if a.Name != "gmail" {
					t.Errorf("account name: got %q, want gmail", a.Name)
				}
				checkEndpoint(t, "smtp", a.SMTP, wantEndpoint{"smtp.gmail.com", 465, "tls", "ada@gmail.com"})
				if !a.IMAP.UsesOAuth2() || !a.SMTP.UsesOAuth2() {
					t.Errorf("oauth2: got imap %v smtp %v, want both", a.IMAP.UsesOAuth2(), a.SMTP.UsesOAuth2())
				}
				if cfg.Policy.Mode != config.ModeAuto || cfg.LLM.APIKeyCmd != "pass show gemini" || cfg.LLM.APIKeyEnv != "" {
					t.Errorf("got mode %q api_key_cmd %q api_key_env %q", cfg.Policy.Mode, cfg.LLM.APIKeyCmd, cfg.LLM.APIKeyEnv)
				}
			},
		},
		{
			name:     "unknown domain with --provider generic",
			args:     []string{"--email", "ada@example.net", "--name", "Ada", "--provider", "generic", "--password-cmd", "pass mail", "--account", "work"},
			wantCode: cmdutil.ExitOK,
			check: func(t *testing.T, cfg *config.Config) {
				a := cfg.Accounts[0]
				if a.Name != "work" {
					t.Errorf("account name: got %q, want work", a.Name)
				}
				checkEndpoint(t, "imap", a.IMAP, wantEndpoint{"imap.example.net", 993, "tls", "ada@example.net"})
				checkEndpoint(t, "smtp", a.SMTP, wantEndpoint{"smtp.example.net", 587, "starttls", "ada@example.net"})
			},
		},
		{
			name:     "a local model server by preset",
			args:     []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--llm", "ollama", "--model", "qwen2.5:14b"},
			wantCode: cmdutil.ExitOK,
			check: func(t *testing.T, cfg *config.Config) {
				l := cfg.LLM
				if l.Provider != "openai" || l.BaseURL != "http://localhost:11434/v1" || l.Model != "qwen2.5:14b" || l.StructuredOutput != "json_schema" ||
					l.APIKeyEnv != "" || l.APIKeyCmd != "" {
					t.Errorf("llm: %+v, want ollama's base URL, the model given, json_schema, no key", l)
				}
			},
		},
		{
			name: "another OpenAI-compatible server with its own mode and key",
			args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--llm", "other",
				"--llm-base-url", "https://gateway.example/v1", "--structured-output", "prompt", "--api-key-cmd", "pass show gw", "--model", "m1"},
			wantCode: cmdutil.ExitOK,
			check: func(t *testing.T, cfg *config.Config) {
				l := cfg.LLM
				if l.Provider != "openai" || l.BaseURL != "https://gateway.example/v1" || l.StructuredOutput != "prompt" || l.APIKeyCmd != "pass show gw" || l.Model != "m1" {
					t.Errorf("llm: %+v", l)
				}
			},
		},
		{
			name:     "the OpenAI cloud gets its key variable",
			args:     []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--llm", "openai"},
			wantCode: cmdutil.ExitOK,
			check: func(t *testing.T, cfg *config.Config) {
				if l := cfg.LLM; l.APIKeyEnv != "OPENAI_API_KEY" || l.BaseURL != "https://api.openai.com/v1" || l.Model != "gpt-4o-mini" {
					t.Errorf("llm: %+v", l)
				}
			},
		},
		{name: "unknown model server", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--llm", "skynet"}, wantCode: cmdutil.ExitUsage},
		{name: "other without a base URL", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--llm", "other"}, wantCode: cmdutil.ExitUsage},
		{name: "base URL not http", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--llm", "vllm", "--llm-base-url", "file:///etc/passwd"}, wantCode: cmdutil.ExitUsage},
		{name: "bad structured output", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--llm", "vllm", "--structured-output", "xml"}, wantCode: cmdutil.ExitUsage},
		{name: "base URL for gemini", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--llm-base-url", "http://localhost:1/v1"}, wantCode: cmdutil.ExitUsage},
		{name: "unknown domain, nothing discovered", args: []string{"--email", "ada@example.net", "--name", "Ada", "--password-env", "P"}, wantCode: cmdutil.ExitUsage},
		{name: "missing --name", args: []string{"--email", "ada@fastmail.com", "--password-env", "P"}, wantCode: cmdutil.ExitUsage},
		{name: "missing password source", args: []string{"--email", "ada@fastmail.com", "--name", "Ada"}, wantCode: cmdutil.ExitUsage},
		{name: "two password sources", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--password-cmd", "c"}, wantCode: cmdutil.ExitUsage},
		{name: "unknown provider", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--provider", "aol"}, wantCode: cmdutil.ExitUsage},
		{name: "bad email", args: []string{"--email", "Ada <ada@fastmail.com>", "--name", "Ada", "--password-env", "P"}, wantCode: cmdutil.ExitUsage},
		{name: "bad mode", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "P", "--mode", "yolo"}, wantCode: cmdutil.ExitUsage},
		{name: "bad env name", args: []string{"--email", "ada@fastmail.com", "--name", "Ada", "--password-env", "MY-PASS"}, wantCode: cmdutil.ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withDiscovery(t, autoconfig.Options{
				HTTPClient: &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: http.StatusNotFound, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
				})},
				Resolver: &srvTable{},
			})
			path := filepath.Join(t.TempDir(), "config.toml")
			// stdin must not be read: anything typed here would be wrong.
			code, stdout, stderr := runInit(t, "garbage\n", append(append([]string{"--config", path}, base...), tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit code: got %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			if tt.wantCode != cmdutil.ExitOK {
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("config written on bad input (stat err %v)", err)
				}
				if strings.Contains(tt.name, "nothing discovered") {
					// One short line, not the chain of every source's failure.
					want := "mailagent: no server settings found for example.net (autoconfig, Thunderbird ISPDB and DNS SRV have none)\n"
					if !strings.Contains(stderr, want) || strings.Contains(stderr, "404") {
						t.Errorf("discovery failure: stderr\n%s\nwant the line %q", stderr, want)
					}
				}
				return
			}
			if stdout != path+"\n" {
				t.Errorf("stdout: got %q, want %q", stdout, path+"\n")
			}
			cfg, _ := loadConfig(t, path)
			tt.check(t, cfg)
		})
	}
}

func TestInitDefaultPath(t *testing.T) {
	noDiscovery(t)
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	code, stdout, stderr := runInit(t, "", "--non-interactive", "--no-doctor",
		"--email", "ada@fastmail.com", "--name", "Ada", "--password-cmd", "pass mail")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
	}
	want := filepath.Join(xdg, "mailagent", "config.toml")
	if stdout != want+"\n" {
		t.Errorf("stdout: got %q, want %q", stdout, want+"\n")
	}
	if fi, err := os.Stat(filepath.Dir(want)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("config dir: got %v (err %v), want mode 0700", fi.Mode().Perm(), err)
	}
	loadConfig(t, want)
}

func TestInitFlags(t *testing.T) {
	t.Parallel()
	var got *InitOptions
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.New(ios)
	cmd := NewCmdInit(f, func(_ context.Context, o *InitOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--force", "--no-doctor", "--non-interactive", "--email", "ada@fastmail.com",
		"--name", "Ada", "--password-cmd", "pass x", "--provider", "fastmail", "--mode", "auto"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("execute: %v", err)
	}
	if got == nil {
		t.Fatal("runF did not run")
	}
	// The Factory's values reach the options when the command runs.
	if got.IO != ios || got.Prompter == nil || got.Now == nil || got.Doctor.IMAPOptions == nil || got.Doctor.NewModel == nil {
		t.Errorf("options lack the factory's streams, prompter, clock or doctor env: %+v", got)
	}
	flags := *got
	flags.IO, flags.Prompter, flags.Now, flags.Doctor = nil, nil, nil, appdoctor.Env{}
	want := InitOptions{Force: true, NoDoctor: true, NonInteractive: true, Email: "ada@fastmail.com",
		Name: "Ada", PasswordCmd: "pass x", Provider: "fastmail", Mode: "auto"}
	if !reflect.DeepEqual(flags, want) {
		t.Errorf("options: got %+v, want %+v", flags, want)
	}
}

// TestInitRunsDoctor writes a config for real servers on loopback (an
// in-memory IMAP server and an SMTP sink) and lets doctor check it: the
// logins pass, the model key is missing, so init exits 5 with the report
// on stderr and only the path on stdout.
func TestInitRunsDoctor(t *testing.T) {
	noDiscovery(t)
	liveProbes(t)
	const user, pass = "ada@example.com", "imap-secret-4410"
	srv, err := memimap.Start(memimap.Options{
		Users:     []memimap.User{{Name: user, Password: pass}},
		Mailboxes: []string{"Sent", "Drafts"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass})
	t.Setenv("MA_TEST_INIT_PASS", pass)
	t.Setenv("MA_TEST_INIT_NO_KEY", "")

	path := filepath.Join(t.TempDir(), "config.toml")
	script := answers(
		user, "Ada Lovelace",
		"e", // edit the generic guess
		"127.0.0.1", "insecure", strconv.Itoa(srv.Port), "",
		"127.0.0.1", "insecure", strconv.Itoa(sink.Port), "",
		"y",
		"", "2", "MA_TEST_INIT_PASS", // account, password from env
		"", "1", "MA_TEST_INIT_NO_KEY", "", "", // provider gemini, api key env (unset), model, mode
	)
	code, stdout, stderr := runInit(t, script, "--config", path, "--provider", "generic")
	if code != cmdutil.ExitPartial {
		t.Fatalf("exit code: got %d, want %d (doctor found the missing key); stderr:\n%s", code, cmdutil.ExitPartial, stderr)
	}
	if stdout != path+"\n" {
		t.Errorf("stdout: got %q, want only the path", stdout)
	}
	for _, want := range []string{
		"✓ IMAP: logged in to 127.0.0.1:", // tested as soon as the login was known
		"✓ SMTP: logged in to 127.0.0.1:",
		"PASS  imap example: connect and login",
		"PASS  smtp example: connect and AUTH",
		"FAIL  model: api key",
		"Not ready yet: doctor found 1 problem.",
		"  - model: api key\n      fix: export MA_TEST_INIT_NO_KEY=…",
		"Then run `mailagent --config " + path + " doctor` again",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// watch is suggested only after a passing doctor.
	if strings.Contains(stderr[strings.Index(stderr, "Not ready yet"):], "watch") || strings.Contains(stderr, "triage --dry-run") {
		t.Errorf("next steps suggest watch or triage after a failed doctor:\n%s", stderr)
	}
	if strings.Contains(stdout+stderr, pass) {
		t.Errorf("the password was printed")
	}
}

func TestInitProtonBridgeCertificate(t *testing.T) {
	noDiscovery(t)
	ca := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	script := answers("ada@proton.me", "Ada Lovelace", "y",
		filepath.Join(t.TempDir(), "missing.pem"), // refused: does not exist
		ca,
		"", "2", "BRIDGE_PASS", "", "", "", "", "")
	code, _, stderr := runInit(t, script, "--config", path, "--no-doctor")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "cannot read") {
		t.Errorf("a missing certificate was not refused:\n%s", stderr)
	}
	cfg, _ := loadConfig(t, path)
	a := cfg.Accounts[0]
	checkEndpoint(t, "imap", a.IMAP, wantEndpoint{"127.0.0.1", 1143, "starttls", "ada@proton.me"})
	checkEndpoint(t, "smtp", a.SMTP, wantEndpoint{"127.0.0.1", 1025, "starttls", "ada@proton.me"})
	if a.IMAP.TLSCAFile != ca || a.SMTP.TLSCAFile != ca {
		t.Errorf("tls_ca_file: got imap %q smtp %q, want %q for both", a.IMAP.TLSCAFile, a.SMTP.TLSCAFile, ca)
	}
}

// TestInitLLMFlagsNeedNonInteractive: the model-server flags are for
// scripts; the interview asks for the same, so mixing them is a usage
// error before anything is read or written.
func TestInitLLMFlagsNeedNonInteractive(t *testing.T) {
	noDiscovery(t)
	path := filepath.Join(t.TempDir(), "config.toml")
	code, _, stderr := runInit(t, "garbage\n", "--config", path, "--llm", "ollama")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "--non-interactive") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --non-interactive", code, stderr)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("config written (stat err %v)", err)
	}
}
