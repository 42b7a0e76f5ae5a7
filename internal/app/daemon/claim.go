package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/store"
)

// Two watchers, one mailbox, one reply. Watchers on different machines,
// each with its own state, may watch the same account: the mailbox is the
// one state they share, so a watcher claims a message there before it
// acts on it (imapsync.Claimer: a keyword set by a conditional STORE, with
// a lease) and marks it done once its outcome is recorded. A message
// another watcher holds is left alone (not recorded: it holds the
// checkpoint back and is looked at again); one another watcher has
// decided is recorded here as handled elsewhere, naming that watcher. A
// server without CONDSTORE gets one acting watcher, elected through a
// lease folder (imapsync.Election), when claims are on; the others stay
// passive and say why in their status. With claims on "auto" (the
// default) such a server gets no election: the watcher assumes it is
// alone and says so. Exactly-once sending is still guarded by the
// outbox's own check of Sent and \Answered.
//
// A message this watcher itself marked decided (its own done keyword)
// but has no record of, because its state was lost, is handled again, as
// without claims: the outbox's check keeps it from a second reply. The
// watcher's id is kept beside its database and, when that file is gone
// too, derived from the host and the state directory's path, so a
// watcher that lost its state still knows its own keywords.

// DecisionHandledElsewhere is the decision recorded for a message another
// watcher of the account decided.
const DecisionHandledElsewhere = "handled_elsewhere"

// Claim modes, as the status reports them (status.Account.ClaimMode).
const (
	ClaimModeClaims  = "claims"  // per-message claims (CONDSTORE)
	ClaimModeElected = "elected" // no CONDSTORE: this watcher holds the lease
	ClaimModePassive = "passive" // no CONDSTORE: another watcher holds it
	ClaimModeOff     = "off"
)

// ClaimOptions configures the claims. The zero value claims with the
// defaults.
type ClaimOptions struct {
	// Off disables claims: the watcher acts on every message as if it
	// were alone (tests' positive controls; one watcher per account).
	Off bool
	// Auto claims only where the server has CONDSTORE: a server without
	// it gets no election, and the watcher acts as if alone (sync.claims
	// = "auto", the default).
	Auto bool
	// Holder is this watcher's id in claim keywords (imapsync.ValidHolder);
	// default: the id kept in the file "claim-holder" beside the state
	// database (HolderID), so it is stable across restarts.
	Holder string
	// Lease is how long a claim holds (default 10 minutes). A message is
	// only started while its claim has more than a third of it left.
	Lease time.Duration
	// Recheck is how soon a sync runs again when another watcher holds
	// messages it has not finished (default 15s, at most Lease/3).
	Recheck time.Duration
}

// accountClaims is one account's claim state.
type accountClaims struct {
	mode     string
	claimer  *imapsync.Claimer
	election *imapsync.Election
	elConn   *imapsync.Client // the election's own connection
	elMu     sync.Mutex       // one election round at a time
	wake     chan struct{}    // the watcher's Wake
	expires  map[uint32]time.Time
	timer    *time.Timer
	// leaseUntil is the election's lease while this watcher holds it.
	leaseUntil time.Time
}

func (d *Daemon) claimLease() time.Duration { return orDefault(d.Claims.Lease, 10*time.Minute) }

func (d *Daemon) claimRecheck() time.Duration {
	return min(orDefault(d.Claims.Recheck, 15*time.Second), max(d.claimLease()/3, time.Second))
}

// claimHolder returns this watcher's holder id (see ClaimOptions.Holder).
func (d *Daemon) claimHolder() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.holder != "" {
		return d.holder
	}
	d.holder = d.Claims.Holder
	if d.holder == "" {
		var err error
		d.holder, err = HolderID(filepath.Dir(d.Store.Path()))
		if err != nil {
			d.log().Warn("claim holder id: using one for this run only", "err", err)
			d.holder = derivedHolder(filepath.Dir(d.Store.Path()))
		}
	}
	return d.holder
}

// derivedHolder is the id of a watcher whose state directory is dir on
// this host: 12 hex digits of a hash of the host name and dir's absolute
// path. The same directory on the same host gives the same id again
// after the state was lost; two directories, or two hosts, differ.
func derivedHolder(dir string) string {
	host, _ := os.Hostname()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sum := sha256.Sum256([]byte("mailagent claim holder\x00" + host + "\x00" + dir))
	return hex.EncodeToString(sum[:6])
}

