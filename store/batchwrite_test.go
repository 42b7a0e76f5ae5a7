package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The batch forms write what the one-at-a-time forms write, in one
// commit: AddExamples against AddExample, UpdateContacts against
// UpdateContact.
func TestAddExamplesSameAsOneByOne(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var es []*Example
	for i := range ExamplesPerContact + 3 { // one contact over its cap
		es = append(es, &Example{ID: fmt.Sprintf("ex_%03d", i), Account: "a", Kind: ExampleOwnerReply,
			Contact: "Bob@Example.org", Text: fmt.Sprintf("reply %d", i), Source: fmt.Sprintf("<m%d@x>", i), Created: created})
	}
	es = append(es,
		&Example{ID: "ex_100", Account: "a", Kind: ExampleOwnerReply, Contact: "carol@example.org", Text: "hi", Source: "<m1@x>", Created: created},
		&Example{ID: "ex_101", Account: "a", Kind: ExampleOwnerReply, Contact: "bob@example.org", Text: "again", Source: "<m7@x>", Created: created}, // same Source: not twice
		&Example{ID: "ex_102", Account: "a", Kind: ExampleOwnerReply, Contact: "dan@example.org", Text: "  ", Source: "<m9@x>", Created: created},    // refused
	)
	// Both stores start with examples the batch must count against: two
	// of bob's (the cap) and one whose Source the batch repeats.
	pre := []*Example{
		{ID: "ex_0001", Account: "a", Kind: ExampleOwnerReply, Contact: "bob@example.org", Text: "old 1", Source: "<old1@x>", Created: created},
		{ID: "ex_0002", Account: "a", Kind: ExampleOwnerReply, Contact: "bob@example.org", Text: "old 2", Source: "<m2@x>", Created: created},
		{ID: "ex_0003", Account: "b", Kind: ExampleOwnerReply, Contact: "bob@example.org", Text: "other account", Source: "<m3@x>", Created: created},
	}
	one, _ := openTest(t)
	batch, _ := openTest(t)
	for _, e := range pre {
		if err := one.AddExample(e); err != nil {
			t.Fatal(err)
		}
		if err := batch.AddExample(e); err != nil {
			t.Fatal(err)
		}
	}
	var oneErrs int
	for _, e := range es {
		if err := one.AddExample(e); err != nil {
			oneErrs++
		}
	}
	err := batch.AddExamples(es)
	if oneErrs != 1 || err == nil || !strings.Contains(err.Error(), "example 10") {
		t.Fatalf("refused examples: one by one %d errors, batch error %v; want 1 and one naming example 10", oneErrs, err)
	}
	want, err := one.ListExamples("a")
	if err != nil {
		t.Fatal(err)
	}
	got, err := batch.ListExamples("a")
	if err != nil {
		t.Fatal(err)
	}
	str := func(xs []Example) string {
		var b strings.Builder
		for _, x := range xs {
			fmt.Fprintf(&b, "%s %s %s %q\n", x.ID, x.Contact, x.Source, x.Text)
		}
		return b.String()
	}
	if str(got) != str(want) {
		t.Fatalf("AddExamples stored\n%s\nwant (AddExample one by one)\n%s", str(got), str(want))
	}
	if n := strings.Count(str(got), "bob@example.org"); n != ExamplesPerContact {
		t.Fatalf("bob's examples: got %d, want the cap %d", n, ExamplesPerContact)
	}
}

func TestUpdateContactsOneTransaction(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	add := func(email string, c *Contact) error { c.OwnerReplies++; c.Known = true; return nil }
	if err := s.UpdateContacts("a", []string{"Bob@Example.org", "carol@example.org", "bob@example.org"}, add); err != nil {
		t.Fatal(err)
	}
	for email, want := range map[string]int{"bob@example.org": 2, "carol@example.org": 1} {
		c, err := s.GetContact("a", email)
		if err != nil {
			t.Fatal(err)
		}
		if c.OwnerReplies != want || !c.Known {
			t.Errorf("%s: OwnerReplies %d known %v, want %d true", email, c.OwnerReplies, c.Known, want)
		}
	}
	boom := errors.New("boom")
	err := s.UpdateContacts("a", []string{"bob@example.org", "dan@example.org"}, func(email string, c *Contact) error {
		if email == "dan@example.org" {
			return boom
		}
		return add(email, c)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("fn's error: got %v, want boom", err)
	}
	if c, _ := s.GetContact("a", "bob@example.org"); c == nil || c.OwnerReplies != 2 {
		t.Fatalf("after an aborted batch bob has %+v, want OwnerReplies still 2 (nothing of the batch written)", c)
	}
	if err := s.UpdateContacts("a", []string{"bob@example.org", " "}, add); err == nil {
		t.Fatal("an empty address: got nil error")
	}
	if c, _ := s.GetContact("a", "bob@example.org"); c == nil || c.OwnerReplies != 2 {
		t.Fatalf("after a refused batch bob has %+v, want OwnerReplies still 2", c)
	}
}
