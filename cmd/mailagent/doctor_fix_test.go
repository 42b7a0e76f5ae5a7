package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

// offersIncoming matches a fix line that names the watched mailbox as a
// folder to use: following such advice makes mailagent take its own
// drafts for the owner's replies and for new mail.
var offersIncoming = regexp.MustCompile(`(?mi)^\s*fix: .*"INBOX"`)

// TestBareAccount: a new account with INBOX alone (as Courier leaves it
// until a client first saves a draft). doctor fails the two folders and
// names `doctor --fix`, never the INBOX; an approval stops before SMTP
// with exit 2 and the same fix; `doctor --fix` creates both folders
// (with their SPECIAL-USE), after which doctor passes them and the
// approval sends, and the sent copy lands in the new Sent folder.
func TestBareAccount(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "", func(o *memimap.Options) { o.Mailboxes = nil })

	stdout, stderr, code := h.run("doctor", "--no-model")
	if code != ExitPartial {
		t.Fatalf("doctor: exit %d, want %d\n%s%s", code, ExitPartial, stdout, stderr)
	}
	for _, box := range []string{"Drafts", "Sent"} {
		if !regexp.MustCompile(`(?m)^FAIL  imap personal: ` + box + ` folder: .*\n      fix: run ` + "`mailagent doctor --fix`" + ` to create "` + box + `"`).MatchString(stdout) {
			t.Errorf("doctor does not fail %s with the --fix advice:\n%s", box, stdout)
		}
	}
	if m := offersIncoming.FindString(stdout); m != "" {
		t.Errorf("doctor offers the watched mailbox: %q\n%s", m, stdout)
	}

	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	h.watchOnce(t)
	item := h.item(t, "Lunch")
	_, stderr, code = h.run("queue", "approve", "--yes", item.ID)
	if code != ExitUsage || !strings.Contains(stderr, "fix: run `mailagent doctor --fix`") {
		t.Errorf("approve on a bare account: exit %d, want %d with the fix; stderr:\n%s", code, ExitUsage, stderr)
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sink: %d messages before the account was set up, want 0", n)
	}

	stdout, stderr, code = h.run("doctor", "--no-model", "--fix")
	for _, box := range []string{"Drafts", "Sent"} {
		if !strings.Contains(stdout, "PASS  imap personal: "+box+" folder: created "+box+"\n") {
			t.Errorf("doctor --fix did not create %s (exit %d):\n%s%s", box, code, stdout, stderr)
		}
	}
	msgs, err := h.imap.Messages(context.Background(), ownerAddr, "Sent")
	if err != nil || len(msgs) != 0 {
		t.Fatalf("Sent after --fix: %d messages, %v; want an empty folder", len(msgs), err)
	}
	stdout, _, _ = h.run("doctor", "--no-model")
	for _, box := range []string{"Drafts", "Sent"} {
		if !strings.Contains(stdout, "PASS  imap personal: "+box+" folder: "+box+"\n") {
			t.Errorf("doctor after --fix does not find %s:\n%s", box, stdout)
		}
	}

	if _, stderr, code := h.run("queue", "approve", "--yes", item.ID); code != ExitOK {
		t.Fatalf("approve after --fix: exit %d, %s", code, stderr)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Errorf("sink: %d messages after the approval, want 1", n)
	}
	if got := h.item(t, "Lunch"); got.Status != store.QueueSent {
		t.Errorf("item: %s, want sent", got.Status)
	}
	if msgs, _ := h.imap.Messages(context.Background(), ownerAddr, "Sent"); len(msgs) != 1 {
		t.Errorf("Sent: %d messages, want the copy of the reply", len(msgs))
	}
}

// TestIncomingNeverDraftsOrSent is the adversarial side of a bare
// account: every way of pointing Drafts or Sent at the watched mailbox
// (the advice doctor used to give) is refused by the config with the
// key and the fix, so the agent can never read its own draft as the
// owner's reply or as new mail. Positive control: the same file with the
// folder elsewhere loads.
func TestIncomingNeverDraftsOrSent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, classifyReply, "")
	raw, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	base := string(raw)
	attacks := []string{
		`drafts_mailbox = "INBOX"`, `sent_mailbox = "INBOX"`, `drafts_mailbox = "inbox"`, `sent_mailbox = "Inbox"`,
		"mailbox = \"Work\"\ndrafts_mailbox = \"Work\"", "mailbox = \"Work\"\nsent_mailbox = \"Work\"",
	}
	tried, through := 0, 0
	for _, a := range attacks {
		tried++
		writeConfig(t, h.cfgPath, strings.Replace(base, "authserv_id =", a+"\nauthserv_id =", 1))
		stdout, stderr, code := h.run("doctor", "--no-model")
		key := strings.Fields(strings.Split(a, "\n")[len(strings.Split(a, "\n"))-1])[0]
		if code != ExitUsage || !strings.Contains(stdout, "accounts[0]."+key) || !strings.Contains(stdout, "mailagent doctor --fix") {
			through++
			t.Errorf("%s: doctor exit %d, want %d naming accounts[0].%s and the fix\n%s%s", a, code, ExitUsage, key, stdout, stderr)
		}
	}
	if through != 0 {
		t.Errorf("attacks: %d tried, %d through", tried, through)
	}
	t.Logf("attacks: %d tried, %d through", tried, through)
	// Positive control: a folder that is not incoming loads.
	writeConfig(t, h.cfgPath, strings.Replace(base, "authserv_id =", "drafts_mailbox = \"Drafts\"\nsent_mailbox = \"Sent\"\nauthserv_id =", 1))
	if stdout, stderr, code := h.run("doctor", "--no-model"); code != ExitOK && code != ExitPartial {
		t.Errorf("control: doctor exit %d\n%s%s", code, stdout, stderr)
	} else if !strings.Contains(stdout, "PASS  imap personal: Drafts folder: Drafts") {
		t.Errorf("control: Drafts not found:\n%s", stdout)
	}
}

func writeConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInitCreatesFolders: init on a bare account (INBOX alone) creates
// the Sent and Drafts folders as its doctor runs, so the account works
// from the first watch.
func TestInitCreatesFolders(t *testing.T) {
	const user, pass = "ada@example.com", "imap-secret-4411"
	srv, err := memimap.Start(memimap.Options{Users: []memimap.User{{Name: user, Password: pass}}})
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
		"e",
		"127.0.0.1", "insecure", strconv.Itoa(srv.Port), "",
		"127.0.0.1", "insecure", strconv.Itoa(sink.Port), "",
		"y",
		"", "2", "MA_TEST_INIT_PASS",
		"", "1", "MA_TEST_INIT_NO_KEY", "", "",
	)
	_, _, stderr := runInit(t, script, "--config", path, "--provider", "generic")
	for _, box := range []string{"Drafts", "Sent"} {
		if !strings.Contains(stderr, "PASS  imap example: "+box+" folder: created "+box+"\n") {
			t.Errorf("init did not create %s:\n%s", box, stderr)
		}
		if _, err := srv.Messages(context.Background(), user, box); err != nil {
			t.Errorf("%s on the server after init: %v", box, err)
		}
	}
	if strings.Contains(stderr, "Drafts folder\n") || strings.Contains(stderr, "Sent folder\n") {
		t.Errorf("init lists a folder as a problem:\n%s", stderr)
	}
}

// TestBareAccountApproveThroughWatcher: with a watcher running, the
// approval runs in the watcher and its error crosses the socket: it
// still exits 2 with the fix, and nothing is sent.
func TestBareAccountApproveThroughWatcher(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "", func(o *memimap.Options) { o.Mailboxes = nil })
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	h.watchOnce(t)
	item := h.item(t, "Lunch")
	h.startWatch(t)
	_, stderr, code := h.run("queue", "approve", "--yes", item.ID)
	if code != ExitUsage || !strings.Contains(stderr, "fix: run `mailagent doctor --fix` to create \"Sent\"") {
		t.Errorf("approve through the watcher on a bare account: exit %d, want %d with the fix; stderr:\n%s", code, ExitUsage, stderr)
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Errorf("sink: %d messages, want 0", n)
	}
}

// TestWatchedFolderNeverDraftsOrSent: an account that watches the folder
// the server marks \Drafts (or \Sent). Were the agent to save its draft
// there, the next pass would read its own draft as new mail. Defended:
// the draft is not saved into the watched folder and nothing of the
// agent's comes back as incoming. Positive control: the same account
// with the rule switched off saves the draft into the watched folder and
// takes it for new mail.
func TestWatchedFolderNeverDraftsOrSent(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, folder string, defenceOff bool) (inFolder, records int) {
		h := newHarness(t, compromisedModel, "")
		if defenceOff {
			h.tweak = func(f *cmdutil.Factory) { f.IncomingCheckOff = true }
		}
		raw, err := os.ReadFile(h.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		writeConfig(t, h.cfgPath, strings.Replace(string(raw), `display_name = "Ada Lovelace"`, "display_name = \"Ada Lovelace\"\nmailbox = \""+folder+"\"", 1))
		h.appendTo(folder, rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
		h.watchOnce(t)
		h.watchOnce(t)
		msgs, err := h.imap.Messages(context.Background(), ownerAddr, folder)
		if err != nil {
			t.Fatal(err)
		}
		st := h.openStore(t)
		defer func() { _ = st.Close() }()
		counts, err := st.CountByState()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range counts {
			records += c
		}
		return len(msgs), records
	}
	tried, through := 0, 0
	for _, folder := range []string{"Drafts"} {
		tried++
		in, n := run(t, folder, false)
		if in != 1 || n != 1 {
			through++
			t.Errorf("watching %s: %d messages in it, %d records; want only Carol's", folder, in, n)
		}
	}
	t.Logf("attacks: %d tried, %d through", tried, through)
	if through != 0 {
		t.Errorf("attacks through: %d of %d", through, tried)
	}
	t.Run("positive control", func(t *testing.T) {
		in, n := run(t, "Drafts", true)
		if in != 2 || n != 2 {
			t.Errorf("defence off: %d messages in Drafts, %d records; want the agent's draft saved there and read as new mail (2, 2)", in, n)
		}
	})
}
