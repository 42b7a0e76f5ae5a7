package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/replay"
	"github.com/mailagent/mailagent/internal/app/sentlearn"
	"github.com/mailagent/mailagent/internal/mail"
	"github.com/mailagent/mailagent/internal/memimap"
	"github.com/mailagent/mailagent/store"
)

// sentPathsOwner is the owner of the Sent folder the three paths read.
var sentPathsOwner = agent.Owner{Name: "Ada", Addresses: []string{testUser}}

// sentAttack is one message planted in the owner's Sent folder that must
// make its recipient (a stranger) known through no path.
type sentAttack struct{ name, headers string }

// sentAttacks is the triage-vs-watch known-contact attack (issue 25) and
// its variants: automatic owner mail (every spelling RFC 3834 allows, and
// mailagent's own trace) and mail in Sent the owner did not write.
var sentAttacks = []sentAttack{
	{"auto-replied", "From: Ada <ada@example.com>\nAuto-Submitted: auto-replied\n"},
	{"auto-generated", "From: Ada <ada@example.com>\nAuto-Submitted: auto-generated\n"},
	{"auto-notified", "From: Ada <ada@example.com>\nAuto-Submitted: auto-notified\n"},
	{"upper case", "From: Ada <ada@example.com>\nAuto-Submitted: AUTO-REPLIED\n"},
	{"parameters", "From: Ada <ada@example.com>\nAuto-Submitted: auto-replied; owner-email=\"ada@example.com\"\n"},
	{"comment", "From: Ada <ada@example.com>\nAuto-Submitted: (vacation) auto-replied (sieve)\n"},
	{"header name case", "From: Ada <ada@example.com>\nauto-submitted: auto-replied\n"},
	{"folded", "From: Ada <ada@example.com>\nAuto-Submitted:\n auto-generated\n"},
	{"mailagent trace", "From: Ada <ada@example.com>\nX-Mailagent-Trace: tr_planted\n"},
	{"not the owner's", "From: Mallory <mallory@evil.example>\n"},
	{"owner as display name", "From: \"ada@example.com\" <mallory@evil.example>\n"},
}

// automaticAttacks counts the attacks of the automatic class (the ones
// the identity switch turns off).
const automaticAttacks = 9

func attackTarget(i int) string { return fmt.Sprintf("stranger%d@evil.example", i) }

// sentFolder is the Sent folder of the test: the owner's own mail to two
// people, then the attacks.
func sentFolder() []string {
	msg := func(headers, to, id string) string {
		return strings.ReplaceAll(headers+"To: "+to+"\nSubject: s\nDate: Mon, 02 Nov 2026 10:00:00 +0000\nMessage-ID: <"+id+">\n\nhello\n", "\n", "\r\n")
	}
	out := []string{
		msg("From: Ada <ada@example.com>\nCc: Dora <DORA@example.org>\nBcc: hidden@example.net\n", "Bob <bob@example.org>", "own-1@example.com"),
		msg("From: Ada <ada@example.com>\nAuto-Submitted: no (typed by hand)\n", "carl@example.net", "own-2@example.com"),
	}
	for i, a := range sentAttacks {
		out = append(out, msg(a.headers, attackTarget(i), fmt.Sprintf("attack-%d@example.com", i)))
	}
	return out
}

