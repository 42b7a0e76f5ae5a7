package agente2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/mailagent/mailagent/internal/llm/geminitest"
)

// check is one line of `doctor --json`.
type check struct {
	Name   string `json:"check"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

// healthModel answers doctor's structured-output probe.
func healthModel(req *geminitest.Request) geminitest.Reply {
	props, _ := req.ResponseSchema()["properties"].(map[string]any)
	if _, ok := props["ok"]; ok {
		return geminitest.JSONReply(map[string]any{"ok": true}, usage)
	}
	return cautiousModel(req)
}

// closedPort returns a loopback port nothing listens on and nothing else
// can take while the test runs: connecting to it is refused.
func closedPort(t *testing.T) int {
	t.Helper()
	// Bound and never listening, until the test ends: a port closed a
	// moment before may be taken by another test's listener, or connect
	// to itself (TCP simultaneous open) and wait out a greeting timeout.
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

// TestDoctor runs `mailagent doctor --json` against the real servers: a
// right config passes, and each kind of mistake fails the check that names
// it, with exit code 5.
func TestDoctor(t *testing.T) {
	parallel(t)
	port := closedPort(t)
	tests := []struct {
		name     string
		opts     options
		args     []string
		wantCode int
		// failing maps a check id (doctor --json: the account is a field) to
		// text its detail or fix must contain.
		failing map[string][]string
	}{
		{
			name: "right config", opts: options{Model: healthModel}, args: []string{"doctor", "--json"},
		},
		{
			name: "wrong password", opts: options{Password: "not-the-password"}, args: []string{"doctor", "--json", "--no-model"},
			wantCode: 5,
			failing: map[string][]string{
				"imap.login": {"login"},
				"smtp.login": {"login"},
			},
		},
		{
			name: "wrong imap port", opts: options{IMAPPort: port}, args: []string{"doctor", "--json", "--no-model"},
			wantCode: 5,
			failing: map[string][]string{
				"imap.login": {fmt.Sprintf("127.0.0.1:%d", port)},
			},
		},
		{
			name: "missing drafts folder", opts: options{DraftsMailbox: "NoSuchDrafts"}, args: []string{"doctor", "--json", "--no-model"},
			wantCode: 5,
			failing: map[string][]string{
				"imap.drafts_folder": {"drafts_mailbox"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.opts)
			out, stderr, code := e.run(tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code: got %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, stderr)
			}
			var checks []check
			if err := json.Unmarshal([]byte(out), &checks); err != nil {
				t.Fatalf("doctor --json: %v\n%s", err, out)
			}
			if strings.Contains(out, e.password) {
				t.Errorf("doctor output contains the password")
			}
			byName := map[string]check{}
			for _, c := range checks {
				byName[c.Name] = c
			}
			for name, wants := range tt.failing {
				c, ok := byName[name]
				if !ok {
					t.Errorf("no %q check in %+v", name, checks)
					continue
				}
				if c.Status != "fail" {
					t.Errorf("%s: got %s (%s), want fail", name, c.Status, c.Detail)
				}
				for _, w := range wants {
					if !strings.Contains(c.Detail+" "+c.Fix, w) {
						t.Errorf("%s: got detail %q fix %q, want them to mention %q", name, c.Detail, c.Fix, w)
					}
				}
			}
			for _, c := range checks {
				if _, expected := tt.failing[c.Name]; !expected && c.Status == "fail" {
					t.Errorf("%s: got fail (%s; fix: %s), want pass or warn", c.Name, c.Detail, c.Fix)
				}
			}
			if tt.wantCode == 0 {
				for _, name := range []string{"imap.login", "imap.drafts_folder", "imap.sent_folder",
					"smtp.login", "model.round_trip", "state.dir"} {
					if c, ok := byName[name]; !ok || c.Status != "pass" {
						t.Errorf("%s: got %+v, want pass", name, c)
					}
				}
			}
		})
	}
}
