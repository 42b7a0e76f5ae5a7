package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

func autoPipeline(t *testing.T) (*Pipeline, *store.Store, *memMailer) {
	t.Helper()
	p, st, m := newTestPipeline(t, &recordingModel{class: okClass(), draft: "Thursday works."}, "auto")
	if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
		t.Fatal(err)
	}
	return p, st, m
}

func messageID(t *testing.T, in Input) string {
	t.Helper()
	return mail.Parse(in.Raw).MessageID
}

// An automatic reply whose original the mailbox shows answered (the owner
// replied from their phone during policy.send_delay) is cancelled with the
// reason; nothing is sent.
func TestScheduledReplyCancelledWhenAnsweredMeanwhile(t *testing.T) {
	t.Parallel()
	p, st, m := autoPipeline(t)
	p.Policy.SendDelay = time.Minute
	ctx := context.Background()
	in := input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")
	if _, err := p.Process(ctx, in); err != nil {
		t.Fatal(err)
	}
	m.answered = map[string]bool{mail.IDKey(messageID(t, in)): true}
	p.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if err := p.SendDue(ctx); err != nil {
		t.Fatalf("SendDue: %v", err)
	}
	if len(m.sent) != 0 {
		t.Fatalf("sent %d, want 0", len(m.sent))
	}
	ob, err := st.GetOutbox(OutboxID(in.Key))
	if err != nil {
		t.Fatal(err)
	}
	if ob.Status != store.OutboxCancelled || !strings.Contains(ob.Error, "already answered") {
		t.Errorf("outbox: %s %q, want cancelled as already answered", ob.Status, ob.Error)
	}
}

// The same check right before SMTP, for an immediate auto-send: the owner
// answered between drafting and sending. The record says why nothing went.
func TestImmediateAutoSendNotSentWhenAnswered(t *testing.T) {
	t.Parallel()
	p, st, m := autoPipeline(t)
	ctx := context.Background()
	in := input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")
	// Answered only once the draft exists: the act-time check saw nothing.
	p.Actor.Drafter = answerWhileDrafting{Drafter: p.Actor.Drafter, m: m, id: messageID(t, in)}
	out, err := p.Process(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.sent) != 0 {
		t.Fatalf("sent %d, want 0", len(m.sent))
	}
	ob, err := st.GetOutbox(OutboxID(in.Key))
	if err != nil || ob.Status != store.OutboxCancelled {
		t.Fatalf("outbox: %+v %v, want cancelled", ob, err)
	}
	if r := strings.Join(out.Record.Reasons, ";"); !strings.Contains(r, "not sent") || !strings.Contains(r, "already answered") {
		t.Errorf("record reasons: %s", r)
	}
}

type answerWhileDrafting struct {
	Drafter
	m  *memMailer
	id string
}

func (d answerWhileDrafting) Draft(ctx context.Context, req DraftRequest) (Draft, llm.CallInfo, error) {
	_ = d.m.MarkAnswered(ctx, &store.MessageRecord{MessageKey: store.MessageKey{Account: "a"}, MessageID: d.id})
	return d.Drafter.Draft(ctx, req)
}

// When the mailbox cannot be read, an automatic reply is not sent: it goes
// back to pending with the reason, and goes out once the mailbox answers
// (and the original is then flagged \Answered).
func TestAutoReplyFailsClosedWhenMailboxUnreadable(t *testing.T) {
	t.Parallel()
	p, st, m := autoPipeline(t)
	ctx := context.Background()
	m.answeredErr = errors.New("imap: connection reset")
	in := input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")
	if _, err := p.Process(ctx, in); err != nil {
		t.Fatal(err)
	}
	if len(m.sent) != 0 {
		t.Fatalf("sent %d while the mailbox could not be read, want 0", len(m.sent))
	}
	ob, err := st.GetOutbox(OutboxID(in.Key))
	if err != nil {
		t.Fatal(err)
	}
	if ob.Status != store.OutboxPending || !strings.Contains(ob.Error, "connection reset") {
		t.Fatalf("outbox: %s %q, want pending with the error", ob.Status, ob.Error)
	}
	m.mu.Lock()
	m.answeredErr = nil
	m.mu.Unlock()
	if err := p.Deliver(ctx, ob.ID); err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if len(m.sent) != 1 {
		t.Fatalf("sent %d after the mailbox answered, want 1", len(m.sent))
	}
	if !m.answered[mail.IDKey(messageID(t, in))] {
		t.Error(`the original was not flagged \Answered after the send`)
	}
}

