package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// ErrEmptyResponse matches (errors.Is) a *ResponseError for an answer that
// carried no usable text: no candidates, or a candidate with no text parts.
var ErrEmptyResponse = errors.New("empty model response")

// ErrBlocked matches (errors.Is) a *ResponseError for an answer the provider
// withheld: a blocked prompt, or a candidate that finished for safety,
// recitation, blocklist or similar reasons.
var ErrBlocked = errors.New("model response blocked")

// APIError is an HTTP-level failure reported by the model provider. Its
// text never contains the API key.
type APIError struct {
	StatusCode int    // HTTP status code, e.g. 429
	Status     string // provider status, e.g. "RESOURCE_EXHAUSTED"
	Message    string // provider message, with any secret redacted
	// RetryAfter is the delay the server asked for, from the Retry-After
	// header or google.rpc.RetryInfo; zero when none was given.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("model api error %d", e.StatusCode)
	if e.Status != "" {
		s += " " + e.Status
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// Temporary reports whether the same request may succeed later: rate
// limiting (429), request timeout (408) and the transient server errors
// 500, 502, 503 and 504. Everything else (400, 401, 403, 404, …) is
// permanent.
func (e *APIError) Temporary() bool {
	switch e.StatusCode {
	case 408, 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// ResponseError is a successful HTTP exchange whose answer cannot be used:
// it is empty or was blocked. It matches ErrEmptyResponse or ErrBlocked. It
// is permanent: repeating the same prompt gives the same verdict.
type ResponseError struct {
	Blocked bool   // true when the provider withheld the answer
	Reason  string // finish or block reason, e.g. "SAFETY"; may be empty
	Message string // provider's explanation, when given
	Usage   Usage  // tokens billed for the call
}

func (e *ResponseError) Error() string {
	s := "empty model response"
	if e.Blocked {
		s = "model response blocked"
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is makes errors.Is match ErrBlocked or ErrEmptyResponse.
func (e *ResponseError) Is(target error) bool {
	if e.Blocked {
		return target == ErrBlocked
	}
	return target == ErrEmptyResponse
}

// IsTemporary reports whether err is worth retrying: an error that says so
// through a Temporary() bool method (such as *APIError), a deadline that
// expired (a per-call timeout), or a connection that was reset or cut
// short. A cancelled context is never temporary.
func IsTemporary(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	// Other errors may say so themselves; a "false" is not final because
	// wrappers such as *url.Error answer for errors they do not understand.
	var t interface{ Temporary() bool }
	if errors.As(err, &t) && t.Temporary() {
		return true
	}
	if errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// retryAfter returns the server-requested delay carried by err, or 0.
func retryAfter(err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.RetryAfter
	}
	return 0
}

// InvalidOutputError reports a model answer that still failed decoding or
// validation after the one repair attempt.
type InvalidOutputError struct {
	Err    error  // the validation or decoding error of the last answer
	Output string // the last raw answer, truncated
}

func (e *InvalidOutputError) Error() string {
	return fmt.Sprintf("invalid model output after repair: %v", e.Err)
}

// Unwrap returns the validation error.
func (e *InvalidOutputError) Unwrap() error { return e.Err }
