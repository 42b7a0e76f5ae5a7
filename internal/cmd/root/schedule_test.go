package root

import (
	"context"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/cmd/schedule"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

// TestJobWhenWording: a job due this very moment is "due now", never
// "due now ago"; earlier and later ones read as ages.
func TestJobWhenWording(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		due  time.Time
		want string
	}{
		{now, "due now"},
		{now.Add(-10 * time.Second), "due now"},
		{now.Add(-5 * time.Minute), "due 5m ago"},
		{now.Add(3 * time.Hour), "in 3h"},
	} {
		if got := schedule.JobWhen(&store.Job{Due: c.due, State: store.JobPending}, now); got != c.want {
			t.Errorf("due %v: %q, want %q", c.due.Sub(now), got, c.want)
		}
	}
}

func TestNewCmdScheduleFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	var got *schedule.ScheduleOptions
	cmd := schedule.NewCmdSchedule(cmdutil.New(ios), func(_ context.Context, o *schedule.ScheduleOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"list", "--all", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got == nil || !got.All || !got.JSON || got.IO != ios {
		t.Fatalf("runF got %+v, want --all --json over the factory's streams", got)
	}
}
