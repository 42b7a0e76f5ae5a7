package agent

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/calendar"
)

// textTool answers text, or waits for ctx when hang is set.
type textTool struct {
	name, text string
	hang       bool
}

func (f textTool) Name() string { return f.name }
func (f textTool) Run(ctx context.Context, _ ToolInput) (string, error) {
	if f.hang {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return f.text, nil
}

func TestToolResultsStayWithinTheBudget(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Thursday works."}
	p, st, _ := newTestPipeline(t, model, "review")
	p.Tools = &ToolStep{BudgetTokens: 10, External: []Tool{ // 40 characters in all
		textTool{name: "one", text: strings.Repeat("a", 30)},
		textTool{name: "two", text: strings.Repeat("b", 30)},
		textTool{name: "three", text: strings.Repeat("c", 30)},
	}}
	if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Thursday?", "Thursday at 3?")); err != nil {
		t.Fatal(err)
	}
	prompt := model.calls("body")[0].Prompt
	if !strings.Contains(prompt, "--- tool one\n"+strings.Repeat("a", 30)+"\n") || strings.Contains(prompt, strings.Repeat("b", 11)) ||
		!strings.Contains(prompt, "--- tool two\n"+strings.Repeat("b", 10)) || strings.Contains(prompt, "--- tool three") {
		t.Errorf("tool section over the 40-character budget or cut wrongly:\n%s", prompt)
	}
}

// slotCalendar offers one slot, or hangs until its context ends.
type slotCalendar struct{ hang bool }

func (c slotCalendar) FreeSlots(ctx context.Context, _ string, now time.Time) ([]calendar.Interval, *time.Location, error) {
	if c.hang {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	start := time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC).AddDate(0, 0, 2)
	return []calendar.Interval{{Start: start, End: start.Add(time.Hour)}}, time.UTC, nil
}

func TestCalendarIsAToolOfSchedulingMail(t *testing.T) {
	t.Parallel()
	for _, hang := range []bool{false, true} {
		model := &recordingModel{class: okClass(), draft: "Thursday works."}
		model.class["intents"] = []string{IntentScheduling}
		p, st, mailer := newTestPipeline(t, model, "auto")
		p.Calendar = slotCalendar{hang: hang}
		p.Tools = &ToolStep{Timeout: 200 * time.Millisecond}
		if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
			t.Fatal(err)
		}
		out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Meet?", "Could we meet this week?"))
		if err != nil {
			t.Fatal(err)
		}
		names, errs, _ := toolSteps(out.Trace)
		if len(names) == 0 || names[0] != ToolCalendar {
			t.Fatalf("hang=%v: tool steps %v; want the calendar first", hang, names)
		}
		prompt := model.calls("body")[0].Prompt
		if hang {
			if !strings.Contains(errs[ToolCalendar], "timed out") || strings.Contains(prompt, "The owner's free time") ||
				out.Record.Decision != DecisionQueue || !strings.Contains(strings.Join(out.Record.Reasons, "; "), "the calendar could not be read") || len(mailer.sent) != 0 {
				t.Errorf("hanging calendar: step error %q, decision %s %v; want timed out, no slots, queued by the schedule gate", errs[ToolCalendar], out.Record.Decision, out.Record.Reasons)
			}
			continue
		}
		if errs[ToolCalendar] != "" || !strings.Contains(prompt, "The owner's free time") || !strings.Contains(prompt, "10:00–11:00") {
			t.Errorf("calendar: step error %q; want the slot in the prompt:\n%s", errs[ToolCalendar], prompt)
		}
	}
}

func TestThreadToolSearchesTheStoreByThreadID(t *testing.T) {
	t.Parallel()
	model := &recordingModel{class: okClass(), draft: "Thursday works."}
	p, st, _ := newTestPipeline(t, model, "review")
	if err := st.MarkKnown("a", []string{"bob@example.org"}); err != nil {
		t.Fatal(err)
	}
	first := input("Bob <bob@example.org>", "Lunch", "The blue door on Elm Street, remember?")
	if _, err := p.Process(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	// A reply in the same thread, and an unrelated mail naming the
	// thread's words: only the thread's own message is looked up.
	other := input("Bob <bob@example.org>", "Other", "Unrelated: the red door.")
	if _, err := p.Process(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`Message-ID: (<[^>]+>)`).FindStringSubmatch(string(first.Raw))[1]
	out, err := p.Process(context.Background(), input("Bob <bob@example.org>", "Re: Lunch", "So Thursday?", "In-Reply-To: "+id, "References: "+id))
	if err != nil {
		t.Fatal(err)
	}
	names, errs, _ := toolSteps(out.Trace)
	if len(names) == 0 || names[0] != ToolThread || errs[ToolThread] != "" {
		t.Errorf("tool steps %v %v; want the thread tool", names, errs)
	}
	calls := model.calls("body")
	prompt := calls[len(calls)-1].Prompt
	if !strings.Contains(prompt, "The blue door on Elm Street") || strings.Contains(prompt, "the red door") {
		t.Errorf("last draft prompt: want the thread's earlier message only:\n%s", prompt)
	}
}
