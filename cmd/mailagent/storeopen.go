package main

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/mailagent/mailagent/agent"
	"github.com/mailagent/mailagent/internal/api"
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
func openPipelineStore(f *Factory, dryRun bool) (pipelineStore, func(), error) {
	if dryRun {
		cfg, err := f.Config()
		if err != nil {
			return nil, nil, err
		}
		if _, err := os.Stat(DBPath(cfg)); errors.Is(err, fs.ErrNotExist) {
			return emptyStore{}, func() {}, nil
		}
		// A watcher's store through its socket, else the file read-only.
		if c, err := api.Dial(context.Background(), api.SocketPath(cfg.StateDir)); err == nil {
			return c.Store(), func() { _ = c.Close() }, nil
		}
		st, err := f.OpenStore(true)
		if err != nil {
			return nil, nil, err
		}
		return st, func() { _ = st.Close() }, nil
	}
	// While watch runs it owns the database: go through its socket.
	svc, closeSvc, err := f.Service(context.Background(), false)
	if err != nil {
		return nil, nil, err
	}
	return svc.Store(), func() { _ = closeSvc() }, nil
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
