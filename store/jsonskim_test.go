package store

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCreatedAtOfAgreesWithDecode: for every record json.Unmarshal
// decodes into a MessageRecord, createdAtOf gives the CreatedAt it gives
// and sortTimeOf its sortTime (Date, or CreatedAt without one):
// stored records of every shape seedMsg makes, and hand-written ones
// that skim badly (the name in another case or written with escapes, the
// member twice, a nested object or a string holding a "created_at" of
// its own, a null or zero date, quotes and backslashes in strings, white space, null, no
// member at all). The same records damaged (the hand-written ones cut
// short, all with bytes changed) must not panic, and whenever the full
// decode still succeeds must give its times. The control: most records
// carry times the decode finds (and a Date other than their CreatedAt),
// so a skim that missed a member would not pass.
func TestCreatedAtOfAgreesWithDecode(t *testing.T) {
	t.Parallel()
	var docs []string
	for i := range 24 {
		b, err := json.Marshal(seedMsg(i, pageBase.Add(time.Duration(i)*time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	at, at2 := `"2025-01-02T03:04:05.123456789+01:00"`, `"2024-12-31T23:59:59Z"`
	docs = append(docs,
		`{}`, ` { } `, `{"account":"a"}`, `null`, `[]`, `"x"`, `{"created_at":null}`,
		`{"created_at":`+at+`}`,
		` {  "created_at" : `+at+` , "x" : 1 } `,
		`{"subject":"a \"created_at\": \"2024-12-31T23:59:59Z\"","created_at":`+at+`}`,
		"{\n\t\"subject\": \"x\",\r\n\t\"created_at\": "+at+"\n}",
		`{"Created_At":`+at+`}`, `{"CREATED_AT":`+at+`,"created_at":`+at2+`}`,
		`{"created_at":`+at+`,"created_at":`+at2+`}`,
		`{"cr\u0065ated_at":`+at+`}`, `{"created_at":`+at+`,"cr\u0065ated_at":`+at2+`}`,
		`{"classification":{"created_at":`+at2+`,"x":[1,{"y":"}"}]},"created_at":`+at+`}`,
		`{"to":[{"email":"a\\"},{"email":"\"b"}],"created_at":`+at+`,"excerpt":"\\\\"}`,
		`{"excerpt":"ends in a backslash \\\\","created_at":`+at+`}`,
		`{"uid":12,"synthesized":true,"date":null,"created_at":`+at+`,"problems":["]","}"]}`,
		`{"created_at":12}`, `{"created_at":"not a time"}`, `{"created_at":{"a":1}}`,
		`{"created_at":`+at+`} trailing`, `{"created_at":`+at,
		`{"date":null,"created_at":`+at+`}`, `{"date":`+at2+`,"created_at":`+at+`}`, `{"Date":`+at2+`}`,
		`{"d\u0061te":`+at2+`,"created_at":`+at+`}`, `{"date":"0001-01-01T00:00:00Z","created_at":`+at+`}`,
		`{"date":`+at2+`,"date":"0001-01-01T00:00:00Z","created_at":`+at+`}`, `{"date":7,"created_at":`+at+`}`,
	)

	// decode is what messagePageScan and ThreadMessages did before
	// createdAtOf and sortTimeOf: the full decode.
	decode := func(doc string) (time.Time, bool) {
		var r MessageRecord
		if err := json.Unmarshal([]byte(doc), &r); err != nil {
			return time.Time{}, false
		}
		return r.CreatedAt, true
	}
	same := func(a, b time.Time) bool { return a.Equal(b) && a.Location().String() == b.Location().String() }
	check := func(doc string) {
		t.Helper()
		var r MessageRecord
		if json.Unmarshal([]byte(doc), &r) != nil {
			_, _ = createdAtOf([]byte(doc)) // must not panic
			_, _ = sortTimeOf([]byte(doc))
			return
		}
		if got, err := createdAtOf([]byte(doc)); err != nil || !same(got, r.CreatedAt) {
			t.Fatalf("%.200q: createdAtOf %v, %v; the decode gives %v", doc, got, err, r.CreatedAt)
		}
		if got, err := sortTimeOf([]byte(doc)); err != nil || !same(got, sortTime(&r)) {
			t.Fatalf("%.200q: sortTimeOf %v, %v; the decode gives %v", doc, got, err, sortTime(&r))
		}
	}
	found, dated := 0, 0
	for _, doc := range docs {
		check(doc)
		if want, ok := decode(doc); ok && !want.IsZero() {
			found++
		}
		var r MessageRecord
		if json.Unmarshal([]byte(doc), &r) == nil && !r.Date.IsZero() && !r.Date.Equal(r.CreatedAt) {
			dated++
		}
	}
	if found < 24+10 || dated < 20+2 {
		t.Fatalf("only %d records carry a CreatedAt the decode finds, %d a Date of their own: the cases do not test the skim", found, dated)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for n, doc := range docs {
		changes := 5
		if n >= 24 { // the hand-written records: every cut, more changes
			changes = 40
			for i := range len(doc) {
				check(doc[:i])
			}
		}
		for range changes {
			b := []byte(doc)
			if len(b) == 0 {
				break
			}
			b[rng.IntN(len(b))] = `{}[]",:\ a0`[rng.IntN(11)]
			check(string(b))
		}
	}

}
