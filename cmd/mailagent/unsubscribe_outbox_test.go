package main

import (
	"strings"
	"testing"

	"github.com/mailagent/mailagent/store"
)

// hostileUnsubscribeTargets are mailto targets of List-Unsubscribe that
// point at this machine or the local network.
var hostileUnsubscribeTargets = []string{
	"u@[127.0.0.1]", "u@[10.20.30.40]", "root@localhost", "u@printer.local", "u@mailhost", "u@corp.internal",
}

// TestUnsubscribeMailThroughOutbox (class "unsubscribe", end to end in the
// command): the unsubscribe mail goes through the outbox (one record of
// kind unsubscribe, Auto-Submitted: auto-generated), exactly once even
// when asked twice, and a mailto to an address literal or a local name
// is refused with nothing sent. Positive control: with those domains in
// policy.allow_domains (the rule bypassed), the same commands send.
func TestUnsubscribeMailThroughOutbox(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, extra string) (*harness, int, int) {
		h := newHarness(t, compromisedModel, extra)
		h.deliver(newsletter("ok@lists.example.org", "<mailto:leave@lists.example.org>", ""))
		for i, to := range hostileUnsubscribeTargets {
			h.deliver(newsletter("hostile-"+string(rune('a'+i))+"@lists.example.org", "<mailto:"+to+">", ""))
		}
		h.watchOnce(t)
		tried, through := 0, 0
		for i, to := range hostileUnsubscribeTargets {
			tried++
			_, stderr, code := h.run("unsubscribe", "hostile-"+string(rune('a'+i))+"@lists.example.org", "--yes")
			for _, m := range h.smtp.Messages() {
				for _, r := range m.To {
					if r == to {
						through++
					}
				}
			}
			if extra == "" && (code == 0 || !strings.Contains(stderr, "not a public mail address")) {
				t.Errorf("%s: exit %d, %q; want a refusal naming the address rule", to, code, stderr)
			}
		}
		return h, tried, through
	}

	h, tried, through := run(t, "")
	t.Logf("unsubscribe (command): %d attacks tried, %d through", tried, through)
	if through != 0 || len(h.smtp.Messages()) != 0 {
		t.Fatalf("unsubscribe: %d of %d hostile targets mailed (%d mails)", through, tried, len(h.smtp.Messages()))
	}

	for i := 0; i < 2; i++ { // asked twice: one mail
		if _, stderr, code := h.run("unsubscribe", "ok@lists.example.org", "--yes"); code != 0 {
			t.Fatalf("unsubscribe #%d: exit %d: %s", i+1, code, stderr)
		}
	}
	msgs := h.smtp.Messages()
	if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != "leave@lists.example.org" {
		t.Fatalf("sent %+v, want exactly one mail to leave@lists.example.org", msgs)
	}
	if !strings.Contains(string(msgs[0].Data), "\r\nAuto-Submitted: auto-generated\r\n") {
		t.Errorf("the unsubscribe mail lacks Auto-Submitted: auto-generated:\n%s", msgs[0].Data)
	}
	st := h.openStore(t)
	var recs []*store.OutboxRecord
	if err := st.ListOutbox("", func(r *store.OutboxRecord) error {
		if r.Kind == store.OutboxKindUnsubscribe {
			recs = append(recs, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Status != store.OutboxAppended || !recs[0].Auto || recs[0].To[0] != "leave@lists.example.org" {
		t.Fatalf("outbox: %+v, want one appended automatic unsubscribe record", recs)
	}
	if c, err := st.GetContact(recs[0].Account, "leave@lists.example.org"); err == nil && (c.Known || c.Outbound > 0) {
		t.Errorf("the list address became a contact: %+v", c)
	}
	_ = st.Close()

	// Positive control: the rule bypassed by allowing the domains.
	var allow []string
	for _, to := range hostileUnsubscribeTargets {
		allow = append(allow, `"`+to[strings.IndexByte(to, '@')+1:]+`"`)
	}
	_, _, landed := run(t, "\n[policy]\nallow_domains = ["+strings.Join(allow, ", ")+"]\n")
	if landed != len(hostileUnsubscribeTargets) {
		t.Fatalf("positive control: %d of %d landed with the domains allowed", landed, len(hostileUnsubscribeTargets))
	}
}
