package root

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/app/agentcal"
	"github.com/mailagent/mailagent/internal/cmd/calendar"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// TestNewCmdCalendarFlags: the flags reach runF with the factory's
// streams; a --days out of 1..90 is a usage error and runs nothing.
func TestNewCmdCalendarFlags(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args    []string
		days    int
		usage   bool
		account string
		json    bool
	}{
		{[]string{"free"}, 7, false, "", false},
		{[]string{"free", "--days", "30", "--account", "work", "--json"}, 30, false, "work", true},
		{[]string{"free", "--days", "0"}, 0, true, "", false},
		{[]string{"free", "--days", "91"}, 0, true, "", false},
	} {
		ios, _, _, _ := iostreams.Test()
		f := cmdutil.New(ios)
		var got *calendar.CalendarOptions
		cmd := calendar.NewCmdCalendar(f, func(_ context.Context, o *calendar.CalendarOptions) error { got = o; return nil })
		cmd.SetArgs(tt.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		var ue *cmdutil.UserError
		if tt.usage {
			if !errors.As(err, &ue) || ue.Code != cmdutil.ExitUsage || got != nil {
				t.Errorf("%v: err %v, runF ran %v; want a usage error and no run", tt.args, err, got != nil)
			}
			continue
		}
		if err != nil || got == nil || got.IO != ios || got.Days != tt.days || got.Account != tt.account || got.JSON != tt.json || got.Now == nil {
			t.Errorf("%v: err %v, options %+v", tt.args, err, got)
		}
	}
}

// TestPrintFreeSlotsOneLinePerDay: slots print in the calendar's zone,
// one line per day.
func TestPrintFreeSlotsOneLinePerDay(t *testing.T) {
	t.Parallel()
	loc := time.FixedZone("X", 2*3600)
	at := func(d, h, m int) time.Time { return time.Date(2026, 3, d, h, m, 0, 0, loc) }
	var b bytes.Buffer
	calendar.PrintFreeSlots(&b, []agentcal.Interval{{Start: at(30, 9, 0), End: at(30, 11, 0)}, {Start: at(30, 12, 0), End: at(30, 17, 30)}, {Start: at(31, 9, 0), End: at(31, 10, 0)}},
		agentcal.Prefs{Location: loc, SlotLength: 30 * time.Minute})
	want := "Free (X, slots of at least 30m0s):\n  Mon 30 Mar  09:00–11:00, 12:00–17:30\n  Tue 31 Mar  09:00–10:00\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	calendar.PrintFreeSlots(&b, nil, agentcal.Prefs{Location: loc})
	if !strings.HasPrefix(b.String(), "No free slots") {
		t.Errorf("no slots: %q", b.String())
	}
}
