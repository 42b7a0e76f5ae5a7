package guard

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/xurls/v2"

	"github.com/mailagent/mailagent/internal/mail"
)

// Fields are the parts of a reply that leave in the owner's name.
type Fields struct{ Subject, Body string }

// Trusted is what an outgoing reply may repeat: text and addresses from the owner
// (profile, the owner's own mail in the thread) and the final recipients.
type Trusted struct {
	Text      string
	Addresses []string
}

// emailRE finds plain ASCII email addresses (the profile's addresses for
// the allow-list). The guard itself reads addresses with guardEmail, after
// normalisation.
var emailRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)[a-z0-9._%+\-]+@[a-z0-9.\-]+\.[a-z]{2,}`) })

// Addresses returns the plain ASCII email addresses written in text, in
// order (duplicates kept): the caller adds those of the owner's profile to
// Trusted.Addresses. It reads the text as written, without the
// normalisation Check applies, so an obfuscated address is not found.
func Addresses(text string) []string { return emailRE().FindAllString(text, -1) }

// relaxedURL is xurls' relaxed pattern (links with or without a scheme).
// It is compiled on first use: compiling it takes tens of milliseconds,
// which `mailagent --help` should not pay.
var relaxedURL = sync.OnceValue(xurls.Relaxed)

// guardREs are the guard's own patterns, compiled on first use.
type guardREs struct {
	email, codes *regexp.Regexp
	dates        []*regexp.Regexp
	payments     []paymentPattern
}

type paymentPattern struct {
	name  string
	hints []string // lower-case words one of which every match holds
	re    *regexp.Regexp
}

// find returns the first match of p in s (lower is s in lower case), or nil.
func (p paymentPattern) find(s, lower string) []int {
	if !slices.ContainsFunc(p.hints, func(h string) bool { return strings.Contains(lower, h) }) {
		return nil
	}
	return p.re.FindStringIndex(s)
}

var guardPatterns = sync.OnceValue(func() *guardREs {
	const hs = `[ \t]`
	g := &guardREs{
		email: regexp.MustCompile(`[\p{L}\p{N}._%+\-]+@(?:[\p{L}\p{N}](?:[\p{L}\p{N}\-]*[\p{L}\p{N}])?\.)+(?:\p{L}{2,}|(?i:xn--[a-z0-9\-]+))`),
		// Account, card and wallet codes: bech32 and base58 wallet
		// addresses, and any long run of letters and digits (IBANs written
		// without spaces, Ethereum addresses, keys); the last is kept only
		// when it mixes letters and digits.
		codes: regexp.MustCompile(`(?i:\b(?:bc|tb|ltc)1[02-9ac-hj-np-z]{11,87}\b)|\b[13T][1-9A-HJ-NP-Za-km-z]{25,34}\b|\b[A-Za-z0-9]{20,}\b`),
		dates: []*regexp.Regexp{
			regexp.MustCompile(`\b(?:19|20)\d\d[-/.](?:0?[1-9]|1[0-2])[-/.](?:0?[1-9]|[12]\d|3[01])\b`),
			regexp.MustCompile(`\b(?:0?[1-9]|[12]\d|3[01])[-/.](?:0?[1-9]|[12]\d|3[01])[-/.](?:(?:19|20)\d\d|\d\d)\b`),
			regexp.MustCompile(`\b(?:19|20)\d\d` + hs + `*[-/]` + hs + `*(?:(?:19|20)\d\d|\d\d)\b`),
			regexp.MustCompile(`\b(?:[01]?\d|2[0-3])[:h][0-5]\d(?::[0-5]\d)?\b`),
		},
	}
	for _, p := range []struct{ name, hints, re string }{
		{"IBAN", "iban", `(?i)\biban\b`},
		{"SWIFT/BIC", "swift bic", `\bSWIFT\b|(?i:\bswift` + hs + `*(?:code|/|number|no\b|address))|(?i:\bbic\b)`},
		{"wire transfer", "wir", `(?i)\bwir(?:e|ed|ing)` + hs + `+(?:(?:me|us|them|him|her|the|a|an|this|that|remaining|outstanding|full|total|whole|agreed|same|first|final|deposit)` + hs + `+){0,3}` +
			`(?:transfers?|payments?|instructions|details|funds?|money|amount|balance|deposit|sum|fee|invoice|\d|[$€£¥]|to\b)|\b(?:by|via|per)` + hs + `+wire\b`},
		{"bank transfer", "bank", `(?i)\bbank(?:ing)?` + hs + `*-?` + hs + `*(?:transfer|details|account|wire|info|information|deposit)s?\b`},
		{"account number", "account acct a/c routing sort beneficiary", `(?i)\b(?:account|acct|a/c)` + hs + `*(?:number|nr\b|no\.|no` + hs + `*[:#]?` + hs + `*\d|num\b|#)|\brouting` + hs + `+number|\bsort` + hs + `+code|\bbeneficiary\b`},
		{"changed payment details", "new updated different changed", `(?i)\b(?:new|updated|different|changed)` + hs + `+(?:bank|banking|account|payment|remittance)` + hs + `+(?:details|information|info|account|number|instructions)`},
		{"gift card", "gift card", `(?i)\bgift` + hs + `*-?` + hs + `*(?:card|voucher|code)s?\b|\b(?:itunes|google` + hs + `*play|steam|amazon|apple|ebay)` + hs + `*-?` + hs + `*(?:gift` + hs + `*)?cards?\b`},
		{"crypto wallet", "bitcoin btc ethereum usd tether litecoin monero xmr crypto wallet", `(?i)\b(?:bitcoins?|btc|ethereum|usdt|usdc|tether|litecoin|monero|xmr|crypto(?:currency|currencies)?)\b|\bwallet` + hs + `+address`},
		{"money transfer service", "western moneygram zelle venmo cash", `(?i)\b(?:western` + hs + `*union|moneygram|zelle|venmo|cash` + hs + `*app)\b`},
	} {
		g.payments = append(g.payments, paymentPattern{p.name, strings.Fields(p.hints), regexp.MustCompile(p.re)})
	}
	return g
})

