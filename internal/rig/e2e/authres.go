package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-message/textproto"
	"github.com/emersion/go-msgauth/authres"
)

// AuthResultsField is one Authentication-Results header field of a message
// (RFC 8601), parsed.
type AuthResultsField struct {
	// Pos is the field's position among all header fields of the message,
	// 0 being the topmost (the last one added).
	Pos        int
	AuthservID string
	Results    []authres.Result
	Value      string // the unfolded field value as it arrived
}

// AuthResults returns every Authentication-Results field of raw, topmost
// first. A field that does not parse is an error: the stack's milters write
// well-formed ones, and a test must not skip over one silently.
func AuthResults(raw []byte) ([]AuthResultsField, error) {
	h, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	var out []AuthResultsField
	pos := 0
	for f := h.Fields(); f.Next(); pos++ {
		if !strings.EqualFold(f.Key(), "Authentication-Results") {
			continue
		}
		v := f.Value()
		id, results, err := authres.Parse(StripComments(v))
		if err != nil {
			return nil, fmt.Errorf("Authentication-Results field %d (%q): %w", len(out)+1, v, err)
		}
		out = append(out, AuthResultsField{Pos: pos, AuthservID: id, Results: results, Value: v})
	}
	return out, nil
}

// StripComments removes RFC 5322 comments ("(...)", nested, with quoted
// pairs) outside quoted strings from an Authentication-Results value.
// go-msgauth's authres.Parse (v0.7.0) does not skip comments: the real
// OpenDKIM field "dkim=pass (2048-bit key; unprotected) header.d=..." fails
// to parse, because it splits the value at the ';' inside the comment.
func StripComments(v string) string {
	var b strings.Builder
	depth := 0
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && (quoted || depth > 0):
			// A quoted pair: keep it inside a quoted string, drop it
			// inside a comment.
			if depth == 0 {
				b.WriteByte(c)
				if i+1 < len(v) {
					b.WriteByte(v[i+1])
				}
			}
			i++
		case quoted:
			b.WriteByte(c)
			if c == '"' {
				quoted = false
			}
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
			if depth == 0 {
				b.WriteByte(' ')
			}
		case depth > 0:
		case c == '"':
			quoted = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// TopmostResults returns the results of the topmost block of
// Authentication-Results fields with authserv-id authservID: the topmost
// Authentication-Results field, if it names authservID, and the fields right
// below it, as long as they are adjacent Authentication-Results fields with
// that authserv-id. When the topmost field names another authserv-id it
// returns nothing. These are the fields the receiving server added itself.
// A field further down (below the server's own Received field, say) is not
// part of the block even when it names authservID: the sender may have
// written it (RFC 8601 section 5).
func TopmostResults(fields []AuthResultsField, authservID string) []authres.Result {
	var out []authres.Result
	for _, f := range TopmostFields(fields, authservID) {
		out = append(out, f.Results...)
	}
	return out
}

// TopmostFields returns the fields whose results TopmostResults returns.
func TopmostFields(fields []AuthResultsField, authservID string) []AuthResultsField {
	var out []AuthResultsField
	for _, f := range fields {
		if !strings.EqualFold(f.AuthservID, authservID) || (len(out) > 0 && f.Pos != out[len(out)-1].Pos+1) {
			break
		}
		out = append(out, f)
	}
	return out
}

// DKIMResults returns the DKIM results among rs.
func DKIMResults(rs []authres.Result) []*authres.DKIMResult {
	var out []*authres.DKIMResult
	for _, r := range rs {
		if d, ok := r.(*authres.DKIMResult); ok {
			out = append(out, d)
		}
	}
	return out
}

// DMARCResults returns the DMARC results among rs.
func DMARCResults(rs []authres.Result) []*authres.DMARCResult {
	var out []*authres.DMARCResult
	for _, r := range rs {
		if d, ok := r.(*authres.DMARCResult); ok {
			out = append(out, d)
		}
	}
	return out
}

// FetchRaw returns the whole message uid of user's mailbox, as stored.
// Its connection is closed when it returns.
func (s *Stack) FetchRaw(t testing.TB, user, mailbox string, uid imap.UID) []byte {
	t.Helper()
	c := s.imapNow(t, user)
	defer closeIMAP(c)
	if _, err := c.Select(mailbox, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
		t.Fatalf("e2e: examine %s %s: %v", user, mailbox, err)
	}
	msgs, err := c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{
		UID: true, BodySection: []*imap.FetchItemBodySection{{Peek: true}},
	}).Collect()
	if err != nil {
		t.Fatalf("e2e: fetch %s %s uid %d: %v", user, mailbox, uid, err)
	}
	if len(msgs) != 1 || len(msgs[0].BodySection) == 0 {
		t.Fatalf("e2e: fetch %s %s uid %d: got %d messages, want 1 with a body", user, mailbox, uid, len(msgs))
	}
	return msgs[0].BodySection[0].Bytes
}
