package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/store"
)

// seedState writes a state database with n messages (big enough to fill
// many pages), queue items, outbox records and contacts: a copy of the one
// seededState built for n.
func seedState(t *testing.T, path string, n int) {
	t.Helper()
	v, _ := seededStates.LoadOrStore(n, sync.OnceValues(func() ([]byte, error) { return buildSeededState(n) }))
	data, err := v.(func() ([]byte, error))()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// seededStates holds, per size, the database seedState copies: built once
// (store.Options NoSync, fsynced once on close) instead of once per test
// with an fsync per record.
var seededStates sync.Map // int → func() ([]byte, error)

func buildSeededState(n int) ([]byte, error) {
	dir, err := os.MkdirTemp("", "mailagent-seedstate-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "mailagent.db")
	st, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	err = fillSeededState(st, n)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

func fillSeededState(st *store.Store, n int) error {
	for i := range n {
		r := &store.MessageRecord{
			MessageKey: store.MessageKey{Account: "personal", Mailbox: "INBOX", UIDValidity: 1, UID: uint32(i + 1)},
			MessageID:  fmt.Sprintf("<m%d@example.org>", i), ThreadID: fmt.Sprintf("t%d", i),
			Subject: "hello", Excerpt: strings.Repeat("x", 1500), State: store.StateDone, TraceID: fmt.Sprintf("tr%d", i),
		}
		if err := st.PutMessage(r); err != nil {
			return err
		}
		if err := st.PutTrace(&store.Trace{TraceID: r.TraceID, Message: r.MessageKey, MessageID: r.MessageID}); err != nil {
			return err
		}
	}
	for i := range 20 {
		if err := st.PutQueueItem(&store.QueueItem{ID: fmt.Sprintf("q%d", i), Kind: store.KindNotify, Account: "personal", Status: store.QueuePending, Subject: "s"}); err != nil {
			return err
		}
	}
	_, err := st.UpdateContact("personal", "bob@example.org", nil)
	return err
}

// garbleLeaves overwrites n leaf pages (chosen with a fixed seed) with
// random bytes.
func garbleLeaves(t *testing.T, path string, n int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	var leaves []int
	for id := 2; (id+1)*ps <= len(data); id++ {
		if binary.LittleEndian.Uint16(data[id*ps+8:]) == 0x02 {
			leaves = append(leaves, id)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range n {
		id := leaves[rng.IntN(len(leaves))]
		for i := id * ps; i < (id+1)*ps; i++ {
			data[i] = byte(rng.Uint32())
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedStateDatabaseCommands: on a damaged state database every
// command that reads it exits with ExitCorrupt (6) and names `mailagent
// doctor --repair`, never a panic; `doctor --repair` salvages it, keeps the
// damaged file aside, and the commands work again.
func TestDamagedStateDatabaseCommands(t *testing.T) {
	t.Parallel()
	damages := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"truncated to 0 bytes", func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated mid-page", func(t *testing.T, path string) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()/2+777); err != nil {
				t.Fatal(err)
			}
		}},
		{"garbage over leaf pages", func(t *testing.T, path string) { garbleLeaves(t, path, 6) }},
	}
	commands := [][]string{{"status"}, {"queue", "list"}, {"explain", "<m5@example.org>"}, {"contacts", "list", "--account", "personal"}}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			h := newHarness(t, classifyReply, "")
			db := filepath.Join(h.dir, "state", "mailagent.db")
			seedState(t, db, 300)
			d.damage(t, db)
			runs, corrupt := 0, 0
			for _, args := range commands {
				_, stderr, code := h.run(args...)
				runs++
				if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
					t.Fatalf("%v panicked: %s", args, stderr)
				}
				if code == ExitCorrupt {
					corrupt++
					if !strings.Contains(stderr, "mailagent doctor --repair") {
						t.Errorf("%v: exit 6 without the way out: %s", args, stderr)
					}
				} else if args[0] == "status" {
					t.Errorf("status on a damaged database: exit %d, want %d; stderr %s", code, ExitCorrupt, stderr)
				}
			}
			t.Logf("%d of %d command runs reported the damage (exit 6)", corrupt, runs)

			out, stderr, code := h.run("doctor", "--repair")
			if code != ExitOK && code != ExitPartial {
				t.Fatalf("doctor --repair: exit %d\n%s\n%s", code, out, stderr)
			}
			if !strings.Contains(out, "the damaged file is kept as") {
				t.Errorf("repair output: %s", out)
			}
			matches, _ := filepath.Glob(db + ".damaged-*")
			if len(matches) != 1 {
				t.Fatalf("damaged file kept aside: %v", matches)
			}
			for _, args := range commands[:2] {
				if _, stderr, code := h.run(args...); code != ExitOK {
					t.Errorf("%v after repair: exit %d: %s", args, code, stderr)
				}
			}
			if d.name == "garbage over leaf pages" {
				st, err := store.Open(db, store.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				counts, _ := st.CountByState()
				_ = st.Close()
				if counts[store.StateDone] < 250 {
					t.Errorf("salvaged %d of 300 messages after losing 6 leaf pages", counts[store.StateDone])
				}
			}
			// A second repair finds nothing to do.
			if out, _, code := h.run("doctor", "--repair"); code != ExitOK || !strings.Contains(out, "healthy") {
				t.Errorf("second repair: exit %d, %s", code, out)
			}
		})
	}
}
