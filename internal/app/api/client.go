package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

const (
	// dialTimeout bounds Dial's check that the watcher answers.
	dialTimeout = 2 * time.Second
	// DefaultStoreTimeout bounds each RemoteStore call of Client.Store.
	DefaultStoreTimeout = time.Minute
	// eventBuffer is the client-side buffer of an event stream.
	eventBuffer = 64
)

// Client implements Service over the watcher's socket. It is safe for
// concurrent use. Errors from the watcher are *Error values, which match
// the original sentinels with errors.Is; transport failures that mean the
// watcher is gone wrap ErrNoWatcher.
type Client struct {
	path string
	hc   *http.Client
	// StoreTimeout bounds each call of the RemoteStore returned by Store
	// (0 means DefaultStoreTimeout). Set it before use.
	StoreTimeout time.Duration
	// subscribeTimeout bounds opening the event stream (0: dialTimeout;
	// the remote transport's ssh handshake needs longer).
	subscribeTimeout time.Duration
}

var _ Service = (*Client)(nil)

// Dial connects to the watcher at the socket path and checks, within a
// short timeout, that it answers. When nothing listens (no file,
// connection refused, or a stale file) the error wraps ErrNoWatcher.
func Dial(ctx context.Context, path string) (*Client, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("dial %s: %w", path, ErrNoWatcher)
		}
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	c := newClient(path)
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	_, err := c.Status(dctx)
	var remote *Error
	if err != nil && !errors.As(err, &remote) { // a watcher that answers with an error is still there
		_ = c.Close()
		return nil, fmt.Errorf("dial %s: %w", path, err)
	}
	return c, nil
}

func newClient(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &Client{path: path, hc: &http.Client{Transport: tr}}
}

// Path returns the socket path.
func (c *Client) Path() string { return c.path }

// Close releases idle connections. It never fails; the error is there to
// match the close func of Open.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// base is the URL prefix: the host is ignored by the unix dialer.
const base = "http://mailagent"

// request builds a request with an optional JSON body.
func (c *Client) request(ctx context.Context, method, path string, q url.Values, in any) (*http.Request, error) {
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// send runs a request and returns the response when it succeeded; a
// failed response becomes its *Error.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		if noListener(err) {
			return nil, fmt.Errorf("watcher %s: %w: %v", c.path, ErrNoWatcher, err)
		}
		return nil, fmt.Errorf("watcher %s: %w", c.path, err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	var eb errorBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&eb); err != nil || eb.Error == nil {
		return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("watcher %s: %s %s: %s", c.path, req.Method, req.URL.Path, resp.Status)}
	}
	return nil, eb.Error
}

// do builds one request (request) and runs it (send).
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in any) (*http.Response, error) {
	req, err := c.request(ctx, method, path, q, in)
	if err != nil {
		return nil, err
	}
	return c.send(req)
}

// call runs one JSON request; out may be nil.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, in, out any) error {
	resp, err := c.do(ctx, method, path, q, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("watcher %s: %s %s: decode: %w", c.path, method, path, err)
	}
	return nil
}

func queuePath(id, action string) string {
	p := "/v1/queue/" + url.PathEscape(id)
	if action != "" {
		p += "/" + action
	}
	return p
}

// Status implements Service.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.call(ctx, http.MethodGet, "/v1/status", nil, nil, &s)
	return s, err
}

// Queue implements Service.
func (c *Client) Queue(ctx context.Context, f QueueFilter) ([]store.QueueItem, error) {
	q := url.Values{}
	for k, v := range map[string]string{"status": f.Status, "kind": f.Kind, "account": f.Account} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var items []store.QueueItem
	if err := c.call(ctx, http.MethodGet, "/v1/queue", q, nil, &items); err != nil {
		return nil, err
	}
	return items, nil
}