// Check lists why a reply may not be sent automatically; empty = passes.
//
// Every field is read the way a person would read it (see normalize and
// deobfuscate: NFKC, invisible characters dropped, digits of every script
// and look-alike letters in numbers folded, "pay at evil dot test",
// "evil[.]test", hxxp and full-width or ideographic punctuation undone),
// and then must not contain an address, a link, a number of six digits or
// more, an account or wallet code, or payment instructions that the
// trusted text and addresses do not contain. The body must also be
// non-empty and at most maxChars characters (when maxChars > 0). Each
// problem quotes the text as written, escaped so that it holds no control
// or invisible characters.
func Check(out Fields, trusted Trusted, maxChars int) []string {
	var problems []string
	body, subject := normalize(out.Body), normalize(out.Subject)
	if strings.TrimSpace(body.s) == "" {
		problems = append(problems, "the draft is empty") // invisible characters are nothing
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(out.Body)); maxChars > 0 && n > maxChars {
		problems = append(problems, fmt.Sprintf("the draft has %d characters, at most %d", n, maxChars))
	}
	if strings.TrimSpace(body.s) == "" && strings.TrimSpace(subject.s) == "" {
		return problems
	}
	if trustCheckOff.Load() {
		return problems
	}
	tr := trustIndexFor(trusted)
	problems = append(problems, tr.check("", body)...)
	problems = append(problems, tr.check("subject: ", subject)...)
	return problems
}

// trustCheckOff, set only by tests (never in parallel, restored before
// they return), makes Check skip the comparison with the trusted text and
// addresses (addresses, links, numbers, codes, payment instructions),
// keeping only the empty and length checks: the positive control of the
// hostile-draft corpus. No product code sets it.
var trustCheckOff atomic.Bool

// SwitchOffTrustCheckForTest sets trustCheckOff until the returned
// function is called, for the positive controls of adversarial tests in
// other packages. Never call it from a parallel test or product code.
func SwitchOffTrustCheckForTest() (restore func()) {
	trustCheckOff.Store(true)
	return func() { trustCheckOff.Store(false) }
}

