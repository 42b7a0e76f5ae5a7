package initcmd

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/zalando/go-keyring"

	appdoctor "github.com/mailagent/mailagent/internal/app/doctor"
	"github.com/mailagent/mailagent/internal/autoconfig"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

// TestInitWrongInputTable is the table of common wrong answers to the
// server questions: each is accepted as what it means, or refused with
// the fix. One row per input; the field says which question.
func TestInitWrongInputTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field, kind, in string
		security        string // for "port": the security answered before
		want            string // the value taken (host answers: host port security)
		wantNote        string // a note said when the answer changes another one
		wantErr         string // the fix, when refused
	}{
		// Security: what mail clients call the modes.
		{field: "security", in: "ssl", want: "tls"},
		{field: "security", in: "SSL", want: "tls"},
		{field: "security", in: "SSL/TLS", want: "tls"},
		{field: "security", in: "Implicit TLS", want: "tls"},
		{field: "security", in: "TLS", want: "tls"},
		{field: "security", in: "STARTTLS", want: "starttls"},
		{field: "security", in: "start-tls", want: "starttls"},
		{field: "security", in: "none", want: "insecure"},
		{field: "security", in: "yes", wantErr: "type tls (also called SSL or implicit TLS), starttls, or insecure"},
		{field: "security", in: "993", wantErr: "type tls"},

		// A port for the other security mode: taken, and the mode follows.
		{field: "port", kind: "imap", in: "993", security: "starttls", want: "tls", wantNote: "Port 993 is IMAP over implicit TLS, so security is now tls (for starttls, the port is 143)."},
		{field: "port", kind: "imap", in: "143", security: "tls", want: "starttls", wantNote: "for tls, the port is 993"},
		{field: "port", kind: "smtp", in: "587", security: "tls", want: "starttls", wantNote: "for tls, the port is 465"},
		{field: "port", kind: "smtp", in: "25", security: "tls", want: "starttls", wantNote: "Port 25 is SMTP over STARTTLS"},
		{field: "port", kind: "smtp", in: "465", security: "starttls", want: "tls", wantNote: "for starttls, the port is 587"},
		{field: "port", kind: "imap", in: "993", security: "tls", want: "tls"},
		{field: "port", kind: "imap", in: "1143", security: "starttls", want: "starttls"}, // not a well-known port: trusted
		{field: "port", kind: "imap", in: "143", security: "insecure", want: "insecure"},

		// Host answers copied from elsewhere.
		{field: "host", kind: "imap", in: "imap.example.com", want: "imap.example.com 0 "},
		{field: "host", kind: "imap", in: "  imap.example.com.  ", want: "imap.example.com 0 "},
		{field: "host", kind: "imap", in: "imap.example.com:993", want: "imap.example.com 993 tls"},
		{field: "host", kind: "imap", in: "imap.example.com:143", want: "imap.example.com 143 starttls"},
		{field: "host", kind: "smtp", in: "smtp.example.com:587", want: "smtp.example.com 587 starttls"},
		{field: "host", kind: "imap", in: "mail.example.com:1993", want: "mail.example.com 1993 "},
		{field: "host", kind: "imap", in: "imaps://imap.example.com", want: "imap.example.com 0 tls"},
		{field: "host", kind: "imap", in: "IMAPS://imap.example.com:993/", want: "imap.example.com 993 tls"},
		{field: "host", kind: "smtp", in: "smtp://smtp.example.com:587", want: "smtp.example.com 587 starttls"},
		{field: "host", kind: "imap", in: "[::1]:993", want: "::1 993 tls"},
		{field: "host", kind: "imap", in: "::1", want: "::1 0 "},
		{field: "host", kind: "imap", in: "ada@example.com", wantErr: "is an email address: type the IMAP server's name, such as imap.example.com"},
		{field: "host", kind: "imap", in: "https://mail.example.com/", wantErr: "is a https address, not a mail server"},
		{field: "host", kind: "imap", in: "imap.example.com:99999", wantErr: "not a port number"},
		{field: "host", kind: "imap", in: "imap.example.com:imaps", wantErr: "not a port number"},
		{field: "host", kind: "imap", in: "mail example com", wantErr: "is not a host name"},
		{field: "host", kind: "imap", in: "", wantErr: "type the server's host name"},
	}
	for _, tt := range tests {
		t.Run(tt.field+" "+tt.kind+" "+tt.in, func(t *testing.T) {
			var got, note string
			var err error
			switch tt.field {
			case "security":
				got, err = parseSecurity(tt.in)
			case "port":
				var n int
				n, err = strconv.Atoi(tt.in)
				got, note = fitPortSecurity(tt.kind, n, tt.security)
			case "host":
				var a hostAnswer
				a, err = parseHostAnswer(tt.kind, tt.in)
				got = a.Host + " " + strconv.Itoa(a.Port) + " " + a.Security
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %q, err %v; want it refused with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if tt.wantNote == "" && note != "" || !strings.Contains(note, tt.wantNote) {
				t.Errorf("note %q, want %q", note, tt.wantNote)
			}
		})
	}
}

