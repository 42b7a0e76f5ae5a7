#!/usr/bin/env bash
# bench-provider.sh: does the provider layer cost anything? The burst
# benchmark (bench-burst.sh: N messages, a model that takes DELAY per call,
# llm.concurrency = CONC, the real binary against Dovecot) run against the
# fake Gemini and the fake OpenAI-compatible server alternately (same
# answer, same delay), RUNS times each, interleaved so that machine noise
# falls on both. Prints, per provider, best-of-RUNS and median throughput,
# end to end (N / wall time of the command) and steady state (calls / time
# from the first model request to the last answer, as the fake saw it), and
# the openai/gemini ratios (goal: within 2 %).
# Needs: bash scripts/e2e-stack.sh start. Env: N, RUNS, DELAY, CONC.
source "$(dirname "$0")/bench-lib.sh"
N=${N:-300}
RUNS=${RUNS:-5}
DELAY=${DELAY:-300ms}
CONC=${CONC:-8}
USER_=carol@example.test
MBOX=bench-provider
build
wait_imap
machine
"$BIN/benchtool" synth -user "$USER_" -mailbox "$MBOX" -n "$N"
declare -A rates steady
for i in $(seq "$RUNS"); do
	for p in gemini openai; do
		export BENCH_PROVIDER=$p
		burst_run "run $i $p"
		w=$BURST_WALL s=$BURST_STEADY
		rates[$p]="${rates[$p]:-} $w"
		steady[$p]="${steady[$p]:-} $s"
		printf 'run %d %-6s: %.2f s -> %.2f msg/s; steady %.2f msg/s; %s\n' "$i" "$p" "$BURST_SECS" "$w" "$s" "$(cat "$WORK/fake.out")"
	done
done
best() { printf '%s\n' "$@" | sort -g | tail -1; }
report() { # NAME ARRAY-NAME
	local -n arr=$2
	# shellcheck disable=SC2086
	local gb gm ob om
	gb=$(best ${arr[gemini]}) gm=$(median ${arr[gemini]}) ob=$(best ${arr[openai]}) om=$(median ${arr[openai]})
	printf '%s: gemini best %.2f median %.2f msg/s; openai best %.2f median %.2f msg/s; ratio openai/gemini best-of-%d %.4f, median %.4f\n' \
		"$1" "$gb" "$gm" "$ob" "$om" "$RUNS" "$(echo "$ob / $gb" | bc -l)" "$(echo "$om / $gm" | bc -l)"
}
report "end to end" rates
report "steady state" steady
