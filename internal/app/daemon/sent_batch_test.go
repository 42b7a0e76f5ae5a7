package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/store"
)

// The Sent scan handles the owner's mail in batches as it arrives (not a
// year of it held at once): across batch boundaries every recipient is
// counted exactly once per message, mail the owner did not write makes no
// one known, and the checkpoint ends at the folder's last UID.
func TestSentScanInBatchesCountsEachMessageOnce(t *testing.T) {
	t.Parallel()
	srv, am := startIMAP(t, memimap.Options{Mailboxes: []string{"Sent", "Drafts"}})
	am.Sent = "Sent"
	owner := sentPathsOwner.Addresses[0]
	n := 2*sentHandleBatch + 7
	attacks := 0
	var msgs []appendMsg
	for i := range n {
		from, to := owner, fmt.Sprintf("friend%d@example.org", i%5)
		if i%50 == 49 { // not the owner's: its recipient must not become known
			from, to = "mallory@evil.example", fmt.Sprintf("stranger%d@evil.example", i)
			attacks++
		}
		raw := fmt.Sprintf("From: <%s>\r\nTo: <%s>\r\nSubject: note %d\r\nMessage-ID: <sent-%d@example.org>\r\nDate: %s\r\n\r\nHello %d.\r\n",
			from, to, i, i, time.Now().Format(time.RFC1123Z), i)
		msgs = append(msgs, appendMsg{raw: []byte(raw), date: time.Now()})
	}
	appendMany(t, srv, "Sent", msgs)
	st := scanSentOnce(t, am, 0)

	want := map[string]int{}
	for i := range n {
		if i%50 != 49 {
			want[fmt.Sprintf("friend%d@example.org", i%5)]++
		}
	}
	for addr, w := range want {
		c, err := st.GetContact("personal", addr)
		if err != nil || !c.Known || c.OwnerReplies != w {
			t.Errorf("%s: got %+v (%v), want known with OwnerReplies %d", addr, c, err, w)
		}
	}
	through := 0
	for i := 49; i < n; i += 50 {
		if c, err := st.GetContact("personal", fmt.Sprintf("stranger%d@evil.example", i)); err == nil && c.Known {
			through++
		}
	}
	t.Logf("Sent mail not the owner's: tried %d, made known %d", attacks, through)
	if attacks == 0 || through != 0 {
		t.Fatalf("not the owner's mail: tried %d, through %d; want some tried, 0 through", attacks, through)
	}
	cp, ok, err := st.Checkpoint("personal", SentCheckpoint)
	if err != nil || !ok || cp.LastUID != uint32(n) {
		t.Fatalf("checkpoint %+v %v %v; want LastUID %d", cp, ok, err, n)
	}
}

// A first Sent scan reads the owner's own bodies only for the last
// agent.SentBodyWindow: older mail of the owner's, still within the year,
// makes its recipients known (counted once each, across batches, in the
// header pass) but teaches no example of the owner's voice; mail inside
// the window teaches one per recipient. The control is the same folder
// scanned with the window at a year: the old recipients get examples too.
func TestSentScanReadsOldOwnerMailByHeaders(t *testing.T) {
	t.Parallel()
	// One Sent folder for both scans (the scan only reads it, with
	// BODY.PEEK), each scan with a mailer and a store of its own.
	srv, am := startIMAP(t, memimap.Options{Mailboxes: []string{"Sent", "Drafts"}})
	owner := sentPathsOwner.Addresses[0]
	n := 2*sentHandleBatch + 7
	oldDate := time.Now().Add(-200 * 24 * time.Hour)
	var msgs []appendMsg
	for i := range n {
		to, date := fmt.Sprintf("recent%d@example.org", i%3), time.Now().Add(-5*24*time.Hour)
		if i%2 == 0 {
			to, date = fmt.Sprintf("old%d@example.org", i%3), oldDate
		}
		raw := fmt.Sprintf("From: <%s>\r\nTo: <%s>\r\nSubject: note %d\r\nMessage-ID: <sent-%d@example.org>\r\nDate: %s\r\n\r\nHello %d, the words of the owner.\r\n",
			owner, to, i, i, date.Format(time.RFC1123Z), i)
		msgs = append(msgs, appendMsg{raw: []byte(raw), date: date})
	}
	appendMany(t, srv, "Sent", msgs)
	scan := func(window time.Duration) *store.Store {
		return scanSentOnce(t, &AccountMailer{Name: am.Name, Dial: am.Dial, Sent: "Sent"}, window)
	}
	st := scan(0) // the default window
	for i := range 3 {
		for _, kind := range []string{"old", "recent"} {
			addr := fmt.Sprintf("%s%d@example.org", kind, i)
			want := 0
			for j := range n {
				if (j%2 == 0) == (kind == "old") && j%3 == i {
					want++
				}
			}
			if c, err := st.GetContact("personal", addr); err != nil || !c.Known || c.OwnerReplies != want {
				t.Errorf("%s: got %+v (%v), want known with OwnerReplies %d", addr, c, err, want)
			}
		}
	}
	examples := func(st *store.Store) (old, recent int) {
		es, err := st.ListExamples("personal")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if strings.HasPrefix(e.Contact, "old") {
				old++
			} else {
				recent++
			}
		}
		return old, recent
	}
	old, recent := examples(st)
	t.Logf("default window: %d examples from old mail, %d from recent", old, recent)
	if old != 0 || recent == 0 {
		t.Errorf("examples: %d from mail older than the window, %d from recent; want 0 and some", old, recent)
	}
	ctl := scan(365 * 24 * time.Hour)
	if old, _ := examples(ctl); old == 0 {
		t.Errorf("control (a year's window): no examples from the old mail, so the test cannot tell the window works")
	}
}

// scanSentOnce runs one forced Sent scan of the account "personal" (the
// owner sentPathsOwner, a year's lookback, bodyWindow 0 for the default)
// over am's server, headers then the body pass, and returns the store it
// wrote.
func scanSentOnce(t *testing.T, am *AccountMailer, bodyWindow time.Duration) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true}) // no fsync: nothing here survives a crash it tests
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	m := &Mailer{Accounts: map[string]*AccountMailer{"personal": am}}
	t.Cleanup(m.Close)
	p := &agent.Pipeline{Store: st, Accounts: map[string]agent.Account{"personal": {Name: "personal", Owner: sentPathsOwner}},
		Actor: &agent.Actor{Store: st, Mailer: m, Memory: st}}
	d := &Daemon{Store: st, Pipeline: p, Mailer: m, SentLookback: 365 * 24 * time.Hour, sentBodyWindow: bodyWindow}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d.scanSent(ctx, "personal", true)
	if err := d.readSentBodies(ctx, "personal"); err != nil {
		t.Fatal(err)
	}
	return st
}
