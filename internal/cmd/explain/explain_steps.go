package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// printSnapshots writes `explain --steps`: each step's input and output,
// indented. Snapshots hold mail and model text, so every line goes
// through termsafe.Line (no escape sequence, bidi control or other
// control character reaches the terminal), unless raw (a positive
// control: ExplainOptions.SanitiseOff).
func printSnapshots(w io.Writer, tr *store.Trace, raw bool) {
	fmt.Fprintln(w, "\nstep snapshots:")
	has := false
	for i, s := range tr.Steps {
		if s.Snapshot == nil {
			continue
		}
		has = true
		fmt.Fprintf(w, "\n[%d] %s\n", i+1, termsafe.Line(s.Name))
		block(w, "input", s.Snapshot.Input, raw)
		block(w, "output", s.Snapshot.Output, raw)
	}
	if !has {
		fmt.Fprintln(w, "  (none: trace.snapshots was off, or trace.snapshot_retention has passed)")
	}
}

func block(w io.Writer, label, text string, raw bool) {
	if text == "" {
		fmt.Fprintf(w, "  %s: (empty)\n", label)
		return
	}
	fmt.Fprintf(w, "  %s:\n", label)
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if !raw {
			l = termsafe.Line(l)
		}
		fmt.Fprintf(w, "    %s\n", l)
	}
}
