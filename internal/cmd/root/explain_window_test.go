package root

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmd/explain"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

// explainFakeService answers Explain with e for the trace id it holds;
// every other method of api.Service is nil (explain of a trace id calls
// none of them).
type explainFakeService struct {
	api.Service
	e *api.Explain
}

func (s explainFakeService) Explain(_ context.Context, ref string) (*api.Explain, error) {
	if ref != s.e.Trace.TraceID {
		return nil, store.ErrNotFound
	}
	return s.e, nil
}

// explainText runs `explain ID` in text form over a service holding rec's
// trace tr_1 and returns what it printed.
func explainText(t *testing.T, rec *store.MessageRecord) string {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	svc := explainFakeService{e: &api.Explain{Trace: &store.Trace{TraceID: "tr_1"}, Message: rec}}
	opts := &explain.ExplainOptions{IO: ios, ID: "tr_1", Now: time.Now,
		Service: func(context.Context, bool) (api.Service, func() error, error) {
			return svc, func() error { return nil }, nil
		}}
	if err := explain.Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestExplainShowsRequestedWindow: explain prints the window a scheduling
// mail asked about as the model read it, on one sanitised line.
func TestExplainShowsRequestedWindow(t *testing.T) {
	t.Parallel()
	rec := &store.MessageRecord{Classification: &store.Classification{Intents: []string{"scheduling"},
		RequestedWindow: &store.DateWindow{Start: "2026-11-24", End: "2026-11-25\x1b]52;c;aGk=\x07\nfake: line"}}}
	out := explainText(t, rec)
	if !strings.Contains(out, "  requested window (as the model read it): 2026-11-24 to 2026-11-25") {
		t.Errorf("explain does not show the requested window:\n%s", out)
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\nfake: line") {
		t.Errorf("explain prints the model's text unsanitised:\n%q", out)
	}

	rec.Classification.RequestedWindow = nil
	if out := explainText(t, rec); strings.Contains(out, "requested window") {
		t.Errorf("explain shows a requested window the model did not give:\n%s", out)
	}
}
