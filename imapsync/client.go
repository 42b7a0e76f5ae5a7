package imapsync

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message/charset"

	"github.com/mailagent/mailagent/internal/netpolicy"
)

// Errors returned by this package. Match them with errors.Is.
var (
	// ErrAuth means the server rejected the credentials. The error text
	// carries the server's explanation, never the password or token.
	ErrAuth = errors.New("imap authentication failed")
	// ErrPlaintextNotLoopback means Security "insecure" was asked for a
	// host that is not a loopback address. No connection was attempted.
	// It is netpolicy.ErrPlaintextNotLoopback, the value SMTP returns too.
	ErrPlaintextNotLoopback = netpolicy.ErrPlaintextNotLoopback
	// ErrInsecureTLS means Options.TLSConfig disabled certificate
	// verification, which this package never allows. It is
	// netpolicy.ErrInsecureTLS.
	ErrInsecureTLS = netpolicy.ErrInsecureTLS
	// ErrNoMailbox means no mailbox matched (see Client.FindSpecialUse).
	ErrNoMailbox = errors.New("imap: no such mailbox")
	// ErrUnsupported means the server lacks a capability the call needs.
	ErrUnsupported = errors.New("imap: not supported by the server")
	// ErrNotSelected means a call needing a selected mailbox came before
	// Client.Select.
	ErrNotSelected = errors.New("imap: no mailbox selected")
	// ErrLoginUnavailable means the server refused the login for a reason
	// it says is temporary (RFC 5530 [UNAVAILABLE] or [SERVERBUG]: Dovecot
	// answers so while its authentication backend is down). It is not
	// ErrAuth: the credentials were not judged, and the login is retried.
	ErrLoginUnavailable = errors.New("imap login temporarily unavailable")
)

// Security is how the connection is protected.
type Security string

// Security values.
const (
	// SecurityTLS is implicit TLS (usually port 993).
	SecurityTLS Security = "tls"
	// SecurityStartTLS is a plaintext connection upgraded with STARTTLS
	// (usually port 143). The upgrade is mandatory.
	SecurityStartTLS Security = "starttls"
	// SecurityInsecure is plaintext. It is only allowed to loopback
	// hosts (netpolicy.IsLoopback: 127.0.0.0/8, ::1, localhost; names are
	// never resolved), for local test servers and bridges.
	SecurityInsecure Security = "insecure"
)

// Options configures Dial. Secrets are resolved by the caller and passed in
// plainly; they are never logged or put in errors by this package.
type Options struct {
	Host     string
	Port     int
	Security Security

	Username string
	// Password is used with LOGIN, or AUTHENTICATE PLAIN when the server
	// disables LOGIN. Ignored when OAuth2Token is set.
	Password string
	// OAuth2Token, when set, authenticates with OAUTHBEARER if the server
	// advertises it, else with XOAUTH2, instead of the password.
	OAuth2Token string

	// TLSCAFile names a PEM file of extra CA certificates, added to a copy
	// of the system pool (or of TLSConfig.RootCAs). Certificates are always
	// verified.
	TLSCAFile string
	// TLSConfig overrides the TLS configuration (used by tests). It is
	// cloned, never modified; ServerName defaults to Host and MinVersion is
	// at least TLS 1.2. InsecureSkipVerify is refused with ErrInsecureTLS.
	TLSConfig *tls.Config

	// DialTimeout bounds the TCP connect and TLS handshake; default 30s.
	DialTimeout time.Duration

	// DialContext, when set, makes the connection in place of a TCP dial
	// to the address (tests connect to an in-memory server with it, under
	// testing/synctest); Security, TLS and login work as over TCP.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// Debug, when set, receives the raw protocol trace. It MAY INCLUDE
	// CREDENTIALS (the LOGIN command and SASL exchanges are written as
	// sent), so never point it at a shared log.
	Debug io.Writer

	// Account is copied into RawMessage.Account.
	Account string
}

