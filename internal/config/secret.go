package config

import (
	"fmt"
	"log/slog"
)

const redacted = "[redacted]"

// Secret holds a password, token or API key. Every way of printing or
// encoding it (fmt with any verb, JSON, text, slog) yields "[redacted]";
// only Reveal returns the value. The zero Secret is empty.
type Secret struct {
	v string
}

// NewSecret wraps a value.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the secret value. Call it only where the value is handed
// to the protocol that needs it.
func (s Secret) Reveal() string { return s.v }

// Empty reports whether the secret holds no value.
func (s Secret) Empty() bool { return s.v == "" }

// String implements fmt.Stringer.
func (Secret) String() string { return redacted }

// GoString implements fmt.GoStringer (%#v).
func (Secret) GoString() string { return redacted }

// Format implements fmt.Formatter so that no verb (%d, %x, %+v …) can reach
// the value through reflection.
func (Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalJSON implements json.Marshaler.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler.
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// UnmarshalText implements encoding.TextUnmarshaler, so that a literal
// secret in the TOML file decodes straight into a Secret.
func (s *Secret) UnmarshalText(b []byte) error {
	s.v = string(b)
	return nil
}

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }
