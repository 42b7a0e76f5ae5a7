// Package status holds the one record of an account's sync state that
// the watcher keeps (internal/app/daemon) and the local API reports
// (internal/app/api): one type, so the two cannot drift. It imports
// nothing from the project.
package status

import "time"

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
