package daemon

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/memimap"
)

// TestFinishOutlivesAStop: a watcher stopped just after it decided a
// message still marks it done in the mailbox and takes its claim off
// (finishOwn runs on a context the stop does not cancel). In CI the stop
// cut Finish off between its STOREs and left the claim beside the done
// keyword. The positive control is the same Finish on the stop's own
// context: nothing is marked and the claim stays. A message such a stop
// left half-finished (done keyword and claim) is mended by the next
// finish: the claim comes off.
func TestFinishOutlivesAStop(t *testing.T) {
	t.Parallel()
	srv, _ := startIMAP(t, memimap.Options{Mailboxes: []string{"Sent"}})
	appendMany(t, srv, "INBOX", []appendMsg{{raw: sentMail(1), date: time.Now()}, {raw: sentMail(2), date: time.Now()}, {raw: sentMail(3), date: time.Now()}})
	r := &sentRig{srv: srv, dial: func(ctx context.Context) (*imapsync.Client, error) {
		return imapsync.Dial(ctx, imapsync.Options{Host: srv.Host, Port: srv.Port, Security: imapsync.SecurityInsecure,
			Username: testUser, Password: testPass, Account: "personal"})
	}}
	d := r.daemon(t, nil, nil)
	const me = "stopped"
	d.Claims.Holder = me
	c, err := r.dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Select(context.Background(), "INBOX", false); err != nil {
		t.Fatal(err)
	}
	ac := d.claims("personal")
	ac.claimer = &imapsync.Claimer{Holder: me, Lease: time.Minute}
	// Both messages claimed by this watcher, as Claim leaves them.
	if err := c.StoreFlags(context.Background(), []uint32{1, 2, 3}, true, []string{imapsync.ClaimKeyword(me)}); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreFlags(context.Background(), []uint32{3}, true, []string{imapsync.DoneKeyword(me)}); err != nil {
		t.Fatal(err)
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	marks := func(uid uint32) (claimed, done bool) {
		t.Helper()
		fl, err := c.Flags(context.Background(), []uint32{uid})
		if err != nil {
			t.Fatal(err)
		}
		claimed = slices.ContainsFunc(fl[uid], func(f string) bool { return strings.EqualFold(f, imapsync.ClaimKeyword(me)) })
		done = slices.ContainsFunc(fl[uid], func(f string) bool { return strings.EqualFold(f, imapsync.DoneKeyword(me)) })
		return claimed, done
	}

	d.finishOwn(stopped, Account{Name: "personal", Mailbox: "INBOX"}, c, 0, []uint32{1})
	if claimed, done := marks(1); claimed || !done {
		t.Errorf("after a stop: claim %v, done %v; want the claim off and the done keyword on", claimed, done)
	}

	// Control: the stop's own context reaches Finish.
	if err := ac.claimer.Finish(stopped, c, []uint32{2}); err == nil {
		t.Error("control: Finish on a cancelled context succeeded")
	}
	if claimed, done := marks(2); !claimed || done {
		t.Errorf("control: claim %v, done %v; want the claim left and no done keyword", claimed, done)
	}

	// Half-finished by an earlier stop: mended.
	d.finishOwn(context.Background(), Account{Name: "personal", Mailbox: "INBOX"}, c, 0, []uint32{3})
	if claimed, done := marks(3); claimed || !done {
		t.Errorf("half-finished: claim %v, done %v after the next finish; want the claim off and the done keyword on", claimed, done)
	}
}
