#!/usr/bin/env bash
# conveyor's one entry point. Installs what is missing (Debian packages, by name), builds, and runs.
#   ./conveyor.sh demo                 main job: make the demo data, run feed vs prefetch (GPU if present)
#   ./conveyor.sh test                 build and run the test suite
#   ./conveyor.sh test --sanitize asan the suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   ./conveyor.sh test --sanitize tsan the tests that start threads under ThreadSanitizer
#   ./conveyor.sh fuzz [SECONDS]       fuzz the JPEG decode and augmentation ops (scripts/fuzz.sh)
#   ./conveyor.sh build | deps | data  the single steps
# Idempotent: every step checks first and stays quiet when there is nothing to do.
set -euo pipefail
cd "$(dirname "$0")"
root=$PWD
# CONVEYOR_JOBS overrides the parallelism of builds and test runs (default: every core).
jobs=${CONVEYOR_JOBS:-$(nproc)}

# Everything the project needs, from Debian 12's packages.
packages=(
  g++ cmake ninja-build pkg-config file lld
  clang libclang-rt-14-dev
  libtbb-dev libturbojpeg0-dev libjpeg62-turbo-dev libopencv-dev libdlpack-dev
  libgtest-dev libbenchmark-dev
  libarchive-dev libcurl4-openssl-dev nlohmann-json3-dev libcli11-dev libxxhash-dev libspng-dev
  libpugixml-dev libinih-dev libnuma-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libssl-dev openssl
  libopenmpi-dev openmpi-bin iproute2
  python3 python3-matplotlib python3-dev python3-numpy python3-pytest pybind11-dev
  python3-venv python3-pip python3-setuptools python3-wheel patchelf
  dataset-fashion-mnist opencv-doc plasma-workspace-wallpapers
)

say() { printf 'conveyor: %s\n' "$*" >&2; }

