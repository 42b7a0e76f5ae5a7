package storm

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	maagent "github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/agent/outbox"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/daemon"
	"github.com/mailagent/mailagent/internal/llm/geminitest"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/internal/rig/testsize"
	"github.com/mailagent/mailagent/store"
)

const claimLease = "30s"

// The two-watcher storm's generated volume (testsize): 100 mails and 8
// SIGKILLs without -race, 24 mails and 8 SIGKILLs with it (every mail is
// handled by two race-built watchers there, on three servers at once).
// Every assertion is the same at both sizes; CI's run without -race has
// the full burst.
var (
	claimBurst = testsize.N(100, 24) // messages, every one auto-answerable
	claimKills = 8                   // SIGKILLs, each of one of the two watchers at random
)

// TestTwoWatchersOneReply is issue 29 end to end: two `mailagent watch`
// processes with sync.claims on, each with its own state directory,
// watch the same account while a burst of 100 auto-answerable,
// DKIM-authenticated mails arrives and one or the other is killed with
// SIGKILL at random points and restarted, eight times. Must hold, on the
// stack's Dovecot and on the Courier-style Dovecot (both with CONDSTORE:
// every message is claimed in the mailbox): every message is answered
// exactly once (one reply delivered to its sender, one copy in Sent, none
// to anyone else), acted on by exactly one watcher (one record that is not
// handled_elsewhere, done, with its outbox record appended), none lost;
// and both watchers report "claims" with different holders. Two outcomes
// are the product's by design: a watcher that takes over the claim of one
// cut off after replying finds the reply and records "already answered";
// a send a SIGKILL cut after DATA began is handed to the owner and never
// sent again, so its reply arrived once or (the kill came first) not at
// all. On the real
// Courier-IMAP, which has no CONDSTORE, the same holds with one watcher
// elected: its status says "elected", the other's "passive", naming
// CONDSTORE and the elected watcher.
func TestTwoWatchersOneReply(t *testing.T) {
	if testing.Short() {
		t.Skip("the two-watcher storm takes about two minutes")
	}
	s := e2e.Require(t)
	e2e.RequireSenderAuth(t)
	if binary == "" {
		t.Fatal("the mailagent binary was not built (TestMain)")
	}
	for _, tc := range []struct {
		name     string
		srv      func(t *testing.T) *e2e.Stack
		prefix   string // the server's personal namespace prefix
		sent     string // the Sent folder's name on the server
		election bool   // no CONDSTORE: one watcher acts
		control  bool   // the positive control: claims off
	}{
		{"dovecot", func(*testing.T) *e2e.Stack { return s }, "", "Sent", false, false},
		{"courier-style", func(t *testing.T) *e2e.Stack { return s.Courier(t) }, "INBOX.", "INBOX.Sent", false, false},
		// Positive control: the same two watchers with claims off (a
		// short burst, no kills) both act on every message.
		{"dovecot-claims-off", func(*testing.T) *e2e.Stack { return s }, "", "Sent", false, true},
		{"courier-imap", func(t *testing.T) *e2e.Stack {
			rc := s.RealCourier(t)
			rc.Exclusive(t)
			for _, box := range []string{"INBOX.Sent", "INBOX.Drafts"} {
				withIMAP(t, rc.Fixed, e2e.Owner, func(c *imapclient.Client) error {
					_ = c.Create(box, nil).Wait() // it may exist
					return nil
				})
			}
			return rc.Fixed
		}, "INBOX.", "INBOX.Sent", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			twoWatchers(t, s, tc.srv(t), tc.prefix, tc.sent, tc.election, tc.control)
		})
	}
}

