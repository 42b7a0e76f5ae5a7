package cmdutil

import (
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/humantime"
)

// ParseSince reads a --since or --until flag: a duration back from now in
// the one grammar (humantime.ParseDuration: "7d", "2w", "36h"), or a
// YYYY-MM-DD date in local time. Empty is the zero time (no bound).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if d, err := humantime.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither %s nor a date (2026-01-02)", s, humantime.DurationGrammar)
}
