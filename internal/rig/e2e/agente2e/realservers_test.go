package agente2e

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/internal/rig/e2e"
)

// The tests in this file run against the real Debian Courier-IMAP 5.0.13
// and Cyrus IMAP 3.6.1 of scripts/e2e-realservers.sh (not a Dovecot laid
// out like them): bare accounts (INBOX alone, "INBOX." namespace), stock
// settings under which IDLE only hears of new mail when the server polls
// every 60 s, and the same servers with the fix doctor names. They skip,
// saying why, when the packages could not be had.

// realServers are the servers these tests run on, each in a subtest of
// its own.
var realServers = []struct {
	name string
	get  func(*e2e.Stack, testing.TB) *e2e.RealServer
}{
	{"courier", (*e2e.Stack).RealCourier},
	{"cyrus", (*e2e.Stack).RealCyrus},
}

// onEachServer runs f on every real server, each in a subtest of its own,
// all at once: t.Run from a goroutine each, so that the subtests (minutes
// of waiting on a poll) do not queue for a -parallel slot behind the
// package's other tests, as subtests calling t.Parallel would.
func onEachServer(t *testing.T, s *e2e.Stack, f func(t *testing.T, r *e2e.RealServer)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, rs := range realServers {
		wg.Go(func() {
			t.Run(rs.name, func(t *testing.T) { f(t, rs.get(s, t)) })
		})
	}
	wg.Wait()
}

// newRealEnv is a test env whose IMAP server is srv (one of a RealServer's
// two instances): mail reaches its INBOX through Postfix and APPEND as on
// the Courier-style Dovecot, and folders are under "INBOX.".
func newRealEnv(t *testing.T, srv *e2e.Stack, o options) *env {
	t.Helper()
	o.Courier, o.IMAPPort = true, srv.IMAPPort
	e := newEnv(t, o)
	e.s = srv
	return e
}

// realFolders lists the owner's folders on srv with their attributes
// (SPECIAL-USE ones included where the server has them).
func realFolders(t *testing.T, c *imapclient.Client, specialUse bool) map[string][]imap.MailboxAttr {
	t.Helper()
	var opts *imap.ListOptions
	if specialUse {
		opts = &imap.ListOptions{ReturnSpecialUse: true}
	}
	l, err := c.List("", "*", opts).Collect()
	if err != nil {
		t.Fatalf("LIST: %v", err)
	}
	out := map[string][]imap.MailboxAttr{}
	for _, m := range l {
		out[m.Mailbox] = m.Attrs
	}
	return out
}

// makeBare deletes what an earlier run created (Drafts, Sent, a push
// probe's scratch folder) and fails unless INBOX alone is left: the
// account as the server makes it.
func makeBare(t *testing.T, c *imapclient.Client, specialUse bool) {
	t.Helper()
	for name := range realFolders(t, c, false) {
		if name != "INBOX" {
			deleteFolder(t, c, name)
		}
	}
	if got := realFolders(t, c, specialUse); len(got) != 1 || !hasKey(got, "INBOX") {
		t.Fatalf("the account is not bare: %v", got)
	}
}

