package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/internal/memimap"
)

// count returns how many messages of the mailbox contain s.
func (h *harness) count(t *testing.T, mailbox, s string) int {
	t.Helper()
	msgs, err := h.imap.Messages(context.Background(), ownerAddr, mailbox)
	if err != nil {
		return 0 // no such mailbox
	}
	n := 0
	for _, m := range msgs {
		if strings.Contains(string(m.Raw), s) {
			n++
		}
	}
	return n
}

// TestMailboxReflectsDecisions: with [mailbox] archive = "move", triage
// changes nothing in the mailbox; watch moves archived (automated) mail to
// the Archive folder it creates, on a server without MOVE too.
func TestMailboxReflectsDecisions(t *testing.T) {
	t.Parallel()
	for _, noMove := range []bool{false, true} {
		name := "MOVE"
		var opts []func(*memimap.Options)
		if noMove {
			name = "COPY+STORE+EXPUNGE"
			opts = append(opts, func(o *memimap.Options) {
				o.Caps = imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapUIDPlus: {}, imap.CapIdle: {}, imap.CapSpecialUse: {}}
			})
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, compromisedModel, "[mailbox]\narchive = \"move\"\n", opts...)
			h.deliver(rawMail("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>",
				"Message-ID: <digest-1@lists.example.org>"))
			if _, stderr, code := h.run("triage"); code != 0 && code != ExitPartial {
				t.Fatalf("triage: exit %d: %s", code, stderr)
			}
			if n := h.count(t, "INBOX", "digest-1@lists.example.org"); n != 1 {
				t.Fatalf("triage changed the mailbox: INBOX holds %d copies", n)
			}
			if n := h.count(t, "Archive", "digest-1@lists.example.org"); n != 0 {
				t.Fatalf("triage archived: Archive holds %d", n)
			}
			h.watchOnce(t)
			if in, arch := h.count(t, "INBOX", "digest-1@lists.example.org"), h.count(t, "Archive", "digest-1@lists.example.org"); in != 0 || arch != 1 {
				t.Fatalf("after watch: INBOX %d, Archive %d; want 0 and 1", in, arch)
			}
		})
	}
}

// TestMailboxArchiveOffByDefault: without [mailbox], archive decisions
// leave the mailbox alone.
func TestMailboxArchiveOffByDefault(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "")
	h.deliver(rawMail("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>",
		"Message-ID: <digest-2@lists.example.org>"))
	h.watchOnce(t)
	if n := h.count(t, "INBOX", "digest-2@lists.example.org"); n != 1 {
		t.Fatalf("archive is off by default, yet INBOX holds %d copies", n)
	}
}

// flagsOf returns the flags of the message of the mailbox containing s.
func (h *harness) flagsOf(t *testing.T, mailbox, s string) []imap.Flag {
	t.Helper()
	msgs, err := h.imap.Messages(context.Background(), ownerAddr, mailbox)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(string(m.Raw), s) {
			return m.Flags
		}
	}
	t.Fatalf("no message with %q in %s", s, mailbox)
	return nil
}

// TestMailboxKeywords: archive = "keyword" only flags archived mail, and
// keywords = true labels a queued message with $mailagent-queued and its
// intents; triage sets none.
func TestMailboxKeywords(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, "[mailbox]\narchive = \"keyword\"\nkeywords = true\n")
	h.deliver(rawMail("News <news@lists.example.org>", "Weekly digest", "Top stories", "List-Id: <digest.lists.example.org>",
		"Message-ID: <digest-3@lists.example.org>"))
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?", "Message-ID: <lunch-3@example.org>"))
	if _, stderr, code := h.run("triage"); code != 0 && code != ExitPartial {
		t.Fatalf("triage: exit %d: %s", code, stderr)
	}
	for _, id := range []string{"digest-3@", "lunch-3@"} {
		if fl := h.flagsOf(t, "INBOX", id); len(fl) != 0 {
			t.Fatalf("triage set flags on %s: %v", id, fl)
		}
	}
	h.watchOnce(t)
	if fl := h.flagsOf(t, "INBOX", "digest-3@"); !slices.Contains(fl, imap.Flag("$mailagent-archived")) {
		t.Errorf("archived digest: flags %v, want $mailagent-archived", fl)
	}
	fl := h.flagsOf(t, "INBOX", "lunch-3@")
	if !slices.Contains(fl, imap.Flag("$mailagent-queued")) || !slices.ContainsFunc(fl, func(f imap.Flag) bool {
		return strings.HasPrefix(string(f), "$mailagent-") && f != "$mailagent-queued"
	}) {
		t.Errorf("queued mail: flags %v, want $mailagent-queued and an intent keyword", fl)
	}
}
