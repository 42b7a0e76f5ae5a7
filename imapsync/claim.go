package imapsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
)

// Claims: several watchers, each with its own state, on one mailbox.
//
// The mailbox is the one state they share, so a watcher claims a message
// in the mailbox before it acts on it: the keyword "$MAClaim_<holder>"
// set with a conditional STORE (RFC 7162 CONDSTORE: UID FETCH MODSEQ,
// then UID STORE (UNCHANGEDSINCE modseq)). Of two watchers that read the
// same MODSEQ only the first STORE lands; the server refuses the second
// ([MODIFIED]), and a fresh FETCH of the flags tells each who won. Once
// the message's outcome is recorded the holder sets "$MADone_<holder>"
// (Finish) and removes its claim.
//
// A claim has a lease, so that a watcher killed mid-way does not keep a
// message for ever; but the keyword carries no time. A keyword with its
// expiry in it would be a new keyword every few minutes, and a server
// keeps every keyword a mailbox has ever used (Dovecot lists them all in
// PERMANENTFLAGS, to every client, for ever). Instead the lease runs on
// each watcher's own clock: another watcher's claim is live until a Lease
// (plus Skew) after this watcher first saw the message at its current
// MODSEQ. A watcher first sees a claim after it was made, so it never
// takes one over early; any change to the message (a renewal, a flag)
// starts the wait again, which only delays a take-over. No two machines'
// clocks are ever compared. A take-over first removes the dead claim
// with a conditional STORE, then claims as for a free message. The holder
// keeps the time of its own claims in memory; a claim of its own that it
// does not remember (a restart) is renewed the same way, so that every
// other watcher's wait starts again.
//
// Keywords are set by clients, never by a sender, but anyone with the
// account (another program, a filter) can set one: a forged claim holds a
// message for one Lease at most, like any other.

// Claim keyword prefixes.
const (
	ClaimKeywordPrefix = "$MAClaim_"
	DoneKeywordPrefix  = "$MADone_"
)

// ErrBadHolder means a Claimer's Holder is not 1 to 16 lower-case letters
// and digits.
var ErrBadHolder = errors.New("imap claim: holder must be 1 to 16 characters a-z, 0-9")

