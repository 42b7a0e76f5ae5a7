package agente2e

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestCourierBareAccount runs against the bare Courier-style Dovecot
// (E2E_COURIER_BARE=1 scripts/e2e-courier.sh start): a new account with
// INBOX alone, as Courier-IMAP leaves it until a client saves a draft.
// doctor fails Drafts and Sent with `doctor --fix` as the fix and never
// offers the watched INBOX; `doctor --fix` creates INBOX.Drafts and
// INBOX.Sent under the server's namespace; doctor then passes both, and
// measures that this Dovecot pushes new mail to IDLE at once.
func TestCourierBareAccount(t *testing.T) {
	parallel(t)
	p := os.Getenv("MAILAGENT_E2E_COURIER_BARE_IMAP_PORT")
	if p == "" {
		e2e.Require(t)
		t.Skip("no bare Courier-style server: run E2E_COURIER_BARE=1 scripts/e2e-courier.sh start and export its env lines")
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("MAILAGENT_E2E_COURIER_BARE_IMAP_PORT: %v", err)
	}
	e := newEnv(t, options{Courier: true, IMAPPort: port})
	bare := *e.s
	bare.IMAPPort = port
	// Bare again: a previous run's --fix made the folders.
	c := bare.IMAP(t, e2e.Owner)
	for _, box := range []string{"INBOX.Drafts", "INBOX.Sent"} {
		_ = c.Delete(box).Wait()
	}
	listed := func() []string {
		t.Helper()
		l, err := c.List("", "*", nil).Collect()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, m := range l {
			names = append(names, m.Mailbox)
		}
		return names
	}
	if got := listed(); len(got) != 1 || got[0] != "INBOX" {
		t.Fatalf("the account is not bare: %v", got)
	}

	out, stderr, code := e.run("doctor", "--json", "--no-model")
	if code != 5 {
		t.Errorf("doctor on a bare account: exit %d, want 5\n%s\n%s", code, out, stderr)
	}
	checks := doctorChecks(t, out)
	for id, create := range map[string]string{"imap.drafts_folder": "INBOX.Drafts", "imap.sent_folder": "INBOX.Sent"} {
		c := checks[id]
		if c.Status != "fail" || !strings.Contains(c.Fix, "mailagent doctor --fix") || !strings.Contains(c.Fix, `"`+create+`"`) {
			t.Errorf("%s: got %+v, want fail with doctor --fix creating %s", id, c, create)
		}
		if strings.Contains(c.Fix, `"INBOX"`) {
			t.Errorf("%s: the fix offers the watched mailbox: %q", id, c.Fix)
		}
	}

	out, stderr, code = e.run("doctor", "--json", "--no-model", "--fix")
	checks = doctorChecks(t, out)
	for id, want := range map[string]string{"imap.drafts_folder": "created INBOX.Drafts", "imap.sent_folder": "created INBOX.Sent"} {
		if c := checks[id]; c.Status != "pass" || c.Detail != want {
			t.Errorf("doctor --fix %s: got %+v, want pass %q (exit %d)\n%s", id, c, want, code, stderr)
		}
	}
	got := strings.Join(listed(), " ")
	for _, box := range []string{"INBOX.Drafts", "INBOX.Sent"} {
		if !strings.Contains(got, box) {
			t.Errorf("after --fix the server lists %s, want %s", got, box)
		}
	}
	if strings.Contains(got, "push-probe") {
		t.Errorf("doctor's push probe folder is left behind: %s", got)
	}

	out, stderr, code = e.run("doctor", "--json", "--no-model")
	if code != 0 {
		t.Errorf("doctor after --fix: exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	checks = doctorChecks(t, out)
	for id, want := range map[string]string{"imap.drafts_folder": "INBOX.Drafts", "imap.sent_folder": "INBOX.Sent"} {
		if c := checks[id]; c.Status != "pass" || c.Detail != want {
			t.Errorf("doctor after --fix %s: got %+v, want pass %q", id, c, want)
		}
	}
	if c := checks["imap.push"]; c.Status != "pass" || !strings.Contains(c.Detail, "new mail reached IDLE in ") {
		t.Errorf("push on Dovecot: got %+v, want pass", c)
	}
}
