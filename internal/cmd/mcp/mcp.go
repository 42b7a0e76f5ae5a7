// Package mcp is `mailagent mcp`: the Model Context Protocol server on
// stdin/stdout (internal/app/mcpserver) over the watcher's socket or the
// database opened read-only. Its tests are in internal/cmd/root
// (mcp_test.go, mcp_remote_test.go), whose test binary holds every
// command's tests.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/mcpserver"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/store"
)

// MCPOptions is what `mailagent mcp` needs: the streams it speaks the
// protocol on, and the Factory's lazy config, store, clock and log.
type MCPOptions struct {
	IO        *iostreams.IOStreams
	Config    func() (*config.Config, error)
	OpenStore func(readOnly bool) (*store.Store, error)
	Now       func() time.Time
	Logger    func() *slog.Logger
	// Service, when Remote (--remote is set), serves every request: the
	// watcher on that host, over ssh.
	Service func(ctx context.Context, withActions bool) (api.Service, func() error, error)
	Remote  bool
}

// NewCmdMCP is `mailagent mcp`; runF, when not nil, runs instead of
// Run.
func NewCmdMCP(f *cmdutil.Factory, runF func(context.Context, *MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{IO: f.IOStreams, Config: f.Config, OpenStore: f.OpenStore, Now: f.Now, Logger: f.Logger}
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve the Model Context Protocol on stdin/stdout for your AI client (read-only, plus proposing drafts)",
		Long: `mcp speaks the Model Context Protocol over stdin and stdout, for an AI client
(Claude, Cursor, Zed, Goose, …) that starts it. The client can read mailagent's
status, queue, reply tracking, traces, contacts, decisions and digest, and
propose a reply, which becomes a pending draft for your review. It cannot
approve, send, edit, reject, snooze, remember or change policy.

Beside a running watch it goes through the watcher's socket; without one it
opens the database read-only for each request. Logs go to the log file
(and stderr with -v), never to stdout. Configure it in [mcp].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Service, opts.Remote = f.Service, f.RemoteURL() != ""
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
}

// mcpStartError is the one stderr line of a server that cannot start: what
// is missing and the fix (MCP clients show the server's stderr).
func mcpStartError(err error, fix string) error {
	var ue *cmdutil.UserError
	if errors.As(err, &ue) {
		err = ue.Err
		if fix == "" {
			fix = ue.Hint
		}
	}
	return &cmdutil.UserError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("mcp cannot start: %w; fix: %s", err, fix)}
}

// Run serves the Model Context Protocol on opts.IO until the client closes
// its input or ctx ends. It starts nothing when the configuration cannot
// be read or [mcp] is switched off: a usage error names the fix.
func Run(ctx context.Context, opts *MCPOptions) error {
	cfg, err := opts.Config()
	switch {
	case err == nil:
	case opts.Remote && (errors.Is(err, config.ErrNotFound) || errors.Is(err, fs.ErrNotExist)):
		// A --remote client (the laptop) needs no configuration of its
		// own: the watcher on the host answers every request. Its [mcp]
		// settings, when it has a file, still apply.
		cfg = &config.Config{MCP: config.MCP{Enabled: true}}
	default:
		return mcpStartError(err, "")
	}
	if !cfg.MCP.Enabled {
		return mcpStartError(errors.New("the MCP server is switched off ([mcp] enabled = false in "+cfg.File+")"),
			"set [mcp] enabled = true")
	}
	srv := mcpserver.New(mcpserver.Options{
		Open:     func(ctx context.Context) (api.Service, func() error, error) { return OpenService(ctx, opts) },
		ReadOnly: cfg.MCP.ReadOnly, Accounts: cfg.MCP.Accounts, Model: cfg.LLM.Model,
		Version: cmdutil.Version(), Now: opts.Now, Logger: opts.Logger(),
	})
	opts.Logger().Info("mcp: serving on stdio", "read_only", cfg.MCP.ReadOnly, "accounts", cfg.MCP.Accounts)
	// Draining: a client that closes its input gets every answer it asked
	// for first.
	err = srv.Run(ctx, &mcpserver.DrainingTransport{Transport: &mcp.IOTransport{Reader: io.NopCloser(opts.IO.In), Writer: nopWriteCloser{opts.IO.Out}}})
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil) {
		return nil // the client closed stdin, or we were interrupted
	}
	return err
}

// OpenService is the service for one MCP request: the watcher through
// its socket, else the database opened read-only (a shared lock, released
// when the request ends, so a watcher started later is never kept out).
func OpenService(ctx context.Context, opts *MCPOptions) (api.Service, func() error, error) {
	if opts.Remote {
		return opts.Service(ctx, false)
	}
	cfg, err := opts.Config()
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(cmdutil.DBPath(cfg)); errors.Is(err, fs.ErrNotExist) {
		if c, err := api.Dial(ctx, api.SocketPath(cfg.StateDir)); err == nil {
			return c, c.Close, nil
		}
		return nil, nil, errors.New("mailagent has no state yet: the owner must run `mailagent watch` (or `mailagent triage`) first")
	}
	svc, closeFn, err := api.Open(ctx, cfg.StateDir, func() (*store.Store, error) { return opts.OpenStore(true) }, nil)
	if err != nil {
		return nil, nil, err
	}
	if l, ok := svc.(*api.Local); ok {
		l.AutoSendCap = cfg.Policy.MaxAutoPerDay
	}
	return svc, closeFn, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
