package calendar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrReadOnly is returned by PutEvent for a source that cannot be written
// (an .ics feed or file).
var ErrReadOnly = errors.New("calendar is read-only")

// PutEvent stores one event's calendar data (as written by
// Invitation.Accepted) in the first event calendar of a CalDAV source,
// under a resource name derived from the UID, so that a second RSVP to
// the same invitation replaces the first instead of adding a copy. It is
// the only write any Source makes, and only after the owner asked for it.
func (s *Source) PutEvent(ctx context.Context, uid string, data []byte) (string, error) {
	if s.ICS {
		return "", fmt.Errorf("calendar: %s: %w", redactURL(s.URL), ErrReadOnly)
	}
	cal, err := decodeICS(data)
	if err != nil {
		return "", err
	}
	cl, t, err := s.caldav(ctx)
	if err != nil {
		return "", err
	}
	list, err := s.findCalendars(ctx, cl, t)
	if err != nil {
		return "", err
	}
	path := strings.TrimSuffix(list[0].Path, "/") + "/" + ResourceName(uid)
	if _, err := cl.PutCalendarObject(ctx, path, cal); err != nil {
		return "", t.wrap(fmt.Errorf("calendar: put %s: %w", path, err))
	}
	return path, nil
}

// ResourceName is the CalDAV resource name of the event with uid: a hash,
// so that no UID (slashes, dots, "..") can name another path.
func ResourceName(uid string) string {
	h := sha256.Sum256([]byte(uid))
	return "mailagent-" + hex.EncodeToString(h[:12]) + ".ics"
}
