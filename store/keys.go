package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/mailagent/mailagent/internal/mail"
)

// maxKeyPart is the longest piece of outside text (a Message-ID, an
// address, a thread id) used as is in a key; longer text is hashed. bbolt
// allows keys of 32 KiB, but a hostile header should not get near that.
const maxKeyPart = 512

// hashedPrefix marks a key part that is a hash of the text, not the text.
// "#" cannot start a normalized Message-ID in practice, and the check in
// keyPart hashes any text that starts with it, so the two never collide.
const hashedPrefix = "#sha256:"

// keyPart returns text (already normalized by the caller) as it may appear
// between the \0 separators of a key: itself when it is short valid UTF-8
// without NUL or other control bytes, else hashedPrefix + the SHA-256 of
// the text. unsafe reports the second case. Every key built from outside
// text goes through it, so that no message can fail to be stored because
// of its headers.
func keyPart(text string) (part string, unsafe bool) {
	if keyHashOff.Load() {
		return text, false
	}
	if len(text) <= maxKeyPart && utf8.ValidString(text) && !strings.HasPrefix(text, hashedPrefix) &&
		strings.IndexFunc(text, func(r rune) bool { return r < 0x20 || r == 0x7f }) < 0 {
		return text, false
	}
	sum := sha256.Sum256([]byte(text))
	return hashedPrefix + hex.EncodeToString(sum[:]), true
}

// keyHashOff makes keyPart use every text as it is, hashing nothing. It
// exists only for the positive controls of the hostile-key tests (here
// and in agent), to show those attacks landing without the hash; nothing
// in the product sets it.
var keyHashOff atomic.Bool

// SwitchOffKeyHashForTest turns keyPart's hashing off (keyHashOff) until
// the returned function is called. Only adversarial tests' positive
// controls call it, and never from a parallel test.
func SwitchOffKeyHashForTest() (restore func()) {
	keyHashOff.Store(true)
	return func() { keyHashOff.Store(false) }
}

// idKey is the key part of a Message-ID: mail.IDKey (the one Message-ID
// key), then made safe.
func idKey(messageID string) string {
	k, _ := keyPart(mail.IDKey(messageID))
	return k
}

// emailKey is the key part of a contact address: mail.AddrKey (the one
// address key), then made safe.
func emailKey(email string) string {
	k, _ := keyPart(mail.AddrKey(email))
	return k
}

// unsafeKeyReason says why a Message-ID was indexed under a hash, or "".
func unsafeKeyReason(messageID string) string {
	id := mail.IDKey(messageID)
	if _, unsafe := keyPart(id); !unsafe {
		return ""
	}
	switch {
	case strings.IndexByte(id, 0) >= 0:
		return "message-id contains a NUL byte; indexed under its hash"
	case len(id) > maxKeyPart:
		return "message-id is longer than 512 bytes; indexed under its hash"
	case !utf8.ValidString(id):
		return "message-id is not valid UTF-8; indexed under its hash"
	default:
		return "message-id contains control characters; indexed under its hash"
	}
}

// threadKey is the key part of a thread id (mailagent makes them, but a
// stored record may carry any text).
func threadKey(threadID string) string {
	k, _ := keyPart(threadID)
	return k
}
