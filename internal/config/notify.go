package config

import (
	"fmt"
	"runtime"
)

// Notify configures desktop notifications ([notify]).
type Notify struct {
	// Desktop: watch tells the desktop when an item needs the owner (a
	// draft to approve, a message set aside for review), with the sender
	// and the subject only (internal/notify). Default false. On a host
	// without a desktop session watch says so once in the log.
	Desktop bool `toml:"desktop"`
}

// notifyOSes are the systems internal/notify can reach a desktop on: the
// freedesktop D-Bus protocol, or osascript on macOS.
var notifyOSes = map[string]bool{
	"linux": true, "freebsd": true, "netbsd": true, "openbsd": true, "dragonfly": true,
	"illumos": true, "solaris": true, "darwin": true,
}

func (n Notify) validate(p *problems, goos string) {
	if n.Desktop && !notifyOSes[goos] {
		p.add("notify.desktop", fmt.Sprintf("desktop notifications are not supported on %s", goos),
			"set desktop = false, or leave [notify] out")
	}
}

// validateNotify checks [notify] for the running system.
func (c *Config) validateNotify(p *problems) { c.Notify.validate(p, runtime.GOOS) }