// MailboxStatus describes a selected mailbox.
type MailboxStatus struct {
	Name        string
	UIDValidity uint32
	// UIDNext is the UID the next message will get, as of the SELECT. It
	// is 0 when the server did not say.
	UIDNext     uint32
	NumMessages uint32
	// UIDValidityChanged is set by Watcher when the mailbox's UIDVALIDITY
	// differs from the one seen on its previous connection. Callers keep
	// their own checkpoint and must compare UIDValidity with it anyway:
	// when it differs, every stored UID is void and the mailbox must be
	// rescanned.
	UIDValidityChanged bool
}

// Client is a logged-in IMAP connection.
//
// A Client is not safe for concurrent use: run one operation at a time.
// Every method that talks to the server takes a context; when the context
// is cancelled mid-operation the connection is closed (go-imap has no
// context support), the method returns the context's error and the Client
// is unusable afterwards.
type Client struct {
	ic      *imapclient.Client
	account string
	caps    map[string]bool
	// greeting is the server's greeting line (greetingConn), set by Dial.
	greeting string

	// exists receives a value (without blocking) whenever the server
	// reports EXISTS for the selected mailbox outside of a SELECT.
	exists chan struct{}

	mu          sync.Mutex
	mailbox     string // selected mailbox; "" before Select
	uidValidity uint32
	numMessages uint32 // kept up to date by EXISTS and EXPUNGE
	// permFlags is the selected mailbox's PERMANENTFLAGS (keywords.go).
	permFlags []imap.Flag
}

const defaultDialTimeout = 30 * time.Second

// Dial connects, secures the connection as opts.Security says and logs in.
//
// Errors: ErrPlaintextNotLoopback (nothing dialled), ErrInsecureTLS, ErrAuth
// for rejected credentials, ctx.Err() when ctx ends first, otherwise a
// wrapped network or TLS error.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Host == "" || opts.Port <= 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("imap dial: invalid address %q port %d", opts.Host, opts.Port)
	}
	addr := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	timeout := opts.DialTimeout
	if timeout <= 0 {
		timeout = defaultDialTimeout
	}

	var tlsCfg *tls.Config
	var dialAddrs []string
	switch opts.Security {
	case SecurityTLS, SecurityStartTLS:
		cfg, err := netpolicy.TLSConfig(opts.Host, opts.TLSCAFile, opts.TLSConfig)
		if err != nil {
			return nil, fmt.Errorf("imap dial %s: %w", addr, err)
		}
		tlsCfg = cfg
		dialAddrs = []string{addr}
	case SecurityInsecure:
		// The literal loopback addresses are dialled: no resolver is asked.
		addrs, err := netpolicy.PlaintextAddrs(opts.Host, opts.Port)
		if err != nil {
			return nil, err
		}
		dialAddrs = addrs
	default:
		return nil, fmt.Errorf("imap dial: unknown security %q (want tls, starttls or insecure)", opts.Security)
	}

	c := &Client{account: opts.Account, exists: make(chan struct{}, 1)}
	icOpts := &imapclient.Options{
		DebugWriter: opts.Debug,
		WordDecoder: &mime.WordDecoder{CharsetReader: charset.Reader},
		TLSConfig:   tlsCfg,
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Expunge: func(uint32) {
				c.mu.Lock()
				if c.numMessages > 0 {
					c.numMessages--
				}
				c.mu.Unlock()
			},
			Mailbox: func(data *imapclient.UnilateralDataMailbox) {
				if data.NumMessages == nil {
					return
				}
				c.mu.Lock()
				c.numMessages = *data.NumMessages
				c.mu.Unlock()
				select {
				case c.exists <- struct{}{}:
				default:
				}
			},
		},
	}

	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var conn net.Conn
	var err error
	if opts.DialContext != nil {
		conn, err = opts.DialContext(dctx, "tcp", dialAddrs[0])
	} else {
		conn, err = dialFirst(dctx, dialAddrs)
	}
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("imap dial %s: %w", addr, err))
	}
	// Until login completes, cancellation closes the raw connection.
	stop := context.AfterFunc(dctx, func() { _ = conn.Close() })
	if opts.Security == SecurityTLS {
		tconn := tls.Client(conn, withALPN(tlsCfg))
		if err := tconn.HandshakeContext(dctx); err != nil {
			stop()
			_ = conn.Close()
			return nil, ctxErr(ctx, fmt.Errorf("imap tls handshake with %s: %w", addr, err))
		}
		conn = tconn
	}
	if !stop() {
		_ = conn.Close()
		return nil, ctxErr(ctx, fmt.Errorf("imap dial %s: %w", addr, dctx.Err()))
	}

	// The greeting's text names Courier-IMAP (ServerName); under STARTTLS
	// it is read before the handshake, so the TLS layer goes above this.
	gc := &greetingConn{Conn: conn}
	conn = gc

	if opts.Security == SecurityStartTLS {
		// NewStartTLS closes conn on failure.
		stop = context.AfterFunc(dctx, func() { _ = conn.Close() })
		ic, err := imapclient.NewStartTLS(conn, icOpts)
		stop()
		if err != nil {
			return nil, ctxErr(ctx, fmt.Errorf("imap starttls with %s: %w", addr, err))
		}
		c.ic = ic
	} else {
		c.ic = imapclient.New(conn, icOpts)
	}

	// Greeting and login, bounded by ctx (not by the dial timeout: a slow
	// authentication backend is not a connect failure).
	err = c.guard(ctx, func() error {
		if err := WaitGreeting(c.ic); err != nil {
			return fmt.Errorf("imap greeting from %s: %w", addr, err)
		}
		c.greeting = gc.greeting()
		if err := c.login(opts); err != nil {
			return err
		}
		c.caps = expandCaps(c.ic.Caps())
		return nil
	})
	if err != nil {
		_ = c.ic.Close()
		return nil, err
	}
	return c, nil
}

