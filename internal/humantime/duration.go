package humantime

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DurationGrammar describes, for help texts and errors, the one grammar
// of durations every flag and configuration key accepts (ParseDuration).
const DurationGrammar = "a duration such as 90s, 15m, 4h, 1h30m, 2d or 1w (d = 24h, w = 7d)"

// ParseDuration is the one duration parser: every flag and configuration
// key that takes a duration reads it here, so that they all accept the
// same text. The grammar is Go's (time.ParseDuration: an optional sign,
// then one or more decimal numbers each with a unit, "ns", "us", "µs",
// "ms", "s", "m", "h"), plus two units of its own: "d", a day of 24 hours,
// and "w", a week of 7 such days ("2d", "1w2d", "1.5d", "1d12h"). Space
// around the text is ignored; letters may be upper case. A bare number
// other than 0 has no unit and is an error. Callers check the range they
// accept (a snooze must be positive, a look-back not negative).
func ParseDuration(s string) (time.Duration, error) {
	in := s
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0, errors.New("empty duration: want " + DurationGrammar)
	}
	if !strings.ContainsAny(s, "dw") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not %s", in, DurationGrammar)
		}
		return d, nil
	}
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg, s = s[0] == '-', s[1:]
	}
	var total time.Duration
	for s != "" {
		i := 0
		for i < len(s) && (s[i] == '.' || (s[i] >= '0' && s[i] <= '9')) {
			i++
		}
		j := i
		for j < len(s) && !(s[j] == '.' || (s[j] >= '0' && s[j] <= '9')) {
			j++
		}
		num, unit := s[:i], s[i:j]
		if num == "" || unit == "" {
			return 0, fmt.Errorf("%q is not %s", in, DurationGrammar)
		}
		var part time.Duration
		switch unit {
		case "d", "w":
			f, err := strconv.ParseFloat(num, 64)
			day := 24 * float64(time.Hour)
			if unit == "w" {
				day *= 7
			}
			if err != nil || f*day > float64(1<<62) {
				return 0, fmt.Errorf("%q is not %s", in, DurationGrammar)
			}
			part = time.Duration(f * day)
		default:
			d, err := time.ParseDuration(num + unit)
			if err != nil {
				return 0, fmt.Errorf("%q is not %s", in, DurationGrammar)
			}
			part = d
		}
		if total > time.Duration(1<<62)-part {
			return 0, fmt.Errorf("%q is too long a duration", in)
		}
		total += part
		s = s[j:]
	}
	if neg {
		total = -total
	}
	return total, nil
}
