package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/app/api/apitest"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/store"
)

// otherWatcher is a second watcher of the World's account, on the same
// server (imapmemserver: no CONDSTORE), reduced to its election and its
// done keywords.
type otherWatcher struct {
	c  *imapsync.Client
	el *imapsync.Election
	cl *imapsync.Claimer
}

func newOther(t *testing.T, w *apitest.World) *otherWatcher {
	t.Helper()
	c, err := w.Daemon.Accounts[0].Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cl := &imapsync.Claimer{Holder: "otherwatcher", Lease: 10 * time.Minute}
	return &otherWatcher{c: c, cl: cl, el: &imapsync.Election{Claimer: cl}}
}

func (o *otherWatcher) hold(t *testing.T) {
	t.Helper()
	info, err := o.el.Hold(context.Background(), o.c)
	if err != nil || !info.Mine {
		t.Fatalf("the other watcher's election: %+v, %v; want it to hold the lease", info, err)
	}
}

func (o *otherWatcher) finish(t *testing.T, uid uint32) {
	t.Helper()
	ctx := context.Background()
	if _, err := o.c.Select(ctx, "INBOX", false); err != nil {
		t.Fatal(err)
	}
	if err := o.cl.Finish(ctx, o.c, []uint32{uid}); err != nil {
		t.Fatal(err)
	}
}

func record(t *testing.T, w *apitest.World, uid uint32) *store.MessageRecord {
	t.Helper()
	k := w.UIDs["erin"]
	k.UID = uid
	rec, err := w.Store.GetMessage(k)
	if err != nil {
		return nil
	}
	return rec
}

