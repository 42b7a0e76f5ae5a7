// Package status holds the one record of an account's sync state that
// the watcher keeps (internal/app/daemon) and the local API reports
// (internal/app/api): one type, so the two cannot drift. It imports
// nothing from the project.
package status

import (
	"slices"
	"time"
)

// Account is what the watcher reports about one account.
type Account struct {
	Name string `json:"name"`
	// State is free text from the watcher: starting, idle, syncing,
	// reconnecting, …
	State    string    `json:"state"`
	LastSync time.Time `json:"last_sync,omitzero"`
	// Error is the account's last error ("" once a sync succeeds), and
	// ErrorSince when it first occurred (it stays put while the same
	// problem repeats).
	Error      string    `json:"error,omitempty"`
	ErrorSince time.Time `json:"error_since,omitzero"`
	// CopiesMissing counts IMAP copies (drafts to Drafts, sent replies to
	// Sent) that failed and wait for the retry timer; CopyError is the
	// last reason.
	CopiesMissing int    `json:"copies_missing,omitempty"`
	CopyError     string `json:"copy_error,omitempty"`
	// RetryAt is when the watcher tries the lost connection again (zero
	// while it is connected).
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Push latency: how long new mail took to reach the watcher, from
	// its arrival (INTERNALDATE, else the date of its top Received
	// header; both to the second) to the sync that fetched it after the
	// server's EXISTS or a poll. Only mail that arrived while the watcher
	// ran counts. LatencyLast is the newest message's, LatencyMedian the
	// median of the last LatencyWindow, LatencySamples how many that is
	// (0: nothing measured yet, and the two durations mean nothing).
	LatencyLast    time.Duration `json:"latency_last,omitempty"`
	LatencyMedian  time.Duration `json:"latency_median,omitempty"`
	LatencySamples int           `json:"latency_samples,omitempty"`
	// Claims: how this watcher shares the mailbox with other watchers of
	// the account. ClaimMode is "claims" (each message claimed in the
	// mailbox: the server has CONDSTORE), "elected" or "passive" (no
	// CONDSTORE: one watcher, elected through a lease folder, acts) or
	// "off"; ClaimHolder is this watcher's id in the mailbox's claim
	// keywords; ClaimNote says why it is passive or which watcher holds
	// what. HeldElsewhere counts the messages another watcher is handling
	// now (left alone, looked at again), HandledElsewhere those recorded
	// as decided by another watcher since the start.
	ClaimMode        string `json:"claim_mode,omitempty"`
	ClaimHolder      string `json:"claim_holder,omitempty"`
	ClaimNote        string `json:"claim_note,omitempty"`
	HeldElsewhere    int    `json:"held_elsewhere,omitempty"`
	HandledElsewhere int    `json:"handled_elsewhere,omitempty"`
}

// LatencyWindow is how many recent messages LatencyMedian is taken over.
const LatencyWindow = 20

// Latencies keeps an account's last LatencyWindow push latencies. The
// zero value is empty and ready; it is not safe for concurrent use.
type Latencies struct {
	ring []time.Duration
	next int
}

// Add records d (a negative d, from a clock ahead of the server's,
// counts as 0) and sets a's LatencyLast, LatencyMedian and
// LatencySamples.
func (l *Latencies) Add(d time.Duration, a *Account) {
	d = max(d, 0)
	if len(l.ring) < LatencyWindow {
		l.ring = append(l.ring, d)
	} else {
		l.ring[l.next] = d
	}
	l.next = (l.next + 1) % LatencyWindow
	sorted := slices.Clone(l.ring)
	slices.Sort(sorted)
	n := len(sorted)
	med := sorted[n/2]
	if n%2 == 0 {
		med = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	a.LatencyLast, a.LatencyMedian, a.LatencySamples = d, med, n
}

// SetError records err on a at now; nil clears it. ErrorSince moves only
// when an error follows a success.
func (a *Account) SetError(err error, now time.Time) {
	if err == nil {
		a.Error, a.ErrorSince = "", time.Time{}
		return
	}
	if a.Error == "" {
		a.ErrorSince = now
	}
	a.Error = err.Error()
}
