package mail

import (
	"os"
	"path/filepath"
	"sort"
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
