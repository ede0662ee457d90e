#!/usr/bin/env bash
# Which of the native library's functions a sample runs out of line: the list that
# `sample_path_section!` (ddprof-native/src/sample/mod.rs) should mark, so that the linker keeps
# them on a few pages (docs/architecture.md, "The sample path's code").
#
# Puts a uprobe on every function of ours in the library (Linux, root, tracefs), runs
# OverheadWorker under `perf record` on those probes, and prints per function the calls made on
# the busy workers' threads (where the signal handlers run), its size, and whether it is in
# `.text.hot` already. A function with about one call per sample or more belongs on the path.
#
#   bash scripts/sample-path-functions.sh [--mode=ddprof-1ms] [--threads=2] [--min=400] [LIB]
#
# LIB defaults to target/release/libjavaProfiler.so (copied first). MODE is an OverheadWorker
# mode (`ddprof-10ms:wall=2ms`, ...). Needs the bench jar built (`mvn -DskipTests install`).
# The probes slow every call by a trap: the counts are what matters, not the timings.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode=ddprof-1ms
threads=2
min=400
lib="$ROOT/target/release/libjavaProfiler.so"
for a in "$@"; do
  case "$a" in
    --mode=*) mode="${a#--mode=}" ;;
    --threads=*) threads="${a#--threads=}" ;;
    --min=*) min="${a#--min=}" ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) lib="$a" ;;
  esac
done

tracefs=/sys/kernel/tracing
[ -e "$tracefs/uprobe_events" ] || mount -t tracefs nodev "$tracefs"
work="$(mktemp -d)"
cleanup() {
  # Removes this script's probes only (`-:GROUP/EVENT`), whatever else is defined.
  echo 0 > "$tracefs/events/ddprof_path/enable" 2>/dev/null || true
  sed -n 's|^p:\(ddprof_path/[^ ]*\) .*|-:\1|p' "$tracefs/uprobe_events" > "$work/remove" 2>/dev/null || true
  while read -r line; do echo "$line" >> "$tracefs/uprobe_events"; done < "$work/remove" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cp "$lib" "$work/lib.so"

# File offset of a symbol = its address - (its segment's address - the segment's offset).
read -r seg_off seg_addr < <(readelf -lW "$work/lib.so" | awk '$1 == "LOAD" && / R E / { print $2, $3; exit }')
delta=$(( seg_addr - seg_off ))
nm "$work/lib.so" | awk '$2 ~ /^[tT]$/ && ($3 ~ /javaProfiler/ || $3 ~ /^ddprof_/) { print $1, $3 }' > "$work/syms"
i=0
while read -r addr name; do
  printf 'p:ddprof_path/f%d %s:0x%x\n' "$i" "$work/lib.so" $(( 0x$addr - delta ))
  i=$((i + 1))
done < "$work/syms" >> "$tracefs/uprobe_events"

cp_file="$work/cp"
(cd "$ROOT" && mvn -q -pl ddprof-bench dependency:build-classpath -Dmdep.outputFile="$cp_file" >/dev/null)
cp="$ROOT/ddprof-bench/target/ddprof-bench-0.1.0-SNAPSHOT.jar:$(cat "$cp_file")"
perf record -q -e 'ddprof_path:*' -o "$work/perf.data" -- java -Xms256m -Xmx256m \
  -Dddprof.native.lib="$work/lib.so" -cp "$cp" com.datadoghq.profiler.bench.OverheadWorker \
  "$mode" "$threads" 3 1 | grep RESULT | tr ' ' '\n' | grep -E '^samples=' || true
perf script -i "$work/perf.data" -F comm,event 2>/dev/null | awk '$1 == "overhead-worker" { print $NF }' \
  | sort | uniq -c > "$work/hits"

python3 - "$work/syms" "$work/hits" "$work/lib.so" "$min" <<'EOF'
import subprocess, sys
syms = [l.split() for l in open(sys.argv[1])]
hits = {}
for l in open(sys.argv[2]):
    n, ev = l.split()
    hits[int(ev.split(':f')[1].rstrip(':'))] = int(n)
lib, low = sys.argv[3], int(sys.argv[4])
sizes = {}
for l in subprocess.run(['nm', '-S', lib], capture_output=True, text=True).stdout.splitlines():
    p = l.split()
    if len(p) == 4:
        sizes[p[3]] = (int(p[0], 16), int(p[1], 16))
hot = [l.split() for l in subprocess.run(['readelf', '-SW', lib], capture_output=True, text=True).stdout.splitlines()
       if ' .text.hot ' in l]
lo = hi = 0
if hot:
    f = hot[0][hot[0].index('.text.hot') + 1:]
    lo, hi = int(f[1], 16), int(f[1], 16) + int(f[3], 16)
rows = sorted(((n, syms[i][1]) for i, n in hits.items() if n >= low), reverse=True)
names = subprocess.run(['c++filt'], input='\n'.join(r[1] for r in rows), capture_output=True, text=True).stdout.splitlines()
print(f'{"calls":>8} {"bytes":>6} hot function')
for (n, name), pretty in zip(rows, names):
    addr, size = sizes.get(name, (0, 0))
    print(f'{n:8d} {size:6d} {"yes" if lo <= addr < hi else "no ":3} {pretty}')
EOF
