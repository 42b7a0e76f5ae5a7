package actions

import (
	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/invite"
	"github.com/mailagent/mailagent/store"
)

// The names of the agent's queue contract a command (internal/cmd/queue)
// tells apart, given here so the command tier never imports agent.
var (
	// ErrNotActionable: the item is sent, rejected or resolved already.
	ErrNotActionable = agent.ErrNotActionable
	// ErrOrganizerUnverified: an invitation's organizer is not the
	// authenticated sender (or on its domain); rsvp refuses.
	ErrOrganizerUnverified = invite.ErrOrganizerUnverified
)

// IsRSVPAnswer reports whether answer (lower case) is one rsvp takes:
// accept, decline or tentative.
func IsRSVPAnswer(answer string) bool { _, ok := invite.RSVPAnswers[answer]; return ok }

// DraftCopyFailure is why the copy of q's text in the Drafts folder was
// not updated, or "" when it was (agent.DraftCopyFailure).
func DraftCopyFailure(q *store.QueueItem) string { return agent.DraftCopyFailure(q) }
