package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/mailagent/mailagent/imapsync"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/internal/llm"
	"github.com/mailagent/mailagent/store"
)

// Factory builds what commands need, lazily: `--help` and `version` never
// read the config, dial a server or run a password command.
type Factory struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	ConfigPath string // --config
	StateDir   string // --state-dir
	Verbose    bool   // -v: also log to stderr

	// NewModel builds the language model; tests replace it.
	NewModel func(ctx context.Context, cfg *config.Config) (llm.Model, error)
	// Now is the clock; tests replace it.
	Now func() time.Time
	// approveNotice, when set, is where an approval made with no watcher
	// running announces its undo window (`queue approve`; the TUI leaves
	// it nil: it must not print over the screen).
	approveNotice io.Writer
	// deferApprovalSend: an approval made with no watcher running returns
	// once it is approved instead of waiting out the undo window (review:
	// the TUI counts down and sends through serviceBackend.SendApproved).
	deferApprovalSend bool

	cfgOnce sync.Once
	cfg     *config.Config
	cfgErr  error

	logOnce sync.Once
	log     *slog.Logger
	logFile *os.File
}

func newFactory(stdin io.Reader, stdout, stderr io.Writer) *Factory {
	f := &Factory{Stdin: stdin, Stdout: stdout, Stderr: stderr, Now: time.Now}
	f.NewModel = newModel
	return f
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

// IsTTY reports whether w is a terminal (progress bars and colour only then).
func IsTTY(w io.Writer) bool {
	if os.Getenv("TERM") == "dumb" {
		return false
	}
	if fd, ok := w.(interface{ Fd() uintptr }); ok {
		return isatty.IsTerminal(fd.Fd()) || isatty.IsCygwinTerminal(fd.Fd())
	}
	return false
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
			handlers = append(handlers, slog.NewTextHandler(f.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
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
}

// DBPath is where the state database lives.
func DBPath(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "mailagent.db") }

// OpenStore opens the state database, creating the state directory.
func (f *Factory) OpenStore(readOnly bool) (*store.Store, error) {
	return f.openStore(store.Options{ReadOnly: readOnly})
}

// openStore opens the state database with o, filling in the lock timeout
// and the configured retention.
func (f *Factory) openStore(o store.Options) (*store.Store, error) {
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

func newGeminiModel(ctx context.Context, cfg *config.Config) (llm.Model, error) {
	key, err := cfg.LLM.ResolveAPIKey(ctx)
	if err != nil {
		return nil, &UserError{Code: ExitUsage, Err: fmt.Errorf("llm api key: %w", err),
			Hint: "set the variable named by llm.api_key_env (default GEMINI_API_KEY) or llm.api_key_cmd"}
	}
	g, err := llm.NewGemini(ctx, llm.GeminiConfig{
		APIKey: key.Reveal(), Model: cfg.LLM.Model, BaseURL: cfg.LLM.BaseURL, CallTimeout: cfg.LLM.Timeout.D(),
	})
	if err != nil {
		return nil, fmt.Errorf("gemini client: %w", err)
	}
	return llm.WithRetry(llm.WithRateLimit(g, cfg.LLM.RequestsPerMinute), llm.RetryOptions{}), nil
}

// IMAPOptions resolves an account's IMAP login.
func IMAPOptions(ctx context.Context, acct *config.Account) (imapsync.Options, error) {
	e := acct.IMAP
	opts := imapsync.Options{
		Host: e.Host, Port: e.Port, Security: imapsync.Security(e.Security),
		Username: e.Username, TLSCAFile: e.TLSCAFile, Account: acct.Name,
	}
	var err error
	opts.Password, opts.OAuth2Token, err = resolveLogin(ctx, acct.Name, "imap", e)
	return opts, err
}

// DialIMAP connects and logs in to an account's IMAP server.
func DialIMAP(ctx context.Context, acct *config.Account) (*imapsync.Client, error) {
	opts, err := IMAPOptions(ctx, acct)
	if err != nil {
		return nil, imapsync.Permanent(err) // retrying a broken password source cannot help
	}
	c, err := imapsync.Dial(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, imapsync.ErrPlaintextNotLoopback) {
			return nil, &UserError{Code: ExitUsage, Err: err, Hint: "use security = \"tls\" or \"starttls\""}
		}
		return nil, unreachable(fmt.Errorf("account %s: %w", acct.Name, err), "try: mailagent doctor")
	}
	return c, nil
}
