package root

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/mailagent/mailagent/internal/cmd/queue"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

func TestQueueTableAlignsWideText(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var items []store.QueueItem
	for i, s := range wideSubjects {
		items = append(items, store.QueueItem{ID: "q" + strings.Repeat("x", i), Kind: store.KindDraft, Status: store.QueuePending,
			Account: "personal", From: mail.Address{Name: "送信者 🙂", Email: "a@example.org"},
			To: []mail.Address{{Email: "a@example.org"}}, Subject: s,
			Classification: &store.Classification{Intents: []string{"intent" + strings.Repeat("Z", i)}, Risk: "low"},
			CreatedAt:      now.Add(-time.Hour)})
	}
	var b bytes.Buffer
	queue.PrintQueue(&b, items, nil, nil, now, 0)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != len(items)+1 {
		t.Fatalf("got %d lines:\n%s", len(lines), b.String())
	}
	want := displayColAt(lines[0], "INTENT")
	for i, l := range lines[1:] {
		if got := displayColAt(l, "intent"+strings.Repeat("Z", i)+" "); got != want {
			t.Errorf("row %d (%q): INTENT at display column %d, header at %d\n%s", i, wideSubjects[i], got, want, b.String())
		}
	}

	// The old tabwriter counted runes and misaligned the same rows: the
	// check above can fail.
	var tw bytes.Buffer
	w := tabwriter.NewWriter(&tw, 0, 0, 2, ' ', 0)
	for _, s := range append([]string{"SUBJECT"}, wideSubjects...) {
		_, _ = w.Write([]byte(s + "\tX\n"))
	}
	_ = w.Flush()
	cols := map[int]bool{}
	for _, l := range strings.Split(strings.TrimRight(tw.String(), "\n"), "\n") {
		cols[displayColAt(l, "X")] = true
	}
	if len(cols) == 1 {
		t.Errorf("tabwriter aligned wide text; the test above proves nothing")
	}
}

func TestQueueAgeCountsFromTheMailsDate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	items := []store.QueueItem{
		{ID: "q1", Kind: store.KindDraft, Status: store.QueuePending, Subject: "old mail", CreatedAt: now.Add(-time.Minute)},
		{ID: "q2", Kind: store.KindDraft, Status: store.QueuePending, Subject: "no date", CreatedAt: now.Add(-2 * time.Hour)},
	}
	var b bytes.Buffer
	queue.PrintQueue(&b, items, nil, map[string]time.Time{"q1": now.Add(-72 * time.Hour)}, now, 0)
	lines := strings.Split(b.String(), "\n")
	if f := strings.Fields(lines[1]); len(f) < 4 || f[3] != "3d" {
		t.Errorf("dated item: AGE %v, want 3d from the mail's date\n%s", f, b.String())
	}
	if f := strings.Fields(lines[2]); len(f) < 4 || f[3] != "2h" {
		t.Errorf("undated item: AGE %v, want 2h from the item's creation\n%s", f, b.String())
	}
}

// TestQueueListFitsTheTerminal: in an 80-column terminal every row of
// `queue list` fits on one line (names give way to addresses, INTENT and
// KIND go, long cells end in "…"), ids stay whole and a [new] mark stays
// in sight; a pipe (width 0) gets the whole rows.
func TestQueueListFitsTheTerminal(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var items []store.QueueItem
	for i, s := range wideSubjects {
		items = append(items, store.QueueItem{ID: fmt.Sprintf("q_%016x", i*7919), Kind: store.KindDraft, Status: store.QueuePending,
			Account: "personal", From: mail.Address{Name: "A rather long display name " + strings.Repeat("x", i), Email: "sender" + strings.Repeat("y", i) + "@example.org"},
			To: []mail.Address{{Name: "Someone", Email: "stranger@evil.example"}}, Subject: s + " and a long tail of words",
			Classification: &store.Classification{Intents: []string{"information_request", "follow_up"}, Risk: "medium"}, CreatedAt: now})
	}
	known := map[string]map[string]bool{"personal": {}}
	for _, width := range []int{80, 100, 72} {
		var b bytes.Buffer
		queue.PrintQueue(&b, items, known, nil, now, width)
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		if len(lines) != len(items)+1 {
			t.Fatalf("%d columns: %d lines for %d items", width, len(lines), len(items))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > width {
				t.Errorf("%d columns: line %d is %d cells: %q", width, i, w, l)
			}
			if i > 0 && !strings.HasPrefix(l, items[i-1].ID+" ") {
				t.Errorf("%d columns: line %d does not start with the whole id %s: %q", width, i, items[i-1].ID, l)
			}
			if i > 0 && !strings.Contains(l, "[new]") {
				t.Errorf("%d columns: line %d lost the [new] mark: %q", width, i, l)
			}
		}
	}
	var whole bytes.Buffer
	queue.PrintQueue(&whole, items, known, nil, now, 0)
	if !strings.Contains(whole.String(), "A rather long display name") || !strings.Contains(whole.String(), "information_request,follow_up") {
		t.Errorf("a pipe got cut rows:\n%s", whole.String())
	}
}

func TestTrimAddedNewline(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in    string
		added bool
		want  string
	}{
		{"a\n", true, "a"},
		{"a\r\n", true, "a"},
		{"a", true, "a"},       // the owner removed it
		{"a\n\n", true, "a\n"}, // a blank line the owner typed stays
		{"a\n", false, "a\n"},  // the draft had its own
	} {
		if got := queue.TrimAddedNewline(tt.in, tt.added); got != tt.want {
			t.Errorf("TrimAddedNewline(%q, %v) = %q, want %q", tt.in, tt.added, got, tt.want)
		}
	}
}