// startIMAP starts an in-memory IMAP server with one user and the usual
// folders.
func startIMAP(t *testing.T, user, pass string) *memimap.Server {
	t.Helper()
	srv, err := memimap.Start(memimap.Options{
		Users:     []memimap.User{{Name: user, Password: pass}},
		Mailboxes: []string{"Sent", "Drafts"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// closedLoopbackPort is a loopback port that refuses connections for the
// rest of the test: a socket bound to it that never listens. A port
// merely closed a moment ago is no such thing: another listener may take
// it, or a connection to it from the ephemeral range may pick it as its
// own source port and connect to itself, and then a client waits out its
// greeting timeout instead of being refused.
func closedLoopbackPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return sa.(*syscall.SockaddrInet4).Port
}

// TestInterviewWrongInputs drives the interview with wrong answers a
// newcomer types: an address and then host:port in the host field (the
// port and security are then not asked), and starttls with SMTP port
// 465. Each is taken as meant, and the written config parses.
func TestInterviewWrongInputs(t *testing.T) {
	noDiscovery(t)
	withDiscovery(t, autoconfig.Options{ // every source fails
		HTTPClient: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("dial tcp: connection refused")
		})},
		Resolver: &srvTable{},
	})
	p := &scriptedPrompter{steps: []step{
		{"Email address", "ada@example.org"}, {"Your name", "Ada"},
		{"Which provider", "generic"},
		{"Use these settings?", "e"},
		{"IMAP host", "ada@example.org"},      // refused: an address
		{"IMAP host", "mail.example.org:993"}, // port and security: not asked again
		{"IMAP login name", ""},
		{"SMTP host", "mail.example.org"},
		{"SMTP security", "starttls"},
		{"SMTP port", "465"}, // implicit TLS's port: security follows
		{"SMTP login name", ""},
		{"Use these settings?", "y"},
		{"Account name", ""},
		{"Password source", secretEnv}, {"Environment variable name", "MAIL_PASS"},
		{"Model provider", ""}, {"Read the Gemini API key from", "env"}, {"Environment variable", ""}, {"Gemini model", ""}, {"Mode", ""},
	}}
	s, data, err := interview(t.Context(), p, &InitOptions{Net: testNet, Provider: "auto"}, "/x/config.toml")
	if err != nil {
		t.Fatalf("interview: %v\nasked: %q\nsaid: %s", err, p.asked, p.said.String())
	}
	if len(p.rejected) != 1 || p.rejected[0] != "ada@example.org" {
		t.Errorf("rejected %q, want only the address typed as a host", p.rejected)
	}
	if s.IMAP.Host != "mail.example.org" || s.IMAP.Port != 993 || s.IMAP.Security != "tls" {
		t.Errorf("IMAP %+v, want mail.example.org 993 tls", s.IMAP)
	}
	if s.SMTP.Port != 465 || s.SMTP.Security != "tls" {
		t.Errorf("SMTP %+v, want 465 tls", s.SMTP)
	}
	if !strings.Contains(p.said.String(), "IMAP: port 993, tls (implicit TLS)") {
		t.Errorf("the port and security taken from the host answer were not said:\n%s", p.said.String())
	}
	if !strings.Contains(p.said.String(), "Port 465 is SMTP over implicit TLS, so security is now tls") {
		t.Errorf("the security change was not said:\n%s", p.said.String())
	}
	if !strings.Contains(p.said.String(), "No settings found for example.org: pick your provider") ||
		strings.Contains(p.said.String(), "connection refused") {
		t.Errorf("autodiscovery failure is not one short line:\n%s", p.said.String())
	}
	if _, err := config.Parse(data, "/x/config.toml", 0o600); err != nil {
		t.Errorf("config does not parse: %v\n%s", err, data)
	}
}

