#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]: fuzzes JPEG decode + random_resized_crop + distort for SECONDS (default 60).
# Builds fuzz/fuzz_decode with clang (libFuzzer, ASan + UBSan, CUDA off) in build-fuzz, writes the seed
# corpus (real JPEGs of every kind) with fuzz/make_seed_corpus, replays fuzz/regressions/, then fuzzes.
# Exits non-zero on any crash, leak, timeout or sanitizer report; the input that caused it is left in
# build-fuzz/artifacts/ (copy it to fuzz/regressions/ with the fix). Prints the number of executions, and
# fails when there were none.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
# At least one second: libFuzzer reads -max_total_time=0 as "no limit".
case "$seconds" in '' | *[!0-9]* | 0) echo "usage: scripts/fuzz.sh [SECONDS], SECONDS >= 1" >&2; exit 2 ;; esac
dir=build-fuzz
say() { printf 'fuzz: %s\n' "$*" >&2; }

if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DCONVEYOR_CUDA=OFF -DCONVEYOR_SANITIZE=ON -DCONVEYOR_FUZZ=ON \
    -DCONVEYOR_TESTS=OFF -DCONVEYOR_BENCHMARKS=OFF -DCONVEYOR_EXAMPLES=OFF >"$dir.configure.log" 2>&1 ||
    { cat "$dir.configure.log"; exit 1; }
fi
cmake --build "$dir" --target fuzz_decode make_seed_corpus -j "$(nproc)" -- --quiet
target=$dir/fuzz/fuzz_decode

rm -rf "$dir/seeds"
"$dir/fuzz/make_seed_corpus" "$dir/seeds" >/dev/null
mkdir -p "$dir/corpus" "$dir/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Every input that once failed must pass now (libFuzzer runs files given by name once each).
regressions=()
for file in fuzz/regressions/*; do
  [ -f "$file" ] && [ "$(basename "$file")" != README.md ] && regressions+=("$file")
done
if [ ${#regressions[@]} -gt 0 ]; then
  "$target" -runs=1 "${regressions[@]}" >"$dir/regressions.log" 2>&1 ||
    { cat "$dir/regressions.log"; say "a regression input fails again"; exit 1; }
  say "${#regressions[@]} regression inputs pass"
fi

# New inputs go to build-fuzz/corpus (kept between runs); the seeds are read only.
status=0
"$target" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus" "$dir/seeds" >"$dir/fuzz.log" 2>&1 ||
  status=$?
executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -n 1)
if [ "$status" -ne 0 ]; then
  tail -n 60 "$dir/fuzz.log"
  say "FAILED after ${executions:-?} executions; the input is in $dir/artifacts/"
  exit 1
fi
# A run that executed nothing (a fuzzer that exits at once, a log without its final statistics) proves
# nothing: it fails like a crash would.
case "${executions:-}" in
  '' | *[!0-9]* | 0)
    tail -n 30 "$dir/fuzz.log"
    say "FAILED: ${executions:-no} executions counted in $dir/fuzz.log"
    exit 1 ;;
esac
say "$executions executions in ${seconds} s, no crash (corpus: $(ls "$dir/corpus" | wc -l) inputs)"
