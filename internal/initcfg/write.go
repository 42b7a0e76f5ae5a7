package initcfg

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Write writes data to path with mode 0600, creating the parent directory
// with mode 0700. Without force it fails with fs.ErrExist when the file
// exists (O_EXCL, so a file created meanwhile is not clobbered); with
// force it replaces the file atomically (the target of a symlink): a temp
// file in the same directory, fsync, rename; a file with other content is
// first copied to a backup beside it (its name is returned), so that
// --force never loses a hand-edited configuration.
func Write(path string, data []byte, force bool) (backup string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create config dir: %w", err)
	}
	if !force {
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", err
		}
		_, werr := fh.Write(data)
		cerr := fh.Close()
		if err := errors.Join(werr, cerr); err != nil {
			_ = os.Remove(path) // the file is ours (O_EXCL) and incomplete
			return "", err
		}
		return "", os.Chmod(path, 0o600)
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if old, err := os.ReadFile(path); err == nil && !bytes.Equal(old, data) {
		backup = path + ".bak-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.WriteFile(backup, old, 0o600); err != nil {
			return "", fmt.Errorf("back up %s before replacing it: %w", path, err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mailagent-init-*.toml")
	if err != nil {
		return backup, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // no-op after the rename
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return backup, err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return backup, err
	}
	return backup, os.Rename(tmp.Name(), path)
}
