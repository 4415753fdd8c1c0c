#!/usr/bin/env bash
# check_consumer.sh BUILD_DIR JPEG_DIR WORK_DIR — conveyor as an outside project uses it, three ways:
#   1. installed (cmake --install into a fresh prefix), found with find_package(conveyor 0.2 COMPONENTS ...)
#   2. the same prefix through pkg-config (conveyor.pc; static archives: pkg-config --static)
#   3. built from the source tree with add_subdirectory (the conveyor::data program only)
# Each build runs on the JPEGs of JPEG_DIR (an ImageFolder tree) and must print the same batches; the
# program that links conveyor::data alone must not load any CUDA library, nor gRPC (ldd).
set -euo pipefail
build=$(cd "$1" && pwd) jpegs=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
project=$here/project
rm -rf "$work" && mkdir -p "$work"
say() { printf 'consumer: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }

no_cuda_libraries() {
  local found
  found=$(ldd "$1" | grep -Eo 'lib(cuda|cudart|cudnn|cublas|cublasLt|nccl|nvjpeg|grpc|gpr|protobuf)[^ ]*' || true)
  [ -z "$found" ] || fail "$1 links conveyor::data only but loads CUDA or RPC libraries: $found"
  say "$(basename "$1"): no CUDA or RPC library among $(ldd "$1" | wc -l) loaded objects"
}

say "installing $build into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || { cat "$work/install.log"; fail "install"; }

say "find_package(conveyor 0.2 COMPONENTS data cuda)"
cmake -S "$project" -B "$work/find" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/find.log" 2>&1 || { cat "$work/find.log"; fail "configure with find_package"; }
cmake --build "$work/find" >>"$work/find.log" 2>&1 || { cat "$work/find.log"; fail "build with find_package"; }
by_package=$("$work/find/count_batches" "$jpegs")
say "  $by_package"
say "  $("$work/find/feed_batches" "$jpegs")"
no_cuda_libraries "$work/find/count_batches"

say "pkg-config conveyor"
mkdir -p "$work/pkg-config"
flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs --static conveyor) ||
  fail "pkg-config cannot read conveyor.pc"
# shellcheck disable=SC2086
c++ -std=c++20 -O2 "$project/count_batches.cpp" -o "$work/pkg-config/count_batches" $flags \
  >"$work/pkg-config.log" 2>&1 || { cat "$work/pkg-config.log"; fail "build with pkg-config ($flags)"; }
by_pkg_config=$("$work/pkg-config/count_batches" "$jpegs")
say "  $by_pkg_config"
no_cuda_libraries "$work/pkg-config/count_batches"

say "add_subdirectory(conveyor)"
# No build type (no -O) and unity batches: what this checks depends on neither, and conveyor::data, built
# once more here, compiles in less time (this whole check: 43 s against 77 s alone on the 2-core build
# machine with unity batches, 2026-11-27). The suite's own build compiles each file alone.
cmake -S "$project" -B "$work/subdirectory" -G Ninja -DCMAKE_BUILD_TYPE= -DCONVEYOR_SOURCE_DIR="$repo" \
  -DCONVEYOR_UNITY_BUILD=ON \
  >"$work/subdirectory.log" 2>&1 || { cat "$work/subdirectory.log"; fail "configure with add_subdirectory"; }
# A subproject must not turn on conveyor's tests, benchmarks, examples or data tools.
grep -q 'CONVEYOR_TESTS:BOOL=OFF' "$work/subdirectory/CMakeCache.txt" || fail "conveyor's tests are on in a subproject"
# (Build statements for outputs in those folders of the subproject's binary tree, not path text: the folder
# a checkout lies in may have any name.)
grep -qE '^build conveyor/(tests|examples|bench|data)/' "$work/subdirectory/build.ninja" &&
  fail "a subproject got conveyor's programs"
# Only the data program: conveyor::cuda was built and linked from the installed package above, and building
# it once more here (CUDA kernels included) was the longest part of the whole test suite.
cmake --build "$work/subdirectory" --target count_batches >>"$work/subdirectory.log" 2>&1 ||
  { cat "$work/subdirectory.log"; fail "build with add_subdirectory"; }
by_subdirectory=$("$work/subdirectory/count_batches" "$jpegs")
say "  $by_subdirectory"
no_cuda_libraries "$work/subdirectory/count_batches"

[ "$by_package" = "$by_pkg_config" ] && [ "$by_package" = "$by_subdirectory" ] ||
  fail "the three builds disagree"
say "the three builds agree"
