package imapsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestClaimKeywordRoundTrip(t *testing.T) {
	t.Parallel()
	kw := ClaimKeyword("a1b2c3")
	if !ValidKeyword(kw) || len(kw) > 50 {
		t.Fatalf("claim keyword %q: not a keyword Dovecot keeps (valid %v, %d chars)", kw, ValidKeyword(kw), len(kw))
	}
	claims, done := parseMarks([]string{kw, "$MAClaim_old9_1900000000", DoneKeyword("ff00"), `\Seen`, "$MAClaim_", "$MAClaim_x_notanumber", "$MAClaim_UPPER!_12", "$MAClaim_x_-1"})
	if len(claims) != 2 || claims[0].holder != "a1b2c3" || claims[1].holder != "old9" {
		t.Errorf("claims: got %+v, want a1b2c3 and old9 (the first release's form)", claims)
	}
	if len(done) != 1 || done[0] != "ff00" {
		t.Errorf("done: got %v, want [ff00]", done)
	}
	for _, h := range []string{"", "ABC", "a-b", "01234567890123456"} {
		if ValidHolder(h) {
			t.Errorf("ValidHolder(%q) = true, want false", h)
		}
	}
}

// TestClaimHostileKeywords: keywords anyone with the account can set (a
// message APPENDed with a forged claim, another program's STORE) must not
// keep a watcher off a message for longer than one lease: another
// watcher's claim lapses a Lease (plus Skew) after this watcher first saw
// the message as it is, whatever the keyword says; malformed ones are no
// claims. Each attack is judged a lease and a bit after it was first
// seen; it gets through if the message is still held. The positive
// control judges the same keywords with the checks off, where a claim
// never lapses.
func TestClaimHostileKeywords(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	attacks := []struct {
		name  string
		flags []string
	}{
		{"a claim by a watcher that does not exist", []string{ClaimKeyword("evil")}},
		{"first-release claim expiring in the year 3000", []string{"$MAClaim_evil_32503680000"}},
		{"max int64-ish expiry", []string{"$MAClaim_evil_1099511627775"}},
		{"many claims", []string{ClaimKeyword("evil"), ClaimKeyword("evil2"), "$MAClaim_evil3_32503680000"}},
		{"upper-case prefix", []string{"$maclaim_EVIL"}},
		{"a claim in our own name", []string{ClaimKeyword("good")}},
		{"malformed", []string{"$MAClaim_evil_+9999999999", "$MAClaim_evil_-1", "$MAClaim_evil_", "$MAClaim__1999999999"}},
	}
	run := func(checks bool) (tried, through int, landed []string) {
		for _, a := range attacks {
			clk := &clock{t: start}
			cl := &Claimer{Holder: "good", Lease: time.Minute, Now: clk.Now}
			if !checks {
				cl = cl.WithoutChecksForTest()
			}
			tried++
			first := cl.judge(7, a.flags, 42, clk.Now())
			clk.Add(cl.lease() + cl.skew() + time.Second)
			later := cl.judge(7, a.flags, 42, clk.Now())
			if later.State == ClaimHeld {
				through++
				landed = append(landed, fmt.Sprintf("%s (first %v, later held by %q until %v)", a.name, first.State, later.Holder, later.Expires))
			}
		}
		return tried, through, landed
	}
	tried, through, landed := run(true)
	t.Logf("hostile claim keywords: %d tried, %d through", tried, through)
	if tried != len(attacks) || through != 0 {
		t.Errorf("hostile claim keywords: %d of %d got through, want 0: %v", through, tried, landed)
	}
	// Positive control: with claims that never lapse, every well-formed
	// claim by another name holds the message for ever.
	_, ctlThrough, _ := run(false)
	if ctlThrough < 5 {
		t.Errorf("positive control: %d attacks landed with the checks off, want at least 5 (every claim by another name)", ctlThrough)
	}
	// A live claim of another watcher within the lease is respected, and
	// a change to the message (a new MODSEQ) starts the wait again.
	clk := &clock{t: start}
	cl := &Claimer{Holder: "good", Lease: time.Minute, Now: clk.Now}
	if r := cl.judge(1, []string{ClaimKeyword("other")}, 5, start); r.State != ClaimHeld || r.Holder != "other" {
		t.Errorf("live claim: got %+v, want held by other", r)
	}
	clk.Add(50 * time.Second)
	if r := cl.judge(1, []string{ClaimKeyword("other")}, 6, clk.Now()); r.State != ClaimHeld || !r.Expires.Equal(clk.Now().Add(time.Minute)) {
		t.Errorf("renewed claim: got %+v, want held until a lease after the new MODSEQ was seen", r)
	}
	clk.Add(70 * time.Second)
	if r := cl.judge(1, []string{ClaimKeyword("other")}, 6, clk.Now()); r.State != 0 || len(r.remove) != 1 {
		t.Errorf("lapsed claim: got %+v, want free with the dead claim to remove", r)
	}
	if r := cl.judge(1, []string{ClaimKeyword("other"), DoneKeyword("other")}, 6, start); r.State != ClaimDone || r.Holder != "other" {
		t.Errorf("done message: got %+v, want done by other", r)
	}
}

