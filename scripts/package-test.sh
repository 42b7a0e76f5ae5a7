#!/usr/bin/env bash
# scripts/package-test.sh: build the .deb and .rpm from packaging/nfpm.yaml
# (the contents .goreleaser.yaml's nfpms repeats), install the .deb on this
# host with dpkg -i, check it works as installed, and remove it.
#
# Needs root on Debian (CI and the dev container); it installs man-db,
# systemd and rpm with apt when they are missing. nfpm comes from the Go
# module proxy, pinned. Run by .ci/run; by hand: bash scripts/package-test.sh
set -euo pipefail

cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

# v2.46 and later need go.digitalxero.dev modules, which the module proxy
# CI uses does not serve.
NFPM_VERSION=v2.45.0
TOOLS=${MAILAGENT_CI_TOOLS:-/tmp/mailagent-ci-tools}
VERSION=${VERSION:-0.0.0-packagetest}
ARCH=$(go env GOARCH)
export VERSION ARCH
PKG=$(sed -n 's/^name: //p' packaging/nfpm.yaml)
# The same ldflags as .goreleaser.yaml's build (cmdutil.version, cmdutil.commit,
# cmdutil.date): they must follow internal/cmdutil if the version variables move.
LDFLAGS="-s -w -X github.com/mailagent/mailagent/internal/cmdutil.version=$VERSION -X github.com/mailagent/mailagent/internal/cmdutil.commit=$(git rev-parse HEAD 2>/dev/null || echo none) -X github.com/mailagent/mailagent/internal/cmdutil.date=1970-01-01T00:00:00Z"

say() { printf '  %s\n' "$*"; }
fail() {
	printf 'package-test: %s\n' "$*" >&2
	exit 1
}

[[ $(id -u) -eq 0 ]] || fail "run as root (it installs the .deb with dpkg -i)"
command -v dpkg >/dev/null || fail "not a Debian host (no dpkg)"

missing=()
command -v man >/dev/null || missing+=(man-db)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v rpm >/dev/null || missing+=(rpm)
if ((${#missing[@]})); then
	say "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# go install stamps no version into nfpm: the directory name pins it.
NFPM=$TOOLS/nfpm-$NFPM_VERSION/nfpm
if [[ ! -x $NFPM ]]; then
	say "go install nfpm $NFPM_VERSION"
	GOBIN=$(dirname "$NFPM") go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
fi

if dpkg -s "$PKG" >/dev/null 2>&1 || dpkg -s mailagent >/dev/null 2>&1; then
	fail "$PKG (or Debian's unrelated mailagent) is installed already; remove it first"
fi

say "build the binary and prepare man pages, completions, unit (packaging/prepare.sh)"
rm -rf dist/package
mkdir -p dist/package
CGO_ENABLED=0 go build -trimpath -ldflags "$LDFLAGS" -o dist/package/mailagent ./cmd/mailagent
LDFLAGS="-X github.com/mailagent/mailagent/internal/cmdutil.version=$VERSION" sh packaging/prepare.sh "$VERSION" 0

for p in deb rpm; do
	say "nfpm pkg --packager $p"
	"$NFPM" pkg --config packaging/nfpm.yaml --packager "$p" --target dist/package/ >/dev/null
done
deb=$(ls dist/package/*.deb)
rpmf=$(ls dist/package/*.rpm)

say "rpm -qlp $(basename "$rpmf")"
rpm_list=$(rpm -qlp "$rpmf" 2>/dev/null)
deb_list=$(dpkg-deb -c "$deb" | awk '{print $NF}' | sed 's#^\./#/#' | grep -v '/$')
for f in /usr/bin/mailagent /usr/share/man/man1/mailagent.1.gz /usr/share/man/man5/mailagent.toml.5.gz \
	/usr/share/bash-completion/completions/mailagent /usr/share/zsh/vendor-completions/_mailagent \
	/usr/share/fish/vendor_completions.d/mailagent.fish /usr/lib/systemd/user/mailagent-watch.service \
	/usr/share/doc/mailagent-triage/copyright; do
	grep -qx "$f" <<<"$rpm_list" || fail "the .rpm does not contain $f"
	grep -qx "$f" <<<"$deb_list" || fail "the .deb does not contain $f"
done
[[ $(sort <<<"$rpm_list" | grep -c .) -eq $(sort <<<"$deb_list" | grep -c .) ]] ||
	fail "the .deb and the .rpm list different numbers of files"

remove() { dpkg -r $PKG >/dev/null 2>&1 || true; }
trap remove EXIT
say "dpkg -i $(basename "$deb")"
dpkg -i "$deb" >/dev/null
[[ $(dpkg-query -W -f '${Section} ${Status}' $PKG) == "mail install ok installed" ]] ||
	fail "dpkg-query: $(dpkg-query -W -f '${Section} ${Status}' $PKG)"

say "mailagent version"
out=$(/usr/bin/mailagent version)
grep -q "$VERSION" <<<"$out" || fail "mailagent version printed '$out', want $VERSION in it"

say "man mailagent, man 5 mailagent.toml"
man -P cat mailagent 2>/dev/null | grep -q 'mailagent' || fail "man mailagent shows nothing"
man -P cat mailagent 2>/dev/null | grep -q 'EXIT STATUS' || fail "man mailagent lacks EXIT STATUS"
man -P cat 5 mailagent.toml 2>/dev/null | grep -q 'SECRETS' || fail "man 5 mailagent.toml lacks SECRETS"
man -P cat mailagent-queue 2>/dev/null | grep -q 'queue' || fail "man mailagent-queue shows nothing"

say "completions"
grep -q 'mailagent' /usr/share/bash-completion/completions/mailagent || fail "bash completion is empty"
bash -c 'source /usr/share/bash-completion/completions/mailagent && complete -p mailagent' >/dev/null ||
	fail "the bash completion does not register for mailagent"
grep -q '#compdef mailagent' /usr/share/zsh/vendor-completions/_mailagent || fail "zsh completion lacks #compdef"
grep -q 'complete -c mailagent' /usr/share/fish/vendor_completions.d/mailagent.fish || fail "fish completion lacks complete -c mailagent"

say "systemd-analyze verify /usr/lib/systemd/user/mailagent-watch.service"
unit=/usr/lib/systemd/user/mailagent-watch.service
grep -qx 'ExecStart=/usr/bin/mailagent watch' "$unit" || fail "$unit: ExecStart is not /usr/bin/mailagent watch"
# verify loads the unit as systemd would (no PID 1 needed) and checks that
# ExecStart's binary exists and is executable; any output is a finding.
verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $verify"
[[ -z $verify ]] || fail "systemd-analyze verify complained: $verify"

say "dpkg -r $PKG"
dpkg -r $PKG >/dev/null
trap - EXIT
[[ ! -e /usr/bin/mailagent && ! -e $unit ]] || fail "dpkg -r left files behind"
say "ok: $(basename "$deb") and $(basename "$rpmf")"