// trustIndex is the trusted text and addresses in the form the checks
// compare with. Only the canonical text is read when the index is made;
// each set the checks compare with is built from it the first time a
// draft needs it (most drafts hold no link, long number, code or payment
// word, and xurls' pattern over the trusted words was most of the cost
// of a check). An index never changes once a set is built: indexes are
// shared by concurrent checks (see trustIndexFor).
type trustIndex struct {
	s     string   // the trusted text as read, the addresses on lines of their own
	given []string // the addresses as given, as keys

	addrsOnce sync.Once
	addrs     map[string]bool
	emails    [][]int // the addresses in s

	linksOnce sync.Once
	links     []linkKey

	numbersOnce sync.Once
	numbers     []string // digit runs, leading zeros removed

	compactOnce sync.Once
	compact     string // lower-case canonical text without spaces or dashes

	paymentsOnce sync.Once
	payments     map[string]bool
}

// trustIndexes keeps the indexes of the Trusted last checked against: the
// same profile, thread and recipients come back for every draft of a
// thread and every gate evaluation of one reply. An index is a function
// of its Trusted alone, so keeping it changes no answer.
var trustIndexes struct {
	sync.Mutex
	m     map[string]*trustIndex
	bytes int // of the keys
}

// Bounds of trustIndexes: entries, bytes of trusted text, and the largest
// trusted text kept.
const (
	maxTrustIndexes     = 64
	maxTrustIndexBytes  = 4 << 20
	maxTrustIndexedText = 256 << 10
)

// trustIndexFor returns the index of tr, made once per distinct tr while
// it is kept.
func trustIndexFor(tr Trusted) *trustIndex {
	key := trustKey(tr)
	if len(key) > maxTrustIndexedText {
		return newTrustIndex(tr)
	}
	c := &trustIndexes
	c.Lock()
	ti := c.m[key]
	c.Unlock()
	if ti != nil {
		return ti
	}
	ti = newTrustIndex(tr)
	c.Lock()
	defer c.Unlock()
	if old := c.m[key]; old != nil {
		return old // made meanwhile by another check: share it
	}
	if c.m == nil {
		c.m = map[string]*trustIndex{}
	}
	for k := range c.m { // evict any: the map's order is arbitrary
		if len(c.m) < maxTrustIndexes && c.bytes+len(key) <= maxTrustIndexBytes {
			break
		}
		delete(c.m, k)
		c.bytes -= len(k)
	}
	c.m[key] = ti
	c.bytes += len(key)
	return ti
}

// trustKey is tr as one string, each part preceded by its length so that
// no two Trusted share a key.
func trustKey(tr Trusted) string {
	var b strings.Builder
	n := len(tr.Text) + 12
	for _, a := range tr.Addresses {
		n += len(a) + 12
	}
	b.Grow(n)
	b.WriteString(strconv.Itoa(len(tr.Text)))
	b.WriteByte(':')
	b.WriteString(tr.Text)
	for _, a := range tr.Addresses {
		b.WriteString(strconv.Itoa(len(a)))
		b.WriteByte(':')
		b.WriteString(a)
	}
	return b.String()
}

func newTrustIndex(tr Trusted) *trustIndex {
	ti := &trustIndex{}
	text := tr.Text
	for _, a := range tr.Addresses {
		a = strings.TrimPrefix(mail.AddrKey(a), "mailto:")
		ti.given = append(ti.given, mail.AddrKey(normalize(a).s))
		text += "\n" + a
	}
	ti.s = deobfuscate(normalize(text)).s
	return ti
}

// hasAddr reports whether addr (a key) is a given address or one written
// in the trusted text.
func (ti *trustIndex) hasAddr(addr string) bool {
	ti.addrsOnce.Do(ti.readAddrs)
	return ti.addrs[addr]
}

func (ti *trustIndex) readAddrs() {
	ti.addrs = map[string]bool{}
	for _, a := range ti.given {
		ti.addrs[a] = true
	}
	ti.emails = guardPatterns().email.FindAllStringIndex(ti.s, -1)
	for _, m := range ti.emails {
		ti.addrs[mail.AddrKey(ti.s[m[0]:m[1]])] = true
	}
}

// allowsLink reports whether a trusted link vouches for k.
func (ti *trustIndex) allowsLink(k linkKey) bool {
	ti.linksOnce.Do(func() {
		ti.addrsOnce.Do(ti.readAddrs)
		// A trusted word too long to read vouches for nothing; a word
		// that is one address holds no link (findLinks drops what
		// overlaps an address).
		links, _ := findLinks(ti.s, ti.emails, true)
		for _, l := range links {
			if k, ok := parseLink(ti.s[l[0]:l[1]]); ok {
				ti.links = append(ti.links, k)
			}
		}
	})
	return slices.ContainsFunc(ti.links, k.allowedBy)
}