// The same mail under a new key (a UIDVALIDITY change) is not drafted
// again while another reply to its Message-ID is sent, or may have been
// delivered before a crash; even when the mailbox has lost every trace.
func TestOtherReplyInOutboxCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, status, errText string
		want                  bool
	}{
		{"appended", store.OutboxAppended, "", true},
		{"interrupted mid-SMTP", store.OutboxFailed, ErrAmbiguousSend.Error(), true},
		{"failed for good", store.OutboxFailed, "550 no such user", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, st, m := autoPipeline(t)
			ctx := context.Background()
			in := input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")
			if err := st.PutOutbox(&store.OutboxRecord{ID: "ob_old", Account: "a", MessageID: "old@example.com", InReplyTo: messageID(t, in),
				To: []string{"bob@example.org"}, Status: tc.status, Error: tc.errText, Auto: true, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			in.Key.UIDValidity = 2
			out, err := p.Process(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			skipped := out.Record.Decision == DecisionIgnore && strings.Contains(strings.Join(out.Record.Reasons, ";"), "already answered")
			if skipped != tc.want {
				t.Errorf("decision %s %v; want skipped=%v", out.Record.Decision, out.Record.Reasons, tc.want)
			}
			if want := map[bool]int{true: 0, false: 1}[tc.want]; len(m.sent) != want {
				t.Errorf("sent %d, want %d", len(m.sent), want)
			}
		})
	}
}

// Approving a draft whose original was answered meanwhile sends nothing,
// resolves the item and says so (ErrNotSent, never a silent success); when
// the mailbox cannot be read the approval fails with the error and sends
// nothing.
func TestApproveChecksTheMailbox(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		answered   bool
		err        error
		wantStatus string
	}{
		{name: "answered", answered: true, wantStatus: store.QueueResolved},
		{name: "mailbox unreadable", err: errors.New("imap: timeout"), wantStatus: store.QueueFailed},
		{name: "not answered", wantStatus: store.QueueSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, m := newTestPipeline(t, &recordingModel{class: okClass(), draft: "Thursday works."}, "review")
			ctx := context.Background()
			in := input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")
			if _, err := p.Process(ctx, in); err != nil {
				t.Fatal(err)
			}
			m.answered = map[string]bool{mail.IDKey(messageID(t, in)): tc.answered}
			m.answeredErr = tc.err
			_, err := p.Approve(ctx, QueueID(in.Key), "")
			if (err != nil) != (tc.err != nil || tc.answered) {
				t.Errorf("Approve: err %v, want an error: %v", err, tc.err != nil || tc.answered)
			}
			if errors.Is(err, ErrNotSent) != tc.answered {
				t.Errorf("Approve: err %v, want ErrNotSent: %v", err, tc.answered)
			}
			q, gerr := p.Actor.Store.GetQueueItem(QueueID(in.Key))
			if gerr != nil {
				t.Fatal(gerr)
			}
			if q.Status != tc.wantStatus {
				t.Errorf("item: %s (%v %q), want %s", q.Status, q.Reasons, q.Error, tc.wantStatus)
			}
			wantSent := 0
			if tc.wantStatus == store.QueueSent {
				wantSent = 1
			}
			if len(m.sent) != wantSent {
				t.Errorf("sent %d, want %d", len(m.sent), wantSent)
			}
		})
	}
}
