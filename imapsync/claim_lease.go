package imapsync

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
)

// Election: a server without CONDSTORE (Courier-IMAP has none) gives no
// conditional STORE, so watchers cannot claim messages one by one. They
// elect one acting watcher through the mailbox instead, with a lease
// folder (LeaseFolderName under the personal namespace) and the one order
// every IMAP server keeps: the UIDs of a folder's messages increase in
// the order they were APPENDed.
//
//   - A lease is a note "mailagent lease <holder> <unix expiry>" in the
//     folder. A note is live until its expiry (plus Skew for another
//     watcher's). The holder is the author of the live note with the
//     lowest UID; its lease runs to the latest expiry among its live
//     notes.
//   - A watcher APPENDs a note only when no note is live (to take the
//     lease) or when it holds the lease (to renew it, at a third of the
//     lease), then reads the folder again: it holds the lease if its
//     note's author is the lowest live one. Of watchers that append at the
//     same moment, the first APPEND has the lowest UID, so exactly one
//     holds; a later APPEND can never get a lower UID.
//
// Why it is safe: a holder acts only while its lease has more than a
// third of its length left (Acting), and renews before; another watcher
// appends only once every note has expired plus Skew by its own clock,
// so with clocks within Skew the two never act at once. A holder whose
// renewal came after another's note finds a lower live note and stops.
// A note with an absurd expiry (beyond MaxLease) expires MaxLease after
// this watcher first saw it; notes long expired are deleted.

// LeaseFolderName is the election's folder, under the personal namespace.
const LeaseFolderName = "Mailagent-Lease"

const leaseSubject = "mailagent lease "

// LeaseInfo is the election's outcome as one watcher sees it.
type LeaseInfo struct {
	// Mine is whether this watcher holds the lease.
	Mine bool
	// Holder holds the lease until Expires ("" when nobody does).
	Holder  string
	Expires time.Time
}

// Election holds or watches the account's lease for Claimer.Holder. Use
// it from one goroutine, on a Client of its own (it SELECTs the lease
// folder).
type Election struct {
	Claimer *Claimer
	// Folder overrides the lease folder's full name (default: the
	// personal namespace prefix + LeaseFolderName).
	Folder string

	expires  time.Time // our lease, while we hold it (zero: not ours)
	resolved string
}

// Acting reports whether the watcher may act at now: it holds the lease
// and more than a third of it is left.
func (e *Election) Acting(now time.Time) bool {
	return !e.expires.IsZero() && e.expires.Sub(now) > e.Claimer.lease()/3
}

func (e *Election) folder(ctx context.Context, c *Client) (string, error) {
	if e.Folder != "" {
		return e.Folder, nil
	}
	if e.resolved != "" {
		return e.resolved, nil
	}
	prefix, _, err := c.Namespace(ctx)
	if err != nil && !errors.Is(err, ErrUnsupported) {
		return "", err
	}
	e.resolved = prefix + LeaseFolderName
	return e.resolved, nil
}

type leaseNote struct {
	uid     uint32
	holder  string
	expires time.Time
}

// notes selects name and returns its notes in UID order.
func (e *Election) notes(ctx context.Context, c *Client, name string) ([]leaseNote, error) {
	if _, err := c.Select(ctx, name, false); err != nil {
		return nil, err
	}
	uids, err := c.Search(ctx, Criteria{})
	if err != nil || len(uids) == 0 {
		return nil, err
	}
	hdrs, err := c.FetchHeaders(ctx, uids, 4096)
	if err != nil {
		return nil, err
	}
	var out []leaseNote
	for _, uid := range uids {
		if n, ok := parseLeaseNote(hdrs[uid]); ok {
			n.uid = uid
			out = append(out, n)
		}
	}
	return out, nil
}

// lease judges notes (in UID order) at now: the holder and its lease, ""
// when no lease is live. The notes are read as a chain: a note by the
// holder extends its lease; a note by another counts only when it was
// appended after the lease expired, which its expiry shows (more than
// half a lease after the lease's: a take-over is appended at least Skew
// after it, plus a whole lease); else it is the note of a watcher that
// lost the race to append, and is ignored.
func (e *Election) lease(notes []leaseNote, now time.Time) (holder string, expires time.Time) {
	for _, n := range notes {
		exp := e.Claimer.effective(fmt.Sprintf("lease/%d/%s/%d", n.uid, n.holder, n.expires.Unix()), n.expires, now)
		switch {
		case holder == "" || n.holder == holder:
			holder = n.holder
			if exp.After(expires) {
				expires = exp
			}
		case exp.After(expires.Add(e.Claimer.lease() / 2)):
			holder, expires = n.holder, exp
		}
	}
	margin := e.Claimer.skew()
	if holder == e.Claimer.Holder {
		margin = 0
	}
	if holder == "" || !expires.Add(margin).After(now) {
		return "", time.Time{}
	}
	return holder, expires
}