// twoWatchers runs the storm on srv. The watchers watch a folder of their
// own (prefix + "storm-" + tag), never a shared INBOX: mail is delivered
// by Postfix to the sink on main, with its Authentication-Results, and
// APPENDed from there into the folder, so that no other test's watcher
// (which claims too, by default) ever sees, claims or decides it, and
// these never touch other tests' mail.
func twoWatchers(t *testing.T, main, srv *e2e.Stack, prefix, sentBox string, election, control bool) {
	burst, kills, claims := claimBurst, claimKills, true
	if control {
		burst, kills, claims = 20, 0, false
	}
	_, auth := e2e.RequireSenderAuth(t)
	tag := newTag()
	box := stormFolder(t, srv, prefix+"storm-"+tag)
	ownSent := ""
	if !election {
		// A Sent folder of the test's own (agent.sentBox); the real
		// Courier-IMAP, held exclusively, keeps its INBOX.Sent.
		ownSent = stormFolder(t, srv, prefix+"storm-"+tag+"-Sent")
		sentBox = ownSent
	}
	dir := stormDir(t, "ma-claim-")
	model := geminitest.NewServer(t, func(req *geminitest.Request) geminitest.Reply {
		if !strings.Contains(req.UserText(), "[storm "+tag+"]") {
			return cautious(req) // never expected: the folder holds this test's mail only
		}
		rep := draftReply("Thursday works.")
		if isClassify(req) {
			rep = lowRisk()
		}
		rep.Delay = 50 * time.Millisecond
		return rep
	})
	var agents [2]*agent
	for i := range agents {
		sub := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		a := &agent{t: t, s: srv, dir: sub, stateDir: filepath.Join(sub, "state"), cfgPath: filepath.Join(sub, "config.toml"),
			syncExtra: fmt.Sprintf("claims = %v\nclaim_lease = %q\n", claims, claimLease), mailbox: box, sentBox: ownSent}
		a.writeConfig(model.URL, main.SMTPPort, main.CAFile)
		t.Cleanup(a.dumpOnFailure)
		agents[i] = a
	}
	senders := []string{e2e.Bob, e2e.Carol}
	for _, u := range senders {
		appendRaw(t, srv, e2e.Owner, sentBox, []byte(fmt.Sprintf("From: %s <%s>\r\nTo: %s\r\nSubject: Catching up %s\r\nDate: %s\r\nMessage-ID: <earlier.%s.%s>\r\n\r\nGood to see you last week.\r\n",
			ownerName, e2e.Owner, u, tag, time.Now().Format(time.RFC1123Z), strings.Split(u, "@")[0], msgDomain(tag))), imap.FlagSeen)
	}
	var ws [2]*watcher
	for i, a := range agents {
		ws[i] = a.start()
	}
	for _, w := range ws {
		w.waitIdle()
	}

	// The burst, in slices, each followed by a SIGKILL of one watcher
	// picked at random (0.3–2 s later) and its immediate restart.
	ids := make([]string, burst)
	to := map[string]string{}
	started := time.Now()
	slices := max(kills, 1)
	for k := range slices {
		var slice []string
		for i := k * burst / slices; i < (k+1)*burst/slices; i++ {
			from := senders[i%len(senders)]
			id := fmt.Sprintf("claim%d.%s", i, msgDomain(tag))
			ids[i], to[id] = id, from
			raw := fmt.Appendf(nil, "From: %s\r\nTo: %s <%s>\r\nSubject: Slot %d [storm %s]\r\nDate: %s\r\nMessage-ID: <%s>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHi Ada,\r\ndoes Thursday work for you?\r\n",
				from, ownerName, e2e.Owner, i, tag, time.Now().Format(time.RFC1123Z), id)
			signed, err := auth.Sign(raw, e2e.LocalDomain)
			if err != nil {
				t.Fatal(err)
			}
			main.Deliver(t, from, []string{e2e.Sink}, signed)
			slice = append(slice, id)
		}
		// Postfix's copy, with its Authentication-Results, into the
		// watchers' folder.
		copyDelivered(t, main, srv, e2e.Sink, box, slice)
		if kills == 0 {
			continue
		}
		time.Sleep(time.Duration(300+mrand.IntN(1700)) * time.Millisecond)
		i := mrand.IntN(2)
		ws[i].kill9()
		ws[i] = agents[i].start()
	}
	t.Logf("burst: %d mails, %d SIGKILLs over %v", burst, kills, time.Since(started).Round(time.Millisecond))

	deadline := time.Now().Add(2 * time.Minute)
	for {
		replies := repliesTo(t, main, senders, tag)
		answered, cutUnsent := 0, 0
		var cuts map[string]bool
		for _, id := range ids {
			if len(replies[id]) > 0 {
				answered++
				continue
			}
			if cuts == nil {
				cuts = ambiguousSends(agents[:])
			}
			if cuts[mail.IDKey(id)] {
				cutUnsent++ // a SIGKILL during DATA: handed to the owner, below
			}
		}
		if answered+cutUnsent == burst || (control && time.Since(started) > time.Minute) {
			break
		}
		for i, w := range ws {
			if w.exited() {
				t.Fatalf("watcher %d exited (%v)", i, w.err)
			}
		}
		if time.Now().After(deadline) {
			for _, id := range ids {
				if len(replies[id]) > 0 {
					continue
				}
				t.Logf("unanswered %s: flags %v", id, messageFlags(t, srv, box, id))
			}
			for i, a := range agents {
				if st := a.status(); len(st.Accounts) == 1 {
					as := st.Accounts[0]
					t.Logf("watcher %d: mode %s, holder %s, held elsewhere %d, handled elsewhere %d, note %q, counts %v", i, as.ClaimMode, as.ClaimHolder, as.HeldElsewhere, as.HandledElsewhere, as.ClaimNote, st.Counts)
				}
			}
			t.Fatalf("%d of %d answered 2 minutes after the burst", answered, burst)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("all %d answered %v after the burst began", burst, time.Since(started).Round(time.Millisecond))

	// Both watchers claim, under different holders; without CONDSTORE one
	// is elected and the other says why it is passive. A watcher the last
	// SIGKILL restarted may not have finished its first sync when the
	// burst is answered (it has no claim mode yet): each is asked once it
	// is idle.
	for _, w := range ws {
		w.waitIdle()
	}
	holders := map[string]bool{}
	modes := map[string]string{} // mode → holder
	var passiveNote string
	for i, a := range agents {
		st := a.status()
		if len(st.Accounts) != 1 {
			t.Fatalf("watcher %d status: %+v, want one account", i, st.Accounts)
		}
		as := st.Accounts[0]
		holders[as.ClaimHolder] = true
		modes[as.ClaimMode] = as.ClaimHolder
		if as.ClaimMode == daemon.ClaimModePassive {
			passiveNote = as.ClaimNote
		}
		t.Logf("watcher %d: mode %s, holder %s, %d handled elsewhere since its last start, %d held elsewhere, note %q", i,
			as.ClaimMode, as.ClaimHolder, as.HandledElsewhere, as.HeldElsewhere, as.ClaimNote)
	}
	if len(holders) != 2 {
		t.Errorf("holders: %v, want two different ids", holders)
	}
	switch {
	case control:
	case !election && (len(modes) != 1 || modes[daemon.ClaimModeClaims] == ""):
		t.Errorf("claim modes: %v, want both %q", modes, daemon.ClaimModeClaims)
	case election && (len(modes) != 2 || modes[daemon.ClaimModeElected] == "" || modes[daemon.ClaimModePassive] == ""):
		t.Errorf("claim modes: %v, want one %q and one %q", modes, daemon.ClaimModeElected, daemon.ClaimModePassive)
	case election && (!strings.Contains(passiveNote, "CONDSTORE") || !strings.Contains(passiveNote, modes[daemon.ClaimModeElected])):
		t.Errorf("the passive watcher's status note %q, want it to name CONDSTORE and the elected watcher %s", passiveNote, modes[daemon.ClaimModeElected])
	}

	// A barrier through Postfix, then the final counts.
	barrier := "barrier." + msgDomain(tag)
	main.Deliver(t, "barrier@example.test", []string{e2e.Bob, e2e.Carol, e2e.Sink},
		fmt.Appendf(nil, "From: barrier@example.test\r\nTo: bob@example.test\r\nSubject: barrier %s\r\nMessage-ID: <%s>\r\n\r\nbarrier\r\n", tag, barrier))
	for _, u := range []string{e2e.Bob, e2e.Carol, e2e.Sink} {
		for end := time.Now().Add(time.Minute); len(headers(t, main, u, "INBOX", "Message-ID", barrier)) == 0; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("the barrier did not reach %s", u)
			}
		}
	}
	// Settle: each reply is filed in Sent before its record is done (but
	// one whose send a SIGKILL cut after DATA never is, see below): wait
	// until Sent holds them all, or has not changed for 20 s.
	var sentBy map[string]int
	for end, last, changed := time.Now().Add(2*time.Minute), -1, time.Now(); ; {
		sentBy = map[string]int{}
		for _, m := range headers(t, srv, e2e.Owner, sentBox, "Subject", "[storm "+tag+"]") {
			for _, id := range m.InReplyTo {
				sentBy[mail.IDKey(id)]++
			}
		}
		if len(sentBy) != last {
			last, changed = len(sentBy), time.Now()
		}
		if len(sentBy) >= burst || time.Now().After(end) || time.Since(changed) > 20*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	replies := repliesTo(t, main, []string{e2e.Bob, e2e.Carol, e2e.Sink}, tag)
	for _, w := range ws {
		w.stop()
	}

	// Both state databases: exactly one watcher acted on each message.
	type acted struct {
		rec    *store.MessageRecord
		outbox []store.OutboxRecord
	}
	byID := map[string][]acted{}
	elsewhere, checked := map[string]int{}, map[string]int{}
	for _, a := range agents {
		st, err := store.Open(filepath.Join(a.stateDir, "mailagent.db"), store.Options{Timeout: 5 * time.Second, ReadOnly: true})
		if err != nil {
			t.Fatalf("open the state database: %v", err)
		}
		outbox := map[string][]store.OutboxRecord{}
		if err := st.ListOutbox("", func(r *store.OutboxRecord) error {
			outbox[mail.IDKey(r.InReplyTo)] = append(outbox[mail.IDKey(r.InReplyTo)], *r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			recs, err := st.FindByMessageID(account, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Decision == daemon.DecisionHandledElsewhere {
					elsewhere[id]++
					continue
				}
				if foundAnswered(r) && len(outbox[mail.IDKey(id)]) == 0 {
					// It took over a claim whose holder was cut off after
					// replying, found the reply, and did nothing.
					checked[id]++
					continue
				}
				byID[id] = append(byID[id], acted{rec: r, outbox: outbox[mail.IDKey(id)]})
			}
		}
		_ = st.Close()
	}

	tried, lost, ambiguous, cutUnsent := 0, 0, 0, 0
	answeredTwice, actedTwice := map[string]bool{}, map[string]bool{}
	var bad []string
	for _, id := range ids {
		tried++
		acts := byID[id]
		// A SIGKILL after DATA began leaves the send ambiguous: the outbox
		// never sends it again nor files it in Sent, and hands it to the
		// owner (agent/outbox ErrAmbiguousSend). The reply was delivered
		// once, or (the kill came before the server took the message)
		// not at all.
		cut := len(acts) == 1 && len(acts[0].outbox) == 1 && acts[0].outbox[0].Status == store.OutboxFailed &&
			strings.Contains(acts[0].outbox[0].Error, outbox.ErrAmbiguousSend.Error())
		if cut {
			ambiguous++
		}
		switch n := len(replies[id]); {
		case n == 0 && cut:
			cutUnsent++
		case n == 0:
			lost++
			bad = append(bad, id+": no reply delivered")
		case n > 1:
			answeredTwice[id] = true
			bad = append(bad, fmt.Sprintf("%s: %d replies delivered (%v)", id, n, replies[id]))
		case !mail.SameAddr(replies[id][0], to[id]):
			bad = append(bad, fmt.Sprintf("%s: the reply reached %s, want %s", id, replies[id][0], to[id]))
		}
		if n := sentBy[mail.IDKey(id)]; n > 1 || (n == 0 && !cut) {
			bad = append(bad, fmt.Sprintf("%s: %d copies in Sent, want 1", id, n))
		}
		switch {
		case len(acts) == 0:
			bad = append(bad, id+": no watcher recorded acting on it")
		case len(acts) > 1:
			actedTwice[id] = true
			bad = append(bad, fmt.Sprintf("%s: %d watchers acted on it", id, len(acts)))
		default:
			r := acts[0]
			if r.rec.State != store.StateDone || len(r.outbox) != 1 || (r.outbox[0].Status != store.OutboxAppended && !cut) {
				line := fmt.Sprintf("%s: record %s/%s, %d outbox records (want done and one appended)", id, r.rec.State, r.rec.Decision, len(r.outbox))
				for _, ob := range r.outbox {
					line += fmt.Sprintf("; outbox %s %s attempts %d updated %s: %s", ob.ID, ob.Status, ob.Attempts, ob.UpdatedAt.Format(time.TimeOnly), ob.Error)
				}
				bad = append(bad, line)
			}
		}
		if elsewhere[id]+checked[id] > 1 {
			bad = append(bad, fmt.Sprintf("%s: %d handled_elsewhere and %d already-answered records", id, elsewhere[id], checked[id]))
		}
	}
	handled, found := 0, 0
	for _, n := range elsewhere {
		handled += n
	}
	for _, n := range checked {
		found += n
	}
	t.Logf("%d messages: %d answered twice, %d acted on by both watchers, %d lost; %d recorded as handled elsewhere by the other watcher, %d found already answered on taking a claim over; %d sends cut after DATA began by a SIGKILL (handed to the owner; %d of them never delivered)",
		tried, len(answeredTwice), len(actedTwice), lost, handled, found, ambiguous, cutUnsent)
	if control {
		// Both watchers ran each message through the model: one of them
		// acting on it, the other too or finding it answered (with no
		// kills, there is no takeover to explain the second).
		twice := 0
		for _, id := range ids {
			if len(byID[id])+checked[id] > 1 {
				twice++
			}
		}
		if twice == 0 && len(answeredTwice) == 0 {
			t.Errorf("positive control: with claims off every message was handled by one watcher, want some handled by both (%d problems: %v)", len(bad), bad)
		}
		t.Logf("positive control, claims off: of %d messages %d handled by both watchers (%d acted on by both), %d answered twice; first problems:\n%s",
			burst, twice, len(actedTwice), len(answeredTwice), strings.Join(bad[:min(len(bad), 6)], "\n"))
		return
	}
	if len(bad) > 0 {
		t.Errorf("%d problems, want 0:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// ambiguousSends asks the agents' running watchers for their outbox: the
// messages (by Message-ID key) whose reply a SIGKILL cut off after DATA
// began, which the outbox hands to the owner and never sends again. A
// watcher that does not answer (it is restarting) adds none.
func ambiguousSends(agents []*agent) map[string]bool {
	cuts := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, a := range agents {
		c, err := api.Dial(ctx, api.SocketPath(a.stateDir))
		if err != nil {
			continue
		}
		obs, err := c.Outbox(ctx, string(store.OutboxFailed))
		_ = c.Close()
		if err != nil {
			continue
		}
		for _, ob := range obs {
			if strings.Contains(ob.Error, outbox.ErrAmbiguousSend.Error()) {
				cuts[mail.IDKey(ob.InReplyTo)] = true
			}
		}
	}
	return cuts
}

// status asks the agent's running watcher for its status.
func (a *agent) status() api.Status {
	a.t.Helper()
	ctx := context.Background()
	c, err := api.Dial(ctx, api.SocketPath(a.stateDir))
	if err != nil {
		a.t.Fatalf("status: %v", err)
	}
	defer func() { _ = c.Close() }()
	st, err := c.Status(ctx)
	if err != nil {
		a.t.Fatalf("status: %v", err)
	}
	return st
}

// ---------------------------------------------------------------------------
// IMAP for the two-watcher test: the shared stack's Dovecot runs out of
// login processes when every engineer's tests connect at once (each TLS
// session holds one), so the test's own reads and writes go over
// plaintext on loopback (no login process kept) and dial again on failure.

// withIMAP runs f on a fresh session of user on s, trying again (with a
// new session) on failure for up to a minute.
func withIMAP(t *testing.T, s *e2e.Stack, user string, f func(c *imapclient.Client) error) {
	t.Helper()
	var last error
	end := time.Now().Add(time.Minute)
	// Plaintext first; a server that refuses it (Courier-IMAP may) is
	// asked over STARTTLS on every other try.
	for try := 0; time.Now().Before(end); try++ {
		if try > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		opts := &imapclient.Options{Dialer: &net.Dialer{Timeout: 10 * time.Second}}
		var c *imapclient.Client
		var err error
		if try%2 == 0 {
			c, err = imapclient.DialInsecure(s.IMAPAddr(), opts)
		} else {
			opts.TLSConfig = s.TLSConfig(t)
			c, err = imapclient.DialStartTLS(s.IMAPAddr(), opts)
		}
		if err != nil {
			last = err
			continue
		}
		err = c.Login(user, s.Password(t, user)).Wait()
		if err == nil {
			err = f(c)
		}
		_ = c.Logout().Wait()
		_ = c.Close()
		if err == nil {
			return
		}
		last = err
	}
	t.Fatalf("imap %s on %s: %v", user, s.IMAPAddr(), last)
}

// appendRaw appends raw to user's mailbox on s.
func appendRaw(t *testing.T, s *e2e.Stack, user, mailbox string, raw []byte, flags ...imap.Flag) {
	t.Helper()
	withIMAP(t, s, user, func(c *imapclient.Client) error {
		cmd := c.Append(mailbox, int64(len(raw)), &imap.AppendOptions{Flags: flags})
		if _, err := cmd.Write(raw); err != nil {
			_ = cmd.Close()
			return err
		}
		if err := cmd.Close(); err != nil {
			return err
		}
		_, err := cmd.Wait()
		return err
	})
}

// stormFolder creates the owner's folder name on srv for one test and
// deletes it when the test passes (a failed test's is kept to look at).
func stormFolder(t *testing.T, srv *e2e.Stack, name string) string {
	t.Helper()
	withIMAP(t, srv, e2e.Owner, func(c *imapclient.Client) error { return c.Create(name, nil).Wait() })
	t.Cleanup(func() {
		if !t.Failed() {
			withIMAP(t, srv, e2e.Owner, func(c *imapclient.Client) error { return c.Delete(name).Wait() })
		}
	})
	return name
}

// stormDir is a temporary directory of the test's own, short enough for
// the watchers' unix sockets, removed at its end.
func stormDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// messageFlags returns the flags of the owner's messages in box on srv
// with Message-ID id (none when there is no such message).
func messageFlags(t *testing.T, srv *e2e.Stack, box, id string) []string {
	t.Helper()
	var out []string
	withIMAP(t, srv, e2e.Owner, func(c *imapclient.Client) error {
		out = out[:0]
		if _, err := c.Select(box, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
			return err
		}
		data, err := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: id}}}, nil).Wait()
		if err != nil || len(data.AllUIDs()) == 0 {
			return err
		}
		msgs, err := c.Fetch(imap.UIDSetNum(data.AllUIDs()...), &imap.FetchOptions{UID: true, Flags: true}).Collect()
		for _, m := range msgs {
			for _, f := range m.Flags {
				out = append(out, string(f))
			}
		}
		return err
	})
	return out
}

// copyDelivered waits until each of ids has reached from's INBOX on main
// (Postfix delivered it, with its Authentication-Results) and appends
// those copies to the owner's folder box on srv.
func copyDelivered(t *testing.T, main, srv *e2e.Stack, from, box string, ids []string) {
	t.Helper()
	var raws [][]byte
	withIMAP(t, main, from, func(c *imapclient.Client) error {
		raws = raws[:0]
		if _, err := c.Select("INBOX", &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
			return err
		}
		for _, id := range ids {
			crit := &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: id}}}
			var uids []imap.UID
			for end := time.Now().Add(time.Minute); len(uids) == 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(end) {
					return fmt.Errorf("%s never reached %s", id, from)
				}
				if err := c.Noop().Wait(); err != nil {
					return err
				}
				data, err := c.UIDSearch(crit, nil).Wait()
				if err != nil {
					return err
				}
				uids = data.AllUIDs()
			}
			msgs, err := c.Fetch(imap.UIDSetNum(uids[0]), &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}}}).Collect()
			if err != nil || len(msgs) != 1 || len(msgs[0].BodySection) == 0 {
				return fmt.Errorf("fetch %s: %v", id, err)
			}
			raws = append(raws, msgs[0].BodySection[0].Bytes)
		}
		return nil
	})
	for _, raw := range raws {
		appendRaw(t, srv, e2e.Owner, box, raw)
	}
}

