package config

import (
	"errors"
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

// UnmarshalTOML implements toml.Unmarshaler: a secret must be a TOML
// string. Without this a bare number (password = 123) would be turned
// into text silently, and a value such as 0123 or 1e3 would not be the
// password the owner typed. The error never shows the value.
func (s *Secret) UnmarshalTOML(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("%w: a secret must be a quoted string, not a TOML %T: put the value in double quotes (password = \"…\")", ErrSecretNotString, v)
	}
	s.v = str
	return nil
}

// ErrSecretNotString reports a literal secret written without quotes.
var ErrSecretNotString = errors.New("secret is not a string")
