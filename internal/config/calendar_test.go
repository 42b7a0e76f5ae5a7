package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCalendarAndSchedulingDefaults(t *testing.T) {
	t.Setenv("MA_CAL_PW", "cal-secret")
	cfg, err := Parse([]byte(validTOML+`
  [accounts.calendar]
  url = "https://caldav.example.com/dav/"
  password_env = "MA_CAL_PW"
`), "", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Accounts[0].Calendar
	if !c.Configured() || c.Kind != CalendarCalDAV || c.Username != "ada@example.com" || c.Timeout.D() != 30*time.Second {
		t.Errorf("calendar defaults: %+v", c)
	}
	if pw, err := c.ResolvePassword(context.Background()); err != nil || pw.Reveal() != "cal-secret" {
		t.Errorf("ResolvePassword = %v, %v", pw, err)
	}
	if u := c.endpoint().KeyringUser(); u != "personal/calendar" {
		t.Errorf("keyring user = %q", u)
	}
	s := cfg.Scheduling
	from, to, err := s.Hours()
	if err != nil || from != 9*60 || to != 17*60+30 {
		t.Errorf("hours = %d, %d, %v", from, to, err)
	}
	days, err := s.Weekdays()
	if err != nil || days != [7]bool{false, true, true, true, true, true, false} {
		t.Errorf("days = %v, %v", days, err)
	}
	if s.MinNotice.D() != 4*time.Hour || s.SlotLength.D() != 30*time.Minute || s.Buffer.D() != 0 {
		t.Errorf("scheduling defaults: %+v", s)
	}
	// No calendar: nothing configured, nothing required.
	cfg, err = Parse([]byte(validTOML), "", 0o600)
	if err != nil || cfg.Accounts[0].Calendar.Configured() {
		t.Errorf("no calendar: %v, %+v", err, cfg.Accounts[0].Calendar)
	}
}

func TestSchedulingDays(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][7]bool{
		"sun-thu":      {true, true, true, true, true, false, false},
		"fri-mon":      {true, true, false, false, false, true, true},
		"Mon, Wed,fri": {false, true, false, true, false, true, false},
		"saturday":     {false, false, false, false, false, false, true},
	} {
		got, err := Scheduling{Days: in}.Weekdays()
		if err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestCalendarValidation(t *testing.T) {
	t.Parallel()
	ics := filepath.Join(t.TempDir(), "cal.ics")
	if err := os.WriteFile(ics, []byte("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, toml, key, fix string
	}{
		{"caldav without login", "  [accounts.calendar]\n  url = \"https://cal.example.com/\"\n", "accounts[0].calendar", "password_cmd"},
		{"two password sources", "  [accounts.calendar]\n  url = \"https://cal.example.com/\"\n  password_env = \"X\"\n  password_cmd = \"pass x\"\n", "accounts[0].calendar", "keep exactly one"},
		{"http with a password off loopback", "  [accounts.calendar]\n  url = \"http://cal.example.com/\"\n  password_env = \"X\"\n", "accounts[0].calendar.url", "https://"},
		{"user info in url", "  [accounts.calendar]\n  url = \"https://ada:pw@cal.example.com/\"\n  password_env = \"X\"\n", "accounts[0].calendar.url", "username and password_cmd"},
		{"not a url", "  [accounts.calendar]\n  url = \"ftp://cal.example.com/\"\n", "accounts[0].calendar.url", "CalDAV URL"},
		{"missing file", "  [accounts.calendar]\n  url = \"/nonexistent/x.ics\"\n", "accounts[0].calendar.url", ".ics file"},
		{"file as caldav", "  [accounts.calendar]\n  url = \"" + ics + "\"\n  kind = \"caldav\"\n", "accounts[0].calendar.url", `kind = "ics"`},
		{"bad kind", "  [accounts.calendar]\n  url = \"" + ics + "\"\n  kind = \"webcal\"\n", "accounts[0].calendar.kind", "caldav"},
		{"typo", "  [accounts.calendar]\n  url = \"" + ics + "\"\n  pasword_env = \"X\"\n", "accounts.calendar.pasword_env", `did you mean "password_env"`},
		{"bad timeout", "  [accounts.calendar]\n  url = \"" + ics + "\"\n  timeout = \"soon\"\n", "accounts[0].calendar.timeout", "with a unit"},
		{"bad zone", "[scheduling]\ntimezone = \"Europe/Atlantis\"\n", "scheduling.timezone", "IANA"},
		{"bad hours", "[scheduling]\nworking_hours = \"9-5\"\n", "scheduling.working_hours", "09:00-17:30"},
		{"hours backwards", "[scheduling]\nworking_hours = \"17:00-09:00\"\n", "scheduling.working_hours", "09:00-17:30"},
		{"bad days", "[scheduling]\ndays = \"weekdays\"\n", "scheduling.days", "mon-fri"},
		{"slot zero", "[scheduling]\nslot_length = \"0s\"\n", "scheduling.slot_length", "30m"},
		{"slot too long", "[scheduling]\nslot_length = \"24h\"\n", "scheduling.slot_length", "30m"},
		{"negative buffer", "[scheduling]\nbuffer = \"-5m\"\n", "scheduling.buffer", "positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(validTOML+tc.toml), "", 0o600)
			if err == nil {
				t.Fatal("no error")
			}
			var found bool
			for _, fe := range fieldErrors(t, err) {
				if fe.Key == tc.key && strings.Contains(fe.Fix, tc.fix) {
					found = true
				}
			}
			if !found {
				t.Errorf("want key %s with a fix mentioning %q, got: %v", tc.key, tc.fix, err)
			}
		})
	}
	// A file, and an .ics URL without a login, need nothing else.
	for _, u := range []string{ics, "https://example.com/feed/basic.ics?token=x"} {
		cfg, err := Parse([]byte(validTOML+"  [accounts.calendar]\n  url = \""+u+"\"\n"), "", 0o600)
		if err != nil || cfg.Accounts[0].Calendar.Kind != CalendarICS {
			t.Errorf("%s: %v, kind %q", u, err, cfg.Accounts[0].Calendar.Kind)
		}
	}
}
