package mail

import (
	"regexp"
	"strings"
	"sync"
)

// TextParts is a body split into what the sender wrote now, the quoted
// history and the signature.
type TextParts struct {
	Clean     string // never empty when the input has non-space text
	Quoted    string // ">" lines, attribution lines, Outlook/forwarded history
	Signature string // after "-- " / "--", plus mobile footers
	Forwarded bool   // a "Forwarded message" block was found (kept in Quoted)
}

// Attribution and header-block recognition is hand-written (plain string
// tests) because a regexp per line was a fifth of the parse time; the
// regexps below only run on lines that already passed a cheap byte test.
var (
	attributionStarts = []string{"on ", "le ", "am ", "el ", "il ", "op ", "den ", "em ", "w dniu ", "dne ", "в "}
	attributionVerbs  = []string{"wrote", "writes", "a écrit", "schrieb", "escribió", "ha scritto", "schreef", "skrev", "napisał", "escreveu", "napsal", "написал", "said"}
	headerFromLabels  = map[string]bool{"from": true, "de": true, "von": true, "van": true, "da": true, "från": true, "fra": true, "od": true, "от": true}
	headerDateLabels  = map[string]bool{"sent": true, "date": true, "envoyé": true, "gesendet": true, "enviado": true, "enviada": true, "inviato": true, "verzonden": true, "skickat": true, "sendt": true, "data": true, "datum": true, "fecha": true, "wysłano": true}
	headerToLabels    = map[string]bool{"to": true, "subject": true, "à": true, "a": true, "an": true, "para": true, "objet": true, "betreff": true, "asunto": true, "oggetto": true, "onderwerp": true, "aan": true, "ämne": true, "emne": true, "temat": true, "cc": true}

	originalMarker = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^-{2,}\s*(original message|original-nachricht|ursprüngliche nachricht|message d'origine|mensaje original|messaggio originale|oorspronkelijk bericht|originalmeddelande|mensagem original|oryginalna wiadomość)\s*-*$`)
	})
	forwardMarker = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(-{2,}\s*(forwarded message|weitergeleitete nachricht|message transféré|mensaje reenviado|messaggio inoltrato|doorgestuurd bericht|mensagem encaminhada|forwarded by)|begin forwarded message:|-{2,}\s*forwarded message from\b)`)
	})
	mobileFooter = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(sent (from|via|with|using) (my |the )?(iphone|ipad|android|blackberry|mobile|samsung|galaxy|windows phone|huawei|pixel|phone|smartphone|cell|tablet|aquamail|yahoo mail|outlook|mail for|gmail|proton)|get outlook for (ios|android)|envoyé de mon (iphone|ipad|smartphone|mobile)|von meinem (iphone|ipad|smartphone|handy|mobiltelefon)( gesendet)?|enviado desde mi (iphone|ipad|smartphone|móvil|celular|android)|inviato da (iphone|ipad|smartphone|il mio)|verzonden vanaf mijn (iphone|ipad)|skickat från min (iphone|ipad))`)
	})
)

type lineKind uint8

const (
	kindClean lineKind = iota
	kindQuoted
	kindSig
)

