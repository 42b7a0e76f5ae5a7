package calendar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/internal/calendar/caldavtest"
)

func testEvent(t *testing.T, uid, summary string) []byte {
	t.Helper()
	start := time.Date(2026, 4, 1, 10, 0, 0, 0, time.UTC)
	data, err := TentativeEvent(NewEvent{UID: uid, Summary: summary, Organizer: "ada@example.com", Attendee: "bob@example.org",
		Start: start, End: start.Add(time.Hour), Stamp: start.Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConditionalWrites: against a CalDAV fake that keeps preconditions,
// a create sends If-None-Match: * and an update or delete If-Match with
// the stored ETag; whatever another client did in between is never
// overwritten or deleted: each such write is a 412 that wraps
// ErrPrecondition, and the other client's data is still there.
func TestConditionalWrites(t *testing.T) {
	t.Parallel()
	f := caldavtest.New(t)
	src := &Source{URL: f.URL + "/cal/"}
	ctx := context.Background()
	const uid = "meet-1@example.org"
	path := "/cal/" + ResourceName(uid)

	st, err := src.PutEvent(ctx, uid, testEvent(t, uid, "Kickoff"), "")
	if err != nil || st.Path != path || st.ETag == "" {
		t.Fatalf("create: %+v, %v", st, err)
	}
	// A second create of the same UID (a retry after a crash, or another
	// client's event under that name) is refused, not overwritten.
	if _, err := src.PutEvent(ctx, uid, testEvent(t, uid, "Kickoff again"), ""); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("second create: %v, want ErrPrecondition", err)
	}
	// An update names the version it replaces.
	st2, err := src.PutEvent(ctx, uid, testEvent(t, uid, "Kickoff v2"), st.ETag)
	if err != nil || st2.ETag == "" || st2.ETag == st.ETag {
		t.Fatalf("update: %+v, %v", st2, err)
	}
	// Another client changes it; the stale update and delete are refused.
	f.Touch(path, "OTHER CLIENT")
	if _, err := src.PutEvent(ctx, uid, testEvent(t, uid, "Kickoff v3"), st2.ETag); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("stale update: %v, want ErrPrecondition", err)
	}
	if err := src.DeleteEvent(ctx, uid, path, st2.ETag); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("stale delete: %v, want ErrPrecondition", err)
	}
	if o, ok := f.Get(path); !ok || o.Data != "OTHER CLIENT" {
		t.Fatalf("the other client's change was overwritten: %+v %v", o, ok)
	}
	// With the current ETag the delete goes through; a second is ErrEventGone.
	o, _ := f.Get(path)
	if err := src.DeleteEvent(ctx, uid, path, o.ETag); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, ok := f.Get(path); ok {
		t.Fatal("the event is still there")
	}
	if err := src.DeleteEvent(ctx, uid, path, o.ETag); !errors.Is(err, ErrEventGone) {
		t.Fatalf("delete of a gone event: %v, want ErrEventGone", err)
	}

	want := []string{
		"PUT " + path + " If-Match= If-None-Match=* 201",
		"PUT " + path + " If-Match= If-None-Match=* 412",
		"PUT " + path + " If-Match=" + st.ETag + " If-None-Match= 204",
		"PUT " + path + " If-Match=" + st2.ETag + " If-None-Match= 412",
		"DELETE " + path + " If-Match=" + st2.ETag + " If-None-Match= 412",
		"DELETE " + path + " If-Match=" + o.ETag + " If-None-Match= 204",
		"DELETE " + path + " If-Match=" + o.ETag + " If-None-Match= 412", // RFC 9110: If-Match on no current representation
	}
	got := f.Writes()
	if len(got) != len(want) {
		t.Fatalf("writes:\n%v\nwant\n%s", got, strings.Join(want, "\n"))
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("write %d: %s, want %s", i, got[i], want[i])
		}
	}
}

// TestDeleteOnlyWhatWeWrote: DeleteEvent refuses, before any request, a
// path that is not the resource PutEvent names for the UID (another
// event, a traversal, a hostile UID) and a delete without an ETag.
func TestDeleteOnlyWhatWeWrote(t *testing.T) {
	t.Parallel()
	f := caldavtest.New(t)
	src := &Source{URL: f.URL + "/cal/"}
	ctx := context.Background()
	const uid = "meet-1@example.org"
	f.Touch("/cal/owners-own.ics", "THE OWNER'S EVENT")
	f.Touch("/cal/"+ResourceName(uid), "X")
	for _, c := range []struct{ uid, path, etag string }{
		{uid, "/cal/owners-own.ics", `"other1"`},
		{uid, "/cal/" + ResourceName("other@example.org"), `"x"`},
		{uid, "/cal/../cal/" + ResourceName(uid), `"x"`},
		{"", "/cal/" + ResourceName(""), `"x"`},
		{uid, "/cal/" + ResourceName(uid), ""},
		{"../owners-own.ics\r\nX: y\x00", "/cal/owners-own.ics", `"other1"`},
	} {
		if err := src.DeleteEvent(ctx, c.uid, c.path, c.etag); !errors.Is(err, ErrNotOurs) {
			t.Errorf("delete uid %q path %q etag %q: %v, want ErrNotOurs", c.uid, c.path, c.etag, err)
		}
	}
	if w := f.Writes(); len(w) != 0 {
		t.Errorf("requests were made: %v", w)
	}
	if o, ok := f.Get("/cal/owners-own.ics"); !ok || o.Data != "THE OWNER'S EVENT" {
		t.Error("the owner's event was touched")
	}
}

