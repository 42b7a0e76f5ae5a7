package mail

import (
	"testing"
)

// BenchmarkParseThread parses and threads the SpamAssassin ham, one message
// per iteration, and reports messages per second.
func BenchmarkParseThread(b *testing.B) {
	data := readCorpus(b, corpusFiles(b, hamDirs...))
	var bytes int64
	for _, d := range data {
		bytes += int64(len(d))
	}
	b.SetBytes(bytes / int64(len(data)))
	b.ReportAllocs()
	th := NewThreader()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % len(data)
		if j == 0 && i > 0 {
			th = NewThreader()
		}
		m := Parse(data[j])
		th.Add(InputOf(m))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
}
