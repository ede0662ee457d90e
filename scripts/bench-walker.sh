#!/usr/bin/env bash
# Stack-walker cost, A/B: the time the SIGPROF handler spends per sample (walk + record,
# ddprof's `unwinding_ticks_async` / `samples`) for several variants, each run in a fresh JVM
# on OverheadBenchmark's workload (one busy thread, 19-frame stacks), interleaved in shuffled
# order round after round. See docs/benchmarks.md ("Stack walker cost").
#
#   bash scripts/bench-walker.sh [--no-build] [--rounds=8] [--seconds=5] [--warmup=2]
#        [--interval=1ms] [--min-share=0.9] VARIANT...
#
#   VARIANT = LABEL=LIB[,OPTION...]
#     LIB     a libjavaProfiler.so (loaded through -Dddprof.native.lib), or `jar` for the
#             library bundled in the jar just built
#     OPTION  extra ddprof options, e.g. cstack=fp (AsyncGetCallTrace)
#   Example: before=/tmp/old/libjavaProfiler.so after=jar agct=jar,cstack=fp
#
# The JDK is $JAVA_HOME/bin/java if JAVA_HOME is set, else `java` on PATH. Each run prints one
# line; the summary gives, per variant, the median [min-max] over the runs whose JVM got at least
# --min-share of the CPU it asked for (a run starved by the rest of the host is listed, not
# counted: its handler times include waiting for a CPU and cold caches).
set -euo pipefail

# One function, called on the last line: bash reads a script as it runs, so an edit to this
# file during a run cannot change what runs.
main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"

  local build=1 rounds=8 seconds=5 warmup=2 interval=1ms min_share=0.9
  local variants=()
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      --rounds=*) rounds="${a#*=}" ;;
      --seconds=*) seconds="${a#*=}" ;;
      --warmup=*) warmup="${a#*=}" ;;
      --interval=*) interval="${a#*=}" ;;
      --min-share=*) min_share="${a#*=}" ;;
      -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
      -*) echo "bench-walker.sh: unknown option $a (try --help)" >&2; exit 2 ;;
      *=*) variants+=("$a") ;;
      *) echo "bench-walker.sh: a variant is LABEL=LIB[,OPTION...], not $a" >&2; exit 2 ;;
    esac
  done
  if [ "${#variants[@]}" -eq 0 ]; then
    echo "bench-walker.sh: name at least one variant (try --help)" >&2
    exit 2
  fi

  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare bench-walker "$build" || exit 1

  local raw
  raw="$(mktemp "${TMPDIR:-/tmp}/bench-walker.XXXXXX")"
  echo "bench-walker.sh: $("$JAVA" -version 2>&1 | head -1); $(nproc) CPUs;" \
    "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (dirty tree)');" \
    "$rounds rounds of ${seconds}s, interval $interval"
  printf '%-5s %-12s %10s %8s %6s %s\n' round variant ns/sample samples share load
  local r v label spec lib opts mode out samples walk cpu wall
  for r in $(seq 1 "$rounds"); do
    for v in $(printf '%s\n' "${variants[@]}" | shuf); do
      label="${v%%=*}"
      spec="${v#*=}"
      lib="${spec%%,*}"
      opts=""
      if [ "$spec" != "$lib" ]; then
        opts="${spec#*,}"
      fi
      mode="ddprof-$interval"
      if [ -n "$opts" ]; then
        mode="$mode:${opts//,/;}"
      fi
      local props=(-Xms256m -Xmx256m)
      if [ "$lib" != jar ]; then
        props+=("-Dddprof.native.lib=$lib")
      fi
      out="$("$JAVA" "${props[@]}" -cp "$BENCH_CP" com.datadoghq.profiler.bench.OverheadWorker \
        "$mode" 1 "$seconds" "$warmup" 2>&1 | grep '^RESULT' || true)"
      samples="$(field samples "$out")"
      walk="$(field walk_ns "$out")"
      cpu="$(field cpu_ns "$out")"
      wall="$(field wall_ns "$out")"
      if [ -z "$samples" ] || [ "${samples:-0}" -le 0 ] || [ -z "$walk" ]; then
        printf '%-5s %-12s %10s\n' "$r" "$label" failed
        continue
      fi
      awk -v r="$r" -v l="$label" -v s="$samples" -v w="$walk" -v c="$cpu" -v t="$wall" \
        -v load="$(cut -d' ' -f1 /proc/loadavg)" \
        'BEGIN { printf "%-5s %-12s %10.0f %8d %6.2f %s\n", r, l, w / s, s, c / t, load }' | tee -a "$raw"
    done
  done

  echo
  echo "per variant: median [min-max] ns/sample over runs with CPU share >= $min_share (runs counted / run)"
  local l
  for l in $(printf '%s\n' "${variants[@]}" | cut -d= -f1); do
    awk -v l="$l" -v m="$min_share" '$2 == l { n++; if ($5 >= m) print $3 }' "$raw" | sort -n |
      awk -v l="$l" -v total="$(awk -v l="$l" '$2 == l' "$raw" | wc -l)" '
        { v[NR] = $1 }
        END {
          if (NR == 0) { printf "%-12s no run got its CPU (of %d)\n", l, total; exit }
          med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "%-12s %6.0f [%.0f-%.0f]  (%d/%d)\n", l, med, v[1], v[NR], NR, total
        }'
  done
  rm -f "$raw"
}

# The value of key=value in a RESULT line.
field() {
  printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1
}

main "$@"; exit $?