// ValidHolder reports whether h can name a claim's holder: 1 to 16
// characters a-z, 0-9 (so a claim keyword is an atom well under the 50
// characters Dovecot allows).
func ValidHolder(h string) bool {
	if h == "" || len(h) > 16 {
		return false
	}
	for _, r := range h {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// ClaimKeyword is holder's claim keyword.
func ClaimKeyword(holder string) string { return ClaimKeywordPrefix + holder }

// DoneKeyword is the keyword holder sets once a message's outcome is
// recorded.
func DoneKeyword(holder string) string { return DoneKeywordPrefix + holder }

// claimMark is one claim keyword, parsed.
type claimMark struct {
	keyword string
	holder  string
}

// parseMarks returns the claim and done keywords among flags; keywords of
// the prefix that do not parse are not claims and are ignored. A claim
// keyword of the first release, "$MAClaim_<holder>_<unix expiry>", is
// read as a claim by holder (its expiry is not believed).
func parseMarks(flags []string) (claims []claimMark, done []string) {
	for _, f := range flags {
		switch {
		case hasPrefixFold(f, DoneKeywordPrefix):
			if h := strings.ToLower(f[len(DoneKeywordPrefix):]); ValidHolder(h) {
				done = append(done, h)
			}
		case hasPrefixFold(f, ClaimKeywordPrefix):
			h := strings.ToLower(f[len(ClaimKeywordPrefix):])
			if i := strings.IndexByte(h, '_'); i >= 0 {
				sec, err := strconv.ParseInt(h[i+1:], 10, 64)
				if err != nil || sec <= 0 || sec > 1<<40 {
					continue
				}
				h = h[:i]
			}
			if !ValidHolder(h) {
				continue
			}
			claims = append(claims, claimMark{keyword: f, holder: h})
		}
	}
	slices.Sort(done)
	return claims, done
}

// ClaimState is what a message's keywords say about who acts on it.
type ClaimState int

// ClaimState values.
const (
	// ClaimWon: the Claimer holds the message until Expires.
	ClaimWon ClaimState = iota + 1
	// ClaimHeld: another watcher (Holder) holds it until Expires.
	ClaimHeld
	// ClaimDone: Holder has recorded the message's outcome.
	ClaimDone
)

func (s ClaimState) String() string {
	switch s {
	case ClaimWon:
		return "won"
	case ClaimHeld:
		return "held"
	case ClaimDone:
		return "done"
	}
	return "unknown"
}

// ClaimResult is one message's claim after Claim.
type ClaimResult struct {
	UID   uint32
	State ClaimState
	// Holder is the watcher that holds or decided the message (the
	// Claimer's own Holder for ClaimWon, and possibly for ClaimDone).
	Holder string
	// Expires is the claim's lease (zero for ClaimDone).
	Expires time.Time
}

// Claimer claims messages of the selected mailbox for one watcher. Its
// fields are set before first use; it is safe for concurrent use, but a
// Client is not (run one call at a time per Client). A Claimer serves one
// mailbox: it remembers claims by UID.
type Claimer struct {
	// Holder names the watcher: a stable id per state directory
	// (ValidHolder).
	Holder string
	// Lease is how long a claim holds without being finished (default
	// 10 minutes).
	Lease time.Duration
	// MaxLease caps an election note's expiry as seen from now (default
	// 6×Lease): one further ahead counts as expiring MaxLease after this
	// Claimer first saw it (Election).
	MaxLease time.Duration
	// Skew is how long after its lease another watcher's claim is still
	// respected (default 2s): for a claim it covers the time between the
	// claim's STORE and this watcher's first sight of it, for an election
	// note clocks that differ.
	Skew time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	// unchecked is the positive control of the adversarial tests
	// (WithoutChecksForTest): no UNCHANGEDSINCE, and a claim of another
	// watcher never expires.
	unchecked bool
	// beforeStore, if set, runs before each conditional STORE (tests
	// only: BeforeStoreForTest).
	beforeStore func(uid uint32)

	mu        sync.Mutex
	mine      map[uint32]time.Time // uid → when our claim landed
	seen      map[uint32]claimSeen // uid → when first seen at its MODSEQ
	firstSeen map[string]time.Time // election note → when an absurd one was first seen
}

// claimSeen is when a message carrying another watcher's claim was first
// seen at one MODSEQ.
type claimSeen struct {
	modseq uint64
	first  time.Time
}

func (cl *Claimer) now() time.Time {
	if cl.Now != nil {
		return cl.Now()
	}
	return time.Now()
}

func (cl *Claimer) lease() time.Duration {
	if cl.Lease > 0 {
		return cl.Lease
	}
	return 10 * time.Minute
}

func (cl *Claimer) maxLease() time.Duration {
	if cl.MaxLease > 0 {
		return cl.MaxLease
	}
	return 6 * cl.lease()
}

func (cl *Claimer) skew() time.Duration {
	if cl.Skew > 0 {
		return cl.Skew
	}
	return 2 * time.Second
}

// expiry is the expiry of an election note written now: now+Lease
// rounded up to a quarter of the lease (at least a second).
func (cl *Claimer) expiry(now time.Time) time.Time {
	q := max(cl.lease()/4, time.Second).Truncate(time.Second)
	e := now.Add(cl.lease())
	if r := e.Truncate(q); r.Before(e) {
		e = r.Add(q)
	}
	return e.Truncate(time.Second)
}

// effective is the expiry an election note (named by key) is judged by:
// its own, or, when that lies beyond MaxLease from now, MaxLease after it
// was first seen.
func (cl *Claimer) effective(key string, expires, now time.Time) time.Time {
	if cl.unchecked || !expires.After(now.Add(cl.maxLease()+cl.skew())) {
		return expires
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.firstSeen == nil {
		cl.firstSeen = map[string]time.Time{}
	}
	first, ok := cl.firstSeen[key]
	if !ok {
		first = now
		cl.firstSeen[key] = now
	}
	return first.Add(cl.maxLease())
}

// sight returns when this Claimer first saw uid at modseq, noting now if
// it had not.
func (cl *Claimer) sight(uid uint32, modseq uint64, now time.Time) time.Time {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.seen == nil {
		cl.seen = map[uint32]claimSeen{}
	}
	if s, ok := cl.seen[uid]; ok && s.modseq == modseq {
		return s.first
	}
	cl.seen[uid] = claimSeen{modseq: modseq, first: now}
	return now
}

// claimedAt returns when our claim on uid landed, if we remember one.
func (cl *Claimer) claimedAt(uid uint32) (time.Time, bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	t, ok := cl.mine[uid]
	return t, ok
}

func (cl *Claimer) setMine(uid uint32, at time.Time) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.mine == nil {
		cl.mine = map[uint32]time.Time{}
	}
	if at.IsZero() {
		delete(cl.mine, uid)
		return
	}
	cl.mine[uid] = at
}

// prune forgets our claims past their lease (a claim of ours we do not
// remember is renewed) and sights older than a day and ten leases (a
// message seen again is seen afresh, which only delays a take-over): the
// maps hold only messages claimed lately.
func (cl *Claimer) prune(now time.Time) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for k, t := range cl.mine {
		if !t.Add(cl.lease()).After(now) {
			delete(cl.mine, k)
		}
	}
	old := now.Add(-max(24*time.Hour, 10*cl.lease()))
	for k, s := range cl.seen {
		if s.first.Before(old) {
			delete(cl.seen, k)
		}
	}
}

// verdict is judge's answer: the result (State 0: free to claim) and the
// claim keywords a claimant must remove first (dead claims, and a claim
// of ours to renew).
type verdict struct {
	ClaimResult
	remove []string
}

// judge says who holds a message with these flags at modseq, at now:
// done, held by another live claim, won (our own claim, remembered and
// within its lease), or free.
func (cl *Claimer) judge(uid uint32, flags []string, modseq uint64, now time.Time) verdict {
	claims, done := parseMarks(flags)
	v := verdict{ClaimResult: ClaimResult{UID: uid}}
	if len(done) > 0 {
		v.State, v.Holder = ClaimDone, done[0]
		if slices.Contains(done, cl.Holder) {
			v.Holder = cl.Holder
		}
		return v
	}
	own := false
	for _, m := range claims {
		if m.holder == cl.Holder {
			if at, ok := cl.claimedAt(uid); ok && at.Add(cl.lease()).After(now) {
				own = true
				v.Expires = at.Add(cl.lease())
				continue
			}
			v.remove = append(v.remove, m.keyword) // ours, forgotten or lapsed: renew it
			continue
		}
		exp := cl.sight(uid, modseq, now).Add(cl.lease())
		if cl.unchecked || exp.Add(cl.skew()).After(now) {
			if v.State != ClaimHeld || exp.After(v.Expires) {
				v.State, v.Holder, v.Expires = ClaimHeld, m.holder, exp
			}
			continue
		}
		v.remove = append(v.remove, m.keyword)
	}
	switch {
	case v.State == ClaimHeld:
		v.remove = nil
	case own:
		v.State, v.Holder = ClaimWon, cl.Holder
	default:
		v.Expires = time.Time{}
	}
	return v
}

// claimFetch is one message's FLAGS and MODSEQ.
type claimFetch struct {
	flags  []string
	modseq uint64
}

func (c *Client) claimFetch(ctx context.Context, uids []uint32) (map[uint32]claimFetch, error) {
	msgs, err := c.runFetch(ctx, uids, &imap.FetchOptions{UID: true, Flags: true, ModSeq: true}, 0)
	if err != nil {
		return nil, err
	}
	out := make(map[uint32]claimFetch, len(msgs))
	for _, m := range msgs {
		out[m.uid] = claimFetch{flags: m.flags, modseq: m.modseq}
	}
	return out, nil
}

// CanClaim reports why Claim cannot work on the selected mailbox: nil
// when the server has CONDSTORE and keeps keywords, else an error
// wrapping ErrUnsupported or ErrKeywordsRefused.
func (c *Client) CanClaim() error {
	if !c.Has(string(imap.CapCondStore)) {
		return fmt.Errorf("imap claim: the server has no CONDSTORE: %w", ErrUnsupported)
	}
	if len(c.KeywordsAllowed([]string{ClaimKeyword("x")})) == 0 {
		return fmt.Errorf("imap claim: %w", ErrKeywordsRefused)
	}
	return nil
}

// claimAttempts is how many rounds Claim runs on a message that nobody
// holds before it leaves it for the next sync: a take-over or renewal
// takes two (remove the dead claim, then claim), and a STORE refused
// while no claim landed is tried again.
const claimAttempts = 4

// Claim claims uids of c's selected mailbox for cl.Holder, atomically:
// each message unclaimed, or whose claims have all lapsed, gets this
// watcher's claim by a conditional STORE. Messages that no longer exist
// are left out of the result. A message claimed by another watcher at the
// same moment comes back ClaimHeld: of two racing claimants exactly one
// wins. One still refused after a few tries with no claim on it comes
// back ClaimHeld with no Holder (try again later).
//
// Errors: ErrUnsupported without CONDSTORE (or when the mailbox has no
// MODSEQ), ErrKeywordsRefused when the mailbox keeps no keywords,
// ErrBadHolder, and IMAP errors.
func (cl *Claimer) Claim(ctx context.Context, c *Client, uids []uint32) ([]ClaimResult, error) {
	if !ValidHolder(cl.Holder) {
		return nil, ErrBadHolder
	}
	if len(uids) == 0 {
		return nil, nil
	}
	if _, _, err := c.selected(); err != nil {
		return nil, fmt.Errorf("imap claim: %w", err)
	}
	if err := c.CanClaim(); err != nil {
		return nil, err
	}
	now := cl.now()
	cl.prune(now)
	results := map[uint32]ClaimResult{}
	// A conditional STORE can be refused with no claim landing at all:
	// something else changed the message (a flag set by another client),
	// or the server judged it changed when another message did (seen once
	// in CI on Dovecot: four racers, one message won by none). Such
	// messages are claimed again at once, a few times, rather than left
	// for the next sync.
	pending := uids
	for attempt := 0; attempt < claimAttempts && len(pending) > 0; attempt++ {
		var err error
		pending, err = cl.claimRound(ctx, c, pending, now, results)
		if err != nil {
			return nil, err
		}
	}
	for _, uid := range pending {
		// Still refused and still unclaimed: leave it for the next sync.
		results[uid] = ClaimResult{UID: uid, State: ClaimHeld, Holder: "", Expires: now}
	}
	out := make([]ClaimResult, 0, len(results))
	for _, uid := range uids {
		if r, ok := results[uid]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// condStore runs one conditional STORE of kws on uid (add or remove).
func (cl *Claimer) condStore(ctx context.Context, c *Client, uid uint32, modseq uint64, add bool, kws []string) error {
	opts := &imap.StoreOptions{UnchangedSince: modseq}
	if cl.unchecked {
		opts = nil
	}
	op := imap.StoreFlagsDel
	if add {
		op = imap.StoreFlagsAdd
	}
	flags := make([]imap.Flag, len(kws))
	for i, k := range kws {
		flags[i] = imap.Flag(k)
	}
	if cl.beforeStore != nil {
		cl.beforeStore(uid)
	}
	err := c.guard(ctx, func() error {
		return c.ic.Store(uidSet([]uint32{uid}), &imap.StoreFlags{Op: op, Silent: true, Flags: flags}, opts).Close()
	})
	if err != nil {
		return fmt.Errorf("imap claim uid %d: %w", uid, err)
	}
	return nil
}

// claimRound is one pass of Claim over uids: it records each message's
// result in results and returns those to look at again: a dead claim
// removed (claim next), or a STORE refused while no claim landed.
func (cl *Claimer) claimRound(ctx context.Context, c *Client, uids []uint32, now time.Time, results map[uint32]ClaimResult) ([]uint32, error) {
	before, err := c.claimFetch(ctx, uids)
	if err != nil {
		return nil, fmt.Errorf("imap claim: %w", err)
	}
	kw := ClaimKeyword(cl.Holder)
	var stored, again []uint32
	for _, uid := range uids {
		f, ok := before[uid]
		if !ok {
			continue
		}
		if f.modseq == 0 && !cl.unchecked {
			return nil, fmt.Errorf("imap claim: the mailbox reports no MODSEQ: %w", ErrUnsupported)
		}
		v := cl.judge(uid, f.flags, f.modseq, now)
		switch {
		case v.State != 0:
			results[uid] = v.ClaimResult
		case len(v.remove) > 0:
			// Take-over (or renewal): the dead claims go first, by a
			// conditional STORE; the next round claims the message.
			if err := cl.condStore(ctx, c, uid, f.modseq, false, uniq(v.remove)); err != nil {
				return nil, err
			}
			cl.setMine(uid, time.Time{})
			again = append(again, uid)
		default:
			if err := cl.condStore(ctx, c, uid, f.modseq, true, []string{kw}); err != nil {
				return nil, err
			}
			stored = append(stored, uid)
		}
	}
	if len(stored) == 0 {
		return again, nil
	}
	// The server's answer to a STORE that lost ([MODIFIED]) is not parsed
	// by go-imap: a fresh FETCH says who holds each message.
	after, err := c.claimFetch(ctx, stored)
	if err != nil {
		return nil, fmt.Errorf("imap claim: %w", err)
	}
	for _, uid := range stored {
		f, ok := after[uid]
		if !ok {
			continue // expunged meanwhile
		}
		if !slices.ContainsFunc(f.flags, func(k string) bool { return strings.EqualFold(k, kw) }) {
			// Our STORE was refused (keywords are case-insensitive:
			// a server may give ours back in another case). Whoever won holds it now; if
			// nobody did, try again.
			if v := cl.judge(uid, f.flags, f.modseq, now); v.State != 0 {
				results[uid] = v.ClaimResult
			} else {
				again = append(again, uid)
			}
			continue
		}
		cl.setMine(uid, now)
		v := cl.judge(uid, f.flags, f.modseq, now)
		if v.State == ClaimHeld {
			// Another watcher's claim sits beside ours (set without a
			// conditional STORE): neither acts until one lapses.
			results[uid] = v.ClaimResult
			continue
		}
		results[uid] = ClaimResult{UID: uid, State: ClaimWon, Holder: cl.Holder, Expires: now.Add(cl.lease())}
	}
	return again, nil
}

// Finish records that cl.Holder decided uids: it sets the done keyword
// and removes every claim keyword from them, so no watcher claims them
// again. Messages that no longer exist are skipped. It is idempotent and
// mends a half-finished message: one that already carries this holder's
// done keyword but still a claim (a stop cut Finish off between its two
// STOREs) loses the claim; one finished already costs one FETCH.
//
// The done keyword goes on before any claim comes off, so a message is
// never seen with neither; claims are read after it is on, so a claim
// that landed meanwhile is removed too.
func (cl *Claimer) Finish(ctx context.Context, c *Client, uids []uint32) error {
	if !ValidHolder(cl.Holder) {
		return ErrBadHolder
	}
	if len(uids) == 0 {
		return nil
	}
	flags, err := c.Flags(ctx, uids)
	if err != nil {
		return fmt.Errorf("imap claim finish: %w", err)
	}
	var undone, claimed []uint32
	for _, uid := range uids {
		fl, ok := flags[uid]
		if !ok {
			continue // expunged
		}
		claims, done := parseMarks(fl)
		switch {
		case !slices.Contains(done, cl.Holder):
			undone = append(undone, uid)
		case len(claims) > 0:
			claimed = append(claimed, uid)
		}
		cl.setMine(uid, time.Time{})
	}
	if len(undone) > 0 {
		if _, err := c.SetKeywords(ctx, undone, []string{DoneKeyword(cl.Holder)}); err != nil {
			return fmt.Errorf("imap claim finish: %w", err)
		}
		after, err := c.Flags(ctx, undone)
		if err != nil {
			return fmt.Errorf("imap claim finish: %w", err)
		}
		for _, uid := range undone {
			if claims, _ := parseMarks(after[uid]); len(claims) > 0 {
				claimed = append(claimed, uid)
				flags[uid] = after[uid]
			}
		}
	}
	var kws []string
	for _, uid := range claimed {
		claims, _ := parseMarks(flags[uid])
		for _, m := range claims {
			kws = append(kws, m.keyword)
		}
	}
	if len(kws) == 0 {
		return nil
	}
	if err := c.StoreFlags(ctx, claimed, false, uniq(kws)); err != nil {
		return fmt.Errorf("imap claim finish: %w", err)
	}
	return nil
}

// Release gives up cl.Holder's claims on uids without deciding them (a
// message this watcher will not act on, such as one too old for its first
// start): they carry no done keyword, and another watcher may claim them
// at once. Messages that no longer exist are skipped.
func (cl *Claimer) Release(ctx context.Context, c *Client, uids []uint32) error {
	if !ValidHolder(cl.Holder) {
		return ErrBadHolder
	}
	if len(uids) == 0 {
		return nil
	}
	for _, uid := range uids {
		cl.setMine(uid, time.Time{})
	}
	if err := c.StoreFlags(ctx, uids, false, []string{ClaimKeyword(cl.Holder)}); err != nil {
		return fmt.Errorf("imap claim release: %w", err)
	}
	return nil
}

// Marks returns, for each of uids that exists, what its keywords say
// (ClaimDone, ClaimHeld by a live claim, ClaimWon for our own live
// claim), without changing anything; a message with no live claim is
// left out. It needs no CONDSTORE: a watcher that only watches (no
// claims on this server) reads the done keywords of the acting one.
func (cl *Claimer) Marks(ctx context.Context, c *Client, uids []uint32) (map[uint32]ClaimResult, error) {
	flags, err := c.Flags(ctx, uids)
	if err != nil {
		return nil, fmt.Errorf("imap claim marks: %w", err)
	}
	now := cl.now()
	out := map[uint32]ClaimResult{}
	for uid, fl := range flags {
		// Without a MODSEQ a claim's wait runs from the first sight of
		// the message: a change to it does not start it again.
		if v := cl.judge(uid, fl, 0, now); v.State != 0 {
			out[uid] = v.ClaimResult
		}
	}
	return out, nil
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// WithoutChecksForTest returns a copy of cl with its defences off: no
// UNCHANGEDSINCE (a plain check-then-set), and another watcher's claim
// never lapses. It is the positive control of the adversarial tests
// only: the same attack, defence off, must land.
func (cl *Claimer) WithoutChecksForTest() *Claimer {
	return &Claimer{Holder: cl.Holder, Lease: cl.Lease, MaxLease: cl.MaxLease, Skew: cl.Skew, Now: cl.Now, unchecked: true}
}

// BeforeStoreForTest returns a copy of cl that calls hook before each
// conditional STORE, between reading a message's MODSEQ and claiming it:
// the window a racing client changes the message in. Tests only.
func (cl *Claimer) BeforeStoreForTest(hook func(uid uint32)) *Claimer {
	return &Claimer{Holder: cl.Holder, Lease: cl.Lease, MaxLease: cl.MaxLease, Skew: cl.Skew, Now: cl.Now, unchecked: cl.unchecked, beforeStore: hook}
}
