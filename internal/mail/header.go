package mail

import "net/textproto"

func canonicalKey(name string) string { return textproto.CanonicalMIMEHeaderKey(name) }
