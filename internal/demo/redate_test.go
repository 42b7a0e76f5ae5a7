package demo

import (
	"net/mail"
	"strings"
	"testing"
	"time"
)

// TestRedateKeepsWeekdaysAndSpacing: the demo mailbox redated to a
// "now" of 28 November 2026 has its newest message within the last week,
// every message on the weekday its file says, the gaps between messages
// unchanged, and nothing but the Date header changed.
func TestRedateKeepsWeekdaysAndSpacing(t *testing.T) {
	t.Parallel()
	msgs, err := Messages()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC)
	moved := Redate(msgs, now)
	var shift time.Duration
	newest := time.Time{}
	for i := range msgs {
		before, ok1 := dateOf(msgs[i])
		after, ok2 := dateOf(moved[i])
		if !ok1 || !ok2 {
			t.Fatalf("message %d: no Date before (%v) or after (%v)", i, ok1, ok2)
		}
		if i == 0 {
			shift = after.Sub(before)
		}
		if after.Sub(before) != shift {
			t.Errorf("message %d moved by %v, the first by %v", i, after.Sub(before), shift)
		}
		if after.Weekday() != before.Weekday() {
			t.Errorf("message %d: %s became a %s", i, before.Weekday(), after.Weekday())
		}
		if after.After(newest) {
			newest = after
		}
		mb, _ := mail.ReadMessage(strings.NewReader(string(msgs[i])))
		ma, _ := mail.ReadMessage(strings.NewReader(string(moved[i])))
		for k := range mb.Header {
			if k != "Date" && mb.Header.Get(k) != ma.Header.Get(k) {
				t.Errorf("message %d: header %s changed", i, k)
			}
		}
	}
	if age := now.Sub(newest); age < 0 || age >= 7*24*time.Hour {
		t.Errorf("the newest message is %v old, want within the last week", age)
	}
	// Already recent mail is left alone.
	again := Redate(moved, now)
	for i := range moved {
		if string(again[i]) != string(moved[i]) {
			t.Errorf("message %d redated twice", i)
		}
	}
}
