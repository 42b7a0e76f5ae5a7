package imapsync

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message/textproto"
)

// FetchOptions tunes Fetch. Zero values mean the defaults.
type FetchOptions struct {
	// BatchSize is how many UIDs go into one FETCH command; default 100.
	BatchSize int
	// MaxMessageBytes is the largest message fetched whole; default 10 MiB.
	// Larger messages are fetched partially (see Fetch).
	MaxMessageBytes int64
	// OnRefused, when set, changes what a FETCH answered NO does: the
	// batch is fetched again one message at a time, and each message the
	// server still refuses is reported here (with the server's answer)
	// instead of failing the whole Fetch, so one unreadable message does
	// not hold up the others. The caller decides what a refused message
	// becomes; it is not expunged. Without OnRefused, Fetch fails.
	OnRefused func(uid uint32, err error)
	// Prefetch fetches the next group of messages while fn handles the
	// one before, so a caller that hands messages to workers (triage,
	// replay) never leaves them waiting for the server between two
	// FETCH commands. fn must then not use the Client (a command is in
	// flight while it runs), OnRefused is called from another goroutine,
	// and up to two groups (twice the few MaxMessageBytes of one) are
	// held at once. When fn fails, the FETCH in flight is finished, not
	// cut, so the connection stays usable.
	Prefetch bool
}

const (
	defaultBatchSize       = 100
	defaultMaxMessageBytes = 10 << 20
)

// Fetch fetches uids from the selected mailbox in ascending UID order and
// calls fn with each message. Flags never change: bodies are read with
// BODY.PEEK.
//
// Each batch first learns the messages' sizes (RFC822.SIZE), then streams
// the bodies of those no larger than MaxMessageBytes (FetchCommand.Next,
// never buffering more than a few MaxMessageBytes at once). A larger
// message is fetched partially: its header, its BODYSTRUCTURE, and at most
// MaxMessageBytes of its first text/plain part (else text/html). Raw is
// then the top header with Content-Type and Content-Transfer-Encoding
// replaced by the part's, followed by the part's body, and Truncated is
// true.
//
// fn is called between FETCH commands, never while one is in flight, so it
// may use the Client (unless FetchOptions.Prefetch). If fn returns an
// error, Fetch stops and returns it.
//
// A message the server leaves out of an OK answer (expunged before or
// during the fetch) is skipped, not an error. A FETCH answered NO is an
// error (a temporary [UNAVAILABLE] or [LIMIT], or a server that failed to
// read the message): nothing says the messages are gone, so they must be
// fetched again, not skipped. The one exception is NO [EXPUNGEISSUED],
// whose partial answer is kept. A caller that needs to know whether a
// skipped message is really gone asks Client.Missing.
func (c *Client) Fetch(ctx context.Context, uids []uint32, opts FetchOptions, fn func(RawMessage) error) error {
	mailbox, validity, err := c.selected()
	if err != nil {
		return fmt.Errorf("imap fetch: %w", err)
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = defaultBatchSize
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = defaultMaxMessageBytes
	}
	budget := 4 * opts.MaxMessageBytes // bytes of full bodies held at once

	uids = slices.Clone(uids)
	slices.Sort(uids)
	uids = slices.Compact(uids)
	if len(uids) > 0 && uids[0] == 0 {
		uids = uids[1:]
	}

	delivered := map[uint32]bool{}
	// handOver keeps the messages not handed over before (a batch that was
	// split and fetched again), stamped with where they come from.
	handOver := func(msgs []RawMessage) []RawMessage {
		out := msgs[:0]
		for _, m := range msgs {
			if delivered[m.UID] {
				continue // already handed over before a batch was split
			}
			delivered[m.UID] = true
			m.Account, m.Mailbox, m.UIDValidity = c.account, mailbox, validity
			out = append(out, m)
		}
		return out
	}
	if opts.Prefetch {
		return c.fetchAhead(ctx, uids, opts, budget, delivered, handOver, fn)
	}
	return unwrapCallback(c.fetchAll(ctx, uids, opts, budget, delivered, func(msgs []RawMessage) error {
		for _, m := range handOver(msgs) {
			if err := fn(m); err != nil {
				return callbackError{err}
			}
		}
		return nil
	}))
}

