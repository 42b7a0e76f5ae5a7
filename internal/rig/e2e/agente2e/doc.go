// Package agente2e is the end-to-end suite of the mailagent binary against
// the real mail stack of scripts/e2e-stack.sh: Dovecot (IMAP, IDLE, LMTP)
// and Postfix (SMTP) on 127.0.0.1, with a fake Gemini REST server in the
// test process standing in for the model.
//
// Contract:
//   - The package holds tests only. TestMain builds ./cmd/mailagent once
//     (with -race when the tests are built with it) and every test runs
//     that binary as a subprocess: `watch`, `watch --once`, `queue list`,
//     `doctor` and `review` (under tmux), with a config file of its own.
//   - Without MAILAGENT_E2E=1 every test is skipped (e2e.Require) and
//     nothing is built.
//   - Tests never reset the shared users' INBOX, Sent or Drafts folders,
//     which other packages use at the same time: each test has its own
//     state directory, unique Subjects and Message-IDs, and counts only the
//     messages that carry them. On the main Dovecot each env watches and
//     files into folders of its own (mail Postfix delivers is moved there),
//     so the tests run in parallel; on the shared INBOX of the other
//     servers sync.initial_lookback is tiny and the tests take turns.
//   - Processes are stopped by their own pid (SIGTERM, then SIGKILL), and on
//     failure a test prints the watcher's stderr and the tail of
//     <state_dir>/mailagent.log.
//
// See README.md in this directory for what each test proves.
package agente2e
