package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/mailagent/mailagent/store"
)

// Open returns the Service a command should use: a Client when a watcher
// answers on the socket in stateDir, and otherwise a Local over the store
// that openStore opens (openStore must use a lock timeout, so that it
// fails with an error wrapping store.ErrLocked instead of waiting). When
// the database is locked and no watcher answers, the error wraps
// store.ErrLocked and says another mailagent process holds the database.
//
// actions (may be nil, and may return nil) builds the Actions of the Local
// from the opened store; without them approve and the like fail with
// ErrNoActions. The returned func closes the client or the store.
func Open(ctx context.Context, stateDir string, openStore func() (*store.Store, error), actions func(*store.Store) Actions) (Service, func() error, error) {
	sock := SocketPath(stateDir)
	c, dialErr := Dial(ctx, sock)
	if dialErr == nil {
		return c, c.Close, nil
	}
	st, err := openStore()
	if err != nil {
		if !errors.Is(err, store.ErrLocked) {
			return nil, nil, err
		}
		// A watcher may have taken the lock between the dial and the open.
		if c, err2 := Dial(ctx, sock); err2 == nil {
			return c, c.Close, nil
		}
		if errors.Is(dialErr, ErrNoWatcher) {
			return nil, nil, fmt.Errorf("%w: another mailagent process holds the database, and no watcher answers on %s (is a triage or a second command running?)", err, sock)
		}
		return nil, nil, fmt.Errorf("%w: another mailagent process holds the database, and the watcher socket does not answer: %v", err, dialErr)
	}
	l := &Local{DB: st}
	if actions != nil {
		l.Actions = actions(st)
	}
	return l, st.Close, nil
}
