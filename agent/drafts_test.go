package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// folderMailer keeps a Sent and a Drafts folder in memory and can read
// Sent (SentReader), with injectable failures.
type folderMailer struct {
	memMailer
	sentBox   [][]byte
	draftBox  map[uint32][]byte
	nextUID   uint32
	smtp      [][]byte
	sentErr   error // SentHas and ReadSent fail with it
	appendErr error // AppendDraft fails with it
	deleteErr error // DeleteDraft fails with it
	sendErr   []error
}

func (m *folderMailer) Send(_ context.Context, _, _ string, _ []string, raw []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.sendErr) > 0 {
		err := m.sendErr[0]
		m.sendErr = m.sendErr[1:]
		return err
	}
	m.smtp = append(m.smtp, raw)
	return nil
}

func (m *folderMailer) AppendSent(_ context.Context, _ string, raw []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sentBox = append(m.sentBox, raw)
	return nil
}

func (m *folderMailer) SentHas(_ context.Context, _, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sentErr != nil {
		return false, m.sentErr
	}
	for _, raw := range m.sentBox {
		if mail.IDKey(mail.Parse(raw).MessageID) == mail.IDKey(id) {
			return true, nil
		}
	}
	return false, nil
}

func (m *folderMailer) ReadSent(_ context.Context, _ string, _ time.Time, fn func([]byte) error) error {
	m.mu.Lock()
	box, err := append([][]byte(nil), m.sentBox...), m.sentErr
	m.mu.Unlock()
	if err != nil {
		return err
	}
	for _, raw := range box {
		if err := fn(raw); err != nil {
			return err
		}
	}
	return nil
}

func (m *folderMailer) AppendDraft(_ context.Context, _ string, raw []byte) (uint32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.appendErr != nil {
		return 0, m.appendErr
	}
	if m.draftBox == nil {
		m.draftBox = map[uint32][]byte{}
	}
	m.nextUID++
	m.draftBox[m.nextUID] = raw
	return m.nextUID, nil
}

func (m *folderMailer) DeleteDraft(_ context.Context, _ string, uid uint32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleteErr != nil {
		return m.deleteErr
	}
	delete(m.draftBox, uid)
	return nil
}

func (m *folderMailer) drafts() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][]byte
	for _, raw := range m.draftBox {
		out = append(out, raw)
	}
	return out
}

func newFolderPipeline(t *testing.T) (*Pipeline, *store.Store, *folderMailer) {
	t.Helper()
	model := &recordingModel{class: okClass(), draft: "Sure, Tuesday."}
	p, st, _ := newTestPipeline(t, model, "review")
	acct := p.Accounts["a"]
	acct.DraftsToIMAP = true
	p.Accounts["a"] = acct
	m := &folderMailer{}
	p.Actor.Mailer = m
	return p, st, m
}