// TestInitKeyringUnavailableKeepsNumbers: an unavailable keyring keeps
// its place in the menu, so "4" is still OAuth2 after it was refused.
func TestInitKeyringUnavailableKeepsNumbers(t *testing.T) {
	noDiscovery(t)
	keyring.MockInitWithError(errors.New("no secret service on the session bus"))
	t.Cleanup(keyring.MockInit)
	path := filepath.Join(t.TempDir(), "config.toml")
	code, _, stderr := runInit(t, fastmailScript("3", "4", "oama access ada@fastmail.com"), "--config", path, "--no-doctor")
	if code != cmdutil.ExitOK {
		t.Fatalf("exit code: got %d, want 0; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "3) the system keyring: not available here") || !strings.Contains(stderr, "4) OAuth2") {
		t.Errorf("the menu does not keep the keyring at 3:\n%s", stderr)
	}
	if strings.Count(stderr, "1) a command that prints it") != 2 || strings.Count(stderr, "5) in the config file") != 2 {
		t.Errorf("the menu was not shown twice with the same numbers:\n%s", stderr)
	}
	cfg, _ := loadConfig(t, path)
	if got := cfg.Accounts[0].IMAP.OAuth2TokenCmd; got != "oama access ada@fastmail.com" {
		t.Errorf("oauth2_token_cmd %q, want the command typed after choosing 4", got)
	}
}

