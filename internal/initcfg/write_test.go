package initcfg

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// leftovers lists the temp files Write may have left in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".mailagent-init-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWriteNew(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "mailagent")
	path := filepath.Join(dir, "config.toml")
	if _, err := Write(path, []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != "one" {
		t.Errorf("content %q", got)
	}
	if m := mode(t, path); m != 0o600 {
		t.Errorf("file mode %v, want 0600", m)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("dir mode %v, want 0700", m)
	}
}

// TestWriteRefusesExisting: without force an existing file is an
// fs.ErrExist and stays as it was.
func TestWriteRefusesExisting(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Write(path, []byte("new"), false)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("got %v, want fs.ErrExist", err)
	}
	if got := read(t, path); got != "mine" {
		t.Errorf("the existing file changed: %q", got)
	}
}

// TestWriteForce replaces the file atomically with mode 0600, through a
// symlink (the link stays, its target changes), leaving no temp file.
func TestWriteForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "real.toml")
	link := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	backup, err := Write(link, []byte("new"), true)
	if err != nil {
		t.Fatal(err)
	}
	// The replaced (hand-edited) file is kept beside its target.
	if filepath.Dir(backup) != dir || !strings.HasPrefix(filepath.Base(backup), "real.toml.bak-") || read(t, backup) != "old" || mode(t, backup) != 0o600 {
		t.Errorf("backup %q: want real.toml.bak-… holding the old content, mode 0600", backup)
	}
	// Writing the same content again needs no backup.
	if again, err := Write(link, []byte("new"), true); err != nil || again != "" {
		t.Errorf("rewriting the same content: backup %q, err %v; want none", again, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi, err)
	}
	if got := read(t, target); got != "new" {
		t.Errorf("target content %q", got)
	}
	if m := mode(t, target); m != 0o600 {
		t.Errorf("mode %v, want 0600", m)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temp files left: %v", l)
	}
}

// TestWriteForceFailureKeepsOld: when the new file cannot be put in place
// the old one is untouched and no temp file is left.
func TestWriteForceFailureKeepsOld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if err := os.Mkdir(path, 0o700); err != nil { // rename onto a directory fails
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(path, []byte("new"), true); err == nil {
		t.Fatal("Write onto a non-empty directory succeeded")
	}
	if got := read(t, filepath.Join(path, "keep")); got != "x" {
		t.Errorf("old content changed: %q", got)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("temp files left: %v", l)
	}
}
