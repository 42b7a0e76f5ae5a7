package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailagent/mailagent/store"
)

// openGrace is how long Open keeps trying when the database is locked and
// no socket answers yet: a watcher or a triage serves its socket a moment
// after it takes the lock (openStore's own lock timeout comes on top).
const openGrace = 3 * time.Second

// Open returns the Service a command should use: a Client when a watcher
// (or another process that holds the database and serves its socket, see
// ServeHeld) answers on the socket in stateDir, and otherwise a Local over
// the store that openStore opens (openStore must use a lock timeout, so
// that it fails with an error wrapping store.ErrLocked instead of
// waiting). When the database stays locked and no socket answers for
// openGrace, the error wraps store.ErrLocked and names the holder when
// HolderFile does.
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
	deadline := time.Now().Add(openGrace)
	for {
		st, err := openStore()
		if err == nil {
			l := &Local{DB: st}
			if actions != nil {
				l.Actions = actions(st)
			}
			return l, st.Close, nil
		}
		if !errors.Is(err, store.ErrLocked) {
			return nil, nil, err
		}
		// The holder may have started serving between the dial and the
		// open.
		c, dialErr = Dial(ctx, sock)
		if dialErr == nil {
			return c, c.Close, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, nil, lockedError(err, stateDir, dialErr)
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// lockedError says that another process holds the database, naming it
// when the holder file does.
func lockedError(err error, stateDir string, dialErr error) error {
	who := "another mailagent process"
	if h := ReadHolder(stateDir); h != nil {
		who = "another mailagent process, " + h.String() + ","
	}
	if errors.Is(dialErr, ErrNoWatcher) {
		return fmt.Errorf("%w: %s holds the database, and nothing answers on %s (try again when it finishes)", err, who, SocketPath(stateDir))
	}
	return fmt.Errorf("%w: %s holds the database, and its socket does not answer: %v", err, who, dialErr)
}
