package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCalendarFreeRadicaleE2E puts the fixture events (another time zone,
// a weekly meeting with an EXDATE and a moved instance, an all-day event,
// a transparent and a cancelled one, a DST change inside the window) on a
// real Radicale CalDAV server and checks `calendar free --json` against
// the hand-computed slots. It needs the e2e stack (source DIR/env, which
// sets MAILAGENT_E2E_CALDAV_URL when radicale is installed); else it skips.
func TestCalendarFreeRadicaleE2E(t *testing.T) {
	base := os.Getenv("MAILAGENT_E2E_CALDAV_URL")
	if base == "" {
		t.Skip("no Radicale: run scripts/e2e-stack.sh start DIR (with the radicale package) and source DIR/env")
	}
	user, pass := os.Getenv("MAILAGENT_E2E_CALDAV_USER"), os.Getenv("MAILAGENT_E2E_CALDAV_PASSWORD")
	calName := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	calURL := fmt.Sprintf("%s%s/%s/", base, user, calName)
	do := func(method, url, ctype, body string, want ...int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pass)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		resp.Body.Close()
		for _, w := range want {
			if resp.StatusCode == w {
				return
			}
		}
		t.Fatalf("%s %s: HTTP %s", method, url, resp.Status)
	}
	do("MKCALENDAR", calURL, "", "", http.StatusCreated)
	t.Cleanup(func() { do("DELETE", calURL, "", "", http.StatusOK, http.StatusNoContent) })
	for name, body := range calObjects {
		do("PUT", calURL+name, "text/calendar; charset=utf-8", vcal(body), http.StatusCreated, http.StatusNoContent)
	}

	t.Setenv("MA_TEST_CALDAV_PASS", pass)
	login := fmt.Sprintf("  username = %q\n  password_env = \"MA_TEST_CALDAV_PASS\"", user)
	cfg := calConfig(t, fmt.Sprintf("  url = %q\n%s", calURL, login))
	out, stderr, code := runAt(t, cfg, calNow, "calendar", "free", "--days", calDays, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var slots []map[string]string
	if err := json.Unmarshal([]byte(out), &slots); err != nil {
		t.Fatalf("not a JSON list: %v\n%s", err, out)
	}
	if got, want := compactJSON(out), compactJSON(calWant); got != want {
		t.Errorf("calendar free --json from Radicale\n got %s\nwant %s", got, want)
	}

	// The server root: principal → calendar home → calendars.
	root := calConfig(t, fmt.Sprintf("  url = %q\n%s", base, login))
	out, _, _ = runAt(t, root, calNow, "doctor", "--no-model", "--json")
	var checks []map[string]any
	if err := json.Unmarshal([]byte(out), &checks); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	var found bool
	for _, c := range checks {
		if c["check"] == "calendar.source" {
			found = c["status"] == "pass" && strings.Contains(c["detail"].(string), calName)
			if !found {
				t.Errorf("calendar.source from the server root: %v", c)
			}
		}
	}
	if !found {
		t.Errorf("doctor ran no calendar.source check:\n%s", out)
	}

	// A wrong password: exit 3, the password not echoed.
	t.Setenv("MA_TEST_CALDAV_PASS", "not-the-password")
	_, stderr, code = runAt(t, cfg, calNow, "calendar", "free")
	if code != ExitUnreachable || !strings.Contains(stderr, "refused the login") || strings.Contains(stderr, "not-the-password") {
		t.Errorf("wrong password: exit %d, stderr %q; want %d and a refused login", code, stderr, ExitUnreachable)
	}
}
