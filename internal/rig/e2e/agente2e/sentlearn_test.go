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
//
// Its control (data, in the same runs): the same three mails, each
// without its automatic header (so written by hand), to three other
// strangers in the same Sent folder, make each of them known on both
// paths: the header, not anything else about the mail, is what keeps a
// stranger unknown, and the test's own check sees a stranger made known.
func TestSentAutomaticMailMakesNoContactKnown(t *testing.T) {
	parallel(t)
	attacks := []struct{ name, header string }{
		{"vacation", "Auto-Submitted: auto-replied (vacation)"},
		{"generated", "Auto-Submitted: Auto-Generated; owner-email=\"" + e2e.Owner + "\""},
		{"trace", "X-Mailagent-Trace: tr_planted"},
	}
	probe := newEnv(t, options{Mode: "auto", Model: autoModel}) // its tag, the stack and the folders both paths read
	stranger := func(i int) string { return "stranger" + string(rune('a'+i)) + "." + probe.tag + "@partner.test" }
	// control(i) gets attack i's mail without its header.
	control := func(i int) string { return "control" + string(rune('a'+i)) + "." + probe.tag + "@partner.test" }
	friend := "friend." + probe.tag + "@partner.test"
	withHeader := func(m message, header string) []byte {
		return []byte(strings.Replace(string(m.raw()), "MIME-Version:", header+"\r\nMIME-Version:", 1))
	}
	for i, a := range attacks {
		probe.s.Append(t, e2e.Owner, probe.box("Sent"), withHeader(message{From: ownerName + " <" + e2e.Owner + ">", To: stranger(i),
			Subject: "Away " + probe.tag, ID: probe.id("auto-" + a.name), Body: "I am away until Monday."}, a.header), imap.FlagSeen)
		probe.s.Append(t, e2e.Owner, probe.box("Sent"), message{From: ownerName + " <" + e2e.Owner + ">", To: control(i),
			Subject: "Away " + probe.tag, ID: probe.id("control-" + a.name), Body: "I am away until Monday."}.raw(), imap.FlagSeen)
	}
	// RFC 3834 allows a comment after "no": still the owner's own mail.
	probe.s.Append(t, e2e.Owner, probe.box("Sent"), withHeader(message{From: ownerName + " <" + e2e.Owner + ">", To: friend,
		Subject: "Lunch " + probe.tag, ID: probe.id("by-hand"), Body: "Lunch on Friday?"}, "Auto-Submitted: no (typed by hand)"), imap.FlagSeen)

	paths := []string{"triage", "watch"}
	tried, through, landed := 0, 0, 0
	for _, path := range paths {
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
			if known(control(i)) {
				landed++
			} else {
				t.Errorf("control: %s: the same mail as the %s one, without its header, left %s unknown; want known", path, a.name, control(i))
			}
		}
		_ = st.Close()
	}
	t.Logf("automatic mail in Sent: %d attacks tried, %d through; control (no automatic header): %d of %d landed", tried, through, landed, tried)
	if want := len(paths) * len(attacks); tried != want || through != 0 {
		t.Fatalf("tried %d, through %d; want %d, 0", tried, through, want)
	}
	if landed != tried {
		t.Errorf("control: %d of %d strangers written to without the automatic header became known, want %d", landed, tried, tried)
	}
}