func withALPN(cfg *tls.Config) *tls.Config {
	if cfg.NextProtos == nil {
		cfg = cfg.Clone()
		cfg.NextProtos = []string{"imap"}
	}
	return cfg
}

func dialFirst(ctx context.Context, addrs []string) (net.Conn, error) {
	// A connection spends most of its life in IDLE, silent: TCP keep-alive
	// probes are what notice a peer that vanished (a laptop changing
	// networks, a NAT dropping state). These settings notice it within
	// about a minute instead of the system default of several.
	d := net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 10 * time.Second, Count: 3}}
	return netpolicy.DialFirst(ctx, &d, addrs)
}

// capsToExpand are capabilities implied by IMAP4rev2 or by another
// capability; Caps reports them explicitly.
var capsToExpand = []imap.Cap{
	imap.CapIdle, imap.CapMove, imap.CapUIDPlus, imap.CapCondStore, imap.CapSpecialUse,
	imap.CapESearch, imap.CapLiteralMinus, imap.CapUnselect, imap.CapNamespace, imap.CapEnable,
	imap.CapUTF8Accept, imap.CapListExtended, imap.CapListStatus, imap.CapSASLIR, imap.CapChildren,
}

func expandCaps(set imap.CapSet) map[string]bool {
	m := make(map[string]bool, len(set)+len(capsToExpand))
	for cap := range set {
		m[strings.ToUpper(string(cap))] = true
	}
	for _, cap := range capsToExpand {
		if set.Has(cap) {
			m[strings.ToUpper(string(cap))] = true
		}
	}
	return m
}

// Caps returns the server's capabilities after login, upper-cased, with
// the ones implied by IMAP4rev2 spelled out (IDLE, MOVE, UIDPLUS, …). The
// map is a copy.
func (c *Client) Caps() map[string]bool {
	m := make(map[string]bool, len(c.caps))
	for k, v := range c.caps {
		m[k] = v
	}
	return m
}

// Has reports whether the server advertised capability name
// (case-insensitive), e.g. "IDLE" or "THREAD=REFERENCES".
func (c *Client) Has(name string) bool { return c.caps[strings.ToUpper(name)] }

