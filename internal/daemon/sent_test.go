package daemon

import (
	"testing"
	"time"
)

func TestRetryBackoff(t *testing.T) {
	base := 15 * time.Minute
	tests := []struct {
		attempts int
		want     time.Duration
	}{
		{0, base}, {1, base}, {2, 30 * time.Minute}, {3, time.Hour}, {7, 16 * time.Hour}, {8, 24 * time.Hour}, {50, 24 * time.Hour},
	}
	for _, tt := range tests {
		if got := retryBackoff(base, tt.attempts); got != tt.want {
			t.Errorf("attempts %d: got %v, want %v", tt.attempts, got, tt.want)
		}
	}
}
