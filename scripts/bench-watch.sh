#!/usr/bin/env bash
# bench-watch.sh: new-mail latency of `mailagent watch`, from Postfix
# accepting a message (SMTP DATA answered 250) to the decision recorded in
# the store, over N (default 50) messages delivered one at a time, with a
# zero-latency fake Gemini. In the same run an independent IMAP client
# IDLEs on the same mailbox, measuring Dovecot's own notify delay (SMTP 250
# to EXISTS) for the very same messages.
# "decided" = end of the trace's "decide" step (the record is saved right
# after it); "done" = the record's final UpdatedAt. Same machine, same clock.
# Needs: bash scripts/e2e-stack.sh start. Env: N, GAP (pause after each
# EXISTS, default 1s), BENCH_IMAP_SECURITY (insecure|starttls), DELAY (the
# model latency, default 0s), BENCH_PROVIDER (gemini|openai: which fake).
source "$(dirname "$0")/bench-lib.sh"
N=${N:-50}
USER_=bob@example.test
build
wait_imap
machine
"$BIN/benchtool" synth -user "$USER_" -mailbox INBOX -n 0 >/dev/null # empty INBOX
start_fake "${DELAY:-0s}" # the model latency, the same for every provider
write_config "$WORK/config.toml" "$WORK/state" "$USER_" INBOX 4
start_watch "$WORK/config.toml"
echo "watch is idle (pid $WATCH_PID, imap security ${BENCH_IMAP_SECURITY:-insecure}); delivering $N messages"
"$BIN/benchtool" deliver -user "$USER_" -n "$N" -gap "${GAP:-1s}" -out "$WORK/timings.jsonl"
sleep 2
stop_pid "$WATCH_PID"
stop_pid "$FAKE_PID"
cat "$WORK/fake.out"
"$BIN/benchtool" decided -state "$WORK/state" -account bench -in "$WORK/timings.jsonl"
