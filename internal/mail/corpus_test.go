package mail

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
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

func readCorpus(t testing.TB, files []string) [][]byte {
	t.Helper()
	out := make([][]byte, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		out = append(out, b)
	}
	return out
}

var (
	hamDirs  = []string{"spamassassin/easy-ham-1", "spamassassin/easy-ham-2", "spamassassin/hard-ham-1"}
	spamDirs = []string{"spamassassin/spam-1", "spamassassin/spam-2"}
	edgeDirs = []string{"mime-edge"}
)

// corpus is every message of the corpus folders the tests name (ham,
// spam, mime-edge) read and parsed once for the package: four tests
// parsed them again each, most of their time. Tests only read it.
var corpus struct {
	once   sync.Once
	byPath map[string]corpusMsg
	err    error
}

// corpusMsg is one corpus file: its bytes and Parse's result.
type corpusMsg struct {
	raw []byte
	m   *Message
}

// parsedFiles returns files (from corpusFiles) read and parsed, in order;
// files outside the shared folders are parsed for the caller alone.
func parsedFiles(t testing.TB, files []string) []corpusMsg {
	t.Helper()
	all := corpusFiles(t, append(append(append([]string{}, hamDirs...), spamDirs...), edgeDirs...)...)
	corpus.once.Do(func() {
		corpus.byPath = make(map[string]corpusMsg, len(all))
		for _, f := range all {
			b, err := os.ReadFile(f)
			if err != nil {
				corpus.err = fmt.Errorf("read %s: %w", f, err)
				return
			}
			corpus.byPath[f] = corpusMsg{raw: b, m: Parse(b)}
		}
	})
	if corpus.err != nil {
		t.Fatal(corpus.err)
	}
	out := make([]corpusMsg, len(files))
	for i, f := range files {
		cm, ok := corpus.byPath[f]
		if !ok {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatalf("read %s: %v", f, err)
			}
			cm = corpusMsg{raw: b, m: Parse(b)}
		}
		out[i] = cm
	}
	return out
}

// hamInputs returns the ThreadInput of every ham message, in corpus file
// order, or skips as corpusFiles does.
func hamInputs(t testing.TB) []ThreadInput {
	t.Helper()
	msgs := parsedFiles(t, corpusFiles(t, hamDirs...))
	out := make([]ThreadInput, len(msgs))
	for i, cm := range msgs {
		out[i] = InputOf(cm.m)
	}
	return out
}
