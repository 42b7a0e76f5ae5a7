package storm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// TestClaimTakenOverAfterKill: watcher A, with claims at their default
// ("auto", so on: the stack's Dovecot has CONDSTORE), claims a new mail
// and is killed with SIGKILL while its model call hangs, and is never
// restarted. Watcher B, started after the kill, respects A's claim for
// its lease (10 s, from when B first saw the message) and then takes the
// message over and answers it: one reply, acted on by B, marked done by
// B, no claim left. The positive control is the same dead claim with B's
// claims off: B answers at once, well inside the lease it would otherwise
// respect (a minute there, so that a loaded machine's slow start cannot
// be mistaken for a wait).
func TestClaimTakenOverAfterKill(t *testing.T) {
	s := e2e.Require(t)
	_, auth := e2e.RequireSenderAuth(t)
	if binary == "" {
		t.Fatal("the mailagent binary was not built (TestMain)")
	}
	t.Parallel()
	const lease, ctlLease = 10 * time.Second, time.Minute
	tag := newTag()
	box := stormFolder(t, s, "storm-"+tag)
	sent := stormFolder(t, s, "storm-"+tag+"-Sent") // agent.sentBox
	dir := stormDir(t, "ma-takeover-")
	reply := func(hang bool) func(*geminitest.Request) geminitest.Reply {
		return func(req *geminitest.Request) geminitest.Reply {
			if !isClassify(req) {
				return draftReply("Thursday works.")
			}
			rep := lowRisk()
			if hang {
				rep.Delay = 2 * time.Minute // A holds its claim here until it is killed
			}
			return rep
		}
	}
	newAgent := func(name, claims string, lease time.Duration, model *geminitest.Server) *agent {
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		a := &agent{t: t, s: s, dir: sub, stateDir: filepath.Join(sub, "state"), cfgPath: filepath.Join(sub, "config.toml"),
			syncExtra: fmt.Sprintf("claim_lease = %q\n%s", lease, claims), mailbox: box, sentBox: sent}
		a.writeConfig(model.URL, s.SMTPPort, s.CAFile)
		t.Cleanup(a.dumpOnFailure)
		return a
	}
	appendRaw(t, s, e2e.Owner, sent, fmt.Appendf(nil, "From: %s <%s>\r\nTo: %s\r\nSubject: Catching up %s\r\nDate: %s\r\nMessage-ID: <earlier.bob.%s>\r\n\r\nGood to see you.\r\n",
		ownerName, e2e.Owner, e2e.Bob, tag, time.Now().Format(time.RFC1123Z), msgDomain(tag)), imap.FlagSeen)
	deliver := func(n int) string {
		id := fmt.Sprintf("takeover%d.%s", n, msgDomain(tag))
		raw := fmt.Appendf(nil, "From: %s\r\nTo: %s <%s>\r\nSubject: Slot %d [storm %s]\r\nDate: %s\r\nMessage-ID: <%s>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHi Ada,\r\ndoes Thursday work for you?\r\n",
			e2e.Bob, ownerName, e2e.Owner, n, tag, time.Now().Format(time.RFC1123Z), id)
		signed, err := auth.Sign(raw, e2e.LocalDomain)
		if err != nil {
			t.Fatal(err)
		}
		s.Deliver(t, e2e.Bob, []string{e2e.Sink}, signed)
		copyDelivered(t, s, s, e2e.Sink, box, []string{id})
		return id
	}
	flagsOf := func(id string) []string { return messageFlags(t, s, box, id) }
	// answered waits until bob has a reply to id and returns when it was
	// first seen, and how many replies there are.
	answered := func(id string, within time.Duration) (time.Time, int) {
		for end := time.Now().Add(within); ; time.Sleep(200 * time.Millisecond) {
			if n := len(repliesTo(t, s, []string{e2e.Bob}, tag)[id]); n > 0 {
				return time.Now(), n
			}
			if time.Now().After(end) {
				t.Fatalf("%s: no reply within %v; flags %v", id, within, flagsOf(id))
			}
		}
	}
	claimOf := func(holder string) string { return strings.ToLower(imapsync.ClaimKeyword(holder)) }
	has := func(flags []string, kw string) bool {
		for _, f := range flags {
			if strings.ToLower(f) == kw {
				return true
			}
		}
		return false
	}

	// A claims the mail and dies holding it.
	a := newAgent("a", "", lease, geminitest.NewServer(t, reply(true)))
	wa := a.start()
	wa.waitIdle()
	id := deliver(1)
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(a.stateDir, "claim-holder")); err == nil && has(flagsOf(id), claimOf(readHolder(t, a))) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("watcher A never claimed %s: flags %v", id, flagsOf(id))
		}
	}
	holderA := readHolder(t, a)
	wa.kill9()

	// B respects the dead claim for a lease, then takes the message over.
	b := newAgent("b", "", lease, geminitest.NewServer(t, reply(false)))
	wb := b.start()
	bStarted := time.Now()
	wb.waitIdle()
	holderB := readHolder(t, b)
	at, n := answered(id, 3*lease+30*time.Second)
	waited := at.Sub(bStarted)
	// The reply is out before B has recorded it and marked it done in
	// the mailbox: a stop now would test the stop, not the take-over
	// (TestFinishOutlivesAStop in daemon does that). Wait for B's done
	// keyword, bounded, then stop.
	fl := flagsOf(id)
	for end := time.Now().Add(30 * time.Second); !has(fl, strings.ToLower(imapsync.DoneKeyword(holderB))) && time.Now().Before(end); fl = flagsOf(id) {
		time.Sleep(200 * time.Millisecond)
	}
	wb.stop()
	fl = flagsOf(id)
	t.Logf("takeover: B answered %v after it started (lease %v); replies %d; flags %v", waited.Round(100*time.Millisecond), lease, n, fl)
	if waited < lease {
		t.Errorf("B answered %v after it started, inside A's lease (%v): the dead claim was not respected", waited, lease)
	}
	if n != 1 {
		t.Errorf("%d replies to %s, want 1", n, id)
	}
	if !has(fl, strings.ToLower(imapsync.DoneKeyword(holderB))) || has(fl, claimOf(holderA)) || has(fl, claimOf(holderB)) {
		t.Errorf("flags after the take-over: %v; want B's done keyword and no claim", fl)
	}

	// Positive control: a dead claim (set as A's was) and a watcher with
	// claims off: answered at once, inside the lease.
	ctl := newAgent("ctl", `claims = "off"`, ctlLease, geminitest.NewServer(t, reply(false)))
	id2 := deliver(2)
	withIMAP(t, s, e2e.Owner, func(c *imapclient.Client) error {
		if _, err := c.Select(box, nil).Wait(); err != nil {
			return err
		}
		data, err := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: id2}}}, nil).Wait()
		if err != nil {
			return err
		}
		return c.Store(imap.UIDSetNum(data.AllUIDs()...), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.Flag(imapsync.ClaimKeyword(holderA))}}, nil).Close()
	})
	wc := ctl.start()
	cStarted := time.Now()
	at2, _ := answered(id2, ctlLease+30*time.Second)
	wc.stop()
	t.Logf("positive control, claims off: answered %v after start despite A's claim", at2.Sub(cStarted).Round(100*time.Millisecond))
	if at2.Sub(cStarted) >= ctlLease {
		t.Errorf("positive control: with claims off the claimed message was answered %v after start, want inside the lease (%v)", at2.Sub(cStarted), ctlLease)
	}
}

// readHolder is a watcher's claim id, from the file beside its database.
func readHolder(t *testing.T, a *agent) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(a.stateDir, "claim-holder"))
	if err != nil {
		t.Fatalf("claim holder: %v", err)
	}
	return strings.TrimSpace(string(b))
}
