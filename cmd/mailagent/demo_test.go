package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/demo"
)

func TestDemoNoTUIOutcomes(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "") // the offline demo model
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	stdout, stderr, code := runMain(t, "demo", "--no-tui", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, demo.Label) {
		t.Errorf("the offline model is not labelled on stderr:\n%s", stderr)
	}
	var rep DemoReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	if rep.Model != demo.Label {
		t.Errorf("model: got %q, want %q", rep.Model, demo.Label)
	}
	want := demo.Expected()
	if len(rep.Outcomes) != len(want) {
		t.Errorf("outcomes: got %d, want %d", len(rep.Outcomes), len(want))
	}
	for _, o := range rep.Outcomes {
		w, ok := want[o.MessageID]
		if !ok {
			t.Errorf("unexpected message %s", o.MessageID)
			continue
		}
		if o.Decision != w {
			t.Errorf("%s (%s): got %s, want %s; reasons %v", o.Subject, o.From, o.Decision, w, o.Reasons)
		}
	}
	// The one low-risk reply is to Charles's scheduling mail, and the demo
	// account has no calendar: the schedule gate holds it.
	if len(rep.Sent) != 0 {
		t.Errorf("sent: got %+v, want none (Charles's scheduling reply waits: no calendar)", rep.Sent)
	}
	for _, o := range rep.Outcomes {
		if o.MessageID == "20260309094105.5521@babbage.example" && !slices.Contains(o.Reasons, "schedule: "+agent.NoCalendarReason) {
			t.Errorf("Charles's scheduling mail: reasons %v, want the no-calendar reason", o.Reasons)
		}
	}
	for _, s := range rep.Sent {
		for _, to := range s.To {
			if strings.Contains(to, "evil") || strings.Contains(to, "it-support") {
				t.Errorf("the injection got a reply: %v", s.To)
			}
		}
	}
}
