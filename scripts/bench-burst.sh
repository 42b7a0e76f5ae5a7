#!/usr/bin/env bash
# bench-burst.sh: throughput of a burst of N (default 500) messages with a
# model that takes 300 ms per call, at llm.concurrency = 8. Ideal:
# 8 / 0.3 s = 26.7 msg/s. Every message is a synthetic mail from a person
# outside the account (route external), and the fake answers action
# "ignore", so each message costs exactly one 300 ms model call and no
# draft. The real binary runs `mailagent triage` against Dovecot with a
# fresh state directory; RUNS (default 3) runs, median reported.
# Two rates: end to end (N / wall time of the command, start-up, login and
# fetch included) and steady state (N / time from the first model request
# to the last model answer).
source "$(dirname "$0")/bench-lib.sh"
N=${N:-500}
RUNS=${RUNS:-3}
DELAY=${DELAY:-300ms}
CONC=${CONC:-8}
USER_=carol@example.test
MBOX=bench-burst
build
wait_imap
machine
"$BIN/benchtool" synth -user "$USER_" -mailbox "$MBOX" -n "$N"
ideal=$(echo "$CONC / ($(echo "$DELAY" | sed 's/ms$//') / 1000)" | bc -l)
wall=() steady=()
for i in $(seq "$RUNS"); do
	burst_run "run $i"
	w=$BURST_WALL s=$BURST_STEADY
	wall+=("$w") steady+=("$s")
	printf 'run %d: wall %.2f s -> %.2f msg/s (%.1f%% of ideal); steady %.2f msg/s (%.1f%%); %s\n' "$i" \
		"$BURST_SECS" "$w" "$(echo "100 * $w / $ideal" | bc -l)" "$s" "$(echo "100 * $s / $ideal" | bc -l)" "$(cat "$WORK/fake.out")"
done
mw=$(median "${wall[@]}") ms=$(median "${steady[@]}")
printf 'ideal %.2f msg/s; median end-to-end %.2f msg/s = %.1f%% of ideal; median steady state %.2f msg/s = %.1f%% of ideal\n' \
	"$ideal" "$mw" "$(echo "100 * $mw / $ideal" | bc -l)" "$ms" "$(echo "100 * $ms / $ideal" | bc -l)"