// hasNumber reports whether digits d (leading zeros removed) are part of a
// number of the trusted text.
func (ti *trustIndex) hasNumber(d string) bool {
	ti.numbersOnce.Do(func() {
		for _, r := range numberRuns(maskDates(ti.s)) {
			ti.numbers = append(ti.numbers, strings.TrimLeft(r.digits, "0"))
		}
	})
	return slices.ContainsFunc(ti.numbers, func(n string) bool { return strings.Contains(n, d) })
}

// hasCode reports whether code (lower case) is written in the trusted
// text, spaces and dashes aside.
func (ti *trustIndex) hasCode(code string) bool {
	ti.compactOnce.Do(func() { ti.compact = compact(ti.s) })
	return strings.Contains(ti.compact, code)
}

// hasPayment reports whether the trusted text holds payment instructions
// of the kind named.
func (ti *trustIndex) hasPayment(name string) bool {
	ti.paymentsOnce.Do(func() {
		ti.payments = map[string]bool{}
		lower := strings.ToLower(ti.s)
		for _, p := range guardPatterns().payments {
			if p.find(ti.s, lower) != nil {
				ti.payments[p.name] = true
			}
		}
	})
	return ti.payments[name]
}

func compact(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// Problem wording: the owner reads these in the queue and in explain.
const (
	trustedWhere = "the trusted text (the owner's profile and own mail)"
	notTrusted   = "that is not in " + trustedWhere
	notRecipient = "that is not a recipient or in " + trustedWhere
)

// check lists the problems of one normalised field; prefix names the
// field.
func (ti *trustIndex) check(prefix string, field ntext) []string {
	if strings.TrimSpace(field.s) == "" {
		return nil
	}
	g := guardPatterns()
	t := deobfuscate(field)
	var problems []string
	seen := map[string]bool{}
	report := func(key, msg string) {
		if !seen[key] {
			seen[key] = true
			problems = append(problems, prefix+msg)
		}
	}

	emails := g.email.FindAllStringIndex(t.s, -1)
	for _, m := range emails {
		addr := mail.AddrKey(t.s[m[0]:m[1]])
		if !ti.hasAddr(addr) {
			report("a:"+addr, "names address "+quoteAs(addr, t.source(m[0], m[1]))+" "+notRecipient)
		}
	}
	links, tooLong := findLinks(t.s, emails, false)
	for _, w := range tooLong {
		written := t.source(w[0], w[1])
		report(fmt.Sprintf("w:%d", w[0]), fmt.Sprintf("has a word of %d characters (%s) too long or with too many links to check", utf8.RuneCountInString(written), quote(written)))
	}
	for _, l := range links {
		s := t.s[l[0]:l[1]]
		k, ok := parseLink(s)
		if ok && k.scheme == "mailto" {
			addr := mail.AddrKey(strings.TrimPrefix(k.path, "mailto:"))
			if !ti.hasAddr(addr) {
				report("a:"+addr, "names address "+quoteAs(addr, t.source(l[0], l[1]))+" "+notRecipient)
			}
			continue
		}
		if !ok || !ti.allowsLink(k) {
			report("l:"+strings.ToLower(s), "links to "+quoteAs(s, t.source(l[0], l[1]))+" "+notTrusted)
		}
	}
	runs := numberRuns(t.s)
	if slices.ContainsFunc(runs, func(r numRun) bool { return len(r.digits) >= 6 }) {
		runs = numberRuns(maskDates(t.s)) // masking only ever shortens runs
	}
	for _, r := range runs {
		if len(r.digits) < 6 {
			continue
		}
		d := strings.TrimLeft(r.digits, "0")
		if d != "" && ti.hasNumber(d) {
			continue
		}
		written := t.source(r.i, r.j)
		shown := quoteAs(r.digits, written)
		if onlyDigits(written) == r.digits && isPrintableASCII(written) {
			shown = quote(written)
		}
		report("n:"+r.digits, "names number "+shown+" "+notTrusted)
	}
	for _, m := range g.codes.FindAllStringIndex(t.s, -1) {
		code := t.s[m[0]:m[1]]
		if !isCode(code) || ti.hasCode(strings.ToLower(code)) {
			continue
		}
		report("c:"+strings.ToLower(code), "names account or wallet code "+quoteAs(code, t.source(m[0], m[1]))+" "+notTrusted)
	}
	var pay []string
	lower := strings.ToLower(t.s)
	for _, p := range g.payments {
		if m := p.find(t.s, lower); m != nil && !ti.hasPayment(p.name) {
			pay = append(pay, quoteAs(t.s[m[0]:m[1]], t.source(m[0], m[1])))
		}
	}
	if len(pay) > 0 {
		report("p", "gives payment instructions ("+strings.Join(pay, ", ")+") "+"that are not in "+trustedWhere)
	}
	return problems
}

// isCode keeps a long run of letters and digits only when it looks like a
// code, not a long word: wallet prefixes, or letters mixed with digits.
func isCode(s string) bool {
	if len(s) < 20 {
		return true // matched by a wallet pattern
	}
	var letter, digit bool
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case unicode.IsLetter(r):
			letter = true
		}
	}
	return letter && digit || len(s) <= 35 && (s[0] == '1' || s[0] == '3')
}

