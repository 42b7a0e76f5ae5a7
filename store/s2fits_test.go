package store

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
)

// s2Block splits an S2 block into the length its header claims and the
// elements after the header; ok is false when the header does not read.
func s2Block(z []byte) (n int, elems []byte, ok bool) {
	n, err := s2.DecodedLen(z)
	if err != nil {
		return 0, nil, false
	}
	_, k := binary.Uvarint(z)
	return n, z[k:], true
}

// TestS2FitsAgreesWithDecode: s2Fits, the walk decodeSnapshots makes
// before s2.Decode allocates what a block's header claims, says yes to
// exactly the blocks s2.Decode decodes: every encoding (S2's three
// modes) of texts that take each kind of element (literals with the
// length in the tag and in 1, 2 or 3 bytes after it, copies with 1, 2 and
// 4 byte offsets, repeats with each length form), the same blocks with a
// header claiming a byte more or less, and their damage (every
// truncation, bytes changed at random, random bytes behind a header).
// Damage whose header claims more than 64 KiB is not decoded (that
// allocation is what the walk saves); the walk must refuse it, and some
// of it is (the positive control: the walk refuses a block claiming
// megabytes).
func TestS2FitsAgreesWithDecode(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	random := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return string(b)
	}
	far := random(70_000) // a copy of it lies more than 65,535 bytes back
	rec, err := encodeSnapshots(&snapshotRecord{Started: time.Unix(1_800_000_000, 0), Steps: []*StepSnapshot{
		{Input: strings.Repeat(`{"from": "ada@example.test", "subject": "Re: lunch"}`+"\n", 100), Output: "ok", InputJSON: true},
		nil, {Input: random(300), Output: strings.Repeat("z", SnapshotCap)}}})
	if err != nil {
		t.Fatal(err)
	}
	recRaw, err := s2.Decode(nil, rec[len(snapMagic):])
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"", "a", random(59), random(60), random(61), random(255), random(300), random(70_000),
		strings.Repeat("z", 100), strings.Repeat("z", 300), strings.Repeat("z", 70_000), strings.Repeat("abc", 30_000),
		far + random(10) + far, "the engine notes Ada meeting Tuesday " + random(40) + " the engine notes Ada meeting Tuesday",
		string(recRaw)}
	encoders := []func(dst, src []byte) []byte{s2.Encode, s2.EncodeBetter, s2.EncodeBest}

	decodes := func(z []byte) bool {
		_, err := s2.Decode(nil, z)
		return err == nil
	}
	agree := func(what string, z []byte) {
		t.Helper()
		n, elems, ok := s2Block(z)
		if !ok {
			return
		}
		fits := s2Fits(elems, n)
		if n > 64<<10 && !fits {
			return
		}
		if dec := decodes(z); fits != dec {
			t.Fatalf("%s (% x…): s2Fits %v, s2.Decode decodes %v", what, z[:min(len(z), 24)], fits, dec)
		}
	}

	var small [][]byte
	for i, text := range texts {
		for e, enc := range encoders {
			z := enc(nil, []byte(text))
			n, elems, ok := s2Block(z)
			if !ok || n != len(text) {
				t.Fatalf("text %d, encoder %d: header %d, %v; want %d", i, e, n, ok, len(text))
			}
			if !s2Fits(elems, n) {
				t.Fatalf("text %d (%d bytes), encoder %d: s2Fits refuses a block S2 wrote", i, len(text), e)
			}
			if s2Fits(elems, n+1) || (n > 0 && s2Fits(elems, n-1)) {
				t.Fatalf("text %d, encoder %d: s2Fits takes the block for a length other than its own", i, e)
			}
			for _, m := range []int{n + 1, n - 1} {
				if m >= 0 {
					agree("a header off by one", append(binary.AppendUvarint(nil, uint64(m)), elems...))
				}
			}
			if len(z) < 2000 {
				small = append(small, z)
			}
		}
	}

	for _, z := range small {
		for i := range len(z) {
			agree("truncated", z[:i])
		}
		for range 200 {
			v := bytes.Clone(z)
			for range 1 + rng.IntN(3) {
				v[rng.IntN(len(v))] = byte(rng.Uint32())
			}
			agree("bytes changed", v)
		}
	}
	refused := 0
	for range 3000 {
		z := binary.AppendUvarint(nil, uint64(rng.IntN(1<<(1+rng.IntN(26)))))
		z = append(z, random(rng.IntN(64))...)
		if n, elems, _ := s2Block(z); n > 64<<10 && !s2Fits(elems, n) {
			refused++
		}
		agree("random bytes behind a header", z)
	}

	// The control: megabytes claimed in a few bytes are refused unread.
	z := append(binary.AppendUvarint(nil, 50<<20), 0x00, 'x', 0x01, 0x00)
	if n, elems, _ := s2Block(z); s2Fits(elems, n) {
		t.Fatal("s2Fits takes 4 bytes for 50 MB")
	}
	if refused == 0 {
		t.Fatal("no random block claiming more than 64 KiB was refused by the walk")
	}
	t.Logf("%d random blocks claiming more than 64 KiB refused by the walk", refused)
}
