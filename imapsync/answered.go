package imapsync

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/emersion/go-imap/v2"
)

// FlagAnswered is the IMAP \Answered flag.
const FlagAnswered = string(imap.FlagAnswered)

// SearchHeader runs UID SEARCH in the selected mailbox for messages whose
// header field (any of fields, joined with OR) contains value (IMAP
// matches a case-insensitive substring), also requiring every flag in
// flags. UIDs come back in ascending order.
func (c *Client) SearchHeader(ctx context.Context, fields []string, value string, flags ...string) ([]uint32, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	if _, _, err := c.selected(); err != nil {
		return nil, fmt.Errorf("imap search: %w", err)
	}
	sc := &imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: fields[0], Value: value}}}
	for _, f := range fields[1:] {
		prev := *sc
		sc = &imap.SearchCriteria{Or: [][2]imap.SearchCriteria{{prev, {Header: []imap.SearchCriteriaHeaderField{{Key: f, Value: value}}}}}}
	}
	sc.Flag = toFlags(flags)
	data, err := c.uidSearch(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("imap search header %s: %w", strings.Join(fields, "/"), err)
	}
	out := make([]uint32, 0, len(data.AllUIDs()))
	for _, uid := range data.AllUIDs() {
		out = append(out, uint32(uid))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// FetchHeaders returns the header (BODY.PEEK[HEADER], at most limit bytes
// each) of each of uids that still exists in the selected mailbox.
func (c *Client) FetchHeaders(ctx context.Context, uids []uint32, limit int64) (map[uint32][]byte, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	if _, _, err := c.selected(); err != nil {
		return nil, fmt.Errorf("imap fetch: %w", err)
	}
	sec := &imap.FetchItemBodySection{Specifier: imap.PartSpecifierHeader, Peek: true}
	msgs, err := c.runFetch(ctx, uids, &imap.FetchOptions{UID: true, BodySection: []*imap.FetchItemBodySection{sec}}, limit)
	if err != nil {
		return nil, err
	}
	out := make(map[uint32][]byte, len(msgs))
	for _, m := range msgs {
		for _, s := range m.sections {
			out[m.uid] = append(out[m.uid], s.data...)
		}
	}
	return out, nil
}

// Flags returns the flags of each of uids that still exists in the
// selected mailbox.
func (c *Client) Flags(ctx context.Context, uids []uint32) (map[uint32][]string, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	if _, _, err := c.selected(); err != nil {
		return nil, fmt.Errorf("imap fetch: %w", err)
	}
	msgs, err := c.runFetch(ctx, uids, &imap.FetchOptions{UID: true, Flags: true}, 0)
	if err != nil {
		return nil, err
	}
	out := make(map[uint32][]string, len(msgs))
	for _, m := range msgs {
		out[m.uid] = m.flags
	}
	return out, nil
}

// Selected returns the selected mailbox and its UIDVALIDITY, or
// ErrNotSelected.
func (c *Client) Selected() (mailbox string, uidvalidity uint32, err error) {
	return c.selected()
}