// TestClaimsWithoutCondstore: two watchers of one account on a server
// without CONDSTORE (imapmemserver). While the other watcher holds the
// account's lease this one acts on nothing: a new message stays
// unrecorded and unread by the model, and the status says why and who
// holds the lease. Once the other marks it decided, it is recorded here
// as handled elsewhere, naming that watcher. When the other dies (its
// lease runs out) this watcher takes over and acts. Positive control: the
// same with claims off acts while the other holds the lease.
func TestClaimsWithoutCondstore(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	d := w.Daemon
	d.Claims.Auto = false // claims "on": an election without CONDSTORE
	other := newOther(t, w)
	other.hold(t)

	// modelSaw counts the model calls about a message, by its body.
	modelSaw := func(body string) int {
		n := 0
		for _, r := range w.Gemini.Requests() {
			if strings.Contains(r.UserText(), body) {
				n++
			}
		}
		return n
	}
	uid := w.Append("INBOX", apitest.Mail(apitest.Erin, "Dinner", "erin-claim-1@example.org", "Dinner on Friday?"))
	runOnce(t, w)
	if rec := record(t, w, uid); rec != nil {
		t.Fatalf("a message while another watcher holds the lease: recorded %s/%s, want left alone", rec.State, rec.Decision)
	}
	if n := modelSaw("Dinner on Friday?"); n != 0 {
		t.Errorf("model calls while passive: %d, want 0", n)
	}
	st := d.Statuses()[0]
	if st.ClaimMode != daemon.ClaimModePassive || !strings.Contains(st.ClaimNote, "otherwatcher") || !strings.Contains(st.ClaimNote, "CONDSTORE") || st.HeldElsewhere != 1 {
		t.Errorf("status while passive: mode %q, note %q, held %d; want passive, naming otherwatcher and CONDSTORE, 1 held", st.ClaimMode, st.ClaimNote, st.HeldElsewhere)
	}

	// The other watcher decides it: recorded here as handled elsewhere.
	other.finish(t, uid)
	runOnce(t, w)
	rec := record(t, w, uid)
	if rec == nil || rec.State != store.StateDone || rec.Decision != daemon.DecisionHandledElsewhere || !strings.Contains(strings.Join(rec.Reasons, " "), "otherwatcher") || rec.MessageID == "" {
		t.Fatalf("a message the other watcher decided: got %+v, want done, handled_elsewhere, naming otherwatcher, with its Message-ID", rec)
	}
	if cp := checkpoint(t, w, "INBOX"); cp.LastUID < uid {
		t.Errorf("checkpoint %d, want past %d", cp.LastUID, uid)
	}
	if n := modelSaw("Dinner on Friday?"); n != 0 {
		t.Errorf("model calls for a message handled elsewhere: %d, want 0", n)
	}
	if st := d.Statuses()[0]; st.HandledElsewhere != 1 {
		t.Errorf("status: handled elsewhere %d, want 1", st.HandledElsewhere)
	}

	// The other watcher dies: an hour later its lease has run out, this
	// one takes over, acts on the new message and marks it decided. A
	// forged claim keyword APPENDed with a message (a live claim by a
	// watcher that does not exist, and an expired one) does not keep the
	// elected watcher off it.
	later := func() time.Time { return time.Now().Add(time.Hour) }
	d.Now = later
	attacks := map[uint32]string{}
	for i, kw := range []string{imapsync.ClaimKeyword("evil"), "$MAClaim_evil_32503680000"} {
		u, err := w.IMAP.Append(context.Background(), apitest.Owner, "INBOX",
			apitest.Mail(apitest.Erin, "Forged claim", fmt.Sprintf("erin-forged-%d@example.org", i), "Lunch?"), []imap.Flag{imap.Flag(kw)}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		attacks[uint32(u)] = kw
	}
	taken := w.Append("INBOX", apitest.Mail(apitest.Erin, "Trip", "erin-claim-2@example.org", "Shall we plan the trip?"))
	runOnce(t, w)
	rec = record(t, w, taken)
	if rec == nil || !rec.State.Terminal() || rec.Decision == daemon.DecisionHandledElsewhere {
		t.Fatalf("after the other watcher's lease ran out: got %+v, want it processed here", rec)
	}
	through := 0
	for u, kw := range attacks {
		if r := record(t, w, u); r == nil || !r.State.Terminal() || r.Decision == daemon.DecisionHandledElsewhere {
			through++
			t.Errorf("a message APPENDed with %s: got %+v, want processed by the elected watcher", kw, r)
		}
	}
	t.Logf("forged claim keywords: %d tried, %d through", len(attacks), through)
	msgs, err := w.IMAP.Messages(context.Background(), apitest.Owner, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	holder := d.Statuses()[0].ClaimHolder
	for _, m := range msgs {
		// Keywords are case-insensitive (imapmemserver keeps them lower-case).
		if uint32(m.UID) == taken && !slices.ContainsFunc(m.Flags, func(f imap.Flag) bool { return strings.EqualFold(string(f), imapsync.DoneKeyword(holder)) }) {
			t.Errorf("the message taken over: flags %v, want %s", m.Flags, imapsync.DoneKeyword(holder))
		}
	}

	// Positive control: claims off, this watcher acts although the other
	// holds the lease.
	d.Now = nil
	other.hold(t)
	d.Claims.Off = true
	ctl := w.Append("INBOX", apitest.Mail(apitest.Erin, "Control", "erin-claim-3@example.org", "Tea?"))
	runOnce(t, w)
	if rec := record(t, w, ctl); rec == nil || rec.Decision == daemon.DecisionHandledElsewhere {
		t.Errorf("positive control: with claims off the message should be processed while the other holds the lease, got %+v", rec)
	}
}

// TestHolderIDStable: the watcher's id is kept beside the state database
// and survives a restart; with the file gone (the state lost) the same
// directory on the same host gets the same id again; a damaged file is
// an error, not a new id.
func TestHolderIDStable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := daemon.HolderID(dir)
	if err != nil || !imapsync.ValidHolder(a) {
		t.Fatalf("HolderID: %q, %v", a, err)
	}
	if b, err := daemon.HolderID(dir); err != nil || b != a {
		t.Fatalf("HolderID again: %q, %v; want %q", b, err, a)
	}
	other, _ := daemon.HolderID(t.TempDir())
	if other == a {
		t.Errorf("two state directories share the id %q", a)
	}
	if err := os.Remove(filepath.Join(dir, "claim-holder")); err != nil {
		t.Fatal(err)
	}
	if b, err := daemon.HolderID(dir); err != nil || b != a {
		t.Errorf("HolderID after the file was lost: %q, %v; want %q again", b, err, a)
	}
	if err := os.WriteFile(filepath.Join(dir, "claim-holder"), []byte("NOT AN ID\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := daemon.HolderID(dir); err == nil {
		t.Errorf("HolderID of a damaged file: %q, nil; want an error", b)
	}
}

// TestClaimsAutoWithoutCondstore: with claims on "auto" (the default) a
// server without CONDSTORE gets no election: the watcher acts on new mail
// as if alone, writes no claim or done keyword and creates no lease
// folder, and its status says why. The control is claims "on" on the same
// server: the watcher holds an election (the lease folder appears).
func TestClaimsAutoWithoutCondstore(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t) // claims "auto", as by default
	d := w.Daemon
	uid := w.Append("INBOX", apitest.Mail(apitest.Erin, "Tea", "erin-auto-1@example.org", "Tea on Sunday?"))
	runOnce(t, w)
	if rec := record(t, w, uid); rec == nil || !rec.State.Terminal() || rec.Decision == daemon.DecisionHandledElsewhere {
		t.Fatalf("with claims auto and no CONDSTORE: got %+v, want the message handled here", rec)
	}
	st := d.Statuses()[0]
	if st.ClaimMode != daemon.ClaimModeOff || !strings.Contains(st.ClaimNote, "CONDSTORE") || !strings.Contains(st.ClaimNote, `sync.claims = "on"`) {
		t.Errorf("status: mode %q, note %q; want off, naming CONDSTORE and the setting", st.ClaimMode, st.ClaimNote)
	}
	lease := func() bool { // the lease folder exists
		_, err := w.IMAP.Messages(context.Background(), apitest.Owner, imapsync.LeaseFolderName)
		return err == nil
	}
	msgs, err := w.IMAP.Messages(context.Background(), apitest.Owner, "INBOX")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		for _, f := range m.Flags {
			if k := strings.ToLower(string(f)); strings.HasPrefix(k, strings.ToLower(imapsync.ClaimKeywordPrefix)) || strings.HasPrefix(k, strings.ToLower(imapsync.DoneKeywordPrefix)) {
				t.Errorf("message %d carries %s; want no claim keywords with claims auto and no CONDSTORE", m.UID, f)
			}
		}
	}
	if lease() {
		t.Errorf("a lease folder was created with claims auto")
	}
	// Control: claims on, the same server: an election, so a lease folder.
	d.Claims.Auto = false
	w.Append("INBOX", apitest.Mail(apitest.Erin, "Cake", "erin-auto-2@example.org", "Cake?"))
	runOnce(t, w)
	if !lease() {
		t.Errorf("control: claims on without CONDSTORE made no lease folder")
	}
}

