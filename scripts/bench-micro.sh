#!/usr/bin/env bash
# bench-micro.sh: the in-process Go benchmarks behind BENCHMARKS.md.
#   1. parse + thread throughput on one core over the SpamAssassin ham
#   3. classify prompt size over the SpamAssassin corpus (chars/4 tokens)
#   7. TUI opening and scrolling with 10,000 queued items
# Needs the shared corpora (../shared/corpora) for 1 and 3; no mail stack.
# benchstat (golang.org/x/perf/cmd/benchstat) summarises -count 5 runs; it
# is installed into $(go env GOPATH)/bin when missing.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
COUNT=${COUNT:-5}
WORK=$(mktemp -d /tmp/mailagent-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
BENCHSTAT=$(go env GOPATH)/bin/benchstat
[[ -x $BENCHSTAT ]] || go install golang.org/x/perf/cmd/benchstat@latest
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: nproc=$(nproc) cpu=\"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')\" go=$(go env GOVERSION) commit=$(git rev-parse --short HEAD 2>/dev/null || echo none)"

echo "--- 1. go test -run x -bench ParseThread -cpu 1 -count $COUNT ./internal/mail"
go test -run x -bench ParseThread -cpu 1 -count "$COUNT" ./internal/mail | tee "$WORK/parse.txt" | grep -E '^Benchmark'
"$BENCHSTAT" "$WORK/parse.txt"

echo "--- 3. go test -run x -bench ClassifyPrompt -benchtime 1000x -v ./internal/rig/bench"
go test -run x -bench ClassifyPrompt -benchtime 1000x -v ./internal/rig/bench | grep -E 'Benchmark|routes over|tokens \('

echo "--- 7. go test -run x -bench 'Open10k|Scroll10k' -count $COUNT ./tui"
go test -run x -bench 'Open10k|Scroll10k' -count "$COUNT" ./tui | tee "$WORK/tui.txt" | grep -E '^Benchmark'
"$BENCHSTAT" "$WORK/tui.txt"
