package calendar

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/emersion/go-ical"
)

// ErrReadOnly is returned by PutEvent for a source that cannot be written
// (an .ics feed or file).
var ErrReadOnly = errors.New("calendar is read-only")

// ErrPrecondition is wrapped when the server refused a conditional write
// (HTTP 412): the event was created, changed or deleted by another client
// since mailagent last saw it. Nothing was overwritten; the write must
// not be retried blindly but shown to the owner.
var ErrPrecondition = errors.New("the event was changed on the calendar by another client since mailagent wrote it (HTTP 412 Precondition Failed): not overwritten")

// ErrEventGone is wrapped by DeleteEvent when the event is no longer on
// the calendar (HTTP 404 or 410): someone removed it already.
var ErrEventGone = errors.New("the event is no longer on the calendar")

// ErrNotOurs is returned by DeleteEvent for a path that is not the
// resource PutEvent names for the UID: mailagent deletes only what it
// wrote.
var ErrNotOurs = errors.New("not an event mailagent wrote")

// Stored is where PutEvent stored an event and the entity tag the server
// gave that version: what a later update or delete must name (If-Match).
type Stored struct {
	Path string // the resource's path on the server
	ETag string // as the server sent it, quotes included; "" when unknown
}

// PutEvent stores one event's calendar data (as written by
// Invitation.Accepted or TentativeEvent) in the first event calendar of a
// CalDAV source, under a resource name derived from the UID, so that a
// second RSVP to the same invitation replaces the first instead of adding
// a copy. It is the only write any Source makes besides DeleteEvent, and
// only after the owner asked for it.
//
// The write is conditional, so that a change another client made is
// never overwritten: with etag "" it creates (If-None-Match: *) and fails
// when the resource exists; with an etag it replaces exactly that version
// (If-Match). A refusal wraps ErrPrecondition.
func (s *Source) PutEvent(ctx context.Context, uid string, data []byte, etag string) (Stored, error) {
	if s.ICS {
		return Stored{}, fmt.Errorf("calendar: %s: %w", redactURL(s.URL), ErrReadOnly)
	}
	cal, err := decodeICS(data)
	if err != nil {
		return Stored{}, err
	}
	var body bytes.Buffer
	if err := ical.NewEncoder(&body).Encode(cal); err != nil {
		return Stored{}, fmt.Errorf("calendar: encode %s: %w", uid, err)
	}
	cl, t, err := s.caldav(ctx)
	if err != nil {
		return Stored{}, err
	}
	list, err := s.findCalendars(ctx, cl, t)
	if err != nil {
		return Stored{}, err
	}
	p := strings.TrimSuffix(list[0].Path, "/") + "/" + ResourceName(uid)
	hdr := http.Header{"Content-Type": {ical.MIMEType + "; charset=utf-8"}}
	if etag == "" {
		hdr.Set("If-None-Match", "*")
	} else {
		hdr.Set("If-Match", quoteETag(etag))
	}
	resp, err := s.conditional(ctx, http.MethodPut, p, hdr, body.Bytes())
	if err != nil {
		return Stored{}, err
	}
	st := Stored{Path: p, ETag: resp.Header.Get("ETag")}
	if st.ETag == "" {
		// RFC 4791 5.3.4: a server that changed the data on the way in
		// sends no ETag; the version it stored is read back for it.
		if obj, gerr := cl.GetCalendarObject(ctx, p); gerr == nil && obj.ETag != "" {
			st.ETag = quoteETag(obj.ETag)
		}
	}
	return st, nil
}

// DeleteEvent removes the event PutEvent stored for uid at path, only in
// the version etag names (If-Match): an event another client changed
// since is left alone (ErrPrecondition), one already gone wraps
// ErrEventGone. A path that is not ResourceName(uid), or an empty etag,
// is refused (ErrNotOurs) before any request: mailagent deletes nothing
// it did not write.
func (s *Source) DeleteEvent(ctx context.Context, uid, p, etag string) error {
	if s.ICS {
		return fmt.Errorf("calendar: %s: %w", redactURL(s.URL), ErrReadOnly)
	}
	if uid == "" || path.Base(p) != ResourceName(uid) || strings.Contains(p, "..") {
		return fmt.Errorf("calendar: delete %q: %w", p, ErrNotOurs)
	}
	if etag == "" {
		return fmt.Errorf("calendar: delete %s: %w (no entity tag was recorded, so a change by another client could not be told apart)", p, ErrNotOurs)
	}
	_, err := s.conditional(ctx, http.MethodDelete, p, http.Header{"If-Match": {quoteETag(etag)}}, nil)
	return err
}

