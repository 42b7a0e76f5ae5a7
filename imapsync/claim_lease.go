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
// folder (LeaseFolderName under the personal namespace) and the two
// operations every IMAP server performs atomically on folders:
//
//   - CREATE of a folder that exists fails: of watchers creating the lease
//     folder at the same moment exactly one succeeds, and that one holds
//     the lease. It APPENDs a note "mailagent lease <holder> <unix
//     expiry>" and renews by appending a newer one (the highest UID is the
//     lease).
//   - RENAME of a folder moves it once: a watcher that finds the lease
//     expired (plus Skew) renames the folder away; of several only one
//     succeeds. It then checks that what it moved is the lease it judged
//     expired (same UIDVALIDITY and note), deletes it and competes in
//     CREATE again. If it moved a live lease (another watcher took over
//     between its read and its RENAME) it renames it back.
//
// Why it is safe: a holder acts only while its lease has more than a
// third of its length left (Acting), renews at a third, and another
// watcher takes over only once the lease has expired plus Skew by its own
// clock; with clocks within Skew the two never act at once. A holder that
// finds the folder renamed or re-created by another stops acting at once.
// A note with an absurd expiry (beyond MaxLease) expires MaxLease after it
// was first seen, and an empty lease folder (a holder killed between
// CREATE and APPEND) after Lease.

// LeaseFolderName is the election's folder, under the personal namespace.
const LeaseFolderName = "Mailagent-Lease"

const leaseSubject = "mailagent lease "

// LeaseInfo is the election's outcome as one watcher sees it.
type LeaseInfo struct {
	// Mine is whether this watcher holds the lease.
	Mine bool
	// Holder holds the lease until Expires ("" when unknown: the lease
	// folder is being taken over).
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

	gen      uint32 // UIDVALIDITY of the lease folder we hold (0: none)
	expires  time.Time
	emptyAt  map[uint32]time.Time // UIDVALIDITY → when an empty lease folder was first seen
	resolved string
}

