#!/usr/bin/env bash
# Splits the release build of the native library into what the jar ships and what a crash
# needs to be read (run by ddprof-lib's build, generate-resources phase):
#
#   bash scripts/split-debuginfo.sh LIBRARY STRIPPED_DIR DEBUG_DIR [OBJCOPY]
#
#   DEBUG_DIR/NAME.debug   the DWARF only (objcopy --only-keep-debug): the debuginfo artifact
#   STRIPPED_DIR/NAME      LIBRARY without its DWARF (objcopy --strip-debug), naming the .debug
#                          file and its CRC in .gnu_debuglink; the symbol table and the build id
#                          (.note.gnu.build-id, the same in both files) stay
#
# gdb, addr2line -e NAME.debug and debuginfod find the one from the other by build id or by
# the debuglink (docs/debugging.md).
set -euo pipefail

lib="$1" stripped_dir="$2" debug_dir="$3" objcopy="${4:-objcopy}"
name="$(basename "$lib")"
[ -f "$lib" ] || { echo "split-debuginfo.sh: $lib does not exist" >&2; exit 1; }
mkdir -p "$stripped_dir" "$debug_dir"
# Written beside the final names, then moved, so that an interrupted run leaves no half file.
"$objcopy" --only-keep-debug "$lib" "$debug_dir/$name.debug.tmp"
mv -f "$debug_dir/$name.debug.tmp" "$debug_dir/$name.debug"
"$objcopy" --strip-debug --add-gnu-debuglink="$debug_dir/$name.debug" "$lib" "$stripped_dir/$name.tmp"
mv -f "$stripped_dir/$name.tmp" "$stripped_dir/$name"
