package store

import "time"

// AGE, in every listing (queue list, the review, decisions, follow-ups),
// counts from when the mail was written: its Date header, as every mail
// client shows it, or, when the message has none, from when mailagent
// first stored it. These two functions are its one home.

// Written is when the item's message was written (MessageDate), or when
// the item was created when that is unknown.
func (q *QueueItem) Written() time.Time {
	if !q.MessageDate.IsZero() {
		return q.MessageDate
	}
	return q.CreatedAt
}

// Written is when the message was written (its Date), or when mailagent
// first stored it when it has no readable Date.
func (r *MessageRecord) Written() time.Time {
	if !r.Date.IsZero() {
		return r.Date
	}
	return r.CreatedAt
}
