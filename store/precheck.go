package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// precheck reads the meta pages of an existing file and checks what bbolt
// would otherwise find by panicking (after taking the file lock and
// mapping the file, which a recovered panic cannot undo): that a meta page
// validates, that the file holds every page the meta page counts, and that
// the root and freelist pages are what the meta page says they are.
func precheck(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bbolt reports it
	}
	defer f.Close()
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
	return nil
}
