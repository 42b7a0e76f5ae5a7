// Package cmdutil is what every command shares: the Factory (streams,
// configuration, store, model, prompter and the application service, all
// built lazily), the user-facing error with its exit code, the table
// printer, the JSON writer and shell completion helpers. It holds no
// application behaviour: that lives in internal/app.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/iostreams"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/internal/prompter"
	"github.com/mailagent/mailagent/store"
)

// Factory builds what commands need, lazily: `--help` and `version` never
// read the config, dial a server or run a password command. A command
// takes what it needs from the Factory into its Options when it runs;
// tests replace the func fields (NewModel, Now, Prompter, Service) instead
// of package globals.
type Factory struct {
	// IOStreams are the standard streams and what is known about them.
	IOStreams *iostreams.IOStreams

	ConfigPath string // --config
	StateDir   string // --state-dir
	Verbose    bool   // -v: also log to stderr
	// Remote is --remote (else $MAILAGENT_REMOTE): ssh://[user@]host[:port]
	// of a host whose watcher the commands talk to (remote.go).
	Remote string
	// RemoteCommand is --remote-command: the mailagent binary on that host.
	RemoteCommand string

	// NewModel builds the language model for cfg; tests replace it. New
	// leaves one that checks the key and builds nothing: the real one
	// (cmdutil/provider.New, which links the providers' SDKs) is set by
	// the composition root, internal/cmd/root's NewFactory.
	NewModel func(ctx context.Context, cfg *config.Config) (llm.Model, error)
	// Now is the clock; tests replace it.
	Now func() time.Time
	// Prompter returns the one Prompter, over IOStreams.In (answers) and
	// IOStreams.ErrOut (questions): built on first use, closed by Close.
	// Tests replace it with a scripted one.
	Prompter func() prompter.Prompter
	// Service opens the application service a command works through: a
	// running watcher's socket, else the state database (withActions:
	// with a pipeline for approve and friends). The returned func closes
	// it. It is set by whoever assembles the commands; nil means the
	// build has no application tier (a test of flag parsing).
	Service func(ctx context.Context, withActions bool) (api.Service, func() error, error)

	// IncomingCheckOff switches off the rule that the watched mailbox is
	// never Drafts or Sent (wire.Env's IncomingCheckOff), and
	// PrethreadOff triage's prethreading (so that a thread id depends on
	// the order the workers finish in), and ExplainSanitiseOff the
	// cleaning of snapshot lines in `explain --steps` (they print as
	// stored): each only for the positive control of the test that
	// attacks that defence. No flag sets them.
	IncomingCheckOff   bool
	PrethreadOff       bool
	ExplainSanitiseOff bool

	cfgOnce sync.Once
	cfg     *config.Config
	cfgErr  error

	logOnce sync.Once
	log     *slog.Logger
	logFile *os.File

	promptOnce sync.Once
	prompter   prompter.Closer
}

// New returns a Factory over ios with the real clock and prompter, and a
// NewModel that builds no model (see NewModel): internal/cmd/root's
// NewFactory is New with the real one.
func New(ios *iostreams.IOStreams) *Factory {
	f := &Factory{IOStreams: ios, Now: time.Now, NewModel: noModelProvider}
	f.Prompter = f.defaultPrompter
	return f
}

func (f *Factory) defaultPrompter() prompter.Prompter {
	f.promptOnce.Do(func() { f.prompter = prompter.New(f.IOStreams.In, f.IOStreams.ErrOut) })
	return f.prompter
}

// Config loads and validates the configuration once.
func (f *Factory) Config() (*config.Config, error) {
	f.cfgOnce.Do(func() {
		cfg, _, err := config.Load(f.ConfigPath)
		if err != nil {
			hint := "fix the file, or run: mailagent doctor"
			if errors.Is(err, os.ErrNotExist) || errors.Is(err, config.ErrNotFound) {
				hint = "create one with `mailagent init`, or pass --config FILE (try `mailagent demo` first: it needs no configuration)"
			}
			f.cfgErr = &UserError{Code: ExitUsage, Err: err, Hint: hint}
			return
		}
		if f.StateDir != "" {
			cfg.OverrideStateDir(f.StateDir)
		}
		f.cfg = cfg
	})
	return f.cfg, f.cfgErr
}

