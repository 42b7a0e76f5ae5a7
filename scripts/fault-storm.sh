#!/usr/bin/env bash
# fault-storm.sh: the kill -9 storm of issue 26 against the real stack
# (scripts/e2e-stack.sh): 100 auto-answerable mails through Postfix while
# a fault front answers the agent's SMTP AUTH with 454 for a minute and
# `mailagent watch` is SIGKILLed and restarted 20 times; then every
# message must be answered exactly once, and the backlog delivered within
# 90 s of the server's recovery (internal/rig/e2e/storm). About 3 minutes.
#
#   scripts/fault-storm.sh            # once
#   RUNS=5 scripts/fault-storm.sh     # repeated: each run kills at other points
#   RACE=1 scripts/fault-storm.sh     # test and binary built with -race
set -euo pipefail
cd "$(dirname "$0")/.."
env_file=${MAILAGENT_E2E_ENV:-/tmp/mailagent-e2e/env}
if [[ -z ${MAILAGENT_E2E:-} ]]; then
	[[ -r $env_file ]] || { echo "fault-storm: no stack: run scripts/e2e-stack.sh start" >&2; exit 2; }
	# shellcheck disable=SC1090
	source "$env_file"
fi
race=()
[[ -n ${RACE:-} ]] && race=(-race)
for i in $(seq "${RUNS:-1}"); do
	echo "fault-storm: run $i"
	go test "${race[@]}" -count=1 -v -timeout 10m -run 'TestKill9StormFlappingSMTP' ./internal/rig/e2e/storm/ |
		grep -E 'storm:|backlog|attempts per record|lost|duplicated|misdirected|not done|^(---|ok|FAIL|PASS)'
done
