package netpolicy

import (
	"errors"
	"testing"
)

func TestCheckMailAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		addr    string
		allowed []string
		ok      bool
	}{
		{"public", "list@news.example.com", nil, true},
		{"test tld of the e2e stack", "u@partner.test", nil, true},
		{"idn", "u@bücher.example", nil, true},
		{"trailing dot", "u@example.com.", nil, true},
		{"ipv4 literal", "u@[127.0.0.1]", nil, false},
		{"private literal", "u@[10.20.30.40]", nil, false},
		{"ipv6 literal", "u@[IPv6:::1]", nil, false},
		{"bare ipv4", "u@10.20.30.40", nil, false},
		{"bare ipv6", "u@::1", nil, false},
		{"localhost", "root@localhost", nil, false},
		{"under localhost", "root@mail.localhost", nil, false},
		{"mdns", "u@printer.local", nil, false},
		{"invalid", "u@x.invalid", nil, false},
		{"internal", "u@corp.internal", nil, false},
		{"home.arpa", "u@nas.home.arpa", nil, false},
		{"reverse tree", "u@1.0.0.127.in-addr.arpa", nil, false},
		{"dotless", "u@mailhost", nil, false},
		{"numeric last label", "u@example.123", nil, false},
		{"empty label", "u@a..example.com", nil, false},
		{"hyphen edge", "u@-a.example.com", nil, false},
		{"underscore", "u@a_b.example.com", nil, false},
		{"two addresses", "a@example.com,b@example.com", nil, false},
		{"two ats", "a@b@example.com", nil, false},
		{"display form", "Bob <b@example.com>", nil, false},
		{"no local part", "@example.com", nil, false},
		{"no domain", "u@", nil, false},
		{"empty", "", nil, false},
		{"crlf", "u@example.com\r\nBcc: x@example.com", nil, false},
		{"space", "u @example.com", nil, false},
		{"allowed local domain", "u@mail.lan", []string{"mail.lan"}, true},
		{"under an allowed domain", "u@lists.mail.lan", []string{"Mail.Lan."}, true},
		{"allowed dotless", "root@localhost", []string{"localhost"}, true},
		{"allowed literal exactly", "u@[10.0.0.5]", []string{"[10.0.0.5]"}, true},
		{"another literal not allowed", "u@[10.0.0.6]", []string{"[10.0.0.5]"}, false},
		{"allowed suffix is not a substring match", "u@evilmail.lan", []string{"mail.lan"}, false},
		{"allowed list does not open everything", "u@[127.0.0.1]", []string{"example.com"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckMailAddress(tt.addr, tt.allowed)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckMailAddress(%q, %q) = %v, want ok=%v", tt.addr, tt.allowed, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrMailAddressNotPublic) {
				t.Errorf("error %v does not wrap ErrMailAddressNotPublic", err)
			}
		})
	}
}

func TestMailDomain(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{"Me@Example.COM.": "example.com", "nodomain": "", "a@b@c.d": ""} {
		if got := MailDomain(addr); got != want {
			t.Errorf("MailDomain(%q) = %q, want %q", addr, got, want)
		}
	}
}
