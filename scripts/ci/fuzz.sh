#!/usr/bin/env bash
# CI: bounded fuzzing with libFuzzer (clang, AddressSanitizer and UndefinedBehaviorSanitizer) of
# what reads outside input: size expressions (tuner/sizes.cpp), configuration keys
# (kernels/config.cpp with the catalogue), database files (db/*.cpp with SQLite) and, once it
# exists, the reference-data CSV parser (tuner/compare.cpp). Built with clang++ directly, not
# through the project's CMake (which uses g++), into build-fuzz/.
#
# Each target runs FUZZ_TIME seconds (default 30; the targets run in parallel, one per core) from
# its seed corpus in tests/fuzz/corpus/<target>. A crash, a sanitizer report, an input slower than
# FUZZ_TIMEOUT seconds (default 10) or more than 2048 MiB fails the script; the reproducer stays in
# build-fuzz/artifacts/<target>/ and is dumped in hex into the log. Replay one:
#   build-fuzz/fuzz_sizes build-fuzz/artifacts/fuzz_sizes/crash-...
# Usage: scripts/ci/fuzz.sh [target...]     (default: every target)
# shellcheck disable=SC2206,SC2207,SC2046  # source lists are split on purpose (no spaces in them)
set -euo pipefail
cd "$(dirname "$0")/../.."
FUZZ_TIME=${FUZZ_TIME:-30}
FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-10}
B=build-fuzz
CXX=${FUZZ_CXX:-clang++-14}

if ! command -v "$CXX" >/dev/null || ! "$CXX" -fsanitize=fuzzer -x c++ -o /dev/null - <<<'
    #include <cstdint>
    #include <cstddef>
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' 2>/dev/null; then
  echo "fuzz: $CXX with libFuzzer missing; installing clang-14 and libclang-rt-14-dev"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq clang-14 libclang-rt-14-dev libsqlite3-dev >/dev/null
fi

mkdir -p "$B/generated" "$B/obj"
# The embedded templates and published figures, as cmake/embed_*.cmake write them for the library.
templates=$(find templates -path templates/test -prune -o \( -name '*.cu' -o -name '*.cuh' \) -print | sort | sed "s|^|$PWD/|" | paste -sd ';')
cmake -DOUT="$PWD/$B/generated/templates_embedded.cpp" "-DFILES=$templates" -DROOT="$PWD/templates" \
  -P cmake/embed_templates.cmake
if [ -f cmake/embed_data.cmake ] && [ -f data/published.csv ]; then
  cmake -DOUT="$PWD/$B/generated/published_embedded.cpp" -DFILE="$PWD/data/published.csv" -P cmake/embed_data.cmake
fi

cuda_inc=${CUDA_HOME:-/usr/local/cuda}/include
cflags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=all -I. -Iinclude -I"$cuda_inc"
        "-DRT_SHIPPED_TUNING_FILE=\"$PWD/share/reduce-tune/tuning.db\"")
# What each target links: its own file and the library sources it needs, then system libraries.
declare -A sources=(
  [fuzz_sizes]="tuner/sizes.cpp"
  [fuzz_key]="kernels/config.cpp kernels/ops.cpp kernels/user_op.cpp kernels/additive.cpp kernels/catalogue.cpp kernels/segmented.cpp kernels/segmented_plan.cpp $B/generated/templates_embedded.cpp"
  [fuzz_store]="db/schema.cpp db/writes.cpp db/merge.cpp db/reads.cpp db/op_key.cpp kernels/trust.cpp kernels/config.cpp kernels/ops.cpp kernels/user_op.cpp kernels/additive.cpp kernels/catalogue.cpp kernels/segmented.cpp kernels/segmented_plan.cpp $B/generated/templates_embedded.cpp"
)
libs="-lsqlite3 -lpthread -ldl"
if [ -f tuner/compare.cpp ] && [ -f "$B/generated/published_embedded.cpp" ]; then
  # The parser sits in the comparison module, which reaches most of the library: link it as an
  # archive, so that only the objects it needs come in.
  sources[fuzz_compare]="lib"
else
  echo "fuzz: no reference-data CSV parser (tuner/compare.cpp) yet: fuzz_compare skipped"
fi
# The runtime library's sources and the tuner's (the comparison module is the tuner's).
lib_sources=$(sed -n -e '/^add_library(reduce_tune$/,/^)/p' -e '/^add_library(reduce_tune_tuner STATIC$/,/^)/p' CMakeLists.txt |
  grep -oE '^ +[a-z]+/[a-z_]+\.cpp' | tr -d ' ' | paste -sd ' ')
