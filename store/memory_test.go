package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openMem(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestMemoryRecordLifecycle(t *testing.T) {
	s := openMem(t)
	r, err := s.AddMemory(&MemoryRecord{Account: "a", Kind: MemoryFact, Contact: " Bob@Example.org ", Text: "likes\n mornings", Source: SourceManual})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "mem_") || r.Contact != "bob@example.org" || r.Text != "likes mornings" || r.Created.IsZero() {
		t.Fatalf("stored: got %+v", r)
	}
	again, err := s.AddMemory(&MemoryRecord{Account: "a", Kind: MemoryFact, Contact: "bob@example.org", Text: "likes mornings", Source: SourceManual})
	if err != nil || again.ID != r.ID {
		t.Errorf("a repeated record: got %v %v, want the first one", again, err)
	}
	if _, err := s.UpdateMemory(r.ID, func(m *MemoryRecord) error { m.Text = "likes evenings"; m.Source = "forged"; return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMemory(r.ID)
	if err != nil || got.Text != "likes evenings" || got.Source != SourceManual {
		t.Errorf("after update: got %+v, %v (source must be kept)", got, err)
	}
	list, _ := s.ListMemory(MemoryFilter{Account: "a", Contact: "BOB@example.org"})
	if len(list) != 1 {
		t.Errorf("list by contact: got %d", len(list))
	}
	if err := s.ForgetMemory(r.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.ForgetMemory(r.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("forget twice: got %v, want ErrNotFound", err)
	}
}

func TestMemoryRejectsBadRecords(t *testing.T) {
	s := openMem(t)
	for _, tt := range []struct {
		name string
		r    MemoryRecord
	}{
		{"unknown kind", MemoryRecord{Account: "a", Kind: "secret", Text: "x", Source: SourceManual}},
		{"empty text", MemoryRecord{Account: "a", Kind: MemoryFact, Text: " \n", Source: SourceManual}},
		{"long text", MemoryRecord{Account: "a", Kind: MemoryFact, Text: strings.Repeat("x", MaxMemoryText+1), Source: SourceManual}},
		{"style with contact", MemoryRecord{Account: "a", Kind: MemoryStyle, Contact: "bob@example.org", Text: "x", Source: SourceManual}},
		{"temporary without expiry", MemoryRecord{Account: "a", Kind: MemoryTemporary, Text: "x", Source: SourceManual}},
		{"contact not an address", MemoryRecord{Account: "a", Kind: MemoryFact, Contact: "bob", Text: "x", Source: SourceManual}},
		{"no account", MemoryRecord{Kind: MemoryFact, Text: "x", Source: SourceManual}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.AddMemory(&tt.r); !errors.Is(err, ErrBadMemory) {
				t.Errorf("got %v, want ErrBadMemory", err)
			}
		})
	}
	if l, _ := s.ListMemory(MemoryFilter{}); len(l) != 0 {
		t.Errorf("bad records were stored: %+v", l)
	}
}

func TestMemoryAppliesTo(t *testing.T) {
	now := time.Now()
	for _, tt := range []struct {
		contact, who string
		want         bool
	}{
		{"", "x@y.org", true}, {"bob@y.org", "bob@y.org", true}, {"bob@y.org", "carol@y.org", false},
		{"@acme.com", "x@acme.com", true}, {"@acme.com", "x@notacme.com", false}, {"@acme.com", "", false},
	} {
		r := MemoryRecord{Contact: tt.contact}
		if got := r.AppliesTo(tt.who); got != tt.want {
			t.Errorf("%q applies to %q: got %v, want %v", tt.contact, tt.who, got, tt.want)
		}
	}
	if (&MemoryRecord{Expires: now.Add(-time.Second)}).Active(now) {
		t.Error("an expired record is active")
	}
}

func TestExamplesAreCappedPerContact(t *testing.T) {
	s := openMem(t)
	for i := range ExamplesPerContact + 3 {
		if err := s.AddExample(&Example{Account: "a", Kind: ExampleOwnerReply, Contact: "bob@example.org", Text: strings.Repeat("w ", i+1), Source: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddExample(&Example{Account: "a", Kind: ExampleOwnerReply, Contact: "bob@example.org", Text: "dup", Source: string(rune('a' + ExamplesPerContact + 2))}); err != nil {
		t.Fatal(err)
	}
	exs, _ := s.ListExamples("a")
	if len(exs) != ExamplesPerContact {
		t.Fatalf("examples: got %d, want %d", len(exs), ExamplesPerContact)
	}
	if strings.TrimSpace(exs[len(exs)-1].Text) != strings.TrimSpace(strings.Repeat("w ", ExamplesPerContact+3)) {
		t.Errorf("the newest example was dropped")
	}
}
