package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/app/agentcal"
	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/internal/config"
)

// calendar checks an account's calendar source, when it has one: that it
// answers, accepts the login and holds a calendar (calendar.source), and
// that its events read and give free slots in the next week
// (calendar.free). Nothing is written.
func (d *doctor) calendar(ctx context.Context, cfg *config.Config, acct *config.Account, now time.Time) {
	if !acct.Calendar.Configured() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, acct.Calendar.Timeout.D()+time.Second)
	defer cancel()
	names, err := agentcal.Source(acct).Calendars(ctx)
	if err != nil {
		d.fail("calendar.source", err, calendarFix(err))
		return
	}
	d.pass("calendar.source", fmt.Sprintf("%s: %s", acct.Calendar.Kind, strings.Join(names, ", ")))
	slots, _, err := agentcal.FreeSlots(ctx, cfg, acct, now, 7)
	if err != nil {
		d.fail("calendar.free", err, calendarFix(err))
		return
	}
	if len(slots) == 0 {
		d.warn("calendar.free", "no free slot in the next 7 days", "check [scheduling] working_hours, days and min_notice (mailagent calendar free)")
		return
	}
	d.pass("calendar.free", fmt.Sprintf("%d free intervals in the next 7 days, first %s", len(slots), slots[0].Start.Format(time.RFC3339)))
}

func calendarFix(err error) string {
	switch {
	case errors.Is(err, calendar.ErrAuth):
		return "check [accounts.calendar] username and password_cmd/password_env/password_keyring (an app password for iCloud or Fastmail)"
	case errors.Is(err, calendar.ErrNoCalendar):
		return "point [accounts.calendar] url at a calendar collection, or create a calendar on the server"
	case errors.Is(err, config.ErrNoSecret):
		return "make the calendar's password source yield the password"
	case strings.Contains(err.Error(), "calendar: event "):
		return "fix or remove that event in your calendar; until then no slots are offered"
	}
	return "check [accounts.calendar] url and that the server is reachable from this machine"
}