// Close closes the connection without LOGOUT. It is safe to call more than
// once.
func (c *Client) Close() error {
	err := c.ic.Close()
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// Logout says goodbye politely, then closes the connection.
func (c *Client) Logout(ctx context.Context) error {
	err := c.guard(ctx, func() error { return c.ic.Logout().Wait() })
	cerr := c.Close()
	if err != nil {
		return fmt.Errorf("imap logout: %w", err)
	}
	return cerr
}

// Done returns a channel closed once the connection is gone (closed by us,
// by the server, or by a read error). A dead peer may take a while to be
// noticed; use Noop to probe.
func (c *Client) Done() <-chan struct{} { return c.ic.Closed() }

// Noop sends NOOP: a health check that also lets the server report new
// mail (EXISTS) for the selected mailbox.
func (c *Client) Noop(ctx context.Context) error {
	if err := c.guard(ctx, func() error { return c.ic.Noop().Wait() }); err != nil {
		return fmt.Errorf("imap noop: %w", err)
	}
	return nil
}

// guard runs f with the connection tied to ctx: if ctx ends first the
// connection is closed, which unblocks f, and ctx's error is returned.
func (c *Client) guard(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.ic.Close() })
	err := f()
	stop()
	return ctxErr(ctx, err)
}

// ctxErr replaces err by ctx's error when ctx is done, since the failure
// was then caused by our closing the connection.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// Select opens mailbox (read-only with EXAMINE when readOnly) and makes it
// the target of Search, Fetch, StoreFlags, Move, Delete and Thread.
func (c *Client) Select(ctx context.Context, mailbox string, readOnly bool) (MailboxStatus, error) {
	c.mu.Lock()
	c.mailbox = "" // a failed SELECT leaves no mailbox selected
	c.mu.Unlock()
	var data *imap.SelectData
	err := c.guard(ctx, func() error {
		var err error
		data, err = c.ic.Select(mailbox, &imap.SelectOptions{ReadOnly: readOnly}).Wait()
		return err
	})
	if err != nil {
		return MailboxStatus{}, fmt.Errorf("imap select %q: %w", mailbox, err)
	}
	c.mu.Lock()
	c.mailbox, c.uidValidity, c.numMessages = mailbox, data.UIDValidity, data.NumMessages
	c.permFlags = data.PermanentFlags
	c.mu.Unlock()
	return MailboxStatus{
		Name:        mailbox,
		UIDValidity: data.UIDValidity,
		UIDNext:     uint32(data.UIDNext),
		NumMessages: data.NumMessages,
	}, nil
}

// selected returns the selected mailbox, or ErrNotSelected.
func (c *Client) selected() (string, uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mailbox == "" {
		return "", 0, ErrNotSelected
	}
	return c.mailbox, c.uidValidity, nil
}

// status reports the selected mailbox as the client currently knows it
// (message count updated by EXISTS/EXPUNGE since the SELECT).
func (c *Client) status() MailboxStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	return MailboxStatus{Name: c.mailbox, UIDValidity: c.uidValidity, NumMessages: c.numMessages}
}

// Criteria selects messages for Search. Zero fields do not restrict.
type Criteria struct {
	// Since keeps messages whose INTERNALDATE is on or after this day
	// (IMAP compares dates, not times).
	Since time.Time
	// Unseen keeps messages without \Seen.
	Unseen bool
	// UIDMin keeps UIDs greater than or equal to this.
	UIDMin uint32
	// HeaderMessageID keeps messages whose Message-ID header contains
	// this string.
	HeaderMessageID string
	// UIDs, when not empty, keeps only these UIDs.
	UIDs []uint32
}

