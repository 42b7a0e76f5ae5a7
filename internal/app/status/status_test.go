package status

import (
	"errors"
	"testing"
	"time"
)

func TestSetErrorKeepsTheFirstTime(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var a Account
	a.SetError(errors.New("connection refused"), t0)
	a.SetError(errors.New("connection reset"), t0.Add(time.Minute))
	if a.Error != "connection reset" || !a.ErrorSince.Equal(t0) {
		t.Fatalf("after two errors: %q since %v, want the last error since the first", a.Error, a.ErrorSince)
	}
	a.SetError(nil, t0.Add(2*time.Minute))
	if a.Error != "" || !a.ErrorSince.IsZero() {
		t.Fatalf("after a success: %q since %v, want cleared", a.Error, a.ErrorSince)
	}
	a.SetError(errors.New("again"), t0.Add(3*time.Minute))
	if !a.ErrorSince.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("a new error after a success: since %v", a.ErrorSince)
	}
}
