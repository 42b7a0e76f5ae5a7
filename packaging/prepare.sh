#!/bin/sh
# packaging/prepare.sh VERSION [SOURCE_DATE_EPOCH]: writes what the packages
# ship besides the binary, from the same cobra tree as --help, into the
# repository root (all git-ignored):
#   man/          mailagent(1), one page per command, mailagent.toml(5),
#                 plain (the archives) and gzip'd (*.gz, the .deb/.rpm)
#   completions/  mailagent.bash, _mailagent (zsh), mailagent.fish
#   packaging/build/mailagent-watch.service
#                 contrib/systemd's user unit with ExecStart at /usr/bin
#
# It is the one recipe: .goreleaser.yaml's before hook and
# scripts/package-test.sh both run it. LDFLAGS (default: the version only)
# must follow where cmd keeps its version variable.
set -eu
version=${1:?usage: packaging/prepare.sh VERSION [SOURCE_DATE_EPOCH]}
epoch=${2:-${SOURCE_DATE_EPOCH:-0}}
cd "$(dirname "$0")/.."
ldflags=${LDFLAGS:-"-X github.com/mailagent/mailagent/internal/cmdutil.version=$version"}

tool=$(mktemp -d)
trap 'rm -rf "$tool"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tool/mailagent" ./cmd/mailagent
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tool/gen-docs" ./cmd/gen-docs

rm -rf man completions packaging/build
SOURCE_DATE_EPOCH=$epoch "$tool/gen-docs" --man-page man
for page in man/*.[15]; do
	# -n: no name or time stamp in the header, so the .gz is reproducible.
	gzip -9nc "$page" >"$page.gz"
done

mkdir -p completions packaging/build
"$tool/mailagent" completion bash >completions/mailagent.bash
"$tool/mailagent" completion zsh >completions/_mailagent
"$tool/mailagent" completion fish >completions/mailagent.fish

# The packaged unit runs the packaged binary; everything else is the
# contrib unit as it is (one unit file to maintain).
unit=contrib/systemd/mailagent-watch.service
grep -q '^ExecStart=%h/go/bin/mailagent watch$' "$unit" || {
	echo "prepare: $unit: ExecStart is not '%h/go/bin/mailagent watch' any more; update packaging/prepare.sh" >&2
	exit 1
}
{
	echo "# Installed by the mailagent package: ExecStart runs /usr/bin/mailagent."
	echo "# Enable it for your user (no root): systemctl --user enable --now mailagent-watch"
	sed 's#^ExecStart=%h/go/bin/mailagent watch$#ExecStart=/usr/bin/mailagent watch#' "$unit"
} >packaging/build/mailagent-watch.service
