package imapsync

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
)

func TestSearchHeaderFlagsAndHeaders(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverConfig{})
	reply := []byte("From: a@x\r\nSubject: Re: q\r\nMessage-ID: <r1@x>\r\nIn-Reply-To: <q1@y>\r\n\r\nhi\r\n")
	later := []byte("From: a@x\r\nSubject: Re: q\r\nMessage-ID: <r2@x>\r\nReferences: <q1@y> <q2@y>\r\n\r\nhi\r\n")
	other := []byte("From: a@x\r\nSubject: other\r\nMessage-ID: <r3@x>\r\nIn-Reply-To: <zzq1@y>\r\n\r\nhi\r\n")
	u1 := ts.add(t, "INBOX", reply, time.Now())
	u2 := ts.add(t, "INBOX", later, time.Now(), imap.FlagAnswered)
	u3 := ts.add(t, "INBOX", other, time.Now())
	c := ts.dial(t)
	ctx := context.Background()
	if _, err := c.SearchHeader(ctx, []string{"In-Reply-To"}, "q1@y"); err == nil {
		t.Error("SearchHeader with nothing selected: no error")
	}
	if _, err := c.Select(ctx, "INBOX", false); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		fields []string
		value  string
		flags  []string
		want   []uint32
	}{
		{"one field", []string{"In-Reply-To"}, "q1@y", nil, []uint32{u1, u3}}, // a substring: the caller confirms on the header
		{"OR of two fields", []string{"In-Reply-To", "References"}, "q1@y", nil, []uint32{u1, u2, u3}},
		{"with a flag", []string{"In-Reply-To", "References"}, "q1@y", []string{FlagAnswered}, []uint32{u2}},
		{"hostile value", []string{"Message-ID"}, `") OR (ALL {5}` + "\r\n", nil, nil},
		{"no fields", nil, "q1@y", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.SearchHeader(ctx, tc.fields, tc.value, tc.flags...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	flags, err := c.Flags(ctx, []uint32{u1, u2})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(flags[u1], FlagAnswered) || !slices.Contains(flags[u2], FlagAnswered) {
		t.Errorf("flags: got %v", flags)
	}
	hdrs, err := c.FetchHeaders(ctx, []uint32{u1, u3}, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hdrs[u1]), "In-Reply-To: <q1@y>") || strings.Contains(string(hdrs[u1]), "hi") {
		t.Errorf("header of %d: %q, want the header without the body", u1, hdrs[u1])
	}
	if !strings.Contains(string(hdrs[u3]), "<zzq1@y>") {
		t.Errorf("header of %d: %q", u3, hdrs[u3])
	}
	if _, uv, err := c.Selected(); err != nil || uv == 0 {
		t.Errorf("Selected: %d, %v", uv, err)
	}
}
