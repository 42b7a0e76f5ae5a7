package store

import "time"

// SlotOffer is what code offered a scheduling draft: the owner's free
// slots from the calendar, the time zone and reference time they were
// read in, the meeting length, and the correspondent (the authenticated
// sender). It travels from the message to the queue item and the outbox
// record, so that the reply that goes out can be checked against exactly
// what was offered before an event is created.
type SlotOffer struct {
	Slots    []Span        `json:"slots"`
	TZ       string        `json:"tz"`
	Ref      time.Time     `json:"ref"`
	Length   time.Duration `json:"length"`
	Attendee string        `json:"attendee"`
}

// Span is one interval of time.
type Span struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}
