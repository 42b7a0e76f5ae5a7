package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	gomail "github.com/emersion/go-message/mail"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/mail"
)

// sentLookback is how far back triage reads the Sent folder for the
// people the owner writes to (as watch's first Sent scan does).
const sentLookback = 365 * 24 * time.Hour

// knownMarker is a store that records known contacts (a local, writable
// store; a running watcher scans Sent itself).
type knownMarker interface {
	MarkKnown(account string, emails []string) error
}

// learnSentContacts reads the account's Sent folder (read-only) and marks
// the recipients of the owner's own mail as known contacts, so that
// triage's known-contact gate sees the people the owner writes to. It is
// a no-op for a store that cannot record them (a dry run, or a watcher's
// socket: the watcher scans Sent itself).
func learnSentContacts(ctx context.Context, acct *config.Account, st any) error {
	km, ok := st.(knownMarker)
	if !ok {
		return nil
	}
	rcpts, err := sentRecipients(ctx, acct, time.Now().Add(-sentLookback))
	if err != nil {
		return err
	}
	if len(rcpts) == 0 {
		return nil
	}
	if err := km.MarkKnown(acct.Name, rcpts); err != nil {
		return fmt.Errorf("account %s: record known contacts: %w", acct.Name, err)
	}
	return nil
}

// sentRecipients returns the lower-cased addresses the owner wrote to
// (To, Cc, Bcc of the owner's messages in Sent since since).
func sentRecipients(ctx context.Context, acct *config.Account, since time.Time) ([]string, error) {
	c, err := DialIMAP(ctx, acct)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	attr, names := `\Sent`, []string(nil)
	if acct.SentMailbox != "" {
		attr, names = "", []string{acct.SentMailbox}
	}
	sent, err := c.FindSpecialUse(ctx, attr, names...)
	if err != nil {
		return nil, fmt.Errorf("account %s: find the Sent folder: %w", acct.Name, err)
	}
	if _, err := c.Select(ctx, sent, true); err != nil {
		return nil, fmt.Errorf("account %s: %w", acct.Name, err)
	}
	uids, err := c.Search(ctx, imapsync.Criteria{Since: since})
	if err != nil {
		return nil, fmt.Errorf("account %s: search Sent: %w", acct.Name, err)
	}
	owner := map[string]bool{}
	for _, a := range acct.OwnerAddresses() {
		owner[strings.ToLower(a)] = true
	}
	seen := map[string]bool{}
	var out []string
	err = c.Fetch(ctx, uids, imapsync.FetchOptions{MaxMessageBytes: 256 << 10} /* the headers are what counts */, func(r imapsync.RawMessage) error {
		m := mail.Parse(r.Raw)
		if !owner[strings.ToLower(m.From.Email)] {
			return nil
		}
		list := append(append([]mail.Address(nil), m.To...), m.Cc...)
		if bcc := m.HeaderValue("Bcc"); bcc != "" {
			if as, err := gomail.ParseAddressList(bcc); err == nil {
				for _, a := range as {
					list = append(list, mail.Address{Email: a.Address})
				}
			}
		}
		for _, a := range list {
			e := strings.ToLower(a.Email)
			if e != "" && !owner[e] && !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("account %s: read Sent: %w", acct.Name, err)
	}
	return out, nil
}