// HolderID returns the watcher id kept in dir/claim-holder, creating it on
// first use (derived from the host and dir: derivedHolder).
func HolderID(dir string) (string, error) {
	path := filepath.Join(dir, "claim-holder")
	if b, err := os.ReadFile(path); err == nil {
		if h := strings.TrimSpace(string(b)); imapsync.ValidHolder(h) {
			return h, nil
		}
		return "", fmt.Errorf("claim holder: %s holds no valid id", path)
	}
	h := derivedHolder(dir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return HolderID(dir) // another process wrote it first
	}
	if err != nil {
		return "", fmt.Errorf("claim holder: %w", err)
	}
	_, werr := f.WriteString(h + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		return "", fmt.Errorf("claim holder: %w", err)
	}
	return h, nil
}

// claims returns the account's claim state, created on first use.
func (d *Daemon) claims(account string) *accountClaims {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.claimState == nil {
		d.claimState = map[string]*accountClaims{}
	}
	ac, ok := d.claimState[account]
	if !ok {
		ac = &accountClaims{wake: make(chan struct{}, 1), expires: map[uint32]time.Time{}}
		d.claimState[account] = ac
	}
	return ac
}

// wakeLater makes the account's watcher sync again after wait.
func (d *Daemon) wakeLater(account string, wait time.Duration) {
	ac := d.claims(account)
	d.mu.Lock()
	defer d.mu.Unlock()
	if ac.timer != nil {
		ac.timer.Stop()
	}
	ac.timer = time.AfterFunc(wait, func() {
		select {
		case ac.wake <- struct{}{}:
		default:
		}
	})
}

