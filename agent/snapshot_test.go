package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/store"
)

// wordRedactor replaces one word, and counts its calls.
type wordRedactor struct {
	word  string
	calls int
}

func (r *wordRedactor) Redact(s string) string {
	r.calls++
	return strings.ReplaceAll(s, r.word, "[redacted]")
}

func loadedTrace(t *testing.T, st *store.Store, id string) *store.Trace {
	t.Helper()
	tr, err := st.GetTrace(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.LoadSnapshots(tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestStepSnapshots: with snapshots on, each step of a processed message
// records its input and output (the classify and draft prompt variables
// and the model's raw answers, the decide step's gate inputs), each
// through the Redactor: the secret in the mail is in no snapshot.
func TestStepSnapshots(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Tuesday works."}
	p, st, _ := newTestPipeline(t, model, "review")
	red := &wordRedactor{word: "SECRET-TOKEN-42"}
	p.Snapshots, p.Redactor = true, red
	out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Meet?", "Can we meet Tuesday? SECRET-TOKEN-42", "X-Api-Key: SECRET-TOKEN-42"))
	if err != nil {
		t.Fatal(err)
	}
	tr := loadedTrace(t, st, out.Record.TraceID)
	got := map[string]*store.StepSnapshot{}
	for _, s := range tr.Steps {
		got[s.Name] = s.Snapshot
		if s.Snapshot != nil && strings.Contains(s.Snapshot.Input+s.Snapshot.Output, "SECRET-TOKEN-42") {
			t.Errorf("step %s: the secret reached the snapshot", s.Name)
		}
	}
	for _, name := range []string{"parse", "thread", "authenticate", "route", "classify", "decide", "answered", "tool:thread", "draft"} {
		if got[name] == nil {
			t.Errorf("step %s has no snapshot (steps: %+v)", name, tr.Steps)
		}
	}
	if t.Failed() {
		return
	}
	if !strings.Contains(got["parse"].Input, "X-Api-Key: [redacted]") {
		t.Errorf("parse input: %q", got["parse"].Input)
	}
	if !strings.Contains(got["classify"].Input, "Can we meet Tuesday?") || !strings.Contains(got["classify"].Output, `"intents":["information_request"]`) {
		t.Errorf("classify snapshot: %+v", got["classify"])
	}
	if !strings.Contains(got["draft"].Output, "Tuesday works.") || !strings.Contains(got["draft"].Input, "Can we meet Tuesday?") {
		t.Errorf("draft snapshot: %+v", got["draft"])
	}
	if !strings.Contains(got["tool:thread"].Input, `"ThreadID"`) || !strings.Contains(got["tool:thread"].Output, "earlier messages in thread") {
		t.Errorf("tool:thread snapshot: %+v", got["tool:thread"])
	}
	if !strings.Contains(got["decide"].Input, `"Sender"`) || !strings.Contains(got["decide"].Output, `"gates"`) {
		t.Errorf("decide snapshot: %+v", got["decide"])
	}
	if red.calls == 0 {
		t.Error("the Redactor was never called")
	}
}

// TestStepSnapshotsOff: snapshots off, or on without a Redactor (an
// unredacted snapshot could keep a credential), keep none.
func TestStepSnapshotsOff(t *testing.T) {
	t.Parallel()
	for name, set := range map[string]func(*Pipeline){
		"off":         func(p *Pipeline) { p.Snapshots, p.Redactor = false, &wordRedactor{word: "x"} },
		"no redactor": func(p *Pipeline) { p.Snapshots, p.Redactor = true, nil },
	} {
		t.Run(name, func(t *testing.T) {
			model := &recordingModel{class: okClass(), draft: "Sure."}
			p, st, _ := newTestPipeline(t, model, "review")
			set(p)
			out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Meet?", "Can we meet?"))
			if err != nil {
				t.Fatal(err)
			}
			tr := loadedTrace(t, st, out.Record.TraceID)
			if len(tr.Steps) < 5 {
				t.Fatalf("only %d steps", len(tr.Steps))
			}
			for _, s := range tr.Steps {
				if s.Snapshot != nil {
					t.Errorf("step %s kept a snapshot", s.Name)
				}
			}
		})
	}
}
