package imapsync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/emersion/go-imap/v2"
)

// ErrKeywordsRefused: the selected mailbox's PERMANENTFLAGS allow none of
// the keywords asked for (the server would drop them at the end of the
// session, or refuse them).
var ErrKeywordsRefused = errors.New("the server does not keep these keywords (PERMANENTFLAGS)")

// ValidKeyword reports whether k can be sent as an IMAP keyword: an atom
// (RFC 3501) of at most 64 printable ASCII characters, not a system flag.
func ValidKeyword(k string) bool {
	if k == "" || len(k) > 64 || strings.HasPrefix(k, `\`) {
		return false
	}
	for _, r := range k {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`(){%*"\]`, r) {
			return false
		}
	}
	return true
}

// KeywordsAllowed returns which of keywords the selected mailbox keeps:
// all of them when its PERMANENTFLAGS has \*, else those it lists. A
// keyword that is not a valid atom is never allowed.
func (c *Client) KeywordsAllowed(keywords []string) []string {
	c.mu.Lock()
	perm := slices.Clone(c.permFlags)
	c.mu.Unlock()
	any := slices.Contains(perm, imap.FlagWildcard)
	var out []string
	for _, k := range keywords {
		if !ValidKeyword(k) {
			continue
		}
		if any || slices.ContainsFunc(perm, func(f imap.Flag) bool { return strings.EqualFold(string(f), k) }) {
			out = append(out, k)
		}
	}
	return out
}

// SetKeywords adds the keywords the selected mailbox keeps (see
// KeywordsAllowed) to uids, and returns those it set. When it keeps none
// of them the error wraps ErrKeywordsRefused and nothing is sent.
func (c *Client) SetKeywords(ctx context.Context, uids []uint32, keywords []string) ([]string, error) {
	if _, _, err := c.selected(); err != nil {
		return nil, fmt.Errorf("imap keywords: %w", err)
	}
	ok := c.KeywordsAllowed(keywords)
	if len(ok) == 0 {
		return nil, fmt.Errorf("imap keywords %v: %w", keywords, ErrKeywordsRefused)
	}
	if err := c.StoreFlags(ctx, uids, true, ok); err != nil {
		return nil, err
	}
	return ok, nil
}
