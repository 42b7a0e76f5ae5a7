package mail

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/mailagent/mailagent/internal/rig/testsize"
)

// corpusDir returns /work/shared/corpora found relative to the repo root
// (the directory holding go.mod, then ../shared/corpora), or
// $MAILAGENT_CORPORA when set (a git worktree sits elsewhere), or skips.
func corpusDir(t testing.TB) string {
	t.Helper()
	if c := os.Getenv("MAILAGENT_CORPORA"); c != "" {
		return c
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("repo root (go.mod) not found; corpus tests skipped")
		}
		dir = parent
	}
	c := filepath.Join(dir, "..", "shared", "corpora")
	if _, err := os.Stat(c); err != nil {
		t.Skipf("mail corpus not found at %s; corpus tests skipped", c)
	}
	return c
}

// corpusFiles returns the message files under the named corpus subfolders,
// sorted, skipping licence files.
func corpusFiles(t testing.TB, sub ...string) []string {
	t.Helper()
	root := corpusDir(t)
	var files []string
	for _, s := range sub {
		err := filepath.WalkDir(filepath.Join(root, s), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			switch d.Name() {
			case "LICENSE", "MIT-LICENSE", "SOURCES.md":
				return nil
			}
			files = append(files, p)
			return nil
		})
		if err != nil {
			t.Skipf("corpus folder %s unreadable: %v", s, err)
		}
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Skipf("no corpus files under %v", sub)
	}
	return files
}

// readCorpus returns the bytes of files, in order, each file read once for
// the package (rawFile). The slices are shared: tests only read them.
func readCorpus(t testing.TB, files []string) [][]byte {
	t.Helper()
	out := make([][]byte, 0, len(files))
	for _, f := range files {
		b, err := rawFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// raws holds the bytes of every corpus file a test read, by path, read
// once for the package (five tests read the ham, four the rest).
var raws sync.Map // path → func() ([]byte, error)

// rawFile returns the bytes of the corpus file f, read once for the
// package. Their capacity is their length, so that an append to a slice
// of them (a header split from a body) cannot write into them.
func rawFile(f string) ([]byte, error) {
	load, _ := raws.LoadOrStore(f, sync.OnceValues(func() ([]byte, error) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		return b[:len(b):len(b)], nil
	}))
	return load.(func() ([]byte, error))()
}

var (
	hamDirs  = []string{"spamassassin/easy-ham-1", "spamassassin/easy-ham-2", "spamassassin/hard-ham-1"}
	spamDirs = []string{"spamassassin/spam-1", "spamassassin/spam-2"}
	edgeDirs = []string{"mime-edge"}
)

// corpus holds every corpus file a test asked for, read and parsed once
// for the package (four tests parsed them again each, most of their time),
// by path. Tests only read it.
var corpus sync.Map // path → func() (corpusMsg, error)

// corpusMsg is one corpus file: its bytes and Parse's result.
type corpusMsg struct {
	raw []byte
	m   *Message
}

// parsedFiles returns files (from corpusFiles) read and parsed, in order,
// each file parsed once for the package whichever test asks first.
func parsedFiles(t testing.TB, files []string) []corpusMsg {
	t.Helper()
	out := make([]corpusMsg, len(files))
	for i, f := range files {
		load, _ := corpus.LoadOrStore(f, sync.OnceValues(func() (corpusMsg, error) {
			b, err := rawFile(f)
			if err != nil {
				return corpusMsg{}, err
			}
			return corpusMsg{raw: b, m: Parse(b)}, nil
		}))
		cm, err := load.(func() (corpusMsg, error))()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = cm
	}
	return out
}

// sampled is files as a corpus walk reads them: all of them without the
// race detector; with it, every mime-edge file (the hostile shapes, few)
// and the SpamAssassin messages whose name hashes to one in
// testsize.Divisor, the same files whichever folders a test lists. CI
// runs the whole corpus without -race on every submission.
func sampled(files []string) []string {
	if !testsize.Race {
		return files
	}
	var out []string
	for _, f := range files {
		h := fnv.New32a()
		h.Write([]byte(filepath.Base(f)))
		if !strings.Contains(filepath.ToSlash(f), "/spamassassin/") || h.Sum32()%testsize.Divisor == 0 {
			out = append(out, f)
		}
	}
	return out
}

// hamInputs returns the ThreadInput of every ham message, in corpus file
// order, or skips as corpusFiles does. It reads them with
// HeaderThreadInput, the threading fields alone (what triage's
// prethreading reads): the threader tests need no body, and
// TestHeaderThreadInputMatchesParse holds it equal to InputOf(Parse(...))
// on every corpus message.
//
// The inputs are read once for the package (two tests walk them); the
// slice and its inputs are shared: callers only read them.
func hamInputs(t testing.TB) []ThreadInput {
	t.Helper()
	files := corpusFiles(t, hamDirs...)
	hamOnce.Do(func() {
		hamIns = make([]ThreadInput, len(files))
		for i, f := range files {
			raw, err := rawFile(f)
			if err != nil {
				hamErr = err
				return
			}
			hamIns[i], _ = HeaderThreadInput(raw)
		}
	})
	if hamErr != nil {
		t.Fatal(hamErr)
	}
	return hamIns
}

var (
	hamOnce sync.Once
	hamIns  []ThreadInput
	hamErr  error
)