func TestAnswersItem(t *testing.T) {
	t.Parallel()
	owner := Owner{Addresses: []string{"ada@example.com"}}
	item := &store.QueueItem{MessageID: "m1@example.org", From: mail.Address{Email: "carol@example.org"},
		To: []mail.Address{{Email: "carol-list@example.org"}}}
	// Carol's message as stored: authenticated, with the Reply-To code
	// chose the item's recipient from.
	rec := &store.MessageRecord{MessageID: "m1@example.org", From: mail.Address{Email: "carol@example.org"}, Route: RouteExternal,
		ReplyTo: []mail.Address{{Email: "carol-list@example.org"}}, SenderAuth: &store.SenderAuth{Authenticated: true, Address: "carol@example.org"}}
	tests := []struct {
		name      string
		inReplyTo []string
		to, cc    []string
		want      bool
	}{
		{"reply to the sender", []string{"m1@example.org"}, []string{"carol@example.org"}, nil, true},
		{"reply to the chosen recipient, in Cc, other case", []string{"<M1@example.org>"}, []string{"x@example.net"}, []string{"Carol-List@Example.org"}, true},
		{"In-Reply-To names another message", []string{"m2@example.org"}, []string{"carol@example.org"}, nil, false},
		{"right message, other recipient", []string{"m1@example.org"}, []string{"mallory@attacker.example"}, nil, false},
		{"right message, only the owner", []string{"m1@example.org"}, []string{"ada@example.com"}, nil, false},
		{"no In-Reply-To", nil, []string{"carol@example.org"}, nil, false},
	}
	addrs := func(xs []string) []mail.Address {
		var out []mail.Address
		for _, x := range xs {
			out = append(out, mail.Address{Email: x})
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &mail.Message{InReplyTo: tt.inReplyTo, To: addrs(tt.to), Cc: addrs(tt.cc)}
			if got := answersItem(item, rec, m, owner); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			// Without a record (a follow-up draft on the owner's own
			// message) the recipients code chose count, not the From.
			noRec := tt.want && slices.ContainsFunc(append(addrs(tt.to), addrs(tt.cc)...), func(a mail.Address) bool {
				return mail.SameAddr(a.Email, "carol-list@example.org")
			})
			if got := answersItem(item, nil, m, owner); got != noRec {
				t.Errorf("without a record: got %v, want %v", got, noRec)
			}
		})
	}
	// An item whose sender is the owner is not answered by mail to the owner.
	self := &store.QueueItem{MessageID: "m3@example.com", From: mail.Address{Email: "ADA@example.com"}}
	selfRec := &store.MessageRecord{MessageID: "m3@example.com", From: mail.Address{Email: "ADA@example.com"}, Route: RouteOwner,
		SenderAuth: &store.SenderAuth{Authenticated: true, Address: "ada@example.com"}}
	if answersItem(self, selfRec, &mail.Message{InReplyTo: []string{"m3@example.com"}, To: addrs([]string{"ada@example.com"})}, owner) {
		t.Error("mail to the owner answered the owner's own item")
	}
	if answersItem(&store.QueueItem{From: mail.Address{Email: "carol@example.org"}}, nil, &mail.Message{InReplyTo: []string{""}, To: addrs([]string{"carol@example.org"})}, owner) {
		t.Error("an item without a Message-ID was answered by an empty In-Reply-To")
	}
}

func TestIsAutomatic(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"": false, "no": false, "No ; comment": false, "auto-replied": true,
		" AUTO-GENERATED ": true, "auto-notified; owner-email=x": true} {
		m := &mail.Message{Header: map[string][]string{"Auto-Submitted": {v}}}
		if got := IsAutomatic(m); got != want {
			t.Errorf("Auto-Submitted %q: got %v, want %v", v, got, want)
		}
	}
}

func TestApprovedReplyUsesTheDraftMessageID(t *testing.T) {
	t.Parallel()
	p, st, m := newFolderPipeline(t)
	q := queuedDraft(t, p)
	drafts := m.drafts()
	if q.DraftMessageID == "" || len(drafts) != 1 {
		t.Fatalf("queued: draft id %q, %d drafts", q.DraftMessageID, len(drafts))
	}
	d := mail.Parse(drafts[0])
	if d.MessageID != q.DraftMessageID || d.HeaderValue(TraceHeader) != "" {
		t.Errorf("Drafts copy: Message-ID %q trace %q; want %q and no trace", d.MessageID, d.HeaderValue(TraceHeader), q.DraftMessageID)
	}
	if _, err := p.Approve(context.Background(), q.ID, ""); err != nil {
		t.Fatal(err)
	}
	if len(m.smtp) != 1 {
		t.Fatalf("sent %d, want 1", len(m.smtp))
	}
	s := mail.Parse(m.smtp[0])
	if s.MessageID != q.DraftMessageID || s.HeaderValue(TraceHeader) != q.ID {
		t.Errorf("approved reply: Message-ID %q trace %q; want %q and %q", s.MessageID, s.HeaderValue(TraceHeader), q.DraftMessageID, q.ID)
	}
	if ob, _ := st.GetOutbox(ApprovalOutboxID(q.ID)); ob.MessageID != q.DraftMessageID {
		t.Errorf("outbox Message-ID %q, want %q", ob.MessageID, q.DraftMessageID)
	}
	if len(m.drafts()) != 0 {
		t.Error("the Drafts copy is still there after the send")
	}
}

