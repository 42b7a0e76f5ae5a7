package main

import (
	"fmt"
	"io"

	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/termsafe"
	"github.com/mailagent/mailagent/store"
	"github.com/mailagent/mailagent/tui"
)

// The review backend's and queue approve's side of memory (was in
// memory.go, which moved to internal/cmd/memory).

var _ tui.Learner = (*serviceBackend)(nil)

// LastLearned implements tui.Learner: the records the approval of id
// wrote, once, each with its id (what ForgetLearned and `mailagent memory
// forget` take).
func (b *serviceBackend) LastLearned(id string) []tui.Learned {
	v, ok := b.learned.LoadAndDelete(id)
	if !ok {
		return nil
	}
	var out []tui.Learned
	for _, l := range v.([]store.Learned) {
		out = append(out, tui.Learned{ID: termsafe.Line(l.ID), Text: cmdutil.Truncate(termsafe.Line(l.Text), 80)})
	}
	return out
}

// printLearned tells the owner what an approval taught, and how to undo it.
func printLearned(w io.Writer, learned []store.Learned) {
	for _, l := range learned {
		fmt.Fprintf(w, "learned: %s (undo: mailagent memory forget %s)\n", cmdutil.Truncate(termsafe.Line(l.Text), 100), termsafe.Line(l.ID))
	}
}
