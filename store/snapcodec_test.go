package store

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	bolt "go.etcd.io/bbolt"
)

// TestSnapshotCodecRoundTrip: what is encoded decodes to the same steps,
// holes, empty and binary-looking texts included, and the record is
// smaller than its texts.
func TestSnapshotCodecRoundTrip(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 11, 27, 9, 30, 0, 123456789, time.FixedZone("x", 3600))
	rec := &snapshotRecord{Started: started, Steps: []*StepSnapshot{
		{Input: strings.Repeat(`{"from": "ada@example.test", "subject": "Re: lunch"}`+"\n", 100), Output: "ok", InputJSON: true},
		nil,
		{Input: "", Output: ""},
		{Input: "\x00\xff\x01 ünïcode \u2028", Output: strings.Repeat("z", SnapshotCap), OutputJSON: true},
		nil,
	}}
	z, err := encodeSnapshots(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(z, snapMagic) {
		t.Fatalf("record does not start with the format mark: % x", z[:4])
	}
	got, err := decodeSnapshots(z)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Started.Equal(started) || len(got.Steps) != len(rec.Steps) {
		t.Fatalf("started %v steps %d, want %v and %d", got.Started, len(got.Steps), started, len(rec.Steps))
	}
	for i := range rec.Steps {
		switch w, g := rec.Steps[i], got.Steps[i]; {
		case w == nil && g != nil, w != nil && g == nil:
			t.Errorf("step %d: got %v, want %v", i, g, w)
		case w != nil && *w != *g:
			t.Errorf("step %d: got %q/%q", i, g.Input, g.Output)
		}
	}
	if raw := len(rec.Steps[0].Input) + len(rec.Steps[3].Output); len(z) > raw/4 {
		t.Errorf("record %d bytes for %d bytes of repetitive text: not compressed", len(z), raw)
	}
}

// TestSnapshotsWrittenBeforeStillRead: a record in the earlier form
// (deflate of JSON) in an existing database still loads.
func TestSnapshotsWrittenBeforeStillRead(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	if err := s.PutTrace(snapTrace("tr_old", clk.Now(), Step{Name: "parse"}, Step{Name: "classify"})); err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal(snapshotRecord{Started: clk.Now(), Steps: []*StepSnapshot{nil, {Input: "prompt vars", Output: "raw answer"}}})
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.BestCompression)
	_, _ = w.Write(old)
	_ = w.Close()
	if err := s.update(func(tx *bolt.Tx) error { return tx.Bucket(bSnapshots).Put([]byte("tr_old"), z.Bytes()) }); err != nil {
		t.Fatal(err)
	}
	tr, err := s.GetTrace("tr_old")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LoadSnapshots(tr); err != nil {
		t.Fatal(err)
	}
	if tr.Steps[0].Snapshot != nil || tr.Steps[1].Snapshot == nil || tr.Steps[1].Snapshot.Output != "raw answer" {
		t.Fatalf("old record read as %+v / %+v", tr.Steps[0].Snapshot, tr.Steps[1].Snapshot)
	}
	// A step appended to it is merged and written in the new form.
	tr.Steps = append(tr.Steps, Step{Name: "decide", Snapshot: &StepSnapshot{Input: "gates", Output: "queue"}})
	if err := s.PutTrace(tr); err != nil {
		t.Fatal(err)
	}
	tr2, _ := s.GetTrace("tr_old")
	if err := s.LoadSnapshots(tr2); err != nil || tr2.Steps[1].Snapshot == nil || tr2.Steps[2].Snapshot == nil ||
		tr2.Steps[1].Snapshot.Input != "prompt vars" || tr2.Steps[2].Snapshot.Output != "queue" {
		t.Fatalf("merged record: %v %+v", err, tr2.Steps)
	}
}

