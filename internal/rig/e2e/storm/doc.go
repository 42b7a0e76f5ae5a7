// Package storm is the end-to-end fault storm of the mailagent binary
// against the real mail stack of scripts/e2e-stack.sh (Dovecot, Postfix
// with its DKIM/DMARC milters): a burst of auto-answerable mail while the
// SMTP server refuses AUTH with a transient 454 and `mailagent watch` is
// killed with SIGKILL and restarted again and again.
//
// Contract:
//   - The package holds tests only. TestMain builds ./cmd/mailagent once
//     (with -race when the tests are built with it); the test runs that
//     binary as a subprocess with a config file and state directory of its
//     own, and a fake Gemini REST server in the test process as the model.
//   - Without MAILAGENT_E2E=1, or under -short, the test skips and nothing
//     is built.
//   - The shared users' folders are never reset: every message carries a
//     tag unique to the run, and only those are counted.
//   - Processes are stopped by their own pid.
//
// scripts/fault-storm.sh runs it.
package storm