// QueueItem implements Service.
func (c *Client) QueueItem(ctx context.Context, id string) (*QueueDetail, error) {
	if err := emptyID("queue item", id); err != nil {
		return nil, err
	}
	var d QueueDetail
	if err := c.call(ctx, http.MethodGet, queuePath(id, ""), nil, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Approve implements Service. The watcher keeps sending when ctx ends
// after the request arrived; only its own shutdown stops the send.
func (c *Client) Approve(ctx context.Context, id, final string) (*store.QueueItem, error) {
	if err := emptyID("approve", id); err != nil {
		return nil, err
	}
	var q store.QueueItem
	if err := c.call(ctx, http.MethodPost, queuePath(id, "approve"), nil, approveReq{Final: final}, &q); err != nil {
		return nil, c.lost(ctx, "approval", id, err) // never retried: remote_lost.go
	}
	return &q, nil
}

// Reject implements Service.
func (c *Client) Reject(ctx context.Context, id, reason string) error {
	if err := emptyID("reject", id); err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, queuePath(id, "reject"), nil, rejectReq{Reason: reason}, nil)
}

// Edit implements Service.
func (c *Client) Edit(ctx context.Context, id, text string) (*store.QueueItem, error) {
	if err := emptyID("edit", id); err != nil {
		return nil, err
	}
	var q store.QueueItem
	if err := c.call(ctx, http.MethodPost, queuePath(id, "edit"), nil, editReq{Text: text}, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// Snooze implements Service.
func (c *Client) Snooze(ctx context.Context, id string, until time.Time) error {
	if err := emptyID("snooze", id); err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, queuePath(id, "snooze"), nil, snoozeReq{Until: until}, nil)
}

// Unsnooze implements Service.
func (c *Client) Unsnooze(ctx context.Context, id string) error {
	if err := emptyID("unsnooze", id); err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, queuePath(id, "unsnooze"), nil, struct{}{}, nil)
}

// Regenerate implements Service.
func (c *Client) Regenerate(ctx context.Context, id, instruction string) (*store.QueueItem, error) {
	if err := emptyID("regenerate", id); err != nil {
		return nil, err
	}
	var q store.QueueItem
	if err := c.call(ctx, http.MethodPost, queuePath(id, "regenerate"), nil, regenerateReq{Instruction: instruction}, &q); err != nil {
		return nil, err
	}
	return &q, nil
}

// Cancel implements Service.
func (c *Client) Cancel(ctx context.Context, outboxID string) error {
	if err := emptyID("cancel", outboxID); err != nil {
		return err
	}
	return c.call(ctx, http.MethodPost, "/v1/outbox/"+url.PathEscape(outboxID)+"/cancel", nil, nil, nil)
}

// Retry implements Service.
func (c *Client) Retry(ctx context.Context, key store.MessageKey) error {
	return c.call(ctx, http.MethodPost, "/v1/retry", nil, key, nil)
}

// Outbox implements Service.
func (c *Client) Outbox(ctx context.Context, status string) ([]store.OutboxRecord, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	var recs []store.OutboxRecord
	if err := c.call(ctx, http.MethodGet, "/v1/outbox", q, nil, &recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// NeedsReview implements Service.
func (c *Client) NeedsReview(ctx context.Context) ([]store.MessageRecord, error) {
	var recs []store.MessageRecord
	if err := c.call(ctx, http.MethodGet, "/v1/needs-review", nil, nil, &recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// Contacts implements Service.
func (c *Client) Contacts(ctx context.Context, account string) ([]store.Contact, error) {
	var cs []store.Contact
	if err := c.call(ctx, http.MethodGet, "/v1/contacts", url.Values{"account": {account}}, nil, &cs); err != nil {
		return nil, err
	}
	return cs, nil
}

// ContactNames implements Service.
func (c *Client) ContactNames(ctx context.Context, account, prefix string, limit int) ([]store.ContactName, error) {
	var ns []store.ContactName
	q := url.Values{"account": {account}, "prefix": {prefix}, "limit": {strconv.Itoa(limit)}}
	if err := c.call(ctx, http.MethodGet, "/v1/contact-names", q, nil, &ns); err != nil {
		return nil, err
	}
	return ns, nil
}

// Contact implements Service.
func (c *Client) Contact(ctx context.Context, account, email string) (*store.Contact, error) {
	var ct store.Contact
	if err := c.call(ctx, http.MethodGet, "/v1/contact", url.Values{"account": {account}, "email": {email}}, nil, &ct); err != nil {
		return nil, err
	}
	return &ct, nil
}

// RecipientStatus implements Service.
func (c *Client) RecipientStatus(ctx context.Context, account string, addrs []string) (map[string]bool, error) {
	out := map[string]bool{}
	if err := c.call(ctx, http.MethodPost, "/v1/recipients", nil, recipientsReq{Account: account, Addrs: addrs}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ForgetContact implements Service.
func (c *Client) ForgetContact(ctx context.Context, account, email string) error {
	return c.call(ctx, http.MethodDelete, "/v1/contact", url.Values{"account": {account}, "email": {email}}, nil, nil)
}

// NoteContact implements Service.
func (c *Client) NoteContact(ctx context.Context, account, email, note string) error {
	return c.call(ctx, http.MethodPost, "/v1/contact/note", url.Values{"account": {account}, "email": {email}}, noteReq{Note: note}, nil)
}

// Explain implements Service.
func (c *Client) Explain(ctx context.Context, ref string) (*Explain, error) {
	var e Explain
	if err := c.call(ctx, http.MethodGet, "/v1/explain", url.Values{"ref": {ref}}, nil, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// Events implements Service over the watcher's Server-Sent Events stream.
// It returns once the watcher has subscribed, so every event published
// after it returns is delivered. When the stream ends (the watcher stopped
// or crashed) the channel stays open: it delivers an EventWatcherGone,
// reconnects with backoff (at most reconnectMax apart), and on success
// delivers an EventWatcherBack followed by the events missed meanwhile
// (resumed with Last-Event-ID), or an EventReset when they cannot be
// replayed (a restarted watcher, too many missed). A gap in the sequence
// numbers is also reported as an EventReset: nothing is lost silently.
// The channel is closed when ctx ends; a goroutine owned by the stream
// feeds it and ends then.
func (c *Client) Events(ctx context.Context) (<-chan agent.Event, error) {
	st, err := c.openStream(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make(chan agent.Event, eventBuffer)
	go func() {
		defer close(out)
		c.follow(ctx, st, out)
	}()
	return out, nil
}

// FollowEvents is Client.Events for a watcher that may not run yet: it
// never fails, and delivers an EventWatcherBack each time it reaches a
// watcher on the socket at path (the first time too) and an
// EventWatcherGone each time it loses it. The channel is closed when ctx
// ends.
func FollowEvents(ctx context.Context, path string) <-chan agent.Event {
	c := newClient(path)
	out := make(chan agent.Event, eventBuffer)
	go func() {
		defer close(out)
		defer func() { _ = c.Close() }()
		c.follow(ctx, nil, out)
	}()
	return out
}

const (
	// reconnectMin and reconnectMax bound the wait between two attempts
	// to reach the event stream again.
	reconnectMin = 100 * time.Millisecond
	reconnectMax = time.Second
)

// stream is one open SSE response.
type stream struct {
	br     *bufio.Reader
	body   io.Closer
	cancel context.CancelFunc
	pos    position
}

func (s *stream) close() {
	s.cancel()
	_ = s.body.Close() // the stream is abandoned: nothing to report
}

// position is where a consumer is in the watcher's sequence.
type position struct {
	epoch string
	seq   uint64
	known bool
}

func (p position) id() string {
	if !p.known {
		return ""
	}
	return formatID(p.epoch, p.seq)
}

// openStream subscribes, resuming after lastID when it is set, and reads
// the hello (the ": ok" comment and, for a new subscriber, the position).
func (c *Client) openStream(ctx context.Context, lastID string) (*stream, error) {
	sctx, cancel := context.WithCancel(ctx)
	// The subscription must answer quickly; the stream itself has no
	// deadline.
	within := dialTimeout
	if c.subscribeTimeout > 0 {
		within = c.subscribeTimeout
	}
	timer := time.AfterFunc(within, cancel)
	req, err := c.request(sctx, http.MethodGet, "/v1/events", nil, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := c.send(req)
	if err != nil {
		cancel()
		return nil, err
	}
	st := &stream{br: bufio.NewReader(resp.Body), body: resp.Body, cancel: cancel}
	// The server flushes a comment after subscribing: wait for it.
	if _, err := st.br.ReadString('\n'); err != nil {
		st.close()
		return nil, fmt.Errorf("watcher %s: events: %w", c.path, err)
	}
	if !timer.Stop() {
		st.close()
		return nil, fmt.Errorf("watcher %s: events: no answer within %s", c.path, within)
	}
	return st, nil
}

// follow reads st (nil: not connected yet) and reconnects until ctx ends.
func (c *Client) follow(ctx context.Context, st *stream, out chan<- agent.Event) {
	emit := func(e agent.Event) bool {
		select {
		case out <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var pos position
	wait := time.Duration(0)
	for {
		if st != nil {
			st.pos = pos
			readStream(ctx, st.br, &st.pos, out)
			pos = st.pos
			st.close()
			st = nil
			if ctx.Err() != nil || !emit(agent.Event{Kind: EventWatcherGone}) {
				return
			}
			wait = reconnectMin
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		next, err := c.openStream(ctx, pos.id())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait = min(max(2*wait, reconnectMin), reconnectMax)
			continue
		}
		st = next
		if !emit(agent.Event{Kind: EventWatcherBack}) {
			st.close()
			return
		}
	}
}

// readEvents parses an SSE stream until it ends or ctx does, ignoring ids.
func readEvents(ctx context.Context, br *bufio.Reader, out chan<- agent.Event) {
	readStream(ctx, br, &position{}, out)
}

// readStream parses an SSE stream until it ends or ctx does. Data fields
// carry the events, and id fields move pos (also without data, as the
// server's hello does); comments (keep-alives) and event names are
// skipped. An id that skips sequence numbers, or changes the epoch without
// a reset, is delivered as an EventReset first.
func readStream(ctx context.Context, br *bufio.Reader, pos *position, out chan<- agent.Event) {
	var data strings.Builder
	id := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			gap := false
			if id != "" {
				if epoch, seq, err := parseID(id); err == nil {
					gap = pos.known && (epoch != pos.epoch || seq > pos.seq+1)
					*pos = position{epoch: epoch, seq: seq, known: true}
				}
				id = ""
			}
			if data.Len() == 0 {
				continue
			}
			var e agent.Event
			ok := json.Unmarshal([]byte(data.String()), &e) == nil
			data.Reset()
			if !ok {
				continue // not ours to fail on: skip what we cannot read
			}
			if gap && e.Kind != EventReset {
				select {
				case out <- agent.Event{Kind: EventReset}:
				case <-ctx.Done():
					return
				}
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimPrefix(strings.TrimPrefix(line, "id:"), " ")
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// Store implements Service: a RemoteStore whose calls are RPCs, each
// bounded by StoreTimeout.
func (c *Client) Store() RemoteStore { return &remoteStore{c: c} }

// StoreContext is Store with every call also bound to ctx.
func (c *Client) StoreContext(ctx context.Context) RemoteStore {
	return &remoteStore{c: c, ctx: ctx}
}

// remoteStore implements RemoteStore by RPC.
type remoteStore struct {
	c   *Client
	ctx context.Context // nil means Background
}

func (s *remoteStore) context() (context.Context, context.CancelFunc) {
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	d := s.c.StoreTimeout
	if d <= 0 {
		d = DefaultStoreTimeout
	}
	return context.WithTimeout(ctx, d)
}

func (s *remoteStore) call(path string, in, out any) error {
	ctx, cancel := s.context()
	defer cancel()
	return s.c.call(ctx, http.MethodPost, path, nil, in, out)
}

func (s *remoteStore) GetMessage(k store.MessageKey) (*store.MessageRecord, error) {
	var rec store.MessageRecord
	if err := s.call("/v1/store/message/get", k, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// PutMessage writes rec and, like the store, updates its timestamps.
func (s *remoteStore) PutMessage(rec *store.MessageRecord) error {
	if rec == nil {
		return errors.New("put message: nil record")
	}
	var got store.MessageRecord
	if err := s.call("/v1/store/message/put", rec, &got); err != nil {
		return err
	}
	rec.CreatedAt, rec.UpdatedAt = got.CreatedAt, got.UpdatedAt
	return nil
}

func (s *remoteStore) PutTrace(t *store.Trace) error {
	if t == nil {
		return errors.New("put trace: nil trace")
	}
	return s.call("/v1/store/trace/put", t, nil)
}

func (s *remoteStore) ThreadMessages(threadID string, limit int) ([]*store.MessageRecord, error) {
	var recs []*store.MessageRecord
	if err := s.call("/v1/store/thread", threadReq{ThreadID: threadID, Limit: limit}, &recs); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, nil // as the store: no messages is a nil slice
	}
	return recs, nil
}

func (s *remoteStore) RelabelThread(from, to string) error {
	return s.call("/v1/store/relabel", relabelReq{From: from, To: to}, nil)
}

func (s *remoteStore) GetContact(account, email string) (*store.Contact, error) {
	var c store.Contact
	if err := s.call("/v1/store/contact", contactReq{Account: account, Email: email}, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func (s *remoteStore) AutoSendCounts(account, contact, day string) (int, int, error) {
	var r autoSendResp
	if err := s.call("/v1/store/autosend-counts", autoSendReq{Account: account, Contact: contact, Day: day}, &r); err != nil {
		return 0, 0, err
	}
	return r.PerContact, r.Global, nil
}

// ListMessages streams the records and calls fn for each as it arrives.
// An error from fn stops the stream (the watcher stops its walk) and is
// returned as is. StoreTimeout bounds the whole walk.
func (s *remoteStore) ListMessages(f store.MessageFilter, fn func(*store.MessageRecord) error) error {
	ctx, cancel := s.context()
	defer cancel()
	in := messageFilter{Account: f.Account, Mailbox: f.Mailbox, State: f.State, ThreadID: f.ThreadID,
		Limit: f.Limit, Since: f.Since}
	return readNDJSON[*store.MessageRecord, streamLine](ctx, s.c, "/v1/store/messages", in, fn, func(err error) error {
		return fmt.Errorf("watcher %s: list messages: stream cut short: %w", s.c.path, err)
	})
}
