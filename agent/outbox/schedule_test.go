package outbox

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/netpolicy"
	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
	"github.com/mailagent/mailagent/store"
)

// sinkMailer sends through the real SMTP client to a go-smtp sink; the
// IMAP side finds nothing and files nothing.
type sinkMailer struct{ s *smtpsend.Sender }

func (m sinkMailer) Send(ctx context.Context, _, from string, to []string, raw []byte) error {
	return m.s.Send(ctx, from, to, raw)
}
func (sinkMailer) AppendSent(context.Context, string, []byte) error         { return nil }
func (sinkMailer) SentHas(context.Context, string, string) (bool, error)    { return false, nil }
func (sinkMailer) DeleteDraft(context.Context, string, uint32) error        { return nil }
func (sinkMailer) MarkAnswered(context.Context, *store.MessageRecord) error { return nil }
func (sinkMailer) Answered(context.Context, *store.MessageRecord) (bool, string, error) {
	return false, "", nil
}

// sinkWorld is a world whose mailer is the real SMTP client and a sink.
func sinkWorld(t *testing.T) (*world, *smtptest.Sink) {
	t.Helper()
	w := newWorld(t)
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	s, err := smtpsend.New(smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
	if err != nil {
		t.Fatal(err)
	}
	w.o.Mailer = sinkMailer{s}
	return w, sink
}

// delivered counts the sink's messages addressed to addr.
func delivered(sink *smtptest.Sink, addr string) int {
	n := 0
	for _, m := range sink.Messages() {
		if slices.Contains(m.To, addr) {
			n++
		}
	}
	return n
}

const autoRaw = "From: ada@example.com\r\nAuto-Submitted: auto-generated\r\nMessage-ID: <x@example.com>\r\nSubject: unsubscribe\r\n\r\nunsubscribe\r\n"

// hostileRecipients are the addresses the red team made mailagent write
// to: address literals, local names, bare hosts.
var hostileRecipients = []string{
	"u@[127.0.0.1]", "u@[10.20.30.40]", "u@[IPv6:::1]", "root@localhost", "root@mail.localhost",
	"u@printer.local", "u@x.invalid", "u@corp.internal", "u@mailhost", "u@10.20.30.40", "u@nas.home.arpa",
}

// TestOutboxAddressAdversarial (class "outbox-address"): every new
// record to a non-public address is refused at creation, with a clear
// error, and nothing reaches the SMTP server, even when a careless
// caller writes the refused record anyway. Positive control: the same
// records with the rule bypassed (status set by hand) reach the sink.
func TestOutboxAddressAdversarial(t *testing.T) {
	t.Parallel()
	w, sink := sinkWorld(t)
	now := time.Now()
	tried, through := 0, 0
	for i, to := range hostileRecipients {
		for _, kind := range []string{"", store.OutboxKindUnsubscribe} {
			tried++
			ob := &store.OutboxRecord{ID: StandaloneID("t", "a", to+kind), Account: "a", From: "ada@example.com",
				To: []string{to}, MessageID: "<x@example.com>", Raw: []byte(autoRaw), Auto: kind != "", Kind: kind}
			err := Schedule(ob, now, 0)
			if err == nil || !errors.Is(err, ErrRefused) || !errors.Is(err, netpolicy.ErrMailAddressNotPublic) {
				t.Errorf("%s: Schedule = %v, want a refusal wrapping ErrRefused and ErrMailAddressNotPublic", to, err)
			}
			if err != nil && !strings.Contains(err.Error(), to) {
				t.Errorf("%s: the error %q does not name the address", to, err)
			}
			// A caller that ignores the error and writes the record.
			if err := w.st.PutOutbox(ob); err != nil {
				t.Fatal(err)
			}
			_ = w.o.Deliver(context.Background(), ob.ID)
			_ = w.o.SendDue(context.Background())
			if delivered(sink, to) > 0 {
				through++
				t.Errorf("attack %d: mail to %s reached the SMTP server", i, to)
			}
			if got := w.status(t, ob.ID).Status; got != store.OutboxFailed {
				t.Errorf("%s: record %s, want failed", to, got)
			}
		}
	}
	t.Logf("outbox-address: %d attacks tried, %d through", tried, through)
	if tried != 2*len(hostileRecipients) || through != 0 {
		t.Fatalf("outbox-address: tried %d, through %d; want %d tried, 0 through", tried, through, 2*len(hostileRecipients))
	}

	// Positive control: the rule bypassed, the same sends land.
	landed := 0
	for _, to := range hostileRecipients {
		ob := &store.OutboxRecord{ID: StandaloneID("control", "a", to), Account: "a", From: "ada@example.com",
			To: []string{to}, MessageID: "<c@example.com>", Raw: []byte(autoRaw), Status: store.OutboxPending}
		if err := w.st.PutOutbox(ob); err != nil {
			t.Fatal(err)
		}
		if err := w.o.Deliver(context.Background(), ob.ID); err != nil {
			t.Fatalf("control %s: %v", to, err)
		}
		if delivered(sink, to) > 0 {
			landed++
		}
	}
	if landed != len(hostileRecipients) {
		t.Fatalf("positive control: %d of %d landed with the rule bypassed; the test cannot see an attack", landed, len(hostileRecipients))
	}
}

// TestScheduleAllowedAndAutoSubmitted: the account's own domain and the
// configured ones pass whatever their form; public names pass; automatic
// mail must say Auto-Submitted; a record with no recipient is refused.
func TestScheduleAllowedAndAutoSubmitted(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name  string
		ob    store.OutboxRecord
		allow []string
		ok    bool
	}{
		{"public", store.OutboxRecord{From: "ada@example.com", To: []string{"carol@partner.test"}}, nil, true},
		{"own dotless domain", store.OutboxRecord{From: "ada@mailhost", To: []string{"bob@mailhost"}}, nil, true},
		{"configured domain", store.OutboxRecord{From: "ada@example.com", To: []string{"bob@corp.internal"}}, []string{"corp.internal"}, true},
		{"one bad among good", store.OutboxRecord{From: "ada@example.com", To: []string{"carol@example.org", "root@localhost"}}, nil, false},
		{"no recipient", store.OutboxRecord{From: "ada@example.com"}, nil, false},
		{"auto with the header", store.OutboxRecord{From: "ada@example.com", To: []string{"l@example.org"}, Auto: true, Raw: []byte(autoRaw)}, nil, true},
		{"auto without it", store.OutboxRecord{From: "ada@example.com", To: []string{"l@example.org"}, Auto: true, Raw: []byte("Subject: x\r\n\r\nx\r\n")}, nil, false},
		{"own kind says no", store.OutboxRecord{From: "ada@example.com", To: []string{"l@example.org"}, Kind: store.OutboxKindDigest, Raw: []byte("Auto-Submitted: no\r\n\r\nx\r\n")}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ob := tt.ob
			err := Schedule(&ob, now, time.Minute, tt.allow...)
			if (err == nil) != tt.ok {
				t.Fatalf("Schedule = %v, want ok=%v", err, tt.ok)
			}
			want := store.OutboxScheduled
			if !tt.ok {
				want = store.OutboxFailed
			}
			if ob.Status != want {
				t.Errorf("status %s, want %s", ob.Status, want)
			}
		})
	}
}