// maxLinkWord and maxLinksPerWord bound the work of reading one word for
// links. xurls' leftmost-longest search can read to the end of a word
// for every match in it, so a word of n bytes made of many short links
// ("1.1.1.1.1.1…") costs n² steps of a large pattern (2,000 bytes took
// seconds). A longer word, or one with more links, is not read; in a
// draft it is a problem of its own.
const (
	maxLinkWord     = 300
	maxLinksPerWord = 4
)

// findLinks returns xurls' matches in s that are not one of the email
// addresses already found (emails, in order), and the words too long to
// read (see maxLinkWord).
//
// xurls' pattern holds every top-level domain, and Go's regexp runs it
// over each byte, so it is only run over the words that can hold a link:
// a link never spans whitespace (normalize turned every space into ' ',
// '\t' or '\n') and always has a '.' or a ':'. With skipAddressWords,
// nor over a word that is one of the emails and holds no "://": every
// match in it overlaps the address and is dropped, so only tooLong could
// tell (the trusted text's caller ignores it).
func findLinks(s string, emails [][]int, skipAddressWords bool) (links, tooLong [][]int) {
	re := relaxedURL()
	emailGroup := re.SubexpIndex("relaxedEmail")
	var out [][]int
	e := 0 // emails[:e] end before the current word
	for i := 0; i < len(s); {
		if isSpaceByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isSpaceByte(s[j]) {
			j++
		}
		word := s[i:j]
		if !mayHoldLink(word) {
			i = j
			continue
		}
		if skipAddressWords {
			for e < len(emails) && emails[e][1] <= i {
				e++
			}
			if e < len(emails) && emails[e][0] == i && emails[e][1] == j && !strings.Contains(word, "://") {
				i = j
				continue
			}
		}
		var ms [][]int
		if len(word) <= maxLinkWord {
			ms = re.FindAllStringSubmatchIndex(word, maxLinksPerWord+1)
		}
		if len(word) > maxLinkWord || len(ms) > maxLinksPerWord {
			tooLong = append(tooLong, []int{i, j})
			i = j
			continue
		}
		for _, m := range ms {
			if emailGroup > 0 && m[2*emailGroup] >= 0 {
				continue
			}
			a, b := i+m[0], i+m[1]
			if !strings.Contains(s[a:b], "://") && slices.ContainsFunc(emails, func(e []int) bool { return a < e[1] && e[0] < b }) {
				continue
			}
			out = append(out, []int{a, b})
		}
		i = j
	}
	return out, tooLong
}

// mayHoldLink reports whether a word has what every link xurls finds has:
// a ':' (a scheme, an IPv6 address) or a '.' followed by a letter or digit
// (a domain name, an IPv4 address). "Thanks." and "3." are skipped.
func mayHoldLink(w string) bool {
	if strings.IndexByte(w, ':') >= 0 {
		return true
	}
	for k := strings.IndexByte(w, '.'); k >= 0 && k+1 < len(w); {
		if c := w[k+1]; c >= 0x80 || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return true
		}
		n := strings.IndexByte(w[k+1:], '.')
		if n < 0 {
			break
		}
		k += 1 + n
	}
	return false
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// linkKey is a link in the form links are compared in: lower case, the
// host without a trailing dot, the path cleaned, no fragment.
type linkKey struct {
	scheme, host, path string // path includes ?query; for mailto: etc., the whole link
}

