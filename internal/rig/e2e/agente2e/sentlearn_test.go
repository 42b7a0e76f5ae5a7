package agente2e

import (
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestSentAutomaticMailMakesNoContactKnown (issue 25, "one rule, two
// homes"): ada's Sent folder on the real Dovecot holds her automatic mail
// to strangers (a vacation reply, a generated notice, mailagent's own
// trace) and one message she wrote by hand. Through triage's Sent learning
// and through watch's Sent scan, both of the real binary, only the person
// she wrote to becomes a known contact; no stranger does.
func TestSentAutomaticMailMakesNoContactKnown(t *testing.T) {
	parallel(t)
	attacks := []struct{ name, header string }{
		{"vacation", "Auto-Submitted: auto-replied (vacation)"},
		{"generated", "Auto-Submitted: Auto-Generated; owner-email=\"" + e2e.Owner + "\""},
		{"trace", "X-Mailagent-Trace: tr_planted"},
	}
	probe := newEnv(t, options{Mode: "auto", Model: autoModel}) // its tag, the stack and the folders both paths read
	stranger := func(i int) string { return "stranger" + string(rune('a'+i)) + "." + probe.tag + "@partner.test" }
	friend := "friend." + probe.tag + "@partner.test"
	withHeader := func(m message, header string) []byte {
		return []byte(strings.Replace(string(m.raw()), "MIME-Version:", header+"\r\nMIME-Version:", 1))
	}
	for i, a := range attacks {
		probe.s.Append(t, e2e.Owner, probe.box("Sent"), withHeader(message{From: ownerName + " <" + e2e.Owner + ">", To: stranger(i),
			Subject: "Away " + probe.tag, ID: probe.id("auto-" + a.name), Body: "I am away until Monday."}, a.header), imap.FlagSeen)
	}
	// RFC 3834 allows a comment after "no": still the owner's own mail.
	probe.s.Append(t, e2e.Owner, probe.box("Sent"), withHeader(message{From: ownerName + " <" + e2e.Owner + ">", To: friend,
		Subject: "Lunch " + probe.tag, ID: probe.id("by-hand"), Body: "Lunch on Friday?"}, "Auto-Submitted: no (typed by hand)"), imap.FlagSeen)

	tried, through := 0, 0
	for _, path := range []string{"triage", "watch"} {
		e := newEnv(t, options{Mode: "auto", Model: autoModel, FoldersOf: probe})
		switch path {
		case "triage":
			// --limit 1: the shared INBOX is not ours to classify; the Sent
			// learning runs first whatever the limit.
			if _, stderr, code := e.run("triage", "--limit", "1"); code != 0 && code != 5 {
				t.Fatalf("triage: exit %d: %s", code, stderr)
			}
		case "watch":
			e.mustRun("watch", "--once")
		}
		st := e.openStore()
		known := func(addr string) bool {
			c, err := st.GetContact(account, addr)
			return err == nil && c.Known
		}
		if !known(friend) {
			t.Errorf("%s: %s is not known; ada wrote to them by hand (the learning did not run?)", path, friend)
		}
		for i, a := range attacks {
			tried++
			if known(stranger(i)) {
				through++
				t.Errorf("%s: ada's %s mail made %s a known contact", path, a.name, stranger(i))
			}
		}
		_ = st.Close()
	}
	t.Logf("automatic mail in Sent: %d attacks tried, %d through", tried, through)
	if tried != 2*len(attacks) || through != 0 {
		t.Fatalf("tried %d, through %d; want %d, 0", tried, through, 2*len(attacks))
	}
}
