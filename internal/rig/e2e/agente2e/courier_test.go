package agente2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// The tests in this file run against the second Dovecot of
// scripts/e2e-courier.sh, laid out as Courier-IMAP: NAMESPACE
// (("INBOX." ".")), Sent and Drafts as INBOX.Sent and INBOX.Drafts, no
// SPECIAL-USE, and a server that refuses to create a top-level "Sent".

// TestCourierDoctor: doctor finds INBOX.Sent and INBOX.Drafts; a
// configured folder that does not exist is reported with the folders the
// server has and the prefixed name to create.
func TestCourierDoctor(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{Courier: true})
	out, stderr, code := e.run("doctor", "--json", "--no-model")
	if code != 0 {
		t.Errorf("doctor: exit %d\n%s\n%s", code, out, stderr)
	}
	byName := doctorChecks(t, out)
	for name, want := range map[string]string{"imap.drafts_folder": "INBOX.Drafts", "imap.sent_folder": "INBOX.Sent"} {
		if c := byName[name]; c.Status != "pass" || !strings.Contains(c.Detail, want) {
			t.Errorf("%s: got %+v, want pass naming %s", name, c, want)
		}
	}

	e = newEnv(t, options{Courier: true, DraftsMailbox: "Brouillons"})
	out, _, code = e.run("doctor", "--json", "--no-model")
	if code != 5 {
		t.Errorf("doctor with a missing drafts_mailbox: exit %d, want 5", code)
	}
	c := doctorChecks(t, out)["imap.drafts_folder"]
	if c.Status != "fail" {
		t.Fatalf("Drafts folder: got %+v, want fail", c)
	}
	for _, want := range []string{"drafts_mailbox", "INBOX.Drafts", "INBOX.Sent", `"INBOX.Brouillons"`} {
		if !strings.Contains(c.Detail+" "+c.Fix, want) {
			t.Errorf("Drafts folder: detail %q fix %q do not mention %s", c.Detail, c.Fix, want)
		}
	}
	if strings.Contains(c.Fix, `create "Brouillons"`) {
		t.Errorf("fix advises a top-level folder the server refuses: %q", c.Fix)
	}
}

func doctorChecks(t *testing.T, out string) map[string]check {
	t.Helper()
	var checks []check
	if err := json.Unmarshal([]byte(out), &checks); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	m := map[string]check{}
	for _, c := range checks {
		m[c.Name] = c
	}
	return m
}

// TestCourierWatchDraftsAndSent: on the Courier layout, watch learns a
// known contact from INBOX.Sent (so a low-risk question from Bob is
// answered automatically, and the reply is filed in INBOX.Sent), and a
// queued draft is saved in INBOX.Drafts.
func TestCourierWatchDraftsAndSent(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{Courier: true, Mode: "auto", Model: autoModel})
	seed := e.seedSent(bobAddr)
	w := e.startWatch()

	auto := message{From: bobAddr, To: adaAddr, Subject: "Friday call [auto] " + e.tag, ID: e.id("courier-auto"),
		InReplyTo: "<" + seed + ">", References: "<" + seed + ">", Body: "Could we talk on Thursday?"}
	e.deliver(auto)
	replies := e.waitFind(e2e.Bob, "INBOX", "In-Reply-To", auto.ID, 1, waitLong)
	r := replies[0].M
	if !strings.Contains(r.Text, "Thursday works.") {
		t.Errorf("auto-reply body: %q", r.Text)
	}
	if got := e.waitFind(e2e.Owner, e.box("Sent"), "Message-ID", r.MessageID, 1, waitShort); len(got) != 1 {
		t.Errorf("INBOX.Sent: got %d copies of the auto-reply, want 1", len(got))
	}

	queued := message{From: carolAddr, To: adaAddr, Subject: "Budget review " + e.tag, ID: e.id("courier-draft"),
		Body: "Can you look at the budget before Monday?"}
	e.deliver(queued)
	item := w.queueItem(queued.ID, waitLong)
	drafts := e.waitFind(e2e.Owner, e.box("Drafts"), "In-Reply-To", queued.ID, 1, waitShort)
	// The item is written before its Drafts copy, and the copy's UID is
	// recorded after the APPEND: wait for that second write.
	eventually(t, waitShort, "the queue item records its draft's UID", func() (bool, string) {
		item = w.queueItem(queued.ID, waitShort)
		return item.IMAPDraftUID != 0, fmt.Sprintf("uid %d", item.IMAPDraftUID)
	})
	if !slices.Contains(drafts[0].Flags, imap.FlagDraft) || uint32(drafts[0].UID) != item.IMAPDraftUID {
		t.Errorf("INBOX.Drafts: flags %v uid %d, queue item says uid %d", drafts[0].Flags, drafts[0].UID, item.IMAPDraftUID)
	}
	if item.Error != "" {
		t.Errorf("queue item error: %q", item.Error)
	}
	if strings.Contains(w.stderr.String(), "find the Sent folder") {
		t.Errorf("watch could not find the Sent folder:\n%s", w.stderr.String())
	}
}

// TestCourierApprove: approving a queued draft on the Courier layout
// sends it, files the copy in INBOX.Sent, removes the IMAP draft and
// exits 0.
func TestCourierApprove(t *testing.T) {
	parallel(t)
	e := newEnv(t, options{Courier: true})
	w := e.startWatch()
	m := message{From: carolAddr, To: adaAddr, Subject: "Contract question " + e.tag, ID: e.id("courier-approve"),
		Body: "Did you sign the contract?"}
	e.deliver(m)
	item := w.queueItem(m.ID, waitLong)
	e.waitFind(e2e.Owner, e.box("Drafts"), "In-Reply-To", m.ID, 1, waitShort)
	out, stderr, code := e.run("queue", "approve", "--yes", item.ID)
	if code != 0 {
		t.Fatalf("queue approve: exit %d\n%s\n%s", code, out, stderr)
	}
	replies := e.waitFind(e2e.Carol, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	id := replies[0].M.MessageID
	if got := e.waitFind(e2e.Owner, e.box("Sent"), "Message-ID", id, 1, waitShort); len(got) != 1 {
		t.Errorf("INBOX.Sent: got %d copies of the approved reply, want 1", len(got))
	}
	eventually(t, waitShort, "the IMAP draft removed after the send", func() (bool, string) {
		got, err := e.findErr(e2e.Owner, e.box("Drafts"), "In-Reply-To", m.ID)
		if err != nil {
			return false, err.Error()
		}
		return len(got) == 0, "still there"
	})
}