// TestInitAsksSMTPCAOnUnknownAuthority: an SMTP server (a real go-smtp
// sink speaking STARTTLS) whose certificate no system root signs is
// reached as soon as its section is answered, before the password is
// asked; init asks for the CA file, refuses a file that is not a
// certificate, tests again with the one given, logs in with it once the
// password source is known, and writes it as the SMTP server's
// tls_ca_file only.
func TestInitAsksSMTPCAOnUnknownAuthority(t *testing.T) {
	noDiscovery(t)
	liveProbes(t)
	const user, pass = "ada@example.com", "smtp-secret-7781"
	srv := startIMAP(t, user, pass)
	cert, caPEM := smtptest.NewCert(t)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass, TLSCert: &cert})
	dir := t.TempDir()
	ca := filepath.Join(dir, "own-ca.pem")
	notCA := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notCA, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MA_TEST_INIT_PASS", pass)
	p := &scriptedPrompter{steps: []step{
		{"Email address", user}, {"Your name", "Ada"},
		{"Use these settings?", "e"},
		{"IMAP host", "127.0.0.1"}, {"IMAP security", "insecure"}, {"IMAP port", strconv.Itoa(srv.Port)}, {"IMAP login name", ""},
		{"SMTP host", "127.0.0.1"}, {"SMTP security", "starttls"}, {"SMTP port", strconv.Itoa(sink.Port)}, {"SMTP login name", ""},
		{"Path to the CA certificate", notCA}, // refused: no certificate in it
		{"Path to the CA certificate", ca},
		{"Use these settings?", "y"},
		{"Account name", ""}, {"Password source", secretEnv}, {"Environment variable name", "MA_TEST_INIT_PASS"},
		{"Model provider", ""}, {"Read the Gemini API key from", "env"}, {"Environment variable", ""}, {"Gemini model", ""}, {"Mode", ""},
	}}
	s, data, err := interview(context.Background(), p, &InitOptions{Net: testNet, Provider: "generic"}, filepath.Join(dir, "config.toml"))
	if err != nil {
		t.Fatalf("interview: %v\nasked: %q\nsaid: %s", err, p.asked, p.said.String())
	}
	said := p.said.String()
	for _, want := range []string{
		"✓ IMAP: logged in to 127.0.0.1:",
		"✗ SMTP: the certificate of 127.0.0.1:",
		"not signed by an authority this system trusts",
		"✓ SMTP: 127.0.0.1:" + strconv.Itoa(sink.Port) + " answers (STARTTLS, certificate verified)",
		"✓ SMTP: logged in to 127.0.0.1:" + strconv.Itoa(sink.Port) + " as " + user + " (STARTTLS, certificate verified)",
	} {
		if !strings.Contains(said, want) {
			t.Errorf("said lacks %q:\n%s", want, said)
		}
	}
	if !p.saidBefore("✗ SMTP: the certificate", "Password source") {
		t.Errorf("the SMTP certificate was not reported before the password question:\n%s", said)
	}
	if len(p.rejected) != 1 || p.rejected[0] != notCA {
		t.Errorf("rejected %q, want the key file only", p.rejected)
	}
	if s.TLSCAFile != "" || s.SMTPCAFile != ca {
		t.Errorf("CA files: imap %q smtp %q, want smtp only %q", s.TLSCAFile, s.SMTPCAFile, ca)
	}
	cfg, err := config.Parse(data, filepath.Join(dir, "config.toml"), 0o600)
	if err != nil {
		t.Fatalf("config does not parse: %v\n%s", err, data)
	}
	if a := cfg.Accounts[0]; a.IMAP.TLSCAFile != "" || a.SMTP.TLSCAFile != ca {
		t.Errorf("tls_ca_file: imap %q smtp %q", a.IMAP.TLSCAFile, a.SMTP.TLSCAFile)
	}
}

// TestInitServerFailureMenu: a wrong IMAP port is reported with the fix
// as soon as the IMAP section is answered, before any SMTP question;
// "edit" lets the user correct the port, reached again at once, and the
// logins are tested once the password source is known.
func TestInitServerFailureMenu(t *testing.T) {
	noDiscovery(t)
	liveProbes(t)
	const user, pass = "ada@example.com", "imap-secret-1029"
	srv := startIMAP(t, user, pass)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass})
	t.Setenv("MA_TEST_INIT_PASS", pass)
	closed := strconv.Itoa(closedLoopbackPort(t))
	p := &scriptedPrompter{steps: []step{
		{"Email address", user}, {"Your name", "Ada"},
		{"Use these settings?", "e"},
		{"IMAP host", "127.0.0.1:" + closed}, {"IMAP security", "none"}, {"IMAP login name", ""},
		{"What now?", "edit"},
		{"IMAP host", ""}, {"IMAP security", ""}, {"IMAP port", strconv.Itoa(srv.Port)}, {"IMAP login name", ""},
		{"SMTP host", "127.0.0.1"}, {"SMTP security", "insecure"}, {"SMTP port", strconv.Itoa(sink.Port)}, {"SMTP login name", ""},
		{"Use these settings?", "y"},
		{"Account name", ""}, {"Password source", secretEnv}, {"Environment variable name", "MA_TEST_INIT_PASS"},
		{"Model provider", ""}, {"Read the Gemini API key from", "env"}, {"Environment variable", ""}, {"Gemini model", ""}, {"Mode", ""},
	}}
	s, _, err := interview(context.Background(), p, &InitOptions{Net: testNet, Provider: "generic"}, filepath.Join(t.TempDir(), "config.toml"))
	if err != nil {
		t.Fatalf("interview: %v\nasked: %q\nsaid: %s", err, p.asked, p.said.String())
	}
	said := p.said.String()
	for _, want := range []string{
		"✗ IMAP: imap dial 127.0.0.1:" + closed,
		"fix: nothing listens on 127.0.0.1:" + closed,
		"✓ IMAP: 127.0.0.1:" + strconv.Itoa(srv.Port) + " answers (plain text, loopback only)",
		"✓ IMAP: logged in to 127.0.0.1:" + strconv.Itoa(srv.Port),
		"✓ SMTP: logged in",
	} {
		if !strings.Contains(said, want) {
			t.Errorf("said lacks %q:\n%s", want, said)
		}
	}
	if !p.saidBefore("✗ IMAP: imap dial 127.0.0.1:"+closed, "SMTP host") {
		t.Errorf("the wrong IMAP port was not reported before the first SMTP question:\n%s", said)
	}
	if s.IMAP.Port != srv.Port || s.Source != "your answers" {
		t.Errorf("setup %+v", s)
	}
}

