#!/usr/bin/env bash
# Conversion speed and memory: our `convert` beside async-profiler's converter (jfrconv's Java form,
# tools.profiler:jfr-converter from Maven Central) on the same large recording, in one run.
# The recording is async-profiler's own (`event=cpu,interval=1ms,wall=1ms` on ConvertWorkload, its
# library from the async-profiler jar ddprof-bench depends on), copied end to end until it is about
# 200 MB (a JFR file is a sequence of chunks): jfrconv reads only the JDK's event types and
# async-profiler's, and both read its jdk.ExecutionSample (cpu) and profiler.WallClockSample (wall). Each conversion runs in a fresh JVM,
# the converters in turn each round; /usr/bin/time gives the wall time, the CPU time (user + system)
# and the peak RSS. Prints every run, then per conversion and converter the medians. Results:
# docs/benchmarks.md, "Conversion".
#
#   bash scripts/bench-convert.sh [--no-build] [--rounds=3] [--copies=16] [--seconds=60] [--threads=24]
#                                 [--xmx=] [--recording=FILE] [--baseline=DIR]
#
# --recording converts FILE instead of making one (its CPU samples must be jdk.ExecutionSample for
# jfrconv to see any); --xmx=256m runs every converter JVM with that heap (default: the JVM's own);
# --baseline=DIR adds a third converter, "baseline": ours with the jars in DIR (ddprof-*.jar and
# ddprof-tools-*.jar of an earlier build), for a before/after in the same run.
# About 2 minutes to record and 2-3 minutes a round on a quiet 2-CPU host.
set -euo pipefail

