package triage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/mailagent/mailagent/internal/app/actions"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/internal/app/wire"
	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// StoreEnv is what OpenStore needs from the process: the configuration,
// where to say that it waits, the log, the two ways to open the state
// database (the command line's Factory has both) and the wiring of the
// actions it serves meanwhile.
type StoreEnv struct {
	Config *config.Config
	// DB is the state database's file (cmdutil.DBPath).
	DB     string
	Stderr io.Writer
	Logger *slog.Logger
	// Open opens the state database with o (cmdutil.Factory.OpenStoreWith).
	Open func(o store.Options) (*store.Store, error)
	// OpenSnapshot opens a private copy of it (cmdutil.Factory.OpenSnapshotStore).
	OpenSnapshot func() (*store.Store, error)
	// Env wires the pipeline of the actions served while triage holds the
	// database, built on first use.
	Env *wire.Env
}

// OpenStore opens the state database for triage (and replay, as a dry
// run).
//
// A dry run never holds the database file: it goes through a watcher's
// socket, else it works on a private copy made in one short read
// transaction (store.OpenSnapshot), so that a watcher can start at any
// moment; before any state exists it uses an empty stand-in, so that it
// never creates or changes a file.
//
// A triage that writes goes through a watcher's socket when one answers;
// else it holds the database for its whole run and serves the socket
// meanwhile (api.ServeHeld: status, queue and review work through it).
// When another process holds the database and is not a watcher (another
// triage, an approval in its undo window, a holder starting up), both
// say so on stderr and wait for it (actions.WaitForService).
//
// The returned func closes the store; its error (a failed final sync)
// must be reported, since commits may not have reached the disk.
func OpenStore(ctx context.Context, e StoreEnv, dryRun bool) (wire.PipelineStore, func() error, error) {
	cfg := e.Config
	say := func(msg string) {
		fmt.Fprintln(e.Stderr, msg)
		e.Logger.Info("waiting for the state database", "holder", msg)
	}
	if dryRun {
		if _, err := os.Stat(e.DB); errors.Is(err, fs.ErrNotExist) {
			return emptyStore{}, func() error { return nil }, nil
		}
		svc, closeSvc, err := actions.WaitForService(ctx, cfg.StateDir, "the dry run starts", say, e.OpenSnapshot)
		if err != nil {
			return nil, nil, err
		}
		return svc.Store(), closeSvc, nil
	}
	// While watch runs it owns the database: go through its socket (and
	// its durability). Otherwise the file is opened without an fsync per
	// commit: triage is re-runnable, so one Sync when the store is closed
	// (at the end, or after an interrupt) is enough.
	svc, closeSvc, err := actions.WaitForService(ctx, cfg.StateDir, "triage starts", say,
		func() (*store.Store, error) { return e.Open(store.Options{NoSync: true}) })
	if err != nil {
		return nil, nil, err
	}
	l, ok := svc.(*api.Local)
	if !ok {
		return svc.Store(), closeSvc, nil
	}
	l.AutoSendCap = cfg.Policy.MaxAutoPerDay
	// Serve the other commands while this triage holds the database.
	// Their actions (approve, …) get a pipeline of their own over the
	// same store, built on first use.
	lazy := &actions.Lazy{Build: func() (actions.Local, func(), error) {
		p, err := wire.BuildAgent(ctx, e.Env, cfg, l.DB, true)
		if err != nil {
			return actions.Local{}, nil, err
		}
		return actions.Local{Pipeline: p.Pipeline, Daemon: wire.NewDaemon(e.Env, cfg, l.DB, p, nil), NoWatcher: true}, p.Mailer.Close, nil
	}}
	served := &api.Local{DB: l.DB, Actions: lazy, AutoSendCap: cfg.Policy.MaxAutoPerDay, StatusFunc: actions.HeldStatus()}
	stop := api.ServeHeld(ctx, cfg.StateDir, served, "triage", e.Logger)
	return l.DB, func() error {
		stop()
		lazy.Close()
		return closeSvc()
	}, nil
}

// emptyStore is a store with nothing in it that accepts no writes. It
// backs dry runs before any state exists.
type emptyStore struct{}

func (emptyStore) GetMessage(store.MessageKey) (*store.MessageRecord, error) {
	return nil, store.ErrNotFound
}
func (emptyStore) PutMessage(*store.MessageRecord) error { return errors.New("dry run: no writes") }
func (emptyStore) PutTrace(*store.Trace) error           { return errors.New("dry run: no writes") }
func (emptyStore) ThreadMessages(string, int) ([]*store.MessageRecord, error) {
	return nil, nil
}
func (emptyStore) RelabelThread(string, string) error { return errors.New("dry run: no writes") }
func (emptyStore) GetContact(string, string) (*store.Contact, error) {
	return nil, store.ErrNotFound
}
func (emptyStore) AutoSendCounts(string, string, string) (int, int, error) { return 0, 0, nil }
func (emptyStore) ListMessages(store.MessageFilter, func(*store.MessageRecord) error) error {
	return nil
}