// TestClaimNeedsCondstore: without CONDSTORE Claim refuses with
// ErrUnsupported and changes nothing; Marks still reads done keywords.
func TestClaimNeedsCondstore(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	uid := ts.add(t, "INBOX", textMessage("hi", "<a@x>", "body"), time.Now())
	c := ts.dial(t)
	ctx := context.Background()
	if _, err := c.Select(ctx, "INBOX", false); err != nil {
		t.Fatal(err)
	}
	cl := &Claimer{Holder: "one"}
	if _, err := cl.Claim(ctx, c, []uint32{uid}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Claim without CONDSTORE: got %v, want ErrUnsupported", err)
	}
	if err := cl.Finish(ctx, c, []uint32{uid}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	other := &Claimer{Holder: "two"}
	marks, err := other.Marks(ctx, c, []uint32{uid})
	if err != nil {
		t.Fatal(err)
	}
	if r := marks[uid]; r.State != ClaimDone || r.Holder != "one" {
		t.Errorf("Marks after Finish: got %+v, want done by one", r)
	}
}

// TestClaimRelease: Release takes this watcher's claim off a message and
// leaves no done keyword (it did not decide it), and leaves another
// watcher's claim alone; Finish, the control, leaves the done keyword.
func TestClaimRelease(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	uid := ts.add(t, "INBOX", textMessage("hi", "<rel@x>", "body"), time.Now())
	c := ts.dial(t)
	ctx := context.Background()
	if _, err := c.Select(ctx, "INBOX", false); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreFlags(ctx, []uint32{uid}, true, []string{ClaimKeyword("me"), ClaimKeyword("other")}); err != nil {
		t.Fatal(err)
	}
	marks := func() (mine, other, done bool) {
		fl, err := c.Flags(ctx, []uint32{uid})
		if err != nil {
			t.Fatal(err)
		}
		claims, dn := parseMarks(fl[uid])
		for _, m := range claims {
			mine = mine || m.holder == "me"
			other = other || m.holder == "other"
		}
		return mine, other, len(dn) > 0
	}
	cl := &Claimer{Holder: "me"}
	if err := cl.Release(ctx, c, []uint32{uid}); err != nil {
		t.Fatal(err)
	}
	if mine, other, done := marks(); mine || !other || done {
		t.Errorf("after Release: ours %v, the other's %v, done %v; want false, true, false", mine, other, done)
	}
	if err := cl.Finish(ctx, c, []uint32{uid}); err != nil {
		t.Fatal(err)
	}
	if _, _, done := marks(); !done {
		t.Errorf("control: Finish left no done keyword")
	}
}

// TestClaimFinishMendsHalfFinished: a message a stop left with this
// watcher's done keyword and still claims beside it (Finish cut off
// between its STOREs) loses every claim when Finish runs again, and keeps
// its done keyword. The positive control: Marks reads such a message as
// done, so a watcher that skipped "already done" messages (as finishOwn
// did) would leave the claims for ever.
func TestClaimFinishMendsHalfFinished(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	uid := ts.add(t, "INBOX", textMessage("hi", "<half@x>", "body"), time.Now())
	c := ts.dial(t)
	ctx := context.Background()
	if _, err := c.Select(ctx, "INBOX", false); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreFlags(ctx, []uint32{uid}, true, []string{DoneKeyword("me"), ClaimKeyword("me"), ClaimKeyword("other")}); err != nil {
		t.Fatal(err)
	}
	cl := &Claimer{Holder: "me"}
	marks, err := cl.Marks(ctx, c, []uint32{uid})
	if err != nil {
		t.Fatal(err)
	}
	if r := marks[uid]; r.State != ClaimDone || r.Holder != "me" {
		t.Fatalf("control: Marks of a half-finished message: %+v, want done by me", r)
	}
	if err := cl.Finish(ctx, c, []uint32{uid}); err != nil {
		t.Fatal(err)
	}
	fl, err := c.Flags(ctx, []uint32{uid})
	if err != nil {
		t.Fatal(err)
	}
	claims, done := parseMarks(fl[uid])
	if len(claims) != 0 || !slices.Equal(done, []string{"me"}) {
		t.Errorf("after Finish: claims %v, done %v; want no claim and done by me", claims, done)
	}
}

// TestElectionOneActing: watchers racing for the lease folder on one
// server without CONDSTORE: exactly one holds it each round; when the
// holder stops renewing, another takes over once the lease has expired,
// and the old holder then sees that it no longer holds it; Release hands
// it over at once.
func TestElectionOneActing(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	ctx := context.Background()
	clk := &clock{t: time.Now()}
	const n = 4
	els := make([]*Election, n)
	clients := make([]*Client, n)
	for i := range n {
		els[i] = &Election{Claimer: &Claimer{Holder: fmt.Sprintf("w%d", i), Lease: time.Minute, Now: clk.Now}}
		clients[i] = ts.dial(t)
	}
	round := func(who []int) []LeaseInfo {
		out := make([]LeaseInfo, n)
		var wg sync.WaitGroup
		for _, i := range who {
			wg.Go(func() {
				info, err := els[i].Hold(ctx, clients[i])
				if err != nil {
					t.Logf("w%d Hold (contended): %v", i, err)
				}
				out[i] = info
			})
		}
		wg.Wait()
		return out
	}
	holders := func(infos []LeaseInfo) (mine []int) {
		for i, in := range infos {
			if in.Mine {
				mine = append(mine, i)
			}
		}
		return mine
	}
	// settle runs rounds of who until one holds the lease (racers may
	// all lose a round to each other's RENAME), never two at once.
	settle := func(what string, who []int) []int {
		for r := range 5 {
			got := holders(round(who))
			if len(got) > 1 {
				t.Fatalf("%s, round %d: %v hold the lease at once", what, r, got)
			}
			if len(got) == 1 {
				return got
			}
		}
		t.Fatalf("%s: nobody holds the lease after 5 rounds", what)
		return nil
	}
	all := []int{0, 1, 2, 3}
	first := settle("first round", all)
	h := first[0]
	for range 3 {
		clk.Add(20 * time.Second)
		if got := holders(round(all)); len(got) != 1 || got[0] != h {
			t.Fatalf("renewal round: %v hold the lease, want only w%d", got, h)
		}
	}
	if !els[h].Acting(clk.Now()) {
		t.Fatalf("w%d holds a fresh lease but is not acting", h)
	}
	// The holder dies: the others wait out the lease, then one takes over.
	var rest []int
	for _, i := range all {
		if i != h {
			rest = append(rest, i)
		}
	}
	clk.Add(30 * time.Second)
	if got := holders(round(rest)); len(got) != 0 {
		t.Fatalf("before the lease expired: %v took it over, want none", got)
	}
	clk.Add(2 * time.Minute)
	if els[h].Acting(clk.Now()) {
		t.Fatalf("w%d still acting after its lease expired", h)
	}
	next := settle("after the lease expired", rest)
	if info := round([]int{h})[h]; info.Mine || info.Holder != fmt.Sprintf("w%d", next[0]) {
		t.Fatalf("the old holder after the take-over: got %+v, want w%d's lease", info, next[0])
	}
	// A clean stop hands the lease over without waiting.
	if err := els[next[0]].Release(ctx, clients[next[0]]); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := holders(round([]int{h})); len(got) != 1 {
		t.Fatalf("after Release: %v hold the lease, want w%d at once", got, h)
	}
}

// TestElectionHostileNote: a note APPENDed to the lease folder with an
// absurd expiry blocks the election only for MaxLease.
func TestElectionHostileNote(t *testing.T) {
	for _, checks := range []bool{true, false} {
		ts := startServer(t, serverConfig{})
		ts.createMailbox(t, LeaseFolderName)
		ts.add(t, LeaseFolderName, []byte("Subject: mailagent lease evil 32503680000\r\n\r\nx\r\n"), time.Now())
		ctx := context.Background()
		clk := &clock{t: time.Now()}
		cl := &Claimer{Holder: "good", Lease: time.Minute, Now: clk.Now}
		if !checks {
			cl = cl.WithoutChecksForTest()
		}
		e := &Election{Claimer: cl}
		c := ts.dial(t)
		info, err := e.Hold(ctx, c)
		if err != nil || info.Mine || info.Holder != "evil" {
			t.Fatalf("checks %v: first Hold: got %+v, %v, want held by evil", checks, info, err)
		}
		clk.Add(cl.maxLease() + 2*cl.skew() + time.Second)
		info, err = e.Hold(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if checks && !info.Mine {
			t.Errorf("a forged lease note with an absurd expiry still blocks after MaxLease: %+v", info)
		}
		if !checks && info.Mine {
			t.Errorf("positive control: with the cap off the forged note should still hold, got %+v", info)
		}
	}
}