// knownThroughPaths fills a Sent folder and learns it through the three
// paths that read Sent: triage's (sentlearn.Learn), watch's (the daemon's
// Sent scan) and replay's (replay.NewSentIndex). It returns, per path,
// whether each address is known.
func knownThroughPaths(t *testing.T, addrs []string) map[string]map[string]bool {
	t.Helper()
	srv, am := startIMAP(t, memimap.Options{Mailboxes: []string{"Sent", "Drafts"}})
	am.Sent = "Sent"
	var parsed []*mail.Message
	for _, raw := range sentFolder() {
		if _, err := srv.Append(context.Background(), testUser, "Sent", []byte(raw), nil, time.Now()); err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, mail.Parse([]byte(raw)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	open := func() *store.Store {
		st, err := store.Open(filepath.Join(t.TempDir(), "db"), store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	out := map[string]map[string]bool{"triage": {}, "watch": {}, "replay": {}}
	fromStore := func(path string, st *store.Store) {
		for _, a := range addrs {
			c, err := st.GetContact("personal", a)
			out[path][a] = err == nil && c.Known
		}
	}

	// triage
	tst := open()
	c, err := am.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := sentlearn.Learn(ctx, c, sentlearn.Account{Name: "personal", SentMailbox: "Sent", Owner: sentPathsOwner}, tst, time.Time{}); err != nil {
		t.Fatalf("triage's Sent learning: %v", err)
	}
	fromStore("triage", tst)

	// watch
	wst := open()
	m := &Mailer{Accounts: map[string]*AccountMailer{"personal": am}}
	defer m.Close()
	p := &agent.Pipeline{Store: wst, Accounts: map[string]agent.Account{"personal": {Name: "personal", Owner: sentPathsOwner}}, Actor: &agent.Actor{Store: wst, Mailer: m}}
	d := &Daemon{Store: wst, Pipeline: p, Mailer: m, SentLookback: 100 * 365 * 24 * time.Hour}
	d.scanSent(ctx, "personal", true)
	if cp, ok, err := wst.Checkpoint("personal", SentCheckpoint); err != nil || !ok || cp.LastUID == 0 {
		t.Fatalf("watch's Sent scan did not finish: checkpoint %+v %v %v", cp, ok, err)
	}
	fromStore("watch", wst)

	// replay
	ix := replay.NewSentIndex(parsed, sentPathsOwner)
	for _, a := range addrs {
		out["replay"][a] = ix.KnownBefore(a, time.Time{})
	}
	return out
}

// One home for "known from Sent": the same Sent folder learned through
// triage's, watch's and replay's paths gives the same known contacts, and
// no attack makes its stranger known through any of them.
func TestKnownFromSentSamePerPath(t *testing.T) {
	t.Parallel()
	owned := []string{"bob@example.org", "dora@example.org", "hidden@example.net", "carl@example.net"}
	addrs := slices.Clone(owned)
	for i := range sentAttacks {
		addrs = append(addrs, attackTarget(i))
	}
	known := knownThroughPaths(t, addrs)
	for path, k := range known {
		for _, a := range owned {
			if !k[a] {
				t.Errorf("%s: %s is not known; the owner wrote to them", path, a)
			}
		}
	}
	tried, through := 0, 0
	for i, at := range sentAttacks {
		for _, path := range []string{"triage", "watch", "replay"} {
			tried++
			if known[path][attackTarget(i)] {
				through++
				t.Errorf("%s: attack %q made %s known", path, at.name, attackTarget(i))
			}
		}
	}
	t.Logf("Sent-learning attacks: tried %d, through %d", tried, through)
	if tried != 3*len(sentAttacks) || through != 0 {
		t.Fatalf("tried %d, through %d; want %d tried, 0 through", tried, through, 3*len(sentAttacks))
	}
}

// The positive control: with the identity checks off, the automatic
// attacks land through every path (so the test above can fail).
func TestKnownFromSentAttackLandsWithCheckOff(t *testing.T) {
	restore := store.SwitchOffIdentityForTest()
	defer restore()
	var addrs []string
	for i := range sentAttacks {
		addrs = append(addrs, attackTarget(i))
	}
	known := knownThroughPaths(t, addrs)
	for _, path := range []string{"triage", "watch", "replay"} {
		landed := 0
		for i := range sentAttacks {
			if known[path][attackTarget(i)] {
				landed++
			}
		}
		if landed != automaticAttacks {
			t.Errorf("%s: %d attacks landed with the check off, want the %d automatic ones", path, landed, automaticAttacks)
		}
	}
}