func parseLink(s string) (linkKey, bool) {
	l := strings.ToLower(s)
	if i := strings.Index(l, ":"); i > 0 && !strings.Contains(l, "://") && slices.Contains(xurls.SchemesNoAuthority, l[:i]) {
		return linkKey{scheme: l[:i], path: l}, true
	}
	scheme := ""
	if !strings.Contains(l, "://") {
		l = "http://" + l
	} else {
		scheme = l[:strings.Index(l, "://")]
	}
	u, err := url.Parse(l)
	if err != nil || u.Host == "" {
		return linkKey{}, false
	}
	k := linkKey{scheme: scheme, host: strings.TrimSuffix(u.Host, ".")}
	if p := u.Path; p != "" && p != "/" {
		k.path = path.Clean(p)
	}
	if u.RawQuery != "" {
		k.path += "?" + u.RawQuery
	}
	return k, true
}

// allowedBy reports whether trusted link t vouches for k: the same host,
// a web scheme or the same one, and a path that is t's path or under it
// (a bare host vouches for the whole site; naming a trusted link's bare
// host is allowed).
func (k linkKey) allowedBy(t linkKey) bool {
	if k.host == "" || t.host == "" {
		return k == t
	}
	web := func(s string) bool { return s == "" || s == "http" || s == "https" }
	if k.host != t.host || !(web(k.scheme) && web(t.scheme) || k.scheme == t.scheme) {
		return false
	}
	return t.path == "" || k.path == "" || k.path == t.path || strings.HasPrefix(k.path, t.path+"/")
}

// maskDates hides dates, year ranges and times ("2026-12-03", "3/12/26",
// "2025-2026", "14:00") from the number check by overwriting them with
// '#', keeping every other byte where it was.
func maskDates(s string) string {
	b := []byte(s)
	for _, re := range guardPatterns().dates {
		for _, m := range re.FindAllStringIndex(s, -1) {
			for i := m[0]; i < m[1]; i++ {
				b[i] = '#'
			}
		}
	}
	return string(b)
}

// numRun is a number as written: digit groups joined by one to three
// separators (space, - . / ( ) +) or a comma between digits.
type numRun struct {
	i, j   int
	digits string
}

// numberRuns finds the numbers of s. A group glued to a letter ("Q3",
// "10am", "INV123456") stands alone: it does not join its neighbours.
func numberRuns(s string) []numRun {
	type group struct {
		i, j  int
		glued bool
	}
	var gs []group
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[j:])
		gs = append(gs, group{i, j, unicode.IsLetter(before) || unicode.IsLetter(after)})
		i = j
	}
	joinable := func(gap string) bool {
		return gap == "," || len(gap) <= 3 && strings.Trim(gap, " \t-./()+") == ""
	}
	var out []numRun
	for k := 0; k < len(gs); k++ {
		r := numRun{i: gs[k].i, j: gs[k].j, digits: s[gs[k].i:gs[k].j]}
		if r.i > 0 && s[r.i-1] == '+' {
			r.i-- // the international prefix belongs to what is quoted
		}
		for !gs[k].glued && k+1 < len(gs) && !gs[k+1].glued && joinable(s[gs[k].j:gs[k+1].i]) {
			k++
			r.j = gs[k].j
			r.digits += s[gs[k].i:gs[k].j]
		}
		out = append(out, r)
	}
	return out
}

func onlyDigits(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// maxQuoted is how much of an offending text a problem quotes.
const maxQuoted = 80

// quote returns s as a Go string literal in ASCII: control, invisible and
// direction-changing characters are escaped, so a problem can be shown
// safely in a terminal and read for what it is.
func quote(s string) string {
	if utf8.RuneCountInString(s) > maxQuoted {
		s = string([]rune(s)[:maxQuoted]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

// quoteAs quotes what the guard read, and what was written when that
// differs.
func quoteAs(read, written string) string {
	if written == "" || written == read {
		return quote(read)
	}
	return quote(read) + " (written " + quote(written) + ")"
}
