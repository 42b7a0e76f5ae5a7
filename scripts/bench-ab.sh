#!/usr/bin/env bash
# bench-ab.sh: two mailagent builds, the same full triage, alternating.
#
# What one change buys, without mbsync's swings (bench-ingest.sh compares
# against mbsync): the SpamAssassin corpus is loaded into carol's mailbox
# bench-ingest, then `mailagent triage` of build A and of build B run
# alternately, RUNS (default 5) times each, each with a fresh state
# directory, against the zero-latency fake Gemini. Prints each run's wall
# and CPU (user + system) time, the fake model's CPU during it (it shares
# the cores), and the best and median of each build.
#
# Usage: MAILAGENT_E2E_ENV=DIR/env [RUNS=5] [EXTRA_B='[trace]
# snapshots = false'] bash scripts/bench-ab.sh BIN_A BIN_B
# EXTRA_A / EXTRA_B: TOML appended to that build's configuration (the
# same build with a setting changed).
source "$(dirname "$0")/bench-lib.sh"
if [[ $# -ne 2 ]]; then
	echo "usage: bash scripts/bench-ab.sh BIN_A BIN_B" >&2
	exit 2
fi
A=$1 B=$2
RUNS=${RUNS:-5}
USER_=carol@example.test
MBOX=${BENCH_MAILBOX:-bench-ingest}
build
wait_imap
machine
[[ -n ${BENCH_SKIP_LOAD:-} ]] || (cd "${BENCH_CORPUS_REPO:-$REPO}" && "$BIN/benchtool" load -user "$USER_" -mailbox "$MBOX" -set all -n "${BENCH_N:-0}" ${BENCH_LOAD_RAW:+-raw})
start_fake 0s
write_config "$WORK/config.toml" "$WORK/state" "$USER_" "$MBOX" "${BENCH_CONCURRENCY:-4}"
cp "$WORK/config.toml" "$WORK/config-a.toml"
cp "$WORK/config.toml" "$WORK/config-b.toml"
if [[ -n ${EXTRA_A:-} ]]; then printf '%s\n' "$EXTRA_A" >>"$WORK/config-a.toml"; fi
if [[ -n ${EXTRA_B:-} ]]; then printf '%s\n' "$EXTRA_B" >>"$WORK/config-b.toml"; fi

declare -a wall_a wall_b cpu_a cpu_b fake_a fake_b
run() { # run LABEL BIN CONFIG: one triage; sets T (wall), C (CPU) and F (the fake's CPU)
	rm -rf "$WORK/state"
	local t0 t1 f0 f1
	f0=$(pid_cpu "$FAKE_PID")
	t0=$(now_s)
	if ! /usr/bin/time -f '%U %S' -o "$WORK/cpu" "$2" --config "$3" triage >/dev/null 2>"$WORK/triage.err"; then
		echo "$1: triage failed:" >&2
		tail -5 "$WORK/triage.err" >&2
		exit 1
	fi
	t1=$(now_s)
	f1=$(pid_cpu "$FAKE_PID")
	T=$(echo "$t1 - $t0" | bc -l)
	C=$(awk '{print $1 + $2}' "$WORK/cpu")
	F=$(echo "$f1 - $f0" | bc -l)
	printf '%s  wall %.3f s  cpu %.2f s  fake model cpu %.2f s\n' "$1" "$T" "$C" "$F"
}
for i in $(seq "$RUNS"); do
	run "run $i A" "$A" "$WORK/config-a.toml"
	wall_a+=("$T") cpu_a+=("$C") fake_a+=("$F")
	run "run $i B" "$B" "$WORK/config-b.toml"
	wall_b+=("$T") cpu_b+=("$C") fake_b+=("$F")
done
summary() { # summary LABEL VALUES...: best and median
	local label=$1
	shift
	printf '%s\n' "$@" | sort -g | awk -v l="$label" '{a[NR]=$1} END {printf "%s best %.3f median %.3f\n", l, a[1], a[int((NR+1)/2)]}'
}
summary "A wall" "${wall_a[@]}"
summary "B wall" "${wall_b[@]}"
summary "A cpu " "${cpu_a[@]}"
summary "B cpu " "${cpu_b[@]}"
summary "A fake" "${fake_a[@]}"
summary "B fake" "${fake_b[@]}"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