// errStopped ends the prefetching goroutine after fn failed.
var errStopped = errors.New("imap fetch: stopped")

// fetchAhead is Fetch with Prefetch: a goroutine owned by this call runs
// the FETCH commands and hands each group over through a channel of one,
// while this one calls fn; it ends before fetchAhead returns.
func (c *Client) fetchAhead(ctx context.Context, uids []uint32, opts FetchOptions, budget int64,
	delivered map[uint32]bool, handOver func([]RawMessage) []RawMessage, fn func(RawMessage) error) error {
	ready := make(chan []RawMessage, 1)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		defer close(ready)
		done <- c.fetchAll(ctx, uids, opts, budget, delivered, func(msgs []RawMessage) error {
			select {
			case <-stop: // before the send, which could be ready too
				return errStopped
			default:
			}
			select {
			case ready <- handOver(msgs):
				return nil
			case <-stop:
				return errStopped
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	for msgs := range ready {
		for _, m := range msgs {
			if err := fn(m); err != nil {
				// The FETCH in flight ends; the fetcher stops at its next
				// hand-over (a group left in the channel is dropped).
				close(stop)
				// errStopped, or the FETCH in flight's own failure: fn's
				// error comes first either way.
				if ferr := <-done; ferr != nil && !errors.Is(ferr, errStopped) {
					return errors.Join(err, ferr)
				}
				return err
			}
		}
	}
	return <-done
}

// fetchAll runs the FETCH commands for uids (sorted, unique, no 0) and
// calls deliver with each group of messages, in ascending UID order.
func (c *Client) fetchAll(ctx context.Context, uids []uint32, opts FetchOptions, budget int64,
	delivered map[uint32]bool, deliver func([]RawMessage) error) error {
	for start := 0; start < len(uids); start += opts.BatchSize {
		batch := uids[start:min(start+opts.BatchSize, len(uids))]
		err := c.fetchBatch(ctx, batch, opts, budget, deliver)
		if err != nil && opts.OnRefused != nil && refused(err) {
			// Find the message(s) the server will not return, one by one,
			// so that one unreadable message does not hold up the rest.
			for _, uid := range batch {
				if delivered[uid] {
					continue
				}
				err := c.fetchBatch(ctx, []uint32{uid}, opts, budget, deliver)
				if err != nil && refused(err) {
					opts.OnRefused(uid, err)
					continue
				}
				if err != nil {
					return unwrapCallback(err)
				}
			}
			continue
		}
		if err != nil {
			return unwrapCallback(err)
		}
	}
	return nil
}

// callbackError carries an error of Fetch's fn through the batch code, so
// that it is never mistaken for the server's answer.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

func unwrapCallback(err error) error {
	var cb callbackError
	if errors.As(err, &cb) {
		return cb.err
	}
	return err
}

// refused reports whether the server answered a FETCH with NO (not a
// transport failure, not the callback's error).
func refused(err error) bool {
	var cb callbackError
	if errors.As(err, &cb) {
		return false
	}
	var ie *imap.Error
	return errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo
}

// fetchBatch fetches one batch: sizes first, then the bodies in groups of
// at most budget bytes, oversized messages partially.
func (c *Client) fetchBatch(ctx context.Context, batch []uint32, opts FetchOptions, budget int64, deliver func([]RawMessage) error) error {
	sizes, err := c.fetchSizes(ctx, batch)
	if err != nil {
		return err
	}
	var group []uint32
	var groupBytes int64
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		msgs, err := c.fetchFull(ctx, group, opts.MaxMessageBytes)
		group, groupBytes = group[:0], 0
		if err != nil {
			return err
		}
		return deliver(msgs)
	}
	for _, uid := range batch {
		size, ok := sizes[uid]
		if !ok {
			continue // expunged
		}
		if size > opts.MaxMessageBytes {
			if err := flush(); err != nil {
				return err
			}
			m, ok, err := c.fetchPartial(ctx, uid, opts.MaxMessageBytes)
			if err != nil {
				return err
			}
			if ok {
				if err := deliver([]RawMessage{m}); err != nil {
					return err
				}
			}
			continue
		}
		if len(group) > 0 && groupBytes+size > budget {
			if err := flush(); err != nil {
				return err
			}
		}
		group = append(group, uid)
		groupBytes += size
	}
	return flush()
}

// fetched is one message's FETCH data as read from the stream.
type fetched struct {
	uid      uint32
	flags    []string
	date     time.Time
	size     int64
	bs       imap.BodyStructure
	sections []fetchedSection
	modseq   uint64 // MODSEQ, when asked for (CONDSTORE; claim.go)
}

type fetchedSection struct {
	sec  *imap.FetchItemBodySection
	data []byte
	cut  bool // the literal was longer than the read limit
}

// section returns the data of the section with this part and specifier.
func (f *fetched) section(part []int, spec imap.PartSpecifier) (fetchedSection, bool) {
	for _, s := range f.sections {
		if s.sec != nil && s.sec.Specifier == spec && slices.Equal(s.sec.Part, part) {
			return s, true
		}
	}
	return fetchedSection{}, false
}

// runFetch sends one UID FETCH and streams its responses, reading each
// body literal up to limit bytes. Messages without a UID (or that the
// server answered with NIL) are dropped. A NO answer is an error (see
// Fetch), except NO [EXPUNGEISSUED]: what arrived is returned.
func (c *Client) runFetch(ctx context.Context, uids []uint32, items *imap.FetchOptions, limit int64) ([]fetched, error) {
	var out []fetched
	err := c.guard(ctx, func() error {
		cmd := c.ic.Fetch(uidSet(uids), items)
		defer func() { _ = cmd.Close() }()
		for {
			msg := cmd.Next()
			if msg == nil {
				break
			}
			f, err := readFetched(msg, limit)
			if err != nil {
				return err
			}
			if f.uid != 0 {
				out = append(out, f)
			}
		}
		return cmd.Close()
	})
	var ie *imap.Error
	if errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo && ie.Code == "EXPUNGEISSUED" {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("imap fetch uids %d-%d: %w", uids[0], uids[len(uids)-1], err)
	}
	return out, nil
}

func readFetched(msg *imapclient.FetchMessageData, limit int64) (fetched, error) {
	var f fetched
	for {
		item := msg.Next()
		if item == nil {
			return f, nil
		}
		switch it := item.(type) {
		case imapclient.FetchItemDataUID:
			f.uid = uint32(it.UID)
		case imapclient.FetchItemDataFlags:
			f.flags = make([]string, len(it.Flags))
			for i, fl := range it.Flags {
				f.flags[i] = string(fl)
			}
		case imapclient.FetchItemDataInternalDate:
			f.date = it.Time
		case imapclient.FetchItemDataRFC822Size:
			f.size = it.Size
		case imapclient.FetchItemDataModSeq:
			f.modseq = it.ModSeq
		case imapclient.FetchItemDataBodyStructure:
			f.bs = it.BodyStructure
		case imapclient.FetchItemDataBodySection:
			s := fetchedSection{sec: it.Section}
			if it.Literal != nil {
				b, err := readLiteral(it.Literal, limit+1)
				if err != nil {
					return f, fmt.Errorf("read body of message %d: %w", msg.SeqNum, err)
				}
				if int64(len(b)) > limit {
					b, s.cut = b[:limit], true
				}
				s.data = b
			}
			// The rest of an over-long literal is discarded by msg.Next.
			f.sections = append(f.sections, s)
		}
	}
}

// readLiteral reads at most most bytes of lit into a buffer of the size
// the server announced (io.ReadAll's doubling copied and threw away more
// than the corpus's 33 MB per triage). A literal shorter than announced
// is an error, as from io.ReadFull.
func readLiteral(lit imap.LiteralReader, most int64) ([]byte, error) {
	n := lit.Size()
	if n < 0 || n > most {
		n = most
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(lit, b); err != nil {
		return nil, err
	}
	return b, nil
}

// fetchSizes returns RFC822.SIZE by UID for the messages that still exist.
func (c *Client) fetchSizes(ctx context.Context, uids []uint32) (map[uint32]int64, error) {
	msgs, err := c.runFetch(ctx, uids, &imap.FetchOptions{UID: true, RFC822Size: true}, 0)
	if err != nil {
		return nil, err
	}
	sizes := make(map[uint32]int64, len(msgs))
	for _, m := range msgs {
		sizes[m.uid] = m.size
	}
	return sizes, nil
}

// fetchFull fetches whole messages, in ascending UID order.
func (c *Client) fetchFull(ctx context.Context, uids []uint32, limit int64) ([]RawMessage, error) {
	body := &imap.FetchItemBodySection{Peek: true}
	msgs, err := c.runFetch(ctx, uids, &imap.FetchOptions{
		UID: true, Flags: true, InternalDate: true, RFC822Size: true,
		BodySection: []*imap.FetchItemBodySection{body},
	}, limit)
	if err != nil {
		return nil, err
	}
	out := make([]RawMessage, 0, len(msgs))
	for _, m := range msgs {
		s, ok := m.section(nil, imap.PartSpecifierNone)
		if !ok || s.data == nil {
			continue // expunged while we fetched
		}
		out = append(out, RawMessage{
			UID: m.uid, Raw: s.data, Truncated: s.cut, Size: m.size,
			Flags: m.flags, InternalDate: m.date,
		})
	}
	slices.SortFunc(out, func(a, b RawMessage) int { return cmp.Compare(a.UID, b.UID) })
	return out, nil
}

// fetchPartial fetches the header and the first text part of an oversized
// message. ok is false when the message no longer exists.
func (c *Client) fetchPartial(ctx context.Context, uid uint32, limit int64) (RawMessage, bool, error) {
	hdrItem := &imap.FetchItemBodySection{Peek: true, Specifier: imap.PartSpecifierHeader}
	first, err := c.runFetch(ctx, []uint32{uid}, &imap.FetchOptions{
		UID: true, Flags: true, InternalDate: true, RFC822Size: true,
		BodyStructure: &imap.FetchItemBodyStructure{Extended: true},
		BodySection:   []*imap.FetchItemBodySection{hdrItem},
	}, 1<<20)
	if err != nil {
		return RawMessage{}, false, err
	}
	if len(first) == 0 {
		return RawMessage{}, false, nil
	}
	m := first[0]
	hdr, ok := m.section(nil, imap.PartSpecifierHeader)
	if !ok || hdr.data == nil {
		return RawMessage{}, false, nil
	}
	out := RawMessage{UID: uid, Truncated: true, Size: m.size, Flags: m.flags, InternalDate: m.date}

	path, part := firstTextPart(m.bs)
	var items []*imap.FetchItemBodySection
	var bodyPart []int
	var bodySpec imap.PartSpecifier
	switch {
	case part == nil:
		// No readable text at all: keep just the header.
		out.Raw = assembleOrRaw(hdr.data, nil, nil, false)
		return out, true, nil
	case len(path) == 0:
		// A single-part message: its body is the TEXT section.
		bodySpec = imap.PartSpecifierText
	default:
		bodyPart = path
		items = append(items, &imap.FetchItemBodySection{Peek: true, Part: path, Specifier: imap.PartSpecifierMIME})
	}
	items = append(items, &imap.FetchItemBodySection{
		Peek: true, Part: bodyPart, Specifier: bodySpec,
		Partial: &imap.SectionPartial{Offset: 0, Size: limit},
	})
	second, err := c.runFetch(ctx, []uint32{uid}, &imap.FetchOptions{UID: true, BodySection: items}, limit)
	if err != nil {
		return RawMessage{}, false, err
	}
	if len(second) == 0 {
		return RawMessage{}, false, nil
	}
	body, ok := second[0].section(bodyPart, bodySpec)
	if !ok || body.data == nil {
		return RawMessage{}, false, nil
	}
	var mimeHdr []byte
	if len(path) > 0 {
		if s, ok := second[0].section(path, imap.PartSpecifierMIME); ok {
			mimeHdr = s.data
		}
	}
	cut := body.cut || int64(part.Size) > limit || int64(len(body.data)) >= limit
	out.Raw = assembleOrRaw(hdr.data, mimeHdr, body.data, cut)
	return out, true, nil
}

// assembleOrRaw assembles a truncated message, or, when the server's
// pieces do not fit together (a malformed header line, a missing MIME
// header), hands over the header and the text bytes as they came: the
// parser never fails and records what is wrong, while an error here would
// stop the whole mailbox at this one message, every sync, for good.
func assembleOrRaw(hdr, mimeHdr, body []byte, cut bool) []byte {
	if raw, err := assembleTruncated(hdr, mimeHdr, body, cut); err == nil {
		return raw
	}
	raw := append([]byte(nil), hdr...)
	if len(body) > 0 {
		if !bytes.HasSuffix(raw, []byte("\r\n\r\n")) {
			raw = append(raw, "\r\n"...)
		}
		raw = append(raw, body...)
	}
	return raw
}

// firstTextPart finds the first text/plain part that is not an attachment,
// else the first such text/html part. path is nil for a single-part
// message; part is nil when there is no text.
func firstTextPart(bs imap.BodyStructure) (path []int, part *imap.BodyStructureSinglePart) {
	if sp, ok := bs.(*imap.BodyStructureSinglePart); ok {
		if isInlineText(sp, "plain") || isInlineText(sp, "html") {
			return nil, sp
		}
		return nil, nil
	}
	if bs == nil {
		return nil, nil
	}
	for _, sub := range []string{"plain", "html"} {
		bs.Walk(func(p []int, b imap.BodyStructure) bool {
			if part != nil {
				return false
			}
			if sp, ok := b.(*imap.BodyStructureSinglePart); ok && isInlineText(sp, sub) {
				path, part = slices.Clone(p), sp
			}
			return true
		})
		if part != nil {
			return path, part
		}
	}
	return nil, nil
}

func isInlineText(sp *imap.BodyStructureSinglePart, subtype string) bool {
	if !strings.EqualFold(sp.Type, "text") || !strings.EqualFold(sp.Subtype, subtype) {
		return false
	}
	if d := sp.Disposition(); d != nil && strings.EqualFold(d.Value, "attachment") {
		return false
	}
	return true
}

// assembleTruncated builds a self-consistent message from the top-level
// header, the chosen part's MIME header (nil for a single-part message,
// whose own header already describes body) and the part's (possibly
// truncated) body. When cut, the body is trimmed to its last full line so
// that no base64 quantum or quoted-printable escape is split.
func assembleTruncated(topHeader, partHeader, body []byte, cut bool) ([]byte, error) {
	top, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(topHeader)))
	if err != nil {
		return nil, fmt.Errorf("parse header: %w", err)
	}
	switch {
	case partHeader != nil:
		ph, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(partHeader)))
		if err != nil {
			return nil, fmt.Errorf("parse part header: %w", err)
		}
		top.Del("Content-Type")
		top.Del("Content-Transfer-Encoding")
		top.Del("Content-Disposition")
		ct := ph.Get("Content-Type")
		if ct == "" {
			ct = "text/plain; charset=us-ascii"
		}
		top.Set("Content-Type", ct)
		if cte := ph.Get("Content-Transfer-Encoding"); cte != "" {
			top.Set("Content-Transfer-Encoding", cte)
		}
	case body == nil:
		top.Del("Content-Type")
		top.Del("Content-Transfer-Encoding")
		top.Del("Content-Disposition")
		top.Set("Content-Type", "text/plain; charset=us-ascii")
	}
	if cut {
		if i := bytes.LastIndexByte(body, '\n'); i >= 0 {
			body = body[:i+1]
		}
	}
	var buf bytes.Buffer
	if err := textproto.WriteHeader(&buf, top); err != nil {
		return nil, fmt.Errorf("write header: %w", err)
	}
	buf.Write(body)
	return buf.Bytes(), nil
}