// TestPrintNextStepsWatchOnlyAfterPassingDoctor: watch is suggested after
// a passing doctor (warnings allowed), after --no-doctor only behind
// doctor, and never after a failed check, which is named with its fix.
func TestPrintNextStepsWatchOnlyAfterPassingDoctor(t *testing.T) {
	t.Setenv("MA_TEST_NEXT_KEY", "set")
	s := &initSetup{APIKeyEnv: "MA_TEST_NEXT_KEY", Mode: config.ModeReview, Secret: secretChoice{Kind: secretCmd, Value: "pass x"}}
	pass := []appdoctor.Check{{Name: "config", Status: "pass"}, {Name: "imap a: authserv_id", Status: "warn", Fix: "later"}}
	fail := append(slices.Clone(pass), appdoctor.Check{Name: "smtp a: connect and AUTH", Status: "fail", Detail: "refused", Fix: "check the port"})
	for _, tt := range []struct {
		name      string
		ran       bool
		checks    []appdoctor.Check
		want, not []string
	}{
		{"doctor passed", true, pass, []string{"Next steps:", "mailagent watch", "triage --dry-run"}, []string{"Not ready", "mailagent doctor"}},
		{"no doctor", false, nil, []string{"mailagent doctor ", "once doctor passes: handle new mail"}, []string{"Not ready"}},
		{"doctor failed", true, fail, []string{"Not ready yet: doctor found 1 problem.", "  - smtp a: connect and AUTH\n      fix: check the port\n", "Then run `mailagent doctor` again."}, []string{"watch", "triage", "authserv_id"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printNextSteps(&b, s, "/x/config.toml", false, tt.ran, tt.checks)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tt.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("says %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestPrintNextStepsAutoWithoutAuthserv: auto mode with no authserv_id
// says that nothing is sent automatically yet and how to fix it; with
// the id set it says nothing of the kind.
func TestPrintNextStepsAutoWithoutAuthserv(t *testing.T) {
	t.Setenv("MA_TEST_NEXT_KEY", "set")
	pass := []appdoctor.Check{{Name: "config", Status: "pass"}}
	for _, tt := range []struct {
		authserv string
		warned   bool
	}{{"", true}, {"mx.example.org", false}} {
		s := &initSetup{APIKeyEnv: "MA_TEST_NEXT_KEY", Mode: config.ModeAuto, AuthservID: tt.authserv, Secret: secretChoice{Kind: secretCmd, Value: "pass x"}}
		var b strings.Builder
		printNextSteps(&b, s, "/x/config.toml", false, true, pass)
		got := strings.Contains(b.String(), "nothing\n  is sent automatically yet") && strings.Contains(b.String(), "Set accounts.authserv_id")
		if got != tt.warned {
			t.Errorf("authserv_id %q: warned %v, want %v:\n%s", tt.authserv, got, tt.warned, b.String())
		}
	}
}
