package storm

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/rig/e2e"
	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// claimServers are the stack's servers with CONDSTORE: its Dovecot and
// the Courier-style Dovecot.
func claimServers(t *testing.T, s *e2e.Stack) map[string]*e2e.Stack {
	return map[string]*e2e.Stack{"dovecot": s, "courier-style": s.Courier(t)}
}

// dialOwner opens an imapsync client as the owner on s.
func dialOwner(t *testing.T, s *e2e.Stack) *imapsync.Client {
	t.Helper()
	c, err := imapsync.Dial(context.Background(), imapsync.Options{Host: s.IMAPHost, Port: s.IMAPPort, Security: imapsync.SecurityStartTLS,
		TLSCAFile: s.CAFile, Username: e2e.Owner, Password: s.Password(t, e2e.Owner), Account: "claim"})
	if err != nil {
		t.Fatalf("dial %s: %v", s.IMAPAddr(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// claimFolder creates a folder of its own for one test on s, holding n
// messages, and returns its name and UIDs.
func claimFolder(t *testing.T, s *e2e.Stack, n int) (string, []uint32) {
	t.Helper()
	ctx := context.Background()
	c := dialOwner(t, s)
	prefix, _, err := c.Namespace(ctx)
	if err != nil {
		prefix = ""
	}
	name := prefix + "claim-" + newTag()
	if err := c.CreateMailbox(ctx, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rc := s.IMAP(t, e2e.Owner)
		_ = rc.Delete(name).Wait()
		_ = rc.Logout().Wait()
	})
	var uids []uint32
	for i := range n {
		raw := fmt.Appendf(nil, "From: bob@example.test\r\nTo: ada@example.test\r\nSubject: claim %d\r\nMessage-ID: <claim%d.%s@example.test>\r\n\r\nhi\r\n", i, i, newTag())
		uid, err := c.Append(ctx, name, nil, time.Time{}, raw)
		if err != nil || uid == 0 {
			t.Fatalf("append: uid %d, %v", uid, err)
		}
		uids = append(uids, uid)
	}
	return name, uids
}

// TestClaimRaceRealServers: four watchers (four connections, four
// holders) claim the same 40 messages (16 under -race) at once, each in its own random
// order, on Dovecot and on the Courier-style Dovecot, which have CONDSTORE:
// every message is won by exactly one (one that every racer's STOREs
// missed on every try is claimed again, as the next sync does). Then the lease: a claim left by a
// watcher that "died" is respected until it expires and taken over after.
func TestClaimRaceRealServers(t *testing.T) {
	s := e2e.Require(t)
	t.Parallel() // folders of its own; it waits on the servers, it measures no time
	for name, srv := range claimServers(t, s) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// 40 messages without -race, 16 with it (testsize: generated
			// volume; four racers still contend for every one).
			folder, uids := claimFolder(t, srv, testsize.N(40, 16))
			ctx := context.Background()
			const racers = 4
			wins := make([][]uint32, racers)
			// round has every racer (its own connection, dialled and
			// selected first) claim its order, slice at a time, all
			// starting at once; each racer's wins add to wins.
			round := func(orders [][]uint32, slice int) {
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range racers {
					c := dialOwner(t, srv)
					if _, err := c.Select(ctx, folder, false); err != nil {
						t.Fatal(err)
					}
					if err := c.CanClaim(); err != nil {
						t.Fatalf("%s cannot claim: %v", name, err)
					}
					cl := &imapsync.Claimer{Holder: fmt.Sprintf("racer%d", i), Lease: time.Minute}
					order := orders[i]
					wg.Go(func() {
						<-start
						for k := 0; k < len(order); k += slice {
							res, err := cl.Claim(ctx, c, order[k:min(k+slice, len(order))])
							if err != nil {
								t.Errorf("racer%d: %v", i, err)
								return
							}
							for _, r := range res {
								if r.State == imapsync.ClaimWon {
									wins[i] = append(wins[i], r.UID)
								}
							}
						}
					})
				}
				close(start)
				wg.Wait()
			}
			// Each racer in its own random order, in slices of four, as
			// the daemon claims.
			orders := make([][]uint32, racers)
			for i := range orders {
				orders[i] = slices.Clone(uids)
				mrand.Shuffle(len(uids), func(a, b int) { orders[i][a], orders[i][b] = orders[i][b], orders[i][a] })
			}
			round(orders, 4)
			// A message whose STOREs were refused on every try with no
			// claim landing comes back held by nobody: "try again
			// later" (imapsync.Claim), and the daemon's next sync
			// does. Seen once in CI (1 of 40, at load 13): every racer
			// claims those once more, at once, as the next syncs would.
			won := map[uint32]bool{}
			for _, w := range wins {
				for _, u := range w {
					won[u] = true
				}
			}
			var again []uint32
			for _, u := range uids {
				if !won[u] {
					again = append(again, u)
				}
			}
			retried := len(again)
			if retried > 0 {
				round([][]uint32{again, again, again, again}, len(again))
			}
			count := map[uint32]int{}
			for _, w := range wins {
				for _, u := range w {
					count[u]++
				}
			}
			tried, through, unclaimed := len(uids)*racers, 0, 0
			for _, u := range uids {
				switch n := count[u]; {
				case n > 1:
					through++
				case n == 0:
					unclaimed++
				}
			}
			t.Logf("%s: %d claims tried on %d messages (%d claimed again, won by nobody the first time), %d won twice, %d won by nobody; wins per racer %d %d %d %d",
				name, tried, len(uids), retried, through, unclaimed, len(wins[0]), len(wins[1]), len(wins[2]), len(wins[3]))
			if through != 0 || unclaimed != 0 {
				t.Errorf("%s: %d messages won by more than one racer and %d by none, want 0 and 0", name, through, unclaimed)
			}
		})
	}
}

