package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// RepoRoot returns the directory holding go.mod, found by walking up from the
// test's working directory. It fails the test when there is none.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := FindRepoRoot()
	if err != nil {
		t.Fatalf("e2e: %v", err)
	}
	return root
}

// FindRepoRoot walks up from the working directory to the directory holding
// go.mod (for code that has no testing.TB: TestMain, benchmark tools).
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// CorpusDir returns the shared mail corpora directory, ../shared/corpora
// relative to the repository root, and skips the test when it is absent (a
// user's clone of the project does not have it).
func CorpusDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "..", "shared", "corpora")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("mail corpora not found at %s: this test needs the project's shared corpora checkout", dir)
	}
	return dir
}

// StripMboxFrom removes a leading mbox envelope line ("From sender date")
// from raw, as found at the top of every SpamAssassin corpus file. Input
// without one is returned unchanged. The result shares raw's memory.
func StripMboxFrom(raw []byte) []byte {
	if !bytes.HasPrefix(raw, []byte("From ")) {
		return raw
	}
	i := bytes.IndexByte(raw, '\n')
	if i < 0 {
		return raw[:0]
	}
	return raw[i+1:]
}

// CRLF returns raw with every bare LF turned into CRLF, the line ending IMAP
// APPEND and SMTP DATA expect. Existing CRLF pairs are kept.
func CRLF(raw []byte) []byte {
	n := bytes.Count(raw, []byte("\n")) - bytes.Count(raw, []byte("\r\n"))
	if n == 0 {
		return raw
	}
	out := make([]byte, 0, len(raw)+n)
	for i, b := range raw {
		if b == '\n' && (i == 0 || raw[i-1] != '\r') {
			out = append(out, '\r')
		}
		out = append(out, b)
	}
	return out
}
