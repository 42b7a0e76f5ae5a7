package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/store"
)

func (h *harness) createMailbox(t *testing.T, name string) {
	t.Helper()
	c, err := imapclient.DialInsecure(h.imap.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Login(ownerAddr, ownerPass).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(name, nil).Wait(); err != nil {
		t.Fatal(err)
	}
}

// Defect 12: a draft whose IMAP copy failed was never appended later,
// even after the folder existed; the failure showed only in `queue show`.
// Now it is shown in status and `queue list`, and retried on a timer.
func TestFailedDraftCopyRetriedOnTimer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "", func(o *memimap.Options) { o.Mailboxes = []string{"Sent"} })
	d := h.runDaemon(t, func(d *daemon.Daemon) { d.RetryInterval = 100 * time.Millisecond })
	h.deliver(rawMail("Carol <carol@example.org>", "Budget", "Can you check the budget?"))
	var item *store.QueueItem
	eventually(t, "a queued draft whose Drafts copy failed", func() bool {
		_ = d.Store.ListQueue("", func(q *store.QueueItem) error {
			if q.Subject == "Budget" && q.Error != "" {
				item = q
			}
			return nil
		})
		return item != nil
	})
	if !strings.Contains(item.Error, "Drafts") || item.IMAPDraftUID != 0 {
		t.Fatalf("queue item: error %q uid %d, want the Drafts failure", item.Error, item.IMAPDraftUID)
	}
	eventually(t, "status shows the missing copy", func() bool {
		for _, s := range d.Statuses() {
			if s.Name == "personal" && s.CopiesMissing == 1 && strings.Contains(s.CopyError, "Drafts") {
				return true
			}
		}
		return false
	})
	// The owner creates the folder: the copy is made without a restart.
	h.createMailbox(t, "Drafts")
	eventually(t, "the draft copied to Drafts", func() bool {
		q, err := d.Store.GetQueueItem(item.ID)
		return err == nil && q.IMAPDraftUID != 0 && q.Error == ""
	})
	msgs, err := h.imap.Messages(context.Background(), ownerAddr, "Drafts")
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Drafts: %d messages, %v; want the one draft", len(msgs), err)
	}
	if raw := string(msgs[0].Raw); !strings.Contains(raw, "In-Reply-To: <budget@test.example>") || !strings.Contains(raw, "carol@example.org") {
		t.Errorf("the retried draft lacks its reply headers:\n%s", raw)
	}
	eventually(t, "status clear", func() bool {
		for _, s := range d.Statuses() {
			if s.Name == "personal" {
				return s.CopiesMissing == 0
			}
		}
		return false
	})
}

// Defect 12: `queue approve` exited 1 after the reply had gone out,
// because only its copy to Sent failed; a second approval could then
// send it twice. It succeeds with a warning, and the copy is filed later.
func TestApproveSucceedsWhenOnlyTheSentCopyFails(t *testing.T) {
	t.Parallel()
	// Sent exists and can be read (approval looks there first, so that
	// nothing is sent twice), but the server refuses the APPEND of the copy.
	f := &faults{refuseAppend: "Sent"}
	h := newHarness(t, compromisedModel, "", f.wrap)
	h.deliver(rawMail("Carol <carol@example.org>", "Contract", "Did you sign it?"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	items := h.queue(t)
	if len(items) != 1 {
		t.Fatalf("queue: %d items, want 1", len(items))
	}
	_, stderr, code := h.run("queue", "approve", "--yes", items[0].ID)
	if code != 0 {
		t.Fatalf("queue approve: exit %d after the reply was sent: %s", code, stderr)
	}
	if !strings.Contains(stderr, "warning") || !strings.Contains(stderr, "Sent") {
		t.Errorf("approve: no warning about the Sent copy: %s", stderr)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("smtp: %d messages, want 1", n)
	}
	// Approving again sends nothing more.
	h.run("queue", "approve", "--yes", items[0].ID)
	if n := len(h.smtp.Messages()); n != 1 {
		t.Errorf("smtp after a second approve: %d messages, want 1", n)
	}
	// Once the server takes it, the watcher's timer files the copy.
	f.mu.Lock()
	f.refuseAppend = ""
	f.mu.Unlock()
	d := h.runDaemon(t, func(d *daemon.Daemon) {
		d.RetryInterval = 100 * time.Millisecond
		d.Now = func() time.Time { return time.Now().Add(2 * time.Minute) } // past the settle time
	})
	eventually(t, "the reply filed in Sent", func() bool {
		msgs, err := h.imap.Messages(context.Background(), ownerAddr, "Sent")
		return err == nil && len(msgs) == 1
	})
	eventually(t, "the outbox record marked appended", func() bool {
		n := 0
		_ = d.Store.ListOutbox(store.OutboxSent, func(*store.OutboxRecord) error { n++; return nil })
		return n == 0
	})
}

// TestEditSaysWhenTheDraftsCopyFailed: `queue edit` on an account whose
// Drafts folder is missing keeps the new text, but says that its copy in
// the Drafts folder failed and exits 5, instead of "edited" and 0; with
// the folder there the same edit exits 0.
func TestEditSaysWhenTheDraftsCopyFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "", func(o *memimap.Options) { o.Mailboxes = []string{"Sent"} })
	h.deliver(rawMail("Carol <carol@example.org>", "Budget", "Can you check the budget?"))
	h.watchOnce(t)
	st := h.openStore(t)
	var id string
	_ = st.ListQueue(store.QueuePending, func(q *store.QueueItem) error {
		if q.Subject == "Budget" {
			id = q.ID
		}
		return nil
	})
	_ = st.Close()
	if id == "" {
		t.Fatal("no queued draft")
	}
	_, stderr, code := h.run("queue", "edit", id, "--text", "Checked: the budget is fine.")
	if code != ExitPartial || !strings.Contains(stderr, "its copy in your Drafts folder was not updated") {
		t.Errorf("edit without a Drafts folder: exit %d %q; want %d and the failed copy named", code, stderr, ExitPartial)
	}
	h.createMailbox(t, "Drafts")
	if _, stderr, code := h.run("queue", "edit", id, "--text", "Checked again."); code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("edit with the folder there: exit %d %q; want 0 and no warning", code, stderr)
	}
}

// TestFailedCopyInStatusAtOnce: with a watcher running (its retry pass
// minutes away), a draft whose Drafts copy failed is in `status` as soon
// as the item is queued: copies_missing and the reason, text and --json.
func TestFailedCopyInStatusAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "", func(o *memimap.Options) { o.Mailboxes = []string{"Sent"} })
	stderrW, stop := startWatch(t, h, true)
	eventually(t, "the watcher is idle", func() bool { return strings.Contains(stderrW.String(), "personal: idle") })
	h.deliver(rawMail("Carol <carol@example.org>", "Budget", "Can you check the budget?"))
	eventually(t, "status names the failed Drafts copy", func() bool {
		out, _, code := h.run("status", "--json")
		var st StatusJSON
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Accounts) == 0 {
			return false
		}
		a := st.Accounts[0]
		return a.CopiesMissing == 1 && a.CopyError != nil && strings.Contains(*a.CopyError, "Drafts")
	})
	out, _, _ := h.run("status")
	if !strings.Contains(out, "1 IMAP copy waiting for a retry") {
		t.Errorf("status text does not show the failed copy:\n%s", out)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
