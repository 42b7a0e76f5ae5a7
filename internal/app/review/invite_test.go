package review

import (
	"testing"

	"github.com/mailagent/mailagent/internal/calendar"
	"github.com/mailagent/mailagent/store"
)

// TestInvitationTitle: only a REQUEST can be answered; a CANCEL or
// COUNTER is shown in the detail but gets no keys.
func TestInvitationTitle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		inv  *store.Invitation
		want string
	}{
		{nil, ""},
		{&store.Invitation{Method: calendar.MethodRequest, Summary: "Sync"}, "Sync"},
		{&store.Invitation{Method: calendar.MethodRequest}, "(untitled event)"},
		{&store.Invitation{Method: "CANCEL", Summary: "Sync"}, ""},
		{&store.Invitation{Method: "COUNTER", Summary: "Sync"}, ""},
	} {
		if got := invitationTitle(tc.inv); got != tc.want {
			t.Errorf("invitationTitle(%+v) = %q, want %q", tc.inv, got, tc.want)
		}
	}
}
