package agent

import (
	"strings"
	"testing"
	"time"
)

// TestTraceIDsInTimeOrder: trace ids sort as their times do (so traces
// are appended to the store, not scattered through it), and ids made in
// the same millisecond differ.
func TestTraceIDsInTimeOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var ids []string
	seen := map[string]bool{}
	for i := range 2000 {
		id := traceIDAt(t0.Add(time.Duration(i/4) * time.Millisecond)) // four to a millisecond
		if !strings.HasPrefix(id, "tr_") || len(id) != 3+24 || seen[id] {
			t.Fatalf("id %q: bad form or repeated", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	for i := 4; i < len(ids); i += 4 {
		if ids[i-1][:15] >= ids[i][:15] {
			t.Fatalf("%s (ms %d) does not sort before %s (ms %d)", ids[i-1], (i-1)/4, ids[i], i/4)
		}
	}
}