// TestClaimStaleStoreRefused is the race made deterministic on each
// server: a watcher reads a message's MODSEQ, another claims the message,
// then the first STOREs its claim with the MODSEQ it read. With
// UNCHANGEDSINCE the server refuses it (the attack: a second claim on a
// claimed message); the positive control sends the same STORE without
// UNCHANGEDSINCE and both claims land. It also checks the lease: the
// second watcher's Claim respects the live claim and takes the message
// over once it has expired.
func TestClaimStaleStoreRefused(t *testing.T) {
	s := e2e.Require(t)
	t.Parallel() // folders of its own; it waits on the servers, it measures no time
	for name, srv := range claimServers(t, s) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			folder, uids := claimFolder(t, srv, 6)
			ctx := context.Background()
			a := dialOwner(t, srv)
			if _, err := a.Select(ctx, folder, false); err != nil {
				t.Fatal(err)
			}
			raw := srv.IMAP(t, e2e.Owner)
			defer func() { _ = raw.Logout().Wait() }()
			if _, err := raw.Select(folder, nil).Wait(); err != nil {
				t.Fatal(err)
			}
			modseq := func(uid uint32) uint64 {
				msgs, err := raw.Fetch(imap.UIDSetNum(imap.UID(uid)), &imap.FetchOptions{UID: true, ModSeq: true}).Collect()
				if err != nil || len(msgs) != 1 || msgs[0].ModSeq == 0 {
					t.Fatalf("fetch modseq of %d: %v (%d messages)", uid, err, len(msgs))
				}
				return msgs[0].ModSeq
			}
			flags := func(uid uint32) []string {
				fl, err := a.Flags(ctx, []uint32{uid})
				if err != nil {
					t.Fatal(err)
				}
				return fl[uid]
			}
			claims := func(uid uint32) int {
				n := 0
				for _, f := range flags(uid) {
					if strings.HasPrefix(f, imapsync.ClaimKeywordPrefix) {
						n++
					}
				}
				return n
			}
			clA := &imapsync.Claimer{Holder: "first", Lease: time.Minute}
			stale := func(uid uint32, conditional bool) {
				ms := modseq(uid)
				if res, err := clA.Claim(ctx, a, []uint32{uid}); err != nil || len(res) != 1 || res[0].State != imapsync.ClaimWon {
					t.Fatalf("first claim of %d: %+v, %v", uid, res, err)
				}
				var opts *imap.StoreOptions
				if conditional {
					opts = &imap.StoreOptions{UnchangedSince: ms}
				}
				kw := imapsync.ClaimKeyword("second")
				if err := raw.Store(imap.UIDSetNum(imap.UID(uid)), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.Flag(kw)}}, opts).Close(); err != nil {
					t.Fatalf("stale store: %v", err)
				}
			}
			tried, through := 0, 0
			for _, uid := range uids[:3] {
				stale(uid, true)
				tried++
				if claims(uid) > 1 {
					through++
				}
			}
			t.Logf("%s: stale conditional claims: %d tried, %d through", name, tried, through)
			if through != 0 {
				t.Errorf("%s: %d of %d stale claims landed beside a live one, want 0", name, through, tried)
			}
			control, landed := uids[3:5], 0
			for _, uid := range control {
				stale(uid, false)
				if claims(uid) > 1 {
					landed++
				}
			}
			if landed != len(control) {
				t.Errorf("%s: positive control: %d of %d unconditional stale claims landed, want all", name, landed, len(control))
			}

			// The lease: the first claimant "dies" holding uids[5].
			now := time.Now()
			clk := func() time.Time { return now }
			b := dialOwner(t, srv)
			if _, err := b.Select(ctx, folder, false); err != nil {
				t.Fatal(err)
			}
			dead := &imapsync.Claimer{Holder: "dead", Lease: time.Minute, Now: clk}
			if res, err := dead.Claim(ctx, a, uids[5:6]); err != nil || res[0].State != imapsync.ClaimWon {
				t.Fatalf("dead's claim: %+v, %v", res, err)
			}
			now2 := now
			clB := &imapsync.Claimer{Holder: "heir", Lease: time.Minute, Now: func() time.Time { return now2 }}
			if res, err := clB.Claim(ctx, b, uids[5:6]); err != nil || res[0].State != imapsync.ClaimHeld || res[0].Holder != "dead" {
				t.Fatalf("claim within the lease: %+v, %v, want held by dead", res, err)
			}
			now2 = now.Add(3 * time.Minute)
			res, err := clB.Claim(ctx, b, uids[5:6])
			if err != nil || res[0].State != imapsync.ClaimWon {
				t.Fatalf("claim after the lease: %+v, %v, want won", res, err)
			}
			if err := clB.Finish(ctx, b, uids[5:6]); err != nil {
				t.Fatal(err)
			}
			fl := flags(uids[5])
			if !slices.Contains(fl, imapsync.DoneKeyword("heir")) || claims(uids[5]) != 0 {
				t.Errorf("after Finish: flags %v, want the done keyword and no claim", fl)
			}
			now = now.Add(24 * time.Hour)
			if res, err := dead.Claim(ctx, a, uids[5:6]); err != nil || res[0].State != imapsync.ClaimDone || res[0].Holder != "heir" {
				t.Errorf("a finished message a day later: %+v, %v, want done by heir", res, err)
			}
		})
	}
}

