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
// in the mailbox before it acts on it: a keyword
// "$MAClaim_<holder>_<unix expiry>" set with a conditional STORE (RFC
// 7162 CONDSTORE: UID FETCH MODSEQ, then UID STORE (UNCHANGEDSINCE
// modseq)). Of two watchers that read the same MODSEQ only the first
// STORE lands; the server refuses the second ([MODIFIED]), and a fresh
// FETCH of the flags tells each who won. A claim carries a lease: a
// watcher killed mid-way leaves a claim that expires, and another takes
// the message over. Once the message's outcome is recorded the holder
// sets "$MADone_<holder>" (Finish) and the claim never expires.
//
// Keywords are set by clients, never by a sender, but anyone with the
// account (another program, a filter) can set one: a claim whose lease
// has passed is void, and one whose expiry lies absurdly far ahead
// (beyond MaxLease from now) counts as expiring MaxLease after this
// Claimer first saw it, so no forged keyword blocks a watcher for ever.

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

// ClaimKeyword is holder's claim keyword expiring at expires (to the
// second).
func ClaimKeyword(holder string, expires time.Time) string {
	return ClaimKeywordPrefix + holder + "_" + strconv.FormatInt(expires.Unix(), 10)
}

// DoneKeyword is the keyword holder sets once a message's outcome is
// recorded.
func DoneKeyword(holder string) string { return DoneKeywordPrefix + holder }

// claimMark is one claim keyword, parsed.
type claimMark struct {
	keyword string
	holder  string
	expires time.Time
}

