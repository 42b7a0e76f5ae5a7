package initcfg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to path with mode 0600, creating the parent directory
// with mode 0700. Without force it fails with fs.ErrExist when the file
// exists (O_EXCL, so a file created meanwhile is not clobbered); with
// force it replaces the file atomically (the target of a symlink): a temp
// file in the same directory, fsync, rename.
func Write(path string, data []byte, force bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create config dir: %w", err)
	}
	if !force {
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, werr := fh.Write(data)
		cerr := fh.Close()
		if err := errors.Join(werr, cerr); err != nil {
			_ = os.Remove(path) // the file is ours (O_EXCL) and incomplete
			return err
		}
		return os.Chmod(path, 0o600)
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mailagent-init-*.toml")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // no-op after the rename
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
