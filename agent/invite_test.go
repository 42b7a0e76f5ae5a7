package agent

import (
	"testing"

	"github.com/mailagent/mailagent/store"
)

// TestInvitationDecision: an invitation is never auto-sent, archived or
// ignored; needs_review stays as it is.
func TestInvitationDecision(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		DecisionAutoSend: DecisionQueue, DecisionQueue: DecisionQueue, DecisionNotify: DecisionNotify,
		DecisionArchive: DecisionNotify, DecisionIgnore: DecisionNotify, DecisionNeedsReview: DecisionNeedsReview,
	} {
		rec := &store.MessageRecord{Decision: in, Invitation: &store.Invitation{Method: "REQUEST"}}
		invitationDecision(rec)
		if rec.Decision != want {
			t.Errorf("%s → %s, want %s", in, rec.Decision, want)
		}
		plain := &store.MessageRecord{Decision: in}
		invitationDecision(plain)
		if plain.Decision != in {
			t.Errorf("without an invitation %s became %s", in, plain.Decision)
		}
	}
}
