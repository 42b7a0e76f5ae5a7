package initcmd

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/autoconfig"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

// tlsFront listens on loopback with implicit TLS (cert) and forwards
// every connection to the plain-text server on backend: an IMAPS server
// in front of memimap. It returns its port.
func tlsFront(t *testing.T, cert tls.Certificate, backend int) int {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				b, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(backend)))
				if err != nil {
					return
				}
				defer func() { _ = b.Close() }()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
				<-done // either side ended: the deferred closes end the other copy
			})
		}
	})
	return l.Addr().(*net.TCPAddr).Port
}

// llmSteps answers the model and mode questions with their defaults.
var llmSteps = []step{
	{"Model provider", ""}, {"Read the Gemini API key from", "env"}, {"Environment variable", ""}, {"Gemini model", ""}, {"Mode", ""},
}

// TestInitReachAsksIMAPCAAtOnce: an IMAPS server with its own CA (a TLS
// front to memimap) is reached as soon as the IMAP section is answered:
// the unknown authority is reported and the CA asked before any SMTP
// question. The SMTP server (STARTTLS, same CA) then trusts that CA
// without asking, and both logins pass once the password is known.
func TestInitReachAsksIMAPCAAtOnce(t *testing.T) {
	noDiscovery(t)
	liveProbes(t)
	const user, pass = "ada@example.com", "imaps-secret-5521"
	srv := startIMAP(t, user, pass)
	cert, caPEM := smtptest.NewCert(t)
	imaps := tlsFront(t, cert, srv.Port)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass, TLSCert: &cert})
	ca := filepath.Join(t.TempDir(), "own-ca.pem")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MA_TEST_INIT_PASS", pass)
	imapsAddr := "127.0.0.1:" + strconv.Itoa(imaps)
	p := &scriptedPrompter{steps: append([]step{
		{"Email address", user}, {"Your name", "Ada"},
		{"Use these settings?", "e"},
		{"IMAP host", imapsAddr}, {"IMAP security", "ssl"}, {"IMAP login name", ""},
		{"Path to the CA certificate", ca},
		{"SMTP host", "127.0.0.1"}, {"SMTP security", "starttls"}, {"SMTP port", strconv.Itoa(sink.Port)}, {"SMTP login name", ""},
		{"Use these settings?", "y"},
		{"Account name", ""}, {"Password source", secretEnv}, {"Environment variable name", "MA_TEST_INIT_PASS"},
	}, llmSteps...)}
	s, data, err := interview(context.Background(), p, &InitOptions{Net: testNet, Provider: "generic"}, filepath.Join(t.TempDir(), "config.toml"))
	if err != nil {
		t.Fatalf("interview: %v\nasked: %q\nsaid: %s", err, p.asked, p.said.String())
	}
	said := p.said.String()
	for _, want := range []string{
		"✗ IMAP: the certificate of " + imapsAddr + " is not signed by an authority this system trusts",
		"✓ IMAP: " + imapsAddr + " answers (implicit TLS, certificate verified)",
		"✓ SMTP: 127.0.0.1:" + strconv.Itoa(sink.Port) + " answers (STARTTLS, certificate verified)",
		"trusting the CA in " + ca,
		"✓ IMAP: logged in to " + imapsAddr + " as " + user,
		"✓ SMTP: logged in to 127.0.0.1:" + strconv.Itoa(sink.Port),
	} {
		if !strings.Contains(said, want) {
			t.Errorf("said lacks %q:\n%s", want, said)
		}
	}
	if !p.saidBefore("✗ IMAP: the certificate", "SMTP host") {
		t.Errorf("the IMAP certificate was not reported before the first SMTP question:\n%s", said)
	}
	if n := slices.IndexFunc(p.asked, func(q string) bool { return strings.HasPrefix(q, "Path to the CA") }); n < 0 || n > slices.Index(p.asked, "SMTP host") {
		t.Errorf("the CA was not asked before SMTP: %q", p.asked)
	}
	if s.TLSCAFile != ca || s.SMTPCAFile != "" {
		t.Errorf("CA files: imap %q smtp %q, want %q for IMAP, copied to SMTP", s.TLSCAFile, s.SMTPCAFile, ca)
	}
	cfg, err := config.Parse(data, "/x/config.toml", 0o600)
	if err != nil {
		t.Fatalf("config does not parse: %v\n%s", err, data)
	}
	if a := cfg.Accounts[0]; a.IMAP.TLSCAFile != ca || a.SMTP.TLSCAFile != ca {
		t.Errorf("tls_ca_file: imap %q smtp %q, want %q for both", a.IMAP.TLSCAFile, a.SMTP.TLSCAFile, ca)
	}
}