// Search runs UID SEARCH in the selected mailbox and returns matching UIDs
// in ascending order.
func (c *Client) Search(ctx context.Context, crit Criteria) ([]uint32, error) {
	if _, _, err := c.selected(); err != nil {
		return nil, fmt.Errorf("imap search: %w", err)
	}
	sc := &imap.SearchCriteria{Since: crit.Since}
	if crit.Unseen {
		sc.NotFlag = []imap.Flag{imap.FlagSeen}
	}
	if crit.UIDMin > 1 {
		sc.UID = []imap.UIDSet{{imap.UIDRange{Start: imap.UID(crit.UIDMin), Stop: 0}}}
	}
	if len(crit.UIDs) > 0 {
		sc.UID = append(sc.UID, uidSet(crit.UIDs))
	}
	if crit.HeaderMessageID != "" {
		sc.Header = []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: crit.HeaderMessageID}}
	}
	data, err := c.uidSearch(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("imap search: %w", err)
	}
	var out []uint32
	for _, uid := range data.AllUIDs() {
		// "N:*" always matches the highest UID, even when it is below N.
		if uint32(uid) >= crit.UIDMin {
			out = append(out, uint32(uid))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Missing returns those of uids that no longer exist in the selected
// mailbox, asked with a fresh UID SEARCH. Fetch skips messages a server
// leaves out of its answer; this is how a caller tells "expunged" from
// "not sent this time" before treating a message as gone.
func (c *Client) Missing(ctx context.Context, uids []uint32) ([]uint32, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	found, err := c.Search(ctx, Criteria{UIDs: uids})
	if err != nil {
		return nil, err
	}
	have := make(map[uint32]bool, len(found))
	for _, u := range found {
		have[u] = true
	}
	var out []uint32
	for _, u := range uids {
		if !have[u] {
			out = append(out, u)
		}
	}
	return out, nil
}

func uidSet(uids []uint32) imap.UIDSet {
	var set imap.UIDSet
	for _, u := range uids {
		set.AddNum(imap.UID(u))
	}
	return set
}

func toFlags(flags []string) []imap.Flag {
	out := make([]imap.Flag, len(flags))
	for i, f := range flags {
		out[i] = imap.Flag(f)
	}
	return out
}

// Append stores raw in mailbox with the given flags and internal date
// (zero: now). It returns the new message's UID, or 0 when the server does
// not report it (no UIDPLUS).
func (c *Client) Append(ctx context.Context, mailbox string, flags []string, date time.Time, raw []byte) (uint32, error) {
	var data *imap.AppendData
	err := c.guard(ctx, func() error {
		cmd := c.ic.Append(mailbox, int64(len(raw)), &imap.AppendOptions{Flags: toFlags(flags), Time: date})
		if _, err := cmd.Write(raw); err != nil {
			_ = cmd.Close()
			return err
		}
		if err := cmd.Close(); err != nil {
			return err
		}
		var err error
		data, err = cmd.Wait()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("imap append to %q: %w", mailbox, err)
	}
	return uint32(data.UID), nil
}

// StoreFlags adds (add=true) or removes flags on uids in the selected
// mailbox.
func (c *Client) StoreFlags(ctx context.Context, uids []uint32, add bool, flags []string) error {
	if len(uids) == 0 {
		return nil
	}
	if _, _, err := c.selected(); err != nil {
		return fmt.Errorf("imap store: %w", err)
	}
	op := imap.StoreFlagsDel
	if add {
		op = imap.StoreFlagsAdd
	}
	err := c.guard(ctx, func() error {
		return c.ic.Store(uidSet(uids), &imap.StoreFlags{Op: op, Silent: true, Flags: toFlags(flags)}, nil).Close()
	})
	if err != nil {
		return fmt.Errorf("imap store flags on %d messages: %w", len(uids), err)
	}
	return nil
}

// Move moves uids from the selected mailbox to dest: UID MOVE when the
// server has MOVE, else COPY, mark \Deleted and UID EXPUNGE. Without
// UIDPLUS the originals stay marked \Deleted and are not expunged, since a
// plain EXPUNGE would also remove messages the user deleted.
func (c *Client) Move(ctx context.Context, uids []uint32, dest string) error {
	if len(uids) == 0 {
		return nil
	}
	if _, _, err := c.selected(); err != nil {
		return fmt.Errorf("imap move: %w", err)
	}
	set := uidSet(uids)
	err := c.guard(ctx, func() error {
		if c.Has(string(imap.CapMove)) {
			_, err := c.ic.Move(set, dest).Wait()
			return err
		}
		if _, err := c.ic.Copy(set, dest).Wait(); err != nil {
			return err
		}
		return c.deleteLocked(set)
	})
	if err != nil {
		return fmt.Errorf("imap move %d messages to %q: %w", len(uids), dest, err)
	}
	return nil
}

// Delete marks uids \Deleted and expunges exactly them (UID EXPUNGE). Without
// UIDPLUS they are only marked (see Move).
func (c *Client) Delete(ctx context.Context, uids []uint32) error {
	if len(uids) == 0 {
		return nil
	}
	if _, _, err := c.selected(); err != nil {
		return fmt.Errorf("imap delete: %w", err)
	}
	if err := c.guard(ctx, func() error { return c.deleteLocked(uidSet(uids)) }); err != nil {
		return fmt.Errorf("imap delete %d messages: %w", len(uids), err)
	}
	return nil
}

func (c *Client) deleteLocked(set imap.UIDSet) error {
	store := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagDeleted}}
	if err := c.ic.Store(set, store, nil).Close(); err != nil {
		return err
	}
	if !c.Has(string(imap.CapUIDPlus)) {
		return nil
	}
	return c.ic.UIDExpunge(set).Close()
}

// CreateMailbox creates name; a mailbox that already exists is not an error.
func (c *Client) CreateMailbox(ctx context.Context, name string) error {
	err := c.guard(ctx, func() error { return c.ic.Create(name, nil).Wait() })
	var ie *imap.Error
	if errors.As(err, &ie) && ie.Type == imap.StatusResponseTypeNo {
		if ie.Code == imap.ResponseCodeAlreadyExists {
			return nil
		}
		// Not every server sends [ALREADYEXISTS]: look for the mailbox.
		var list []*imap.ListData
		lerr := c.guard(ctx, func() error {
			var err error
			list, err = c.ic.List("", name, nil).Collect()
			return err
		})
		if lerr == nil && len(list) > 0 {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("imap create %q: %w", name, err)
	}
	return nil
}

// Thread runs UID THREAD REFERENCES UTF-8 ALL in the selected mailbox and
// returns each thread as the flat list of its UIDs (in the server's tree
// order). ErrUnsupported when the server lacks THREAD=REFERENCES.
func (c *Client) Thread(ctx context.Context) ([][]uint32, error) {
	if !c.Has("THREAD=REFERENCES") {
		return nil, fmt.Errorf("imap thread: %w", ErrUnsupported)
	}
	if _, _, err := c.selected(); err != nil {
		return nil, fmt.Errorf("imap thread: %w", err)
	}
	var data []imapclient.ThreadData
	err := c.guard(ctx, func() error {
		var err error
		data, err = c.ic.UIDThread(&imapclient.ThreadOptions{
			Algorithm:      imap.ThreadReferences,
			SearchCriteria: &imap.SearchCriteria{},
		}).Wait()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("imap thread: %w", err)
	}
	out := make([][]uint32, 0, len(data))
	for _, t := range data {
		out = append(out, flattenThread(nil, t))
	}
	return out, nil
}

func flattenThread(dst []uint32, t imapclient.ThreadData) []uint32 {
	dst = append(dst, t.Chain...)
	for _, sub := range t.SubThreads {
		dst = flattenThread(dst, sub)
	}
	return dst
}

// uidSearch runs UID SEARCH sc under the connection's guard.
func (c *Client) uidSearch(ctx context.Context, sc *imap.SearchCriteria) (*imap.SearchData, error) {
	var data *imap.SearchData
	err := c.guard(ctx, func() error {
		var err error
		data, err = c.ic.UIDSearch(sc, nil).Wait()
		return err
	})
	return data, err
}