// conditional sends one PUT or DELETE with its precondition headers.
//
// go-webdav (v0.6) cannot send If-Match or If-None-Match (its
// PutCalendarObject has a TODO for it, and it has no delete for calendar
// objects with a precondition), so these two requests are made here by
// hand, on the same authenticated, response-capped http.Client the
// go-webdav client uses; everything else stays with go-webdav.
func (s *Source) conditional(ctx context.Context, method, p string, hdr http.Header, body []byte) (*http.Response, error) {
	base, err := url.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("calendar: url: %w", err)
	}
	target := base.ResolveReference(&url.URL{Path: p})
	hc, t, err := s.httpClient(ctx)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, target.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("calendar: %s %s: %w", method, p, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calendar: %s %s: %w", method, p, redactErr(err, target.String()))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // drained for connection reuse; the status decides
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp, nil
	case resp.StatusCode == http.StatusPreconditionFailed && method == http.MethodDelete && s.gone(ctx, hc, target.String()):
		// RFC 9110 13.1.1: If-Match fails on a resource that does not
		// exist too; a delete of one already gone is no conflict.
		return nil, fmt.Errorf("calendar: %s %s: %w", method, p, ErrEventGone)
	case resp.StatusCode == http.StatusPreconditionFailed:
		return nil, fmt.Errorf("calendar: %s %s: %w", method, p, ErrPrecondition)
	case method == http.MethodDelete && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone):
		return nil, fmt.Errorf("calendar: %s %s: %w", method, p, ErrEventGone)
	}
	return nil, t.wrap(fmt.Errorf("calendar: %s %s: HTTP %s", method, p, resp.Status))
}

// gone reports whether the resource at target no longer exists (a HEAD
// answered 404 or 410).
func (s *Source) gone(ctx context.Context, hc *http.Client, target string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, target, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close() // HEAD: no body to read
	return resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone
}

// quoteETag returns etag as an entity-tag header value: as it is when it
// is already quoted (or weak), else quoted (go-webdav unquotes them).
func quoteETag(etag string) string {
	if strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, `W/"`) {
		return etag
	}
	return strconv.Quote(etag)
}

// ResourceName is the CalDAV resource name of the event with uid: a hash,
// so that no UID (slashes, dots, "..") can name another path.
func ResourceName(uid string) string {
	h := sha256.Sum256([]byte(uid))
	return "mailagent-" + hex.EncodeToString(h[:12]) + ".ics"
}

// GetEvent reads the event PutEvent stores for uid (its resource in the
// first event calendar of a CalDAV source), with the entity tag of the
// version read: what a change to it names (PutEvent's etag), so that a
// change another client makes meanwhile is never overwritten. An event
// that is not there wraps ErrEventGone.
func (s *Source) GetEvent(ctx context.Context, uid string) ([]byte, Stored, error) {
	if s.ICS {
		return nil, Stored{}, fmt.Errorf("calendar: %s: %w", redactURL(s.URL), ErrReadOnly)
	}
	cl, t, err := s.caldav(ctx)
	if err != nil {
		return nil, Stored{}, err
	}
	list, err := s.findCalendars(ctx, cl, t)
	if err != nil {
		return nil, Stored{}, err
	}
	p := strings.TrimSuffix(list[0].Path, "/") + "/" + ResourceName(uid)
	hc, t, err := s.httpClient(ctx)
	if err != nil {
		return nil, Stored{}, err
	}
	base, err := url.Parse(s.URL)
	if err != nil {
		return nil, Stored{}, fmt.Errorf("calendar: url: %w", err)
	}
	target := base.ResolveReference(&url.URL{Path: p})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return nil, Stored{}, fmt.Errorf("calendar: GET %s: %w", p, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, Stored{}, fmt.Errorf("calendar: GET %s: %w", p, redactErr(err, target.String()))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, Stored{}, fmt.Errorf("calendar: GET %s: %w", p, ErrEventGone)
	case resp.StatusCode != http.StatusOK:
		return nil, Stored{}, t.wrap(fmt.Errorf("calendar: GET %s: HTTP %s", p, resp.Status))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxICSBytes+1))
	if err != nil {
		return nil, Stored{}, fmt.Errorf("calendar: GET %s: %w", p, redactErr(err, target.String()))
	}
	if len(data) > MaxICSBytes {
		return nil, Stored{}, fmt.Errorf("calendar: GET %s: event larger than %d bytes", p, MaxICSBytes)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		return nil, Stored{}, fmt.Errorf("calendar: GET %s: the server sent no entity tag, so a change could not be made safely (If-Match)", p)
	}
	return data, Stored{Path: p, ETag: etag}, nil
}
