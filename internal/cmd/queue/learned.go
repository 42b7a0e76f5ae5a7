package queue

import (
	"fmt"
	"io"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
)

// printLearned tells the owner what an approval taught, and how to undo it
// (queue approve's side of memory; the review TUI's is
// review.Backend.LastLearned).
func printLearned(w io.Writer, learned []store.Learned) {
	for _, l := range learned {
		fmt.Fprintf(w, "learned: %s (undo: mailagent memory forget %s)\n", cmdutil.Truncate(termsafe.Line(l.Text), 100), termsafe.Line(l.ID))
	}
}
