package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

const (
	// keepAliveEvery is how often an idle event stream gets a comment, so
	// that a dead peer is noticed and proxies keep the stream open.
	keepAliveEvery = 15 * time.Second
	// writeTimeout bounds each write of an event stream: a subscriber that
	// stops reading is cut off instead of holding a goroutine forever.
	writeTimeout = 10 * time.Second
	// shutdownTimeout is how long Serve waits for requests in flight.
	shutdownTimeout = 5 * time.Second
	// probeTimeout bounds the check for another watcher on the socket.
	probeTimeout = 2 * time.Second
	// maxBody caps request bodies.
	maxBody = 32 << 20
)

// Serve serves svc on a unix socket at path until ctx ends, then shuts
// down gracefully (requests in flight get a few seconds; event streams end
// at once) and removes the socket. It returns nil after a shutdown caused
// by ctx, and an error when it cannot start or the listener fails.
//
// Before listening it checks the socket's directory: one that others may
// write to is refused, and group or world access bits are removed. An
// existing socket file is replaced only when nothing answers on it; when
// another watcher answers, the error wraps ErrWatcherRunning. The socket
// is made mode 0600.
//
// Side-effecting operations (approve, …) run with a context that ends
// when ctx does, not when the client goes away, so that a TUI quitting
// mid-send does not cut an SMTP transaction short. log may be nil.
func Serve(ctx context.Context, path string, svc Service, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := listen(ctx, path, log)
	if err != nil {
		return err
	}
	return serveOn(ctx, ln, path, svc, log)
}

// serveOn is Serve after listen: tests call listen first so that the
// socket is ready before they dial.
func serveOn(ctx context.Context, ln net.Listener, path string, svc Service, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{svc: svc, ctx: ctx, log: log}
	srv := &http.Server{
		Handler:           h.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("api: serving", "socket", path)

	var serveErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		serveErr = fmt.Errorf("serve %s: %w", path, err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("api: graceful shutdown timed out; closing connections", "err", err)
		_ = srv.Close()
	}
	if serveErr == nil {
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serve %s: %w", path, err)
		}
	}
	h.wg.Wait()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("api: remove socket", "socket", path, "err", err)
	}
	log.Info("api: stopped", "socket", path)
	return serveErr
}

// listen checks the directory and any existing socket, then listens.
func listen(ctx context.Context, path string, log *slog.Logger) (net.Listener, error) {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("serve %s: %w", path, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("serve %s: %s is not a directory", path, dir)
	}
	if err := checkOwner(fi); err != nil {
		return nil, fmt.Errorf("serve %s: state directory %s: %w", path, dir, err)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return nil, fmt.Errorf("serve %s: the state directory %s is writable by others (mode %04o); run: chmod 700 %s", path, dir, perm, dir)
	} else if perm&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("serve %s: tighten the state directory: %w", path, err)
		}
		log.Info("api: state directory tightened to 0700", "dir", dir, "was", fmt.Sprintf("%04o", perm))
	}

	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("serve %s: the file exists and is not a socket; remove it if it is not needed", path)
		}
		if err := probe(ctx, path); err != nil {
			return nil, err
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("serve %s: remove stale socket: %w", path, err)
		}
		log.Info("api: removed a stale socket", "socket", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("serve %s: %w", path, err)
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("serve %s: %w (it started at the same moment)", path, ErrWatcherRunning)
		}
		return nil, fmt.Errorf("serve %s: %w", path, err)
	}
	// The directory is 0700, so nobody else can reach the socket in the
	// moment before this chmod.
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("serve %s: chmod socket: %w", path, err)
	}
	return ln, nil
}

// probe returns nil when nothing listens on the socket file at path (it
// is stale), an error wrapping ErrWatcherRunning when something answers,
// and another error when it cannot tell.
func probe(ctx context.Context, path string) error {
	d := net.Dialer{Timeout: probeTimeout}
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if noListener(err) {
			return nil
		}
		return fmt.Errorf("serve %s: probe the existing socket: %w", path, err)
	}
	// Something answers: another watcher, or at least a live process
	// whose socket must not be taken over.
	_ = conn.Close()
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c := newClient(path)
	defer func() { _ = c.Close() }()
	if st, err := c.Status(pctx); err == nil && st.PID != 0 {
		return fmt.Errorf("serve %s: %w (pid %d); stop it first", path, ErrWatcherRunning, st.PID)
	}
	return fmt.Errorf("serve %s: %w; stop it first", path, ErrWatcherRunning)
}

// noListener reports whether a dial error means nothing listens.
func noListener(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist)
}

// handler serves one Service.
type handler struct {
	svc Service
	ctx context.Context // Serve's: ends event streams and actions
	log *slog.Logger
	wg  sync.WaitGroup // requests in flight, so that Serve returns after them
}

