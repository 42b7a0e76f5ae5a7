package store

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// ErrCorrupt: the database file is damaged (bbolt refused to open it, or a
// read hit an inconsistent page). See CorruptError.
var ErrCorrupt = errors.New("state database damaged")

// RepairHint is what a user runs about a damaged database.
const RepairHint = "run `mailagent doctor --repair` to salvage what is readable into a new file (the damaged one is kept aside)"

// CorruptError reports a damaged database file. It matches ErrCorrupt and
// unwraps to the underlying cause (a bbolt error or a recovered panic).
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("the state database %s is damaged: %v; %s", e.Path, e.Err, RepairHint)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the cause.
func (e *CorruptError) Unwrap() error { return e.Err }

// PanicError is a panic recovered inside a transaction that did not come
// from bbolt (a bug in a callback, not damage). The transaction was rolled
// back.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic in a store transaction: %v", e.Value) }

// recovered turns a recovered panic value into an error: a *CorruptError
// when the panic was raised by bbolt itself (its page assertions, or a
// fault reading a page past the end of a damaged file), else a *PanicError.
func recovered(path string, v any) error {
	stack := debug.Stack()
	if fromBolt(stack) {
		return &CorruptError{Path: path, Err: fmt.Errorf("panic: %v", v)}
	}
	return &PanicError{Value: v, Stack: stack}
}

// fromBolt reports whether the first frame after the panic (runtime frames
// skipped) is in bbolt. debug.Stack, called in the deferred function, still
// shows the panicking frames below "panic(".
func fromBolt(stack []byte) bool {
	lines := bytes.Split(stack, []byte("\n"))
	for i, l := range lines {
		if !bytes.HasPrefix(l, []byte("panic(")) {
			continue
		}
		for _, f := range lines[i+1:] {
			if len(f) == 0 || f[0] == '\t' {
				continue // file:line lines
			}
			if bytes.HasPrefix(f, []byte("runtime.")) {
				continue
			}
			return bytes.HasPrefix(f, []byte("go.etcd.io/bbolt"))
		}
	}
	return false
}

// guard runs fn with memory faults turned into panics (a read past the end
// of a truncated, mapped file is a SIGBUS otherwise, which kills the
// process) and any panic turned into an error.
func guard(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if v := recover(); v != nil {
			err = recovered(path, v)
		}
	}()
	return fn()
}

// view is db.View behind guard: every read of the store goes through it.
func (s *Store) view(fn func(*bolt.Tx) error) error {
	return guard(s.path, func() error { return s.db.View(fn) })
}

// updateTx is db.Update behind guard, for writes that do not go through
// the group commit.
func (s *Store) updateTx(fn func(*bolt.Tx) error) error {
	return guard(s.path, func() error { return s.db.Update(fn) })
}

// Check reads the whole file: the page tree (as Open's precheck does) and
// then every key and value of every bucket, in order, on this goroutine
// with faults and panics recovered (bbolt's own Tx.Check runs on a
// goroutine of its own, where a damaged page would kill the process). It
// returns a *CorruptError for the first problem. doctor runs it, not every
// command.
func (s *Store) Check() error {
	var problem error
	err := s.view(func(tx *bolt.Tx) error {
		// While this read transaction is open no writer reuses a page of
		// the current tree, so the file can be read as it is.
		if err := precheck(s.path, 0, false, "", true); err != nil {
			return &CorruptError{Path: s.path, Err: err}
		}
		var walk func(b *bolt.Bucket, where string)
		walk = func(b *bolt.Bucket, where string) {
			var prev []byte
			c := b.Cursor()
			for k, v := c.First(); k != nil && problem == nil; k, v = c.Next() {
				if prev != nil && bytes.Compare(prev, k) >= 0 {
					problem = fmt.Errorf("%s: keys out of order at %q", where, k)
					return
				}
				prev = append(prev[:0], k...)
				if v == nil {
					if sub := b.Bucket(k); sub != nil {
						walk(sub, where+"/"+string(k))
					}
				}
			}
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			walk(b, string(name))
			return problem
		})
	})
	if err == nil {
		err = problem
	}
	if err != nil && !errors.Is(err, ErrCorrupt) {
		err = &CorruptError{Path: s.path, Err: err}
	}
	return err
}
