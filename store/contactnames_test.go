package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestContactNames: the contacts whose address starts with the prefix
// (case folded), in email order, at most limit, address and name only;
// the empty prefix lists from the first; another account's contacts and
// a limit of 0 give none.
func TestContactNames(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	var all []string
	for i := 0; i < 30; i++ {
		for _, who := range []string{"anna", "bob", "carol"} {
			email := fmt.Sprintf("%s%02d@example.org", who, i)
			all = append(all, email)
			if _, err := s.UpdateContact("personal", email, func(c *Contact) error { c.Name = "Name " + email; return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.UpdateContact("work", "bobby@example.com", nil); err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	emails := func(ns []ContactName) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Email)
			if n.Name != "Name "+n.Email {
				t.Errorf("%s: name %q", n.Email, n.Name)
			}
		}
		return out
	}
	cases := []struct {
		prefix string
		limit  int
		want   []string
	}{
		{"", 5, all[:5]},
		{"", 1000, all},
		{"BOB1", 100, all[40:50]},
		{"carol2", 3, all[80:83]},
		{"dave", 10, nil},
		{"bob", 0, nil},
	}
	for _, c := range cases {
		got, err := s.ContactNames("personal", c.prefix, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if g := emails(got); !slices.Equal(g, c.want) {
			t.Errorf("ContactNames(%q, %d) = %v, want %v", c.prefix, c.limit, g, c.want)
		}
	}
	for _, e := range all[40:50] {
		if !strings.HasPrefix(e, "bob1") {
			t.Fatalf("the test's own expectation is off: %s", e)
		}
	}
	if got, err := s.ContactNames("work", "", 10); err != nil || len(got) != 1 || got[0].Email != "bobby@example.com" {
		t.Errorf("work: %v %v", got, err)
	}
}