// headers returns the parsed headers of the messages in user's mailbox on
// s whose header field contains value.
func headers(t *testing.T, s *e2e.Stack, user, mailbox, field, value string) []*mail.Message {
	t.Helper()
	var out []*mail.Message
	withIMAP(t, s, user, func(c *imapclient.Client) error {
		out = out[:0]
		if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
			return err
		}
		data, err := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: field, Value: value}}}, nil).Wait()
		if err != nil {
			return err
		}
		uids := data.AllUIDs()
		if len(uids) == 0 {
			return nil
		}
		msgs, err := c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
			UID: true, BodySection: []*imap.FetchItemBodySection{{Specifier: imap.PartSpecifierHeader, Peek: true}},
		}).Collect()
		if err != nil {
			return err
		}
		for _, m := range msgs {
			for _, b := range m.BodySection {
				out = append(out, mail.Parse(b.Bytes))
			}
		}
		return nil
	})
	return out
}

// repliesTo maps each Message-ID the replies with tag in their Subject
// answer (In-Reply-To) to the users they reached, once per copy.
func repliesTo(t *testing.T, s *e2e.Stack, users []string, tag string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, u := range users {
		for _, m := range headers(t, s, u, "INBOX", "Subject", "[storm "+tag+"]") {
			if !strings.HasPrefix(m.Subject, "Re:") {
				continue
			}
			for _, id := range m.InReplyTo {
				out[id] = append(out[id], u)
			}
		}
	}
	return out
}

// foundAnswered reports whether rec records a message its watcher found
// already answered (agent.Pipeline's check of Sent, \Answered and the
// outbox) and so left alone.
func foundAnswered(rec *store.MessageRecord) bool {
	return rec.State == store.StateDone && rec.Decision == maagent.DecisionIgnore &&
		len(rec.Reasons) > 0 && strings.HasPrefix(rec.Reasons[0], outbox.ReasonAnswered)
}
