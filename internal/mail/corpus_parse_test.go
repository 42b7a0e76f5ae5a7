package mail

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestParseCorpus parses every message of the MIME edge-case corpus and the
// SpamAssassin corpus (under -race, the sampled ham) and checks the
// package contract on each.
func TestParseCorpus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		dirs        []string
		minFromRate float64 // share of messages with a From address, measured then floored
		// whole: the floor is a share of the whole folder, which a
		// sample need not keep (the spam without From are 3 in 1,896):
		// the folder is read whole under -race too.
		whole bool
	}{
		{"mime-edge", edgeDirs, 0.94, true}, // measured 170/178: the rest have no From at all
		{"ham", hamDirs, 0.999, false},      // measured 4150/4150
		{"spam", spamDirs, 0.995, true},     // measured 1893/1896
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := corpusFiles(t, tt.dirs...)
			if !tt.whole {
				files = sampled(files)
			}
			data := parsedFiles(t, files)
			withFrom, htmlOnly := 0, 0
			for i, cm := range data {
				name := filepath.Base(files[i])
				raw, m := cm.raw, cm.m
				t.Run(name, func(t *testing.T) { checkValid(t, m) })
				if m.From.Email != "" {
					withFrom++
				}
				if m.FromHTML {
					htmlOnly++
					lower := strings.ToLower(m.Text)
					for _, tag := range []string{"<html", "<div", "<body", "<table", "<font", "<p>"} {
						if strings.Contains(lower, tag) {
							t.Errorf("%s: HTML tag %q in Text converted from HTML", name, tag)
						}
					}
				}
				if m.Size != len(raw) {
					t.Errorf("%s: got Size %d, want %d", name, m.Size, len(raw))
				}
			}
			rate := float64(withFrom) / float64(len(data))
			t.Logf("%d messages, %d with From (%.2f%%), %d converted from HTML", len(data), withFrom, 100*rate, htmlOnly)
			if rate < tt.minFromRate {
				t.Errorf("got From parsed for %.2f%% of messages, want at least %.2f%%", 100*rate, 100*tt.minFromRate)
			}
			if want := len(data); len(data) == 0 || want == 0 {
				t.Errorf("got no messages")
			}
		})
	}
}

// TestParseCorpusCounts pins the corpus sizes the brief names, so a
// truncated corpus copy is noticed rather than silently tested less.
func TestParseCorpusCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		dirs []string
		want int
	}{
		{"mime-edge", edgeDirs, 178},
		{"spamassassin", append(append([]string{}, hamDirs...), spamDirs...), 6046},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := len(corpusFiles(t, tt.dirs...)); got != tt.want {
				t.Errorf("got %d files, want %d", got, tt.want)
			}
		})
	}
}
