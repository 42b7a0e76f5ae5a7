package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"time"
)

// precheck reads the meta pages of an existing file and checks what bbolt
// would otherwise find by panicking (after taking the file lock and
// mapping the file, which a recovered panic cannot undo): that a meta page
// validates, that the file holds every page the meta page counts, and that
// the root and freelist pages are what the meta page says they are.
//
// It holds a shared lock while it reads (as a bbolt reader would), so that
// a writer in another process cannot reuse pages under it; when the lock
// cannot be had within timeout it returns ErrLocked. lock false is for a caller that already keeps writers from reusing
// pages (Check, inside a read transaction of this process).
//
// walk false skips the page-tree walk; with stampPath set it is skipped
// when the file is as the last whole walk saw it (verifiedStamp, kept at
// stampPath). Check always walks.
func precheck(path string, timeout time.Duration, lock bool, stampPath string, walk bool) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bbolt reports it
	}
	defer func() { _ = f.Close() }()
	if lock {
		if err := lockShared(f, timeout); err != nil {
			if errors.Is(err, ErrLocked) {
				return err
			}
			return nil // no flock here: bbolt reports what matters
		}
	}
	return precheckFile(f, stampPath, walk)
}

// VerifiedSuffix names the file beside the database that records the
// database as the last whole tree walk found it sound: its size,
// modification time, and the meta page's transaction, root and page
// count. The walk reads one header per page (about 35 ms for a 110 MB
// file), which made every read command grow with the file; a command on
// a file nobody has written since (no watcher runs: one that does holds
// the file and serves the commands itself) skips it. Any write changes
// the stamp; damage met later by a read is still an error, never a panic
// (guard).
const VerifiedSuffix = ".verified"

// verifiedStamp is what VerifiedSuffix's file holds for fi at meta txid,
// root and hw.
func verifiedStamp(fi os.FileInfo, txid, root, hw uint64) string {
	return fmt.Sprintf("%d %d %d %d %d\n", fi.Size(), fi.ModTime().UnixNano(), txid, root, hw)
}

// precheckFile checks f; stampPath, when set, is where the verified stamp
// is read and written; walk false skips the tree walk.
func precheckFile(f *os.File, stampPath string, walk bool) error {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	size := fi.Size()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]

	type meta struct {
		ps                       int
		root, freelist, hw, txid uint64
	}
	read := func(off int) (meta, bool) {
		if off+pageHeader+64 > len(head) {
			return meta{}, false
		}
		m := head[off+pageHeader:]
		h := fnv.New64a()
		h.Write(m[:56])
		if binary.LittleEndian.Uint32(m) != boltMagic || binary.LittleEndian.Uint32(m[4:]) != 2 || h.Sum64() != binary.LittleEndian.Uint64(m[56:]) {
			return meta{}, false
		}
		return meta{ps: int(binary.LittleEndian.Uint32(m[8:])), root: le64(m[16:]), freelist: le64(m[32:]), hw: le64(m[40:]), txid: le64(m[48:])}, true
	}
	var best meta
	found := false
	m0, ok0 := read(0)
	if ok0 {
		best, found = m0, true
	}
	ps := 4096
	if ok0 {
		ps = m0.ps
	}
	if m1, ok1 := read(ps); ok1 && (!found || m1.txid > best.txid) {
		best, found = m1, true
	}
	if !found {
		return errors.New("neither meta page is valid")
	}
	if best.ps < 1024 || best.ps > 1<<16 {
		return fmt.Errorf("the meta page gives an impossible page size %d", best.ps)
	}
	if need := int64(best.hw) * int64(best.ps); need > size {
		return fmt.Errorf("the file is %d bytes but holds %d pages of %d bytes: it was cut short", size, best.hw, best.ps)
	}
	page := func(id uint64) ([]byte, error) {
		if id >= best.hw {
			return nil, fmt.Errorf("page %d is past the end (%d pages)", id, best.hw)
		}
		buf := make([]byte, pageHeader)
		if _, err := f.ReadAt(buf, int64(id)*int64(best.ps)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", id, err)
		}
		if le64(buf) != id {
			return nil, fmt.Errorf("page %d says it is page %d", id, le64(buf))
		}
		return buf, nil
	}
	if p, err := page(best.root); err != nil {
		return fmt.Errorf("root: %w", err)
	} else if fl := le16(p[8:]); fl != flagBranch && fl != flagLeaf {
		return fmt.Errorf("root page %d has type %#x", best.root, fl)
	}
	if best.freelist != ^uint64(0) {
		if p, err := page(best.freelist); err != nil {
			return fmt.Errorf("freelist: %w", err)
		} else if fl := le16(p[8:]); fl&0x10 == 0 {
			return fmt.Errorf("freelist page %d has type %#x", best.freelist, fl)
		}
	}
	if !walk {
		return nil
	}
	stamp := verifiedStamp(fi, best.txid, best.root, best.hw)
	if stampPath != "" {
		if b, err := os.ReadFile(stampPath); err == nil && string(b) == stamp {
			return nil
		}
	}
	if err := verifyTree(f, best.root, best.hw, best.ps); err != nil {
		if stampPath != "" {
			_ = os.Remove(stampPath)
		}
		return err
	}
	if stampPath != "" {
		writeStamp(stampPath, stamp)
	}
	return nil
}

