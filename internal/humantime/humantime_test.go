package humantime

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{0, "now"},
		{59 * time.Second, "now"},
		{-time.Hour, "now"}, // a clock ahead of ours
		{time.Minute, "1m"},
		{59*time.Minute + 59*time.Second, "59m"},
		{time.Hour, "1h"},
		{47*time.Hour + 59*time.Minute, "47h"},
		{48 * time.Hour, "2d"},
		{400 * 24 * time.Hour, "400d"},
	}
	for _, tt := range tests {
		if got := Age(now, now.Add(-tt.ago)); got != tt.want {
			t.Errorf("Age(%v ago) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := Age(now, time.Time{}); got != "-" {
		t.Errorf("Age(zero) = %q, want -", got)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		1234 * time.Millisecond: "1.2s", 59*time.Second + 960*time.Millisecond: "1m0s", 61*time.Second + 400*time.Millisecond: "1m1s",
	} {
		if got := Latency(d); got != want {
			t.Errorf("Latency(%v) = %q, want %q", d, got, want)
		}
	}
}
