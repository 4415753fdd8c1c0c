# shellcheck shell=bash
# bench/gpu/lib.sh: what every script of bench/gpu/ shares, sourced by each (not run). On the GPU machine,
# from the repository root, with the bundle that scripts/device-bundle.sh (or scripts/gpu-test-bundle.sh)
# packed into .carry/.
#
#   bench_options NAME=DEFAULT... -- "$@"
#                             the script's options, each --NAME VALUE, into variables set to their defaults
#                             first ('-' in a name is '_' in its variable); NAME+= gathers every value given
#                             into an array, NAME! is a flag without a value (1 when given, else 0)
#   bench_begin NAME "$@"     unpacks the bundle (once per machine), makes this script's results folder $r
#                             (under $BENCH_RESULTS, default /tmp/bench-results), sends the console there too
#                             and notes the start of its record
#   bench_run SECONDS CMD...  CMD under a time limit; 20 s before it, the stacks of every bundle program still
#                             running go to $r/hang-PID.txt; a failure is reported and listed, never fatal
#   alternate ROUNDS FUNCTION SIDE...
#                             FUNCTION SIDE ROUND for every side, round after round, the order reversed in even
#                             rounds (A B C, C B A, A B C): a drift of the machine weighs on every side alike.
#                             Every ratio is then taken as the median of the rounds' ratios (bench/summarize_*.py)
#   imagenet_like, fields_set, fashion_mnist, shards_of SET, prepared_folder NAME:FLAGS
#                             the data sets, made once per machine; each prints its path
#   unless_given "FLAGS" --NAME VALUE...
#                             the array given_defaults: each --NAME VALUE that a variant's FLAGS do not set
#                             themselves (the programs refuse an option given twice)
#   gpu_places                each GPU's PCI bus, NUMA node and close CPUs, as the feeders' host placement
#                             reads them
#   nvjpeg_abi_check          our nvJPEG declarations against NVIDIA's header, at compile time
#   bench_end                 writes $r/record.json (command, commit, machine, dates, failed runs) and, when
#                             the script runs alone (not under bench/gpu/run.sh), $OUT/results.tgz
#
# Only 8 files come back from a device call: everything stays under $BENCH_RESULTS until it is packed into
# the one results.tgz.

set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Where the bundle is unpacked and the data sets are made (BENCH_BUNDLE, BENCH_DATA: other places, to try a
# script on a machine that others use too).
bundle=${BENCH_BUNDLE:-/tmp/bundle}
bin=$bundle/bin
data=${BENCH_DATA:-/tmp/data}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
export PYTHONUNBUFFERED=1

say() { printf '%s\n' "$*" >&4; }  # to the console, even from inside a pipe that a caller filters

bench_options() {
  local _spec _name _variable
  declare -A _kind=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    _spec=$1 _name=${1%%=*}
    shift
    case "$_name" in
      *+) _name=${_name%+} _kind[$_name]=list; eval "${_name//-/_}=()" ;;
      *!) _name=${_name%!} _kind[$_name]=flag; printf -v "${_name//-/_}" 0 ;;
      *) _kind[$_name]=value; printf -v "${_name//-/_}" '%s' "${_spec#*=}" ;;
    esac
  done
  shift
  while [ $# -gt 0 ]; do
    _name=${1#--} _variable=${1#--}
    _variable=${_variable//-/_}
    case "${_kind[$_name]:-}" in
      value) [ $# -ge 2 ] || { echo "$(basename "$0"): $1 needs a value" >&2; exit 2; }
             printf -v "$_variable" '%s' "$2"; shift 2 ;;
      list) [ $# -ge 2 ] || { echo "$(basename "$0"): $1 needs a value" >&2; exit 2; }
            eval "$_variable+=(\"\$2\")"; shift 2 ;;
      flag) printf -v "$_variable" 1; shift ;;
      *) echo "$(basename "$0"): unknown option $1 (its options: ${!_kind[*]})" >&2; exit 2 ;;
    esac
  done
}