// writeStamp records stamp at path, by rename so that a reader never sees
// half of it. It is an optimisation: a failure (a read-only directory) is
// ignored, and the next open walks the tree again.
func writeStamp(path, stamp string) {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(stamp), 0o600); err != nil {
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
	}
}

// verifyTree walks the page tree from root the way bbolt would, reading
// the header of every page (and the whole of branch pages, and of the leaf
// pages that hold nested buckets): a page that does not say it is itself,
// has an unknown type, or points past the end is damage that a read would
// otherwise meet as a panic, or not at all for a command that never
// touches it. It costs one small read per page (about 0.1 s for a 300 MB
// file in the page cache) and maps nothing.
func verifyTree(f *os.File, root, hw uint64, ps int) error {
	seen := make(map[uint64]bool)
	hdr := make([]byte, pageHeader)
	// kind: 0 the root tree, 1 the contacts tree (its leaves hold nested
	// buckets), 2 any other bucket.
	var visit func(id uint64, kind, depth int) error
	visit = func(id uint64, kind, depth int) error {
		if id < 2 || id >= hw {
			return fmt.Errorf("a page points to page %d, outside the file's %d pages", id, hw)
		}
		if seen[id] {
			return fmt.Errorf("page %d is reached twice", id)
		}
		if depth > maxDepth {
			return fmt.Errorf("the tree is deeper than %d at page %d", maxDepth, id)
		}
		seen[id] = true
		if _, err := f.ReadAt(hdr, int64(id)*int64(ps)); err != nil {
			return fmt.Errorf("read page %d: %w", id, err)
		}
		if got := le64(hdr); got != id {
			return fmt.Errorf("page %d says it is page %d", id, got)
		}
		flags, count, overflow := le16(hdr[8:]), le16(hdr[10:]), uint64(le32(hdr[12:]))
		if id+overflow >= hw {
			return fmt.Errorf("page %d runs past the end of the file", id)
		}
		if flags != flagBranch && flags != flagLeaf {
			return fmt.Errorf("page %d has type %#x, not a branch or leaf", id, flags)
		}
		size := int(1+overflow) * ps
		if pageHeader+count*leafElemSize > size {
			return fmt.Errorf("page %d claims %d elements", id, count)
		}
		if flags == flagLeaf && kind == 2 {
			return nil
		}
		p := make([]byte, size)
		if _, err := f.ReadAt(p, int64(id)*int64(ps)); err != nil {
			return fmt.Errorf("read page %d: %w", id, err)
		}
		for i := range count {
			e := pageHeader + i*leafElemSize
			if flags == flagBranch {
				if err := visit(le64(p[e+8:]), kind, depth+1); err != nil {
					return err
				}
				continue
			}
			lf, pos, ksize, vsize := le32(p[e:]), le32(p[e+4:]), le32(p[e+8:]), le32(p[e+12:])
			if e+pos+ksize+vsize > size {
				return fmt.Errorf("page %d: element %d is out of range", id, i)
			}
			if lf&leafIsBucket == 0 || vsize < 16 {
				continue
			}
			sub := le64(p[e+pos+ksize:])
			if sub == 0 {
				continue // inline bucket: its page is inside this one
			}
			child := 2
			if kind == 0 && string(p[e+pos:e+pos+ksize]) == string(bContacts) {
				child = 1
			}
			if err := visit(sub, child, 0); err != nil {
				return err
			}
		}
		return nil
	}
	return visit(root, 0, 0)
}
