// Package serve is `mailagent serve --stdio`: the watcher's API on stdin
// and stdout, for a client on another host that runs it over ssh
// (`mailagent --remote ssh://host …`, as `docker -H ssh://` runs
// `docker system dial-stdio`). It copies bytes between its standard
// streams and the local watcher's unix socket; it opens no port and
// never opens the database. Its tests are in internal/cmd/root
// (serve_test.go), whose test binary holds every command's tests.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/cmdutil"
	"github.com/mailagent/mailagent/internal/iostreams"
)

// ServeOptions is what `mailagent serve` needs.
type ServeOptions struct {
	IO *iostreams.IOStreams
	// StateDir returns the state directory, whose socket is served.
	StateDir func() (string, error)

	Stdio bool // --stdio
}

// NewCmdServe is `mailagent serve`; runF, when not nil, runs instead of
// Run (tests of the flag parsing).
func NewCmdServe(f *cmdutil.Factory, runF func(context.Context, *ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{IO: f.IOStreams, StateDir: func() (string, error) {
		if f.StateDir != "" {
			return f.StateDir, nil
		}
		cfg, err := f.Config()
		if err != nil {
			return "", err
		}
		return cfg.StateDir, nil
	}}
	cmd := &cobra.Command{
		Use:   "serve --stdio",
		Short: "Relay the running watcher's API on stdin/stdout (for --remote over ssh)",
		Long: `serve --stdio connects to the watcher running on this host (its socket in
the state directory) and relays the connection over stdin and stdout. It is
what ` + "`mailagent --remote ssh://user@host …`" + ` runs on the host through ssh, so
that review, status, queue and the other commands reach a watcher on
another machine with OpenSSH's authentication and host-key checks, and no
port of mailagent's own. It exits when either side closes; with no watcher
running it exits 3 and says so.`,
		Example: `  ssh mail.example.org mailagent serve --stdio   # what --remote runs
  mailagent --remote ssh://ada@mail.example.org review`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Stdio, "stdio", false, "relay over stdin and stdout (the only transport)")
	return cmd
}

// ErrNoWatcher is wrapped by Run's error when no watcher answers.
var ErrNoWatcher = api.ErrNoWatcher

// Run relays between opts.IO's stdin/stdout and the watcher's socket until
// either side closes or ctx ends. Nothing else is written to stdout.
func Run(ctx context.Context, opts *ServeOptions) error {
	if !opts.Stdio {
		return cmdutil.UsageErr("serve needs --stdio (the only transport: mailagent serve --stdio)")
	}
	dir, err := opts.StateDir()
	if err != nil {
		return err
	}
	sock := api.SocketPath(dir)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return cmdutil.Unreachable(fmt.Errorf("no watcher runs on this host: nothing answers on %s: %w", sock, ErrNoWatcher),
				"start it on this host: mailagent watch")
		}
		return cmdutil.Unreachable(fmt.Errorf("connect to the watcher on %s: %w", sock, err), "check: mailagent status")
	}
	return relay(ctx, conn, opts.IO.In, opts.IO.Out)
}

// relay copies in to conn and conn to out. When in ends, conn's write
// side is closed and the relay waits for the watcher to finish its
// answers and close; when the watcher closes, the relay ends at once.
func relay(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer) error {
	defer func() { _ = conn.Close() }()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	fromWatcher := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, conn)
		fromWatcher <- err
	}()
	fromClient := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, in)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		fromClient <- err
	}()
	select {
	case err := <-fromWatcher:
		return quiet(ctx, err)
	case err := <-fromClient:
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("serve: read stdin: %w", err)
		}
		return quiet(ctx, <-fromWatcher)
	}
}

// quiet drops the errors of an ordinary end: a closed connection, or ctx.
func quiet(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return fmt.Errorf("serve: relay: %w", err)
}
