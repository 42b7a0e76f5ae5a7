package agente2e

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/store"
)

// partnerBob is a known contact outside the owner's domain, whose mail the
// stack can authenticate: partner.test publishes a DKIM key and a DMARC
// p=reject policy in the stack's private DNS. Postfix delivers mail to him
// to the sink user.
//
// carol@nodmarc.test and dave@dkimonly.test are known contacts too. Carol's
// domain whose domain publishes neither a
// DKIM key nor a DMARC record: the server's verdict on her mail is
// dkim=none, dmarc=none. Dave's mail is checked by OpenDKIM only, as on a
// server without a DMARC check: the verdict is dkim=none and nothing else.
const (
	partnerBobEmail = "bob@" + e2e.PartnerDomain
	partnerBob      = "Bob <" + partnerBobEmail + ">"
	noDMARCEmail    = "carol@nodmarc.test"
	noDMARCCarol    = "Carol <" + noDMARCEmail + ">"
	dkimOnlyDave    = "Dave <dave@" + e2e.DKIMOnlyDomain + ">"
	gateSenderAuth  = "sender_auth"
	gateKnown       = "known_contact"
)

// setAuthservID adds accounts.authserv_id to the env's config, so the agent
// trusts the Authentication-Results the stack's own milters write.
func (e *env) setAuthservID(id string) {
	e.t.Helper()
	b, err := os.ReadFile(e.cfgPath)
	if err != nil {
		e.t.Fatal(err)
	}
	// Replace the id the env was written with (its own stack's server).
	var kept [][]byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("authserv_id = ")) {
			kept = append(kept, l)
		}
	}
	b = bytes.Join(kept, nil)
	line := "display_name = \"" + ownerName + "\"\n"
	if !bytes.Contains(b, []byte(line)) {
		e.t.Fatalf("config has no %q line to put authserv_id after", strings.TrimSpace(line))
	}
	b = bytes.Replace(b, []byte(line), []byte(line+"authserv_id = \""+id+"\"\n"), 1)
	if err := os.WriteFile(e.cfgPath, b, 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// deliverSigned is deliver with the message DKIM-signed for domain (one of
// the stack's signing domains: e2e.PartnerDomain, e2e.LocalDomain, …), so
// the stack's milters authenticate it. Use it, with setAuthservID, for
// mail that must pass the sender_auth gate.
func (e *env) deliverSigned(m message, domain string) {
	e.t.Helper()
	signed, err := e2e.SignDKIM(m.raw(), domain)
	if err != nil {
		e.t.Fatal(err)
	}
	e.s.Deliver(e.t, bareAddr(m.From), []string{e2e.Owner}, signed)
	e.moveIn(m.ID)
}

// authCase is one message from the known contact, as his server (or a
// forger) submits it to the owner's server.
type authCase struct {
	name string
	from string // "" = partnerBob
	// make turns the plain message into what is submitted.
	make func(t *testing.T, raw []byte) []byte
	// authentic: the owner's server authenticates From (DMARC pass, or
	// DKIM pass aligned with partner.test). Only these may be auto-sent.
	authentic bool
}

func authCases(a *e2e.SenderAuth) []authCase {
	forged := func(raw []byte) []byte {
		// One forged field OpenDKIM deletes (it carries a DKIM result
		// under the server's authserv-id), and one it keeps, below the
		// server's own fields.
		return append([]byte(
			"Authentication-Results: "+a.AuthservID+"; dkim=pass header.d="+e2e.PartnerDomain+"\r\n"+
				"Authentication-Results: "+a.AuthservID+"; dmarc=pass header.from="+e2e.PartnerDomain+"\r\n"), raw...)
	}
	return []authCase{
		{name: "signed", authentic: true, make: func(t *testing.T, raw []byte) []byte { return a.MustSign(t, raw, e2e.PartnerDomain) }},
		{name: "unsigned", make: func(_ *testing.T, raw []byte) []byte { return raw }},
		{name: "body altered after signing", make: func(t *testing.T, raw []byte) []byte {
			signed := a.MustSign(t, raw, e2e.PartnerDomain)
			out := bytes.Replace(signed, []byte("could we meet"), []byte("could you wire"), 1)
			if bytes.Equal(out, signed) {
				t.Fatal("the body to alter is not in the message")
			}
			return out
		}},
		{name: "forged results below the real ones", make: func(_ *testing.T, raw []byte) []byte { return forged(raw) }},
		{name: "signed by another domain", make: func(t *testing.T, raw []byte) []byte { return a.MustSign(t, raw, e2e.OtherDomain) }},
		{
			// The server writes dmarc=none (no policy), not fail: a
			// forged dmarc=pass below it must not count either.
			name: "forged dmarc=pass, domain without DMARC", from: noDMARCCarol,
			make: func(_ *testing.T, raw []byte) []byte {
				return append([]byte("Authentication-Results: "+a.AuthservID+"; dmarc=pass header.from=nodmarc.test\r\n"), raw...)
			},
		},
		{
			// Nothing in the server's fields says DMARC at all: a forged
			// dmarc=pass below them is the only DMARC result in the mail.
			name: "forged dmarc=pass, server without DMARC check", from: dkimOnlyDave,
			make: func(_ *testing.T, raw []byte) []byte {
				return append([]byte("Authentication-Results: "+a.AuthservID+"; dmarc=pass header.from="+e2e.DKIMOnlyDomain+"\r\n"), raw...)
			},
		},
	}
}

// TestAutoSendOnlyAuthenticated: in auto mode, with accounts.authserv_id
// naming the owner's own server, a low-risk question from a known contact
// is answered automatically only when that server authenticated the sender
// (real OpenDKIM/OpenDMARC results on real DKIM signatures). The same mail
// unsigned, with its body altered after signing, with forged
// Authentication-Results below the server's, or signed by a domain that is
// not the From domain, is queued for the owner instead, and nothing is sent.
//
// Until the sender_auth gate is in the tree (issue 8), the test skips: run
// without the gate, all four look-alikes are answered automatically.
func TestAutoSendOnlyAuthenticated(t *testing.T) {
	parallel(t)
	_, a := e2e.RequireSenderAuth(t)
	e := newEnv(t, options{Mode: "auto", Model: autoModel})
	e.setAuthservID(a.AuthservID)
	e.seedSent(partnerBob)
	for i, to := range []string{noDMARCCarol, dkimOnlyDave} {
		e.s.Append(t, e2e.Owner, e.box("Sent"), message{
			From: adaAddr, To: to, Subject: "Catching up " + e.tag, ID: e.id(fmt.Sprintf("earlier-%d", i)),
			Body: "Hi, good to see you last week.",
		}.raw(), imap.FlagSeen)
	}
	w := e.startWatch()

	cases := authCases(a)
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = e.id("auth-" + strings.ReplaceAll(c.name, " ", "-"))
		from := c.from
		if from == "" {
			from = partnerBob
		}
		m := message{From: from, To: adaAddr, ID: ids[i],
			Subject: "Thursday meeting [auto] " + c.name + " " + e.tag,
			Body:    "Hi Ada,\ncould we meet on Thursday at 3pm instead?\nBob"}
		e.s.Deliver(t, bareAddr(from), []string{e2e.Owner}, c.make(t, m.raw()))
		e.moveIn(m.ID)
	}
	w.waitTerminal(ids, waitLong)
	recs, err := w.records()
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	w.stop()
	// A second complete run must not send anything either.
	e.mustRun("watch", "--once")
	e.barrier(e2e.Sink, e2e.Bob)

	var forgeries, answered int
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			replies := e.find(e2e.Sink, "INBOX", "In-Reply-To", ids[i])
			rs := recs[ids[i]]
			if len(rs) != 1 {
				t.Fatalf("records for %s: got %d, want 1", ids[i], len(rs))
			}
			gates := gateMap(rs[0].Gates)
			if c.authentic {
				if len(replies) != 1 {
					t.Errorf("auto-replies to the authenticated message: got %d, want exactly 1 (gates %v)", len(replies), rs[0].Gates)
				}
				if g, ok := gates[gateSenderAuth]; !ok || !g.Pass {
					t.Errorf("gate %s: got %+v (present %v), want a pass", gateSenderAuth, g, ok)
				}
				return
			}
			forgeries++
			if len(replies) != 0 {
				answered++
				t.Errorf("auto-replies: got %d, want 0: the owner's server did not authenticate this sender (gates %v)", len(replies), rs[0].Gates)
			}
			// Queued for the owner, for the missing authentication and
			// not for another reason (bob is a known contact).
			if g := gates[gateKnown]; !g.Pass {
				t.Errorf("gate %s: got %+v, want a pass (the test's contact must be known)", gateKnown, g)
			}
			if g, ok := gates[gateSenderAuth]; !ok || g.Pass {
				t.Errorf("gate %s: got %+v (present %v), want a failure", gateSenderAuth, g, ok)
			}
		})
	}
	t.Logf("unauthenticated look-alikes of a known contact: %d tried, %d auto-answered", forgeries, answered)

	// The queue holds a draft for each unauthenticated one, none for the
	// authenticated one.
	st := e.openStore()
	queued := map[string]string{}
	if err := st.ListQueue("", func(q *store.QueueItem) error {
		queued[q.MessageID] = q.Status
		return nil
	}); err != nil {
		t.Fatalf("queue: %v", err)
	}
	for i, c := range cases {
		status, ok := queued[ids[i]]
		switch {
		case c.authentic && ok && status != store.QueueSent:
			t.Errorf("%s: got a %s queue item, want none (it was answered automatically)", c.name, status)
		case !c.authentic && (!ok || status != store.QueuePending):
			t.Errorf("%s: got queue item %q (present %v), want a pending draft", c.name, status, ok)
		}
	}
}