// claimMode decides, on the watcher's connection, how this account is
// shared: claims where the server has CONDSTORE and keeps keywords, else
// the election.
func (d *Daemon) claimMode(c *imapsync.Client, ac *accountClaims) string {
	if d.Claims.Off {
		return ClaimModeOff
	}
	holder := d.claimHolder()
	if ac.claimer == nil {
		ac.claimer = &imapsync.Claimer{Holder: holder, Lease: d.claimLease(), Now: d.now}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := c.CanClaim(); err == nil {
		ac.mode, ac.election = ClaimModeClaims, nil
		return ClaimModeClaims
	}
	if d.Claims.Auto {
		ac.mode = ClaimModeOff
		return ClaimModeOff
	}
	if ac.election == nil {
		ac.election = &imapsync.Election{Claimer: ac.claimer}
	}
	if ac.mode == ClaimModeElected {
		return ClaimModeElected
	}
	ac.mode = ClaimModePassive
	return ClaimModePassive // until the election says otherwise
}

// filterClaimed is called by process before it fetches uids: it returns
// those this watcher may act on now, records the ones another watcher has
// decided as handled elsewhere, and leaves the ones another watcher holds
// unrecorded (with a wake-up to look again). Messages already terminal
// here are finished in the mailbox (their done keyword) and passed on.
func (d *Daemon) filterClaimed(ctx context.Context, a Account, c *imapsync.Client, uidvalidity uint32, uids []uint32) ([]uint32, error) {
	ac := d.claims(a.Name)
	mode := d.claimMode(c, ac)
	holder := d.claimHolder()
	if mode == ClaimModeOff || len(uids) == 0 {
		note := ""
		if mode == ClaimModeOff && !d.Claims.Off {
			note = `the server has no CONDSTORE, so messages are not claimed: this watcher assumes it is the account's only one (set sync.claims = "on" to elect one acting watcher among several)`
		}
		d.setStatus(a.Name, func(s *Status) {
			s.ClaimMode, s.ClaimHolder = mode, holder
			if mode == ClaimModeOff {
				s.ClaimNote = note
			}
		})
		return uids, nil
	}
	key := func(uid uint32) store.MessageKey {
		return store.MessageKey{Account: a.Name, Mailbox: a.Mailbox, UIDValidity: uidvalidity, UID: uid}
	}
	// Terminal here already: finish them in the mailbox, nothing to claim.
	// Decided or acted here (a crash cut it off before it was done): this
	// watcher's own work, resumed below even when another watcher has
	// marked the message done since (it took the claim over meanwhile).
	var open, terminal []uint32
	begun := map[uint32]bool{}
	for _, uid := range uids {
		rec, err := d.Store.GetMessage(key(uid))
		switch {
		case err == nil && rec.State.Terminal():
			terminal = append(terminal, uid)
		default:
			begun[uid] = err == nil && (rec.State == store.StateDecided || rec.State == store.StateActed)
			open = append(open, uid)
		}
	}
	if len(terminal) > 0 && mode != ClaimModePassive {
		d.finishOwn(ctx, a, c, uidvalidity, terminal)
	}
	var results map[uint32]imapsync.ClaimResult
	var note string
	switch mode {
	case ClaimModeClaims:
		res, err := ac.claimer.Claim(ctx, c, open)
		if err != nil {
			return nil, fmt.Errorf("claim %d messages: %w", len(open), err)
		}
		results = map[uint32]imapsync.ClaimResult{}
		for _, r := range res {
			results[r.UID] = r
		}
	default:
		mode = ClaimModePassive
		info, err := d.electionRound(ctx, a, ac)
		if info.Mine && d.leaseActing(ac) {
			mode = ClaimModeElected
			note = fmt.Sprintf("the server has no CONDSTORE: this watcher holds the account's lease (folder %s) until %s", imapsync.LeaseFolderName, info.Expires.UTC().Format(time.RFC3339))
		} else {
			switch {
			case err != nil:
				note = fmt.Sprintf("passive: the server has no CONDSTORE and the lease folder could not be read (%v); acting on nothing", err)
			case info.Holder != "":
				note = fmt.Sprintf("passive: the server has no CONDSTORE, so one watcher acts on this account; watcher %s holds the lease until %s", info.Holder, info.Expires.UTC().Format(time.RFC3339))
			default:
				note = "passive: the server has no CONDSTORE; the lease is being elected"
			}
		}
		marks, merr := ac.claimer.Marks(ctx, c, open)
		if merr != nil {
			return nil, fmt.Errorf("read claim keywords: %w", merr)
		}
		results = map[uint32]imapsync.ClaimResult{}
		for _, uid := range open {
			r, ok := marks[uid]
			switch {
			case ok && r.State == imapsync.ClaimDone:
				results[uid] = r
			case mode == ClaimModeElected:
				results[uid] = imapsync.ClaimResult{UID: uid, State: imapsync.ClaimWon, Holder: holder, Expires: info.Expires}
			default:
				results[uid] = imapsync.ClaimResult{UID: uid, State: imapsync.ClaimHeld, Holder: info.Holder, Expires: info.Expires}
			}
		}
	}
	var act, done []uint32
	held := map[string]int{}
	d.mu.Lock()
	for _, uid := range open {
		r, ok := results[uid]
		switch {
		case !ok:
			// Gone from the mailbox: process lets fetch and advance see it.
			act = append(act, uid)
		case r.State == imapsync.ClaimWon:
			ac.expires[uid] = r.Expires
			act = append(act, uid)
		case r.State == imapsync.ClaimDone && r.Holder == holder && mode != ClaimModePassive:
			// Decided by this watcher, which has no record of it (its
			// state was lost): handle it again, as without claims (not
			// while another watcher holds the account's lease).
			act = append(act, uid)
		case r.State == imapsync.ClaimDone && begun[uid] && mode != ClaimModePassive:
			// This watcher decided it (it may have sent the reply) and was
			// cut off; another took the claim over and marked it done.
			// Recording it as handled elsewhere would overwrite what this
			// watcher did: it is resumed, and the outbox's check of Sent,
			// \Answered and its own records stops a second reply.
			act = append(act, uid)
		case r.State == imapsync.ClaimDone && begun[uid]:
			// The same, while another watcher holds the account's lease:
			// left as it is until this watcher may act again.
			held[r.Holder]++
		case r.State == imapsync.ClaimDone:
			done = append(done, uid)
		default:
			held[r.Holder]++
		}
	}
	d.mu.Unlock()
	recorded, err := d.recordElsewhere(ctx, a, c, uidvalidity, done, results)
	nheld := 0
	var parts []string
	for h, n := range held {
		nheld += n
		if h == "" {
			h = "(none yet)"
		}
		parts = append(parts, fmt.Sprintf("%d held by watcher %s", n, h))
	}
	if nheld > 0 {
		d.wakeLater(a.Name, d.claimRecheck())
		if mode == ClaimModeClaims {
			note = "another watcher is handling messages: " + strings.Join(parts, ", ")
		}
	}
	d.setStatus(a.Name, func(s *Status) {
		s.ClaimMode, s.ClaimHolder, s.ClaimNote = mode, holder, note
		s.HeldElsewhere = nheld
		s.HandledElsewhere += recorded
	})
	return append(act, terminal...), err
}

// recordElsewhere records uids, decided by another watcher, as handled
// elsewhere: done, with the watcher named, and the message's identity
// from its header for explain. It returns how many it recorded.
func (d *Daemon) recordElsewhere(ctx context.Context, a Account, c *imapsync.Client, uidvalidity uint32, uids []uint32, results map[uint32]imapsync.ClaimResult) (int, error) {
	if len(uids) == 0 {
		return 0, nil
	}
	hdrs, err := c.FetchHeaders(ctx, uids, 64<<10)
	if err != nil {
		return 0, fmt.Errorf("read the headers of %d messages handled elsewhere: %w", len(uids), err)
	}
	var owner agent.Owner
	if acct, ok := d.Pipeline.Accounts[a.Name]; ok {
		owner = acct.Owner
	}
	n := 0
	var errs error
	for _, uid := range uids {
		key := store.MessageKey{Account: a.Name, Mailbox: a.Mailbox, UIDValidity: uidvalidity, UID: uid}
		h, ok := hdrs[uid]
		if !ok {
			continue // expunged meanwhile
		}
		rec := agent.Identify(key, h, owner)
		r := results[uid]
		rec.State, rec.Decision = store.StateDone, DecisionHandledElsewhere
		rec.Reasons = append(rec.Reasons, fmt.Sprintf("handled by another watcher of this account (%s): its keyword %s marks the message decided; this watcher did nothing",
			r.Holder, imapsync.DoneKeyword(r.Holder)))
		if err := d.Store.PutMessage(rec); err != nil {
			errs = errors.Join(errs, fmt.Errorf("uid %d: record as handled elsewhere: %w", uid, err))
			continue
		}
		n++
	}
	return n, errs
}

// mayAct is asked just before a message is processed: its claim (or the
// account's lease) must have more than a third of the lease left, so that
// no other watcher can take it over while it runs. A message refused here
// stays unrecorded and is claimed again by the next sync.
func (d *Daemon) mayAct(account string, uid uint32) bool {
	if d.Claims.Off {
		return true
	}
	ac := d.claims(account)
	d.mu.Lock()
	exp, claimed := ac.expires[uid]
	mode := ac.mode
	d.mu.Unlock()
	ok := true
	switch {
	case mode == ClaimModeOff:
	case mode == ClaimModeElected || mode == ClaimModePassive:
		ok = d.leaseActing(ac)
	case claimed:
		ok = exp.Sub(d.now()) > d.claimLease()/3
	}
	if !ok {
		d.wakeLater(account, d.claimRecheck())
	}
	return ok
}

// leaseActing reports whether this watcher holds the account's lease
// with more than a third of it left.
func (d *Daemon) leaseActing(ac *accountClaims) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return ac.mode == ClaimModeElected && ac.leaseUntil.Sub(d.now()) > d.claimLease()/3
}

