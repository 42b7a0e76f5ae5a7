#!/usr/bin/env bash
# Shared helpers of the scripts/bench-*.sh drivers (sourced, not run).
# They need the e2e stack: bash scripts/e2e-stack.sh start.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ENVFILE=${MAILAGENT_E2E_ENV:-/tmp/mailagent-e2e/env}
if [[ ! -f $ENVFILE ]]; then
	echo "no $ENVFILE: start the stack first with: bash scripts/e2e-stack.sh start" >&2
	exit 1
fi
# shellcheck disable=SC1090
source "$ENVFILE"

WORK=$(mktemp -d /tmp/mailagent-bench.XXXXXX)
BIN=$WORK/bin
mkdir -p "$BIN"
BG_PIDS=()
cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	if [[ -z ${BENCH_KEEP:-} ]]; then rm -rf "$WORK"; else echo "kept $WORK" >&2; fi
}
trap cleanup EXIT

# build compiles mailagent and benchtool from this checkout.
build() {
	(cd "$REPO" && go build -o "$BIN/mailagent" ./cmd/mailagent && go build -o "$BIN/benchtool" ./internal/rig/bench/cmd/benchtool)
}

# machine prints the header every figure carries.
machine() {
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "machine: nproc=$(nproc) cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')\" go=$(go env GOVERSION) commit=$(cd "$REPO" && git rev-parse --short HEAD 2>/dev/null || echo none)"
}

# user_pass USER prints the stack password of USER.
user_pass() {
	tr ',' '\n' <<<"$MAILAGENT_E2E_USERS" | awk -F: -v u="$1" '$1==u {print $2}'
}

# start_fake DELAY: starts the fake model (Gemini, or the OpenAI-compatible
# one when BENCH_PROVIDER=openai); sets FAKE_URL and FAKE_PID.
# Its stats line goes to $WORK/fake.out when it is stopped. It runs with
# GOMAXPROCS=1 (BENCH_FAKE_PROCS to change): it shares the 2 cores with the
# mailagent it serves, and with one P it does not spin a second thread
# looking for work after every answer: 0.40 -> 0.34 CPU-s (medians) per
# triage of the corpus (BENCHMARKS.md 22.6). The requests and answers are the same.
start_fake() {
	rm -f "$WORK/fake.url"
	GOMAXPROCS=${BENCH_FAKE_PROCS:-1} "$BIN/benchtool" fakegemini -provider "${BENCH_PROVIDER:-gemini}" -delay "$1" -urlfile "$WORK/fake.url" >"$WORK/fake.out" 2>&1 </dev/null &
	FAKE_PID=$!
	BG_PIDS+=("$FAKE_PID")
	for _ in $(seq 100); do [[ -s $WORK/fake.url ]] && break; sleep 0.05; done
	FAKE_URL=$(cat "$WORK/fake.url")
}

# pid_cpu PID prints the CPU seconds (user + system) the process has used so
# far (/proc/PID/stat, clock ticks); the difference around a run is what
# that process (the fake model, Dovecot) cost during it.
pid_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); print ($12 + $13) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0
}

# stop_pid PID: SIGTERM and wait.
stop_pid() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# write_config FILE STATE_DIR USER MAILBOX CONCURRENCY: a mailagent config
# for one account on the stack, model = the fake at $FAKE_URL (Gemini, or
# provider "openai" when BENCH_PROVIDER=openai).
write_config() {
	local file=$1 state=$2 user=$3 mailbox=$4 conc=$5
	cat >"$file" <<CFG
state_dir = "$state"
[llm]
$( if [[ ${BENCH_PROVIDER:-gemini} == openai ]]; then
	printf 'provider = "openai"\nmodel = "bench-local"\nstructured_output = "json_schema"\n'
else
	printf 'model = "gemini-bench"\napi_key_env = "BENCH_GEMINI_KEY"\n'
fi )
base_url = "$FAKE_URL"
concurrency = $conc
[sync]
initial_lookback = "24h"
[[accounts]]
name = "bench"
email = "$user"
display_name = "Bench Owner"
mailbox = "$mailbox"
  [accounts.imap]
  host = "$MAILAGENT_E2E_IMAP_HOST"
  port = $MAILAGENT_E2E_IMAP_PORT
  security = "${BENCH_IMAP_SECURITY:-insecure}"
$( [[ ${BENCH_IMAP_SECURITY:-insecure} == starttls ]] && echo "  tls_ca_file = \"$MAILAGENT_E2E_CA\"" )
  password_env = "BENCH_IMAP_PASS"
  [accounts.smtp]
  host = "$MAILAGENT_E2E_SMTP_HOST"
  port = $MAILAGENT_E2E_SMTP_PORT
  security = "insecure"
  password_env = "BENCH_IMAP_PASS"
CFG
	chmod 600 "$file"
	export BENCH_GEMINI_KEY=bench-fake-key BENCH_IMAP_PASS
	BENCH_IMAP_PASS=$(user_pass "$user")
}

