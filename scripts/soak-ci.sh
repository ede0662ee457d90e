#!/usr/bin/env bash
# The whole CI run, N times in a row, beside CPU-bound jobs (the suite must stay green on a busy host).
# Clones the current commit into a fresh directory (as CI does), starts HOGS busy loops (default 1;
# issue 32's check is HOGS=4 on 2 CPUs), runs `bash .ci/run` N times and appends one line per run to
# SUMMARY.
#
#   [HOGS=4] bash scripts/soak-ci.sh [N=5] [DIR=/tmp/ddprof-soak]
#
# About 35 minutes per run on an idle 2-CPU host, about twice that beside four hogs. Run nothing else that installs com.datadoghq:ddprof into
# ~/.m2 meanwhile: scripts/consumer-test.sh reads the installed artifact back.
set -euo pipefail

main() {
  local n="${1:-5}" dir="${2:-/tmp/ddprof-soak}"
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  rm -rf "$dir"
  git clone -q "$root" "$dir"
  if [ -d "$root/.jdks" ]; then cp -r "$root/.jdks" "$dir/"; fi
  cd "$dir"
  local hogs="${HOGS:-1}" busy="" h
  echo "soak-ci.sh: commit $(git rev-parse --short HEAD), $n runs beside $hogs busy loop(s)" | tee "$dir/SUMMARY"
  for h in $(seq 1 "$hogs"); do
    sh -c 'while :; do :; done' &
    busy="$busy $!"
  done
  # Expanded now: `busy` is local to main, gone when the EXIT trap runs (it left the loops running).
  # shellcheck disable=SC2064
  trap "kill $busy 2>/dev/null || true" EXIT
  local i start result
  for i in $(seq 1 "$n"); do
    start=$(date +%s)
    if bash .ci/run > "$dir/run$i.log" 2>&1; then result=green; else result=RED; fi
    echo "run $i: $result in $(( $(date +%s) - start )) s ($(date -u +%H:%M)), log $dir/run$i.log" | tee -a "$dir/SUMMARY"
  done
}

main "$@"; exit $?
