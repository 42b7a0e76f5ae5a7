package initcmd

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/autoconfig"
)

// hostileText is what a hostile server or autoconfig file puts in every
// field it controls: a clear-screen, a title change, a fake prompt on a
// new line, a bell, a right-to-left override.
const hostileText = "\x1b[2J\x1b]0;pwned\x07\r\nEmail address: \u202eevil"

// hostileIMAP is an IMAP server that greets with hostile text, lists its
// capabilities (so init's early connect test passes), and answers every
// other command NO with more hostile text. It returns its port.
func hostileIMAP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer func() { _ = c.Close() }()
				_, _ = io.WriteString(c, "* OK [CAPABILITY IMAP4rev1 AUTH=PLAIN] "+strings.ReplaceAll(hostileText, "\r\n", " ")+"\r\n")
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					tag, cmd, _ := strings.Cut(line, " ")
					if strings.EqualFold(strings.TrimSpace(cmd), "CAPABILITY") {
						_, _ = io.WriteString(c, "* CAPABILITY IMAP4rev1 AUTH=PLAIN\r\n"+tag+" OK done\r\n")
						continue
					}
					_, _ = io.WriteString(c, tag+" NO [AUTHENTICATIONFAILED] "+strings.ReplaceAll(hostileText, "\r\n", " ")+"\r\n")
				}
			}(c)
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// TestInitHostileServerText: text from the network reaches the terminal
// only sanitised. Two attacks: an autoconfig file whose provider name,
// host note and login carry escape sequences, and an IMAP server whose
// greeting and NO replies do. Every line init writes is checked for
// control characters and bidi overrides.
func TestInitHostileServerText(t *testing.T) {
	noDiscovery(t)
	liveProbes(t)
	port := hostileIMAP(t)
	xml := `<?xml version="1.0"?>
<clientConfig version="1.1"><emailProvider id="example.org">
  <domain>example.org</domain>
  <displayName>Evil&#x9b;2J Mail&#x202e;lave</displayName>
  <incomingServer type="imap"><hostname>127.0.0.1</hostname><port>` + strconv.Itoa(port) + `</port><socketType>plain</socketType>
    <username>ada&#x9b;31m</username><authentication>password-cleartext</authentication></incomingServer>
  <outgoingServer type="smtp"><hostname>127.0.0.1</hostname><port>25</port><socketType>plain</socketType>
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
	t.Setenv("MA_TEST_HOSTILE_PASS", "pw")
	p := &scriptedPrompter{steps: []step{
		{"Email address", "ada@example.org"}, {"Your name", "Ada"},
		{"Use these settings?", "y"},
		{"What now?", "keep"}, // nothing on SMTP's port 25: kept, its login not tried
		{"Account name", ""}, {"Password source", secretEnv}, {"Environment variable name", "MA_TEST_HOSTILE_PASS"},
		{"What now?", "skip"}, // IMAP login refused by the hostile server
		{"Model provider", ""}, {"Read the Gemini API key from", "env"}, {"Environment variable", ""}, {"Gemini model", ""}, {"Mode", ""},
	}}
	_, _, err := interview(context.Background(), p, &InitOptions{Net: testNet}, filepath.Join(t.TempDir(), "config.toml"))
	said := p.said.String()
	if err != nil {
		t.Fatalf("interview: %v\nasked %q", err, p.asked)
	}
	landed := hostileProbes(said)
	for _, what := range landed {
		t.Errorf("%s reached the terminal:\n%q", what, said)
	}
	t.Logf("attacks tried %d, got through %d", len(initProbes), len(landed))
	// Control (detector): the same text as the servers sent it, printed
	// raw, trips every probe, so a clean transcript is the cleaning's
	// doing and not probes that cannot see the attack.
	raw := "Email address: ada@example.org\n" + hostileText + "\nEvil\u009b2J Mail\u202elave\nada\u009b31m\n"
	if n := len(hostileProbes(raw)); n != len(initProbes) {
		t.Errorf("control: the raw server text trips %d of %d probes, want all", n, len(initProbes))
	}
	if !strings.Contains(said, "✗ IMAP: ") || !strings.Contains(said, "Evil") {
		t.Errorf("the hostile server's refusal was not reported:\n%s", said)
	}
}

// initProbes are what TestInitHostileServerText looks for in init's
// transcript: each is what one of the hostile payloads would leave there.
var initProbes = []struct{ what, needle string }{
	{"ESC", "\x1b"}, {"BEL", "\x07"}, {"CR", "\r"}, {"RLO", "\u202e"}, {"CSI", "\u009b"},
	{"a fake prompt line", "\nEmail address: "},
}

// hostileProbes returns the probes said trips.
func hostileProbes(said string) []string {
	var out []string
	for _, p := range initProbes {
		if strings.Contains(said, p.needle) {
			out = append(out, p.what)
		}
	}
	return out
}
