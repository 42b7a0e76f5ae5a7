package store

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"
)

// The stored form of a trace's snapshots. Every message writes one, so
// its cost is paid in triage's throughput (BENCHMARKS.md §2):
//
//	snapMagic, then S2 (klauspost/compress: a faster Snappy; its "better"
//	mode) of:
//	uvarint(len) started (time.MarshalBinary), uvarint(steps),
//	and per step: 0 (none), or its flags (stepPresent, and stepInputJSON
//	and stepOutputJSON for a side that is compact JSON), then
//	uvarint(len) input, uvarint(len) output.
//
// A hand-written framing rather than JSON: the snapshot texts are mostly
// JSON themselves, and quoting them again doubled the bytes to escape,
// compress and unquote. S2 rather than deflate or zstd: deflate at
// BestSpeed took 0.8 s of CPU over the corpus's 6,046 records and zstd's
// fastest level 0.4 s, where S2 takes a tenth of that, for a snapshot
// bucket about a quarter larger than deflate's (BENCHMARKS.md §2, §16). Records written before
// (deflate of JSON, snapshotRecord's tags) are still read. 0xFF cannot
// begin a deflate stream (its block type bits would be 11, reserved), so
// the two forms never meet.
var snapMagic = []byte{0xFF, 'S', 1}

// A stored step's flags.
const (
	stepPresent    = 1
	stepInputJSON  = 2
	stepOutputJSON = 4
)

// maxSnapshotRecord bounds what one stored record may decompress to (a
// damaged or hostile file must not exhaust memory).
const maxSnapshotRecord = 64 << 20

// encodeSnapshots is the stored form of rec.
func encodeSnapshots(rec *snapshotRecord) ([]byte, error) {
	n := 32
	for _, st := range rec.Steps {
		if st != nil {
			n += len(st.Input) + len(st.Output) + 2*binary.MaxVarintLen32 + 1
		}
	}
	raw := make([]byte, 0, n)
	tm, err := rec.Started.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("snapshot time: %w", err)
	}
	raw = binary.AppendUvarint(raw, uint64(len(tm)))
	raw = append(raw, tm...)
	raw = binary.AppendUvarint(raw, uint64(len(rec.Steps)))
	for _, st := range rec.Steps {
		if st == nil {
			raw = append(raw, 0)
			continue
		}
		flags := byte(stepPresent)
		if st.InputJSON {
			flags |= stepInputJSON
		}
		if st.OutputJSON {
			flags |= stepOutputJSON
		}
		raw = append(raw, flags)
		raw = binary.AppendUvarint(raw, uint64(len(st.Input)))
		raw = append(raw, st.Input...)
		raw = binary.AppendUvarint(raw, uint64(len(st.Output)))
		raw = append(raw, st.Output...)
	}
	if len(raw) > maxSnapshotRecord {
		return nil, fmt.Errorf("snapshot record of %d bytes: more than %d", len(raw), maxSnapshotRecord)
	}
	z := make([]byte, len(snapMagic)+s2.MaxEncodedLen(len(raw)))
	copy(z, snapMagic)
	return z[:len(snapMagic)+len(s2.EncodeBetter(z[len(snapMagic):], raw))], nil
}

// errSnapshotDamaged is returned for a stored record that does not decode.
var errSnapshotDamaged = errors.New("damaged snapshot record")

// snapBoundsOff makes decodeSnapshots trust the framing's lengths and
// step count: it slices without checking them (or that they are there at
// all) against the bytes left.
// It exists only for the positive control of TestSnapshotDecodeDamage
// (never in parallel, restored before it returns); nothing in the
// product sets it.
var snapBoundsOff atomic.Bool