// SplitText splits a body (Message.Text) into clean text, quoted history and
// signature. History begins at an Outlook "Original Message" separator or
// header block, a "Forwarded message" marker, or an "On … wrote:"
// attribution not followed by ">" lines; everything from there on is
// quoted. Before that, ">" lines (with their attribution) are quoted and the
// rest is clean, so interleaved replies keep every answer. A "-- " or "--"
// line starts the signature; a trailing mobile footer ("Sent from my
// iPhone") joins it. When nothing clean is left, Clean is the whole text.
func SplitText(text string) TextParts {
	var tp TextParts
	if strings.TrimSpace(text) == "" {
		tp.Clean = text
		return tp
	}
	text = normalizeNewlines(text)
	lines := strings.Split(text, "\n")
	kind := make([]lineKind, len(lines))

	cut := len(lines)
scan:
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			continue
		}
		if isQuoteLine(lines[i]) {
			kind[i] = kindQuoted
			continue
		}
		if (strings.HasPrefix(t, "--") && hasLetter(t)) || (len(t) >= 24 && strings.EqualFold(t[:24], "begin forwarded message:")) {
			if forwardMarker().MatchString(t) {
				cut, tp.Forwarded = i, true
				break scan
			}
			if originalMarker().MatchString(t) {
				cut = i
				break scan
			}
		}
		if isOutlookHeaderBlock(lines, i) {
			cut = i
			// An underscore/dash rule just above belongs to the history.
			if j := prevNonBlank(lines, i); j >= 0 && isRule(strings.TrimSpace(lines[j])) {
				cut = j
			}
			break scan
		}
		if n, strong := attribution(lines, i); n > 0 {
			nxt := nextNonBlank(lines, i+n)
			if nxt >= 0 && isQuoteLine(lines[nxt]) {
				for k := i; k < i+n; k++ {
					kind[k] = kindQuoted
				}
				i += n - 1
				continue
			}
			if strong && strings.ContainsAny(lines[i]+lines[min(i+n-1, len(lines)-1)], "0123456789@") {
				cut = i
				break scan
			}
		}
	}
	for i := cut; i < len(lines); i++ {
		kind[i] = kindQuoted
	}

	// Signature: the first delimiter in the clean region.
	for i := 0; i < cut; i++ {
		if kind[i] != kindClean {
			continue
		}
		l := strings.TrimRight(lines[i], "\r")
		if l != "-- " && l != "--" {
			continue
		}
		if l == "--" && countKind(kind[i:cut], kindClean) > 15 {
			continue // a bare "--" followed by a lot is more likely a rule
		}
		for k := i; k < cut; k++ {
			if kind[k] == kindClean {
				kind[k] = kindSig
			}
		}
		break
	}
	// Mailing-list footer: a long rule line near the end of the clean
	// region followed by list boilerplate ("… mailing list", unsubscribe,
	// "sponsored by"). Scanned from the end so the cost stays linear.
	for i := cut - 1; i >= 0 && cut-i <= 16; i-- {
		t := strings.TrimSpace(lines[i])
		if kind[i] != kindClean || len(t) < 20 || !isRule(t) {
			continue
		}
		tail := strings.ToLower(strings.Join(lines[i+1:cut], " "))
		if strings.Contains(tail, "mailing list") || strings.Contains(tail, "unsubscribe") || strings.Contains(tail, "sponsored by") {
			for k := i; k < cut; k++ {
				if kind[k] == kindClean {
					kind[k] = kindSig
				}
			}
		}
	}
	// Mobile footer: among the last two non-blank clean lines.
	seen := 0
	for i := cut - 1; i >= 0 && seen < 2; i-- {
		if kind[i] != kindClean || strings.TrimSpace(lines[i]) == "" {
			continue
		}
		seen++
		if t := strings.TrimSpace(lines[i]); len(t) < 80 && mobileFooter().MatchString(t) {
			for k := i; k < cut; k++ {
				if kind[k] == kindClean {
					kind[k] = kindSig
				}
			}
		}
	}
	// Blank lines between quoted lines are quoted (one linear pass: prevQ
	// says whether the last non-blank line was quoted).
	prevQ, runStart := false, -1
	for i := range lines {
		if strings.TrimSpace(lines[i]) == "" {
			if runStart < 0 {
				runStart = i
			}
			continue
		}
		if runStart >= 0 && prevQ && kind[i] == kindQuoted {
			for k := runStart; k < i; k++ {
				if kind[k] == kindClean {
					kind[k] = kindQuoted
				}
			}
		}
		runStart = -1
		prevQ = kind[i] == kindQuoted
	}

	var n [3]int
	for _, k := range kind {
		n[k]++
	}
	clean, quoted, sig := make([]string, 0, n[kindClean]), make([]string, 0, n[kindQuoted]), make([]string, 0, n[kindSig])
	for i, l := range lines {
		switch kind[i] {
		case kindClean:
			clean = append(clean, l)
		case kindQuoted:
			quoted = append(quoted, l)
		case kindSig:
			sig = append(sig, l)
		}
	}
	tp.Clean = joinTrim(clean)
	tp.Quoted = joinTrim(quoted)
	tp.Signature = joinTrim(sig)
	if tp.Clean == "" {
		tp.Clean = strings.TrimSpace(text)
	}
	return tp
}