// TestOwnWorkResumedAfterTakeover: this watcher decided a message and
// acted on it (here: sent the reply), and was cut off before the record
// was done and before its done keyword was set. Another watcher took the
// claim over meanwhile and marked the message done. The next sync resumes
// this watcher's own record (done, with its decision and its reply) and
// sends nothing again; it is not overwritten as "handled elsewhere",
// which would hide the reply this watcher sent (the storm's
// TestTwoWatchersOneReply found it). The control is a message cut off
// before it was decided here (this watcher had done nothing yet): the
// other watcher's done keyword makes it handled elsewhere.
func TestOwnWorkResumedAfterTakeover(t *testing.T) {
	t.Parallel()
	w := apitest.NewWorld(t)
	d := w.Daemon
	d.Claims.Auto = false // claims "on": an election, which this watcher wins
	ctx := context.Background()
	other := newOther(t, w)

	// cutOff makes uid look as a SIGKILL in state leaves it: its record
	// in that state, the checkpoint before it, no done keyword of this
	// watcher; then the other watcher marks it done.
	cutOff := func(uid uint32, state store.State) {
		t.Helper()
		k := w.UIDs["erin"]
		k.UID = uid
		rec, err := w.Store.GetMessage(k)
		if err != nil {
			t.Fatal(err)
		}
		rec.State = state
		if err := w.Store.PutMessage(rec); err != nil {
			t.Fatal(err)
		}
		cp := checkpoint(t, w, "INBOX")
		cp.LastUID = uid - 1
		if err := w.Store.SetCheckpoint(apitest.Account, "INBOX", cp); err != nil {
			t.Fatal(err)
		}
		if _, err := other.c.Select(ctx, "INBOX", false); err != nil {
			t.Fatal(err)
		}
		if err := other.c.StoreFlags(ctx, []uint32{uid}, false, []string{imapsync.DoneKeyword(d.Statuses()[0].ClaimHolder)}); err != nil {
			t.Fatal(err)
		}
		other.finish(t, uid)
	}

	uid := w.Append("INBOX", apitest.Mail(apitest.Erin, "Dinner", "erin-resume-1@example.org", "Dinner on Friday?"))
	runOnce(t, w)
	first := record(t, w, uid)
	if first == nil || first.State != store.StateDone || first.Decision == daemon.DecisionHandledElsewhere {
		t.Fatalf("the first run: %s, want it handled here", describe(first))
	}
	sent := len(w.SMTP.Messages())
	cutOff(uid, store.StateActed)
	runOnce(t, w)
	if rec := record(t, w, uid); rec == nil || rec.State != store.StateDone || rec.Decision != first.Decision {
		t.Errorf("this watcher's own cut-off record after the other marked it done: %s, want done/%s as decided here", describe(rec), first.Decision)
	}
	if n := len(w.SMTP.Messages()); n != sent {
		t.Errorf("messages sent on resuming: %d, want none", n-sent)
	}

	// Control: cut off before deciding, the message is the other
	// watcher's.
	ctl := w.Append("INBOX", apitest.Mail(apitest.Erin, "Lunch", "erin-resume-2@example.org", "Lunch on Monday?"))
	runOnce(t, w)
	cutOff(ctl, store.StateClassified)
	runOnce(t, w)
	if rec := record(t, w, ctl); rec == nil || rec.Decision != daemon.DecisionHandledElsewhere {
		t.Errorf("control: a message cut off before it was decided, which the other watcher marked done: %s, want handled elsewhere", describe(rec))
	}
}

// describe names a record's state and decision (or its absence).
func describe(rec *store.MessageRecord) string {
	if rec == nil {
		return "no record"
	}
	return fmt.Sprintf("%s/%s", rec.State, rec.Decision)
}