// TestStandaloneUndoWindow: a mail of its own (an unsubscribe) scheduled
// for the undo window can be cancelled (no draft appears in the queue),
// is sent exactly once when its window ends, and a wait cut short
// cancels it.
func TestStandaloneUndoWindow(t *testing.T) {
	t.Parallel()
	w, sink := sinkWorld(t)
	ctx := context.Background()
	now := time.Now()
	mk := func(ref string) *store.OutboxRecord {
		ob := &store.OutboxRecord{ID: StandaloneID(store.OutboxKindUnsubscribe, "a", ref), Account: "a", From: "ada@example.com",
			To: []string{"leave-" + ref + "@lists.example.org"}, MessageID: "<u-" + ref + "@example.com>", Raw: []byte(autoRaw),
			Auto: true, Kind: store.OutboxKindUnsubscribe}
		if err := Schedule(ob, now, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := w.st.PutOutbox(ob); err != nil {
			t.Fatal(err)
		}
		return ob
	}

	cancelled := mk("one")
	if err := w.o.Cancel(ctx, cancelled.ID); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if got := w.status(t, cancelled.ID).Status; got != store.OutboxCancelled {
		t.Errorf("cancelled record: %s", got)
	}
	n := 0
	_ = w.st.ListQueue("", func(*store.QueueItem) error { n++; return nil })
	if n != 0 {
		t.Errorf("cancelling an unsubscribe queued %d drafts, want none", n)
	}
	if _, err := w.o.SendWhenDue(ctx, cancelled.ID, func(context.Context, time.Time) error { return nil }); err != nil {
		t.Errorf("send a cancelled record: %v", err)
	}

	interrupted := mk("two")
	_, err := w.o.SendWhenDue(ctx, interrupted.ID, func(context.Context, time.Time) error { return context.Canceled })
	if !errors.Is(err, ErrApprovalCancelled) {
		t.Errorf("interrupted wait: %v, want ErrApprovalCancelled", err)
	}

	sent := mk("three")
	var waitedFor time.Time
	ob, err := w.o.SendWhenDue(ctx, sent.ID, func(_ context.Context, at time.Time) error { waitedFor = at; return nil })
	if err != nil || ob.Status != store.OutboxAppended {
		t.Fatalf("send when due: %v, %+v", err, ob)
	}
	if !waitedFor.Equal(sent.SendAt) {
		t.Errorf("waited for %v, want the window's end %v", waitedFor, sent.SendAt)
	}
	if _, err := w.o.SendWhenDue(ctx, sent.ID, func(context.Context, time.Time) error { return nil }); err != nil {
		t.Errorf("second send: %v", err)
	}
	_ = w.o.SendDue(ctx)
	if got := len(sink.Messages()); got != 1 {
		t.Errorf("sink got %d messages, want exactly the one not cancelled", got)
	}
	for _, id := range []string{cancelled.ID, interrupted.ID} {
		if got := w.status(t, id).Status; got != store.OutboxCancelled {
			t.Errorf("%s: %s, want cancelled", id, got)
		}
	}
}
