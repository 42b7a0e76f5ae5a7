package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mailagent/mailagent/internal/rig/testmain"
	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// corpusDB writes a realistic database (messages big enough to fill many
// leaf pages, traces, queue, outbox with raw messages, contacts), closes
// it and returns a copy's path and the messages written, by key. The
// database is written once per process; each caller gets its own copy.
func corpusDB(t *testing.T) (string, map[string]*MessageRecord) {
	t.Helper()
	corpusOnce.Do(func() {
		corpusDir, _ = os.MkdirTemp("", "store-corpus-")
		corpusPath, corpusWant = buildCorpus(t, filepath.Join(corpusDir, "mailagent.db"))
	})
	if corpusPath == "" {
		t.Fatal("no corpus")
	}
	data, err := os.ReadFile(corpusPath)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mailagent.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, corpusWant
}

var (
	corpusOnce sync.Once
	corpusDir  string
	corpusPath string
	corpusWant map[string]*MessageRecord
)

func TestMain(m *testing.M) {
	if err := testsize.NoExitSleepInChildren(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testmain.Run(testmain.RunFunc(func() int {
		defer func() {
			if corpusDir != "" {
				_ = os.RemoveAll(corpusDir)
			}
		}()
		return m.Run()
	}))
}

func buildCorpus(t *testing.T, path string) (string, map[string]*MessageRecord) {
	t.Helper()
	// NoSync: a fixture of ~170 commits, flushed by Close; an fsync each
	// was most of the package's time.
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*MessageRecord{}
	rng := rand.New(rand.NewPCG(7, 7))
	// The messages and their traces in transactions of 20 of each, as a
	// triage batch commits them (one commit each made the file the same
	// way and was most of its cost: under -race a commit clears each page
	// it wrote a byte at a time); the queue, the outbox and the contacts
	// after them one commit each, so that the file's last transactions
	// are small ones.
	for first := 0; first < 400; first += 20 {
		err := s.updateTx(func(tx *bolt.Tx) error {
			for i := first; i < first+20; i++ {
				r := msg("acct", "INBOX", 1, uint32(i+1), StateDone)
				r.ThreadID = fmt.Sprintf("t%04d", i/3)
				r.Subject = fmt.Sprintf("subject %d", i)
				r.Excerpt = strings.Repeat(fmt.Sprintf("%x", rng.Uint64()), 80) // ~1.3 KB
				if err := r.check(); err != nil {
					return err
				}
				if err := putMessageTx(tx, r, s.now().UTC()); err != nil {
					return err
				}
				want[string(msgKey(r.MessageKey))] = r
				if err := putTraceTx(tx, &Trace{TraceID: fmt.Sprintf("tr%04d", i), Message: r.MessageKey, MessageID: r.MessageID}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if err := s.PutQueueItem(&QueueItem{ID: fmt.Sprintf("q%03d", i), Kind: KindDraft, Status: QueuePending, Draft: strings.Repeat("d", 300)}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutOutbox(&OutboxRecord{ID: fmt.Sprintf("ob%03d", i), Status: OutboxAppended, Raw: bytes.Repeat([]byte("r"), 2000)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		if _, err := s.UpdateContact("acct", fmt.Sprintf("c%d@example.com", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, want
}

const pageSize = 4096

func readPage(t *testing.T, f []byte, id int) []byte {
	t.Helper()
	return f[id*pageSize : (id+1)*pageSize]
}

// leafPages returns the ids of the pages that are leaf pages holding keys
// of the messages bucket (recognised by key shape), with the keys on each.
func leafPages(data []byte) map[int][]string {
	out := map[int][]string{}
	for id := 2; (id+1)*pageSize <= len(data); id++ {
		p := data[id*pageSize:]
		flags := binary.LittleEndian.Uint16(p[8:])
		count := int(binary.LittleEndian.Uint16(p[10:]))
		overflow := binary.LittleEndian.Uint32(p[12:])
		if flags != 0x02 || overflow != 0 || count == 0 {
			continue
		}
		var keys []string
		for i := range count {
			e := p[16+i*16:]
			pos := int(binary.LittleEndian.Uint32(e[4:]))
			ksize := int(binary.LittleEndian.Uint32(e[8:]))
			start := 16 + i*16 + pos
			if start+ksize > pageSize {
				keys = nil
				break
			}
			k := p[start : start+ksize]
			if bytes.HasPrefix(k, []byte("acct\x00INBOX\x00")) && len(k) == len("acct\x00INBOX\x00")+4+1+4 {
				keys = append(keys, string(k))
			}
		}
		if len(keys) > 0 {
			out[id] = keys
		}
	}
	return out
}

type damage struct {
	name string
	// apply damages data (the file's bytes) and returns the new bytes and
	// the message keys it may have destroyed (nil: unknown, maybe all).
	apply func(t *testing.T, data []byte, rng *rand.Rand) ([]byte, map[string]bool)
	// wantOpenErr: Open must fail with ErrCorrupt.
	wantOpenErr bool
}

func metaTxid(p []byte) uint64 { return binary.LittleEndian.Uint64(p[16+48:]) }

var damages = []damage{
	{name: "truncate to 0", wantOpenErr: true, apply: func(t *testing.T, data []byte, _ *rand.Rand) ([]byte, map[string]bool) {
		return nil, nil
	}},
	{name: "truncate to one page", wantOpenErr: true, apply: func(t *testing.T, data []byte, _ *rand.Rand) ([]byte, map[string]bool) {
		return data[:pageSize], nil
	}},
	{name: "truncate mid-page", apply: func(t *testing.T, data []byte, _ *rand.Rand) ([]byte, map[string]bool) {
		// Every message record not on a leaf page that is still whole
		// may be lost; the others must be salvaged.
		cut := data[:len(data)/2+1234]
		kept := map[string]bool{}
		for _, keys := range leafPages(cut) {
			for _, k := range keys {
				kept[k] = true
			}
		}
		// Returned with a "kept:" prefix: the keys that must be salvaged.
		out := map[string]bool{}
		for k := range kept {
			out["kept:"+k] = true
		}
		return cut, out
	}},
	{name: "garbage over leaf pages", apply: func(t *testing.T, data []byte, rng *rand.Rand) ([]byte, map[string]bool) {
		leaves := leafPages(data)
		ids := make([]int, 0, len(leaves))
		for id := range leaves {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		lost := map[string]bool{}
		for range 5 {
			id := ids[rng.IntN(len(ids))]
			p := data[id*pageSize : (id+1)*pageSize]
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			for _, k := range leaves[id] {
				lost[k] = true
			}
		}
		return data, lost
	}},
	{name: "garbage over random pages", apply: func(t *testing.T, data []byte, rng *rand.Rand) ([]byte, map[string]bool) {
		n := len(data) / pageSize
		for range 8 {
			id := 2 + rng.IntN(n-2)
			p := data[id*pageSize : (id+1)*pageSize]
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
		}
		return data, nil
	}},
	{name: "flip the checksum of the newest meta page", apply: func(t *testing.T, data []byte, _ *rand.Rand) ([]byte, map[string]bool) {
		m := 0
		if metaTxid(readPage(t, data, 1)) > metaTxid(readPage(t, data, 0)) {
			m = 1
		}
		data[m*pageSize+16+56] ^= 0xff
		return data, map[string]bool{} // bbolt falls back to the other meta page: one transaction older
	}},
	{name: "flip both meta checksums", wantOpenErr: true, apply: func(t *testing.T, data []byte, _ *rand.Rand) ([]byte, map[string]bool) {
		data[16+56] ^= 0xff
		data[pageSize+16+56] ^= 0xff
		return data, nil
	}},
	{name: "garbage over both meta pages", wantOpenErr: true, apply: func(t *testing.T, data []byte, rng *rand.Rand) ([]byte, map[string]bool) {
		for i := range 2 * pageSize {
			data[i] = byte(rng.IntN(256))
		}
		// Every record on an intact leaf page must be salvaged.
		out := map[string]bool{}
		for _, keys := range leafPages(data) {
			for _, k := range keys {
				out["kept:"+k] = true
			}
		}
		return data, out
	}},
	{name: "zero the freelist", apply: func(t *testing.T, data []byte, _ *rand.Rand) ([]byte, map[string]bool) {
		for m := range 2 {
			fl := int(binary.LittleEndian.Uint64(data[m*pageSize+16+32:]))
			if fl >= 2 && (fl+1)*pageSize <= len(data) {
				clear(data[fl*pageSize : (fl+1)*pageSize])
			}
		}
		return data, map[string]bool{}
	}},
}

// typicalReads is what commands do on open: each must return (an error is
// fine) and never panic.
func typicalReads(s *Store) []error {
	return typicalReadsListing(s, func(*MessageRecord) error { return nil })
}

// typicalReadsListing is typicalReads, giving each record of its full
// listing (ListMessages of every message, its second read, whose error is
// errs[1]) to each.
func typicalReadsListing(s *Store, each func(*MessageRecord) error) (errs []error) {
	add := func(err error) { errs = append(errs, err) }
	_, err := s.CountByState()
	add(err)
	add(s.ListMessages(MessageFilter{}, each))
	add(s.ListMessages(MessageFilter{State: StateDone}, func(*MessageRecord) error { return nil }))
	add(s.ListMessages(MessageFilter{ThreadID: "t0010"}, func(*MessageRecord) error { return nil }))
	_, err = s.GetMessage(MessageKey{Account: "acct", Mailbox: "INBOX", UIDValidity: 1, UID: 200})
	add(err)
	_, err = s.FindByMessageID("acct", "m1-300@example.com")
	add(err)
	_, err = s.ResolveTrace("", "m1-10@example.com")
	add(err)
	add(s.ListQueue(QueuePending, func(*QueueItem) error { return nil }))
	add(s.ListOutbox("", func(*OutboxRecord) error { return nil }))
	add(s.ListContacts("acct", func(*Contact) error { return nil }))
	_, _, err = s.NextDue()
	add(err)
	add(s.Check())
	return errs
}

// noPanic runs fn and fails the test with the stack when it panics.
func noPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			t.Fatalf("%s panicked: %v\n%s", what, v, debug.Stack())
		}
	}()
	fn()
}

func TestDamagedDatabase(t *testing.T) {
	t.Parallel()
	for i, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			path, want := corpusDB(t)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(42, uint64(i)))
			data, lost := d.apply(t, data, rng)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			noticed := false
			for _, ro := range []bool{true, false} {
				noPanic(t, fmt.Sprintf("open (read-only %v) and reads", ro), func() {
					s, err := Open(path, Options{ReadOnly: ro})
					if err != nil {
						if !errors.Is(err, ErrCorrupt) {
							t.Fatalf("open: got %v, want an error matching ErrCorrupt", err)
						}
						if !strings.Contains(err.Error(), "mailagent doctor --repair") {
							t.Errorf("open error %q does not name the way out", err)
						}
						noticed = true
						return
					}
					if d.wantOpenErr {
						t.Fatalf("open (read-only %v) succeeded on a damaged file", ro)
					}
					defer func() { _ = s.Close() }()
					for _, err := range typicalReads(s) {
						if errors.Is(err, ErrCorrupt) {
							noticed = true
						}
					}
				})
			}
			if lost == nil && !noticed {
				t.Errorf("the damage went unnoticed by Open, the reads and Check")
			}
			if len(lost) > 0 && !noticed {
				t.Errorf("%d records destroyed and nothing noticed", len(lost))
			}

			var rep RepairReport
			noPanic(t, "Repair", func() {
				rep, err = Repair(path)
			})
			if err != nil {
				t.Fatalf("Repair: %v", err)
			}
			if _, err := os.Stat(rep.DamagedPath); err != nil {
				t.Errorf("the damaged file was not kept aside: %v", err)
			}
			if !strings.HasPrefix(filepath.Base(rep.DamagedPath), "mailagent.db.damaged-") {
				t.Errorf("damaged file named %s", rep.DamagedPath)
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatalf("open the repaired file: %v", err)
			}
			defer func() { _ = s.Close() }()
			if err := s.Check(); err != nil {
				t.Fatalf("the repaired file fails its check: %v", err)
			}
			// The reads again, the full listing kept.
			got := map[string]*MessageRecord{}
			errs := typicalReadsListing(s, func(r *MessageRecord) error {
				got[string(msgKey(r.MessageKey))] = r
				return nil
			})
			for _, err := range errs {
				if err != nil && !errors.Is(err, ErrNotFound) {
					t.Errorf("read on the repaired file: %v", err)
				}
			}
			if errs[1] != nil {
				t.Fatal(errs[1])
			}
			for k, r := range got {
				w, ok := want[k]
				if !ok || w.MessageID != r.MessageID || w.Excerpt != r.Excerpt || w.ThreadID != r.ThreadID {
					t.Fatalf("salvaged record %q is not the one written", k)
				}
				// The indexes were rebuilt: the record is found by its id.
				if found, err := s.FindByMessageID("acct", r.MessageID); err != nil || len(found) != 1 {
					t.Fatalf("FindByMessageID(%s) after repair: %d, %v", r.MessageID, len(found), err)
				}
			}
			if lost != nil {
				for k := range want {
					mustHave := !lost[k]
					if len(lost) > 0 && strings.HasPrefix(firstKey(lost), "kept:") {
						mustHave = lost["kept:"+k]
					}
					if mustHave && got[k] == nil {
						t.Errorf("intact record %q (uid %d) not salvaged", k, want[k].UID)
					}
				}
			}
			t.Logf("%s: salvaged %d/%d messages, copied %d, lost %d; %v", d.name, len(got), len(want), rep.TotalCopied(), rep.TotalLost(), rep.Problems)
		})
	}
}

func TestOpenRefusesEmptyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mailagent.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Options{})
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != path {
		t.Fatalf("got %v, want a *CorruptError for %s", err, path)
	}
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Fatalf("Open wrote %d bytes into the damaged file", fi.Size())
	}
}

func TestInfoMarker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mailagent.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	if !info.Fresh || info.Schema != SchemaVersion || info.CreatedAt.IsZero() || len(info.Siblings) != 0 {
		t.Fatalf("new file: %+v", info)
	}
	_ = s.Close()
	s, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if again := s.Info(); again.Fresh || !again.CreatedAt.Equal(info.CreatedAt) {
		t.Fatalf("reopened: %+v, created %v", again, info.CreatedAt)
	}
	_ = s.Close()
	// The file is lost but a backup sits next to it: the new file says so.
	if err := os.Rename(path, path+".bak"); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	if info := s.Info(); !info.Fresh || !slices.Equal(info.Siblings, []string{path + ".bak"}) {
		t.Fatalf("new file beside a backup: %+v", info)
	}
}

// TestPanicInTransactionIsAnError: a panic inside bbolt (a damaged page)
// or inside a callback is an error, and the store still works.
func TestPanicInTransactionIsAnError(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	err := s.view(func(tx *bolt.Tx) error { panic("boom") })
	var pe *PanicError
	if !errors.As(err, &pe) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("callback panic: got %v, want a *PanicError", err)
	}
	err = s.updateTx(func(tx *bolt.Tx) error {
		var p *int
		return fmt.Errorf("%d", *p) // nil dereference in our code
	})
	if !errors.As(err, &pe) {
		t.Fatalf("nil dereference: got %v", err)
	}
	mustPut(t, s, msg("a", "INBOX", 1, 1, StateDone))
	if _, err := s.GetMessage(MessageKey{Account: "a", Mailbox: "INBOX", UIDValidity: 1, UID: 1}); err != nil {
		t.Fatalf("store unusable after a recovered panic: %v", err)
	}
}

