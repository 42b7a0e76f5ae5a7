package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// StepSnapshot is what went into one step of the item's trace and what
// came out (prompt variables, the model's raw answer, a gate's inputs),
// redacted and capped by the agent. Both are hostile text.
type StepSnapshot struct {
	Name   string
	Input  string
	Output string
}

// stepsSection is the detail's short "Steps" section: per step that kept
// a snapshot, one line of its input and one of its output, whitespace
// folded and clipped to the width, with the command that shows them
// whole. Nothing when the item has no snapshots.
func (d *detailView) stepsSection(it *Item, w int) string {
	if len(it.Steps) == 0 {
		return ""
	}
	st := d.c.st
	var b strings.Builder
	b.WriteByte('\n')
	rule := strings.Repeat(st.Glyphs.Rule, 2)
	b.WriteString(st.Section.Render(fmt.Sprintf("%s Steps (%d) %s", rule, len(it.Steps), rule)))
	b.WriteByte('\n')
	one := func(prefix, text string) {
		b.WriteString(st.Muted.Render(prefix))
		room := w - ansi.StringWidth(prefix)
		if room < 4 {
			b.WriteByte('\n')
			return
		}
		b.WriteString(ansi.Truncate(strings.Join(strings.Fields(clean(text)), " "), room, "…"))
		b.WriteByte('\n')
	}
	for _, s := range it.Steps {
		b.WriteString(st.Label.Render(clean(s.Name)))
		b.WriteByte('\n')
		one("  in:  ", s.Input)
		one("  out: ", s.Output)
	}
	if it.TraceID != "" {
		b.WriteString(st.Muted.Render(wrapIndent(clean("all of it: mailagent explain "+it.TraceID+" --steps"), w, "")))
		b.WriteByte('\n')
	}
	return b.String()
}