func isQuoteLine(l string) bool {
	for i := 0; i < len(l) && i < 4; i++ {
		switch l[i] {
		case '>':
			return true
		case ' ', '\t':
			continue
		}
		return false
	}
	return false
}

// attribution returns how many lines (1 or 2) form an attribution line at i,
// and whether it is the "On … wrote:" kind that marks history even without
// ">" lines after it.
func attribution(lines []string, i int) (n int, strong bool) {
	t := strings.TrimSpace(lines[i])
	if len(t) > 400 {
		return 0, false
	}
	if strings.HasSuffix(t, ":") {
		return attributionKind(t, 1)
	}
	// Wrapped over two lines.
	if i+1 < len(lines) {
		t2 := strings.TrimSpace(lines[i+1])
		if strings.HasSuffix(t2, ":") && len(t2) < 200 && !isQuoteLine(lines[i+1]) {
			if n, strong := attributionKind(t+" "+t2, 2); n > 0 && (strong || strings.Contains(t, "@")) {
				return n, strong
			}
		}
	}
	return 0, false
}

// attributionKind classifies a candidate line t that ends in ':'.
func attributionKind(t string, lines int) (int, bool) {
	lower := strings.ToLower(t)
	verb := false
	for _, v := range attributionVerbs {
		if i := strings.Index(lower, v); i >= 0 && (i == 0 || !isWordByte(lower[i-1])) {
			verb = true
			break
		}
	}
	if !verb {
		if strings.HasPrefix(lower, "quoting ") {
			return lines, false
		}
		return 0, false
	}
	for _, p := range attributionStarts {
		if strings.HasPrefix(lower, p) {
			return lines, true
		}
	}
	return lines, false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// headerLabel returns the lower-cased label of a "Label: value" line
// (Outlook bolds them: "*From:*"), or "".
func headerLabel(t string) string {
	i := strings.IndexByte(t, ':')
	if i <= 0 || i > 20 {
		return ""
	}
	return strings.ToLower(strings.Trim(t[:i], "* \t"))
}

// isOutlookHeaderBlock reports whether lines[i] starts a "From: … Sent: …
// To: … Subject: …" block as Outlook writes above the quoted message.
func isOutlookHeaderBlock(lines []string, i int) bool {
	t := strings.TrimSpace(lines[i])
	if !headerFromLabels[headerLabel(t)] || len(strings.TrimSpace(t[strings.IndexByte(t, ':')+1:])) == 0 {
		return false
	}
	date, to := false, false
	for k := i + 1; k < len(lines) && k <= i+6; k++ {
		l := headerLabel(strings.TrimSpace(lines[k]))
		date = date || headerDateLabels[l]
		to = to || headerToLabels[l]
	}
	return date && to
}

func hasLetter(t string) bool {
	for i := 0; i < len(t); i++ {
		if c := t[i] | 0x20; c >= 'a' && c <= 'z' {
			return true
		}
	}
	return false
}

func isRule(t string) bool {
	if len(t) < 5 {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] != '_' && t[i] != '-' && t[i] != '=' {
			return false
		}
	}
	return true
}

func prevNonBlank(lines []string, i int) int {
	for j := i - 1; j >= 0; j-- {
		if strings.TrimSpace(lines[j]) != "" {
			return j
		}
	}
	return -1
}

func nextNonBlank(lines []string, i int) int {
	for j := i; j < len(lines); j++ {
		if strings.TrimSpace(lines[j]) != "" {
			return j
		}
	}
	return -1
}

func countKind(k []lineKind, want lineKind) int {
	n := 0
	for _, x := range k {
		if x == want {
			n++
		}
	}
	return n
}

// joinTrim joins lines and trims blank lines and trailing space at both ends.
func joinTrim(lines []string) string {
	return strings.Trim(strings.Join(lines, "\n"), " \t\n")
}