deps() {
  local missing=()
  # The S3 tests' server runs on Node from the npm registry: Debian's nodejs and npm when there is no npm.
  command -v npm >/dev/null || missing+=(nodejs npm)
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# build DIR [cmake options...] [-- targets...]: configures DIR once, then builds the targets (all by default).
build() {
  local dir=$1; shift
  local options=() targets=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do options+=("$1"); shift; done
  [ $# -eq 0 ] || { shift; targets=("$@"); }
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$root" -B "$dir" -G Ninja -Wno-dev "${options[@]}" >"$dir.configure.log" 2>&1 ||
      { cat "$dir.configure.log"; exit 1; }
  fi
  cmake --build "$dir" -j "$jobs" ${targets[@]:+--target "${targets[@]}"} -- --quiet |
    { grep -v '^ninja: no work to do' || true; }
}

data() {
  "$root/data/make_demo_data.sh" "$root/build"
}

cmd=${1:-help}; shift || true
case "$cmd" in
  deps) deps ;;
  build) deps; build build ;;
  data) deps; build build; data ;;
  demo)
    deps; build build; data
    if [ $# -eq 0 ]; then
      # By default the run also leaves its JSON, a plot and Chrome traces under build/demo/.
      mkdir -p "$root/build/demo"
      set -- --json "$root/build/demo/feed_vs_prefetch.json" --plot "$root/build/demo/feed_vs_prefetch.png" \
             --trace-dir "$root/build/demo/traces"
    fi
    exec "$root/build/examples/feed_vs_prefetch/feed_vs_prefetch" "$@" ;;
  test)
    deps
    if [ "${1:-}" = "--sanitize" ]; then
      # Clang, where it is installed (deps installs it for the fuzzer), compiles the ASan build in 58 % of
      # GCC's CPU time (bench/results/2026-11-29-cpu-2core-ci-asan-clang/); an existing build folder keeps the
      # compiler it was configured with.
      sanitizer_compiler=()
      command -v clang++ >/dev/null && sanitizer_compiler=(-DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)
      case "${2:-}" in
        # The sanitizer builds leave the CUDA code out (no GPU runs it where they run: its tests skip) and
        # the asan run the consumer projects (they build conveyor again, without the sanitizer) and the
        # Fashion-MNIST learning check (minutes under ASan; tests/train/CMakeLists.txt says what covers it).
        # Both compile the libraries in unity batches (CONVEYOR_UNITY_BUILD in CMakeLists.txt): built from
        # scratch each time, they gain.
        asan) dir=build-asan; opts=("${sanitizer_compiler[@]}" -DCONVEYOR_SANITIZE=ON -DCONVEYOR_UNITY_BUILD=ON -DCONVEYOR_BENCHMARKS=OFF -DCONVEYOR_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
          targets=(); filter=(-LE 'consumer|learning') ;;
        # Only the programs with tests labelled "concurrency" (and the examples their tests run) are built.
        tsan) dir=build-tsan; opts=(-DCONVEYOR_TSAN=ON -DCONVEYOR_UNITY_BUILD=ON -DCONVEYOR_BENCHMARKS=OFF -DCONVEYOR_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
          targets=(conveyor_concurrency_programs); filter=(-L concurrency)
          # Any report fails the test; oneTBB's internals (not built with TSan) are suppressed, nothing else.
          tsan_options="halt_on_error=1 second_deadlock_stack=1"
          [ -f "$root/tests/tsan.supp" ] && tsan_options="suppressions=$root/tests/tsan.supp $tsan_options"
          export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS }$tsan_options" ;;
        *) say "unknown sanitizer '${2:-}' (asan or tsan)"; exit 2 ;;
      esac
    else
      # CONVEYOR_CUDA_ARCHITECTURES (e.g. CI's "90") narrows the kernels' targets: each one adds nvcc time.
      # CONVEYOR_UNITY_BUILD=ON (CI's, built once from scratch) compiles the libraries in unity batches and
      # then each public header alone, instead of each file alone (CMakeLists.txt says why).
      dir=build; opts=(${CONVEYOR_CUDA_ARCHITECTURES:+-DCONVEYOR_CUDA_ARCHITECTURES=$CONVEYOR_CUDA_ARCHITECTURES}
                       ${CONVEYOR_UNITY_BUILD:+-DCONVEYOR_UNITY_BUILD=$CONVEYOR_UNITY_BUILD}
                       ${CONVEYOR_UNITY_BUILD:+-DCONVEYOR_VERIFY_HEADERS=$CONVEYOR_UNITY_BUILD})
      targets=(); filter=()
    fi
    build "$dir" "${opts[@]}" -- "${targets[@]}"
    # Every test program and label at its minimum (tests/test_counts.txt), so that none drops out silently.
    # CONVEYOR_REQUIRE_CUDA=1 (CI) makes a build without its GPU programs an error too.
    counts=("$dir")
    [ "$dir" != build-tsan ] || counts+=(--label concurrency)
    [ "$dir" != build ] || [ "${CONVEYOR_REQUIRE_CUDA:-0}" = 0 ] || counts+=(--require cuda)
    python3 "$root/scripts/check_test_counts.py" "${counts[@]}"
    # --no-tests=error: a label that matches nothing must fail, not pass quietly. The closing line counts
    # the skipped tests (GPU tests without a GPU) apart from the passed ones (scripts/ctest_summary.py);
    # .ci/run adds up each run's test-summary.txt.
    junit=$root/$dir/ctest-junit.xml summary=$root/$dir/test-summary.txt
    rm -f "$junit" "$summary"
    if ! ctest --test-dir "$dir" --output-on-failure -j "$jobs" --timeout 600 --no-tests=error \
         --output-junit "$junit" "${filter[@]}"; then
      # The failures' own output again, last, where a log that keeps only its end still shows it.
      say "failed tests, run again one at a time:"
      ctest --test-dir "$dir" --rerun-failed --output-on-failure -j 1 --timeout 600 2>&1 | tail -80 || true
      [ ! -f "$junit" ] || python3 "$root/scripts/ctest_summary.py" "$junit" --write "$summary"
      exit 8
    fi
    python3 "$root/scripts/ctest_summary.py" "$junit" --write "$summary" ;;
  fuzz) deps; exec "$root/scripts/fuzz.sh" "$@" ;;
  *) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; [ "$cmd" = help ] || exit 2 ;;
esac
