package main

import (
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/tui"
)

// One duration grammar: a configuration key, --for/--since of decisions
// and followups (parseFor), triage/replay/digest --since (parseSince) and
// the snooze prompt and queue snooze --until (tui.ParseSnooze) accept the
// same text and read the same length from it (humantime.ParseDuration).
func TestOneDurationGrammarEveryCaller(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC) // DST starts in Europe the next night: a day is 24h all the same
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second}, {"15m", 15 * time.Minute}, {"1h30m", 90 * time.Minute}, {"2d", 48 * time.Hour},
		{"1w", 7 * 24 * time.Hour}, {"1d12h", 36 * time.Hour}, {" 3H ", 3 * time.Hour}, {"1.5d", 36 * time.Hour},
	} {
		var cd config.Duration
		if err := cd.UnmarshalText([]byte(tt.in)); err != nil {
			t.Fatal(err)
		}
		got := map[string]time.Duration{"config": cd.D()}
		if d, err := parseFor(tt.in); err == nil {
			got["parseFor"] = d
		}
		if s, err := parseSince(tt.in, now); err == nil {
			got["parseSince"] = now.Sub(s)
		}
		if u, err := tui.ParseSnooze(tt.in, now); err == nil {
			got["ParseSnooze"] = u.Sub(now)
		}
		for _, caller := range []string{"config", "parseFor", "parseSince", "ParseSnooze"} {
			if d, ok := got[caller]; !ok || d != tt.want {
				t.Errorf("%s(%q) = %v (accepted %v), want %v", caller, tt.in, d, ok, tt.want)
			}
		}
	}
	// And they refuse the same text.
	for _, in := range []string{"5", "2x", "2dd", "d"} {
		var cd config.Duration
		_ = cd.UnmarshalText([]byte(in))
		_, errFor := parseFor(in)
		_, errSince := parseSince(in, now)
		_, errSnooze := tui.ParseSnooze(in, now)
		if cd.D() != 0 || errFor == nil || errSince == nil || errSnooze == nil {
			t.Errorf("%q: config %v, parseFor %v, parseSince %v, ParseSnooze %v; want every caller to refuse it", in, cd.D(), errFor, errSince, errSnooze)
		}
	}
}