func TestApproveFailsClosedWhenSentIsUnreadable(t *testing.T) {
	t.Parallel()
	p, st, m := newFolderPipeline(t)
	q := queuedDraft(t, p)
	m.sentErr = errors.New("imap: connection reset")
	if _, err := p.Approve(context.Background(), q.ID, ""); err == nil || !strings.Contains(err.Error(), "nothing was sent") {
		t.Fatalf("approve: got %v, want an error saying nothing was sent", err)
	}
	item, _ := st.GetQueueItem(q.ID)
	if item.Status != store.QueueFailed || !strings.Contains(item.Error, "Sent folder") {
		t.Errorf("item: %s %q, want failed with the reason", item.Status, item.Error)
	}
	if len(m.smtp) != 0 {
		t.Fatalf("sent %d without looking in Sent", len(m.smtp))
	}
	m.sentErr = nil
	if _, err := p.Approve(context.Background(), q.ID, ""); err != nil {
		t.Fatalf("approve again: %v", err)
	}
	if len(m.smtp) != 1 {
		t.Errorf("sent %d, want 1", len(m.smtp))
	}
}

func TestReapprovalAfterOwnerRepliedSendsNothing(t *testing.T) {
	t.Parallel()
	p, st, m := newFolderPipeline(t)
	q := queuedDraft(t, p)
	m.sendErr = []error{errors.New("550 mailbox unavailable")}
	if _, err := p.Approve(context.Background(), q.ID, ""); err == nil {
		t.Fatal("approve: want the permanent failure")
	}
	// The owner gives up on mailagent and answers from their client, in
	// their own words (a new Message-ID).
	m.sentBox = append(m.sentBox, []byte("From: Ada <ada@example.com>\r\nTo: carol@example.org\r\nSubject: Re: Lunch\r\n"+
		"Message-ID: <mine@example.com>\r\nIn-Reply-To: <"+q.MessageID+">\r\n\r\nYes!\r\n"))
	item, err := p.Approve(context.Background(), q.ID, "")
	if !errors.Is(err, ErrNotSent) || !strings.Contains(err.Error(), "the owner replied") {
		t.Fatalf("re-approval: err %v, want ErrNotSent saying the owner replied", err)
	}
	if item.Status != store.QueueResolved || len(m.smtp) != 0 {
		t.Errorf("re-approval: %s, %d sent; want resolved, 0", item.Status, len(m.smtp))
	}
	if ob, _ := st.GetOutbox(ApprovalOutboxID(q.ID)); ob.Status != store.OutboxCancelled {
		t.Errorf("outbox: %s, want cancelled", ob.Status)
	}
}

func TestReplaceIMAPDraftRecordsFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, st, m := newFolderPipeline(t)
	q := queuedDraft(t, p)

	// The append fails: the old copy stays, the reason is on the item.
	m.appendErr = errors.New("NO [OVERQUOTA] quota exceeded")
	item, err := p.Edit(ctx, q.ID, "Wednesday instead.")
	if err != nil {
		t.Fatal(err)
	}
	if item.IMAPDraftUID != q.IMAPDraftUID || !strings.Contains(item.Error, "OVERQUOTA") || !strings.Contains(item.Error, "previous text") {
		t.Errorf("after a failed append: uid %d (was %d), error %q", item.IMAPDraftUID, q.IMAPDraftUID, item.Error)
	}
	// The next edit succeeds: one copy, the new text, the error gone.
	m.appendErr = nil
	item, err = p.Edit(ctx, q.ID, "Thursday then.")
	if err != nil {
		t.Fatal(err)
	}
	drafts := m.drafts()
	if item.Error != "" || len(drafts) != 1 || !strings.Contains(string(drafts[0]), "Thursday then.") || item.IMAPDraftUID == q.IMAPDraftUID {
		t.Errorf("after edit: error %q, %d drafts, uid %d", item.Error, len(drafts), item.IMAPDraftUID)
	}
	// The old copy cannot be removed: the new one is recorded, and so is
	// the failure.
	m.deleteErr = errors.New("NO [SERVERBUG]")
	prev := item.IMAPDraftUID
	item, _ = p.Edit(ctx, q.ID, "Friday.")
	if item.IMAPDraftUID == prev || !strings.Contains(item.Error, "could not be removed") {
		t.Errorf("after a failed delete: uid %d (was %d), error %q", item.IMAPDraftUID, prev, item.Error)
	}
	if got, _ := st.GetQueueItem(q.ID); got.Final != "Friday." || got.Status != store.QueuePending {
		t.Errorf("stored: %q %s", got.Final, got.Status)
	}
}

