package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/store"
)

// Limits of a page.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	maxIDLen     = 512
)

// ErrInvalid: the client's arguments are refused (a bad id, cursor, limit,
// date or account). The message says which and why.
var ErrInvalid = errors.New("invalid argument")

// errNotFound is what the client sees for an unknown id and for one in an
// account it may not see alike.
var errNotFound = errors.New("not found")

// Options configure the server.
type Options struct {
	// Open returns the service for one call and the func that releases it:
	// the watcher's socket when one answers, else the store opened
	// read-only. Required.
	Open func(ctx context.Context) (api.Service, func() error, error)
	// ReadOnly leaves out propose_reply.
	ReadOnly bool
	// Accounts, when not empty, are the only accounts the client sees.
	Accounts []string
	// Model names the configured model (digest's cost estimate).
	Model string
	// Version is the server's version.
	Version string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives the server's log (never stdout); nil discards.
	Logger *slog.Logger
	// MaxScan bounds the stored messages one page of search_mail or
	// decisions examines (0: store.DefaultMessagePageScan); a page cut by
	// it is partial.
	MaxScan int
}

type server struct {
	o Options
}

// schemas caches the tools' JSON schemas, inferred from their Go types and
// resolved once per process instead of once per server (each New infers
// eleven tools' input and output schemas; the cache is safe for
// concurrent use and holds one entry per type).
var schemas = mcp.NewSchemaCache()

// New builds the MCP server: its tools, resources and prompt.
func New(o Options) *mcp.Server {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.MaxScan <= 0 {
		o.MaxScan = store.DefaultMessagePageScan
	}
	s := &server{o: o}
	m := mcp.NewServer(&mcp.Implementation{Name: "mailagent", Title: "mailagent", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "mailagent triages the owner's mail locally. Use these tools to see what needs attention. " +
			"You can only read, and propose a reply that the owner reviews in mailagent's approval queue: nothing is sent, approved or remembered without the owner." +
			UntrustedNote,
		Logger:      o.Logger,
		SchemaCache: schemas,
	})
	s.addTools(m)
	s.addResources(m)
	return m
}

// with runs fn over a service opened for this call.
func (s *server) with(ctx context.Context, fn func(api.Service) error) error {
	svc, closeSvc, err := s.o.Open(ctx)
	if err != nil {
		return err
	}
	err = fn(svc)
	if cerr := closeSvc(); cerr != nil {
		s.o.Logger.Warn("mcp: close the service", "err", cerr)
	}
	return clientError(err)
}

// clientError turns what the client must not distinguish into one error:
// an id in an account it may not see is "not found" like an unknown one.
func clientError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrInvalid), errors.Is(err, errNotFound):
		return err
	case errors.Is(err, store.ErrNotFound):
		return errNotFound
	case errors.Is(err, api.ErrNoActions):
		return errors.New("proposing a reply needs the running watcher: ask the owner to start `mailagent watch`")
	case errors.Is(err, api.ErrBadRequest):
		return fmt.Errorf("%w: %s", ErrInvalid, line(err.Error()))
	}
	return err
}

// allowed reports whether the client may see account.
func (s *server) allowed(account string) bool {
	return len(s.o.Accounts) == 0 || slices.Contains(s.o.Accounts, account)
}

// account checks an account the client asked for ("" = all it may see).
func (s *server) account(a string) error {
	if a != "" && !s.allowed(a) {
		return fmt.Errorf("%w: no account %q", ErrInvalid, line(a))
	}
	return nil
}

// checkID refuses ids no record can have: empty, long, or with control
// characters or path separators' tricks.
func checkID(kind, id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return fmt.Errorf("%w: the %s is empty", ErrInvalid, kind)
	case len(id) > maxIDLen:
		return fmt.Errorf("%w: the %s is longer than %d bytes", ErrInvalid, kind, maxIDLen)
	case strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }),
		strings.Contains(id, "..") && strings.Contains(id, "/"):
		return fmt.Errorf("%w: the %s contains characters no id has", ErrInvalid, kind)
	}
	return nil
}

// isProposal reports whether q came from propose_reply.
func isProposal(q *store.QueueItem) bool {
	return strings.HasSuffix(q.ID, "_proposed") && q.ID == agent.ProposalID(q.Message)
}

func parseDate(key, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %s %q is not a date (2026-01-02 or RFC 3339)", ErrInvalid, key, line(v))
}
