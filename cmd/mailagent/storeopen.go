package main

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/app/api"
	"github.com/mailagent/mailagent/store"
)

// pipelineStore is what triage needs: the pipeline's store plus a scan to
// rebuild the threader.
type pipelineStore interface {
	agent.Store
	ListMessages(f store.MessageFilter, fn func(*store.MessageRecord) error) error
}

// openPipelineStore opens the state database for triage. A dry run opens
// it read-only when it exists and otherwise uses an empty stand-in, so
// that it never creates or changes a file.
//
// The returned func closes the store; its error (a failed final sync)
// must be reported, since commits may not have reached the disk.
func openPipelineStore(f *Factory, dryRun bool) (pipelineStore, func() error, error) {
	if dryRun {
		cfg, err := f.Config()
		if err != nil {
			return nil, nil, err
		}
		if _, err := os.Stat(DBPath(cfg)); errors.Is(err, fs.ErrNotExist) {
			return emptyStore{}, func() error { return nil }, nil
		}
		// A watcher's store through its socket, else the file read-only.
		if c, err := api.Dial(context.Background(), api.SocketPath(cfg.StateDir)); err == nil {
			return c.Store(), c.Close, nil
		}
		st, err := f.OpenStore(true)
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	}
	// While watch runs it owns the database: go through its socket (and
	// its durability). Otherwise the file is opened without an fsync per
	// commit: triage is re-runnable, so one Sync when the store is closed
	// (at the end, or after an interrupt) is enough.
	cfg, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	svc, closeSvc, err := api.Open(context.Background(), cfg.StateDir,
		func() (*store.Store, error) { return f.openStore(store.Options{NoSync: true}) }, nil)
	if err != nil {
		return nil, nil, err
	}
	if l, ok := svc.(*api.Local); ok {
		l.AutoSendCap = cfg.Policy.MaxAutoPerDay
	}
	return svc.Store(), closeSvc, nil
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
