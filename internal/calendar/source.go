package calendar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/emersion/go-ical"
	"github.com/emersion/go-webdav"
	"github.com/emersion/go-webdav/caldav"
)

// MaxResponseBytes caps one response (a CalDAV multistatus or an .ics feed).
const MaxResponseBytes = 16 << 20

// ErrAuth is wrapped when the server refuses the login (HTTP 401 or 403).
var ErrAuth = errors.New("the calendar server refused the login")

// ErrNoCalendar is wrapped when a CalDAV URL leads to no event calendar.
var ErrNoCalendar = errors.New("no calendar with events found")

// Credentials return the Authorization header value for a request ("" for
// none). They are asked once per fetch, so a token command runs each time.
type Credentials func(ctx context.Context) (string, error)

// Basic returns credentials for HTTP Basic authentication.
func Basic(user string, password func(ctx context.Context) (string, error)) Credentials {
	return func(ctx context.Context) (string, error) {
		pw, err := password(ctx)
		if err != nil {
			return "", err
		}
		req := http.Request{Header: http.Header{}}
		req.SetBasicAuth(user, pw)
		return req.Header.Get("Authorization"), nil
	}
}

// Bearer returns credentials for an OAuth2 bearer token.
func Bearer(token func(ctx context.Context) (string, error)) Credentials {
	return func(ctx context.Context) (string, error) {
		t, err := token(ctx)
		if err != nil {
			return "", err
		}
		return "Bearer " + t, nil
	}
}

// Source reads the owner's calendars.
type Source struct {
	// URL is a CalDAV calendar, home set or principal (or server root), or
	// an .ics URL or file path when ICS is true.
	URL  string
	ICS  bool
	Auth Credentials // nil: no login
	// Client is the HTTP client (nil: a client with a 30s timeout).
	Client *http.Client
	// SkipUID, when set, leaves the events with this UID out of Busy: an
	// invitation's own copy on the calendar is no conflict with it.
	SkipUID string
}

// Calendars names the calendars the source reads (for doctor).
func (s *Source) Calendars(ctx context.Context) ([]string, error) {
	if s.ICS {
		cals, err := s.fetchICS(ctx)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, c := range cals {
			n += len(c.Events())
		}
		return []string{fmt.Sprintf("%s (%d events)", redactURL(s.URL), n)}, nil
	}
	cl, t, err := s.caldav(ctx)
	if err != nil {
		return nil, err
	}
	cals, err := s.findCalendars(ctx, cl, t)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range cals {
		name := c.Name
		if name == "" {
			name = c.Path
		}
		names = append(names, name)
	}
	return names, nil
}

// Busy returns the merged busy intervals of every calendar inside window.
func (s *Source) Busy(ctx context.Context, window Interval, loc *time.Location) ([]Interval, error) {
	var cals []*ical.Calendar
	if s.ICS {
		var err error
		if cals, err = s.fetchICS(ctx); err != nil {
			return nil, err
		}
	} else {
		cl, t, err := s.caldav(ctx)
		if err != nil {
			return nil, err
		}
		list, err := s.findCalendars(ctx, cl, t)
		if err != nil {
			return nil, err
		}
		for _, c := range list {
			objs, err := cl.QueryCalendar(ctx, c.Path, &caldav.CalendarQuery{
				CompRequest: caldav.CalendarCompRequest{Name: ical.CompCalendar, AllProps: true, AllComps: true},
				CompFilter: caldav.CompFilter{Name: ical.CompCalendar, Comps: []caldav.CompFilter{{
					Name: ical.CompEvent, Start: window.Start.UTC(), End: window.End.UTC(),
				}}},
			})
			if err != nil {
				return nil, t.wrap(fmt.Errorf("calendar: query %s: %w", c.Path, err))
			}
			for _, o := range objs {
				cals = append(cals, o.Data)
			}
		}
	}
	return Busy(withoutUID(cals, s.SkipUID), window, loc)
}

// transport adds the Authorization header, caps response bodies and
// remembers a refused login.
type transport struct {
	base   http.RoundTripper
	auth   string
	denied atomic.Bool
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if t.auth != "" {
		req.Header.Set("Authorization", t.auth)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		t.denied.Store(true)
	}
	resp.Body = capped{Reader: io.LimitReader(resp.Body, MaxResponseBytes), Closer: resp.Body}
	return resp, nil
}

type capped struct {
	io.Reader
	io.Closer
}

func (t *transport) wrap(err error) error {
	if err != nil && t.denied.Load() {
		return fmt.Errorf("%w: %w", ErrAuth, err)
	}
	return err
}