# now_s prints the time in seconds with nanoseconds.
now_s() { date +%s.%N; }

# median of the arguments.
# burst_run LABEL: one triage burst over $MBOX against a fresh fake model
# ($DELAY, the provider in $BENCH_PROVIDER), retried up to three times
# (other suites sharing the stack may restart Dovecot). Sets BURST_SECS,
# BURST_WALL (msg/s end to end) and BURST_STEADY (msg/s between the fake's
# first and last call); exits on a third failure.
# shellcheck disable=SC2034,SC2153 # BURST_* are read by the caller; CONC, N, DELAY are the caller's settings
burst_run() {
	local label=$1 rc t0 t1 span calls
	for _ in 1 2 3; do
		wait_imap
		start_fake "$DELAY"
		write_config "$WORK/config.toml" "$WORK/state" "$USER_" "$MBOX" "$CONC"
		rm -rf "$WORK/state"
		t0=$(now_s)
		rc=0
		"$BIN/mailagent" --config "$WORK/config.toml" triage >/dev/null 2>"$WORK/triage.err" || rc=$?
		t1=$(now_s)
		stop_pid "$FAKE_PID"
		[[ $rc -eq 0 ]] && break
		echo "$label failed (exit $rc: $(tail -1 "$WORK/triage.err")); retrying" >&2
	done
	if [[ $rc -ne 0 ]]; then cat "$WORK/triage.err" >&2; exit 1; fi
	span=$(sed -n 's/.*first_to_last_ms=\([0-9.]*\).*/\1/p' "$WORK/fake.out")
	calls=$(sed -n 's/.*calls=\([0-9]*\).*/\1/p' "$WORK/fake.out")
	BURST_SECS=$(echo "$t1 - $t0" | bc -l)
	BURST_WALL=$(echo "$N / $BURST_SECS" | bc -l)
	BURST_STEADY=$(echo "$calls / ($span / 1000)" | bc -l)
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2)? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# start_watch CONFIG: starts `mailagent watch` in the background (sets
# WATCH_PID) and waits until its account reports "idle" (IDLE running).
start_watch() {
	"$BIN/mailagent" --config "$1" watch >"$WORK/watch.out" 2>&1 </dev/null &
	WATCH_PID=$!
	BG_PIDS+=("$WATCH_PID")
	for _ in $(seq 600); do
		if "$BIN/mailagent" --config "$1" status --json 2>/dev/null | tr -d ' \n' | grep -q '"state":"idle"'; then
			return 0
		fi
		if ! kill -0 "$WATCH_PID" 2>/dev/null; then
			echo "watch exited:" >&2; cat "$WORK/watch.out" >&2; exit 1
		fi
		sleep 0.1
	done
	echo "watch never reported idle" >&2
	exit 1
}

# wait_imap: waits (up to 60 s) until Dovecot accepts connections; other
# test suites sharing the stack may be restarting it.
wait_imap() {
	for _ in $(seq 600); do
		if (exec 3<>"/dev/tcp/$MAILAGENT_E2E_IMAP_HOST/$MAILAGENT_E2E_IMAP_PORT") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "IMAP at $MAILAGENT_E2E_IMAP_HOST:$MAILAGENT_E2E_IMAP_PORT does not answer" >&2
	exit 1
}
