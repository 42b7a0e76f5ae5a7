package smtptest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

func TestWaitFor(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	s, err := smtpsend.New(smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sink.WaitFor(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor on an empty sink with a cancelled ctx: got %v, want context.Canceled", err)
	}
	if err := sink.WaitFor(ctx, 0); err != nil {
		t.Fatalf("WaitFor(0): got %v, want nil", err)
	}

	errc := make(chan error, 2)
	for _, to := range []string{"a@example.com", "b@example.com"} {
		go func() {
			errc <- s.Send(context.Background(), "me@example.org", []string{to}, []byte("Subject: x\r\n\r\nbody\r\n"))
		}()
	}
	if err := sink.WaitFor(context.Background(), 2); err != nil {
		t.Fatalf("WaitFor(2): %v", err)
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	msgs := sink.Messages()
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want 2", len(msgs))
	}
	msgs[0].Data[0] = 'X' // Messages returns copies
	if got := sink.Messages()[0].Data[0]; got != 'S' {
		t.Errorf("got first byte %q after mutating a copy, want 'S'", got)
	}
}

func TestFailNextCounts(t *testing.T) {
	t.Parallel()
	sink := smtptest.NewSink(t, smtptest.SinkOptions{})
	s, err := smtpsend.New(smtpsend.Options{Host: sink.Host, Port: sink.Port, Security: "insecure"})
	if err != nil {
		t.Fatal(err)
	}
	sink.FailNext(smtptest.StageData, 2, 451)
	send := func() error {
		return s.Send(context.Background(), "me@example.org", []string{"a@example.com"}, []byte("\r\nx\r\n"))
	}
	for i := range 2 {
		var se *smtpsend.SendError
		if err := send(); !errors.As(err, &se) || se.Code != 451 {
			t.Fatalf("attempt %d: got %v, want a 451", i+1, err)
		}
	}
	if err := send(); err != nil {
		t.Fatalf("attempt 3: got %v, want success", err)
	}
	if got := sink.DataAttempts(); got != 3 {
		t.Errorf("got %d DATA attempts, want 3", got)
	}
}