func TestOwnerRepliedLeavesAnItemBeingApproved(t *testing.T) {
	t.Parallel()
	p, st, m := newFolderPipeline(t)
	q := queuedDraft(t, p)
	if _, err := st.TransitionQueueItem(q.ID, []string{store.QueuePending}, store.QueueApproved, nil); err != nil {
		t.Fatal(err)
	}
	copyMsg := mail.Parse(m.drafts()[0])
	if err := p.OwnerReplied(context.Background(), "a", copyMsg); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetQueueItem(q.ID); got.Status != store.QueueApproved {
		t.Errorf("an item being approved was resolved: %s", got.Status)
	}
	// Once open again (the send failed), its copy in Sent resolves it.
	if _, err := st.TransitionQueueItem(q.ID, []string{store.QueueApproved}, store.QueueFailed, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.OwnerReplied(context.Background(), "a", copyMsg); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.GetQueueItem(q.ID); got.Status != store.QueueResolved || len(m.drafts()) != 0 {
		t.Errorf("failed item after its copy was sent: %s, %d drafts", got.Status, len(m.drafts()))
	}
}

// A model that obeys the mail writes header lines into its draft, and the
// owner pastes some into an edit: the Drafts copies and the approved reply
// still carry exactly one Message-ID (the item's), no forged header, and
// (the Drafts copies) no trace header.
//
// The defence is structural (compose.Build writes the model's text only
// after the header block, and no code path writes it into a header), so
// it has no switch. The positive control shows the check catches each
// attack as it would land without it: the same hostile text spliced into
// the header block of the real Drafts copy must be flagged, every time.
func TestHostileDraftTextCannotForgeDraftHeaders(t *testing.T) {
	t.Parallel()
	hostile := []string{
		"Sure.\r\nMessage-ID: <forged@attacker.example>\r\nX-Mailagent-Trace: q_forged\r\nBcc: evil@attacker.example",
		"\r\n\r\nMessage-ID: <forged2@attacker.example>\nTo: evil@attacker.example\n\nhi",
		"Subject: x\rX-Mailagent-Trace: forged\rCc: evil@attacker.example",
	}
	tried, through := 0, 0
	controls, landed := 0, 0
	check := func(q *store.QueueItem, raw []byte, draft bool) {
		t.Helper()
		tried++
		if forgedHeader(t, q, raw, draft) {
			through++
			t.Errorf("forged or wrong header got through:\n%s", raw)
		}
	}
	for _, body := range hostile {
		p, _, m := newFolderPipeline(t)
		p.Actor.Drafter.(*LLMDrafter).Model.(*recordingModel).draft = body
		q := queuedDraft(t, p)
		for _, raw := range m.drafts() {
			check(q, raw, true)
			// Positive control: the attack as it would land if the
			// model's text reached the header block.
			controls++
			if forgedHeader(t, q, spliceIntoHeader(raw, body), true) {
				landed++
			} else {
				t.Errorf("positive control: %q spliced into the header block was not caught", body)
			}
		}
		if _, err := p.Edit(context.Background(), q.ID, body+"\r\nedited"); err != nil {
			t.Fatal(err)
		}
		drafts := m.drafts()
		if len(drafts) != 1 {
			t.Fatalf("Drafts after the edit: %d, want 1", len(drafts))
		}
		check(q, drafts[0], true)
		if _, err := p.Approve(context.Background(), q.ID, ""); err != nil {
			t.Fatal(err)
		}
		if len(m.smtp) != 1 {
			t.Fatalf("sent %d, want 1", len(m.smtp))
		}
		check(q, m.smtp[0], false)
	}
	t.Logf("hostile draft text: %d messages checked, %d with a forged header; control: %d of %d spliced headers caught", tried, through, landed, controls)
	if tried < 3*len(hostile) || through != 0 {
		t.Errorf("%d of %d messages carried a forged header (want 0 of at least %d)", through, tried, 3*len(hostile))
	}
	if controls < len(hostile) || landed != controls {
		t.Errorf("positive control: %d of %d spliced attacks caught, want all of at least %d", landed, controls, len(hostile))
	}
}

// forgedHeader reports whether raw's header block carries other than
// exactly q's Message-ID, anything of the attacker's, or (a Drafts copy)
// the trace header.
func forgedHeader(t *testing.T, q *store.QueueItem, raw []byte, draft bool) bool {
	t.Helper()
	i := strings.Index(string(raw), "\r\n\r\n")
	if i < 0 {
		t.Fatalf("no header/body separator:\n%s", raw)
	}
	hdr := "\r\n" + strings.ToLower(string(raw[:i]))
	msg := mail.Parse(raw)
	return strings.Count(hdr, "\r\nmessage-id:") != 1 || mail.IDKey(msg.MessageID) != mail.IDKey(q.DraftMessageID) ||
		strings.Contains(hdr, "attacker") || strings.Contains(hdr, "forged") ||
		(draft && strings.Contains(hdr, strings.ToLower(TraceHeader)))
}

// spliceIntoHeader is raw with text's lines (CRLF line ends, blank lines
// dropped) written at the end of its header block: what a composer that
// let the model's text reach the header would send.
func spliceIntoHeader(raw []byte, text string) []byte {
	i := strings.Index(string(raw), "\r\n\r\n")
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\r' || r == '\n' })
	return []byte(string(raw[:i]) + "\r\n" + strings.Join(lines, "\r\n") + string(raw[i:]))
}

// Answered looks in the fake Sent folder for a reply to id.
func (m *folderMailer) Answered(_ context.Context, original *store.MessageRecord) (bool, string, error) {
	id := original.MessageID
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sentErr != nil {
		return false, "", m.sentErr
	}
	k := mail.IDKey(id)
	for _, raw := range m.sentBox {
		for _, r := range mail.Parse(raw).InReplyTo {
			if k != "" && mail.IDKey(r) == k {
				return true, "a reply to it is in the Sent folder", nil
			}
		}
	}
	return false, "", nil
}

func (m *folderMailer) MarkAnswered(context.Context, *store.MessageRecord) error {
	return nil
}

// Two approvals race: the loser read the item while it was pending, and
// by the time it looks in Sent the winner's reply is there under the
// item's Message-ID. The loser sends nothing and says the item is not
// actionable (it is sent), as when it loses the approval's transaction;
// it said "conflict" once in CI (TestConformance's concurrent approvals).
func TestApprovalLosingTheRaceAfterTheSendIsNotActionable(t *testing.T) {
	t.Parallel()
	p, st, m := newFolderPipeline(t)
	q := queuedDraft(t, p)
	stale, err := st.GetQueueItem(q.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Approve(context.Background(), q.ID, ""); err != nil {
		t.Fatal(err)
	}
	done, err := p.handledByOwner(context.Background(), stale, true)
	if !errors.Is(err, ErrNotActionable) || done != nil {
		t.Fatalf("the losing approval: %v, %v; want ErrNotActionable and no item", done, err)
	}
	if got, _ := st.GetQueueItem(q.ID); got.Status != store.QueueSent || len(m.smtp) != 1 {
		t.Errorf("after the race: %s, %d sent; want sent, 1", got.Status, len(m.smtp))
	}
}
