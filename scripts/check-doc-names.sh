#!/usr/bin/env bash
# Checks the code names a doc cites against the tree: every backticked Rust file (`path/file.rs`)
# must be a file under ddprof-native/ (a path given in part must end a real path), and every
# backticked `module::name` or `Type::name` must be defined in ddprof-native/src (`fn`, a type,
# a const or static, an enum variant, a module), in a file of that module or one that names the
# type when the first part says which; a bare snake_case or camelCase identifier must be a word of
# the code (a function, a constant, a counter's name). Prints each name not found; exits 1 if there is any.
#
#   bash scripts/check-doc-names.sh [DOC...]      (default: docs/architecture.md)
#
# Not part of scripts/test.sh: run it after editing the map.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
SRC=ddprof-native/src
docs=("$@")
[ ${#docs[@]} -eq 0 ] && docs=(docs/architecture.md)

# C++ classes of HotSpot (and the example class of the jitdump text) a doc may cite as `Class::member`.
HOTSPOT="JavaThread OSThread Deoptimization InstanceKlass Klass java_lang_Class JavaCalls frame Thread
  Method ConstMethod CodeCache CodeBlob nmethod PcDesc ScopeDesc ClassLoaderData Symbol JfrTraceId Foo"
HOTSPOT="$(echo $HOTSPOT)"

missing=0
report() { echo "$1: not found: $2"; missing=$((missing + 1)); }

all_files="$(cd ddprof-native && find . -type f | sed 's|^\./||')"

# The backticked spans of a doc, one a line (code blocks left out: the Layout block is
# checked by its own rule below).
spans() { awk '/^```/{inblock=!inblock; next} !inblock' "$1" | grep -o '`[^`]*`' | tr -d '`'; }

# A name defined in the given files (or the whole source when none are given).
defined() { # defined NAME [FILE...]
  local name="$1"; shift
  local files=("$@")
  [ ${#files[@]} -eq 0 ] && files=($(find "$SRC" -name '*.rs'))
  grep -qE "(fn|struct|enum|trait|type|const|static|mod|macro_rules!) +$name\b|^\s*$name\b *[,({=]|^\s*$name *$|^\s*(pub(\([a-z]+\))? +)?$name *:[^:]" "${files[@]}" 2>/dev/null
}

# The files of a module path such as `sample::walk::native` or `vmstructs` (any depth).
module_files() { # module_files a::b
  local path="${1//:://}"
  find "$SRC" -name '*.rs' | grep -E "(^|/)$path(\.rs|/[^/]*\.rs|_[a-z0-9_]*\.rs)$"
}

check_file() { # check_file DOC path/file.rs
  local f="$2"
  f="${f#ddprof-native/}"
  f="${f#src/}"
  # `safe_access.rs (+_protected...)` and friends come as plain names: a suffix of a real path.
  if ! grep -qE "(^|/)${f//./\\.}$" <<<"$all_files"; then
    report "$1" "$2"
  fi
}

check_path() { # check_path DOC a::b::c
  local doc="$1" name="$2"
  name="${name#crate::}"
  name="${name#javaProfiler::}"
  name="${name%%(*}"
  name="${name%%<*}"
  name="${name%\{*}"
  name="${name%::}"
  case "$name" in
    std::*|core::*|libc::*|jni::*|parking_lot::*|jvmti::sys::*) return ;;
  esac
  local last="${name##*::}" first="${name%%::*}"
  [ -z "$last" ] && return
  # HotSpot's own C++ names (fields, classes) are docs/hotspot.md's to check, not the tree's.
  case " $HOTSPOT " in *" $first "*) return ;; esac
  if [[ "$first" =~ ^[a-z_0-9]+$ ]]; then
    # module::...::name: the name in a file of that module.
    local head="${name%::*}"
    mapfile -t files < <(module_files "$head")
    if [ ${#files[@]} -eq 0 ]; then
      mapfile -t files < <(module_files "$first")
    fi
    if [ ${#files[@]} -eq 0 ]; then # an inline module (`mod frame_type {`)
      mapfile -t files < <(grep -rlE "mod +$first *\{" "$SRC" --include='*.rs')
    fi
    if [ ${#files[@]} -eq 0 ]; then report "$doc" "$2 (no module $head)"; return; fi
    # A type in the path (`walk::vm::VmWalker::walk`): look for the last part anywhere in the module.
    defined "$last" "${files[@]}" || report "$doc" "$2"
  else
    # Type::name: the name in a file that defines or implements the type.
    mapfile -t files < <(grep -rlE "(struct|enum|trait|type|impl.*) +$first\b" "$SRC" --include='*.rs')
    if [ ${#files[@]} -eq 0 ]; then report "$doc" "$2 (no type $first)"; return; fi
    defined "$last" "${files[@]}" || report "$doc" "$2"
  fi
}

# Every word of the tree's code, for the bare identifiers a doc cites (`walk_and_record`, a counter's name).
words="$(mktemp)"
trap 'rm -f "$words"' EXIT
grep -rhoE '[A-Za-z_][A-Za-z0-9_]*' ddprof-native ddprof-lib ddprof-test ddprof-bench scripts build.rs \
  --include='*.rs' --include='*.java' --include='*.sh' --include='*.c' --include='*.toml' 2>/dev/null |
  sort -u >"$words"

for doc in "${docs[@]}"; do
  # A bare identifier in backticks that looks like code (snake_case, SCREAMING_CASE, camelCase) must be
  # a word of the tree: a function, a constant, a counter's name.
  while IFS= read -r w; do
    grep -qxF "$w" "$words" || report "$doc" "$w"
  done < <(spans "$doc" | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | grep -E '_|[a-z][A-Z]' | grep -vE '^_' | sort -u)
  while IFS= read -r span; do
    # Every Rust file named in the span.
    for f in $(grep -oE '(^|[^*A-Za-z0-9_./-])[A-Za-z0-9][A-Za-z0-9_./-]*\.rs\b' <<<"$span" | sed 's/^[^A-Za-z0-9]//'); do
      check_file "$doc" "$f"
    done
    # Every path with `::` in the span (a span can hold several, e.g. `a::b -> c::d`).
    for p in $(grep -oE '[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)+' <<<"$span"); do
      check_path "$doc" "$p"
    done
  done < <(spans "$doc")
  # The Layout block: every `name.rs` it lists, relative to the folder heading it.
  for f in $(awk '/^```/{n++; next} n==1' "$doc" | grep -oE '(^|[^*A-Za-z0-9_./-])[A-Za-z0-9][A-Za-z0-9_./-]*\.rs\b' | sed 's/^[^A-Za-z0-9]//' | sort -u); do
    check_file "$doc" "$f"
  done
done

if [ "$missing" -gt 0 ]; then
  echo "check-doc-names: $missing name(s) not found"
  exit 1
fi
echo "check-doc-names: every cited name found"
