// Package humantime formats times for people on a terminal, the same way
// in every listing and in the review app: Age says how long ago something
// happened in at most four characters ("now", "5m", "3h", "2d"), "-" for
// an unknown (zero) time. A time in the future counts as "now". It also
// holds the one duration grammar (ParseDuration) that every flag and
// configuration key taking a duration accepts. It imports nothing from
// the project (a leaf library).
package humantime

import (
	"strconv"
	"time"
)

// Age formats how long before now t was: "now" under a minute (or when t
// is after now), minutes under an hour, hours under two days, then days;
// "-" when t is zero.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "now"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	default:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
}

// Latency shows a push latency to a tenth of a second under a minute, to
// the second above.
func Latency(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