// parseMarks returns the claim and done keywords among flags; keywords of
// the prefix that do not parse are not claims and are ignored.
func parseMarks(flags []string) (claims []claimMark, done []string) {
	for _, f := range flags {
		switch {
		case hasPrefixFold(f, DoneKeywordPrefix):
			if h := strings.ToLower(f[len(DoneKeywordPrefix):]); ValidHolder(h) {
				done = append(done, h)
			}
		case hasPrefixFold(f, ClaimKeywordPrefix):
			rest := f[len(ClaimKeywordPrefix):]
			i := strings.LastIndexByte(rest, '_')
			if i <= 0 {
				continue
			}
			h := strings.ToLower(rest[:i])
			sec, err := strconv.ParseInt(rest[i+1:], 10, 64)
			if !ValidHolder(h) || err != nil || sec <= 0 || sec > 1<<40 {
				continue
			}
			claims = append(claims, claimMark{keyword: f, holder: h, expires: time.Unix(sec, 0)})
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
// Client is not (run one call at a time per Client).
type Claimer struct {
	// Holder names the watcher: a stable random id per state directory
	// (ValidHolder).
	Holder string
	// Lease is how long a claim holds without being finished (default
	// 10 minutes). Expiries are rounded up to a quarter of it, so that a
	// burst shares a few keywords instead of making one per message.
	Lease time.Duration
	// MaxLease caps a claim's expiry as seen from now (default 6×Lease):
	// one further ahead counts as expiring MaxLease after this Claimer
	// first saw it.
	MaxLease time.Duration
	// Skew is how long after its expiry a claim of another holder is
	// still respected, for clocks that differ (default 2s).
	Skew time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	// unchecked is the positive control of the adversarial tests
	// (ClaimerWithoutChecksForTest): no UNCHANGEDSINCE, no cap.
	unchecked bool
	// beforeStore, if set, runs before each conditional STORE (tests
	// only: BeforeStoreForTest).
	beforeStore func(uid uint32)

	mu        sync.Mutex
	firstSeen map[string]time.Time // uid/keyword → when an absurd claim was first seen
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

// expiry is the expiry of a claim made now: now+Lease rounded up to a
// quarter of the lease (at least a second).
func (cl *Claimer) expiry(now time.Time) time.Time {
	q := max(cl.lease()/4, time.Second).Truncate(time.Second)
	e := now.Add(cl.lease())
	if r := e.Truncate(q); r.Before(e) {
		e = r.Add(q)
	}
	return e.Truncate(time.Second)
}

// effective is the expiry a claim is judged by: its own, or, when that
// lies beyond MaxLease from now, MaxLease after it was first seen.
func (cl *Claimer) effective(uid uint32, m claimMark, now time.Time) time.Time {
	if cl.unchecked || !m.expires.After(now.Add(cl.maxLease()+cl.skew())) {
		return m.expires
	}
	key := strconv.FormatUint(uint64(uid), 10) + "/" + m.keyword
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

// judge says who holds a message with these flags at now: done, held by
// another, or free to claim (state 0), with our own live claim reported
// as ClaimWon.
func (cl *Claimer) judge(uid uint32, flags []string, now time.Time) ClaimResult {
	claims, done := parseMarks(flags)
	r := ClaimResult{UID: uid}
	if len(done) > 0 {
		r.State, r.Holder = ClaimDone, done[0]
		if slices.Contains(done, cl.Holder) {
			r.Holder = cl.Holder
		}
		return r
	}
	for _, m := range claims {
		exp := cl.effective(uid, m, now)
		if m.holder == cl.Holder {
			if exp.After(now) && (r.State != ClaimWon || exp.After(r.Expires)) && r.State != ClaimHeld {
				r.State, r.Holder, r.Expires = ClaimWon, cl.Holder, exp
			}
			continue
		}
		if exp.Add(cl.skew()).After(now) && (r.State != ClaimHeld || exp.After(r.Expires)) {
			r.State, r.Holder, r.Expires = ClaimHeld, m.holder, exp
		}
	}
	return r
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
	if len(c.KeywordsAllowed([]string{ClaimKeyword("x", time.Unix(1, 0))})) == 0 {
		return fmt.Errorf("imap claim: %w", ErrKeywordsRefused)
	}
	return nil
}

// Claim claims uids of c's selected mailbox for cl.Holder, atomically:
// each message unclaimed, or whose claims have all expired, gets a fresh
// claim keyword by a conditional STORE, and one already claimed by
// cl.Holder has its lease renewed. Messages that no longer exist are left
// out of the result. A message claimed by another watcher at the same
// moment comes back ClaimHeld: of two racing claimants exactly one wins.
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
	kw := ClaimKeyword(cl.Holder, cl.expiry(now))
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
		pending, err = cl.claimRound(ctx, c, pending, now, kw, results)
		if err != nil {
			return nil, err
		}
	}
	for _, uid := range pending {
		// Still refused and still unclaimed: leave it for the next round.
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

// claimAttempts is how many conditional STOREs Claim tries on a message
// that nobody holds before it leaves it for the next sync.
const claimAttempts = 3

// claimRound is one pass of Claim over uids: it records each message's
// result in results and returns those whose STORE was refused while no
// live claim landed (to be tried again).
func (cl *Claimer) claimRound(ctx context.Context, c *Client, uids []uint32, now time.Time, kw string, results map[uint32]ClaimResult) ([]uint32, error) {
	before, err := c.claimFetch(ctx, uids)
	if err != nil {
		return nil, fmt.Errorf("imap claim: %w", err)
	}
	var stored []uint32
	for _, uid := range uids {
		f, ok := before[uid]
		if !ok {
			continue
		}
		r := cl.judge(uid, f.flags, now)
		if r.State == ClaimDone || r.State == ClaimHeld {
			results[uid] = r
			continue
		}
		if f.modseq == 0 && !cl.unchecked {
			return nil, fmt.Errorf("imap claim: the mailbox reports no MODSEQ: %w", ErrUnsupported)
		}
		if slices.Contains(f.flags, kw) {
			results[uid] = ClaimResult{UID: uid, State: ClaimWon, Holder: cl.Holder, Expires: r.Expires}
			continue
		}
		opts := &imap.StoreOptions{UnchangedSince: f.modseq}
		if cl.unchecked {
			opts = nil
		}
		if cl.beforeStore != nil {
			cl.beforeStore(uid)
		}
		err := c.guard(ctx, func() error {
			return c.ic.Store(uidSet([]uint32{uid}), &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.Flag(kw)}}, opts).Close()
		})
		if err != nil {
			return nil, fmt.Errorf("imap claim uid %d: %w", uid, err)
		}
		stored = append(stored, uid)
	}
	if len(stored) == 0 {
		return nil, nil
	}
	// The server's answer to a STORE that lost ([MODIFIED]) is not parsed
	// by go-imap: a fresh FETCH says who holds each message.
	after, err := c.claimFetch(ctx, stored)
	if err != nil {
		return nil, fmt.Errorf("imap claim: %w", err)
	}
	var stale []string
	var again []uint32
	for _, uid := range stored {
		f, ok := after[uid]
		if !ok {
			continue // expunged meanwhile
		}
		r := cl.judge(uid, f.flags, now)
		if cl.unchecked && slices.Contains(f.flags, kw) {
			r = ClaimResult{UID: uid, State: ClaimWon, Holder: cl.Holder}
		}
		if r.State == ClaimWon && !slices.Contains(f.flags, kw) {
			r.State = 0 // an older claim of ours: another STORE won this round
		}
		if r.State == 0 {
			// Our STORE was refused and no claim is live: another
			// watcher claimed and finished or dropped it at once, or
			// the server refused it spuriously. Try again.
			again = append(again, uid)
			continue
		}
		if r.State == ClaimWon {
			r.Expires = cl.expiry(now)
			claims, _ := parseMarks(f.flags)
			for _, m := range claims {
				if m.keyword != kw && (m.holder == cl.Holder || !cl.effective(uid, m, now).Add(cl.skew()).After(now)) {
					stale = append(stale, m.keyword)
				}
			}
		}
		results[uid] = r
	}
	if len(stale) > 0 {
		// Expired claims and our own older ones are void: drop them (best
		// effort; they are judged void anyway).
		_ = c.StoreFlags(ctx, stored, false, uniq(stale))
	}
	return again, nil
}

// Finish records that cl.Holder decided uids: it sets the done keyword
// and removes every claim keyword from them, so their claims never
// expire. Messages that no longer exist are skipped.
func (cl *Claimer) Finish(ctx context.Context, c *Client, uids []uint32) error {
	if !ValidHolder(cl.Holder) {
		return ErrBadHolder
	}
	if len(uids) == 0 {
		return nil
	}
	if _, err := c.SetKeywords(ctx, uids, []string{DoneKeyword(cl.Holder)}); err != nil {
		return fmt.Errorf("imap claim finish: %w", err)
	}
	flags, err := c.Flags(ctx, uids)
	if err != nil {
		return fmt.Errorf("imap claim finish: %w", err)
	}
	var kws []string
	for _, fl := range flags {
		claims, _ := parseMarks(fl)
		for _, m := range claims {
			kws = append(kws, m.keyword)
		}
	}
	if len(kws) == 0 {
		return nil
	}
	if err := c.StoreFlags(ctx, uids, false, uniq(kws)); err != nil {
		return fmt.Errorf("imap claim finish: %w", err)
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
		if r := cl.judge(uid, fl, now); r.State != 0 {
			out[uid] = r
		}
	}
	return out, nil
}

func uniq(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// WithoutChecksForTest returns a copy of cl with its defences off: no
// UNCHANGEDSINCE (a plain check-then-set) and no cap on a claim's expiry.
// It is the positive control of the adversarial tests only: the same
// attack, defence off, must land.
func (cl *Claimer) WithoutChecksForTest() *Claimer {
	return &Claimer{Holder: cl.Holder, Lease: cl.Lease, MaxLease: cl.MaxLease, Skew: cl.Skew, Now: cl.Now, unchecked: true}
}

// BeforeStoreForTest returns a copy of cl that calls hook before each
// conditional STORE, between reading a message's MODSEQ and claiming it:
// the window a racing client changes the message in. Tests only.
func (cl *Claimer) BeforeStoreForTest(hook func(uid uint32)) *Claimer {
	return &Claimer{Holder: cl.Holder, Lease: cl.Lease, MaxLease: cl.MaxLease, Skew: cl.Skew, Now: cl.Now, unchecked: cl.unchecked, beforeStore: hook}
}
