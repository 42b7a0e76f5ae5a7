package triage

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestMessageBarUnits: triage's progress bar counts messages and shows
// the rate in msg/s, not "it/s".
func TestMessageBarUnits(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	bar := newMessageBar(&out, 10, "personal INBOX")
	for range 3 {
		time.Sleep(120 * time.Millisecond) // past the throttle: each step renders
		if err := bar.Add(1); err != nil {
			t.Fatal(err)
		}
	}
	got := out.String()
	if !strings.Contains(got, "(3/10, ") || !strings.Contains(got, " msg/s)") {
		t.Errorf("bar %q, want a count of messages and msg/s", got)
	}
	if strings.Contains(got, "it/s") || strings.Contains(got, "B/s") {
		t.Errorf("bar %q shows iteration or byte units", got)
	}
}
