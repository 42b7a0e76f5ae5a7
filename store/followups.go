package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailagent/mailagent/internal/mail"
	bolt "go.etcd.io/bbolt"
)

// Reply tracking: one Followup per (account, thread), kept in the
// followups bucket and indexed by the time its timer next fires:
//
//	followups      id → Followup (JSON)
//	idx_followup   be64(due) \0 id → id   only while the followup is open and has a due time
//
// Every write goes through putFollowupTx, which keeps the index in the
// same transaction, so a timer is either in the index or not, never
// twice, and survives restarts with the file.

// Followup states. Open states are NeedsReply and AwaitingReply.
const (
	FollowupNeedsReply    = "needs_reply"    // the last message is theirs and expects an answer from the owner
	FollowupAwaitingReply = "awaiting_reply" // the owner wrote last, asked something, and no answer came
	FollowupDone          = "done"           // answered (by the owner or by them), or marked done by the owner
	FollowupGaveUp        = "gave_up"        // no answer after the last nudge
)

// FollowupOpen reports whether a followup in state st still has a timer.
func FollowupOpen(st string) bool { return st == FollowupNeedsReply || st == FollowupAwaitingReply }

// Followup tiers: how far the stale-thread escalation got.
const (
	TierNone     = 0 // nothing fired yet
	TierReminded = 1 // a reminder was shown
	TierNudged   = 2 // at least one follow-up draft was queued
)

// Followup is the reply-tracking state of one thread. Its State is
// derived from mailbox facts by the agent (who wrote last, the
// classification of an incoming message, the owner's mail in Sent, the
// answers matched by In-Reply-To/References and correspondent), never
// from what a message or the model says about itself.
type Followup struct {
	ID       string `json:"id"`
	Account  string `json:"account"`
	ThreadID string `json:"thread_id"`
	State    string `json:"state"`
	// Correspondents are the other side of the thread (lowercased): the
	// sender for needs_reply, the owner's recipients for awaiting_reply.
	Correspondents []string `json:"correspondents"`
	Subject        string   `json:"subject"`
	// MessageID is the last message that set the state: theirs for
	// needs_reply, the owner's for awaiting_reply. An answer must name it.
	MessageID string `json:"message_id"`
	// PriorIDs are the owner's earlier messages of an awaiting_reply
	// thread: an answer may name any of them.
	PriorIDs []string `json:"prior_ids,omitempty"`
	// Message is the stored record of MessageID when there is one (the
	// incoming message of a needs_reply followup).
	Message MessageKey `json:"message"`
	// LastAt is when MessageID was written.
	LastAt time.Time `json:"last_at"`
	// Deadline is when the thread counts as stale; DeadlineSource says
	// where it came from: "mail" (a date the model read in the message,
	// validated by code) or "default" (followup.default_after).
	Deadline       time.Time `json:"deadline"`
	DeadlineSource string    `json:"deadline_source"`
	Tier           int       `json:"tier"`
	// Nudges counts the follow-up drafts queued; NudgeIDs are their
	// queue ids.
	Nudges   int      `json:"nudges"`
	NudgeIDs []string `json:"nudge_ids,omitempty"`
	// SnoozeUntil, when set, hides the followup and delays its timer.
	SnoozeUntil time.Time `json:"snooze_until,omitzero"`
	// Due is when the timer next fires (zero: no timer).
	Due time.Time `json:"due,omitzero"`
	// Reason says, in words, why the followup is in its state.
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	ClosedAt  time.Time `json:"closed_at,omitzero"`
}

var (
	bFollowups    = []byte("followups")
	bIdxFollowup  = []byte("idx_followup")
	bUnsubscribes = []byte("unsubscribes")
)

// FollowupID is the id of the followup of a thread: derived from the
// account and the thread id, so the same thread always has the same one.
func FollowupID(account, threadID string) string {
	h := sha256.Sum256([]byte(account + "\x00" + threadID))
	return "fu_" + hex.EncodeToString(h[:8])
}

func followupDueKey(f *Followup) []byte {
	k := binary.BigEndian.AppendUint64(nil, timeKey(f.Due))
	k = append(k, 0)
	return append(k, f.ID...)
}

func indexed(f *Followup) bool { return f != nil && FollowupOpen(f.State) && !f.Due.IsZero() }

func getFollowupTx(tx *bolt.Tx, id string) (*Followup, error) {
	var f Followup
	if err := getJSON(tx.Bucket(bFollowups), []byte(id), &f); err != nil {
		return nil, err
	}
	return &f, nil
}

