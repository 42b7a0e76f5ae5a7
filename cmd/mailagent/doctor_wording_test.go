package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/mailagent/mailagent/internal/memimap"
)

// TestDoctorWordingGolden runs doctor against real servers set up to fail
// the way a newcomer's first config does, and compares the report with
// testdata/TestDoctorWordingGolden.golden (-update rewrites it). The
// golden pins the issue-9 wording: a missing folder is named, the API key
// fix is printed once, an SMTP TLS failure says implicit TLS (not
// "permanent smtp failure") and names the fix, and an empty database
// reads as such.
func TestDoctorWordingGolden(t *testing.T) {
	h := newHarness(t, classifyReply, "", func(o *memimap.Options) { o.Mailboxes = []string{"Sent"} })
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// SMTP with implicit TLS against the plain-text sink.
	smtpTable := strings.Index(string(cfg), "[accounts.smtp]")
	fixed := string(cfg[:smtpTable]) + strings.Replace(string(cfg[smtpTable:]), `security = "insecure"`, `security = "tls"`, 1)
	if err := os.WriteFile(h.cfgPath, []byte(fixed), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MA_TEST_GEMINI_KEY", "")

	stdout, stderr, code := h.run("doctor")
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitPartial, stdout, stderr)
	}
	out := strings.ReplaceAll(stdout, h.dir, "DIR")
	out = strings.ReplaceAll(out, ":"+strconv.Itoa(h.imap.Port)+" ", ":IMAPPORT ")
	out = strings.ReplaceAll(out, ":"+strconv.Itoa(h.smtp.Port), ":SMTPPORT")
	out = regexp.MustCompile(`reached IDLE in [0-9.]+[mµn]?s`).ReplaceAllString(out, "reached IDLE in Ns")
	golden.RequireEqual(t, []byte(out))

	for _, bad := range []string{`""`, "permanent smtp failure", "llm.base_url"} {
		if strings.Contains(out, bad) {
			t.Errorf("doctor says %q:\n%s", bad, out)
		}
	}
	if n := strings.Count(out, "MA_TEST_GEMINI_KEY=…"); n != 1 {
		t.Errorf("the key fix is printed %d times, want once:\n%s", n, out)
	}
	if m := offersIncoming.FindString(out); m != "" {
		t.Errorf("doctor offers the watched mailbox as a folder to use: %q", m)
	}
	if !regexp.MustCompile(`(?m)^FAIL  imap personal: Drafts folder: .*"Drafts"`).MatchString(out) {
		t.Errorf("the missing Drafts folder is not named:\n%s", out)
	}
}