func parseLeaseNote(h []byte) (leaseNote, bool) {
	for _, line := range bytes.Split(h, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if len(l) < 9 || !strings.EqualFold(l[:9], "Subject: ") {
			continue
		}
		if !strings.HasPrefix(l[9:], leaseSubject) {
			return leaseNote{}, false
		}
		f := strings.Fields(l[9+len(leaseSubject):])
		if len(f) != 2 || !ValidHolder(f[0]) {
			return leaseNote{}, false
		}
		sec, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || sec <= 0 || sec > 1<<40 {
			return leaseNote{}, false
		}
		return leaseNote{holder: f[0], expires: time.Unix(sec, 0)}, true
	}
	return leaseNote{}, false
}

func (e *Election) appendNote(ctx context.Context, c *Client, name string, expires time.Time) error {
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	raw := fmt.Sprintf("From: mailagent <mailagent@localhost>\r\nSubject: %s%s %d\r\nDate: %s\r\nMessage-ID: <lease.%s@mailagent.invalid>\r\n\r\n"+
		"This folder elects the one mailagent watcher that acts on this account (its IMAP server has no CONDSTORE). Leave it alone.\r\n",
		leaseSubject, e.Claimer.Holder, expires.Unix(), e.Claimer.now().Format(time.RFC1123Z), hex.EncodeToString(nonce[:]))
	_, err := c.Append(ctx, name, []string{string(imap.FlagSeen)}, time.Time{}, []byte(raw))
	return err
}

// Hold takes, renews or watches the lease: it renews the lease it holds,
// takes it when no note is live, and otherwise reports the holder. On an
// error the watcher must assume it does not hold the lease (Acting turns
// false once its last lease runs short).
func (e *Election) Hold(ctx context.Context, c *Client) (LeaseInfo, error) {
	if !ValidHolder(e.Claimer.Holder) {
		return LeaseInfo{}, ErrBadHolder
	}
	info, err := e.hold(ctx, c)
	if err != nil || !info.Mine {
		e.expires = time.Time{}
	}
	return info, err
}

func (e *Election) hold(ctx context.Context, c *Client) (LeaseInfo, error) {
	name, err := e.folder(ctx, c)
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("imap lease: %w", err)
	}
	notes, err := e.notes(ctx, c, name)
	if err != nil {
		if ctx.Err() != nil {
			return LeaseInfo{}, ctx.Err()
		}
		// No lease folder yet: create it (a folder that exists is no
		// error) and read it again.
		if err := c.CreateMailbox(ctx, name); err != nil {
			return LeaseInfo{}, fmt.Errorf("imap lease: %w", err)
		}
		if notes, err = e.notes(ctx, c, name); err != nil {
			return LeaseInfo{}, fmt.Errorf("imap lease: %w", err)
		}
	}
	now := e.Claimer.now()
	holder, expires := e.lease(notes, now)
	if holder != "" && holder != e.Claimer.Holder {
		return LeaseInfo{Holder: holder, Expires: expires}, nil
	}
	// Free, or ours: append a note, then see whose live note is lowest.
	if err := e.appendNote(ctx, c, name, e.Claimer.expiry(now)); err != nil {
		return LeaseInfo{}, fmt.Errorf("imap lease: %w", err)
	}
	if notes, err = e.notes(ctx, c, name); err != nil {
		return LeaseInfo{}, fmt.Errorf("imap lease: %w", err)
	}
	holder, expires = e.lease(notes, now)
	info := LeaseInfo{Mine: holder == e.Claimer.Holder, Holder: holder, Expires: expires}
	if info.Mine {
		e.expires = expires
	}
	// Tidy: a watcher that lost the race drops its note; notes expired
	// for a whole lease are dead on every clock and in the chain.
	var drop []uint32
	for _, n := range notes {
		lost := !info.Mine && n.holder == e.Claimer.Holder
		if lost || n.expires.Add(e.Claimer.lease()+e.Claimer.skew()).Before(now) {
			drop = append(drop, n.uid)
		}
	}
	if len(drop) > 0 {
		_ = c.Delete(ctx, drop) // best effort
	}
	return info, nil
}

// Release gives the lease up (a clean stop), so another watcher takes
// over at once instead of after the lease: it deletes its own notes. It
// does nothing when this watcher does not hold it.
func (e *Election) Release(ctx context.Context, c *Client) error {
	if e.expires.IsZero() {
		return nil
	}
	e.expires = time.Time{}
	name, err := e.folder(ctx, c)
	if err != nil {
		return err
	}
	notes, err := e.notes(ctx, c, name)
	if err != nil {
		return fmt.Errorf("imap lease release: %w", err)
	}
	var mine []uint32
	for _, n := range notes {
		if n.holder == e.Claimer.Holder {
			mine = append(mine, n.uid)
		}
	}
	if err := c.Delete(ctx, mine); err != nil {
		return fmt.Errorf("imap lease release: %w", err)
	}
	return nil
}
