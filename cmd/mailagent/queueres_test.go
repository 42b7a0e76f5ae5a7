package main

// Owner replies, Drafts-folder copies and known contacts, end to end in
// process: the real commands over imapmemserver and a go-smtp sink.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// item returns the queue item with the given subject.
func (h *harness) item(t *testing.T, subject string) *store.QueueItem {
	t.Helper()
	for _, q := range h.queue(t) {
		if q.Subject == subject {
			return q
		}
	}
	t.Fatalf("no queue item %q", subject)
	return nil
}

func (h *harness) watchOnce(t *testing.T) {
	t.Helper()
	if _, stderr, code := h.run("watch", "--once"); code != 0 {
		t.Fatalf("watch --once: exit %d: %s", code, stderr)
	}
}

func (h *harness) mailbox(t *testing.T, name string) []string {
	t.Helper()
	msgs, err := h.imap.Messages(context.Background(), ownerAddr, name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Raw)
	}
	return out
}

func (h *harness) contact(t *testing.T, email string) *store.Contact {
	t.Helper()
	st := h.openStore(t)
	defer func() { _ = st.Close() }()
	c, err := st.GetContact("personal", email)
	if err != nil {
		return &store.Contact{Email: email}
	}
	return c
}

// appendRaw appends raw bytes (CRLF already) as a mail client would.
func (h *harness) appendRaw(t *testing.T, mailbox string, raw []byte) {
	t.Helper()
	if _, err := h.imap.Append(context.Background(), ownerAddr, mailbox, raw, []imap.Flag{imap.FlagSeen}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// clientSends does what a mail client does when the owner sends a draft
// from their Drafts folder: the message (edited by edit, when set) is
// filed in Sent and the draft removed. The SMTP side happens outside
// mailagent, so the sink never sees it.
func (h *harness) clientSends(t *testing.T, draft string, edit func(string) string) {
	t.Helper()
	if edit != nil {
		draft = edit(draft)
	}
	h.appendRaw(t, "Sent", []byte(draft))
	c, err := imapclient.DialInsecure(h.imap.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if err := c.Login(ownerAddr, ownerPass).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Select("Drafts", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Store(imap.SeqSet{imap.SeqRange{Start: 1, Stop: 0}}, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}}, nil).Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Expunge().Close(); err != nil {
		t.Fatal(err)
	}
}

// Two correspondents, each with a pending draft.
const (
	aliceMail = "From: Alice <alice@example.org>\nTo: Ada <ada@example.com>\nSubject: Budget\nDate: Mon, 02 Nov 2026 10:00:00 +0000\nMessage-ID: <budget@test.example>\n\nCan you send the Q3 budget?\n"
	bobMail   = "From: Bob <bob@example.org>\nTo: Ada <ada@example.com>\nSubject: Lunch\nDate: Mon, 02 Nov 2026 10:05:00 +0000\nMessage-ID: <lunch@test.example>\n\nLunch on Friday?\n"
)

// lastOwnerSent numbers ownerSent's messages, from parallel tests too.
var lastOwnerSent atomic.Int64

// ownerSent is a message in the owner's Sent folder with the given
// headers (To, In-Reply-To, …).
func ownerSent(headers string) string {
	ownerSentN := lastOwnerSent.Add(1)
	return "From: Ada Lovelace <ada@example.com>\nSubject: Re: something\nDate: Mon, 02 Nov 2026 11:00:00 +0000\n" +
		fmt.Sprintf("Message-ID: <own-%d@example.com>\n", ownerSentN) + headers + "\n\nSure.\n"
}

// ownerReplyCase is one reply of the owner's filed in Sent after alice,
// bob and mallory (who re-sent alice's Message-ID) each have a pending
// draft.
type ownerReplyCase struct {
	name   string
	sent   string
	attack bool   // an attempt to close an item the owner did not answer
	want   string // "alice", "bob", "" (no item resolved) or "mallory"
	// stoppedBy names the rule outside the identity layer that stops the
	// attack ("" when store.SwitchOffIdentityForTest lets it land): the
	// positive control expects exactly the others to land.
	stoppedBy string
}

var ownerReplyCases = []ownerReplyCase{
	{"reply to alice whose References name bob's message", ownerSent("To: alice@example.org\nIn-Reply-To: <budget@test.example>\nReferences: <lunch@test.example> <budget@test.example>"), true, "alice", ""},
	{"reply to bob's message sent to alice instead", ownerSent("To: alice@example.org\nIn-Reply-To: <lunch@test.example>\nReferences: <lunch@test.example>"), true, "", ""},
	{"References alone name bob's message", ownerSent("To: bob@example.org\nReferences: <lunch@test.example>"), true, "",
		"agent.answersItem: only In-Reply-To names the answered message, never References alone"},
	{"reply-all to alice's message with bob in Cc", ownerSent("To: alice@example.org\nCc: bob@example.org\nIn-Reply-To: <budget@test.example>\nReferences: <lunch@test.example> <budget@test.example>"), true, "alice", ""},
	{"automatic reply from the owner's address", ownerSent("To: bob@example.org\nIn-Reply-To: <lunch@test.example>\nAuto-Submitted: auto-replied"), true, "",
		"Pipeline.OwnerReplied leaves automatic mail out itself (IsAutomatic), beside agent.SentAutomatically"},
	{"mailagent's own send", ownerSent("To: bob@example.org\nIn-Reply-To: <lunch@test.example>\nX-Mailagent-Trace: q_forged"), true, "",
		"Pipeline.OwnerReplied leaves mail with agent.TraceHeader out itself, beside agent.OwnerWrote"},
	{"a Sent message not from the owner", strings.Replace(ownerSent("To: bob@example.org\nIn-Reply-To: <lunch@test.example>"), "From: Ada Lovelace <ada@example.com>", "From: Eve <eve@attacker.example>", 1), true, "",
		"agent.OwnerWrote: From is not one of the owner's addresses"},
	{"reply to the spoofed copy of alice's message", ownerSent("To: mallory@attacker.example\nIn-Reply-To: <budget@test.example>"), true, "mallory", ""},
	{"the right reply", ownerSent("To: Bob <bob@example.org>\nIn-Reply-To: <lunch@test.example>\nReferences: <lunch@test.example>"), false, "bob", ""},
	{"the right reply, ids in other case, Bob in Cc", ownerSent("To: carol@example.org\nCc: BOB@EXAMPLE.ORG\nIn-Reply-To: <LUNCH@test.example>"), false, "bob", ""},
}

// runOwnerReplyCase plays tt in a world of its own and returns the items
// whose status is not the one tt wants (who: got, want), and whether an
// item the owner did not answer was closed (leaked) and how many
// messages went out.
func runOwnerReplyCase(t *testing.T, tt ownerReplyCase) (wrong []string, leaked bool, sent int) {
	t.Helper()
	h := newHarness(t, compromisedModel, "")
	h.deliver(aliceMail)
	h.deliver(bobMail)
	// Mallory re-sends alice's Message-ID: a reply to Mallory must
	// close Mallory's item and not alice's.
	h.deliver(strings.NewReplacer("Alice <alice@example.org>", "Mallory <mallory@attacker.example>", "Subject: Budget", "Subject: Budget too").Replace(aliceMail))
	h.watchOnce(t)
	h.appendTo("Sent", tt.sent)
	h.watchOnce(t)
	got := map[string]string{}
	for _, q := range h.queue(t) {
		got[q.From.Email] = q.Status
	}
	owners := map[string]string{"alice": "alice@example.org", "bob": "bob@example.org", "mallory": "mallory@attacker.example"}
	for _, who := range []string{"alice", "bob", "mallory"} {
		want := store.QueuePending
		if who == tt.want {
			want = store.QueueResolved
		}
		if g := got[owners[who]]; g != want {
			wrong = append(wrong, fmt.Sprintf("%s's item: got %s, want %s", who, g, want))
			leaked = leaked || want == store.QueuePending
		}
	}
	return wrong, leaked, len(h.smtp.Messages())
}

// TestOwnerReplyResolvesOnlyTheItemItAnswers: a reply the owner filed in
// Sent closes only the item it answers (In-Reply-To names its message
// and it went to its correspondent). Each attack is a reply that names
// or reaches another item; its positive control is
// TestOwnerReplyResolvesOnlyTheItemItAnswersLandsWithoutIdentity.
func TestOwnerReplyResolvesOnlyTheItemItAnswers(t *testing.T) {
	t.Parallel()
	tried, through := 0, 0
	for _, tt := range ownerReplyCases {
		t.Run(tt.name, func(t *testing.T) {
			wrong, leaked, sent := runOwnerReplyCase(t, tt)
			for _, w := range wrong {
				t.Error(w)
			}
			if tt.attack {
				tried++
				if leaked {
					through++
				}
			}
			if sent != 0 {
				t.Errorf("sent %d messages, want 0", sent)
			}
		})
	}
	t.Logf("owner-reply resolution: %d attacks tried, %d got through", tried, through)
	if through != 0 {
		t.Errorf("%d attacks closed an item the owner had not answered", through)
	}
}

// TestOwnerReplyResolvesOnlyTheItemItAnswersLandsWithoutIdentity is the
// positive control of TestOwnerReplyResolvesOnlyTheItemItAnswers: the
// same owner replies with the identity layer switched off
// (store.SwitchOffIdentityForTest). Every attack the identity layer
// stops must now close an item the owner did not answer: the reply sent
// to alice for bob's message closes bob's, the reply to mallory closes
// alice's, and a reply to alice closes mallory's copy of alice's
// Message-ID too (the first and the reply-all case). The attacks whose
// stoppedBy names another rule must still not land, so that the claim
// of which defence stops which attack stays true.
func TestOwnerReplyResolvesOnlyTheItemItAnswersLandsWithoutIdentity(t *testing.T) {
	restore := store.SwitchOffIdentityForTest()
	defer restore()
	tried, want, landed := 0, 0, 0
	for _, tt := range ownerReplyCases {
		if !tt.attack {
			continue
		}
		tried++
		if tt.stoppedBy == "" {
			want++
		}
		t.Run(tt.name, func(t *testing.T) {
			wrong, leaked, _ := runOwnerReplyCase(t, tt)
			switch {
			case leaked && tt.stoppedBy == "":
				landed++
				t.Logf("landed: %s", strings.Join(wrong, "; "))
			case leaked:
				t.Errorf("landed although %s: %s", tt.stoppedBy, strings.Join(wrong, "; "))
			case tt.stoppedBy == "":
				t.Errorf("with the identity checks off the attack should land: got %v", wrong)
			}
		})
	}
	t.Logf("owner-reply attacks with the identity checks off: %d tried, %d landed (%d stopped outside the identity layer)", tried, landed, tried-want)
	if landed != want {
		t.Errorf("positive control: got %d of %d landed, want %d", landed, tried, want)
	}
}

func TestAutomaticSendsNeverMakeAContactKnown(t *testing.T) {
	t.Parallel()
	// auto_send_new_contacts lets mailagent answer a stranger on its own:
	// that automatic reply must not make him known.
	h := newHarness(t, compromisedModel, autoPolicy+"auto_send_new_contacts = true\n")
	// Bob is known: the owner wrote to him.
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: Bob <bob@example.org>\nSubject: hello\nDate: Mon, 02 Nov 2026 09:00:00 +0000\nMessage-ID: <earlier@example.com>\n\nHi Bob\n")
	// Dave, a stranger, writes and is answered automatically.
	h.deliver(rawMail("Dave <dave@example.net>", "Call on Thursday", "Can we move our call to Thursday 3pm?"))
	// The owner's own vacation responder answered Erin from their client.
	h.appendTo("Sent", "From: Ada Lovelace <ada@example.com>\nTo: erin@example.net\nSubject: Out of office\nDate: Mon, 02 Nov 2026 09:30:00 +0000\nMessage-ID: <vacation@example.com>\nAuto-Submitted: auto-replied\n\nI am away.\n")
	h.watchOnce(t)
	sent := h.smtp.Messages()
	if len(sent) != 1 || strings.Join(sent[0].To, ",") != "dave@example.net" {
		t.Fatalf("auto-reply: got %d messages %v, want one to dave", len(sent), sent)
	}
	// From here on strangers wait for the owner again.
	cfg, err := os.ReadFile(h.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.cfgPath, []byte(strings.Replace(string(cfg), "auto_send_new_contacts = true\n", "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The next scan of Sent reads the auto-reply's copy.
	h.watchOnce(t)
	if c := h.contact(t, "dave@example.net"); c.Known {
		t.Errorf("dave became known from mailagent's automatic reply: %+v", c)
	}
	if c := h.contact(t, "erin@example.net"); c.Known {
		t.Errorf("erin became known from the owner's vacation reply: %+v", c)
	}
	if c := h.contact(t, "bob@example.org"); !c.Known || c.OwnerReplies != 1 {
		t.Errorf("bob: known %v, owner replies %d; want known, 1 (the owner's mail only)", c.Known, c.OwnerReplies)
	}
	// Dave writes: he is a stranger, so nothing goes out on its own.
	h.deliver(rawMail("Dave <dave@example.net>", "Thursday too", "Can I join on Thursday?"))
	h.watchOnce(t)
	if n := len(h.smtp.Messages()); n != 1 {
		t.Errorf("an auto-reply went to dave: %d messages sent, want 1", n)
	}
	if q := h.item(t, "Thursday too"); q.Status != store.QueuePending {
		t.Errorf("dave's mail: got %s, want a pending draft", q.Status)
	}
	// An approved send does make its recipient known.
	if _, stderr, code := h.run("queue", "approve", "--yes", h.item(t, "Thursday too").ID); code != 0 {
		t.Fatalf("approve: %d %s", code, stderr)
	}
	h.watchOnce(t)
	if c := h.contact(t, "dave@example.net"); !c.Known {
		t.Errorf("dave after the owner approved a reply to him: not known")
	}
}

// queuedWithDraft delivers Carol's question and runs watch: one pending
// draft, with its copy in Drafts, which it returns.
func queuedWithDraft(t *testing.T, h *harness) (*store.QueueItem, string) {
	t.Helper()
	h.deliver(rawMail("Carol <carol@example.org>", "Lunch", "Lunch next week?"))
	h.watchOnce(t)
	q := h.item(t, "Lunch")
	drafts := h.mailbox(t, "Drafts")
	if q.Status != store.QueuePending || len(drafts) != 1 || q.IMAPDraftUID == 0 || q.DraftMessageID == "" {
		t.Fatalf("queued: status %s, %d drafts, uid %d, draft id %q", q.Status, len(drafts), q.IMAPDraftUID, q.DraftMessageID)
	}
	m := mail.Parse([]byte(drafts[0]))
	if mail.IDKey(m.MessageID) != mail.IDKey(q.DraftMessageID) {
		t.Errorf("Drafts copy Message-ID %q, want the item's %q", m.MessageID, q.DraftMessageID)
	}
	if m.HeaderValue(agent.TraceHeader) != "" {
		t.Errorf("the Drafts copy carries %s: sent from the owner's client it would pass for mailagent's own mail", agent.TraceHeader)
	}
	if len(m.InReplyTo) != 1 || m.InReplyTo[0] != "lunch@test.example" || len(m.To) != 1 || m.To[0].Email != "carol@example.org" {
		t.Errorf("Drafts copy: In-Reply-To %v, To %v", m.InReplyTo, m.To)
	}
	return q, drafts[0]
}

var messageIDLine = regexp.MustCompile(`(?m)^Message-Id: <[^>]*>\r?$|^Message-ID: <[^>]*>\r?$`)

// Client edits of a draft before sending it.
var clientEdits = []struct {
	name string
	edit func(string) string
}{
	{"as saved", nil},
	{"body edited, client headers added", func(s string) string {
		s = strings.Replace(s, "\r\n\r\n", "\r\nUser-Agent: SomeClient/1.0\r\nX-Client-Draft: yes\r\n\r\n", 1)
		return strings.Replace(s, "Sounds good, thanks.", "Thursday at 4pm works better for me, actually.", 1)
	}},
	{"new Message-ID given by the client", func(s string) string {
		return messageIDLine.ReplaceAllString(s, "Message-ID: <client-regenerated-1@example.com>\r")
	}},
}

func TestDraftSentFromOwnerClientResolvesAndIsNeverSentAgain(t *testing.T) {
	t.Parallel()
	for _, ce := range clientEdits {
		t.Run(ce.name, func(t *testing.T) {
			h := newHarness(t, compromisedModel, "")
			q, draft := queuedWithDraft(t, h)
			h.clientSends(t, draft, ce.edit)
			h.watchOnce(t)
			got := h.item(t, "Lunch")
			if got.Status != store.QueueResolved {
				t.Fatalf("item: got %s, want resolved (reasons %v)", got.Status, got.Reasons)
			}
			if got.Error != "" {
				t.Errorf("item error: %q", got.Error)
			}
			if c := h.contact(t, "carol@example.org"); !c.Known || c.OwnerReplies != 1 {
				t.Errorf("carol: known %v, owner replies %d; want known, 1", c.Known, c.OwnerReplies)
			}
			_, stderr, code := h.run("queue", "approve", "--yes", q.ID)
			if code == 0 || !strings.Contains(stderr, "resolved") {
				t.Errorf("approve after the client sent it: exit %d %q, want a refusal saying it is resolved", code, stderr)
			}
			if n := len(h.smtp.Messages()); n != 0 {
				t.Errorf("SMTP sink got %d messages, want 0", n)
			}
		})
	}
}

func TestApproveFindsTheDraftAlreadySentFromTheClient(t *testing.T) {
	t.Parallel()
	// The client sent the draft, and the owner approves before any scan of
	// Sent has seen it.
	for _, ce := range clientEdits {
		t.Run(ce.name, func(t *testing.T) {
			h := newHarness(t, compromisedModel, "")
			q, draft := queuedWithDraft(t, h)
			h.clientSends(t, draft, ce.edit)
			_, stderr, code := h.run("queue", "approve", "--yes", q.ID)
			if code != ExitNotSent || !strings.Contains(stderr, "nothing was sent") {
				t.Fatalf("approve: exit %d %s; want %d saying nothing was sent", code, stderr, ExitNotSent)
			}
			got := h.item(t, "Lunch")
			if got.Status != store.QueueResolved || !strings.Contains(strings.Join(got.Reasons, ";"), "sent nothing") {
				t.Errorf("item: got %s %v, want resolved, saying approval sent nothing", got.Status, got.Reasons)
			}
			if n := len(h.smtp.Messages()); n != 0 {
				t.Errorf("SMTP sink got %d messages, want 0", n)
			}
			h.watchOnce(t)
			if n := len(h.smtp.Messages()); n != 0 {
				t.Errorf("after a watch: SMTP sink got %d messages, want 0", n)
			}
		})
	}
}

func TestApproveThenClientSendsTheStaleDraft(t *testing.T) {
	t.Parallel()
	// The owner approves in mailagent, then sends the copy their client
	// still had open: mailagent sends once and does not undo or redo.
	h := newHarness(t, compromisedModel, "")
	q, draft := queuedWithDraft(t, h)
	if _, stderr, code := h.run("queue", "approve", "--yes", q.ID); code != 0 {
		t.Fatalf("approve: %d %s", code, stderr)
	}
	sent := h.smtp.Messages()
	if len(sent) != 1 {
		t.Fatalf("SMTP sink: got %d, want 1", len(sent))
	}
	if m := mail.Parse(sent[0].Data); mail.IDKey(m.MessageID) != mail.IDKey(q.DraftMessageID) {
		t.Errorf("approved reply Message-ID %q, want the draft's %q", m.MessageID, q.DraftMessageID)
	}
	if d := h.mailbox(t, "Drafts"); len(d) != 0 {
		t.Errorf("Drafts after approval: %d, want 0", len(d))
	}
	h.appendRaw(t, "Sent", []byte(draft))
	h.watchOnce(t)
	if _, _, code := h.run("queue", "approve", "--yes", q.ID); code == 0 {
		t.Error("a second approval succeeded")
	}
	if n := len(h.smtp.Messages()); n != 1 {
		t.Errorf("SMTP sink: got %d, want 1", n)
	}
	if got := h.item(t, "Lunch"); got.Status != store.QueueSent || got.Error != "" {
		t.Errorf("item: got %s %q, want sent, no error", got.Status, got.Error)
	}
}

// editorScript writes an $EDITOR that replaces the file with text.
func editorScript(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "text")
	if err := os.WriteFile(src, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\ncat "+src+" > \"$1\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// regenModel is compromisedModel, except that a draft asked for with the
// instruction "shorter" is short.
func regenModel(req *geminitest.Request) geminitest.Reply {
	if props, _ := req.ResponseSchema()["properties"].(map[string]any); props["body"] != nil &&
		strings.Contains(req.SystemText()+req.UserText(), "shorter") {
		return geminitest.JSONReply(map[string]any{"body": "Thursday 3pm: yes.", "tone": "brief", "needs_owner_input": false},
			llm.Usage{PromptTokens: 300, OutputTokens: 10, TotalTokens: 310})
	}
	return compromisedModel(req)
}

func TestEditAndRegenerateReplaceTheDraftsCopy(t *testing.T) {
	h := newHarness(t, regenModel, "")
	q, _ := queuedWithDraft(t, h)

	t.Setenv("VISUAL", editorScript(t, "Tuesday is better for me, see you then."))
	if _, stderr, code := h.run("queue", "edit", q.ID); code != 0 {
		t.Fatalf("edit: %d %s", code, stderr)
	}
	check := func(step, text string) *store.QueueItem {
		t.Helper()
		drafts, err := h.imap.Messages(context.Background(), ownerAddr, "Drafts")
		if err != nil {
			t.Fatal(err)
		}
		if len(drafts) != 1 {
			t.Fatalf("%s: %d drafts in Drafts, want exactly 1", step, len(drafts))
		}
		m := mail.Parse(drafts[0].Raw)
		if !strings.Contains(m.Text, text) {
			t.Errorf("%s: the Drafts copy says %q, want %q", step, m.Text, text)
		}
		got := h.item(t, "Lunch")
		if uint32(drafts[0].UID) != got.IMAPDraftUID || got.Error != "" {
			t.Errorf("%s: item draft uid %d (error %q), Drafts has uid %d", step, got.IMAPDraftUID, got.Error, drafts[0].UID)
		}
		if mail.IDKey(m.MessageID) != mail.IDKey(q.DraftMessageID) || mail.IDKey(got.DraftMessageID) != mail.IDKey(q.DraftMessageID) {
			t.Errorf("%s: Message-ID %q (item %q), want the item's one id %q", step, m.MessageID, got.DraftMessageID, q.DraftMessageID)
		}
		return got
	}
	check("after edit", "Tuesday is better for me")

	if _, stderr, code := h.run("queue", "regenerate", q.ID, "--instruction", "shorter"); code != 0 {
		t.Fatalf("regenerate: %d %s", code, stderr)
	}
	check("after regenerate", "Thursday 3pm: yes.")

	// The owner sends the regenerated copy from their client: resolved.
	drafts := h.mailbox(t, "Drafts")
	h.clientSends(t, drafts[0], nil)
	h.watchOnce(t)
	if got := h.item(t, "Lunch"); got.Status != store.QueueResolved {
		t.Errorf("after the client sent it: %s, want resolved", got.Status)
	}
	if n := len(h.smtp.Messages()); n != 0 {
		t.Errorf("sent %d, want 0", n)
	}
}

func TestEditRecordsADraftsFolderFailure(t *testing.T) {
	h := newHarness(t, compromisedModel, "")
	q, _ := queuedWithDraft(t, h)
	// The Drafts folder disappears (deleted from another client).
	c, err := imapclient.DialInsecure(h.imap.Addr(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Login(ownerAddr, ownerPass).Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("Drafts").Wait(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	t.Setenv("VISUAL", editorScript(t, "Tuesday is better for me."))
	// The edit is kept, and the command says at once that the Drafts copy
	// was not updated (exit 5), rather than "edited" and 0.
	if _, stderr, code := h.run("queue", "edit", q.ID); code != ExitPartial || !strings.Contains(stderr, "its copy in your Drafts folder was not updated") {
		t.Fatalf("edit: %d %s; want %d and the failed copy named", code, stderr, ExitPartial)
	}
	got := h.item(t, "Lunch")
	if got.Final != "Tuesday is better for me." {
		t.Errorf("the edit was lost: final %q", got.Final)
	}
	if !strings.Contains(got.Error, "Drafts folder") {
		t.Errorf("item error: got %q, want the Drafts-folder failure", got.Error)
	}
}
