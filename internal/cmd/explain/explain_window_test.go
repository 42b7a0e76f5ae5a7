package explain

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/store"
)

// TestExplainShowsRequestedWindow: explain prints the window a scheduling
// mail asked about as the model read it, on one sanitised line.
func TestExplainShowsRequestedWindow(t *testing.T) {
	t.Parallel()
	rec := &store.MessageRecord{Classification: &store.Classification{Intents: []string{"scheduling"},
		RequestedWindow: &store.DateWindow{Start: "2026-11-24", End: "2026-11-25\x1b]52;c;aGk=\x07\nfake: line"}}}
	var b bytes.Buffer
	printExplain(&b, &explainView{Trace: &store.Trace{TraceID: "tr_1"}, Message: rec})
	out := b.String()
	if !strings.Contains(out, "  requested window (as the model read it): 2026-11-24 to 2026-11-25") {
		t.Errorf("explain does not show the requested window:\n%s", out)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\nfake: line") {
		t.Errorf("explain prints the model's text unsanitised:\n%q", out)
	}

	rec.Classification.RequestedWindow = nil
	b.Reset()
	printExplain(&b, &explainView{Trace: &store.Trace{TraceID: "tr_1"}, Message: rec})
	if strings.Contains(b.String(), "requested window") {
		t.Errorf("explain shows a requested window the model did not give:\n%s", b.String())
	}
}
