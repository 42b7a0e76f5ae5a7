package mail

import (
	"bytes"
	"reflect"
	"strconv"
	"testing"
)

// wantThreadInput is what HeaderThreadInput must return for raw:
// InputOf(Parse(raw)), with the Message-ID Parse synthesizes cleared.
func wantThreadInput(m *Message) (ThreadInput, bool) {
	in := InputOf(m)
	if m.Synthesized {
		in.MessageID = ""
	}
	return in, m.Synthesized
}

// headerOf returns what an IMAP BODY.PEEK[HEADER] gives of raw: every
// byte up to and with the first empty line.
func headerOf(raw []byte) []byte {
	for _, sep := range [][]byte{[]byte("\r\n\r\n"), []byte("\n\n")} {
		if i := bytes.Index(raw, sep); i >= 0 {
			return raw[:i+len(sep)]
		}
	}
	return raw
}

// checkHeaderThreadInput fails t when HeaderThreadInput(raw) differs from
// what Parse gives, field by field (dates by instant and zone).
func checkHeaderThreadInput(t *testing.T, name string, raw []byte, m *Message) {
	t.Helper()
	want, wantSynth := wantThreadInput(m)
	got, synth := HeaderThreadInput(raw)
	if synth != wantSynth {
		t.Errorf("%s: synthesized %v, Parse says %v", name, synth, wantSynth)
	}
	if got.MessageID != want.MessageID || got.Subject != want.Subject ||
		!reflect.DeepEqual(got.InReplyTo, want.InReplyTo) || !reflect.DeepEqual(got.References, want.References) ||
		!got.Date.Equal(want.Date) || got.Date.String() != want.Date.String() {
		t.Errorf("%s: got %+v\nwant (Parse) %+v", name, got, want)
	}
}

// TestHeaderThreadInputMatchesParse holds the header-only reader triage's
// prethreading uses to Parse on every corpus message (under -race, the
// sampled ones), whole and as its header alone (what prethreading
// fetches), and on the fuzz seeds.
func TestHeaderThreadInputMatchesParse(t *testing.T) {
	t.Parallel()
	files := sampled(corpusFiles(t, append(append(append([]string{}, hamDirs...), spamDirs...), edgeDirs...)...))
	synth := 0
	for i, cm := range parsedFiles(t, files) {
		checkHeaderThreadInput(t, files[i], cm.raw, cm.m)
		h := headerOf(cm.raw)
		checkHeaderThreadInput(t, files[i]+" (header)", h, Parse(h))
		if cm.m.Synthesized {
			synth++
		}
	}
	if synth == 0 {
		t.Errorf("no corpus message without a Message-ID: the synthesized case went untested")
	}
	for _, s := range append(parseSeeds,
		"Message-Id: <a@b>\r\nMessage-Id: <c@d>\r\nSubject: first\r\nSubject: second\r\n"+
			"References: <r1@x>\r\nReferences: <r2@x>\r\nIn-Reply-To: <r2@x>\r\nDate: Mon, 2 Sep 2002 10:00:00 +0200\r\n\r\nbody",
		"Subject: =?utf-8?q?caf=C3=A9?=\r\nMessage-Id: junk\r\n\r\n",
		"Subject: \xe9t\xe9\r\nMessage-Id: <\xe9@x>\r\n\r\n",
		// Folding, dropped lines, odd names: the header reader's edges.
		"From someone Mon Sep  2 10:00:00 2002\n \tcontinued before any field\nSUBJECT : \t a\r\n\tb \r \r\n  \r\n c\r\nnot a field\r\n d\r\n"+
			"message-ID:\r\n <x@y>\r\nIN-REPLY-TO: <p@q>\rjunk\r\nReferences:\r\nreferences: <r@s>\r\nbroken line\r\nDate: 2 Sep 2002 10:00 GMT\r\n\r\n",
		"Subject: a\nbad\n\nbody",
		"Subject: a\r\nbad\r\nstill: body?\r\n\r\n",
		"Subject_: not the subject\r\nMessage_Id: <n@o>\r\n",
		" Subject: starts folded\r\n",
	) {
		checkHeaderThreadInput(t, strconv.Quote(truncate(s, 60)), []byte(s), Parse([]byte(s)))
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// FuzzHeaderThreadInput holds HeaderThreadInput to Parse on any input.
func FuzzHeaderThreadInput(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("From x\n \tc\nSUBJECT : a\r\n\tb\r\nbad\r\n d\r\nmessage-ID:\r\n <x@y>\r\nReferences: <r@s>\r\nreferences: <t@u>\r\n\r\n"))
	for _, b := range optionalCorpus(f, 50, append(append([]string{}, hamDirs...), spamDirs...)...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkHeaderThreadInput(t, "input", raw, Parse(raw))
	})
}

// BenchmarkHeaderThreadInput reads the threading fields of every corpus
// header (what triage's prethreading fetches), against Parse of the same
// headers (what it did before).
func BenchmarkHeaderThreadInput(b *testing.B) {
	var hdrs [][]byte
	for _, raw := range readCorpus(b, corpusFiles(b, append(append([]string{}, hamDirs...), spamDirs...)...)) {
		hdrs = append(hdrs, headerOf(raw))
	}
	b.Run("HeaderThreadInput", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, h := range hdrs {
				HeaderThreadInput(h)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, h := range hdrs {
				InputOf(Parse(h))
			}
		}
	})
}
