package main

import (
	"io"
	"time"

	"github.com/mailagent/mailagent/internal/cmdutil"
)

// writeJSON and parseFor are cmdutil's, under the names the files still
// in package main use (doctor; issue 27's move).
func writeJSON(w io.Writer, v any) error { return cmdutil.WriteJSON(w, v) }

func parseFor(s string) (time.Duration, error) { return cmdutil.PositiveDuration(s) }