func gateMap(gs []store.GateResult) map[string]store.GateResult {
	m := make(map[string]store.GateResult, len(gs))
	for _, g := range gs {
		m[g.Gate] = g
	}
	return m
}

// TestAutoSendLocalSignedContact: the local user bob@example.test, whose
// mail is signed by his (the stack's) domain, is authenticated like any
// outside sender and auto-answered once. It is the pattern for tests that
// need an automatic send: setAuthservID plus deliverSigned.
func TestAutoSendLocalSignedContact(t *testing.T) {
	parallel(t)
	_, a := e2e.RequireSenderAuth(t)
	e := newEnv(t, options{Mode: "auto", Model: autoModel})
	e.setAuthservID(a.AuthservID)
	e.seedSent(bobAddr)
	w := e.startWatch()

	m := message{From: bobAddr, To: adaAddr, Subject: "Thursday meeting [auto] signed " + e.tag, ID: e.id("local-signed"),
		Body: "Hi Ada,\ncould we meet on Thursday at 3pm instead?\nBob"}
	e.deliverSigned(m, e2e.LocalDomain)
	e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	w.waitTerminal([]string{m.ID}, waitShort)
	w.stop()
	e.barrier(e2e.Bob)
	if got := e.find(e2e.Bob, "INBOX", "In-Reply-To", m.ID); len(got) != 1 {
		t.Errorf("bob's INBOX: got %d replies to %s, want exactly 1", len(got), m.ID)
	}
}
