package mail

import (
	"bytes"
	"testing"
)

// BenchmarkThreaderAdd threads the parsed SpamAssassin ham, one message
// per iteration (a fresh Threader per pass over the corpus): the
// threader alone, without parsing.
func BenchmarkThreaderAdd(b *testing.B) {
	data := readCorpus(b, corpusFiles(b, hamDirs...))
	inputs := make([]ThreadInput, len(data))
	for i, d := range data {
		inputs[i] = InputOf(Parse(d))
	}
	b.ReportAllocs()
	th := NewThreader()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % len(inputs)
		if j == 0 && i > 0 {
			th = NewThreader()
		}
		th.Add(inputs[j])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}

// BenchmarkPrethreadHeader is what triage's prethreading adds per message
// besides the FETCH: parsing the header alone and adding it.
func BenchmarkPrethreadHeader(b *testing.B) {
	data := readCorpus(b, corpusFiles(b, hamDirs...))
	hdrs := make([][]byte, len(data))
	for i, d := range data {
		end := bytes.Index(d, []byte("\r\n\r\n"))
		if end < 0 {
			end = bytes.Index(d, []byte("\n\n"))
		}
		if end < 0 {
			end = len(d)
		}
		hdrs[i] = d[:end]
	}
	b.ReportAllocs()
	th := NewThreader()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % len(hdrs)
		if j == 0 && i > 0 {
			th = NewThreader()
		}
		th.Add(InputOf(Parse(hdrs[j])))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}