bench_begin() {
  bench_name=$1; shift
  bench_arguments=("$@")
  bench_started=$(date -u +%FT%TZ)
  r=${BENCH_RESULTS:-/tmp/bench-results}/$bench_name
  if [ -n "${BENCH_RUNNER:-}" ]; then
    # The same script twice in one call: NAME, NAME-2, ...
    local n=1
    while [ -e "$r" ]; do n=$((n + 1)); r=${BENCH_RESULTS}/$bench_name-$n; done
  fi
  rm -rf "$r" && mkdir -p "$r"
  exec > >(tee -a "$r/console.log") 2>&1
  exec 4>&1
  [ -f "$root/.carry/bundle.tar.xz" ] || { echo "bench: no .carry/bundle.tar.xz (scripts/device-bundle.sh)"; exit 2; }
  # The bundle is unpacked once per machine: a list of scripts in one call shares it.
  local stamp
  stamp=$(stat -c '%s %Y' "$root/.carry/bundle.tar.xz")
  if [ "$(cat "$bundle/.unpacked-from" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$bundle" && mkdir -p "$bundle" && tar xf "$root/.carry/bundle.tar.xz" -C "$bundle" --strip-components 1 &&
      echo "$stamp" >"$bundle/.unpacked-from"
  fi
  # shellcheck disable=SC1091
  source "$bundle/tools/device-env" "$bundle/lib"
  # nvJPEG is loaded at run time (dlopen libnvjpeg.so.13): the toolkit's copy, after the bundle's libraries.
  [ -e "$cuda_home/lib64/libnvjpeg.so.13" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda_home/lib64"
  # The commit the bundle was built at, for every JSON written here (bench/peers/run_record.py, the C++
  # benchmarks): the copy of the tree on this machine may answer git with another one.
  CONVEYOR_COMMIT=$(cat "$root/.carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  export CONVEYOR_COMMIT
  # What the data-parallel GPU tests start besides themselves: this checkout's launcher and the bundle's
  # programs (the paths they were built with are the build machine's).
  export CONVEYOR_LAUNCH=$root/scripts/launch.sh CONVEYOR_TWO_HOSTS=$root/tests/support/two_hosts.sh
  export CONVEYOR_DATA_PARALLEL_PEER=$bin/data_parallel_peer CONVEYOR_FEED_VS_PREFETCH=$bin/feed_vs_prefetch
  printf '=== bench/gpu/%s.sh %s (commit %s, %s)\n' "$bench_name" "${bench_arguments[*]}" "$CONVEYOR_COMMIT" "$bench_started"
  nvidia-smi -L 2>&1
  echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
}

dump_stacks() {
  local pid
  for pid in $(pgrep -f "^$bin/" 2>/dev/null); do
    { echo "# $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
      timeout 60 cuda-gdb -p "$pid" -batch -ex 'info threads' -ex 'thread apply all bt 25' 2>&1
    } >"$r/hang-$pid.txt"
  done
  say "!!! still running after $1 s: stacks in $(cd "$r" && ls hang-*.txt 2>/dev/null | tr '\n' ' ')"
}

bench_run() {
  local limit=$1; shift
  local after=$((limit > 40 ? limit - 20 : limit / 2)) watcher status
  # The watcher holds neither stdout nor a pipe a caller reads to its end; killing it kills its sleep too.
  (trap 'kill "$nap" 2>/dev/null; exit 0' TERM; sleep "$after" & nap=$!; wait "$nap"; dump_stacks "$after") \
    >/dev/null 2>&1 &
  watcher=$!
  timeout -k 10 "$limit" "$@"
  status=$?
  kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
  if [ "$status" -ne 0 ]; then
    say "!!! rc=$status: $*"
    echo "$status $*" >>"$r/failed_runs"
  fi
  return 0
}

alternate() {
  # Underscored names: bash scopes dynamically, so a side function would see (and could clobber) these.
  local _rounds=$1 _function=$2; shift 2
  local _names=("$@") _order _round _side _i
  for _round in $(seq "$_rounds"); do
    _order=()
    if [ $((_round % 2)) = 0 ]; then
      for ((_i = ${#_names[@]} - 1; _i >= 0; _i--)); do _order+=("${_names[_i]}"); done
    else
      _order=("${_names[@]}")
    fi
    for _side in "${_order[@]}"; do
      echo "--- round $_round: $_side"
      "$_function" "$_side" "$_round"
    done
  done
}

# The ImageNet-like set (5,000 photos made from the carried sources, scripts/device-bundle.sh --photos).
imagenet_like() {
  local set=$data/imagenet-like-5000
  [ -f "$set/.complete" ] ||
    { bench_run 180 "$bin/make_imagenet_like" --out "$set" --count 5000 --sources "$root/.carry/photos" >&2 &&
      [ -d "$set/train" ] && touch "$set/.complete"; }
  echo "$set/train"
}

# Fashion-MNIST's JPEGs, from the carried IDX files (--fashion: Debian's .gz, or .xz where the bundle must be
# smaller).
fashion_mnist() {
  local set=$data/fashion-mnist f
  if [ ! -f "$set/train.txt" ]; then
    mkdir -p "$data/idx"
    for f in "$root"/.carry/fashion-mnist/*.gz "$root"/.carry/fashion-mnist/*.xz; do
      case "$f" in
        *.gz) gzip -dc "$f" >"$data/idx/$(basename "${f%.gz}")" ;;
        *.xz) xz -dc "$f" >"$data/idx/$(basename "${f%.xz}")" ;;
      esac
    done
    bench_run 180 "$bin/make_fashion_mnist" --idx "$data/idx" --out "$set" >&2
  fi
  echo "$set"
}

# The fields set (a segmentation folder and COCO boxes) that make_fields builds over the ImageNet-like photos.
fields_set() {
  local set=$data/fields-5000
  [ -f "$set/instances.json" ] || bench_run 180 "$bin/make_fields" --input "$(imagenet_like)" --out "$set" >&2
  echo "$set"
}

# shards_of SET [make_shards options...]: the ImageNet-like set as 64 MB tar shards in /tmp/shards/SET (the
# options prepare it: --max-side, --quality, --store raw); prints the index.
shards_of() {
  local name=$1; shift
  local out=/tmp/shards/$name
  [ -f "$out/shards.json" ] ||
    bench_run 300 "$bin/make_shards" --input "$(imagenet_like)" --output "$out" --shard-size 64 "$@" >"$r/make_shards_$name.log" 2>&1
  echo "$out/shards.json"
}

# prepared_folder NAME:MAKE_SHARDS_FLAGS: the ImageNet-like set prepared by make_shards (shards_of NAME
# FLAGS, say "q90s320:--max-side 320 --quality 90") and written out as an ImageFolder byte for byte, for the
# programs that read folders (feed_vs_prefetch); prints the folder.
prepared_folder() {
  local name=${1%%:*} options=${1#*:} index folder
  folder=$data/prepared-$name
  if [ ! -f "$folder/.complete" ]; then
    # shellcheck disable=SC2086  # make_shards' flags, split
    index=$(shards_of "$name" $options)
    rm -rf "$folder" &&
      bench_run 300 python3 "$root/bench/shards_to_folder.py" "$index" "$folder" >&2 && touch "$folder/.complete"
  fi
  echo "$folder"
}

# split_variant "FLAGS": a variant's leading NAME=VALUE words (the run's environment, say
# CUDA_DEVICE_MAX_CONNECTIONS=32) into variant_env, the program's flags after them into variant_flags.
split_variant() {
  # shellcheck disable=SC2206  # a variant's words, split as its flags are
  local words=($1)
  variant_env=() variant_flags=()
  while [ ${#words[@]} -gt 0 ] && [[ ${words[0]} =~ ^[A-Z_][A-Z0-9_]*= ]]; do
    variant_env+=("${words[0]}") && words=("${words[@]:1}")
  done
  variant_flags=("${words[@]}")
}

unless_given() {
  local flags=" $1 "
  shift
  given_defaults=()
  while [ $# -ge 2 ]; do
    case "$flags" in *" $1 "*) ;; *) given_defaults+=("$1" "$2") ;; esac
    shift 2
  done
}

gpu_places() {
  local bus device
  for bus in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null); do
    device=/sys/bus/pci/devices/$(echo "${bus#0000}" | tr 'A-F' 'a-f')
    echo "$bus: NUMA node $(cat "$device/numa_node" 2>/dev/null || echo '?'), close CPUs $(cat "$device/local_cpulist" 2>/dev/null || echo '?')"
  done
}

nvjpeg_abi_check() {
  if [ ! -f "$cuda_home/include/nvjpeg.h" ]; then
    echo "!!! nvjpeg ABI check: no $cuda_home/include/nvjpeg.h"
    echo "nvjpeg_abi_check" >>"$r/tests_failed"
  elif timeout 120 g++ -std=c++20 -I "$root/include" -I "$root" -I "$cuda_home/include" \
      "$root/tests/device/nvjpeg_abi_check.cpp" -fsyntax-only; then
    echo "nvjpeg ABI check: OK (our values, structs and signatures match $cuda_home/include/nvjpeg.h)"
  else
    echo "!!! nvjpeg ABI check FAILED (the static_assert above names what differs)"
    echo "nvjpeg_abi_check" >>"$r/tests_failed"
  fi
}

# Nsight Systems on this machine: its path, or nothing (and the script's record says so).
find_nsys() {  # find_nsys [--quiet]: with --quiet, a missing nsys is no failed run (the caller has another way)
  local nsys
  nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
  [ -n "$nsys" ] || [ "${1:-}" = --quiet ] || { say "!!! no nsys on this machine"; echo "no nsys" >>"$r/failed_runs"; }
  echo "$nsys"
}

# nsys_capture NSYS NAME COMMAND...: COMMAND under Nsight Systems (CUDA calls; its console in NAME.log), the
# capture's GPU kernel, CUDA API and memory-copy summaries as CSV ($r/NAME_*.csv) and its SQLite export
# ($r/NAME.sqlite, for bench/nsys_overlap.py; the caller deletes it), the report itself (hundreds of MB)
# deleted.
nsys_capture() {
  local nsys=$1 name=$2
  shift 2
  bench_run 300 "$nsys" profile -t cuda --cpuctxsw=none -s none -o "$r/$name" --force-overwrite true "$@" \
    >"$r/$name.log" 2>&1
  bench_run 300 "$nsys" stats --report cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum --format csv \
    -o "$r/$name" "$r/$name.nsys-rep" >/dev/null 2>&1
  [ -f "$r/$name.sqlite" ] ||
    bench_run 300 "$nsys" export --type sqlite -o "$r/$name.sqlite" "$r/$name.nsys-rep" >/dev/null 2>&1
  rm -f "$r/$name.nsys-rep"
}

# cupti_library: bench/tools/cupti_timeline built against this machine's CUPTI (once per machine); prints its
# path, or nothing (and a failed run) where no CUPTI is found.
cupti_library() {
  local built=$bundle/cupti_timeline/libcupti_timeline.so
  [ -f "$built" ] || "$root/bench/tools/cupti_timeline/build.sh" "$bundle/cupti_timeline" >/dev/null 2>"$r/cupti_build.log" ||
    { say "!!! cannot build the CUPTI timeline: $(tail -1 "$r/cupti_build.log")"; echo "no CUPTI" >>"$r/failed_runs"; return 0; }
  echo "$built"
}

# cupti_capture LIBRARY NAME COMMAND...: COMMAND with the CUPTI timeline injected (every kernel and copy of
# the process, $r/NAME.tsv, for bench/nsys_overlap.py; its console in NAME.log): nsys_capture's stand-in on
# machines whose Nsight Systems cannot make a report.
cupti_capture() {
  local library=$1 name=$2
  shift 2
  # NAME may hold "%r", each rank's own under a launcher; the console log is one for all.
  local log=$r/${name//%r/all}.log
  CUDA_INJECTION64_PATH=$library CONVEYOR_TIMELINE_OUT=$r/$name.tsv bench_run 300 "$@" >"$log" 2>&1
  grep -h 'cupti_timeline' "$log" >&4 || true
}

bench_end() {
  local status=${1:-0}
  [ ! -f "$r/tests_failed" ] || status=1
  BENCH_STATUS=$status BENCH_NAME=$bench_name BENCH_STARTED=$bench_started python3 - "$r" "${bench_arguments[@]}" <<'RECORD'
import datetime, json, os, shlex, subprocess, sys
folder, arguments = sys.argv[1], sys.argv[2:]
def output(*command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""
def lines(name):
    path = os.path.join(folder, name)
    return [l.strip() for l in open(path)] if os.path.exists(path) else []
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), None)
record = {
    "command": " ".join(["bench/gpu/" + os.environ["BENCH_NAME"] + ".sh"] + [shlex.quote(a) for a in arguments]),
    "commit": os.environ.get("CONVEYOR_COMMIT", "unknown"),
    "machine": {"gpus": [l for l in output("nvidia-smi", "-L").splitlines() if l], "cpu": cpu,
                "cores": os.cpu_count()},
    "started": os.environ["BENCH_STARTED"],
    "ended": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "failed_runs": lines("failed_runs"),
    "tests_failed": lines("tests_failed"),
    "status": int(os.environ["BENCH_STATUS"]),
}
with open(os.path.join(folder, "record.json"), "w") as f:
    json.dump(record, f, indent=2)
    f.write("\n")
RECORD
  echo "=== bench/gpu/$bench_name.sh: done ($(date -u +%FT%TZ)), status $status"
  if [ -z "${BENCH_RUNNER:-}" ]; then
    mkdir -p "${OUT:-/tmp/out}"
    tar -C "$(dirname "$r")" -czf "${OUT:-/tmp/out}/results.tgz" "$(basename "$r")"
  fi
  return "$status"
}
