package explain

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// printSnapshots writes `explain --steps`: each step's input and output,
// indented. Snapshots hold mail and model text, so every line goes
// through termsafe.Line (no escape sequence, bidi control or other
// control character reaches the terminal).
func printSnapshots(w io.Writer, tr *store.Trace) {
	fmt.Fprintln(w, "\nstep snapshots:")
	has := false
	for i, s := range tr.Steps {
		if s.Snapshot == nil {
			continue
		}
		has = true
		fmt.Fprintf(w, "\n[%d] %s\n", i+1, termsafe.Line(s.Name))
		block(w, "input", s.Snapshot.Input)
		block(w, "output", s.Snapshot.Output)
	}
	if !has {
		fmt.Fprintln(w, "  (none: trace.snapshots was off, or trace.snapshot_retention has passed)")
	}
}

// sanitiseOff makes `explain --steps` print snapshot lines as stored. It
// exists only for the positive control of the hostile-snapshot test
// (SwitchOffSanitiseForTest); nothing in the product sets it.
var sanitiseOff atomic.Bool

// SwitchOffSanitiseForTest turns termsafe off for the snapshot lines of
// `explain --steps` until the returned function is called. Only
// adversarial tests' positive controls call it, never from a parallel
// test.
func SwitchOffSanitiseForTest() (restore func()) {
	sanitiseOff.Store(true)
	return func() { sanitiseOff.Store(false) }
}

func block(w io.Writer, label, text string) {
	if text == "" {
		fmt.Fprintf(w, "  %s: (empty)\n", label)
		return
	}
	fmt.Fprintf(w, "  %s:\n", label)
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if !sanitiseOff.Load() {
			l = termsafe.Line(l)
		}
		fmt.Fprintf(w, "    %s\n", l)
	}
}