// TestInitReachAcceptedSettingsBeforePassword: settings accepted as
// proposed (autoconfig here) are reached at once; an SMTP port where
// nothing listens is reported before the account and password questions,
// corrected through "edit", and reached again.
func TestInitReachAcceptedSettingsBeforePassword(t *testing.T) {
	noDiscovery(t)
	liveProbes(t)
	const user, pass = "ada@example.org", "auto-secret-3390"
	srv := startIMAP(t, user, pass)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass})
	closed := strconv.Itoa(closedLoopbackPort(t))
	xml := `<?xml version="1.0"?>
<clientConfig version="1.1"><emailProvider id="example.org">
  <domain>example.org</domain><displayName>Example Mail</displayName>
  <incomingServer type="imap"><hostname>127.0.0.1</hostname><port>` + strconv.Itoa(srv.Port) + `</port><socketType>plain</socketType>
    <username>%EMAILADDRESS%</username><authentication>password-cleartext</authentication></incomingServer>
  <outgoingServer type="smtp"><hostname>127.0.0.1</hostname><port>` + closed + `</port><socketType>plain</socketType>
    <username>%EMAILADDRESS%</username><authentication>password-cleartext</authentication></outgoingServer>
</emailProvider></clientConfig>`
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/autoconfig/") {
			w.Header().Set("Content-Type", "text/xml")
			_, _ = io.WriteString(w, xml)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(hs.Close)
	withDiscovery(t, autoconfig.Options{
		HTTPClient: hs.Client(), Resolver: &srvTable{}, ISPDBURL: hs.URL + "/ispdb/",
		AutoconfigURL: func(domain string) []string { return []string{hs.URL + "/autoconfig/" + domain} },
	})
	t.Setenv("MA_TEST_INIT_PASS", pass)
	p := &scriptedPrompter{steps: append([]step{
		{"Email address", user}, {"Your name", "Ada"},
		{"Use these settings?", "y"},
		{"What now?", "edit"}, // SMTP: nothing listens
		{"SMTP host", ""}, {"SMTP security", ""}, {"SMTP port", strconv.Itoa(sink.Port)}, {"SMTP login name", ""},
		{"Account name", ""}, {"Password source", secretEnv}, {"Environment variable name", "MA_TEST_INIT_PASS"},
	}, llmSteps...)}
	s, _, err := interview(context.Background(), p, &InitOptions{Net: testNet}, filepath.Join(t.TempDir(), "config.toml"))
	if err != nil {
		t.Fatalf("interview: %v\nasked: %q\nsaid: %s", err, p.asked, p.said.String())
	}
	said := p.said.String()
	for _, want := range []string{
		"Testing that the servers answer (no login yet):",
		"✓ IMAP: 127.0.0.1:" + strconv.Itoa(srv.Port) + " answers",
		"✗ SMTP: ",
		"fix: nothing listens on 127.0.0.1:" + closed,
		"✓ SMTP: 127.0.0.1:" + strconv.Itoa(sink.Port) + " answers",
		"✓ IMAP: logged in", "✓ SMTP: logged in",
	} {
		if !strings.Contains(said, want) {
			t.Errorf("said lacks %q:\n%s", want, said)
		}
	}
	for _, q := range []string{"Account name", "Password source"} {
		if !p.saidBefore("fix: nothing listens on 127.0.0.1:"+closed, q) {
			t.Errorf("the wrong SMTP port was not reported before %q:\n%s", q, said)
		}
	}
	if s.SMTP.Port != sink.Port || s.Source != "your answers" {
		t.Errorf("setup %+v", s)
	}
}

