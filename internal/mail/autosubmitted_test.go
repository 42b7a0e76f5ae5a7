package mail

import (
	"strings"
	"testing"
)

func TestAutoSubmitted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, header string // header "" = no Auto-Submitted header
		keyword      string
		auto         bool
	}{
		{"absent", "", "", false},
		{"no", "Auto-Submitted: no", "no", false},
		{"No", "Auto-Submitted: No", "no", false},
		{"no with comment", "Auto-Submitted: no (a comment, RFC 3834 allows it)", "no", false},
		{"comment first", "Auto-Submitted: (why) no", "no", false},
		{"no with parameter", "Auto-Submitted: no; x=1", "no", false},
		{"only a comment", "Auto-Submitted: (nothing)", "", false},
		{"auto-replied", "Auto-Submitted: auto-replied", "auto-replied", true},
		{"auto-generated", "Auto-Submitted: auto-generated", "auto-generated", true},
		{"auto-notified", "Auto-Submitted: auto-notified", "auto-notified", true},
		{"upper case", "Auto-Submitted: AUTO-REPLIED", "auto-replied", true},
		{"parameters", "Auto-Submitted: auto-replied; owner-email=\"a@example.com\"", "auto-replied", true},
		{"nested comment", "Auto-Submitted: auto-replied (by (a) \\) robot)", "auto-replied", true},
		{"comment hides no", "Auto-Submitted: (no) auto-generated", "auto-generated", true},
		{"notno", "Auto-Submitted: nothing-like-no", "nothing-like-no", true},
		{"lower-case name", "auto-submitted: auto-replied", "auto-replied", true},
		{"folded", "Auto-Submitted:\n auto-generated", "auto-generated", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := "From: a@example.com\nTo: b@example.org\nSubject: s\n"
			if tt.header != "" {
				raw += tt.header + "\n"
			}
			m := Parse([]byte(strings.ReplaceAll(raw+"\nbody\n", "\n", "\r\n")))
			if got := m.AutoSubmittedKeyword(); got != tt.keyword {
				t.Errorf("keyword: got %q, want %q", got, tt.keyword)
			}
			if got := m.AutoSubmitted(); got != tt.auto {
				t.Errorf("AutoSubmitted: got %v, want %v", got, tt.auto)
			}
		})
	}
}
