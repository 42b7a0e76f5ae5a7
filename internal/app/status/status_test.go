package status

import (
	"errors"
	"testing"
	"time"
)

func TestSetErrorKeepsTheFirstTime(t *testing.T) {
	t.Parallel()
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

// TestLatencies: the last and the median of the last LatencyWindow
// samples; older samples leave the window; a negative one counts as 0.
func TestLatencies(t *testing.T) {
	t.Parallel()
	var l Latencies
	var a Account
	l.Add(3*time.Second, &a)
	if a.LatencyLast != 3*time.Second || a.LatencyMedian != 3*time.Second || a.LatencySamples != 1 {
		t.Fatalf("one sample: got %+v", a)
	}
	l.Add(-time.Second, &a)
	if a.LatencyLast != 0 || a.LatencyMedian != 1500*time.Millisecond || a.LatencySamples != 2 {
		t.Fatalf("two samples: got last %v median %v n %d, want 0, 1.5s, 2", a.LatencyLast, a.LatencyMedian, a.LatencySamples)
	}
	// 20 samples of 60 s push both early ones out of the window.
	for range LatencyWindow {
		l.Add(time.Minute, &a)
	}
	if a.LatencyMedian != time.Minute || a.LatencySamples != LatencyWindow {
		t.Fatalf("full window: got median %v n %d, want 1m0s, %d", a.LatencyMedian, a.LatencySamples, LatencyWindow)
	}
	l.Add(time.Second, &a)
	if a.LatencyLast != time.Second || a.LatencyMedian != time.Minute || a.LatencySamples != LatencyWindow {
		t.Fatalf("after one fast message: got last %v median %v n %d", a.LatencyLast, a.LatencyMedian, a.LatencySamples)
	}
}
