package main

import (
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
