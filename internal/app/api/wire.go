package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/store"
)

// Error codes on the wire. Each maps to a sentinel so that errors.Is works
// on the client side as it does in the watcher.
const (
	CodeNotFound      = "not_found"
	CodeConflict      = "conflict"
	CodeNotActionable = "not_actionable"
	CodeNoActions     = "no_actions"
	CodeLocked        = "locked"
	CodeCanceled      = "canceled"
	CodeDeadline      = "deadline_exceeded"
	CodeBadRequest    = "bad_request"
	CodeAmbiguousSend = "ambiguous_send"
	CodeModelOutput   = "model_output"
	CodeCorrupt       = "corrupt"
	CodeNotSent       = "not_sent"
	CodeInternal      = "internal"
	// CodeSetupNeeded: the account needs setting up (a missing Sent or
	// Drafts folder: imapsync.ErrSetupNeeded); Error.Fix names the fix.
	CodeSetupNeeded = "setup_needed"
)

// ErrBadRequest: the server cannot accept a request: it could not decode
// it (a client and server of different versions), or an argument is out
// of range (an empty note, a snooze time in the past).
var ErrBadRequest = errors.New("bad request")

// codes is checked in order: the first sentinel an error matches names its
// code. ErrNotActionable comes before ErrConflict and ErrNotFound because
// the pipeline wraps the store's errors in it.
var codes = []struct {
	code   string
	err    error
	status int
}{
	{CodeNoActions, ErrNoActions, http.StatusNotImplemented},
	{CodeNotActionable, agent.ErrNotActionable, http.StatusConflict},
	{CodeConflict, store.ErrConflict, http.StatusConflict},
	{CodeNotFound, store.ErrNotFound, http.StatusNotFound},
	{CodeLocked, store.ErrLocked, http.StatusServiceUnavailable},
	{CodeCanceled, context.Canceled, http.StatusServiceUnavailable},
	{CodeDeadline, context.DeadlineExceeded, http.StatusGatewayTimeout},
	{CodeBadRequest, ErrBadRequest, http.StatusBadRequest},
	{CodeAmbiguousSend, agent.ErrAmbiguousSend, http.StatusBadGateway},
	{CodeModelOutput, agent.ErrModelOutput, http.StatusBadGateway},
	{CodeCorrupt, store.ErrCorrupt, http.StatusInternalServerError},
	{CodeNotSent, agent.ErrNotSent, http.StatusConflict},
}

// Error is an error that came back from the watcher. It matches the
// sentinel of its Code, and of every code in Also, with errors.Is, as the
// original error did; and reports Temporary like the error it stands for
// (a temporary SMTP failure stays temporary).
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Temp    bool   `json:"temporary,omitempty"`
	// Also lists the codes of the other sentinels the original error
	// matched (an ambiguous send is also not actionable, …).
	Also []string `json:"also,omitempty"`
	// Fix is the original error's SetupFix() (CodeSetupNeeded).
	Fix string `json:"fix,omitempty"`
}

// SetupFix is the fix of an account that needs setting up ("" for any
// other error), as the original error's SetupFix method said.
func (e *Error) SetupFix() string { return e.Fix }

func (e *Error) Error() string { return e.Message }

// Is matches the sentinels of e.Code and e.Also.
func (e *Error) Is(target error) bool {
	for _, c := range codes {
		if target == c.err && (c.code == e.Code || slices.Contains(e.Also, c.code)) {
			return true
		}
	}
	return false
}

// Temporary reports whether the original error was temporary.
func (e *Error) Temporary() bool { return e.Temp }

// wireError turns err into what the server sends, and its HTTP status.
func wireError(err error) (*Error, int) {
	var remote *Error
	if errors.As(err, &remote) {
		// An error relayed from another hop keeps its code.
		return &Error{Code: remote.Code, Message: err.Error(), Temp: remote.Temp, Also: remote.Also, Fix: remote.Fix}, statusOf(remote.Code)
	}
	we := &Error{Code: CodeInternal, Message: err.Error(), Temp: isTemporary(err)}
	// A setup problem (imapsync.ErrSetupNeeded, which this tier may not
	// import) is known by its SetupFix method.
	if sf := (interface{ SetupFix() string })(nil); errors.As(err, &sf) && sf.SetupFix() != "" {
		we.Code, we.Fix = CodeSetupNeeded, sf.SetupFix()
	}
	for _, c := range codes {
		switch {
		case !errors.Is(err, c.err):
		case we.Code == CodeInternal:
			we.Code = c.code
		default:
			we.Also = append(we.Also, c.code)
		}
	}
	return we, statusOf(we.Code)
}

func statusOf(code string) int {
	for _, c := range codes {
		if c.code == code {
			return c.status
		}
	}
	return http.StatusInternalServerError
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// errorBody is the JSON of every failed response, and the last line of a
// failed JSON-lines stream.
type errorBody struct {
	Error *Error `json:"error"`
}

// Request and response bodies.
type (
	approveReq struct {
		Final string `json:"final"`
	}
	rejectReq struct {
		Reason string `json:"reason"`
	}
	editReq struct {
		Text string `json:"text"`
	}
	snoozeReq struct {
		Until time.Time `json:"until"`
	}
	noteReq struct {
		Note string `json:"note"`
	}
	recipientsReq struct {
		Account string   `json:"account"`
		Addrs   []string `json:"addrs"`
	}
	regenerateReq struct {
		Instruction string `json:"instruction"`
	}
	threadReq struct {
		ThreadID string `json:"thread_id"`
		Limit    int    `json:"limit"`
	}
	relabelReq struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	contactReq struct {
		Account string `json:"account"`
		Email   string `json:"email"`
	}
	autoSendReq struct {
		Account string `json:"account"`
		Contact string `json:"contact"`
		Day     string `json:"day"`
	}
	autoSendResp struct {
		PerContact int `json:"per_contact"`
		Global     int `json:"global"`
	}
	// messageFilter is store.MessageFilter with JSON names.
	messageFilter struct {
		Account  string      `json:"account,omitempty"`
		Mailbox  string      `json:"mailbox,omitempty"`
		State    store.State `json:"state,omitempty"`
		ThreadID string      `json:"thread_id,omitempty"`
		Limit    int         `json:"limit,omitempty"`
		Since    time.Time   `json:"since,omitzero"`
	}
	// streamLine is one line of the ListMessages stream: a record, the
	// error that ended the walk, or the end. A stream that stops without
	// Done or Error was cut short.
	streamLine struct {
		Record *store.MessageRecord `json:"record,omitempty"`
		Error  *Error               `json:"error,omitempty"`
		Done   bool                 `json:"done,omitempty"`
	}
)