// snapDamage is the damage TestSnapshotDecodeDamage tries, in two sets.
// stored is the stored form damaged: every truncation, random byte
// changes, random bytes behind the format mark; S2's decoder refuses
// much of it before the framing is read. framing is the framing damaged
// under well-formed compression, so that all of it reaches the framing's
// bounds checks: every truncation of the record's framing, and
// a framing that claims 200 steps in no bytes; framingLen is the length
// of each framing before compression. storedCuts is how many of stored
// are truncations (the first ones).
func snapDamage(t *testing.T) (stored, framing [][]byte, framingLen []int, storedCuts int) {
	t.Helper()
	rec := &snapshotRecord{Started: time.Unix(1_800_000_000, 0), Steps: []*StepSnapshot{{Input: "in", Output: "out"}, nil, {Input: "x", Output: "y"}}}
	z, err := encodeSnapshots(rec)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(z) {
		stored = append(stored, z[:n])
	}
	storedCuts = len(stored)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		v := bytes.Clone(z)
		for range 1 + rng.IntN(3) {
			v[rng.IntN(len(v))] = byte(rng.IntN(256))
		}
		stored = append(stored, v)
		junk := make([]byte, rng.IntN(64))
		for i := range junk {
			junk[i] = byte(rng.IntN(256))
		}
		stored = append(stored, append(bytes.Clone(snapMagic), junk...))
	}
	raw, err := s2.Decode(nil, z[len(snapMagic):])
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(raw) {
		framing = append(framing, append(bytes.Clone(snapMagic), s2.Encode(nil, raw[:n])...))
		framingLen = append(framingLen, n)
	}
	// Well-formed compression of a framing that lies about its steps.
	lie := []byte{0x0f, 0, 200}
	framing = append(framing, append(bytes.Clone(snapMagic), s2.Encode(nil, lie)...))
	framingLen = append(framingLen, len(lie))
	return stored, framing, framingLen, storedCuts
}

// decodeDamaged decodes v and reports the panic it caused (recovered: a
// panic is what the damage is after), or its error.
func decodeDamaged(v []byte) (panicked any, err error) {
	defer func() { panicked = recover() }()
	_, err = decodeSnapshots(v)
	return nil, err
}

// TestSnapshotDecodeDamage: every truncation and random byte changes of a
// record, and random bytes behind the format mark, give an error or a
// record, never a panic; every truncation of the framing under
// well-formed compression, and a record claiming more steps than it
// holds, is an error. A robustness test: damaged or hostile store data.
// Positive control: TestSnapshotDecodeDamageLandsWithoutBounds.
func TestSnapshotDecodeDamage(t *testing.T) {
	t.Parallel()
	stored, framing, _, cuts := snapDamage(t)
	tried, through, errs := 0, 0, 0
	for i, v := range stored {
		tried++
		p, err := decodeDamaged(v)
		switch {
		case p != nil:
			through++
			t.Errorf("damaged record %d (%x): panic %v, want an error or a record", i, v, p)
		case err != nil:
			errs++
		}
	}
	if errs < cuts-1 {
		t.Errorf("only %d of %d damaged records were errors (every truncation should be)", errs, len(stored))
	}
	for i, v := range framing {
		tried++
		if p, err := decodeDamaged(v); p != nil || err == nil {
			through++
			t.Errorf("damaged framing %d (%x): got error %v, panic %v; want an error", i, v, err, p)
		}
	}
	t.Logf("%d damaged records (%d of the stored form, %d of them errors; %d of the framing): %d through", tried, len(stored), errs, len(framing), through)
	if through != 0 {
		t.Fatalf("%d of %d damaged records got through, want 0", through, tried)
	}
}

// TestSnapshotDecodeDamageLandsWithoutBounds is the positive control of
// TestSnapshotDecodeDamage: the same damage decoded with the framing's
// bounds checks off (snapBoundsOff: the lengths and the step count are
// trusted as written). Every damaged framing but the empty one (it holds
// no length to trust) must land: a panic, or a record decoded from a
// framing that lies. Some of the damage to the stored form must land too
// (a panic), which shows it reaches the framing's checks past S2's
// decoder. Not parallel: it sets a package switch.
func TestSnapshotDecodeDamageLandsWithoutBounds(t *testing.T) {
	snapBoundsOff.Store(true)
	defer snapBoundsOff.Store(false)
	stored, framing, framingLen, _ := snapDamage(t)
	landed, want := 0, 0
	for i, v := range framing {
		if framingLen[i] > 0 {
			want++
		}
		if p, err := decodeDamaged(v); p != nil || err == nil {
			landed++
		} else if framingLen[i] > 0 {
			t.Errorf("damaged framing %d (%x): got error %v with the bounds checks off, want a panic or a record", i, v, err)
		}
	}
	t.Logf("bounds checks off: framing %d tried, %d landed (want %d)", len(framing), landed, want)
	if landed != want {
		t.Fatalf("positive control: got %d of %d damaged framings landed with the bounds checks off, want %d", landed, len(framing), want)
	}
	// The stored form's damage: one landing is enough to show it reaches
	// the framing (the rest are not decoded again: the race detector
	// makes 4,000 decodes slow).
	for i, v := range stored {
		if p, _ := decodeDamaged(v); p != nil {
			t.Logf("bounds checks off: damaged stored record %d of %d is the first to land (%v)", i, len(stored), p)
			return
		}
	}
	t.Fatalf("positive control: got 0 of %d damaged stored records landed with the bounds checks off, want some (else S2 stops them all and the framing's checks are not what the stored damage tests)", len(stored))
}