// TestPutEventNoETag: a server that answers a PUT without an ETag (it
// changed the data on the way in) has the stored version's ETag read
// back, so that a later update or delete can still name it.
func TestPutEventNoETag(t *testing.T) {
	t.Parallel()
	f := caldavtest.New(t)
	f.OmitETag()
	src := &Source{URL: f.URL + "/cal/"}
	st, err := src.PutEvent(context.Background(), "u@x", testEvent(t, "u@x", "S"), "")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := f.Get(st.Path); st.ETag == "" || st.ETag != o.ETag {
		t.Errorf("ETag %q, server has %q", st.ETag, o.ETag)
	}
}

// TestConditionalWritesRadicale runs the same sequence against a real
// Radicale (scripts/e2e-radicale.sh; source DIR/env), which keeps
// If-Match and If-None-Match itself. It skips without one.
func TestConditionalWritesRadicale(t *testing.T) {
	t.Parallel()
	base := os.Getenv("MAILAGENT_E2E_CALDAV_URL")
	if base == "" {
		t.Skip("no Radicale: run scripts/e2e-stack.sh start DIR (with the radicale package) and source DIR/env")
	}
	user, pass := os.Getenv("MAILAGENT_E2E_CALDAV_USER"), os.Getenv("MAILAGENT_E2E_CALDAV_PASSWORD")
	calURL := fmt.Sprintf("%s%s/cond-%d/", base, user, time.Now().UnixNano())
	raw := func(method, url, ifMatch, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pass)
		if ifMatch != "" {
			req.Header.Set("If-Match", ifMatch)
		}
		if body != "" {
			req.Header.Set("Content-Type", "text/calendar; charset=utf-8")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("ETag")
	}
	if code, _ := raw("MKCALENDAR", calURL, "", ""); code != http.StatusCreated {
		t.Fatalf("MKCALENDAR: %d", code)
	}
	t.Cleanup(func() { raw("DELETE", calURL, "", "") })
	src := &Source{URL: calURL, Auth: Basic(user, func(context.Context) (string, error) { return pass, nil })}
	ctx := context.Background()
	const uid = "radicale-cond@example.org"
	st, err := src.PutEvent(ctx, uid, testEvent(t, uid, "Kickoff"), "")
	if err != nil || st.ETag == "" {
		t.Fatalf("create: %+v, %v", st, err)
	}
	if _, err := src.PutEvent(ctx, uid, testEvent(t, uid, "Again"), ""); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("second create: %v, want ErrPrecondition", err)
	}
	st2, err := src.PutEvent(ctx, uid, testEvent(t, uid, "Kickoff v2"), st.ETag)
	if err != nil || st2.ETag == st.ETag {
		t.Fatalf("update: %+v, %v", st2, err)
	}
	// Another client (a plain PUT, as a calendar app makes) changes it.
	u := strings.TrimSuffix(base, "/") + st.Path
	if code, _ := raw("PUT", u, st2.ETag, string(testEvent(t, uid, "Moved by the owner's phone"))); code/100 != 2 {
		t.Fatalf("other client's PUT: %d", code)
	}
	if _, err := src.PutEvent(ctx, uid, testEvent(t, uid, "Kickoff v3"), st2.ETag); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("stale update: %v, want ErrPrecondition", err)
	}
	if err := src.DeleteEvent(ctx, uid, st.Path, st2.ETag); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("stale delete: %v, want ErrPrecondition", err)
	}
	code, cur := raw("GET", u, "", "")
	if code != http.StatusOK {
		t.Fatalf("the other client's event is gone: %d", code)
	}
	if err := src.DeleteEvent(ctx, uid, st.Path, cur); err != nil {
		t.Fatalf("delete with the current ETag: %v", err)
	}
	if code, _ := raw("GET", u, "", ""); code != http.StatusNotFound {
		t.Errorf("after delete: %d, want 404", code)
	}
	if err := src.DeleteEvent(ctx, uid, st.Path, cur); !errors.Is(err, ErrEventGone) {
		t.Errorf("second delete: %v, want ErrEventGone", err)
	}
}
