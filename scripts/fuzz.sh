#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]: fuzzes JPEG decode + random_resized_crop + distort for SECONDS (default 60).
# Builds fuzz/fuzz_decode with clang (libFuzzer, ASan + UBSan, CUDA off) in build-fuzz, writes the seed
# corpus (real JPEGs of every kind) with fuzz/make_seed_corpus, replays fuzz/regressions/, then fuzzes with
# one fuzzer process per core (CONVEYOR_FUZZ_WORKERS to choose), each seeded differently, sharing the corpus.
# Exits non-zero on any crash, leak, timeout or sanitizer report; the input that caused it is left in
# build-fuzz/artifacts/ (copy it to fuzz/regressions/ with the fix). Prints the number of executions, and
# fails when a process executed none.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
# At least one second: libFuzzer reads -max_total_time=0 as "no limit".
case "$seconds" in '' | *[!0-9]* | 0) echo "usage: scripts/fuzz.sh [SECONDS], SECONDS >= 1" >&2; exit 2 ;; esac
dir=build-fuzz
say() { printf 'fuzz: %s\n' "$*" >&2; }

if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DCONVEYOR_CUDA=OFF -DCONVEYOR_SANITIZE=ON -DCONVEYOR_FUZZ=ON -DCONVEYOR_UNITY_BUILD=ON \
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

# New inputs go to build-fuzz/corpus (kept between runs, shared by the processes); the seeds are read only.
# libFuzzer runs on one core: a process per core gives the same executions in less time.
workers=${CONVEYOR_FUZZ_WORKERS:-$(nproc)}
case "$workers" in '' | *[!0-9]* | 0) say "CONVEYOR_FUZZ_WORKERS must be a number >= 1"; exit 2 ;; esac
rm -f "$dir"/fuzz-*.log
pids=()
for ((w = 0; w < workers; w++)); do
  "$target" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -seed=$((w + 1)) \
    -artifact_prefix="$dir/artifacts/" -print_final_stats=1 "$dir/corpus" "$dir/seeds" >"$dir/fuzz-$w.log" 2>&1 &
  pids+=($!)
done
total=0 failed=0
for ((w = 0; w < workers; w++)); do
  status=0
  wait "${pids[$w]}" || status=$?
  log=$dir/fuzz-$w.log
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$log"
    say "process $w FAILED after ${executions:-?} executions; the input is in $dir/artifacts/"
    failed=1
    continue
  fi
  # A process that executed nothing (a fuzzer that exits at once, a log without its final statistics)
  # proves nothing: it fails like a crash would.
  case "${executions:-}" in
    '' | *[!0-9]* | 0)
      tail -n 30 "$log"
      say "process $w FAILED: ${executions:-no} executions counted in $log"
      failed=1
      continue ;;
  esac
  total=$((total + executions))
done
[ "$failed" -eq 0 ] || exit 1
say "$total executions in ${seconds} s by $workers processes, no crash (corpus: $(ls "$dir/corpus" | wc -l) inputs)"