// finishClaims is called by process once its messages have run: each
// whose record is now terminal gets its done keyword (its claim never
// expires again).
//
// Messages skipped as too old for a first start are released, not
// finished: this watcher did not handle them, and another watcher, whose
// state is older, may (marking them done made the other watcher record a
// message nobody answered as handled elsewhere, in the storm).
func (d *Daemon) finishClaims(ctx context.Context, a Account, c *imapsync.Client, uidvalidity uint32, uids []uint32, skipped map[uint32]bool) {
	if d.Claims.Off || len(uids) == 0 {
		return
	}
	ac := d.claims(a.Name)
	d.mu.Lock()
	mode := ac.mode
	d.mu.Unlock()
	if mode == ClaimModeOff {
		return
	}
	var terminal, release []uint32
	for _, uid := range uids {
		if skipped[uid] {
			release = append(release, uid)
			continue
		}
		rec, err := d.Store.GetMessage(store.MessageKey{Account: a.Name, Mailbox: a.Mailbox, UIDValidity: uidvalidity, UID: uid})
		if err == nil && rec.State.Terminal() && rec.Decision != DecisionHandledElsewhere {
			terminal = append(terminal, uid)
		}
	}
	d.finishOwn(ctx, a, c, uidvalidity, terminal)
	if len(release) > 0 && mode == ClaimModeClaims {
		if err := ac.claimer.Release(ctx, c, release); err != nil && ctx.Err() == nil {
			d.log().Warn("release claims on messages too old for a first start", "account", a.Name, "messages", len(release), "err", err)
		}
		d.mu.Lock()
		for _, uid := range release {
			delete(ac.expires, uid)
		}
		d.mu.Unlock()
	}
}

