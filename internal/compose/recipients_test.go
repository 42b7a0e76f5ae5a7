package compose

import (
	"errors"
	"slices"
	"testing"

	"github.com/mailagent/mailagent/internal/mail"
)

func emails(l []mail.Address) []string {
	out := []string{}
	for _, a := range l {
		out = append(out, a.Email)
	}
	return out
}

func TestRecipients(t *testing.T) {
	t.Parallel()
	owner := []string{"ada@example.org", "Ada.Alias@Example.org"}
	tests := []struct {
		name     string
		parent   mail.Message
		replyAll bool
		wantTo   []string
		wantCc   []string
		wantErr  error
	}{
		{
			name:   "from",
			parent: mail.Message{From: mail.Address{Name: "Bob", Email: "bob@example.com"}, To: []mail.Address{{Email: "ada@example.org"}}},
			wantTo: []string{"bob@example.com"},
			wantCc: []string{},
		},
		{
			name: "reply-to wins over from",
			parent: mail.Message{
				From:    mail.Address{Email: "bob@example.com"},
				ReplyTo: []mail.Address{{Email: "support@example.com"}},
			},
			wantTo: []string{"support@example.com"},
			wantCc: []string{},
		},
		{
			name: "multiple reply-to",
			parent: mail.Message{
				From:    mail.Address{Email: "bob@example.com"},
				ReplyTo: []mail.Address{{Email: "a@example.com"}, {Email: "b@example.com"}, {Email: "A@example.com"}},
			},
			wantTo: []string{"a@example.com", "b@example.com"},
			wantCc: []string{},
		},
		{
			name: "invalid reply-to falls back to from",
			parent: mail.Message{
				From:    mail.Address{Email: "bob@example.com"},
				ReplyTo: []mail.Address{{Email: ""}, {Email: "not an address"}},
			},
			wantTo: []string{"bob@example.com"},
			wantCc: []string{},
		},
		{
			name: "reply-to of only the owner falls back to from",
			parent: mail.Message{
				From:    mail.Address{Email: "bob@example.com"},
				ReplyTo: []mail.Address{{Email: "ADA@example.org"}},
			},
			wantTo: []string{"bob@example.com"},
			wantCc: []string{},
		},
		{
			name: "reply without all ignores to and cc",
			parent: mail.Message{
				From: mail.Address{Email: "bob@example.com"},
				To:   []mail.Address{{Email: "ada@example.org"}, {Email: "carol@example.com"}},
				Cc:   []mail.Address{{Email: "dan@example.com"}},
			},
			wantTo: []string{"bob@example.com"},
			wantCc: []string{},
		},
		{
			name: "reply-all excludes owner and aliases case-insensitively",
			parent: mail.Message{
				From: mail.Address{Email: "bob@example.com"},
				To:   []mail.Address{{Email: "ADA@EXAMPLE.ORG"}, {Email: "carol@example.com"}},
				Cc:   []mail.Address{{Email: "ada.alias@example.org"}, {Email: "dan@example.com"}, {Email: "Bob@Example.com"}, {Email: "carol@example.com"}},
			},
			replyAll: true,
			wantTo:   []string{"bob@example.com", "carol@example.com"},
			wantCc:   []string{"dan@example.com"},
		},
		{
			name: "reply-all with reply-to",
			parent: mail.Message{
				From:    mail.Address{Email: "bob@example.com"},
				ReplyTo: []mail.Address{{Email: "list@example.com"}},
				To:      []mail.Address{{Email: "list@example.com"}},
				Cc:      []mail.Address{{Email: "ada@example.org"}},
			},
			replyAll: true,
			wantTo:   []string{"list@example.com"},
			wantCc:   []string{},
		},
		{
			name:    "owner only",
			parent:  mail.Message{From: mail.Address{Email: "ada@example.org"}, To: []mail.Address{{Email: "ada.alias@example.org"}}},
			wantErr: ErrNoRecipient,
		},
		{
			name:     "owner only reply-all",
			parent:   mail.Message{From: mail.Address{Email: "Ada@example.org"}, To: []mail.Address{{Email: "ada.alias@example.org"}}},
			replyAll: true,
			wantErr:  ErrNoRecipient,
		},
		{
			name:     "owner wrote to others: reply-all goes to them",
			parent:   mail.Message{From: mail.Address{Email: "ada@example.org"}, To: []mail.Address{{Email: "bob@example.com"}}},
			replyAll: true,
			wantTo:   []string{"bob@example.com"},
			wantCc:   []string{},
		},
		{
			name:     "only cc remains: promoted to to",
			parent:   mail.Message{From: mail.Address{Email: "ada@example.org"}, Cc: []mail.Address{{Email: "bob@example.com"}}},
			replyAll: true,
			wantTo:   []string{"bob@example.com"},
			wantCc:   []string{},
		},
		{
			name:    "empty from",
			parent:  mail.Message{From: mail.Address{Name: "undisclosed-recipients"}},
			wantErr: ErrNoRecipient,
		},
		{
			name:    "injected from address",
			parent:  mail.Message{From: mail.Address{Email: "bob@example.com\r\nBcc: evil@x.com"}},
			wantErr: ErrNoRecipient,
		},
		{
			name:    "address without domain",
			parent:  mail.Message{From: mail.Address{Email: "bob"}},
			wantErr: ErrNoRecipient,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to, cc, err := Recipients(&tt.parent, owner, tt.replyAll)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got error %v (to %v, cc %v), want %v", err, to, cc, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if got := emails(to); !slices.Equal(got, tt.wantTo) {
				t.Errorf("to: got %q, want %q", got, tt.wantTo)
			}
			if got := emails(cc); !slices.Equal(got, tt.wantCc) {
				t.Errorf("cc: got %q, want %q", got, tt.wantCc)
			}
		})
	}
}

func TestRecipientsDisplayNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"kept", "Bob Smith", "Bob Smith"},
		{"crlf removed", "Bob\r\nBcc: evil@x.com", ""}, // contains '@': dropped
		{"crlf folded", "Bob\r\nX-Evil: 1", "Bob X-Evil: 1"},
		{"address-looking name dropped", "ceo@bank.example", ""},
		{"controls removed", "Bo\x00b\x07", "Bob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			to, _, err := Recipients(&mail.Message{From: mail.Address{Name: tt.in, Email: "bob@example.com"}}, nil, false)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if len(to) != 1 || to[0].Name != tt.want || to[0].Email != "bob@example.com" {
				t.Errorf("got %+v, want [{Name:%q Email:bob@example.com}]", to, tt.want)
			}
		})
	}
}

func TestRecipientsNilParent(t *testing.T) {
	t.Parallel()
	if _, _, err := Recipients(nil, nil, true); !errors.Is(err, ErrNoRecipient) {
		t.Errorf("got %v, want ErrNoRecipient", err)
	}
}

func TestNewReply(t *testing.T) {
	t.Parallel()
	parent := &mail.Message{
		MessageID:  "p@example.com",
		References: []string{"r@example.com"},
		InReplyTo:  []string{"r@example.com"},
		Subject:    "Re: Hi",
		From:       mail.Address{Name: "Bob", Email: "bob@example.com"},
	}
	from := mail.Address{Name: "Ada", Email: "ada@example.org"}
	r, err := NewReply(parent, from, []string{"ada@example.org"}, false)
	if err != nil {
		t.Fatalf("NewReply: %v", err)
	}
	if r.ParentMessageID != "p@example.com" || !slices.Equal(r.ParentReferences, parent.References) ||
		r.Subject != "Re: Hi" || r.From != from || !slices.Equal(emails(r.To), []string{"bob@example.com"}) {
		t.Errorf("got %+v, want threading, subject, from and to copied from the parent", r)
	}

	parent.Synthesized = true
	r, err = NewReply(parent, from, nil, false)
	if err != nil {
		t.Fatalf("NewReply: %v", err)
	}
	if r.ParentMessageID != "" {
		t.Errorf("got parent id %q for a synthesized id, want empty", r.ParentMessageID)
	}

	if _, err := NewReply(&mail.Message{From: from}, from, []string{"ada@example.org"}, false); !errors.Is(err, ErrNoRecipient) {
		t.Errorf("got %v for a reply to the owner, want ErrNoRecipient", err)
	}
}
