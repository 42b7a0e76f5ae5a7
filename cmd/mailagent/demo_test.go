package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
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
	// The one low-risk reply is to Charles's scheduling mail: the demo
	// calendar is busy Thursday 14:00–16:00, so the reply proposes the
	// first free slot instead, and the schedule gate lets it go out.
	if len(rep.Sent) != 1 {
		t.Fatalf("sent: got %+v, want Charles's scheduling reply alone", rep.Sent)
	}
	sent := rep.Sent[0]
	if !slices.Equal(sent.To, []AddressJSON{{Email: "charles@babbage.example"}}) || !sent.Auto || sent.Subject != "Re: Our call this week" {
		t.Errorf("sent: got to %v, auto %v, subject %q; want Charles, automatic, Re: Our call this week", sent.To, sent.Auto, sent.Subject)
	}
	if strings.Contains(sent.Body, "Thursday") || strings.Contains(sent.Body, "3pm") || !strings.Contains(sent.Body, "Could we do ") {
		t.Errorf("sent body: got %q, want a free slot proposed and not the requested Thursday 3pm", sent.Body)
	}
	// The proposed time is a working slot (tue-thu 10:00–17:00 UTC), at
	// least min_notice (4h) away and inside the 14-day window.
	now := time.Now().UTC()
	var at []time.Time
	for _, m := range calendar.Mentions(sent.Body, now, time.UTC) {
		if !m.Day.IsZero() && m.HasTime {
			at = append(at, m.At(time.UTC))
		}
	}
	if len(at) != 1 {
		t.Fatalf("sent body %q: got %d dated times, want 1", sent.Body, len(at))
	}
	if wd, h := at[0].Weekday(), at[0].Hour(); wd < time.Tuesday || wd > time.Thursday || h < 10 || h >= 17 ||
		at[0].Before(now.Add(4*time.Hour-time.Minute)) || at[0].After(now.AddDate(0, 0, 14)) {
		t.Errorf("proposed %s (now %s): not a working slot in the demo's window", at[0], now)
	}
	for _, o := range rep.Outcomes {
		switch o.MessageID {
		case "20260309094105.5521@babbage.example":
			if !slices.Contains(o.Reasons, "every gate passed") {
				t.Errorf("Charles's scheduling mail: reasons %v, want every gate passed", o.Reasons)
			}
		case "5e8f-4c1a-termin@berlin.example":
			// Karl's German mail waits for the model's confidence alone:
			// its draft, too, proposes a free slot.
			for _, r := range o.Reasons {
				if strings.HasPrefix(r, "schedule:") {
					t.Errorf("Karl's scheduling mail: schedule gate failed: %v", o.Reasons)
				}
			}
			if !slices.ContainsFunc(o.Reasons, func(r string) bool { return strings.Contains(r, "confidence 0.70") }) {
				t.Errorf("Karl's scheduling mail: reasons %v, want the confidence reason", o.Reasons)
			}
		}
	}
	for _, s := range rep.Sent {
		for _, to := range s.To {
			if strings.Contains(to.Email, "evil") || strings.Contains(to.Email, "it-support") {
				t.Errorf("the injection got a reply: %v", s.To)
			}
		}
	}
}
