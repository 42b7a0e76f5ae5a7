package smtpsend_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mailagent/mailagent/internal/smtpsend"
	"github.com/mailagent/mailagent/internal/smtpsend/smtptest"
)

// SendStaged calls beforeData once the envelope is accepted and before
// DATA: a refused MAIL never calls it, a DATA that fails comes after it,
// and an error from it ends the transaction with nothing delivered.
func TestSendStagedBeforeData(t *testing.T) {
	t.Parallel()
	errStore := errors.New("store unavailable")
	tests := []struct {
		name      string
		fail      smtptest.Stage // scripted 451 at this stage; 0 for none
		hookErr   error
		wantCalls int
		wantErr   bool
		wantMsgs  int
	}{
		{name: "delivered", wantCalls: 1, wantMsgs: 1},
		{name: "MAIL refused: never reached", fail: smtptest.StageMail, wantErr: true},
		{name: "RCPT refused: never reached", fail: smtptest.StageRcpt, wantErr: true},
		{name: "DATA refused: reached first", fail: smtptest.StageData, wantCalls: 1, wantErr: true},
		{name: "hook fails: nothing sent", hookErr: errStore, wantCalls: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sink := smtptest.NewSink(t, smtptest.SinkOptions{Username: user, Password: password})
			if tt.fail != 0 {
				sink.FailNext(tt.fail, 1, 451)
			}
			s := newSender(t, plainOpts(sink))
			calls, attemptsAtHook := 0, -1
			err := s.SendStaged(context.Background(), user, []string{"bob@example.com"}, rawMsg, func() error {
				calls++
				attemptsAtHook = sink.DataAttempts()
				return tt.hookErr
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("got err %v, want error %v", err, tt.wantErr)
			}
			if tt.hookErr != nil && !errors.Is(err, tt.hookErr) {
				t.Errorf("got %v, want it to wrap the hook's error", err)
			}
			var se *smtpsend.SendError
			if tt.hookErr != nil && errors.As(err, &se) && (se.Temporary || se.MaybeDelivered) {
				t.Errorf("hook failure: got temporary %v, maybe delivered %v; want neither", se.Temporary, se.MaybeDelivered)
			}
			if calls != tt.wantCalls {
				t.Errorf("beforeData calls: got %d, want %d", calls, tt.wantCalls)
			}
			if calls > 0 && attemptsAtHook != 0 {
				t.Errorf("beforeData ran after DATA (%d DATA attempts seen), want before", attemptsAtHook)
			}
			if n := len(sink.Messages()); n != tt.wantMsgs {
				t.Errorf("delivered: got %d, want %d", n, tt.wantMsgs)
			}
		})
	}
}
