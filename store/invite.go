package store

import "time"

// Invitation is a calendar invitation (iMIP, RFC 6047) read from a
// message by code: what the queue shows and what an RSVP answers. Text
// fields were cleaned of control characters when read; they are still
// the sender's words.
type Invitation struct {
	Method       string    `json:"method"` // REQUEST | CANCEL | COUNTER | …
	UID          string    `json:"uid"`
	Sequence     int       `json:"sequence"`
	RecurrenceID string    `json:"recurrence_id"`
	Summary      string    `json:"summary"`
	Location     string    `json:"location"`
	Organizer    string    `json:"organizer"` // address from the mailto: URI, "" when none
	OrganizerCN  string    `json:"organizer_cn"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	AllDay       bool      `json:"all_day"`
	TZID         string    `json:"tzid"`
	Recurring    bool      `json:"recurring"`
	// OrganizerVerified: the organizer is the sender the owner's server
	// authenticated (or on that sender's domain). Only then does an RSVP
	// send a REPLY to it.
	OrganizerVerified bool   `json:"organizer_verified"`
	OrganizerNote     string `json:"organizer_note"` // why it is not verified
	// Conflicts are the owner's busy times that overlap the invitation,
	// computed by code from the calendar; ConflictError says why they
	// could not be (no calendar, unreachable, recurrence too dense).
	Conflicts     []TimeSpan `json:"conflicts"`
	ConflictError string     `json:"conflict_error"`
	// ICS is the calendar part as received (capped): what the REPLY and
	// the calendar copy are built from.
	ICS string `json:"ics"`
	// RSVP is the owner's answer (ACCEPTED, DECLINED, TENTATIVE) once
	// given; CalendarPath is where the event was stored, CalendarError
	// why it was not.
	RSVP          string `json:"rsvp"`
	CalendarPath  string `json:"calendar_path"`
	CalendarError string `json:"calendar_error"`
	// CalendarETag is the entity tag of the version mailagent wrote at
	// CalendarPath: an update or delete names it (If-Match), so a change
	// another client made is never overwritten. Exactly one item holds it
	// for an event: a later answer that rewrote the event takes it over.
	CalendarETag string `json:"calendar_etag,omitempty"`
	// Status is "" while the invitation stands, InvitationCancelled once
	// its authenticated organizer cancelled it (METHOD:CANCEL),
	// InvitationSuperseded once a later REQUEST from them replaced it, and
	// InvitationUIDConflict when its UID names another organizer's event;
	// StatusNote says by which message and what mailagent did about it.
	Status     string `json:"status,omitempty"`
	StatusNote string `json:"status_note,omitempty"`
	// Applied is, on a CANCEL or an update, what code did with the
	// invitation it names (or why it did nothing).
	Applied string `json:"applied,omitempty"`
	// Occurrences are, on a CANCEL or REQUEST of single occurrences of a
	// recurring event (RECURRENCE-ID), what each asked for and what code
	// did with it on the series on the owner's calendar.
	Occurrences []OccurrenceChange `json:"occurrences,omitempty"`
}

// OccurrenceChange is one occurrence a message cancelled or moved.
type OccurrenceChange struct {
	Kind         string    `json:"kind"` // cancelled | cancelled_from | changed
	RecurrenceID string    `json:"recurrence_id"`
	Start        time.Time `json:"start"` // the occurrence's original start; zero when it matched none
	AllDay       bool      `json:"all_day"`
	NewStart     time.Time `json:"new_start"` // a moved occurrence's new times
	NewEnd       time.Time `json:"new_end"`
	Applied      bool      `json:"applied"` // the series on the calendar now says so
	Note         string    `json:"note"`    // why not, or "already so"
	// Text is the change in words, as queue show and the TUI print it.
	Text string `json:"text"`
}

// Invitation statuses.
const (
	InvitationCancelled  = "cancelled"
	InvitationSuperseded = "superseded"
	// InvitationUIDConflict: the owner answered, but the invitation's UID
	// names an event mailagent wrote for another correspondent's
	// invitation; that event was left alone and this answer was not
	// written to the calendar (StatusNote says whose).
	InvitationUIDConflict = "uid_conflict"
)

// TimeSpan is a half-open time range.
type TimeSpan struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}