// TestClaimRefusedWithoutWinnerRetried: a conditional STORE refused while
// no claim landed (another client changed the message between the
// watcher's FETCH of its MODSEQ and its STORE) is tried again at once,
// on Dovecot and the Courier-style Dovecot, so the message is claimed in
// this pass instead of waiting for the next sync. The control changes the
// message before every STORE: every attempt is refused and the message
// comes back held by nobody (left for the next sync), never won.
func TestClaimRefusedWithoutWinnerRetried(t *testing.T) {
	s := e2e.Require(t)
	t.Parallel() // folders of its own; it waits on the servers, it measures no time
	for name, srv := range claimServers(t, s) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			folder, uids := claimFolder(t, srv, 2)
			ctx := context.Background()
			c := dialOwner(t, srv)
			if _, err := c.Select(ctx, folder, false); err != nil {
				t.Fatal(err)
			}
			raw := srv.IMAP(t, e2e.Owner)
			defer func() { _ = raw.Logout().Wait() }()
			if _, err := raw.Select(folder, nil).Wait(); err != nil {
				t.Fatal(err)
			}
			// touch changes uid's flags (so its MODSEQ) from another
			// session: the n-th touch sets \Flagged when n is odd and
			// clears it when even.
			touch := func(uid uint32, n int) {
				op := imap.StoreFlagsAdd
				if n%2 == 0 {
					op = imap.StoreFlagsDel
				}
				if err := raw.Store(imap.UIDSetNum(imap.UID(uid)), &imap.StoreFlags{Op: op, Silent: true, Flags: []imap.Flag{imap.FlagFlagged}}, nil).Close(); err != nil {
					t.Errorf("touch %d: %v", uid, err)
				}
			}
			base := &imapsync.Claimer{Holder: "retrier", Lease: time.Minute}
			stores := map[uint32]int{}
			once := base.BeforeStoreForTest(func(uid uint32) {
				if stores[uid]++; stores[uid] == 1 {
					touch(uid, 1)
				}
			})
			res, err := once.Claim(ctx, c, uids[:1])
			if err != nil || len(res) != 1 || res[0].State != imapsync.ClaimWon {
				t.Fatalf("%s: claim after one refused STORE: %+v, %v; want won", name, res, err)
			}
			if stores[uids[0]] != 2 {
				t.Errorf("%s: %d STOREs, want 2 (one refused, one landed)", name, stores[uids[0]])
			}
			always := base.BeforeStoreForTest(func(uid uint32) {
				stores[uid]++
				touch(uid, stores[uid])
			})
			res, err = always.Claim(ctx, c, uids[1:])
			if err != nil || len(res) != 1 || res[0].State != imapsync.ClaimHeld || res[0].Holder != "" {
				t.Fatalf("%s: control, every STORE refused: %+v, %v; want held by nobody", name, res, err)
			}
			t.Logf("%s: refused once → won after %d STOREs; refused always → held by nobody after %d", name, stores[uids[0]], stores[uids[1]])
		})
	}
}