// TestInitReachAllRightAsksNothingMore: when every server answers, the
// early tests add no question, and settings shown again after an edit
// are not tested twice.
func TestInitReachAllRightAsksNothingMore(t *testing.T) {
	noDiscovery(t)
	liveProbes(t)
	const user, pass = "ada@example.com", "right-secret-8812"
	srv := startIMAP(t, user, pass)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass})
	t.Setenv("MA_TEST_INIT_PASS", pass)
	script := append([]step{
		{"Email address", user}, {"Your name", "Ada"},
		{"Use these settings?", "e"},
		{"IMAP host", "127.0.0.1"}, {"IMAP security", "insecure"}, {"IMAP port", strconv.Itoa(srv.Port)}, {"IMAP login name", ""},
		{"SMTP host", "127.0.0.1"}, {"SMTP security", "insecure"}, {"SMTP port", strconv.Itoa(sink.Port)}, {"SMTP login name", ""},
		{"Use these settings?", "y"},
		{"Account name", ""}, {"Password source", secretEnv}, {"Environment variable name", "MA_TEST_INIT_PASS"},
	}, llmSteps...)
	p := &scriptedPrompter{steps: slices.Clone(script)}
	if _, _, err := interview(context.Background(), p, &InitOptions{Net: testNet, Provider: "generic"}, filepath.Join(t.TempDir(), "config.toml")); err != nil {
		t.Fatalf("interview: %v\nasked: %q\nsaid: %s", err, p.asked, p.said.String())
	}
	if len(p.asked) != len(script) || len(p.steps) != 0 {
		t.Errorf("asked %d questions, want the %d scripted: %q", len(p.asked), len(script), p.asked)
	}
	said := p.said.String()
	if strings.Contains(said, "✗") || strings.Contains(said, "What now?") {
		t.Errorf("a failure was reported:\n%s", said)
	}
	if n := strings.Count(said, " answers ("); n != 2 {
		t.Errorf("the servers were reached %d times, want 2 (once each):\n%s", n, said)
	}
}

// TestInitReachKeepUnreachable: "retry" tests again; "keep" takes the
// settings as they are; typing the section again (the same answers)
// tests it again, while a server that answered is not tested twice; and
// the login of a server kept unreached is not tried (doctor tests it once
// the file is written).
func TestInitReachKeepUnreachable(t *testing.T) {
	noDiscovery(t)
	liveProbes(t)
	const user, pass = "ada@example.com", "kept-secret-2207"
	sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: pass})
	t.Setenv("MA_TEST_INIT_PASS", pass)
	closed := closedLoopbackPort(t)
	p := &scriptedPrompter{steps: append([]step{
		{"Email address", user}, {"Your name", "Ada"},
		{"Use these settings?", "e"},
		{"IMAP host", "127.0.0.1"}, {"IMAP security", "insecure"}, {"IMAP port", strconv.Itoa(closed)}, {"IMAP login name", ""},
		{"What now?", "retry"},
		{"What now?", "keep"},
		{"SMTP host", "127.0.0.1"}, {"SMTP security", "insecure"}, {"SMTP port", strconv.Itoa(sink.Port)}, {"SMTP login name", ""},
		{"Use these settings?", "e"},
		{"IMAP host", ""}, {"IMAP security", ""}, {"IMAP port", ""}, {"IMAP login name", ""},
		{"What now?", "keep"},
		{"SMTP host", ""}, {"SMTP security", ""}, {"SMTP port", ""}, {"SMTP login name", ""},
		{"Use these settings?", "y"},
		{"Account name", ""}, {"Password source", secretEnv}, {"Environment variable name", "MA_TEST_INIT_PASS"},
	}, llmSteps...)}
	s, _, err := interview(context.Background(), p, &InitOptions{Net: testNet, Provider: "generic"}, filepath.Join(t.TempDir(), "config.toml"))
	if err != nil {
		t.Fatalf("interview: %v\nasked: %q\nsaid: %s", err, p.asked, p.said.String())
	}
	said := p.said.String()
	if n := strings.Count(said, "✗ IMAP: "); n != 3 {
		t.Errorf("IMAP failed %d times, want 3 (first try, retry, typed again):\n%s", n, said)
	}
	if n := strings.Count(said, "✓ SMTP: 127.0.0.1:"+strconv.Itoa(sink.Port)+" answers"); n != 1 {
		t.Errorf("SMTP was reached %d times, want once (its answers did not change):\n%s", n, said)
	}
	for _, want := range []string{
		"IMAP: login not tested: the server could not be reached and you kept it",
		"✓ SMTP: logged in",
	} {
		if !strings.Contains(said, want) {
			t.Errorf("said lacks %q:\n%s", want, said)
		}
	}
	if s.IMAP.Port != closed {
		t.Errorf("IMAP port %d, want the kept %d", s.IMAP.Port, closed)
	}
}

// rawServer is a loopback server that sends greeting, then answers each
// line it reads with reply(line) (nothing when it returns ""). It
// returns its port.
func rawServer(t *testing.T, greeting string, reply func(line string) string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				if _, err := io.WriteString(c, greeting); err != nil {
					return
				}
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if out := reply(line); out != "" {
						if _, err := io.WriteString(c, out); err != nil {
							return
						}
					}
				}
			})
		}
	})
	return l.Addr().(*net.TCPAddr).Port
}