func (s *Source) httpClient(ctx context.Context) (*http.Client, *transport, error) {
	base := http.DefaultTransport
	timeout := 30 * time.Second
	if s.Client != nil {
		if s.Client.Transport != nil {
			base = s.Client.Transport
		}
		if s.Client.Timeout > 0 {
			timeout = s.Client.Timeout
		}
	}
	t := &transport{base: base}
	if s.Auth != nil {
		a, err := s.Auth(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("calendar: credentials: %w", err)
		}
		t.auth = a
	}
	return &http.Client{Transport: t, Timeout: timeout}, t, nil
}

func (s *Source) caldav(ctx context.Context) (*caldav.Client, *transport, error) {
	hc, t, err := s.httpClient(ctx)
	if err != nil {
		return nil, nil, err
	}
	cl, err := caldav.NewClient(webdav.HTTPClient(hc), s.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("calendar: %s: %w", redactURL(s.URL), err)
	}
	return cl, t, nil
}

// findCalendars returns the event calendars at URL: URL itself when it is
// a calendar, those in it when it is a home set, else those in the
// current user's principal's home set.
func (s *Source) findCalendars(ctx context.Context, cl *caldav.Client, t *transport) ([]caldav.Calendar, error) {
	u, err := url.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("calendar: url: %w", err)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	cals, err := cl.FindCalendars(ctx, path)
	if err != nil {
		return nil, t.wrap(fmt.Errorf("calendar: %s: %w", redactURL(s.URL), err))
	}
	for _, c := range cals {
		if strings.TrimSuffix(c.Path, "/") == strings.TrimSuffix(path, "/") {
			return eventCalendars([]caldav.Calendar{c}), nil
		}
	}
	if ev := eventCalendars(cals); len(ev) > 0 {
		return ev, nil
	}
	principal, err := cl.FindCurrentUserPrincipal(ctx)
	if err != nil {
		return nil, t.wrap(fmt.Errorf("calendar: %s: find principal: %w", redactURL(s.URL), err))
	}
	home, err := cl.FindCalendarHomeSet(ctx, principal)
	if err != nil {
		return nil, t.wrap(fmt.Errorf("calendar: %s: find calendar home: %w", redactURL(s.URL), err))
	}
	if cals, err = cl.FindCalendars(ctx, home); err != nil {
		return nil, t.wrap(fmt.Errorf("calendar: %s: list calendars: %w", redactURL(s.URL), err))
	}
	if ev := eventCalendars(cals); len(ev) > 0 {
		return ev, nil
	}
	return nil, fmt.Errorf("calendar: %s: %w (fix: point url at a calendar, or create one)", redactURL(s.URL), ErrNoCalendar)
}

func eventCalendars(cals []caldav.Calendar) []caldav.Calendar {
	var out []caldav.Calendar
	for _, c := range cals {
		if len(c.SupportedComponentSet) == 0 {
			out = append(out, c)
			continue
		}
		for _, comp := range c.SupportedComponentSet {
			if strings.EqualFold(comp, ical.CompEvent) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// fetchICS reads an .ics file or URL; it may hold several VCALENDARs.
func (s *Source) fetchICS(ctx context.Context) ([]*ical.Calendar, error) {
	var data []byte
	if path, ok := strings.CutPrefix(s.URL, "file://"); ok || !strings.Contains(s.URL, "://") {
		if !ok {
			path = s.URL
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("calendar: %w", err)
		}
		defer func() { _ = f.Close() }() // read only: nothing to flush
		if data, err = io.ReadAll(io.LimitReader(f, MaxResponseBytes+1)); err != nil {
			return nil, fmt.Errorf("calendar: read %s: %w", path, err)
		}
	} else {
		hc, t, err := s.httpClient(ctx)
		if err != nil {
			return nil, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
		if err != nil {
			return nil, fmt.Errorf("calendar: %s: %w", redactURL(s.URL), err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("calendar: %w", redactErr(err, s.URL))
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, t.wrap(fmt.Errorf("calendar: GET %s: HTTP %s", redactURL(s.URL), resp.Status))
		}
		if data, err = io.ReadAll(resp.Body); err != nil {
			return nil, fmt.Errorf("calendar: GET %s: %w", redactURL(s.URL), redactErr(err, s.URL))
		}
	}
	if len(data) > MaxResponseBytes {
		return nil, fmt.Errorf("calendar: %s is larger than %d bytes", redactURL(s.URL), MaxResponseBytes)
	}
	cals, err := decodeAll(data) // imip.go: go-ical's panics become errors
	if err != nil {
		return nil, fmt.Errorf("calendar: %s: %w", redactURL(s.URL), err)
	}
	if len(cals) == 0 {
		return nil, fmt.Errorf("calendar: %s holds no VCALENDAR", redactURL(s.URL))
	}
	return cals, nil
}

// redactURL drops the query (feed URLs often carry a secret token there)
// and any user info.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.String()
}

// redactErr replaces the full URL in a net/http error with the redacted one.
func redactErr(err error, raw string) error {
	if err == nil || !strings.Contains(err.Error(), raw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), raw, redactURL(raw)))
}