// deleteFolder deletes a folder as its owner would in a mail client. Cyrus
// refuses to delete a folder that has a SPECIAL-USE attribute
// (specialuse_protect): a client removes the attribute (RFC 6154
// METADATA /private/specialuse) first.
func deleteFolder(t *testing.T, c *imapclient.Client, name string) {
	t.Helper()
	if c.Caps().Has(imap.CapMetadata) {
		if err := c.SetMetadata(name, map[string]*[]byte{"/private/specialuse": nil}).Wait(); err != nil {
			t.Fatalf("SETMETADATA %s /private/specialuse NIL: %v", name, err)
		}
	}
	if err := c.Delete(name).Wait(); err != nil {
		t.Fatalf("DELETE %s: %v", name, err)
	}
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// TestRealServerBareAccount: on a bare account of the real Courier-IMAP
// and of the real Cyrus (the instances with push fixed; the account is the
// stock instance's too), doctor fails Drafts and Sent with `doctor --fix`
// as the fix and never offers the watched INBOX; `doctor --fix` creates
// INBOX.Drafts and INBOX.Sent (on Cyrus, which has CREATE-SPECIAL-USE,
// with \Drafts and \Sent); doctor then passes both. An approval that
// cannot read Sent (deleted behind the watcher's back) exits 2 naming the
// fix, sends nothing and keeps the draft; after the fix the same approval
// sends the reply and files it in INBOX.Sent.
func TestRealServerBareAccount(t *testing.T) {
	parallel(t) // minutes of waiting on servers that poll: overlap it
	s := e2e.Require(t)
	onEachServer(t, s, func(t *testing.T, r *e2e.RealServer) {
		r.Exclusive(t)
		// The fixed instance: the bare account's folders and doctor's
		// fix do not depend on IDLE, and on the stock one the approval
		// below waits out its 60 s poll to see the queued mail.
		e := newRealEnv(t, r.Fixed, options{})
		c := r.Fixed.IMAP(t, e2e.Owner)
		makeBare(t, c, r.SpecialUse)

		out, stderr, code := e.run("doctor", "--json", "--no-model")
		if code != 5 {
			t.Errorf("doctor on a bare account: exit %d, want 5\n%s\n%s", code, out, stderr)
		}
		checks := doctorChecks(t, out)
		for id, create := range map[string]string{"imap.drafts_folder": "INBOX.Drafts", "imap.sent_folder": "INBOX.Sent"} {
			c := checks[id]
			if c.Status != "fail" || !strings.Contains(c.Fix, "mailagent doctor --fix") || !strings.Contains(c.Fix, `"`+create+`"`) {
				t.Errorf("%s: got %+v, want fail with doctor --fix creating %s", id, c, create)
			}
			if strings.Contains(c.Fix, `"INBOX"`) {
				t.Errorf("%s: the fix offers the watched mailbox: %q", id, c.Fix)
			}
		}

		out, stderr, code = e.run("doctor", "--json", "--no-model", "--fix")
		checks = doctorChecks(t, out)
		for id, want := range map[string]string{"imap.drafts_folder": "created INBOX.Drafts", "imap.sent_folder": "created INBOX.Sent"} {
			if c := checks[id]; c.Status != "pass" || c.Detail != want {
				t.Errorf("doctor --fix %s: got %+v, want pass %q (exit %d)\n%s", id, c, want, code, stderr)
			}
		}
		got := realFolders(t, c, r.SpecialUse)
		for box, use := range map[string]imap.MailboxAttr{"INBOX.Drafts": imap.MailboxAttrDrafts, "INBOX.Sent": imap.MailboxAttrSent} {
			attrs, ok := got[box]
			switch {
			case !ok:
				t.Errorf("after --fix the server lists %v, want %s", got, box)
			case r.SpecialUse && !slices.Contains(attrs, use):
				t.Errorf("%s: attributes %v, want %s (the server has CREATE-SPECIAL-USE)", box, attrs, use)
			}
		}
		if len(got) != 3 {
			t.Errorf("after --fix the server lists %v, want INBOX, INBOX.Drafts and INBOX.Sent alone", got)
		}

		out, stderr, code = e.run("doctor", "--json", "--no-model")
		if code != 0 {
			t.Errorf("doctor after --fix: exit %d, want 0\n%s\n%s", code, out, stderr)
		}
		checks = doctorChecks(t, out)
		for id, want := range map[string]string{"imap.drafts_folder": "INBOX.Drafts", "imap.sent_folder": "INBOX.Sent"} {
			if c := checks[id]; c.Status != "pass" || c.Detail != want {
				t.Errorf("doctor after --fix %s: got %+v, want pass %q", id, c, want)
			}
		}

		approveWithoutSent(t, e, c)
	})
}

// approveWithoutSent queues a draft on e's server, deletes INBOX.Sent and
// approves: exit 2 naming the fix, nothing sent, the draft kept; then
// `doctor --fix` and the same approval sends and files the reply.
func approveWithoutSent(t *testing.T, e *env, c *imapclient.Client) {
	t.Helper()
	w := e.startWatch()
	m := message{From: carolAddr, To: adaAddr, Subject: "Lease renewal " + e.tag, ID: e.id("real-approve"),
		Body: "Shall we renew the lease for another year?"}
	e.deliver(m)
	item := w.queueItem(m.ID, waitLong)
	e.waitFind(e2e.Owner, e.box("Drafts"), "In-Reply-To", m.ID, 1, waitShort)

	deleteFolder(t, c, "INBOX.Sent")
	out, stderr, code := e.run("queue", "approve", "--yes", item.ID)
	if code != 2 || !strings.Contains(stderr, "mailagent doctor --fix") {
		t.Errorf("approve without Sent: exit %d, want 2 (setup needed) naming `mailagent doctor --fix`\n%s\n%s", code, out, stderr)
	}
	// Postfix delivers in order: once a later message reached Carol,
	// a reply the approval had sent would have too.
	barrier := e.id("barrier-" + newTag())
	e.main.Deliver(t, "barrier@example.test", []string{e2e.Carol}, message{
		From: "Barrier <barrier@example.test>", To: carolAddr, Subject: "barrier " + e.tag, ID: barrier, Body: "barrier",
	}.raw())
	e.main.WaitForMessageID(t, e2e.Carol, "INBOX", barrier, waitShort)
	if got := e.find(e2e.Carol, "INBOX", "In-Reply-To", m.ID); len(got) != 0 {
		t.Errorf("approve without Sent sent %d replies, want none", len(got))
	}
	if got := e.find(e2e.Owner, e.box("Drafts"), "In-Reply-To", m.ID); len(got) != 1 {
		t.Errorf("approve without Sent: %d drafts left in INBOX.Drafts, want 1", len(got))
	}

	out, stderr, code = e.run("doctor", "--json", "--no-model", "--fix")
	if c := doctorChecks(t, out)["imap.sent_folder"]; c.Status != "pass" || c.Detail != "created INBOX.Sent" {
		t.Fatalf("doctor --fix after Sent was deleted: got %+v (exit %d)\n%s", c, code, stderr)
	}
	out, stderr, code = e.run("queue", "approve", "--yes", item.ID)
	if code != 0 {
		t.Fatalf("approve after the fix: exit %d\n%s\n%s", code, out, stderr)
	}
	replies := e.waitFind(e2e.Carol, "INBOX", "In-Reply-To", m.ID, 1, waitLong)
	if got := e.waitFind(e2e.Owner, e.box("Sent"), "Message-ID", replies[0].M.MessageID, 1, waitShort); len(got) != 1 {
		t.Errorf("INBOX.Sent: %d copies of the approved reply, want 1", len(got))
	}
}

// TestRealServerPushLatency: doctor names the real Courier-IMAP (stock:
// no enhanced IDLE) and the real Cyrus (stock: no idled) as servers that
// only poll, with each one's fix; on the same servers with the fix applied
// doctor's probe passes. Then watch measures it: new mail appended while
// it sits in IDLE reaches it within seconds on the fixed server, and only
// at the stock server's poll (the control: the same measurement does see
// a server that polls).
//
// It measures time (new mail within 3 s), so it runs in CI's pass
// without the race detector (.ci/run TIMING_TESTS), as users' builds run,
// and skips under -race: there the instrumented binaries on a loaded
// machine make the 3 s a measure of the machine.
func TestRealServerPushLatency(t *testing.T) {
	parallel(t) // minutes of waiting on servers that poll: overlap it
	if raceEnabled {
		t.Skip("timing test: CI runs it without -race (.ci/run TIMING_TESTS)")
	}
	s := e2e.Require(t)
	onEachServer(t, s, func(t *testing.T, r *e2e.RealServer) {
		r.Exclusive(t)
		stock := newRealEnv(t, r.Stock, options{})
		fixed := newRealEnv(t, r.Fixed, options{})

		out, stderr, code := stock.run("doctor", "--json", "--no-model", "--fix")
		if code != 0 {
			t.Errorf("doctor --fix on stock %s: exit %d, want 0 (a polling server is a warning)\n%s\n%s", r.Name, code, out, stderr)
		}
		p := doctorChecks(t, out)["imap.push"]
		if p.Status != "warn" || !strings.Contains(p.Detail, r.Name) || !strings.Contains(p.Detail, "only when it polls") || !strings.Contains(p.Fix, r.Fix) {
			t.Errorf("push on stock %s: got %+v, want a warning naming %s as polling with the fix %s", r.Name, p, r.Name, r.Fix)
		}
		t.Logf("stock %s: doctor: %s", r.Name, p.Detail)

		out, stderr, code = fixed.run("doctor", "--json", "--no-model", "--fix")
		if code != 0 {
			t.Errorf("doctor --fix on fixed %s: exit %d, want 0\n%s\n%s", r.Name, code, out, stderr)
		}
		p = doctorChecks(t, out)["imap.push"]
		if p.Status != "pass" || !strings.Contains(p.Detail, "new mail reached IDLE in ") {
			t.Errorf("push on %s with %s: got %+v, want pass", r.Name, r.Fix, p)
		}
		t.Logf("%s with %s: doctor: %s", r.Name, r.Fix, p.Detail)

		// Both watchers wait together: the stock one for up to a poll.
		measure := func(e *env) <-chan latency {
			w := e.startWatch()
			id, start := appendProbe(t, e)
			ch := make(chan latency, 1)
			go func() { ch <- waitStored(t, e, w, id, start) }()
			return ch
		}
		stockCh, fixedCh := measure(stock), measure(fixed)
		fr, sr := <-fixedCh, <-stockCh
		t.Logf("%s: new mail reached watch in %v (watch measured %v) with %s; %v (watch measured %v) with stock settings",
			r.Name, fr.wall.Round(time.Millisecond), fr.watch, r.Fix, sr.wall.Round(time.Millisecond), sr.watch)
		if fr.wall <= 0 || fr.wall > 3*time.Second || fr.watch > 3*time.Second {
			t.Errorf("%s with %s: new mail reached watch in %v (watch measured %v), want within 3s", r.Name, r.Fix, fr.wall, fr.watch)
		}
		if sr.wall < 10*time.Second {
			t.Errorf("stock %s: new mail reached watch in %v, want a poll's wait (>10s): the measurement does not see a polling server", r.Name, sr.wall)
		}
	})
}

// latency is how soon one new message reached a watcher: wall is from the
// APPEND's completion to the watcher's record of it, watch the latency
// the watcher itself reports (status latency_last, from INTERNALDATE to
// the second).
type latency struct{ wall, watch time.Duration }

// appendProbe appends a message of its own to e's INBOX and returns its
// Message-ID and when the APPEND completed.
func appendProbe(t *testing.T, e *env) (string, time.Time) {
	t.Helper()
	id := e.id("push-" + newTag())
	raw := message{From: carolAddr, To: adaAddr, Subject: "Push probe " + e.tag, ID: id, Body: "Timing."}.raw()
	e.s.Append(t, e2e.Owner, "INBOX", raw)
	return id, time.Now()
}

// waitStored waits up to 90 s for w to store id and for its status to
// report a push latency. It may run on a goroutine of its own: failures
// are t.Errorf, and leave zeros.
func waitStored(t *testing.T, e *env, w *watcher, id string, start time.Time) latency {
	var l latency
	deadline := start.Add(90 * time.Second)
	for time.Now().Before(deadline) && l.wall == 0 {
		if recs, err := w.records(); err == nil && len(recs[id]) > 0 {
			l.wall = time.Since(start)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l.wall == 0 {
		t.Errorf("%s never reached watch on port %d within 90s", id, e.s.IMAPPort)
		return l
	}
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), waitShort)
		st, err := w.client.Status(ctx)
		cancel()
		if err == nil && len(st.Accounts) == 1 && st.Accounts[0].LatencySamples > 0 {
			l.watch = st.Accounts[0].LatencyLast
			return l
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("watch on port %d reports no push latency for %s", e.s.IMAPPort, id)
	return l
}
