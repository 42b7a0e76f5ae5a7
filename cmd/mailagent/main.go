// Command mailagent is a terminal-first email triage agent for any IMAP
// mailbox. See README.md for what it does and docs/ARCHITECTURE.md for how.
package main

import "os"

func main() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