// TestSnapshotJSONIndentedWhenRead: a side the agent marked as compact
// JSON is read back indented; one cut at the cap (no longer JSON) is read
// as stored; mail text that happens to be JSON is never reformatted.
func TestSnapshotJSONIndentedWhenRead(t *testing.T) {
	t.Parallel()
	s, clk := openTest(t)
	long := `{"text":"` + strings.Repeat("x", SnapshotCap) + `"}`
	tr := snapTrace("tr_j", clk.Now(),
		Step{Name: "route", Snapshot: &StepSnapshot{Input: `{"from":"ada@example.test","headers":{"List-Id":["<l>"]}}`, InputJSON: true,
			Output: `{"mail":"text"}`}},
		Step{Name: "classify", Snapshot: &StepSnapshot{Input: long, InputJSON: true, Output: "plain", OutputJSON: false}})
	if err := s.PutTrace(tr); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTrace("tr_j")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LoadSnapshots(got); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"from\": \"ada@example.test\",\n  \"headers\": {\n    \"List-Id\": [\n      \"<l>\"\n    ]\n  }\n}"
	if in := got.Steps[0].Snapshot.Input; in != want {
		t.Errorf("JSON side read as\n%s\nwant\n%s", in, want)
	}
	if out := got.Steps[0].Snapshot.Output; out != `{"mail":"text"}` {
		t.Errorf("a text side that looks like JSON was changed: %q", out)
	}
	if in := got.Steps[1].Snapshot.Input; !strings.HasPrefix(in, `{"text":"xxx`) || !strings.Contains(in, "[truncated") || len(in) > SnapshotCap {
		t.Errorf("a JSON side cut at the cap: %d bytes, %.40q…", len(in), in)
	}
}

// BenchmarkSnapshotEncode encodes a record shaped like a triaged
// message's snapshots (a header block of 2 KiB, the thread, route and
// decide steps' JSON, a classify prompt of 4 KiB, text drawn at random
// from a vocabulary so it compresses like mail) in the stored form
// (framing + S2) against the form before it (JSON + deflate at
// BestSpeed), and reports the bytes each keeps:
//
//	go test -run '^$' -bench SnapshotEncode -count 5 ./store
func BenchmarkSnapshotEncode(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("the engine notes Ada meeting Tuesday invoice 4711 received from mx example test by with ESMTPS id " +
		"unsubscribe offer list bulk reply thanks regards please attached report quarterly figures weave cards")
	text := func(n int) string {
		var t strings.Builder
		for t.Len() < n {
			t.WriteString(words[rng.IntN(len(words))])
			t.WriteByte(" \n"[rng.IntN(2)])
		}
		return t.String()
	}
	js := func(n int) string {
		v, _ := json.Marshal(map[string]any{"from": "Ada Lovelace <ada@example.test>", "subject": text(40), "text": text(n)})
		return string(v)
	}
	rec := &snapshotRecord{Started: time.Now(), Steps: []*StepSnapshot{
		{Input: text(2048), Output: js(100), OutputJSON: true},
		{Input: js(100), Output: js(100), InputJSON: true, OutputJSON: true},
		{Input: js(150), Output: `{"authenticated":false}`, InputJSON: true, OutputJSON: true},
		{Input: js(200), Output: `{"Route":"external"}`, InputJSON: true, OutputJSON: true},
		{Input: js(4000), Output: `{"intents":["fyi_notification"],"action":"ignore"}`, InputJSON: true},
		{Input: js(300), Output: js(200), InputJSON: true, OutputJSON: true},
	}}
	// The form before, as it was written: a pooled writer at BestSpeed.
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	deflateJSON := func(r *snapshotRecord) ([]byte, error) {
		data, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		var z bytes.Buffer
		w.Reset(&z)
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
		err = w.Close()
		return z.Bytes(), err
	}
	for _, bc := range []struct {
		name string
		enc  func(*snapshotRecord) ([]byte, error)
	}{{"s2-framing", encodeSnapshots}, {"deflate-json", deflateJSON}} {
		b.Run(bc.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				z, err := bc.enc(rec)
				if err != nil {
					b.Fatal(err)
				}
				n = len(z)
			}
			b.ReportMetric(float64(n), "stored-bytes")
		})
	}
}
