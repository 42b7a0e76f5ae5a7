package main

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/review"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
)

// reviewBackend is the review TUI's backend over h's configuration, with
// no watcher running, as `mailagent review` builds it.
func reviewBackend(t *testing.T, h *harness) *review.Backend {
	t.Helper()
	var out, errb bytes.Buffer
	f := newFactory(strings.NewReader(""), &out, &errb)
	f.ConfigPath = h.cfgPath
	t.Cleanup(f.Close)
	return &review.Backend{Open: f.Service, Now: time.Now, Log: slog.New(slog.DiscardHandler)}
}

func itemOfKind(items []tui.Item, kind, decision string) *tui.Item {
	for i := range items {
		if items[i].Kind == kind && (decision == "" || items[i].Decision == decision) {
			return &items[i]
		}
	}
	return nil
}

// TestReviewDetailEveryKind runs a real watcher pass (memimap, the SMTP
// sink, the Gemini fake) that auto-sends to Bob, queues a stranger's
// mail and archives a newsletter, then opens each in the review backend:
// every one has its sender, recipients, thread, classification, gates and
// the ids explain takes; the reply sent on its own names Bob as whom it
// answers, not as "From" the account.
func TestReviewDetailEveryKind(t *testing.T) {
	t.Parallel()
	h := newHarness(t, compromisedModel, autoPolicy)
	h.appendTo("Sent", bobKnown)
	h.deliver(rawMail("Bob <bob@example.org>", "Tuesday?", "Can we meet on Tuesday?"))
	h.deliver(rawMail("Carol <carol@example.net>", "Hello there", "Can we meet on Monday?"))
	h.deliver(rawMail("Shop <news@shop.example>", "Spring sale", "20% off everything", "List-Id: <sale.shop.example>"))
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: %d %s", code, stderr)
	}
	b := reviewBackend(t, h)
	ctx := context.Background()
	items, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent := itemOfKind(items, tui.KindSent, "")
	queued := itemOfKind(items, tui.KindDraft, "")
	archived := itemOfKind(items, tui.KindDecided, "archive")
	autoSent := itemOfKind(items, tui.KindDecided, "auto_send")
	if sent == nil || queued == nil || archived == nil || autoSent == nil {
		t.Fatalf("list: want a sent reply, a queued draft, an archived and an auto_send decision; got %+v", items)
	}
	for _, id := range []string{sent.ID, queued.ID, archived.ID, autoSent.ID} {
		it, err := b.Detail(ctx, id)
		if err != nil {
			t.Fatalf("detail %s: %v", id, err)
		}
		if it.ID != id || it.From.Email == "" || len(it.Thread) == 0 || it.MessageID == "" || !strings.HasPrefix(it.TraceID, "tr_") || it.Decision == "" {
			t.Errorf("detail %s lacks a part: %+v", id, it)
		}
		// Automated mail is archived by routing, before any model call:
		// its reasons say so instead of a classification.
		if id == archived.ID {
			if len(it.Reasons) == 0 {
				t.Errorf("archived %s: no reason", id)
			}
		} else if len(it.Intents) == 0 || it.Comments == "" {
			t.Errorf("detail %s lacks the classification and its rationale: %+v", id, it)
		}
		if it.Kind != tui.KindDecided || it.Decision == "auto_send" {
			if len(it.Gates) == 0 {
				t.Errorf("detail %s: no gates", id)
			}
		}
	}
	it, _ := b.Detail(ctx, sent.ID)
	if it.From.Email != "bob@example.org" || len(it.To) != 1 || it.To[0].Email != "bob@example.org" || it.Draft == "" || it.OutboxID != sent.ID {
		t.Errorf("sent reply: answers %q, to %+v, text %q, outbox %q; want Bob's mail answered, to Bob, with its text", it.From.Email, it.To, it.Draft, it.OutboxID)
	}
	if it, _ := b.Detail(ctx, autoSent.ID); it.Draft == "" || it.OutboxID == "" {
		t.Errorf("auto_send decision: text %q outbox %q; want the reply it sent", it.Draft, it.OutboxID)
	}
	if it, _ := b.Detail(ctx, archived.ID); it.From.Email != "news@shop.example" || !slices.ContainsFunc(it.Reasons, func(r string) bool { return strings.Contains(r, "List-Id") }) {
		t.Errorf("archived: from %q reasons %v; want the shop and why", it.From.Email, it.Reasons)
	}
}

// TestReviewApproveUndoWindow: with no watcher, review's approve returns
// at once (the TUI counts down; the database is not held through the
// window), cancel in the window puts the draft back whole and sends
// nothing, and SendApproved sends once the window has ended.
func TestReviewApproveUndoWindow(t *testing.T) {
	t.Parallel() // waits out real undo windows; shares nothing
	h := newHarness(t, compromisedModel, "[policy]\napproval_delay = \"2s\"\n")
	id := queuedFromBob(t, h, "Tuesday?", "Can we meet on Tuesday?")
	b := reviewBackend(t, h)
	ctx := context.Background()

	start := time.Now()
	if err := b.Approve(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("approve took %v: it waited out the undo window", d)
	}
	it, err := b.Detail(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if it.Status != tui.StatusApproved || !it.SendAt.After(time.Now()) {
		t.Fatalf("after approve: %s, send at %v; want approved with the window ahead", it.Status, it.SendAt)
	}
	// Another command can read the database during the window.
	if _, stderr, code := h.run("queue", "list"); code != 0 {
		t.Fatalf("queue list during the window: %d %s", code, stderr)
	}
	if err := b.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	it, _ = b.Detail(ctx, id)
	if it.Status != store.QueuePending || it.From.Email != "bob@example.org" || len(it.Gates) == 0 || len(it.Intents) == 0 {
		t.Fatalf("after cancel: %+v; want pending with its sender, gates and intents", it)
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Fatalf("sent %d after a cancel", n)
	}

	if err := b.Approve(ctx, id, ""); err != nil {
		t.Fatal(err)
	}
	it, _ = b.Detail(ctx, id)
	time.Sleep(time.Until(it.SendAt))
	if err := b.SendApproved(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Fatalf("after the window: %d sent, want 1", n)
	}
	if it, _ := b.Detail(ctx, id); it.Status != tui.StatusSent {
		t.Fatalf("after send: %s, want sent", it.Status)
	}
}

// TestReviewWarnsOfRiskyGates: the review backend marks the failed gates
// that `queue approve` asks about, so the TUI asks too; a plain draft
// from a known contact has none.
func TestReviewWarnsOfRiskyGates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, highRiskModel, "")
	id := queuedFromBob(t, h, "Overdue invoice", "Please pay the invoice by Friday.")
	it, err := reviewBackend(t, h).Detail(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(it.Warnings, func(w string) bool { return strings.HasPrefix(w, "never_auto: ") }) {
		t.Errorf("warnings: got %q, want the never_auto gate", it.Warnings)
	}

	h2 := newHarness(t, compromisedModel, "")
	id2 := queuedFromBob(t, h2, "Tuesday?", "Can we meet on Tuesday?")
	it2, err := reviewBackend(t, h2).Detail(context.Background(), id2)
	if err != nil {
		t.Fatal(err)
	}
	if len(it2.Warnings) != 0 {
		t.Errorf("a plain draft from a known contact: warnings %q, want none", it2.Warnings)
	}
}