func (h *handler) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", h.status)
	mux.HandleFunc("GET /v1/queue", h.queue)
	mux.HandleFunc("GET /v1/queue/{id}", h.queueItem)
	mux.HandleFunc("POST /v1/queue-page", h.queuePage)     // page.go
	mux.HandleFunc("GET /v1/usage", h.usageRange)          // page.go
	mux.HandleFunc("POST /v1/message-page", h.messagePage) // message_page.go
	mux.HandleFunc("POST /v1/queue/{id}/approve", h.approve)
	mux.HandleFunc("POST /v1/queue/{id}/reject", h.reject)
	mux.HandleFunc("POST /v1/queue/{id}/edit", h.edit)
	mux.HandleFunc("POST /v1/queue/{id}/snooze", h.snooze)
	mux.HandleFunc("POST /v1/queue/{id}/unsnooze", h.unsnooze)
	mux.HandleFunc("POST /v1/queue/{id}/regenerate", h.regenerate)
	mux.HandleFunc("POST /v1/queue/{id}/rsvp", h.rsvp) // invite.go
	mux.HandleFunc("POST /v1/outbox/{id}/cancel", h.cancel)
	mux.HandleFunc("GET /v1/outbox", h.outbox)
	mux.HandleFunc("POST /v1/retry", h.retry)
	mux.HandleFunc("GET /v1/needs-review", h.needsReview)
	mux.HandleFunc("GET /v1/contacts", h.contacts)
	mux.HandleFunc("GET /v1/contact-names", h.contactNames)
	mux.HandleFunc("GET /v1/contact", h.contact)
	mux.HandleFunc("POST /v1/recipients", h.recipients)
	mux.HandleFunc("DELETE /v1/contact", h.forgetContact)
	mux.HandleFunc("POST /v1/contact/note", h.noteContact)
	mux.HandleFunc("GET /v1/explain", h.explain)
	mux.HandleFunc("POST /v1/followups", h.followupsList)
	mux.HandleFunc("POST /v1/followups/{id}", h.followupAction)
	mux.HandleFunc("POST /v1/replies", h.replies)
	mux.HandleFunc("POST /v1/schedule", h.scheduleList) // schedule.go
	mux.HandleFunc("POST /v1/unsubscribes", h.recordUnsubscribe)
	mux.HandleFunc("POST /v1/propose", h.propose)
	mux.HandleFunc("POST /v1/own-mail", h.sendOwnMail)
	mux.HandleFunc("GET /v1/events", h.events)
	h.memoryRoutes(mux) // memory.go

	mux.HandleFunc("POST /v1/store/message/get", h.storeGetMessage)
	mux.HandleFunc("POST /v1/store/message/put", h.storePutMessage)
	mux.HandleFunc("POST /v1/store/trace/put", h.storePutTrace)
	mux.HandleFunc("POST /v1/store/thread", h.storeThread)
	mux.HandleFunc("POST /v1/store/relabel", h.storeRelabel)
	mux.HandleFunc("POST /v1/store/contact", h.storeContact)
	mux.HandleFunc("POST /v1/store/autosend-counts", h.storeAutoSend)
	mux.HandleFunc("POST /v1/store/messages", h.storeMessages)
	mux.HandleFunc("POST /v1/store/thread-inputs", h.storeThreadInputs)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.wg.Add(1)
		defer h.wg.Done()
		mux.ServeHTTP(w, r)
	})
}

// actionContext is for side effects: it keeps the request's values but
// ends with the server, not with the client.
func (h *handler) actionContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(h.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func (h *handler) reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		h.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if v == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err := json.NewEncoder(w).Encode(v); err != nil {
		h.log.Debug("api: write response", "err", err)
	}
}

func (h *handler) fail(w http.ResponseWriter, err error) {
	we, status := wireError(err)
	if we.Code == CodeInternal {
		h.log.Warn("api: request failed", "err", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: we})
}

// decode reads a JSON body into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: decode %s body: %v", ErrBadRequest, r.URL.Path, err)
	}
	return nil
}

func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	s, err := h.svc.Status(r.Context())
	h.reply(w, s, err)
}

func (h *handler) queue(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	items, err := h.svc.Queue(r.Context(), QueueFilter{Status: q.Get("status"), Kind: q.Get("kind"), Account: q.Get("account")})
	h.reply(w, items, err)
}

func (h *handler) queueItem(w http.ResponseWriter, r *http.Request) {
	d, err := h.svc.QueueItem(r.Context(), r.PathValue("id"))
	h.reply(w, d, err)
}

func (h *handler) approve(w http.ResponseWriter, r *http.Request) {
	var req approveReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	item, err := h.svc.Approve(ctx, r.PathValue("id"), req.Final)
	h.reply(w, item, err)
}

