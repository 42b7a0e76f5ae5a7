package store

import "testing"

func TestOutboxByMessageID(t *testing.T) {
	t.Parallel()
	s, _ := openTest(t)
	for _, r := range []*OutboxRecord{
		{ID: "ob_1", Account: "p", MessageID: "One@Example.com", Auto: true, Raw: []byte("big raw message"), Status: OutboxAppended},
		{ID: "ob_2", Account: "p", MessageID: "two@example.com", QueueID: "q2", Status: OutboxSent},
		{ID: "ob_3", Account: "w", MessageID: "three@example.com", Status: OutboxSent},
	} {
		if err := s.PutOutbox(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.OutboxByMessageID("p", []string{"<one@example.COM>", "two@example.com", "three@example.com", "", "absent@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d records, want 2 (the other account's is not found): %+v", len(got), got)
	}
	if r := got["one@example.com"]; r.ID != "ob_1" || !r.Auto {
		t.Errorf("one: got %+v", r)
	}
	if r := got["two@example.com"]; r.ID != "ob_2" || r.Auto || r.QueueID != "q2" {
		t.Errorf("two: got %+v", r)
	}
	if got, err := s.OutboxByMessageID("p", nil); err != nil || len(got) != 0 {
		t.Errorf("no ids: got %v, %v", got, err)
	}
}