// TestClaimKeywordsBoundedRealServers: a watcher claiming and finishing a
// message every five minutes for a day and a half (a fake clock) leaves
// the mailbox's keyword list, which Dovecot keeps for ever and sends to
// every client in PERMANENTFLAGS, with one claim keyword and one done
// keyword. The control is the first release's claim keyword, which had
// the expiry in it: the same run makes a keyword per claim.
func TestClaimKeywordsBoundedRealServers(t *testing.T) {
	s := e2e.Require(t)
	t.Parallel() // folders of its own; it waits on the servers, it measures no time
	for name, srv := range claimServers(t, s) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// A claim every 5 minutes: 400 (33 hours) without -race, 40
			// (3 hours 20) with it (testsize). The keyword has no time in
			// it, so the span does not matter: the point is many claims
			// against at most 2 keywords, and the control's one per claim.
			n := testsize.N(400, 40)
			ctx := context.Background()
			folder, uids := claimFolder(t, srv, 1)
			c := dialOwner(t, srv)
			if _, err := c.Select(ctx, folder, false); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			cl := &imapsync.Claimer{Holder: "bounded", Lease: 10 * time.Minute, Now: func() time.Time { return now }}
			raw := srv.IMAP(t, e2e.Owner)
			defer func() { _ = raw.Logout().Wait() }()
			for i := range n {
				now = now.Add(5 * time.Minute)
				res, err := cl.Claim(ctx, c, uids)
				if err != nil || len(res) != 1 || res[0].State != imapsync.ClaimWon {
					t.Fatalf("claim %d: %+v, %v", i, res, err)
				}
				if err := cl.Finish(ctx, c, uids); err != nil {
					t.Fatal(err)
				}
				// Undone, so the next claim finds the message open again.
				if err := c.StoreFlags(ctx, uids, false, []string{imapsync.DoneKeyword("bounded")}); err != nil {
					t.Fatal(err)
				}
			}
			ours := keywordsOf(t, raw, folder)
			// The control: the first release's keyword, one per claim.
			cfolder, cuids := claimFolder(t, srv, 1)
			if _, err := raw.Select(cfolder, nil).Wait(); err != nil {
				t.Fatal(err)
			}
			then := time.Now()
			for range n {
				then = then.Add(5 * time.Minute)
				kw := imap.Flag(fmt.Sprintf("%s%s_%d", imapsync.ClaimKeywordPrefix, "bounded", then.Add(10*time.Minute).Truncate(150*time.Second).Unix()))
				for _, op := range []imap.StoreFlagsOp{imap.StoreFlagsAdd, imap.StoreFlagsDel} {
					if err := raw.Store(imap.UIDSetNum(imap.UID(cuids[0])), &imap.StoreFlags{Op: op, Silent: true, Flags: []imap.Flag{kw}}, nil).Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
			control := keywordsOf(t, raw, cfolder)
			t.Logf("%s: %d claims over %v: %d keywords of ours in the mailbox (%v); the first release's form: %d", name, n, time.Duration(n)*5*time.Minute, len(ours), ours, len(control))
			if len(ours) > 2 {
				t.Errorf("%s: %d claim keywords left in the mailbox's list, want at most 2 (one claim, one done)", name, len(ours))
			}
			if len(control) < n/2 {
				t.Errorf("positive control: the first release's form left %d keywords, want one per claim (%d)", len(control), n)
			}
		})
	}
}

// keywordsOf SELECTs folder afresh on raw and returns the claim and done
// keywords in its PERMANENTFLAGS (every keyword the mailbox has used).
func keywordsOf(t *testing.T, raw *imapclient.Client, folder string) []string {
	t.Helper()
	data, err := raw.Select(folder, nil).Wait()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range append(data.PermanentFlags, data.Flags...) {
		if k := string(f); (strings.HasPrefix(k, imapsync.ClaimKeywordPrefix) || strings.HasPrefix(k, imapsync.DoneKeywordPrefix)) && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}