// Logger returns the logger. Logs go to the log file in the state
// directory (never to a terminal a TUI draws on); -v adds stderr.
func (f *Factory) Logger() *slog.Logger {
	f.logOnce.Do(func() {
		var handlers []slog.Handler
		if cfg, err := f.Config(); err == nil {
			path := cfg.LogFile
			if path == "" {
				path = filepath.Join(cfg.StateDir, "mailagent.log")
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
				if fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
					f.logFile = fh
					handlers = append(handlers, slog.NewJSONHandler(fh, &slog.HandlerOptions{Level: slog.LevelInfo}))
				}
			}
		}
		if f.Verbose {
			handlers = append(handlers, slog.NewTextHandler(f.IOStreams.ErrOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		if len(handlers) == 0 {
			f.log = slog.New(slog.DiscardHandler)
			return
		}
		f.log = slog.New(slog.NewMultiHandler(handlers...))
	})
	return f.log
}

// Close releases what the factory opened.
func (f *Factory) Close() {
	if f.logFile != nil {
		_ = f.logFile.Close()
	}
	if f.prompter != nil {
		f.prompter.Close()
	}
}

// DBPath is where the state database lives.
func DBPath(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "mailagent.db") }

// OpenStore opens the state database, creating the state directory.
func (f *Factory) OpenStore(readOnly bool) (*store.Store, error) {
	return f.OpenStoreWith(store.Options{ReadOnly: readOnly})
}

// OpenStoreWith opens the state database with o, filling in the lock
// timeout and the configured retention.
func (f *Factory) OpenStoreWith(o store.Options) (*store.Store, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	o.Timeout, o.Retention, o.SnapshotRetention = time.Second, cfg.StoreRetention(), cfg.SnapshotRetention()
	return store.Open(DBPath(cfg), o)
}

// Model builds the configured model, wrapped in retries.
func (f *Factory) Model(ctx context.Context) (llm.Model, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	return f.NewModel(ctx, cfg)
}

// OpenSnapshot opens a private copy of the state database (see
// store.OpenSnapshot), for a long read-only run.
func (f *Factory) OpenSnapshot() (*store.SnapshotStore, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	return store.OpenSnapshot(DBPath(cfg), store.Options{Timeout: time.Second,
		Retention: cfg.StoreRetention(), SnapshotRetention: cfg.SnapshotRetention()})
}

// OpenSnapshotStore is OpenSnapshot for api.Open, which wants a
// *store.Store: the copy is removed when the process ends instead of
// when it is closed.
func (f *Factory) OpenSnapshotStore() (*store.Store, error) {
	st, err := f.OpenSnapshot()
	if err != nil {
		return nil, err
	}
	_ = os.Remove(st.File()) // the open copy stays readable until closed
	return st.Store, nil
}

// ServiceFunc opens the application service (see Factory.Service).
type ServiceFunc = func(ctx context.Context, withActions bool) (api.Service, func() error, error)

// AccountService opens the service (a running watcher's socket, else the
// store) for the commands that act on one account's records: the account
// named (--account), or the first configured. The caller closes it.
func AccountService(ctx context.Context, cfg func() (*config.Config, error), service ServiceFunc, name string) (string, api.Service, func() error, error) {
	c, err := cfg()
	if err != nil {
		return "", nil, nil, err
	}
	accounts, err := PickAccounts(c, name)
	if err != nil {
		return "", nil, nil, err
	}
	if len(accounts) == 0 {
		return "", nil, nil, UsageErr("no accounts configured")
	}
	svc, closeSvc, err := service(ctx, false)
	if err != nil {
		return "", nil, nil, err
	}
	return accounts[0].Name, svc, closeSvc, nil
}
