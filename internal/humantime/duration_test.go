package humantime

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"15m", 15 * time.Minute, true},
		{"1h30m", 90 * time.Minute, true},
		{" 4H ", 4 * time.Hour, true},
		{"0", 0, true},
		{"2d", 2 * day, true},
		{"1w", 7 * day, true},
		{"1w2d", 9 * day, true},
		{"1d12h", 36 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"-1d", -day, true},
		{"2D", 2 * day, true},
		{"", 0, false},
		{"5", 0, false},
		{"d", 0, false},
		{"2x", 0, false},
		{"2dd", 0, false},
		{"1..5d", 0, false},
		{"tomorrow", 0, false},
		{"99999999999999w", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "1w2d", "1.5d", "-3h", "2dd", "1e9d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		// Whatever it accepts, its Go form reads back the same.
		if back, err := ParseDuration(d.String()); err != nil || back != d {
			t.Fatalf("%q -> %v -> %v, %v", s, d, back, err)
		}
	})
}