// TestInitReachHostileServers: what a server says before any login (its
// greeting, its CAPABILITY or EHLO replies) reaches the terminal only
// sanitised and cut short, when the early connect test reports it; and it
// does reach it: the owner sees the server's own words. Each server is
// one attack; each kind of control text in its output is counted as one
// more. The positive control prints each server's text as it was sent:
// every probe must catch it there, so a probe that passes could have
// failed.
func TestInitReachHostileServers(t *testing.T) {
	t.Parallel()
	// IMAP text ends at a CR (the client stops there), so its servers'
	// text has the CRLF as a space; an SMTP reply keeps a bare CR, which
	// returns the cursor to draw a fake prompt over the line, and its
	// multi-line reply puts the prompt on a line of its own.
	const words = "Email address: evil"
	imapText := strings.ReplaceAll(hostileText, "\r\n", " ") + " \u009b31m"
	smtpText := strings.ReplaceAll(hostileText, "\r\n", "\r") + " \u009b31m"
	huge := func(s string) string { return strings.Repeat(s, 1<<20/len(s)) } // a 1 MiB line
	tag := func(line string) string { t, _, _ := strings.Cut(line, " "); return t }
	type server struct {
		name, kind string
		sent       string // the server's text, as the attacker wrote it
		port       int
		shows      string // what the owner must see (sanitised, cut short)
	}
	raw := func(name, kind, greeting string, reply func(string) string, sent, shows string) server {
		return server{name: name, kind: kind, sent: sent, port: rawServer(t, greeting, reply), shows: shows}
	}
	none := func(string) string { return "" }
	servers := []server{
		raw("imap greeting BYE", "imap", "* BYE "+imapText+"\r\n", none, imapText, words),
		raw("imap huge greeting", "imap", "* BYE "+huge(imapText)+"\r\n", none, huge(imapText), words+"  "+words),
		raw("imap CAPABILITY NO", "imap", "* OK ready\r\n", func(l string) string { return tag(l) + " NO " + imapText + "\r\n" }, imapText, words),
		raw("imap huge CAPABILITY NO", "imap", "* OK ready\r\n", func(l string) string { return tag(l) + " NO " + huge(imapText) + "\r\n" }, huge(imapText), words+"  "+words),
		// Not text the client reports: the parse error names the byte,
		// or the client's next write finds the connection closed; either
		// way the step is named.
		raw("imap not IMAP4rev1", "imap", "* OK ready\r\n", func(l string) string {
			return "* CAPABILITY " + strings.ReplaceAll(imapText, " ", "") + "\r\n" + tag(l) + " OK done\r\n"
		}, imapText, "imap capabilities of 127.0.0.1:"),
		raw("smtp greeting 554", "smtp", "554 "+smtpText+"\r\n", none, smtpText, words),
		// The client refuses the line before reading it: nothing of it.
		raw("smtp huge greeting", "smtp", "554 "+huge(smtpText)+"\r\n", none, huge(smtpText), "too long a line"),
		raw("smtp EHLO refused", "smtp", "220 ok\r\n", func(string) string { return "550 " + smtpText + "\r\n" }, smtpText, words),
		raw("smtp EHLO refused on two lines", "smtp", "220 ok\r\n", func(string) string {
			return "550-refused " + smtpText + "\r\n550 " + words + "\r\n"
		}, "refused "+smtpText+"\n"+words, words),
	}
	probes := []struct{ what, needle string }{
		{"ESC", "\x1b"}, {"BEL", "\x07"}, {"CR", "\r"}, {"RLO", "\u202e"}, {"CSI", "\u009b"}, {"fake prompt", "\n" + words},
	}
	// leaks lists the probes that catch something in text a terminal
	// would draw.
	leaks := func(said string) []string {
		var out []string
		for _, p := range probes {
			if strings.Contains(said, p.needle) {
				out = append(out, p.what)
			}
		}
		return out
	}

	t.Run("control: the servers' own text trips every probe", func(t *testing.T) {
		caught := map[string]int{}
		for _, sv := range servers {
			for _, what := range leaks(sv.sent) {
				caught[what]++
			}
		}
		for _, p := range probes {
			if caught[p.what] == 0 {
				t.Errorf("no server sends %s: that probe cannot fail", p.what)
			}
		}
	})

	attacks, through := 0, 0
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			p := &scriptedPrompter{steps: []step{{"What now?", "keep"}}}
			s := &initSetup{
				IMAP: initServer{Host: "127.0.0.1", Port: sv.port, Security: config.SecurityInsecure},
				SMTP: initServer{Host: "127.0.0.1", Port: sv.port, Security: config.SecurityInsecure},
			}
			if err := reachServer(t.Context(), p, s, sv.kind, newReachState(testNet)); err != nil {
				t.Fatalf("reach: %v", err)
			}
			said := p.said.String()
			if !strings.Contains(said, "✗ "+strings.ToUpper(sv.kind)+": ") {
				t.Errorf("the failure was not reported:\n%q", said)
			}
			if !strings.Contains(said, sv.shows) {
				t.Errorf("the server's words %q are not shown:\n%q", sv.shows, said)
			}
			attacks++
			for _, what := range leaks(said) {
				through++
				t.Errorf("%s reached the terminal:\n%q", what, said)
			}
			attacks += len(probes)
			attacks++
			if len(said) > 2000 {
				through++
				t.Errorf("%d bytes of server text reached the terminal, want it cut short", len(said))
			}
		})
	}
	t.Logf("attacks tried %d, got through %d", attacks, through)
	if want := len(servers) * (len(probes) + 2); attacks != want {
		t.Errorf("%d attacks tried, want %d: a server's checks did not run", attacks, want)
	}
	if through != 0 {
		t.Errorf("%d of %d attacks got through", through, attacks)
	}
}

