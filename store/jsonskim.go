package store

import (
	"bytes"
	"encoding/json"
	"time"
)

// createdAtOf reads the CreatedAt of a stored record (a MessageRecord's
// "created_at") without decoding the rest: what messagePageScan places a
// record by before it decodes it in full. For a record json.Unmarshal
// decodes into a MessageRecord it gives that decoding's CreatedAt; for
// one it does not (damaged), a time or an error, and the caller's full
// decode then fails.
func createdAtOf(data []byte) (time.Time, error) {
	var t time.Time
	raw, ok := topLevelValue(data, "created_at")
	if !ok {
		var head struct {
			CreatedAt time.Time `json:"created_at"`
		}
		err := json.Unmarshal(data, &head)
		return head.CreatedAt, err
	}
	if raw == nil {
		return t, nil
	}
	err := t.UnmarshalJSON(raw) // as encoding/json calls it, null included
	return t, err
}

// sortTimeOf reads a stored record's sort time (sortTime: its Date, or its
// CreatedAt when it has none) without decoding the rest, as createdAtOf
// reads CreatedAt: for a record json.Unmarshal decodes into a
// MessageRecord it gives that record's sortTime.
func sortTimeOf(data []byte) (time.Time, error) {
	var date time.Time
	raw, ok := topLevelValue(data, "date")
	if !ok {
		var head struct {
			Date      time.Time `json:"date"`
			CreatedAt time.Time `json:"created_at"`
		}
		err := json.Unmarshal(data, &head)
		return sortTime(&MessageRecord{Date: head.Date, CreatedAt: head.CreatedAt}), err
	}
	if raw != nil {
		if err := date.UnmarshalJSON(raw); err != nil {
			return date, err
		}
	}
	created, err := createdAtOf(data)
	return sortTime(&MessageRecord{Date: date, CreatedAt: created}), err
}

// topLevelValue returns the raw value of the last member of the JSON
// object data whose name is key as encoding/json matches a field's name
// (exactly or under bytes.EqualFold), nil when there is none. It skims:
// strings are skipped to their closing quote, objects and arrays by their
// brackets; nothing else is checked. ok is false when data does not skim
// as an object, or a member's name holds an escape (encoding/json would
// unescape it first): the caller then decodes data with encoding/json.
func topLevelValue(data []byte, key string) (val []byte, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	if i = skipSpace(data, i+1); i < len(data) && data[i] == '}' {
		return nil, true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return nil, false
		}
		end := stringEnd(data, i)
		if end < 0 || bytes.IndexByte(data[i+1:end-1], '\\') >= 0 {
			return nil, false
		}
		name := data[i+1 : end-1]
		if i = skipSpace(data, end); i >= len(data) || data[i] != ':' {
			return nil, false
		}
		i = skipSpace(data, i+1)
		vend := valueEnd(data, i)
		if vend < 0 {
			return nil, false
		}
		if bytes.EqualFold(name, []byte(key)) {
			val = data[i:vend]
		}
		switch i = skipSpace(data, vend); {
		case i >= len(data):
			return nil, false
		case data[i] == '}':
			return val, true
		case data[i] != ',':
			return nil, false
		}
		i = skipSpace(data, i+1)
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the closing quote of the string
// whose opening quote is at i, or -1 when it does not close. A quote ends
// the string unless an odd run of backslashes comes right before it.
func stringEnd(data []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// valueEnd returns the index just past the value that starts at i, or -1
// when it does not end.
func valueEnd(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end := stringEnd(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i // a number, true, false or null: up to the next delimiter
	for ; j < len(data); j++ {
		if c := data[j]; c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
	}
	if j == i {
		return -1
	}
	return j
}
