package actions

import (
	"testing"
	"time"
)

// TestCountdownRoundsUp: an undo-window line never promises less time than
// is left, and under load 0.9s left of a 1s window still reads "1s".
func TestCountdownRoundsUp(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{900 * time.Millisecond, time.Second},
		{time.Second, time.Second},
		{1001 * time.Millisecond, 2 * time.Second},
		{4*time.Minute + 59200*time.Millisecond, 5 * time.Minute},
		{0, 0},
		{-time.Second, 0},
	} {
		if got := Countdown(c.in); got != c.want {
			t.Errorf("Countdown(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