// TestInitReachFixes: each common wrong setting, tried against a real
// listener, is answered with its fix before any login.
func TestInitReachFixes(t *testing.T) {
	setNet(t, func(n *InitNet) { n.ReachTimeout = time.Second }) // what the servers that answer have
	// The silent server's cases wait out the whole ReachTimeout: a short
	// one is the same silence (the answering servers keep the roomier
	// second, a TLS handshake under -race taking a while).
	const silentTimeout = 100 * time.Millisecond
	imapSrv := startIMAP(t, "ada@example.com", "pw")
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	cert, _ := smtptest.NewCert(t)
	imaps := tlsFront(t, cert, imapSrv.Port)
	closed := closedLoopbackPort(t)
	silent := rawServer(t, "", func(string) string { return "" }) // accepts, says nothing
	ep := func(port int, sec string) config.Endpoint {
		return config.Endpoint{Host: "127.0.0.1", Port: port, Security: sec}
	}
	for _, tt := range []struct {
		name, kind string
		ep         config.Endpoint
		want       string
	}{
		{"nothing listens", "imap", ep(closed, "insecure"), "nothing listens on 127.0.0.1:" + strconv.Itoa(closed)},
		{"imap tls on a plain-text port", "imap", ep(imapSrv.Port, "tls"), "does not speak implicit TLS: use security = \"starttls\""},
		{"imap starttls on an implicit-TLS port", "imap", ep(imaps, "starttls"), "closed the connection before STARTTLS: if it speaks implicit TLS (usually port 993), use security = \"tls\""},
		{"imap server silent", "imap", ep(silent, "starttls"), "no answer from 127.0.0.1:" + strconv.Itoa(silent) + ": a firewall, or the wrong port or security mode"},
		{"smtp server silent", "smtp", ep(silent, "starttls"), "no answer from 127.0.0.1:" + strconv.Itoa(silent)},
		{"imap port of an SMTP server", "imap", ep(sink.Port, "insecure"), "did not answer as an IMAP server: check the host, port and security (usually 993 for tls, 143 for starttls)"},
		{"smtp port of an IMAP server", "smtp", ep(imapSrv.Port, "insecure"), "did not answer as an SMTP server: check the host, port and security (usually 465 for tls, 587 for starttls)"},
		{"smtp tls on a plain-text port", "smtp", ep(sink.Port, "tls"), "does not speak implicit TLS: use security = \"starttls\" (port 587)"},
		{"plain text to another host", "imap", config.Endpoint{Host: "imap.example.com", Port: 143, Security: "insecure"}, "plaintext is allowed only to a loopback address"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &scriptedPrompter{steps: []step{{"What now?", "keep"}}}
			s := &initSetup{}
			srv := initServer{Host: tt.ep.Host, Port: tt.ep.Port, Security: tt.ep.Security}
			if tt.kind == "imap" {
				s.IMAP = srv
			} else {
				s.SMTP = srv
			}
			n := testNet
			if tt.ep.Port == silent {
				n.ReachTimeout = silentTimeout
			}
			if err := reachServer(t.Context(), p, s, tt.kind, newReachState(n)); err != nil {
				t.Fatalf("reach: %v", err)
			}
			if said := p.said.String(); !strings.Contains(said, "fix: ") || !strings.Contains(said, tt.want) {
				t.Errorf("got:\n%s\nwant the fix %q", said, tt.want)
			}
		})
	}
}
