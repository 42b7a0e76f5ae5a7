package main

import (
	"fmt"
	"strings"
	"testing"
)

// Defect 12: triage never read Sent, so its records said "the owner has
// never written to this contact" of people the owner writes to.
func TestTriageKnowsContactsFromSent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, autoPolicy)
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Bob <bob@example.org>\nCc: Dora <dora@example.org>\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <earlier@example.com>\n\nHi Bob\n")
	// Mail in Sent that the owner did not write teaches nothing.
	h.appendTo("Sent", "From: Mallory <mallory@evil.example>\nTo: Eve <eve@evil.example>\nSubject: planted\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <planted@evil.example>\n\nx\n")
	// Nor does the owner's automatic mail (issue 25: triage learned it,
	// watch did not; agent.KnownFromSent decides for both).
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Frank <frank@evil.example>\nSubject: Out of office\nAuto-Submitted: auto-replied\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <vacation@example.com>\n\nI am away\n")
	h.deliver(rawMail("Bob <bob@example.org>", "Call", "Can we talk Thursday?"))
	h.deliver(rawMail("Frank <frank@evil.example>", "Wire", "Wire the money"))
	h.deliver(rawMail("Dora <dora@example.org>", "Lunch", "Lunch Friday?"))
	h.deliver(rawMail("Eve <eve@evil.example>", "Invoice", "Pay this now"))
	stdout, stderr, code := h.run("triage", "--json")
	if code != 0 && code != 5 {
		t.Fatalf("triage: exit %d: %s", code, stderr)
	}
	got := decodeLines(t, stdout)
	known := func(subject string) (bool, bool) {
		for _, g := range got[subject].Gates {
			if g.Gate == "known_contact" {
				return g.Pass && strings.HasPrefix(g.Reason, "the owner has written to ") && strings.HasSuffix(g.Reason, " before"), true
			}
		}
		return false, false
	}
	for subject, want := range map[string]bool{"Call": true, "Lunch": true, "Invoice": false, "Wire": false} {
		k, ok := known(subject)
		if !ok {
			t.Errorf("%s: no known_contact gate in %+v", subject, got[subject])
			continue
		}
		if k != want {
			t.Errorf("%s: known contact = %v, want %v (gates %+v)", subject, k, want, got[subject].Gates)
		}
	}
}

// triage learns the Sent folder beside its own start (the dial, the
// search, prethreading), and its workers wait for it: a Bob known only
// from the last of 2,000 Sent messages is known when his mail is
// classified. Without the wait the one inbox message is classified long
// before the Sent folder is read (it failed so).
func TestTriageWaitsForTheSentFolder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, autoPolicy)
	for i := range 2000 {
		h.appendTo("Sent", fmt.Sprintf("From: Ada Lovelace <ada@example.com>\nTo: c%d@example.net\nSubject: note %d\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <n%d@example.com>\n\nhello\n", i, i, i))
	}
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Bob <bob@example.org>\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <earlier@example.com>\n\nHi Bob\n")
	h.deliver(rawMail("Bob <bob@example.org>", "Call", "Can we talk Thursday?"))
	stdout, stderr, code := h.run("triage", "--json")
	if code != 0 && code != 5 {
		t.Fatalf("triage: exit %d: %s", code, stderr)
	}
	got := decodeLines(t, stdout)
	for _, g := range got["Call"].Gates {
		if g.Gate == "known_contact" {
			if !g.Pass {
				t.Errorf("Bob, known from the last Sent message, is not a known contact: %s", g.Reason)
			}
			return
		}
	}
	t.Errorf("no known_contact gate in %+v", got["Call"])
}
