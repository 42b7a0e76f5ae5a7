package cmdutil

import "runtime/debug"

// Set by the release build through -ldflags
// "-X github.com/mailagent/mailagent/internal/cmdutil.version=…".
var (
	version = ""
	commit  = ""
	date    = ""
)

// Version is the stamped version, or what the Go toolchain recorded
// when built with `go install` or `go build`.
func Version() string {
	v, c, d := version, commit, date
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && c == "":
				c = s.Value
			case s.Key == "vcs.time" && d == "":
				d = s.Value
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	out := v
	if c != "" {
		if len(c) > 12 {
			c = c[:12]
		}
		out += " (" + c
		if d != "" {
			out += ", " + d
		}
		out += ")"
	}
	return out
}