// TestRepairRefusesLockedFile: Repair refuses a database another holder
// keeps open past repairLockWait, and takes one whose holder lets go
// within it (a command that just closed it, whose lock a forked child
// of any of its threads holds until that child execs).
func TestRepairRefusesLockedFile(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	start := time.Now()
	if _, err := Repair(s.Path()); !errors.Is(err, ErrLocked) {
		t.Fatalf("Repair of an open database: got %v, want ErrLocked", err)
	}
	if waited := time.Since(start); waited < repairLockWait {
		t.Errorf("Repair gave up after %v, want it to wait %v for the lock", waited, repairLockWait)
	}

	released := make(chan error, 1)
	go func() {
		time.Sleep(repairLockWait / 4)
		released <- s.Close()
	}()
	if _, err := Repair(s.Path()); err != nil {
		t.Errorf("Repair of a database let go within its wait: %v", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
}

var _ = time.Second

// TestDamageUnderAnOpenStore damages the file while a store has it open
// (bbolt maps it, so reads see the damage at once, past every check at
// Open): reads return errors matching ErrCorrupt, never a panic or a
// fault, including reads past the end of a file cut short.
func TestDamageUnderAnOpenStore(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"garbage over leaf pages", "truncated"} {
		t.Run(mode, func(t *testing.T) {
			path, _ := corpusDB(t)
			s, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if mode == "truncated" {
				err = f.Truncate(int64(len(data) / 3))
			} else {
				rng := rand.New(rand.NewPCG(9, 9))
				garbage := make([]byte, pageSize)
				for id := range leafPages(data) {
					for i := range garbage {
						garbage[i] = byte(rng.Uint32())
					}
					if _, err = f.WriteAt(garbage, int64(id)*pageSize); err != nil {
						break
					}
				}
			}
			_ = f.Close()
			if err != nil {
				t.Fatal(err)
			}
			var corrupt int
			noPanic(t, "reads on a file damaged underneath", func() {
				for _, err := range typicalReads(s) {
					if errors.Is(err, ErrCorrupt) {
						corrupt++
						if !strings.Contains(err.Error(), "doctor --repair") {
							t.Errorf("error without the way out: %v", err)
						}
					}
				}
			})
			if corrupt == 0 {
				t.Fatal("no read reported the damage")
			}
			t.Logf("%d reads reported ErrCorrupt", corrupt)
		})
	}
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}