main() {
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  cd "$ROOT"
  local build=1 rounds=3 copies=16 seconds=60 threads=24 xmx="" recording="" baseline=""
  for a in "$@"; do
    case "$a" in
      --no-build) build=0 ;;
      --rounds=*) rounds="${a#--rounds=}" ;;
      --copies=*) copies="${a#--copies=}" ;;
      --seconds=*) seconds="${a#--seconds=}" ;;
      --threads=*) threads="${a#--threads=}" ;;
      --xmx=*) xmx="${a#--xmx=}" ;;
      --recording=*) recording="${a#--recording=}" ;;
      --baseline=*) baseline="${a#--baseline=}" ;;
      -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
      *) echo "bench-convert.sh: unknown argument $a (try --help)" >&2; exit 2 ;;
    esac
  done
  [ -x /usr/bin/time ] || { echo "bench-convert.sh: /usr/bin/time is missing (Debian: apt-get install time)" >&2; exit 1; }
  # shellcheck source=scripts/bench-common.sh
  source "$ROOT/scripts/bench-common.sh"
  bench_prepare bench-convert "$build"
  (mvn -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
    -Dartifact=tools.profiler:jfr-converter:4.5 -DoutputDirectory="$BENCH_SNAP" >/dev/null 2>&1) \
    || { echo "bench-convert.sh: tools.profiler:jfr-converter:4.5 not available" >&2; exit 1; }
  local jfrconv="$BENCH_SNAP/jfr-converter-4.5.jar"
  local tools=(ours jfrconv) baseline_cp=""
  if [ -n "$baseline" ]; then
    local blib btools
    blib="$(ls "$baseline"/ddprof-[0-9]*.jar 2>/dev/null | head -1)"
    btools="$(ls "$baseline"/ddprof-tools-*.jar 2>/dev/null | head -1)"
    [ -n "$blib" ] && [ -n "$btools" ] \
      || { echo "bench-convert.sh: --baseline=$baseline holds no ddprof-*.jar and ddprof-tools-*.jar" >&2; exit 2; }
    mkdir -p "$BENCH_SNAP/baseline"
    cp "$blib" "$BENCH_SNAP/baseline/ddprof.jar"
    cp "$btools" "$BENCH_SNAP/baseline/ddprof-tools.jar"
    baseline_cp="$BENCH_SNAP/baseline/ddprof-tools.jar:$BENCH_SNAP/baseline/ddprof.jar"
    tools=(ours baseline jfrconv)
  fi
  local heap=()
  [ -z "$xmx" ] || heap=("-Xmx$xmx")

  if [ -z "$recording" ]; then
    bench_peer_deps
    local apjar
    apjar="$(tr ':' '\n' < "$BENCH_SNAP/deps.txt" | grep '/async-profiler-[0-9.]*\.jar$' | head -1)"
    [ -n "$apjar" ] || { echo "bench-convert.sh: async-profiler's jar is not among ddprof-bench's dependencies" >&2; exit 1; }
    unzip -q -o -j "$apjar" 'linux-x64/libasyncProfiler.so' -d "$BENCH_SNAP/ap"
    echo "bench-convert: recording ConvertWorkload ($threads threads, $seconds s) with async-profiler ($(basename "$apjar"))"
    "$JAVA" "-agentpath:$BENCH_SNAP/ap/libasyncProfiler.so=start,event=cpu,interval=1ms,wall=1ms,jfr,file=$BENCH_SNAP/one.jfr" \
      -cp "$BENCH_CP" com.datadoghq.profiler.bench.ConvertWorkload "$threads" "$seconds" >/dev/null
    recording="$BENCH_SNAP/recording.jfr"
    local i
    for ((i = 0; i < copies; i++)); do cat "$BENCH_SNAP/one.jfr"; done > "$recording"
  fi
  echo "bench-convert: $recording, $(($(stat -c %s "$recording") / 1048576)) MB; JVM: $("$JAVA" -version 2>&1 | head -1)"

  # conversion name | our arguments | jfrconv's arguments (output file added by run)
  local conversions=(
    "cpu-html|--to html --event cpu|--cpu -o html"
    "cpu-collapsed|--to collapsed --event cpu|--cpu -o collapsed"
    "cpu-pprof|--to pprof --event cpu|--cpu -o pprof"
    "wall-collapsed|--to collapsed --event wall|--wall -o collapsed"
    "wall-pprof|--to pprof --event wall|--wall -o pprof"
  )
  local results="$BENCH_SNAP/results.txt"
  : > "$results"
  local r c tool
  for ((r = 1; r <= rounds; r++)); do
    for c in "${conversions[@]}"; do
      local name="${c%%|*}" rest="${c#*|}"
      local ours="${rest%%|*}" theirs="${rest#*|}"
      for tool in "${tools[@]}"; do
        local out="$BENCH_SNAP/out.$tool" cmd
        rm -f "$out"
        if [ "$tool" = ours ]; then
          # shellcheck disable=SC2206
          cmd=("$JAVA" "${heap[@]}" -cp "$BENCH_TOOLS_CP" com.datadoghq.profiler.Main convert $ours "$recording" "$out")
        elif [ "$tool" = baseline ]; then
          # shellcheck disable=SC2206
          cmd=("$JAVA" "${heap[@]}" -cp "$baseline_cp" com.datadoghq.profiler.Main convert $ours "$recording" "$out")
        else
          # shellcheck disable=SC2206
          cmd=("$JAVA" "${heap[@]}" -jar "$jfrconv" $theirs "$recording" "$out")
        fi
        /usr/bin/time -o "$BENCH_SNAP/time" -f '%e %U %S %M' "${cmd[@]}" >/dev/null 2>&1 \
          || echo "bench-convert: $tool $name failed: ${cmd[*]}" >&2
        local wall user sys rss
        read -r wall user sys rss < <(tail -1 "$BENCH_SNAP/time")
        local size=0
        [ -f "$out" ] && size="$(stat -c %s "$out")"
        printf '%s %s %s %s %s %s\n' "$name" "$tool" "$wall" "$(echo "$user + $sys" | bc)" "$rss" "$size" >> "$results"
        printf 'round %d %-14s %-8s wall %6.2f s  cpu %6.2f s  peak rss %7d KB  output %d bytes\n' \
          "$r" "$name" "$tool" "$wall" "$(echo "$user + $sys" | bc)" "$rss" "$size"
      done
      if [ -n "$baseline" ]; then
        if cmp -s "$BENCH_SNAP/out.ours" "$BENCH_SNAP/out.baseline"; then
          echo "round $r $name: ours and baseline wrote the same bytes"
        else
          echo "round $r $name: ours and baseline wrote DIFFERENT outputs" >&2
        fi
      fi
    done
  done
  echo
  echo "| conversion | converter | wall s (median) | CPU s (median) | peak RSS MB (median) | output bytes |"
  echo "|---|---|---|---|---|---|"
  awk '{k=$1" "$2; w[k]=w[k]" "$3; c[k]=c[k]" "$4; m[k]=m[k]" "$5; o[k]=$6; if (!(k in seen)) {seen[k]=1; order[n++]=k}}
       function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
                                        return a[int((n + 1) / 2)] }
       END { for (i = 0; i < n; i++) { k = order[i]; split(k, p, " ");
               printf "| %s | %s | %.2f | %.2f | %d | %d |\n", p[1], p[2], med(w[k]), med(c[k]), med(m[k]) / 1024, o[k] } }' "$results"
}

main "$@"
