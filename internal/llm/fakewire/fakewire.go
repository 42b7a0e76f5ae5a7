// Package fakewire is what the fake model servers for tests (geminitest,
// openaitest) share, whatever the wire protocol: an httptest server
// closed by t.Cleanup, the recorded requests, a reply's delay that ends
// when the client goes away or the server shuts down, a hang-up without
// a response, and writing a JSON reply. Each fake keeps its own request
// and reply types and its protocol's paths and bodies.
//
// Contract: Start serves until the test ends; Record and Requests are
// safe for concurrent use; Wait never outlives the server.
package fakewire

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Server is a running fake recording requests of type R.
type Server[R any] struct {
	srv  *httptest.Server
	done chan struct{}

	mu   sync.Mutex
	reqs []R
}

// Start serves h until the test ends.
func Start[R any](t testing.TB, h http.HandlerFunc) *Server[R] {
	t.Helper()
	s := &Server[R]{done: make(chan struct{})}
	s.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// URL is the server's root URL.
func (s *Server[R]) URL() string { return s.srv.URL }

// Client returns an HTTP client for the server.
func (s *Server[R]) Client() *http.Client { return s.srv.Client() }

// Record keeps req, in arrival order.
func (s *Server[R]) Record(req R) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
}

// Requests returns the recorded requests in arrival order.
func (s *Server[R]) Requests() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]R(nil), s.reqs...)
}

// Wait waits d before a reply. It reports false, and the reply is not to
// be written, when the client went away or the server is shutting down
// first: a slow reply never blocks test cleanup.
func (s *Server[R]) Wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

// Hangup closes the connection without any response, as a crashed proxy
// would: the client sees a connection error.
func Hangup(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // net/http aborts the response
}

// WriteJSON writes header's fields, status (0 means 200) and body as
// application/json.
func WriteJSON(w http.ResponseWriter, header http.Header, status int, body string) {
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
