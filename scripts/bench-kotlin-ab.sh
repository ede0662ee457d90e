#!/usr/bin/env bash
# First-dump A/B on the Kotlin compiler: the same workload as bench-kotlin.sh (KotlinCompileWorker,
# one compile of a generated source set, then a dump), in fresh JVMs, rounds of every SPEC in turn,
# so that builds of the native library (and upstream java-profiler) are compared in one run. The
# dump comes 2 s after the compile, when the JIT has mostly settled. Prints every run, then per SPEC
# the medians of the dump's CPU time, of its minor page faults (steadier on a shared host) and of its
# CPU per sample (our builds only).
#
#   bash scripts/bench-kotlin-ab.sh [--rounds=4] [--files=40] [--no-build] SPEC...
#
# SPEC is MODE:LIB: MODE an fjmethodid mode (true, false, lazy), LIB a libjavaProfiler.so (an
# unstripped build such as target/release/libjavaProfiler.so, copied first: a rebuild during the
# run changes nothing) or `upstream` (com.datadoghq:ddprof:1.22.0 from Maven Central, its default
# method IDs; MODE is then ignored). Example, a build of main against this tree's:
#   git worktree add /tmp/base main && (cd /tmp/base && cargo build --release)
#   cargo build --release
#   bash scripts/bench-kotlin-ab.sh true:/tmp/base/target/release/libjavaProfiler.so \
#     true:target/release/libjavaProfiler.so upstream:upstream
# About 45 s per run on a 2-CPU host.
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  local rounds=4 files=40 build=1 specs=()
  for a in "$@"; do
    case "$a" in
      --rounds=*) rounds="${a#--rounds=}" ;;
      --files=*) files="${a#--files=}" ;;
      --no-build) build=0 ;;
      -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
      *:*) specs+=("$a") ;;
      *) echo "bench-kotlin-ab.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
  done
  [ "${#specs[@]}" -gt 0 ] || { echo "bench-kotlin-ab.sh: no SPEC given (try --help)" >&2; exit 2; }
  # shellcheck disable=SC1091
  . "$ROOT/scripts/bench-common.sh"
  bench_prepare ddprof-bench-kotlin-ab "$build" || exit 1

  local kcp upstream_jar="" i=0 libs=()
  kcp="$(bench_kotlin_cp 2.2.21)"
  for s in "${specs[@]}"; do
    local lib="${s#*:}"
    if [ "$lib" = upstream ]; then
      [ -n "$upstream_jar" ] || upstream_jar="$(bench_upstream 1.22.0)" \
        || { echo "bench-kotlin-ab.sh: com.datadoghq:ddprof:1.22.0 not available" >&2; exit 1; }
      libs+=(upstream)
    else
      libs+=("$(bench_snap_lib "$i" "$lib")") || exit 2
    fi
    i=$((i + 1))
  done

  echo "bench-kotlin-ab.sh: $(bench_host)"
  local out="$BENCH_SNAP/runs.txt"
  for r in $(seq "$rounds"); do
    for i in "${!specs[@]}"; do
      local mode="${specs[$i]%%:*}" lib="${libs[$i]}" cp extra=()
      if [ "$lib" = upstream ]; then
        cp="$BENCH_SNAP/ddprof-bench.jar:$upstream_jar"
        mode=upstream
      else
        cp="$BENCH_CP"
        extra=("-Dddprof.native.lib=$lib")
      fi
      local line
      line="$("$JAVA" -XX:NativeMemoryTracking=summary -Xms512m -Xmx512m "${extra[@]}" -Dsettle=0 \
        -Dkt.pauseBeforeFirstDump=2000 "-Dkotlin.cp=$kcp" -cp "$cp" \
        com.datadoghq.profiler.bench.KotlinCompileWorker "$mode" "$files" 1 2>&1 | grep '^RESULT' || true)"
      local cpu faults samples per=""
      cpu="$(grep -o 'first_dump_cpu_ms=[0-9.]*' <<<"$line" | cut -d= -f2)"
      faults="$(grep -o 'first_dump_minflt=[0-9]*' <<<"$line" | cut -d= -f2)"
      # Our builds count their samples (upstream's do not): the samples of one dump vary 1.5x
      # run to run, its CPU per sample much less.
      samples="$(grep -o ' samples=[0-9]*' <<<"$line" | cut -d= -f2)"
      if [ -n "$cpu" ] && [ "${samples:-0}" -gt 0 ]; then
        per="$(awk -v c="$cpu" -v s="$samples" 'BEGIN { printf "%.1f", c * 1000 / s }')"
      fi
      echo "round $r ${specs[$i]}: first dump ${cpu:-?} ms CPU, ${faults:-?} minor faults," \
        "$([ -n "$per" ] && echo "$samples samples ($per us CPU per sample), ")load" \
        "$(cut -d' ' -f1 /proc/loadavg)"
      echo "$i ${cpu:-} ${faults:-} ${per:-}" >> "$out"
    done
  done
  for i in "${!specs[@]}"; do
    echo "${specs[$i]}: median first dump $(bench_median "$out" "$i" 2) ms CPU," \
      "$(bench_median "$out" "$i" 3) minor faults, $(bench_median "$out" "$i" 4) us CPU per sample ($rounds rounds)"
  done
}


main "$@"; exit $?
