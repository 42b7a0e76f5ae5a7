package agentcal

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/apperr"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/config"
)

// TestErrCodes: each failed calendar request gets the exit code and the
// account name the command line reports; bad event data is no apperr.
func TestErrCodes(t *testing.T) {
	t.Parallel()
	a := &config.Account{Name: "work"}
	tests := []struct {
		err  error
		code int // 0: not an *apperr.Error
		hint bool
	}{
		{fmt.Errorf("x: %w", calendar.ErrAuth), apperr.CodeUnreachable, true},
		{fmt.Errorf("x: %w", calendar.ErrNoCalendar), apperr.CodeUsage, true},
		{fmt.Errorf("x: %w", config.ErrNoSecret), apperr.CodeUsage, false},
		{errors.New("calendar: event 3: bad DTSTART"), 0, false},
		{errors.New("dial tcp: connection refused"), apperr.CodeUnreachable, true},
	}
	for _, tt := range tests {
		got := Err(a, tt.err)
		if !errors.Is(got, tt.err) {
			t.Errorf("%v: the cause is lost: %v", tt.err, got)
		}
		if want := `account "work" calendar: ` + tt.err.Error(); got.Error() != want {
			t.Errorf("text %q, want %q", got.Error(), want)
		}
		var ae *apperr.Error
		isApp := errors.As(got, &ae)
		switch {
		case tt.code == 0 && isApp:
			t.Errorf("%v: an apperr (code %d), want a plain error", tt.err, ae.Code)
		case tt.code != 0 && (!isApp || ae.Code != tt.code || (ae.Hint != "") != tt.hint):
			t.Errorf("%v: got %#v, want code %d hint=%v", tt.err, ae, tt.code, tt.hint)
		}
	}
}

// TestNoCalendarNoSlots: without a calendar the agent gets no adapter at
// all, and an account without one has no slots, no busy times and
// cannot be written.
func TestNoCalendarNoSlots(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{Accounts: []config.Account{{Name: "a", Email: "a@example.org"}}}
	if c := New(cfg); c != nil {
		t.Fatalf("New without a calendar = %#v, want nil", c)
	}
	ics := &config.Config{Accounts: []config.Account{
		{Name: "a", Email: "a@example.org"},
		{Name: "b", Email: "b@example.org", Calendar: config.Calendar{URL: "/nonexistent/cal.ics", Kind: config.CalendarICS, Write: true}},
	}}
	c, ok := New(ics).(Calendar)
	if !ok {
		t.Fatal("New with a calendar is not a Calendar")
	}
	ctx := context.Background()
	if c.HasCalendar("a") || !c.HasCalendar("b") || c.HasCalendar("nobody") {
		t.Errorf("HasCalendar a=%v b=%v nobody=%v", c.HasCalendar("a"), c.HasCalendar("b"), c.HasCalendar("nobody"))
	}
	if s, loc, err := c.FreeSlots(ctx, "a", time.Now()); s != nil || loc != nil || err != nil {
		t.Errorf("FreeSlots of an account without a calendar: %v %v %v", s, loc, err)
	}
	if b, err := c.Busy(ctx, "a", calendar.Interval{}, ""); b != nil || err != nil {
		t.Errorf("Busy of an account without a calendar: %v %v", b, err)
	}
	// An .ics source is never written, even with write = true.
	if st, err := c.PutEvent(ctx, "b", "uid-1", []byte("BEGIN:VCALENDAR"), ""); st != (calendar.Stored{}) || err != nil {
		t.Errorf("PutEvent on an .ics calendar: %v %v, want nothing written", st, err)
	}
	if err := c.DeleteEvent(ctx, "b", "uid-1", "/p", "e"); !errors.Is(err, calendar.ErrReadOnly) {
		t.Errorf("DeleteEvent on an .ics calendar: %v, want ErrReadOnly", err)
	}
}