lib_sources="$lib_sources $B/generated/templates_embedded.cpp $B/generated/published_embedded.cpp"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(printf '%s\n' "${!sources[@]}" | sort))
for t in "${targets[@]}"; do
  [ -n "${sources[$t]:-}" ] || { echo "fuzz: unknown target $t"; exit 2; }
done

t0=$(date +%s)
obj() { echo "$B/obj/$(echo "${1%.cpp}" | tr '/' '_').o"; }
needed=()
for t in "${targets[@]}"; do
  if [ "${sources[$t]}" = lib ]; then needed+=($lib_sources); else needed+=(${sources[$t]}); fi
done
# Each source compiled once, instrumented, one compiler per core.
export FUZZ_COMPILE="$CXX ${cflags[*]} -fsanitize=fuzzer-no-link,address,undefined -c" B
printf '%s\n' "${needed[@]}" | sort -u |
  xargs -P "$(nproc)" -I{} bash -c 'o=$B/obj/$(echo "{}" | sed "s/\.cpp$//; s|/|_|g").o; $FUZZ_COMPILE {} -o "$o"' ||
  { echo "fuzz: a compile failed"; exit 1; }
if [[ " ${targets[*]} " == *" fuzz_compare "* ]]; then
  rm -f "$B/obj/libreduce_tune.a"
  ar qc "$B/obj/libreduce_tune.a" $(for s in $lib_sources; do obj "$s"; done)
fi
for t in "${targets[@]}"; do
  if [ "${sources[$t]}" = lib ]; then deps="$B/obj/libreduce_tune.a"; else deps=$(for s in ${sources[$t]}; do obj "$s"; done); fi
  # shellcheck disable=SC2086
  "$CXX" "${cflags[@]}" -fsanitize=fuzzer,address,undefined "tests/fuzz/$t.cpp" $deps $libs -o "$B/$t"
done
echo "fuzz: built ${targets[*]} in $(( $(date +%s) - t0 )) s"

# One fuzzer per core at a time; each writes its log to $B/<target>.log.
run() {
  local t=$1 corpus=$B/corpus/$1 seeds=tests/fuzz/corpus/${1#fuzz_}
  local dict=tests/fuzz/${1#fuzz_}.dict
  mkdir -p "$corpus" "$B/artifacts/$t"
  local extra=()
  [ -f "$dict" ] && extra+=(-dict="$dict")
  "$B/$t" "$corpus" "$seeds" "${extra[@]}" -max_total_time="$FUZZ_TIME" -rss_limit_mb=2048 \
    -timeout="$FUZZ_TIMEOUT" -print_final_stats=1 -artifact_prefix="$B/artifacts/$t/" \
    > "$B/$t.log" 2>&1
}
cores=$(nproc)
status=0
declare -A rc
running=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do sleep 1; done
  rm -f "$B/artifacts/$t/"*
  run "$t" &
  running+=("$t:$!")
done
for tp in "${running[@]}"; do
  t=${tp%%:*}
  if wait "${tp##*:}"; then rc[$t]=0; else rc[$t]=$?; fi
done

echo
for t in "${targets[@]}"; do
  execs=$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$B/$t.log" | grep -o '[0-9]*$' || echo "?")
  secs=$(grep -m1 -o 'Done [0-9]* runs in [0-9]* second' "$B/$t.log" | grep -o '[0-9]* second' | grep -o '[0-9]*' || echo "?")
  corpus=$(ls "$B/corpus/$t" | wc -l)
  if [ "${rc[$t]}" -eq 0 ]; then
    echo "fuzz: $t: ok, $execs inputs in ${secs} s, corpus $corpus files"
  else
    status=1
    echo "fuzz: $t: FAILED (exit ${rc[$t]}) after $execs inputs; log $B/$t.log"
    grep -E 'ERROR|SUMMARY|runtime error|fuzz_[a-z]+: |Test unit written|ALARM|out-of-memory' "$B/$t.log" | head -20
    for a in "$B/artifacts/$t/"*; do
      [ -f "$a" ] || continue
      echo "reproducer $a ($(stat -c %s "$a") bytes; replay: $B/$t $a):"
      head -c 4096 "$a" | od -A d -t x1z | head -64
    done
  fi
done
echo "fuzz: total $(( $(date +%s) - t0 )) s"
exit $status