func (h *handler) reject(w http.ResponseWriter, r *http.Request) {
	var req rejectReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	h.reply(w, nil, h.svc.Reject(ctx, r.PathValue("id"), req.Reason))
}

func (h *handler) edit(w http.ResponseWriter, r *http.Request) {
	var req editReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	item, err := h.svc.Edit(ctx, r.PathValue("id"), req.Text)
	h.reply(w, item, err)
}

func (h *handler) snooze(w http.ResponseWriter, r *http.Request) {
	var req snoozeReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	h.reply(w, nil, h.svc.Snooze(ctx, r.PathValue("id"), req.Until))
}

func (h *handler) unsnooze(w http.ResponseWriter, r *http.Request) {
	var req struct{}
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	h.reply(w, nil, h.svc.Unsnooze(ctx, r.PathValue("id")))
}

func (h *handler) regenerate(w http.ResponseWriter, r *http.Request) {
	var req regenerateReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	item, err := h.svc.Regenerate(ctx, r.PathValue("id"), req.Instruction)
	h.reply(w, item, err)
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := h.actionContext(r)
	defer cancel()
	h.reply(w, nil, h.svc.Cancel(ctx, r.PathValue("id")))
}

func (h *handler) retry(w http.ResponseWriter, r *http.Request) {
	var key store.MessageKey
	if err := decode(w, r, &key); err != nil {
		h.fail(w, err)
		return
	}
	ctx, cancel := h.actionContext(r)
	defer cancel()
	h.reply(w, nil, h.svc.Retry(ctx, key))
}

func (h *handler) outbox(w http.ResponseWriter, r *http.Request) {
	recs, err := h.svc.Outbox(r.Context(), r.URL.Query().Get("status"))
	h.reply(w, recs, err)
}

func (h *handler) needsReview(w http.ResponseWriter, r *http.Request) {
	recs, err := h.svc.NeedsReview(r.Context())
	h.reply(w, recs, err)
}

func (h *handler) contacts(w http.ResponseWriter, r *http.Request) {
	cs, err := h.svc.Contacts(r.Context(), r.URL.Query().Get("account"))
	h.reply(w, cs, err)
}

func (h *handler) contactNames(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil {
		h.fail(w, fmt.Errorf("%w: limit: %v", ErrBadRequest, err))
		return
	}
	ns, err := h.svc.ContactNames(r.Context(), q.Get("account"), q.Get("prefix"), limit)
	h.reply(w, ns, err)
}

func (h *handler) contact(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, err := h.svc.Contact(r.Context(), q.Get("account"), q.Get("email"))
	h.reply(w, c, err)
}

func (h *handler) recipients(w http.ResponseWriter, r *http.Request) {
	var req recipientsReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	m, err := h.svc.RecipientStatus(r.Context(), req.Account, req.Addrs)
	h.reply(w, m, err)
}

func (h *handler) forgetContact(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	h.reply(w, nil, h.svc.ForgetContact(r.Context(), q.Get("account"), q.Get("email")))
}

func (h *handler) noteContact(w http.ResponseWriter, r *http.Request) {
	var req noteReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	q := r.URL.Query()
	h.reply(w, nil, h.svc.NoteContact(r.Context(), q.Get("account"), q.Get("email"), req.Note))
}

func (h *handler) explain(w http.ResponseWriter, r *http.Request) {
	e, err := h.svc.Explain(r.Context(), r.URL.Query().Get("ref"))
	h.reply(w, e, err)
}

// eventLog is implemented by services whose events carry sequence
// numbers (Local with a Broker): the stream then sends SSE ids and honours
// Last-Event-ID.
type eventLog interface {
	EventsFrom(ctx context.Context, lastID string) (<-chan Sequenced, string, error)
}

// events streams agent.Event values as Server-Sent Events until the
// client goes away, the source closes, or Serve's ctx ends. A ": ok"
// comment is flushed once the subscription exists, so a client that has
// the response headers misses nothing published after. With an eventLog
// each event has an SSE id; a new client gets the current position as an
// id without data, and a client that sends Last-Event-ID gets the events
// it missed, or a reset when they are gone (see Broker.SubscribeFrom).
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()
	lastID := r.Header.Get("Last-Event-ID")
	var (
		ch  <-chan Sequenced
		pos string
		err error
	)
	if el, ok := h.svc.(eventLog); ok {
		ch, pos, err = el.EventsFrom(ctx, lastID)
	} else {
		ch, err = plainEvents(ctx, h.svc)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	write := func(s string) error {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
		return rc.Flush()
	}
	hello := ": ok\n"
	if pos != "" && lastID == "" {
		hello += "id: " + pos + "\n"
	}
	if err := write(hello + "\n"); err != nil {
		return
	}
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-ctx.Done():
			return
		case s, ok := <-ch:
			if !ok {
				return
			}
			msg := formatEvent(s.Event)
			if s.Epoch != "" {
				msg = "id: " + s.ID() + "\n" + msg
			}
			err = write(msg)
		case <-tick.C:
			err = write(": keep-alive\n\n")
		}
		if err != nil {
			h.log.Debug("api: event stream ended", "err", err)
			return
		}
	}
}

