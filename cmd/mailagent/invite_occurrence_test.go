package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/review"
	"github.com/mailagent/mailagent/store"
)

// TestOccurrenceShownInWords: what a CANCEL did to occurrences of a series
// reads in words in the review detail and `queue show`, and as the
// occurrences list in --json; the RECURRENCE-ID (sender text) is shown
// without control characters.
func TestOccurrenceShownInWords(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 10, 14, 0, 0, 0, berlin)
	text := "cancels the occurrence on Tue 10 March 2026 14:00 CET of 'Weekly sync': done on your calendar"
	inv := &store.Invitation{Method: "CANCEL", UID: "w@example.org", RecurrenceID: "20260310T130000Z\x1b[2J", Summary: "Weekly sync",
		Organizer: "bob@example.org", OrganizerVerified: true, Applied: text,
		Occurrences: []store.OccurrenceChange{{Kind: "cancelled", RecurrenceID: "20260310T130000Z", Start: start, Applied: true, Text: text}}}
	lines := strings.Join(review.InvitationLines("q_1", inv), "\n")
	for _, want := range []string{"applied: " + text, "recurring one occurrence of a series (RECURRENCE-ID 20260310T130000Z"} {
		if !strings.Contains(lines, want) {
			t.Errorf("detail lacks %q:\n%s", want, lines)
		}
	}
	if strings.Contains(lines, "\x1b") {
		t.Errorf("an escape sequence reached the terminal:\n%q", lines)
	}
	b, err := json.Marshal(toInvitationJSON(inv))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Occurrences []OccurrenceJSON `json:"occurrences"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Occurrences) != 1 || j.Occurrences[0].Text != text || j.Occurrences[0].Start == nil ||
		*j.Occurrences[0].Start != "2026-03-10T14:00:00+01:00" || j.Occurrences[0].NewStart != nil || !j.Occurrences[0].Applied {
		t.Errorf("--json occurrences: %s", b)
	}
}