func putFollowupTx(tx *bolt.Tx, f, old *Followup) error {
	b, idx := tx.Bucket(bFollowups), tx.Bucket(bIdxFollowup)
	if b == nil || idx == nil {
		return errors.New("followup buckets missing (read-only store?)")
	}
	if indexed(old) {
		if err := idx.Delete(followupDueKey(old)); err != nil {
			return err
		}
	}
	if indexed(f) {
		if err := idx.Put(followupDueKey(f), []byte(f.ID)); err != nil {
			return err
		}
	}
	return putJSON(b, []byte(f.ID), f)
}

// GetFollowup returns the followup, or an error wrapping ErrNotFound.
func (s *Store) GetFollowup(id string) (*Followup, error) {
	var f *Followup
	err := s.view(func(tx *bolt.Tx) (err error) {
		f, err = getFollowupTx(tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get followup %s: %w", id, err)
	}
	return f, nil
}

// UpdateFollowup reads the followup id (nil when there is none), lets fn
// change it, and writes the result, all in one transaction: fn returning
// (nil, nil) writes nothing. fn must not call the Store. The timer index
// follows the new Due and State. It returns what was written (or the old
// record when nothing was).
func (s *Store) UpdateFollowup(id string, fn func(old *Followup) (*Followup, error)) (*Followup, error) {
	if err := checkName("followup id", id); err != nil {
		return nil, fmt.Errorf("update followup: %w", err)
	}
	var out *Followup
	err := s.updateTx(func(tx *bolt.Tx) error {
		old, err := getFollowupTx(tx, id)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		var in *Followup
		if old != nil {
			c := *old
			c.Correspondents = slices.Clone(old.Correspondents)
			c.NudgeIDs = slices.Clone(old.NudgeIDs)
			c.PriorIDs = slices.Clone(old.PriorIDs)
			in = &c
		}
		f, err := fn(in)
		if err != nil {
			return err
		}
		if f == nil {
			out = old
			return nil
		}
		now := s.now().UTC()
		f.ID = id
		if old != nil {
			f.CreatedAt = old.CreatedAt
		} else if f.CreatedAt.IsZero() {
			f.CreatedAt = now
		}
		f.UpdatedAt = now
		if !FollowupOpen(f.State) {
			f.Due = time.Time{}
			if f.ClosedAt.IsZero() {
				f.ClosedAt = now
			}
		} else {
			f.ClosedAt = time.Time{}
		}
		out = f
		return putFollowupTx(tx, f, old)
	})
	if err != nil {
		return nil, fmt.Errorf("update followup %s: %w", id, err)
	}
	return out, nil
}

// FollowupFilter selects followups; zero fields match everything.
type FollowupFilter struct {
	Account string
	// States lists the states wanted (empty: all).
	States []string
	// Correspondent matches one of the followup's correspondents
	// (case-insensitive substring, so a domain works too).
	Correspondent string
	// Since and Until bound LastAt (zero: unbounded).
	Since, Until time.Time
	// ClosedSince keeps only followups closed at or after it (for
	// "recently replied").
	ClosedSince time.Time
}

// Match reports whether f passes the filter.
func (ff FollowupFilter) Match(f *Followup) bool {
	if ff.Account != "" && f.Account != ff.Account {
		return false
	}
	if len(ff.States) > 0 && !slices.Contains(ff.States, f.State) {
		return false
	}
	if c := mail.AddrKey(ff.Correspondent); c != "" &&
		!slices.ContainsFunc(f.Correspondents, func(x string) bool { return strings.Contains(x, c) }) {
		return false
	}
	if !ff.Since.IsZero() && f.LastAt.Before(ff.Since) {
		return false
	}
	if !ff.Until.IsZero() && f.LastAt.After(ff.Until) {
		return false
	}
	if !ff.ClosedSince.IsZero() && (f.ClosedAt.IsZero() || f.ClosedAt.Before(ff.ClosedSince)) {
		return false
	}
	return true
}

// ListFollowups calls fn for each followup matching ff, in id order. fn
// runs outside any transaction.
func (s *Store) ListFollowups(ff FollowupFilter, fn func(*Followup) error) error {
	return scan(s, bFollowups, nil, func(_ *bolt.Tx, _, v []byte) (*Followup, bool, error) {
		var f Followup
		if err := json.Unmarshal(v, &f); err != nil {
			return nil, false, err
		}
		return &f, ff.Match(&f), nil
	}, fn)
}

// DueFollowups calls fn for each open followup whose timer is due at or
// before before, earliest first. Only those are read, through the index.
func (s *Store) DueFollowups(before time.Time, fn func(*Followup) error) error {
	var ids []string
	end := timeKey(before)
	err := s.view(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bIdxFollowup)
		if idx == nil {
			return nil
		}
		c := idx.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if len(k) < 8 || binary.BigEndian.Uint64(k) > end {
				break
			}
			ids = append(ids, string(v))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("due followups: %w", err)
	}
	return loadByID(s, ids, getFollowupTx, fn)
}

// NextFollowupDue returns the earliest timer of an open followup; ok is
// false when none waits.
func (s *Store) NextFollowupDue() (next time.Time, ok bool, err error) {
	next, ok, err = s.firstDue(bIdxFollowup)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next followup: %w", err)
	}
	return next, ok, nil
}

