// Package httpcall is what the HTTP model clients (internal/llm/gemini and
// internal/llm/openai) share, so that each rule has one home: the pooled
// transport a client uses when the configuration gives none, the
// redaction that keeps an API key out of every error, and the reading of
// a Retry-After header.
//
// Contract: Transport returns one process-wide transport, safe for
// concurrent use, whose idle connections CloseIdle closes; Redact returns err itself unless its text holds the
// secret, else an error that keeps err's temporariness
// (llm.IsTemporary) and its context sentinel but none of its chain;
// ParseRetryAfter reads RFC 9110's two forms and gives 0 for anything
// else. Nothing here imports a provider's SDK.
package httpcall

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailagent/mailagent/internal/llm"
)

// maxIdlePerHost is how many idle connections to one model server are
// kept for reuse. http.DefaultTransport keeps 2, so with llm.concurrency
// 4 every call beyond the second opened a connection (a TLS handshake to
// a real API) and closed it after one answer: 326 connections for 2,563
// calls in a triage of the corpus (BENCHMARKS.md §2).
const maxIdlePerHost = 64

// Transport is the transport of every model client built without one:
// http.DefaultTransport's settings (proxy from the environment,
// timeouts, HTTP/2), keeping enough idle connections for every worker,
// shared by the classify and draft models so they reuse each other's. A
// request (prompt, system text and schema: 4 to 8 KB) goes out in one
// write: the default 4 KB buffer took two or three.
func Transport() http.RoundTripper {
	shared.once.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = maxIdlePerHost
		t.WriteBufferSize = 32 << 10
		shared.t.Store(t)
	})
	return shared.t.Load()
}

// shared is Transport's, made on first use: cloning http.DefaultTransport
// sets up HTTP/2, about 0.4 ms that a command making no model call (such
// as --help) does not pay, CloseIdle included.
var shared struct {
	once sync.Once
	t    atomic.Pointer[http.Transport]
}

// CloseIdle closes Transport's idle connections, and so ends their
// goroutines: a process that has made its last model call (a command
// about to return, a test binary that ran commands in process) calls it.
// A later call opens a new connection.
func CloseIdle() {
	if t := shared.t.Load(); t != nil {
		t.CloseIdleConnections()
	}
}

// Redact hides secret in err's text. Errors that do not mention it pass
// through unchanged.
func Redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	re := &redactedError{msg: strings.ReplaceAll(err.Error(), secret, "[REDACTED]"), temporary: llm.IsTemporary(err)}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		re.ctxErr = context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		re.ctxErr = context.Canceled
	}
	return re
}

// redactedError replaces an error whose text contains a secret. It keeps
// the error's temporariness and context sentinels, but drops the chain so
// the secret cannot leak through an inner error's text.
type redactedError struct {
	msg       string
	temporary bool
	ctxErr    error // context.DeadlineExceeded or context.Canceled, or nil
}

func (e *redactedError) Error() string   { return e.msg }
func (e *redactedError) Temporary() bool { return e.temporary }
func (e *redactedError) Unwrap() error   { return e.ctxErr }

// ParseRetryAfter reads an RFC 9110 Retry-After value: delay-seconds or
// an HTTP-date. Invalid or past values, and delays over a day, give 0.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > int64(24*time.Hour/time.Second) {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