// plainEvents adapts Service.Events to the stream: events without ids.
func plainEvents(ctx context.Context, svc Service) (<-chan Sequenced, error) {
	in, err := svc.Events(ctx)
	if err != nil || in == nil {
		return nil, err
	}
	out := make(chan Sequenced)
	go func() {
		defer close(out)
		for e := range in {
			select {
			case out <- Sequenced{Event: e}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// formatEvent renders one SSE message. The event name is the kind when it
// is a plain token; the JSON data never contains a raw newline.
func formatEvent(e agent.Event) string {
	data, _ := json.Marshal(e) // three strings: cannot fail
	var b strings.Builder
	if e.Kind != "" && !strings.ContainsAny(e.Kind, "\r\n:") {
		b.WriteString("event: " + e.Kind + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.String()
}

// The store routes serve RemoteStore for triage.

func (h *handler) remote(w http.ResponseWriter) (RemoteStore, bool) {
	st := h.svc.Store()
	if st == nil {
		h.fail(w, fmt.Errorf("this watcher serves no store: %w", ErrNoActions))
		return nil, false
	}
	return st, true
}

func (h *handler) storeGetMessage(w http.ResponseWriter, r *http.Request) {
	var key store.MessageKey
	if err := decode(w, r, &key); err != nil {
		h.fail(w, err)
		return
	}
	if st, ok := h.remote(w); ok {
		rec, err := st.GetMessage(key)
		h.reply(w, rec, err)
	}
}

func (h *handler) storePutMessage(w http.ResponseWriter, r *http.Request) {
	var rec store.MessageRecord
	if err := decode(w, r, &rec); err != nil {
		h.fail(w, err)
		return
	}
	if st, ok := h.remote(w); ok {
		err := st.PutMessage(&rec)
		h.reply(w, &rec, err) // the record as written: timestamps set
	}
}

func (h *handler) storePutTrace(w http.ResponseWriter, r *http.Request) {
	var t store.Trace
	if err := decode(w, r, &t); err != nil {
		h.fail(w, err)
		return
	}
	if st, ok := h.remote(w); ok {
		h.reply(w, nil, st.PutTrace(&t))
	}
}

func (h *handler) storeThread(w http.ResponseWriter, r *http.Request) {
	var req threadReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	if st, ok := h.remote(w); ok {
		recs, err := st.ThreadMessages(req.ThreadID, req.Limit)
		if recs == nil {
			recs = []*store.MessageRecord{}
		}
		h.reply(w, recs, err)
	}
}

func (h *handler) storeRelabel(w http.ResponseWriter, r *http.Request) {
	var req relabelReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	if st, ok := h.remote(w); ok {
		h.reply(w, nil, st.RelabelThread(req.From, req.To))
	}
}

func (h *handler) storeContact(w http.ResponseWriter, r *http.Request) {
	var req contactReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	if st, ok := h.remote(w); ok {
		c, err := st.GetContact(req.Account, req.Email)
		h.reply(w, c, err)
	}
}

func (h *handler) storeAutoSend(w http.ResponseWriter, r *http.Request) {
	var req autoSendReq
	if err := decode(w, r, &req); err != nil {
		h.fail(w, err)
		return
	}
	if st, ok := h.remote(w); ok {
		pc, g, err := st.AutoSendCounts(req.Account, req.Contact, req.Day)
		h.reply(w, autoSendResp{PerContact: pc, Global: g}, err)
	}
}

// storeMessages streams ListMessages as JSON lines: one {"record":…} per
// message, then {"done":true} or {"error":…}. The walk stops when the
// client goes away.
func (h *handler) storeMessages(w http.ResponseWriter, r *http.Request) {
	var f messageFilter
	if err := decode(w, r, &f); err != nil {
		h.fail(w, err)
		return
	}
	st, ok := h.remote(w)
	if !ok {
		return
	}
	streamNDJSON(w, r, func(emit func(streamLine) error) error {
		return st.ListMessages(store.MessageFilter{Account: f.Account, Mailbox: f.Mailbox, State: f.State,
			ThreadID: f.ThreadID, Limit: f.Limit, Since: f.Since}, func(rec *store.MessageRecord) error {
			return emit(streamLine{Record: rec})
		})
	})
}
