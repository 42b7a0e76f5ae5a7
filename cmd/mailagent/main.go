// Command mailagent is a terminal-first email triage agent for any IMAP
// mailbox. See README.md for what it does and docs/ARCHITECTURE.md for how.
package main

import (
	"os"

	"github.com/mailagent/mailagent/internal/cmd/root"
	"github.com/mailagent/mailagent/internal/iostreams"
)

func main() { os.Exit(root.Main(os.Args[1:], iostreams.System(), nil)) }