// finishOwn sets this watcher's done keyword on uids (terminal here) and
// takes their claims off (imapsync.Claimer.Finish: those finished already
// cost a FETCH; one a stop cut off half-way is mended). It runs on a
// context that a stop does not cancel, for at most finishTimeout, so that
// a watcher stopped just after it decided a message still marks it done
// rather than leave its claim for a lease. A failure is logged: the
// message's claim then expires, and another watcher that takes it over
// is stopped by the outbox's check of Sent and \Answered.
func (d *Daemon) finishOwn(ctx context.Context, a Account, c *imapsync.Client, _ uint32, uids []uint32) {
	if len(uids) == 0 {
		return
	}
	ac := d.claims(a.Name)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := ac.claimer.Finish(fctx, c, uids); err != nil {
		if ctx.Err() != nil {
			// Stopped with a command in flight, which closed the
			// connection: the next start lists them again and finishes.
			d.log().Info("messages decided before the stop are marked done at the next start", "account", a.Name, "messages", len(uids), "err", err)
		} else {
			d.log().Warn("mark messages decided in the mailbox", "account", a.Name, "messages", len(uids), "err", err)
		}
	}
	d.mu.Lock()
	for _, uid := range uids {
		delete(ac.expires, uid)
	}
	d.mu.Unlock()
}

// finishTimeout bounds finishOwn's mailbox writes, which outlive a stop.
const finishTimeout = 10 * time.Second

// electionRound runs one round of the account's election on its own
// connection (dialled on first use, again after a failure).
func (d *Daemon) electionRound(ctx context.Context, a Account, ac *accountClaims) (imapsync.LeaseInfo, error) {
	ac.elMu.Lock()
	defer ac.elMu.Unlock()
	if ac.elConn == nil {
		c, err := a.Dial(ctx)
		if err != nil {
			return imapsync.LeaseInfo{}, fmt.Errorf("dial for the election: %w", err)
		}
		ac.elConn = c
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	info, err := ac.election.Hold(rctx, ac.elConn)
	if err != nil {
		_ = ac.elConn.Close()
		ac.elConn = nil
	}
	d.mu.Lock()
	ac.mode, ac.leaseUntil = ClaimModePassive, time.Time{}
	if info.Mine {
		ac.mode, ac.leaseUntil = ClaimModeElected, info.Expires
	}
	d.mu.Unlock()
	return info, err
}

// runElections keeps the lease of every account whose server has no
// CONDSTORE: a round every third of the lease; the watcher is woken when
// this watcher comes to hold it. On the way out the lease is released, so
// another watcher takes over at once.
func (d *Daemon) runElections(ctx context.Context) {
	if d.Claims.Off {
		return
	}
	tick := max(d.claimLease()/3, time.Second)
	for {
		select {
		case <-ctx.Done():
			d.releaseLeases()
			return
		case <-time.After(tick):
		}
		for _, a := range d.Accounts {
			ac := d.claims(a.Name)
			d.mu.Lock()
			el, was := ac.election, ac.mode
			d.mu.Unlock()
			if el == nil {
				continue // claims, or not known yet
			}
			info, err := d.electionRound(ctx, a, ac)
			if err != nil && ctx.Err() == nil {
				d.log().Warn("lease election", "account", a.Name, "err", err)
			}
			if info.Mine && was != ClaimModeElected {
				d.wakeLater(a.Name, 0) // now acting: sync what was left
			}
			if !info.Mine && was == ClaimModeElected {
				d.setStatus(a.Name, func(s *Status) {
					s.ClaimMode = ClaimModePassive
					s.ClaimNote = fmt.Sprintf("passive: the server has no CONDSTORE; watcher %s holds the lease until %s", info.Holder, info.Expires.UTC().Format(time.RFC3339))
				})
			}
		}
	}
}

// releaseLeases gives up the leases this watcher holds (a clean stop).
func (d *Daemon) releaseLeases() {
	for _, a := range d.Accounts {
		ac := d.claims(a.Name)
		ac.elMu.Lock()
		if ac.election != nil && ac.elConn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := ac.election.Release(ctx, ac.elConn); err != nil {
				d.log().Warn("release the lease", "account", a.Name, "err", err)
			}
			cancel()
			_ = ac.elConn.Close()
			ac.elConn = nil
		}
		ac.elMu.Unlock()
		d.mu.Lock()
		if ac.mode == ClaimModeElected {
			ac.mode, ac.leaseUntil = ClaimModePassive, time.Time{}
		}
		d.mu.Unlock()
	}
}
