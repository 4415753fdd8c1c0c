#!/usr/bin/env bash
# build.sh OUT_DIR — builds libcupti_timeline.so into OUT_DIR against the machine's CUPTI (the CUDA toolkit's
# extras/CUPTI, or the nvidia-cuda-cupti Python package that PyTorch installs), choosing the newest activity
# record types its headers define. Prints the library's path; exits 1 where no CUPTI is found.
set -euo pipefail
out=$1 here=$(cd "$(dirname "$0")" && pwd)
candidates=()
for cuda in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-*; do
  [ -n "$cuda" ] && [ -d "$cuda/extras/CUPTI" ] && candidates+=("$cuda/extras/CUPTI")
done
python=$(command -v python3 || true)
if [ -n "$python" ]; then
  while IFS= read -r dir; do candidates+=("$dir"); done < <("$python" - <<'PY' 2>/dev/null || true
import glob, os, site
for base in site.getsitepackages() + [site.getusersitepackages()]:
    for header in glob.glob(os.path.join(base, "nvidia", "**", "include", "cupti.h"), recursive=True):
        print(os.path.dirname(os.path.dirname(header)))
PY
)
fi
include= lib=
for dir in "${candidates[@]}"; do
  [ -f "$dir/include/cupti.h" ] || continue
  so=$(find "$dir" -maxdepth 2 -name 'libcupti.so*' | sort | head -1)
  [ -n "$so" ] || continue
  include=$dir/include lib=$(dirname "$so") libfile=$so
  break
done
[ -n "$include" ] || { echo "cupti_timeline: no CUPTI headers and library found" >&2; exit 1; }
newest() {  # newest() NAME: the highest-numbered typedef NAME<N> in cupti_activity.h (deprecated ones are elsewhere)
  grep -ohE "\} $1[0-9]+;" "$include/cupti_activity.h" | grep -oE "$1[0-9]+" | sort -V | tail -1
}
kernel=$(newest CUpti_ActivityKernel) memcpy=$(newest CUpti_ActivityMemcpy) memset=$(newest CUpti_ActivityMemset)
[ -n "$kernel" ] && [ -n "$memcpy" ] && [ -n "$memset" ] ||
  { echo "cupti_timeline: cannot tell the record types in $include/cupti_activity.h" >&2; exit 1; }
# cupti.h includes the toolkit's headers (cuda.h, crt/host_defines.h): the Python package has only some.
toolkit=()
for cuda in "${CUDA_HOME:-}" /usr/local/cuda; do
  [ -n "$cuda" ] && [ -f "$cuda/include/crt/host_defines.h" ] && { toolkit=(-I"$cuda/include"); break; }
done
mkdir -p "$out"
"${CXX:-g++}" -std=c++17 -O2 -shared -fPIC -I"$include" "${toolkit[@]}" \
  -DTIMELINE_KERNEL_RECORD="$kernel" -DTIMELINE_MEMCPY_RECORD="$memcpy" -DTIMELINE_MEMSET_RECORD="$memset" \
  "$here/cupti_timeline.cpp" -o "$out/libcupti_timeline.so" "$libfile" -Wl,-rpath,"$lib"
echo "cupti_timeline: built with $include ($kernel, $memcpy, $memset)" >&2
echo "$out/libcupti_timeline.so"
