package netpolicy

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
)

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		host string
		want bool
	}{
		{name: "ipv4 loopback", host: "127.0.0.1", want: true},
		{name: "anywhere in 127/8", host: "127.5.5.5", want: true},
		{name: "top of 127/8", host: "127.255.255.254", want: true},
		{name: "ipv6 loopback", host: "::1", want: true},
		{name: "bracketed ipv6 loopback", host: "[::1]", want: true},
		{name: "long ipv6 loopback", host: "0:0:0:0:0:0:0:1", want: true},
		{name: "localhost", host: "localhost", want: true},
		{name: "localhost upper case with dot", host: "LOCALHOST.", want: true},
		{name: "name under localhost (RFC 6761)", host: "imap.localhost", want: true},
		// The IPv4-mapped form is the same address as 127.0.0.1 (RFC 4291
		// §2.5.5.2): refusing it would protect nothing.
		{name: "ipv4-mapped loopback", host: "::ffff:127.0.0.1", want: true},
		{name: "bracketed ipv4-mapped loopback", host: "[::ffff:127.0.0.1]", want: true},

		{name: "unspecified ipv4", host: "0.0.0.0", want: false},
		{name: "unspecified ipv6", host: "::", want: false},
		{name: "private", host: "10.0.0.1", want: false},
		{name: "link-local", host: "169.254.1.1", want: false},
		{name: "ipv4-mapped private", host: "::ffff:10.0.0.1", want: false},
		{name: "public ipv6", host: "2001:db8::1", want: false},
		// localtest.me resolves to 127.0.0.1 in public DNS, but a DNS
		// answer is attacker-influenced: names are never resolved.
		{name: "name resolving to 127.0.0.1", host: "localtest.me", want: false},
		{name: "lookalike", host: "127.0.0.1.nip.io", want: false},
		{name: "localhost as a label elsewhere", host: "localhost.example.com", want: false},
		{name: "suffix without a dot", host: "evillocalhost", want: false},
		{name: "empty label under localhost", host: ".localhost", want: false},
		{name: "two trailing dots", host: "localhost..", want: false},
		{name: "shorthand ipv4", host: "127.1", want: false},
		{name: "octal ipv4", host: "0177.0.0.1", want: false},
		{name: "zone", host: "::1%lo", want: false},
		{name: "spaces", host: " 127.0.0.1", want: false},
		{name: "half bracket", host: "[::1", want: false},
		{name: "host and port", host: "127.0.0.1:25", want: false},
		{name: "empty", host: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsLoopback(tt.host); got != tt.want {
				t.Errorf("IsLoopback(%q): got %v, want %v", tt.host, got, tt.want)
			}
			err := CheckPlaintext(tt.host)
			if tt.want && err != nil {
				t.Errorf("CheckPlaintext(%q): got %v, want nil", tt.host, err)
			}
			if !tt.want && !errors.Is(err, ErrPlaintextNotLoopback) {
				t.Errorf("CheckPlaintext(%q): got %v, want ErrPlaintextNotLoopback", tt.host, err)
			}
		})
	}
}

func TestCheckPlaintextNamesTheHost(t *testing.T) {
	t.Parallel()
	err := CheckPlaintext("imap.example.com")
	if err == nil || !strings.Contains(err.Error(), `"imap.example.com"`) {
		t.Errorf("got %v, want an error naming the host", err)
	}
}

func TestPlaintextAddrs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host    string
		want    []string
		wantErr bool
	}{
		{host: "127.0.0.1", want: []string{"127.0.0.1:143"}},
		{host: "127.8.9.10", want: []string{"127.8.9.10:143"}},
		{host: "::1", want: []string{"[::1]:143"}},
		{host: "[::1]", want: []string{"[::1]:143"}},
		{host: "::ffff:127.0.0.1", want: []string{"127.0.0.1:143"}},
		{host: "LocalHost.", want: []string{"127.0.0.1:143", "[::1]:143"}},
		{host: "imap.localhost", want: []string{"127.0.0.1:143", "[::1]:143"}},
		{host: "localtest.me", wantErr: true},
		{host: "10.0.0.1", wantErr: true},
		{host: "0.0.0.0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			got, err := PlaintextAddrs(tt.host, 143)
			if tt.wantErr != (err != nil) {
				t.Fatalf("PlaintextAddrs(%q): got error %v, want error %v", tt.host, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrPlaintextNotLoopback) {
				t.Errorf("PlaintextAddrs(%q): got %v, want ErrPlaintextNotLoopback", tt.host, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("PlaintextAddrs(%q): got %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

// FuzzIsLoopback checks the rule against its definition on any input: true
// only for localhost names or an IP literal that is loopback, and
// PlaintextAddrs then dials only loopback literals.
func FuzzIsLoopback(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "[::1]", "localhost.", "a.localhost", "localtest.me", "0.0.0.0", "::ffff:127.0.0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !IsLoopback(host) {
			return
		}
		addrs, err := PlaintextAddrs(host, 1)
		if err != nil {
			t.Fatalf("PlaintextAddrs(%q): %v after IsLoopback said yes", host, err)
		}
		for _, a := range addrs {
			h := strings.TrimSuffix(a, ":1")
			if ip := parseIP(h); ip == nil || !ip.IsLoopback() {
				t.Fatalf("PlaintextAddrs(%q) dials %q, not a loopback literal", host, a)
			}
		}
	})
}

func TestDialFirst(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := closed.Addr().String()
	_ = closed.Close()

	conn, err := DialFirst(context.Background(), &net.Dialer{}, []string{dead, ln.Addr().String()})
	if err != nil {
		t.Fatalf("DialFirst: got %v, want the second address", err)
	}
	if got := conn.RemoteAddr().String(); got != ln.Addr().String() {
		t.Errorf("connected to %s, want %s", got, ln.Addr())
	}
	_ = conn.Close()
	if _, err := DialFirst(context.Background(), &net.Dialer{}, []string{dead}); err == nil {
		t.Error("DialFirst to a closed port: got nil, want an error")
	}
	if _, err := DialFirst(context.Background(), &net.Dialer{}, nil); err == nil {
		t.Error("DialFirst with no address: got nil, want an error")
	}
}
