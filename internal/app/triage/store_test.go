package triage

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/mailagent/mailagent/internal/config"
	"github.com/mailagent/mailagent/store"
)

// TestDryRunBeforeAnyStateTouchesNothing: a dry run before the state
// database exists works on an empty stand-in that refuses writes; it
// opens nothing and creates no file.
func TestDryRunBeforeAnyStateTouchesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opened := 0
	open := func(store.Options) (*store.Store, error) { opened++; return nil, errors.New("opened") }
	snap := func() (*store.Store, error) { opened++; return nil, errors.New("opened") }
	e := StoreEnv{Config: &config.Config{StateDir: dir}, DB: filepath.Join(dir, "mailagent.db"), Stderr: io.Discard,
		Logger: slog.New(slog.DiscardHandler), Open: open, OpenSnapshot: snap}
	st, closeStore, err := OpenStore(context.Background(), e, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutMessage(&store.MessageRecord{}); err == nil {
		t.Error("the dry run's stand-in accepted a write")
	}
	if _, err := st.GetMessage(store.MessageKey{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetMessage: %v, want ErrNotFound", err)
	}
	if err := closeStore(); err != nil {
		t.Fatal(err)
	}
	if opened != 0 {
		t.Errorf("opened the database %d times", opened)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the dry run created %d files in the state directory", len(ents))
	}
}