// decodeSnapshots reads a stored record, of either form.
func decodeSnapshots(v []byte) (*snapshotRecord, error) {
	if !bytes.HasPrefix(v, snapMagic) {
		return decodeSnapshotsV0(v)
	}
	n, err := s2.DecodedLen(v[len(snapMagic):])
	if err == nil && n > maxSnapshotRecord {
		err = fmt.Errorf("%d bytes: more than %d", n, maxSnapshotRecord)
	}
	if err == nil {
		// The block past its length header (1 to 5 bytes: DecodedLen
		// read them) is walked before Decode allocates n bytes for it.
		if _, k := binary.Uvarint(v[len(snapMagic):]); !s2Fits(v[len(snapMagic)+k:], n) {
			err = s2.ErrCorrupt
		}
	}
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	raw, err := s2.Decode(nil, v[len(snapMagic):])
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	checked := !snapBoundsOff.Load()
	tn, k := binary.Uvarint(raw)
	if checked && (k <= 0 || tn > uint64(len(raw)-k)) {
		return nil, errSnapshotDamaged
	}
	var started time.Time
	if err := started.UnmarshalBinary(raw[k : k+int(tn)]); err != nil {
		return nil, errSnapshotDamaged
	}
	raw = raw[k+int(tn):]
	steps, k := binary.Uvarint(raw)
	if checked && (k <= 0 || steps > uint64(len(raw))) { // each step takes at least a byte
		return nil, errSnapshotDamaged
	}
	raw = raw[k:]
	capSteps := steps
	if !checked {
		capSteps = 0 // a count trusted as written could ask for terabytes: a crash no test recovers from
	}
	rec := &snapshotRecord{Started: started, Steps: make([]*StepSnapshot, 0, capSteps)}
	text := func() (string, bool) {
		n, k := binary.Uvarint(raw)
		if checked && (k <= 0 || n > uint64(len(raw)-k)) {
			return "", false
		}
		s := string(raw[k : k+int(n)])
		raw = raw[k+int(n):]
		return s, true
	}
	for range steps {
		if checked && len(raw) == 0 {
			return nil, errSnapshotDamaged
		}
		has := raw[0]
		raw = raw[1:]
		if has == 0 {
			rec.Steps = append(rec.Steps, nil)
			continue
		}
		in, ok1 := text()
		out, ok2 := text()
		if has&stepPresent == 0 || has&^(stepPresent|stepInputJSON|stepOutputJSON) != 0 || !ok1 || !ok2 {
			return nil, errSnapshotDamaged
		}
		rec.Steps = append(rec.Steps, &StepSnapshot{Input: in, Output: out,
			InputJSON: has&stepInputJSON != 0, OutputJSON: has&stepOutputJSON != 0})
	}
	if len(raw) != 0 {
		return nil, errSnapshotDamaged
	}
	return rec, nil
}

// s2Fits reports whether block, an S2 block past its length header, can
// decode to exactly n bytes: a walk over its elements as S2's decoder
// parses them (literals, copies, repeats of the last offset), with the
// decoder's checks, writing nothing. s2.Decode allocates the n bytes the
// header claims before it reads the block, and a damaged record can claim
// up to maxSnapshotRecord (64 MB, for a record of a few bytes); the walk
// refuses such a record first, in a pass over the bytes it has. It is
// false only for a block s2.Decode refuses too.
func s2Fits(block []byte, n int) bool {
	d, s, offset := 0, 0, 0
	// need advances s past an element's header of k bytes; false when the
	// block ends first.
	need := func(k int) bool {
		s += k
		return s <= len(block)
	}
	for s < len(block) {
		tag := block[s]
		var length int
		switch tag & 0x03 {
		case 0: // a literal: its length in the tag or the 1-4 bytes after it
			x := uint32(tag >> 2)
			switch x {
			case 60:
				if !need(2) {
					return false
				}
				x = uint32(block[s-1])
			case 61:
				if !need(3) {
					return false
				}
				x = uint32(block[s-2]) | uint32(block[s-1])<<8
			case 62:
				if !need(4) {
					return false
				}
				x = uint32(block[s-3]) | uint32(block[s-2])<<8 | uint32(block[s-1])<<16
			case 63:
				if !need(5) {
					return false
				}
				x = binary.LittleEndian.Uint32(block[s-4 : s])
			default:
				s++
			}
			length = int(x) + 1
			if length <= 0 || length > n-d || length > len(block)-s {
				return false
			}
			d += length
			s += length
			continue
		case 1: // a copy with a 1-byte offset, or (offset 0) a repeat of the last
			if !need(2) {
				return false
			}
			length = int(block[s-2]) >> 2 & 0x7
			if toffset := int(uint32(block[s-2])&0xe0<<3 | uint32(block[s-1])); toffset != 0 {
				offset = toffset
			} else {
				switch length {
				case 5:
					if !need(1) {
						return false
					}
					length = int(block[s-1]) + 4
				case 6:
					if !need(2) {
						return false
					}
					length = int(uint32(block[s-2])|uint32(block[s-1])<<8) + 1<<8
				case 7:
					if !need(3) {
						return false
					}
					length = int(uint32(block[s-3])|uint32(block[s-2])<<8|uint32(block[s-1])<<16) + 1<<16
				}
			}
			length += 4
		case 2: // a copy with a 2-byte offset
			if !need(3) {
				return false
			}
			length = 1 + int(block[s-3])>>2
			offset = int(uint32(block[s-2]) | uint32(block[s-1])<<8)
		default: // a copy with a 4-byte offset
			if !need(5) {
				return false
			}
			length = 1 + int(block[s-5])>>2
			offset = int(binary.LittleEndian.Uint32(block[s-4 : s]))
		}
		if offset <= 0 || d < offset || length > n-d {
			return false
		}
		d += length
	}
	return d == n
}

// decodeSnapshotsV0 reads a record written before snapMagic: deflate of
// JSON.
func decodeSnapshotsV0(v []byte) (*snapshotRecord, error) {
	r := flate.NewReader(bytes.NewReader(v))
	defer func() { _ = r.Close() }()
	data, err := io.ReadAll(io.LimitReader(r, maxSnapshotRecord))
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	var rec snapshotRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return &rec, nil
}