// Acting reports whether the watcher may act at now: it holds the lease
// and more than a third of it is left.
func (e *Election) Acting(now time.Time) bool {
	return e.gen != 0 && e.expires.Sub(now) > e.Claimer.lease()/3
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

// readLease selects name and returns its UIDVALIDITY and newest note
// (uid 0: none).
func (e *Election) readLease(ctx context.Context, c *Client, name string, readOnly bool) (uint32, leaseNote, error) {
	st, err := c.Select(ctx, name, readOnly)
	if err != nil {
		return 0, leaseNote{}, err
	}
	uids, err := c.Search(ctx, Criteria{})
	if err != nil || len(uids) == 0 {
		return st.UIDValidity, leaseNote{}, err
	}
	hdrs, err := c.FetchHeaders(ctx, uids, 4096)
	if err != nil {
		return st.UIDValidity, leaseNote{}, err
	}
	var best leaseNote
	for uid, h := range hdrs {
		if n, ok := parseLeaseNote(h); ok && uid > best.uid {
			n.uid = uid
			best = n
		}
	}
	return st.UIDValidity, best, nil
}

func parseLeaseNote(h []byte) (leaseNote, bool) {
	for _, line := range bytes.Split(h, []byte("\n")) {
		l := strings.TrimSpace(string(line))
		if len(l) < 9 || !strings.EqualFold(l[:9], "Subject: ") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(l[9:], leaseSubject))
		if !strings.HasPrefix(l[9:], leaseSubject) || len(f) != 2 || !ValidHolder(f[0]) {
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
	raw := fmt.Sprintf("From: mailagent <mailagent@localhost>\r\nSubject: %s%s %d\r\nDate: %s\r\n\r\n"+
		"This folder elects the one mailagent watcher that acts on this account (its IMAP server has no CONDSTORE). Leave it alone.\r\n",
		leaseSubject, e.Claimer.Holder, expires.Unix(), e.Claimer.now().Format(time.RFC1123Z))
	_, err := c.Append(ctx, name, []string{string(imap.FlagSeen)}, time.Time{}, []byte(raw))
	return err
}

// Hold takes, renews or watches the lease: it renews the lease it holds,
// takes one that is free or expired, and otherwise reports the holder.
// On an error the watcher must assume it does not hold the lease
// (Acting turns false once its last lease runs short).
func (e *Election) Hold(ctx context.Context, c *Client) (LeaseInfo, error) {
	if !ValidHolder(e.Claimer.Holder) {
		return LeaseInfo{}, ErrBadHolder
	}
	name, err := e.folder(ctx, c)
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("imap lease: %w", err)
	}
	for range 3 {
		gen, note, err := e.readLease(ctx, c, name, false)
		if err != nil {
			if ctx.Err() != nil {
				return LeaseInfo{}, ctx.Err()
			}
			// No lease folder (or it vanished): compete in CREATE.
			e.gen = 0
			cerr := c.guard(ctx, func() error { return c.ic.Create(name, nil).Wait() })
			if cerr != nil {
				if ctx.Err() != nil {
					return LeaseInfo{}, ctx.Err()
				}
				continue // another watcher created it first: read it
			}
			gen, _, err = e.readLease(ctx, c, name, false)
			if err != nil {
				return LeaseInfo{}, fmt.Errorf("imap lease: %w", err)
			}
			return e.renew(ctx, c, name, gen, nil)
		}
		now := e.Claimer.now()
		if note.holder == e.Claimer.Holder {
			return e.renew(ctx, c, name, gen, &note)
		}
		e.gen = 0
		exp := e.noteExpiry(gen, note, now)
		if exp.Add(e.Claimer.skew()).After(now) {
			return LeaseInfo{Holder: note.holder, Expires: exp}, nil
		}
		if err := e.takeOver(ctx, c, name, gen, note); err != nil {
			return LeaseInfo{}, err
		}
	}
	return LeaseInfo{}, nil // contended: the next round reads again
}

// noteExpiry is the expiry a lease note is judged by (see Claimer.effective);
// an empty folder counts as a lease that began when it was first seen.
func (e *Election) noteExpiry(gen uint32, note leaseNote, now time.Time) time.Time {
	if note.uid == 0 {
		if e.emptyAt == nil {
			e.emptyAt = map[uint32]time.Time{}
		}
		first, ok := e.emptyAt[gen]
		if !ok {
			first, e.emptyAt[gen] = now, now
		}
		return first.Add(e.Claimer.lease())
	}
	return e.Claimer.effective(gen, claimMark{keyword: fmt.Sprintf("lease/%d/%s/%d", note.uid, note.holder, note.expires.Unix()), holder: note.holder, expires: note.expires}, now)
}

// renew appends a fresh note to the lease folder we hold (selected) and
// drops the older notes.
func (e *Election) renew(ctx context.Context, c *Client, name string, gen uint32, _ *leaseNote) (LeaseInfo, error) {
	exp := e.Claimer.expiry(e.Claimer.now())
	if err := e.appendNote(ctx, c, name, exp); err != nil {
		e.gen = 0
		return LeaseInfo{}, fmt.Errorf("imap lease renew: %w", err)
	}
	e.gen, e.expires = gen, exp
	if uids, err := c.Search(ctx, Criteria{}); err == nil && len(uids) > 1 {
		_ = c.Delete(ctx, uids[:len(uids)-1]) // best effort: the newest note is the lease
	}
	return LeaseInfo{Mine: true, Holder: e.Claimer.Holder, Expires: exp}, nil
}

// takeOver renames the expired lease folder away, checks it moved the
// lease it judged, and deletes it; a live lease moved by mistake goes
// back.
func (e *Election) takeOver(ctx context.Context, c *Client, name string, gen uint32, judged leaseNote) error {
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	stale := name + "-stale-" + e.Claimer.Holder + "-" + hex.EncodeToString(nonce[:])
	if _, err := c.Select(ctx, "INBOX", true); err != nil {
		return fmt.Errorf("imap lease: %w", err)
	}
	if err := c.guard(ctx, func() error { return c.ic.Rename(name, stale, nil).Wait() }); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil // another watcher moved it first
	}
	got, note, err := e.readLease(ctx, c, stale, true)
	if err != nil {
		return fmt.Errorf("imap lease take-over: %w", err)
	}
	if got != gen || note != judged {
		_, _ = c.Select(ctx, "INBOX", true)
		_ = c.guard(ctx, func() error { return c.ic.Rename(stale, name, nil).Wait() })
		return nil
	}
	if _, err := c.Select(ctx, "INBOX", true); err != nil {
		return fmt.Errorf("imap lease: %w", err)
	}
	if err := c.guard(ctx, func() error { return c.ic.Delete(stale).Wait() }); err != nil {
		return fmt.Errorf("imap lease: delete %q: %w", stale, err)
	}
	return nil
}

// Release gives the lease up (a clean stop), so another watcher takes
// over at once instead of after the lease. It does nothing when this
// watcher does not hold it.
func (e *Election) Release(ctx context.Context, c *Client) error {
	if e.gen == 0 {
		return nil
	}
	name, err := e.folder(ctx, c)
	if err != nil {
		return err
	}
	gen, note, err := e.readLease(ctx, c, name, true)
	e.gen = 0
	if err != nil || note.holder != e.Claimer.Holder {
		return nil
	}
	return e.takeOver(ctx, c, name, gen, note)
}
