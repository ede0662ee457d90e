#!/usr/bin/env bash
# The project's test command: builds everything and runs every test suite,
# the end-to-end JUnit tests once per JDK of the matrix (11, 17, 21, 25).
#
#   bash scripts/test.sh [extra maven arguments, e.g. -Dtest=CpuSamplingTest]
#
# The build JDK is 17 (JAVA_HOME, or the machine's default java).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/install-jdks.sh >/dev/null
# shellcheck disable=SC1091
. "$ROOT/.jdks/env.sh"

if [ -z "${JAVA_HOME:-}" ]; then
  export JAVA_HOME="$JDK17"
fi
echo "test.sh: build JDK $JAVA_HOME; test JDKs 11=$JDK11 17=$JDK17 21=$JDK21 25=$JDK25"

mvn -B verify -Djdk11="$JDK11" -Djdk21="$JDK21" -Djdk25="$JDK25" "$@"
