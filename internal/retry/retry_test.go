package retry

import (
	"testing"
	"time"
)

func TestAfter(t *testing.T) {
	t.Parallel()
	m := time.Minute
	tests := []struct {
		first, longest time.Duration
		failures       int
		want           time.Duration
	}{
		{m, time.Hour, 0, m}, {m, time.Hour, 1, m}, {m, time.Hour, 2, 2 * m}, {m, time.Hour, 6, 32 * m},
		{m, time.Hour, 7, time.Hour}, {m, time.Hour, 1000, time.Hour},
		{15 * m, 24 * time.Hour, 3, time.Hour}, {15 * m, 24 * time.Hour, 8, 24 * time.Hour},
		{2 * time.Hour, time.Hour, 1, 2 * time.Hour}, // longest below first: first
		{0, time.Hour, 5, 0},
	}
	for _, tt := range tests {
		if got := After(tt.first, tt.longest, tt.failures); got != tt.want {
			t.Errorf("After(%v, %v, %d) = %v, want %v", tt.first, tt.longest, tt.failures, got, tt.want)
		}
	}
}

func TestJittered(t *testing.T) {
	t.Parallel()
	b := Jittered(time.Second, 8*time.Second)
	for i, base := range []time.Duration{1, 2, 4, 8, 8, 8} {
		base *= time.Second
		d := b.NextBackOff()
		if d < base/2 || d > base*3/2 {
			t.Errorf("wait %d = %v, want within ±50%% of %v", i+1, d, base)
		}
	}
}