// firstDue is the due time of the first key of a due-time index (keys
// start with be64 milliseconds, see dueOf), and false when it is empty.
func (s *Store) firstDue(index []byte) (next time.Time, ok bool, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		if idx := tx.Bucket(index); idx != nil {
			if k, _ := idx.Cursor().First(); len(k) >= 8 {
				next, ok = dueOf(k, nil), true
			}
		}
		return nil
	})
	return next, ok, err
}

// Unsubscribe is the record of one unsubscribe request.
type Unsubscribe struct {
	Account   string     `json:"account"`
	Message   MessageKey `json:"message"`
	MessageID string     `json:"message_id"`
	List      string     `json:"list"`   // the List-Id or From address
	Method    string     `json:"method"` // one_click | mailto
	Target    string     `json:"target"` // the URL or address used
	Result    string     `json:"result"` // ok | the error
	At        time.Time  `json:"at"`
}

// PutUnsubscribe records an unsubscribe request (keyed by time, so every
// attempt is kept).
func (s *Store) PutUnsubscribe(u *Unsubscribe) error {
	if u.At.IsZero() {
		u.At = s.now().UTC()
	}
	err := s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(bUnsubscribes)
		if b == nil {
			return errors.New("unsubscribes bucket missing (read-only store?)")
		}
		k := binary.BigEndian.AppendUint64(nil, timeKey(u.At))
		k = append(k, 0)
		k = append(k, NewID()...)
		return putJSON(b, k, u)
	})
	if err != nil {
		return fmt.Errorf("record unsubscribe: %w", err)
	}
	return nil
}

// ListUnsubscribes calls fn for each recorded unsubscribe, oldest first.
func (s *Store) ListUnsubscribes(fn func(*Unsubscribe) error) error {
	return scan(s, bUnsubscribes, nil, func(_ *bolt.Tx, _, v []byte) (*Unsubscribe, bool, error) {
		var u Unsubscribe
		if err := json.Unmarshal(bytes.Clone(v), &u); err != nil {
			return nil, false, err
		}
		return &u, true, nil
	}, fn)
}

// rebuildFollowupIndex rebuilds idx_followup from the followups (Repair;
// the caller emptied the index).
func rebuildFollowupIndex(tx *bolt.Tx) error {
	b, idx := tx.Bucket(bFollowups), tx.Bucket(bIdxFollowup)
	if b == nil || idx == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		var f Followup
		if json.Unmarshal(v, &f) != nil {
			return nil
		}
		f.ID = string(k)
		if !indexed(&f) {
			return nil
		}
		return idx.Put(followupDueKey(&f), bytes.Clone(k))
	})
}

// pruneFollowups deletes the followups closed before cutoff (open ones
// are never touched), pruneBatch per transaction.
func (s *Store) pruneFollowups(cutoff time.Time) (int, error) {
	var ids [][]byte
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bFollowups)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var f Followup
			if json.Unmarshal(v, &f) == nil && !FollowupOpen(f.State) && !f.ClosedAt.IsZero() && f.ClosedAt.Before(cutoff) {
				ids = append(ids, bytes.Clone(k))
			}
			return nil
		})
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for len(ids) > 0 {
		batch := ids[:min(len(ids), pruneBatch)]
		ids = ids[len(batch):]
		err := s.updateTx(func(tx *bolt.Tx) error {
			b := tx.Bucket(bFollowups)
			for _, k := range batch {
				var f Followup
				if getJSON(b, k, &f) != nil || FollowupOpen(f.State) {
					continue // reopened meanwhile
				}
				if err := b.Delete(k); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
