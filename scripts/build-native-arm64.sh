#!/usr/bin/env bash
# Builds the linux-arm64 library for the jar beside linux-x64 (run by ddprof-lib's build,
# generate-resources phase, after the x86_64 one):
#
#   bash scripts/build-native-arm64.sh CARGO STRIPPED_DIR DEBUG_DIR [auto|required|skip] [CLASSES_DIR]
#
# cargo build --release --target aarch64-unknown-linux-gnu, with Debian's cross gcc as the
# linker's driver and the C compiler (.cargo/config.toml) and rustc's bundled LLD as the linker
# (ddprof-native/build.rs), then split like the x86_64 library (scripts/split-debuginfo.sh,
# with the cross objcopy): STRIPPED_DIR/libjavaProfiler.so goes into the jar,
# DEBUG_DIR/libjavaProfiler.so.debug into the debuginfo jar.
#
# What a build needs beyond the x86_64 one: the Rust target (`rustup target add
# aarch64-unknown-linux-gnu`) and Debian's gcc-aarch64-linux-gnu and libc6-dev-arm64-cross
# (scripts/test.sh installs them). Mode `auto` (the default) builds when they are present and
# otherwise skips with a warning, so that a plain `mvn package` works without them and yields
# an x86_64-only jar; `required` (scripts/test.sh, CI) fails instead; `skip` never builds.
# A skipped build removes an arm64 library left by an earlier one (in the three directories; the
# last is where process-resources copies it for the jar), so no stale copy is shipped.
set -euo pipefail

cargo="$1" stripped_dir="$2" debug_dir="$3" mode="${4:-auto}" classes_dir="${5:-}"
target=aarch64-unknown-linux-gnu
name=libjavaProfiler.so
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

remove_stale() {
  rm -f "$stripped_dir/$name" "$debug_dir/$name.debug"
  if [ -n "$classes_dir" ]; then rm -f "$classes_dir/$name"; fi
}

skip() {
  remove_stale
  if [ "$mode" = required ]; then
    echo "build-native-arm64.sh: ERROR: cannot build the linux-arm64 library: $1" >&2
    echo "build-native-arm64.sh: scripts/test.sh installs what it needs" >&2
    exit 1
  fi
  {
    echo "############################################################################"
    echo "# WARNING: the jar will NOT contain linux-arm64/libjavaProfiler.so"
    echo "#   $1"
    echo "#   To build it: rustup target add $target"
    echo "#                apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross"
    echo "#   (scripts/test.sh does both; -Dddprof.arm64=required makes this an error)"
    echo "############################################################################"
  } >&2
  exit 0
}

case "$mode" in
  skip) remove_stale; echo "build-native-arm64.sh: skipped (-Dddprof.arm64=skip)" >&2; exit 0 ;;
  auto|required) ;;
  *) echo "build-native-arm64.sh: unknown mode '$mode' (auto, required or skip)" >&2; exit 1 ;;
esac

command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 \
  || skip "no aarch64-linux-gnu-gcc on PATH (Debian's gcc-aarch64-linux-gnu)"
[ -e /usr/aarch64-linux-gnu/lib/libc.so ] \
  || skip "no aarch64 C library in /usr/aarch64-linux-gnu (Debian's libc6-dev-arm64-cross)"
rustc="$(dirname "$(command -v "$cargo" 2>/dev/null || echo cargo)")/rustc"
[ -x "$rustc" ] || rustc=rustc
sysroot="$("$rustc" --print sysroot 2>/dev/null)" || skip "rustc not found next to $cargo"
[ -d "$sysroot/lib/rustlib/$target/lib" ] \
  || skip "the Rust standard library for $target is not installed (rustup target add $target)"

cd "$ROOT"
"$cargo" build --release --target "$target" -p ddprof-native
objcopy=aarch64-linux-gnu-objcopy
command -v "$objcopy" >/dev/null 2>&1 || objcopy=objcopy
bash scripts/split-debuginfo.sh "target/$target/release/$name" "$stripped_dir" "$debug_dir" "$objcopy"
