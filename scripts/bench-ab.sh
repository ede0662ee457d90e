#!/usr/bin/env bash
# Handler and first-dump A/B of builds of the native library: OverheadWorker (the CPU overhead
# benchmark's child: busy threads on CpuWorkload, one unless --threads, then one dump and a stop) in fresh JVMs, the
# libraries in turn each round, so that builds are compared in one run on one host. Prints every run,
# then per library the medians of the handler's median (`walk_p50_ns`: a histogram within 1/16), the
# handler's mean (wall time: a few handlers preempted on a busy host move it by microseconds) and
# 99th percentile, the first dump's CPU time (the dumping thread's) and wall time, and the work the
# busy threads did per second of the process's CPU (background threads included).
#
#   bash scripts/bench-ab.sh [--rounds=6] [--mode=ddprof-10ms] [--threads=1] [--measure=8] [--warmup=3] [--no-build] LIB...
#
# LIB is a libjavaProfiler.so (an unstripped build such as target/release/libjavaProfiler.so,
# copied first: a rebuild during the run changes nothing). MODE is an OverheadWorker ddprof mode
# (`ddprof-1ms`, `ddprof-10ms:cstack=no`, ...). Example, a build of an earlier commit against this tree's:
#   git worktree add /tmp/base COMMIT && (cd /tmp/base && cargo build --release)
#   cargo build --release
#   bash scripts/bench-ab.sh /tmp/base/target/release/libjavaProfiler.so target/release/libjavaProfiler.so
# About 14 s per run. Single runs vary 2x on a shared host: compare medians of several rounds, quiet host.
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  local rounds=6 mode=ddprof-10ms threads=1 measure=8 warmup=3 build=1 given=()
  for a in "$@"; do
    case "$a" in
      --rounds=*) rounds="${a#--rounds=}" ;;
      --mode=*) mode="${a#--mode=}" ;;
      --threads=*) threads="${a#--threads=}" ;;
      --measure=*) measure="${a#--measure=}" ;;
      --warmup=*) warmup="${a#--warmup=}" ;;
      --no-build) build=0 ;;
      -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
      -*) echo "bench-ab.sh: unknown option $a (try --help)" >&2; exit 2 ;;
      *) given+=("$a") ;;
    esac
  done
  [ "${#given[@]}" -gt 0 ] || { echo "bench-ab.sh: no LIB given (try --help)" >&2; exit 2; }
  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench-ab "$build" || exit 1
  bench_peer_deps || { echo "bench-ab.sh: cannot resolve ddprof-bench's dependencies" >&2; exit 1; }
  local i=0 libs=()
  for lib in "${given[@]}"; do
    libs+=("$(bench_snap_lib "$i" "$lib")") || exit 2
    i=$((i + 1))
  done

  echo "bench-ab.sh: $(bench_host); mode $mode, $threads busy thread(s), $measure s measured after $warmup s"
  local out="$BENCH_SNAP/runs.txt"
  for r in $(seq "$rounds"); do
    for i in "${!libs[@]}"; do
      local line
      line="$("$JAVA" -Xms256m -Xmx256m "-Dddprof.native.lib=${libs[$i]}" -cp "$BENCH_CP" \
        com.datadoghq.profiler.bench.OverheadWorker "$mode" "$threads" "$measure" "$warmup" 2>&1 | grep '^RESULT' || true)"
      local samples walk p50 p99 dump cpu ops pcpu mean="" rate=""
      samples="$(field samples "$line")"
      walk="$(field walk_ns "$line")"
      p50="$(field walk_p50_ns "$line")"
      p99="$(field walk_p99_ns "$line")"
      ops="$(field ops "$line")"
      pcpu="$(field cpu_ns "$line")"
      dump="$(field dump_ns "$line")"
      cpu="$(field dump_cpu_ns "$line")"
      if [ -n "$walk" ] && [ "${samples:-0}" -gt 0 ]; then
        mean=$((walk / samples))
      fi
      if [ -n "$ops" ] && [ "${pcpu:-0}" -gt 0 ]; then
        rate=$((ops * 1000000000 / pcpu))
      fi
      echo "round $r ${given[$i]}: handler median ${p50:-?} ns, p99 ${p99:-?} ns, mean ${mean:-?} ns over ${samples:-?} samples;" \
        "first dump ${cpu:-?} ns CPU, ${dump:-?} ns wall; work ${rate:-?} ops per process-CPU-second; load $(cut -d' ' -f1 /proc/loadavg)"
      echo "$i ${p50:-} ${mean:-} ${cpu:-} ${dump:-} ${p99:-} ${rate:-}" >> "$out"
    done
  done
  for i in "${!libs[@]}"; do
    echo "${given[$i]}: medians: handler median $(bench_median "$out" "$i" 2) ns, handler mean $(bench_median "$out" "$i" 3) ns," \
      "first dump $(bench_median "$out" "$i" 4) ns CPU, $(bench_median "$out" "$i" 5) ns wall," \
      "handler p99 $(bench_median "$out" "$i" 6) ns, work $(bench_median "$out" "$i" 7) ops per process-CPU-second ($rounds rounds)"
  done
}

# field NAME LINE: the value of ` NAME=` in a RESULT line.
field() {
  grep -o " $1=[0-9]*" <<<"$2" | head -1 | cut -d= -f2
}


main "$@"; exit $?
