package agent

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/store"
)

// TestThreadRecordsOnlyTheCorrespondents: a thread Bob is in is joined
// by a stranger authenticated as herself (by References or subject), by
// unauthenticated mail that says it is from Bob, and by the owner's mail
// to the stranger. A prompt about Bob's new message shows Bob's earlier
// mail and the owner's mail to Bob, and none of the others. The control:
// with the identity layer switched off (store.SwitchOffIdentityForTest,
// which threadRecords now reaches through store.MayResolve; it had its
// own copy of the rule before) every joiner lands in the prompt.
func TestThreadRecordsOnlyTheCorrespondents(t *testing.T) {
	p, st, _ := newTestPipeline(t, &recordingModel{}, "review")
	uid := uint32(0)
	put := func(from, route string, authenticated bool, to string) *store.MessageRecord {
		t.Helper()
		uid++
		r := &store.MessageRecord{
			MessageKey: store.MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: uid},
			MessageID:  fmt.Sprintf("m%d@example.org", uid), ThreadID: "thread-1", State: store.StateDone,
			From: mail.Address{Email: from}, To: []mail.Address{{Email: to}}, Route: route,
			SenderAuth: &store.SenderAuth{Authenticated: authenticated, Address: from},
		}
		if err := st.PutMessage(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := map[string]bool{}
	bobEarlier := put("bob@example.org", RouteExternal, true, "ada@example.com")
	ownerToBob := put("ada@example.com", RouteOwner, true, "bob@example.org")
	want[bobEarlier.MessageID], want[ownerToBob.MessageID] = true, true
	joiners := []*store.MessageRecord{
		put("mallory@evil.example", RouteExternal, true, "ada@example.com"), // a stranger, herself
		put("bob@example.org", RouteExternal, false, "ada@example.com"),     // says it is Bob
		put("ada@example.com", RouteOwner, true, "mallory@evil.example"),    // the owner's mail to the stranger
	}
	now := put("bob@example.org", RouteExternal, true, "ada@example.com")

	shown := func() map[string]bool {
		got := map[string]bool{}
		for _, r := range p.threadRecords(now, 0) {
			got[r.MessageID] = true
		}
		return got
	}
	got := shown()
	for id := range want {
		if !got[id] {
			t.Errorf("%s (Bob's, or the owner's to Bob) is not shown; got %v", id, got)
		}
	}
	tried, through := 0, 0
	for _, j := range joiners {
		tried++
		if got[j.MessageID] {
			through++
			t.Errorf("%s from %s (route %s, authenticated %v) is shown in a prompt about Bob", j.MessageID, j.From.Email, j.Route, j.SenderAuth.Authenticated)
		}
	}
	t.Logf("thread joiners: %d tried, %d shown", tried, through)

	restore := store.SwitchOffIdentityForTest()
	got = shown()
	restore()
	landed := slices.DeleteFunc(slices.Clone(joiners), func(j *store.MessageRecord) bool { return !got[j.MessageID] })
	if len(landed) != len(joiners) {
		t.Errorf("control: with the identity layer off %d of %d joiners shown, want all", len(landed), len(joiners))
	}
}
