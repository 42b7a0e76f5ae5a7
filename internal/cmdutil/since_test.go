package cmdutil

import (
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"  ", time.Time{}, false},
		{"7d", now.AddDate(0, 0, -7), false},
		{"2w", now.AddDate(0, 0, -14), false},
		{"36h", now.Add(-36 * time.Hour), false},
		{"2026-01-02", time.Date(2026, 1, 2, 0, 0, 0, 0, time.Local), false},
		{"-3d", time.Time{}, true},
		{"yesterday", time.Time{}, true},
		{"2026-13-40", time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSince(tt.in, now)
			if (err != nil) != tt.err || !got.Equal(tt.want) {
				t.Errorf("got %v, %v; want %v, err=%v", got, err, tt.want, tt.err)
			}
		})
	}
}
