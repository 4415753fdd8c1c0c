#!/usr/bin/env bash
# gpu_run.sh PHASE... — the benchmark runs on the GPU machine, from the bundle scripts/device-bundle.sh
# made (.carry/). Every log and JSON lands in $OUT/results.tgz (and the console). Phases:
#   devices   list_devices (text and JSON)
#   tests     the GPU test programs (device feeder, layers vs CPU reference, trainer); any failure makes the
#             script exit 1 at the end (the whole suite: scripts/gpu_test_run.sh)
#   data      the ImageNet-like set (5,000 images) from the carried photos
#   ops       ops_bench on one core beside torchvision's decode peer on the same core
#   pipeline  pipeline_throughput (sweep 1-16 threads, median of 3 runs each) beside PyTorch's DataLoader (16 workers; sweep on 1 epoch)
#   pairs     pipeline_throughput (16 threads) and the DataLoader (16 workers), alternately, three times each
#   ceiling   the machine's own scaling for this work: ops_bench's chain alone on one core, then 16 copies at
#             once, one per core (no pipeline, nothing shared but the machine)
#   pipeline-variants  pipeline_throughput at 16 threads with other scheduling settings
#   train     train_step_bench ResNet-18 (fused and unfused batch norm) beside PyTorch's ResNet-18
#   fvp       feed_vs_prefetch, ResNet-18, batch 256, 16 threads, traces
#   fashion   Fashion-MNIST JPEGs from the carried IDX files, then train_fashion_mnist (default recipe)
#   step      ResNet-18 bf16 step: train_step_bench's warm-up with no algorithm cache, a cold and a warm one,
#             then graph and eager runs around torch_resnet18.py's eager/graph/compile (2 alternating rounds)
#   fashion-recipes  train_fashion_mnist's input path alone, then recipes fast16,fast18,fast20 x seeds 1,2,3,
#             beside the PyTorch anchors (data in GPU memory: the three recipes; DataLoader: fast18)
#   resume    (after fashion) train_fashion_mnist 15 epochs in deterministic mode, uninterrupted and stopped at
#             step 1,700 (in epoch 8, 234 steps an epoch) then resumed in a new process: the two final lines
#             must be equal; then PyTorch loads the checkpoint's weights (scripts/check_safetensors.py)
#   python    the Python module built here (bundle made with --python) and its tests, GPU ones included
#   python-overhead  pipeline_throughput from C++ and from Python (the module), alternately, 3 pairs
#   train-from-jpeg  PyTorch ResNet-18 fed by the DataLoader, by conveyor's module (GPU-side stages on, and
#             all on the CPU), and from the GPU, eager and compiled (bench/peers/torch_train_from_jpeg.py);
#             needs the python phase first; train-from-jpeg-again: the same, eager only (the second of a pair);
#             train-from-jpeg-sweep (before them): the conveyor feed at a few thread counts and GPU shares,
#             the fastest then used by the two phases above (conveyor's threads; the DataLoader keeps 16)
#   gpu-stages  issue 20's GPU stages: the nvJPEG ABI check (g++ against the toolkit's nvjpeg.h), their GPU
#             tests, then gpu_stages_bench (nvJPEG decode by path, fused augmentation) on the data phase's set
#   stage-tests  issue 20, tests only: the nvJPEG ABI check, every GPU test of the device programs (feeder,
#             nvJPEG decoder, stages, hybrid decoding) and the trainer's GPU tests; full logs in results
#   hybrid    issue 20: pipeline_throughput CPU-only vs --device gpu (hybrid decode + GPU augmentation) at 16
#             and 4 threads, alternating, three pairs each (20,000 images per run), the DataLoader at 16
#             workers, one adaptive-split run per thread count (with a trace), then the ratios
#   two-gpus-probe  (nvidia-h200-x2) NCCL over two GPUs in one process, then two processes for ten steps
#   two-gpus  issue 17 (after data): one GPU against two data-parallel processes, three pairs, alternating
#   two-gpus-losses  issue 17 (after data): 2 x 256 against 1 x 512, step by step, in fp32 and in bf16
#   shards    issue 16: shards_vs_files.sh alone (files, local shards by index and by pattern, HTTP), 3 rounds
#   shards-variants  issue 16 (after shards): files against shards at other read-ahead settings, one run each
#   warmup-probe  issue 18: train_step_bench's warm-up phases with a warm algorithm cache, with eager module
#             loading, eager launches, and cuDNN's API log (bench/results: where the 0.64 s goes)
#   fvp-device  issue 20: feed_vs_prefetch's prefetch (ResNet-18 bf16, batch 256, GPU augmentation and
#             hybrid decode) and train_step_bench, alternating, twice; then prefetch without GPU decode
#   fvp-split  issue 20: train_step_bench, then prefetch with the hybrid split fixed at 0.5 (a deterministic
#             pipeline) and adapting (--pipeline-deterministic 0, the default); fvp_variants
#             "SHARE FIXED [THREADS [PIPELINING]],..." sets others (THREADS: the pipeline's, default 16;
#             PIPELINING 1: --hardware-pipelining 1); two rounds (fvp_rounds)
#   pipelining-pipeline  issue 20: pipeline_throughput on the GPU (hybrid decode, adapting) with nvJPEG's
#             hardware buffering off (the default) and on, alternating, 3 rounds
#   fvp-nsys  issue 20: prefetch at share 0.5 fixed under Nsight Systems (when the machine has nsys): the
#             GPU kernels' and the CUDA calls' summaries as CSV (the report itself is not kept)
#   fields    issue 35 (after data): make_fields over the data phase's photos (segmentation folder + COCO),
#             then pipeline_throughput --format segmentation (RRC 512, batch 32) and detection (RRC 640,
#             batch 32) against bench/peers/torch_fields.py (DataLoader, 16 workers, tv_tensors, both antialias
#             settings), alternating, 3 pairs each; then classification (RRC 224, batch 256) against the
#             previous binary $fields_baseline (default $bin/pipeline_throughput_prev), 3 pairs; medians and
#             ratios in fields_summary.json (bench/summarize_fields.py)
#   shards-ready  issue 16: shards_vs_files.sh (files, local shards, HTTP) in order, as ready
#             (--deterministic 0), and in order with the server at nice -10; 3 rounds each. shard_mb: the
#             shards' size (default 64: 6 shards of the data set); shard_blocks: "NAME:DETERMINISTIC:NICE ...";
#             shard_kinds: shards_vs_files.sh's KINDS (default "files shards http")
#   headline  (after data) every row of bench/results/headline.json that this machine measures, counted
#             from the first batch, three alternating rounds (headline_rounds) (round 2 reversed): pipeline_throughput CPU-only
#             and hybrid (--device gpu), 16 threads, split adapting; the DataLoader (16 workers, antialias on
#             and off); torchvision's GPU decode (jitter per image and per batch); feed_vs_prefetch prefetch
#             (ResNet-18 bf16, batch 256, 300 steps) and train_step_bench (200 steps); then
#             bench/summarize_headline.py writes headline/entries.json (headline.json's entries)
#   pip       (after data) scripts/pip_install_on_gpu_machine.sh: the package pip-installed into this
#             machine's Python from the bundle (made with --python), imported elsewhere, and the README's
#             PyTorch example run on the data phase's images
#   seam-tests  issue 34: the train wing's GPU test programs (conveyor_train_gpu_tests,
#             conveyor_data_parallel_gpu_tests); a failure fails the script
#   seam      issue 34 (needs bin/train_step_bench_prev, the previous binary, or seam_prev=PATH; a bundle made
#             with --fashion): train_fashion_mnist's default recipe, seeds 1-3; train_step_bench ResNet-18 bf16
#             batch 256, the new and the previous binary alternating (seam_pairs, default 4) on a warm
#             algorithm cache after one cold run; custom_network --device gpu --steps 60; torch_resnet18.py
#             compile-max-autotune once (its first step takes minutes); then bench/train/summarize_seam.py
#             writes seam_summary.json (with seam-tests' verdict when both run in one call)
#   issue36-tests  issue 36 (one GPU): the nvJPEG ABI check (nvjpegDecodeBatchedPreAllocate and the padding
#             calls too), the feeder's warm-up tests and the hybrid-decode tests (conveyor_device_gpu_tests)
#   issue36-hang  issue 36 (two GPUs, after data): two processes (scripts/launch.sh's, NCCL's own bootstrap)
#             beside nvJPEG, run after run: the GPU test (i36_test_runs, default 10) and feed_vs_prefetch
#             (i36_hang_runs, default 20, of i36_hang_steps 100 steps), each with a stall report after 30 s;
#             a hang's stacks land in results as for any run; i36/hang/summary.txt counts the runs that ended.
#             (One process driving both GPUs, which this phase ran until 2026-11-28, was removed: it hung.)
#   issue36-scale  issue 36 (two GPUs, after data): in i36_scale_rounds rounds (default 2; round 2 reversed): one
#             GPU, two processes (scripts/launch.sh), two processes with nvJPEG's pool off (--hardware-pool
#             0: the code before issue 36) and with --cpus auto; feed_vs_prefetch prefetch, ResNet-18 bf16,
#             batch 256 per GPU, 16 threads per GPU, 300 steps
#   issue36-fvp  issue 36 (one GPU, after data; on a two-GPU machine GPU 0): in i36_fvp_rounds rounds (3), train_step_bench
#             (its CUDA graph: the target's peer) and prefetch with nvJPEG's pool on (the default) and off, and
#             with the feeder's kernels on 2 blocks per image (i36_fvp_variants: "pool nopool blocks2")
#   issue36-start  issue 36 (after data): pipeline_throughput --device gpu at 16 threads, 24,000 images a run
#             (4,800 images x 5 epochs), with the new levers (warm-up, remembered split, pool; a first run
#             only primes the memory) and without them, and the DataLoader (16 workers), i36_start_rounds rounds (3)
#   issue36-prepared  issue 36 (after data): make_shards prepares the set (max side 256 at quality 90; stored
#             decoded at max side 160; timed, sizes in the index), then pipeline_throughput (CPU only and
#             --device gpu) and the DataLoader on the original shards and on each prepared set, one round
#   issue36-summary  the figures of the issue36-* phases so far (bench/summarize_issue36.py)
set -uo pipefail
export PYTHONUNBUFFERED=1
root=$PWD
out=${OUT:-/tmp/out}
r=$out/r
mkdir -p "$r"
tar xf .carry/bundle.tar.xz -C /tmp
# The commit the bundle was built at, for every JSON written here (run_record.py, the C++ benchmarks): the
# copy of the tree on this machine may answer git with another one.
CONVEYOR_COMMIT=$(cat "$root/.carry/commit" 2>/dev/null || true)
export CONVEYOR_COMMIT
# shellcheck disable=SC1091
source /tmp/bundle/tools/device-env /tmp/bundle/lib
bin=/tmp/bundle/bin
# What the data-parallel GPU tests run besides themselves: this checkout's launcher and the bundle's programs
# (the paths they were built with are the build machine's).
export CONVEYOR_LAUNCH=$root/scripts/launch.sh CONVEYOR_TWO_HOSTS=$root/tests/support/two_hosts.sh
export CONVEYOR_DATA_PARALLEL_PEER=$bin/data_parallel_peer CONVEYOR_FEED_VS_PREFETCH=$bin/feed_vs_prefetch
data=/tmp/data
imagenet=$data/imagenet-like-5000/train
log() { printf '\n=== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
# run SECONDS COMMAND...: the command under a time limit. 20 s before the limit the stacks of every bundle
# program still running are written to $r/hang-PID.txt (cuda-gdb attaches; the machine has no gdb), so a
# hang says where it hangs; at the limit TERM, 10 s later KILL. The "!!!" line goes to the console (fd 4),
# not into a pipe a caller filters with grep.
dump_stacks() {
  local pid
  for pid in $(pgrep -f "^$bin/" 2>/dev/null); do
    { echo "# $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
      timeout 60 cuda-gdb -p "$pid" -batch -ex 'info threads' -ex 'thread apply all bt 25' 2>&1
    } >"$r/hang-$pid.txt"
  done
  echo "!!! still running after $1 s: stacks in $(cd "$r" && ls hang-*.txt 2>/dev/null | tr '\n' ' ')" >&4
}
run() {
  local t=$1; shift
  local after=$((t > 40 ? t - 20 : t / 2))
  # The watcher holds neither stdout nor a pipe a caller reads to its end; killing it kills its sleep too.
  (trap 'kill "$nap" 2>/dev/null; exit 0' TERM; sleep "$after" & nap=$!; wait "$nap"; dump_stacks "$after") \
    >/dev/null 2>&1 &
  local watcher=$!
  timeout -k 10 "$t" "$@"; local rc=$?
  kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
  [ $rc -eq 0 ] || { echo "!!! rc=$rc: $*" >&4; echo "$rc $*" >>"$r/failed_runs"; }
  return 0
}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
# nvJPEG is loaded at run time (dlopen libnvjpeg.so.13): the toolkit's copy, after the bundle's libraries.
[ -e "$cuda_home/lib64/libnvjpeg.so.13" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$cuda_home/lib64"
# The nvJPEG declarations of src/device/nvjpeg/nvjpeg_api.h against NVIDIA's header, at compile time.
nvjpeg_abi_check() {
  if [ ! -f "$cuda_home/include/nvjpeg.h" ]; then
    echo "!!! nvjpeg ABI check: no $cuda_home/include/nvjpeg.h"
  elif timeout 120 g++ -std=c++20 -I "$root/include" -I "$root" -I "$cuda_home/include" \
      "$root/tests/device/nvjpeg_abi_check.cpp" -fsyntax-only; then
    echo "nvjpeg ABI check: OK (our values, structs and signatures match $cuda_home/include/nvjpeg.h)"
  else
    echo "!!! nvjpeg ABI check FAILED (the static_assert above names what differs)"
  fi
}
# The data phase's images as 64 MB tar shards in /tmp/shards-run/shards, made once per machine.
shards=/tmp/shards-run/shards
ensure_shards() {
  [ -f "$shards/shards.json" ] ||
    run 120 "$bin/make_shards" --input "$imagenet" --output "$shards" --shard-size 64 | tail -1
}
# A GPU test program: full log to $r/NAME.log, on the console its summary, every failure with the lines
# around it, and the diagnostic lines the tests print ("[ nvjpeg   ]", "[ stages   ]", "[ images   ]").
gpu_tests() {
  local name=$1; shift
  run "${GPU_TEST_LIMIT:-600}" "$bin/$name" --gtest_output=json:"$r/$name.json" "$@" >"$r/$name.log" 2>&1
  grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\]|^\[ (nvjpeg|stages|images|placement) ' "$r/$name.log" | head -150
  grep -B2 -A12 -E 'Failure$|^unknown file: Failure|Segmentation|terminate called|!!! rc' "$r/$name.log" | head -200
  echo "--- last lines of $name.log:"; tail -4 "$r/$name.log"
}

{
  exec 4>&1  # the console (the tee below), for run's reports from inside filtered pipes
  log "machine"; nvidia-smi -L; nproc; grep -m1 'model name' /proc/cpuinfo; date -u; cat "$root/.carry/commit" 2>/dev/null
  for phase in "$@"; do
    case "$phase" in
      devices)
        log devices
        run 60 "$bin/list_devices"
        run 60 "$bin/list_devices" --json >"$r/list_devices.json" ;;
      tests)
        # The GPU programs only; scripts/gpu_test_run.sh runs the whole suite. A failure fails this script.
        log "gpu tests"
        for t in conveyor_device_gpu_tests conveyor_train_gpu_tests conveyor_data_parallel_gpu_tests; do
          if [ ! -x "$bin/$t" ]; then
            echo "!!! $t is not in the bundle"; echo "$t missing" >>"$r/tests_failed"; continue
          fi
          timeout 300 "$bin/$t" --gtest_output=json:"$r/$t.json" >"$r/$t.log" 2>&1 ||
            { echo "!!! $t failed (rc $?)"; echo "$t" >>"$r/tests_failed"; }
          # The failures in full, then the counts: the console keeps only the end of a long log.
          grep -B2 -A20 -E 'Failure$|Segmentation|terminate called' "$r/$t.log" | head -120
          grep -E '^\[ +(PASSED|FAILED|SKIPPED) +\]' "$r/$t.log" | head -40
        done ;;
      data)
        log data
        run 120 "$bin/make_imagenet_like" --out "$data/imagenet-like-5000" --count 5000 --sources "$root/.carry/photos"
        du -sh "$data/imagenet-like-5000" ;;
      ops)
        log "ops on one core"
        CONVEYOR_BENCH_IMAGES=$imagenet run 240 taskset -c 2 "$bin/ops_bench" --benchmark_repetitions=3 \
          --benchmark_report_aggregates_only=true --benchmark_out_format=json --benchmark_out="$r/ops_bench.json" \
          --benchmark_filter='decode/|chain/' 2>&1 | grep -E 'median|mean' | grep -v _cv
        run 120 taskset -c 2 python3 "$root/bench/peers/torchvision_decode.py" --images "$imagenet" >"$r/torchvision_decode.json"
        cat "$r/torchvision_decode.json" ;;
      pipeline)
        log "pipeline throughput"
        run 400 "$bin/pipeline_throughput" --data "$imagenet" --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 --repeat 3 \
          --sweep 1,2,4,8,16 --json "$r/pipeline_throughput.json" --trace "$r/pipeline.trace.json"
        run 240 python3 "$root/bench/peers/torch_dataloader.py" --data "$imagenet" --workers 16 --batch 256 --size 224 \
          --epochs 4 --seed 7 --json "$r/torch_dataloader.json" --conveyor-json "$r/pipeline_throughput.json"
        run 240 python3 "$root/bench/peers/torch_dataloader.py" --data "$imagenet" --batch 256 --size 224 \
          --epochs 1 --seed 7 --sweep 1,4,16 --json "$r/torch_dataloader_sweep.json" ;;
      pairs)
        log "pipeline and DataLoader, alternately"
        for i in 1 2 3; do
          run 120 "$bin/pipeline_throughput" --data "$imagenet" --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 \
            --json "$r/pair_${i}_conveyor.json" | grep -E '^threads 16'
          run 120 python3 "$root/bench/peers/torch_dataloader.py" --data "$imagenet" --workers 16 --batch 256 --size 224 \
            --epochs 4 --seed 7 --json "$r/pair_${i}_torch.json" --conveyor-json "$r/pair_${i}_conveyor.json" | tail -2
        done ;;
      ceiling)
        log "scaling ceiling: one copy of the one-core chain, then 16 copies at once"
        chain=(env CONVEYOR_BENCH_IMAGES="$imagenet" "$bin/ops_bench" --benchmark_filter='^chain/rrc224_flip_distort$'
               --benchmark_min_time=8 --benchmark_out_format=json)
        run 120 taskset -c 2 "${chain[@]}" --benchmark_out="$r/ceiling_1_core2.json" | grep chain
        for c in $(seq 0 $(($(nproc) - 1))); do
          run 180 taskset -c "$c" "${chain[@]}" --benchmark_out="$r/ceiling_16_core$c.json" >/dev/null &
        done
        wait
        grep -h '"items_per_second"' "$r"/ceiling_16_core*.json ;;
      pipeline-variants)
        log "pipeline variants at 16 threads"
        for v in "--deterministic 0" "--in-flight 64"; do
          echo "--- $v"
          # shellcheck disable=SC2086
          run 120 "$bin/pipeline_throughput" --data "$imagenet" --threads 16 --batch 256 --size 224 --epochs 6 --seed 7 $v \
            --json "$r/pipeline_variant_${v// /_}.json" | grep -E '^threads 16'
        done
        # oneTBB's scalable allocator in place of glibc malloc (libjpeg and OpenCV allocate per image).
        proxy=$(ls /tmp/bundle/lib/libtbbmalloc_proxy.so* 2>/dev/null | head -1)
        if [ -n "$proxy" ]; then
          echo "--- LD_PRELOAD=$(basename "$proxy")"
          LD_PRELOAD=$proxy run 120 "$bin/pipeline_throughput" --data "$imagenet" --threads 16 --batch 256 --size 224 \
            --epochs 3 --seed 7 --sweep 1,16 --json "$r/pipeline_variant_tbbmalloc.json" | grep -E '^threads 16|^ +(1|16) '
        fi ;;
      train)
        log "training step"
        run 180 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 50 --warmup 5 --json "$r/train_step_fused.json"
        run 180 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 30 --warmup 5 --unfused-bn --json "$r/train_step_unfused.json"
        run 180 python3 "$root/bench/peers/torch_resnet18.py" --batch 256 --precision bf16 --steps 50 --warmup 10 --json "$r/torch_resnet18.json"
        run 180 python3 "$root/bench/peers/torch_resnet18.py" --batch 256 --precision bf16 --steps 30 --warmup 5 --unfused-bn --json "$r/torch_resnet18_unfused.json" ;;
      fvp)
        log "feed vs prefetch"
        run 300 "$bin/feed_vs_prefetch" --data "$imagenet" --threads 16 --batch 256 --steps 30 --warmup 3 \
          --json "$r/feed_vs_prefetch.json" --trace-dir "$r/traces"
        [ -x "$bin/quickstart" ] && run 120 "$bin/quickstart" "$imagenet" 30 ;;
      step)
        log "training step: warm-up without, with a cold and with a warm algorithm cache"
        step=("$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 50 --warmup 5)
        cache=$(mktemp -d /tmp/conveyor-algorithms.XXXXXX)
        CONVEYOR_ALGORITHM_CACHE=off run 60 "${step[@]}" --json "$r/step_graph_nocache.json" | grep -E '^(model|warm-up|algorithm|graph|steady)'
        CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" --json "$r/step_graph_cold.json" | grep -E '^(warm-up|algorithm|graph|steady)'
        CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" --json "$r/step_graph_warm.json" | grep -E '^(warm-up|algorithm|graph|steady)'
        log "training step: conveyor eager, PyTorch (2 alternating rounds), conveyor eager and graph"
        CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" --no-graph --json "$r/step_eager_1.json" | grep -E '^(model|steady)'
        run 240 python3 "$root/bench/peers/torch_resnet18.py" --batch 256 --precision bf16 --steps 50 --warmup 10 \
          --variants eager,graph,compile --rounds 2 --json "$r/torch_resnet18_rounds.json" | tail -5
        CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" --no-graph --json "$r/step_eager_2.json" | grep -E '^(model|steady)'
        CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" --json "$r/step_graph_2.json" | grep -E '^(model|warm-up|steady)' ;;
      fashion-recipes)
        log "fashion-mnist recipes"
        mkdir -p "$data/idx" && for f in "$root"/.carry/fashion-mnist/*.gz; do gzip -dc "$f" >"$data/idx/$(basename "${f%.gz}")"; done
        run 120 "$bin/make_fashion_mnist" --idx "$data/idx" --out "$data/fashion-mnist"
        run 60 "$bin/train_fashion_mnist" --data "$data/fashion-mnist" --input-only --recipe fast18
        run 240 "$bin/train_fashion_mnist" --data "$data/fashion-mnist" --recipe fast16,fast18,fast20 --seeds 1,2,3 \
          --json "$r/fashion_recipes.json" | grep -vE '^ +[0-9]+ '
        run 150 python3 "$root/bench/peers/torch_fashion_mnist.py" --data "$data/fashion-mnist" --feeds gpu \
          --recipe fast16,fast18,fast20 --seeds 1 --json "$r/torch_fashion_gpu.json" | grep -E 'final|median|FAILED|decoded'
        run 150 python3 "$root/bench/peers/torch_fashion_mnist.py" --data "$data/fashion-mnist" --feeds dataloader \
          --recipe fast18 --seeds 1 --json "$r/torch_fashion_dataloader.json" | grep -E 'final|median|FAILED' ;;
      fashion)
        log "fashion-mnist"
        run 120 "$bin/make_fashion_mnist" --help >/dev/null 2>&1
        mkdir -p "$data/idx" && for f in "$root"/.carry/fashion-mnist/*.gz; do gzip -dc "$f" >"$data/idx/$(basename "${f%.gz}")"; done
        run 120 "$bin/make_fashion_mnist" --idx "$data/idx" --out "$data/fashion-mnist"
        run 400 "$bin/train_fashion_mnist" --data "$data/fashion-mnist" --eval-every 1 --csv "$r/fashion_mnist.csv" ;;
      resume)
        log "fashion-mnist: interrupted and resumed against uninterrupted (deterministic)"
        fm=(--data "$data/fashion-mnist" --epochs 15 --seed 3 --deterministic 1)
        run 400 "$bin/train_fashion_mnist" "${fm[@]}" --checkpoint "$r/whole.json" --csv "$r/resume_whole.csv" \
          | tee "$r/resume_whole.log" | tail -3
        run 200 "$bin/train_fashion_mnist" "${fm[@]}" --checkpoint "$r/resumed.json" --stop-after 1700 | tail -2
        run 400 "$bin/train_fashion_mnist" "${fm[@]}" --checkpoint "$r/resumed.json" --resume "$r/resumed.json" \
          --csv "$r/resume_resumed.csv" | tee "$r/resume_resumed.log" | tail -3
        a=$(grep '^final test accuracy' "$r/resume_whole.log" | sed 's/, [0-9.]* s of.*//')
        b=$(grep '^final test accuracy' "$r/resume_resumed.log" | sed 's/, [0-9.]* s of.*//')
        if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "RESUME OK: $a"; else echo "!!! RESUME DIFFERS: '$a' vs '$b'"; fi
        run 120 python3 "$root/scripts/check_safetensors.py" "$r/whole.json" ;;
      python)
        log "python module: build and tests"
        run 580 "$root/scripts/test_python_on_gpu_machine.sh" /tmp/bundle build-python ;;
      python-overhead)
        log "python overhead: the same pipeline iterated from C++ and from Python"
        # The module from the python phase, or built here (without its tests) when that phase did not run.
        ls "$root"/build-python/conveyor/_conveyor*.so >/dev/null 2>&1 ||
          run 580 "$root/scripts/build_python_on_gpu_machine.sh" /tmp/bundle "$root/build-python" | tail -3
        # overhead_epochs, overhead_pairs: longer runs and more pairs than the defaults (4 epochs, 3 pairs).
        run 580 python3 "$root/bench/pipeline/python_overhead.py" --cpp "$bin/pipeline_throughput" \
          --conveyor-python "$root/build-python" --data "$imagenet" --threads 16 --batch 256 --size 224 \
          --epochs "${overhead_epochs:-4}" --seed 7 --pairs "${overhead_pairs:-3}" --json "$r/python_overhead.json" ;;
      train-from-jpeg-sweep)
        # The conveyor feed alone (eager) at a few thread counts and GPU shares, 200 steps each; the
        # fastest sets the threads and share of the train-from-jpeg phases after it in this call.
        log "ResNet-18 in PyTorch fed by conveyor: threads x GPU share sweep (eager)"
        for cfg in 16:0.5 16:0.6 14:0.5 14:0.6 12:0.7; do
          run 120 python3 "$root/bench/peers/torch_train_from_jpeg.py" --data "$imagenet" --modes eager \
            --feeds conveyor --threads "${cfg%%:*}" --gpu-share "${cfg##*:}" --conveyor-python "$root/build-python" \
            --json "$r/sweep_${cfg%%:*}_${cfg##*:}.json" | grep -E '^\[eager\] +conveyor'
        done
        best=$(python3 - "$r" <<'PICK'
import glob, json, sys
rates = {}
for path in glob.glob(f"{sys.argv[1]}/sweep_*.json"):
    d = json.load(open(path))
    rate = d["results"]["eager"]["conveyor"].get("images_per_s")
    if rate:
        rates[(d["threads"], d["gpu_share"])] = rate
threads, share = max(rates, key=rates.get)
print(threads, share)
PICK
)
        train_threads=${best% *} train_share=${best#* }
        echo "fastest: $train_threads threads, GPU share $train_share" | tee "$r/sweep_choice.txt" ;;
      train-from-jpeg|train-from-jpeg-again)
        # The second pass (eager only) makes each feed's figure a pair with the first pass's.
        # train_json names the JSON instead; train_extra adds options (say --conveyor-deterministic 0).
        if [ "$phase" = train-from-jpeg ]; then modes=eager,compile json=torch_train_from_jpeg.json
        else modes=eager json=torch_train_from_jpeg_2.json; fi
        json=${train_json:-$json}
        log "ResNet-18 in PyTorch fed three ways, and by conveyor with every pixel on the CPU ($modes)"
        run 580 python3 "$root/bench/peers/torch_train_from_jpeg.py" --data "$imagenet" --modes "$modes" \
          --feeds dataloader,conveyor,gpu,conveyor-cpu --threads "${train_threads:-16}" \
          ${train_share:+--gpu-share "$train_share"} ${train_extra:-} --conveyor-python "$root/build-python" \
          --json "$r/$json" ;;
      gpu-stages)
        log "GPU stages: nvJPEG ABI check, stage tests, benchmarks"
        nvjpeg_abi_check
        run 300 "$bin/conveyor_device_gpu_tests" --gtest_filter='Nvjpeg*:CropResizeGpu*:FusedAugmentGpu*' \
          --gtest_output=json:"$r/gpu_stage_tests.json" 2>&1 | tee "$r/gpu_stage_tests.log"
        CONVEYOR_BENCH_IMAGES=$imagenet run 300 "$bin/gpu_stages_bench" --benchmark_repetitions=3 \
          --benchmark_report_aggregates_only=true --benchmark_out_format=json --benchmark_out="$r/gpu_stages_bench.json" \
          2>&1 | grep -vE '_(mean|stddev|cv) ' ;;
      stage-tests)
        log "issue 20 tests: nvJPEG ABI check, GPU tests of the device programs and the trainer"
        nvjpeg_abi_check
        gpu_tests conveyor_device_gpu_tests
        gpu_tests conveyor_train_gpu_tests ;;
      hybrid|hybrid-adaptive)
        # hybrid-adaptive: the same pairs with --deterministic 0 on both sides (the GPU's share adapts), into
        # hybrid-adaptive/, without the separate adaptive run.
        log "issue 20: pipeline CPU-only vs GPU decode + augmentation, alternating pairs, 16 and 4 threads ($phase)"
        common=(--data "$imagenet" --batch 256 --size 224 --epochs 4 --seed 7)
        dir=$r extra=()
        [ "$phase" = hybrid-adaptive ] && dir=$r/hybrid-adaptive extra=(--deterministic 0) && mkdir -p "$dir"
        for threads in 16 4; do
          for i in 1 2 3; do
            run 180 "$bin/pipeline_throughput" "${common[@]}" "${extra[@]}" --threads $threads \
              --json "$dir/hybrid_${threads}_${i}_cpu.json" 2>&1 | grep -E '^threads|pipeline_throughput:'
            run 180 "$bin/pipeline_throughput" "${common[@]}" "${extra[@]}" --threads $threads --device gpu \
              --json "$dir/hybrid_${threads}_${i}_gpu.json" 2>&1 | grep -E '^threads|^device:|^decoder:|^  [0-9]+ x|pipeline_throughput:'
            # The DataLoader in the same round (16 workers; with and without antialias, the work conveyor does).
            [ "$threads" = 16 ] && run 300 python3 "$root/bench/peers/torch_dataloader.py" "${common[@]}" --workers 16 \
              --antialias both --json "$dir/hybrid_torch_16_$i.json" | grep -E '^torch DataLoader'
          done
          # The adaptive split (the share moves while the pipeline is not deterministic), with a trace.
          [ "$phase" = hybrid ] &&
            run 180 "$bin/pipeline_throughput" "${common[@]}" --threads $threads --device gpu --deterministic 0 \
              --json "$r/hybrid_${threads}_adaptive_gpu.json" --trace "$r/hybrid_${threads}_adaptive.trace.json" 2>&1 \
              | grep -E '^threads|^device:|^decoder:|^  [0-9]+ x|pipeline_throughput:'
        done
        python3 "$root/bench/summarize_hybrid.py" "$dir" | tee "$dir/hybrid_summary.txt" ;;
      hybrid-share)
        log "issue 20: 4 threads, CPU-only vs GPU decode with a share set for 4 threads (0.85), alternating pairs"
        common=(--data "$imagenet" --batch 256 --size 224 --epochs 4 --seed 7 --threads 4)
        for i in 1 2 3; do
          run 180 "$bin/pipeline_throughput" "${common[@]}" --json "$r/share_4_${i}_cpu.json" 2>&1 | grep -E '^threads 4:'
          run 180 "$bin/pipeline_throughput" "${common[@]}" --device gpu --gpu-share 0.85 \
            --json "$r/share_4_${i}_gpu.json" 2>&1 | grep -E '^threads 4:|^device:'
        done ;;
      gpu-tests-again)
        log "the GPU tests that failed in the first run, after their fixes"
        gpu_tests conveyor_device_gpu_tests --gtest_filter='NvjpegDecoderGpu.*:GpuFeederDecode.*' ;;
      fashion-fast)
        # cuDNN's heuristic (deterministic) algorithms ran this small ResNet 3x faster than cudnnFind's timed
        # choices in the run before (0.53 s against 1.6 s an epoch): the recipes at 14 and 15 epochs with
        # them, 3 seeds each, beside PyTorch's anchors at 15 epochs (data in GPU memory; DataLoader).
        log "fashion-mnist: fast recipes, heuristic algorithms, 3 seeds, beside the PyTorch anchors"
        mkdir -p "$data/idx" && for f in "$root"/.carry/fashion-mnist/*.gz; do gzip -dc "$f" >"$data/idx/$(basename "${f%.gz}")"; done
        run 120 "$bin/make_fashion_mnist" --idx "$data/idx" --out "$data/fashion-mnist" | tail -1
        for epochs in 14 15; do
          run 200 "$bin/train_fashion_mnist" --data "$data/fashion-mnist" --recipe fast16 --epochs $epochs \
            --seeds 1,2,3 --deterministic 1 --json "$r/fashion_fast16_e${epochs}.json" | tee "$r/fashion_fast16_e${epochs}.log" \
            | grep -E '^final|^fast16'
        done
        run 150 python3 "$root/bench/peers/torch_fashion_mnist.py" --data "$data/fashion-mnist" --feeds gpu,dataloader \
          --recipe fast16 --epochs 15 --seeds 1 --json "$r/torch_fashion_fast16_e15.json" | grep -E 'final|median|FAILED' ;;
      two-gpus)
        # Issue 17, on nvidia-h200-x2 (after the data phase): ResNet-18 bf16, batch 256 per GPU, 16 pipeline
        # threads per GPU, at feed_vs_prefetch's defaults (the hybrid split adapting, the step kernel by kernel
        # beside nvJPEG, the fastest convolution algorithms: what a user runs for speed). One GPU alone, then
        # two GPUs data-parallel, one process per GPU (scripts/launch.sh: NVLink multicast off), 300 steps
        # each, three pairs, the order alternating. The losses in deterministic mode: two-gpus-losses.
        log "issue 17: one GPU and two data-parallel processes, alternating, three pairs"
        [ ! -f "$r/probe_failed" ] || continue
        fvp=("$bin/feed_vs_prefetch" --data "$imagenet" --modes prefetch --threads 16 --warmup 10 --steps 300
             --batch 256)
        one_gpu() {
          run 180 "${fvp[@]}" --json "$r/scale_1gpu_$1.json" 2>&1 | grep -E '^prefetch|^mode|feed_vs_prefetch:'
        }
        two_gpus() {
          run 180 bash "$root/scripts/launch.sh" 2 "${fvp[@]}" --json "$r/scale_2gpu_$1.json" 2>&1 \
            | grep -E '^prefetch|^mode|idle per GPU|data parallel|feed_vs_prefetch:|launch'
        }
        for i in 1 2 3; do
          if [ "$i" = 2 ]; then two_gpus "$i"; one_gpu "$i"; else one_gpu "$i"; two_gpus "$i"; fi
        done
        python3 "$root/bench/summarize_scale.py" "$r" | tee "$r/scale_summary.txt" ;;
      two-gpus-losses)
        # Issue 17's open question: 2 x 256 and 1 x 512 see the same images, yet their bf16 losses part at
        # step 13. The same pair in fp32 and in bf16 (30 steps): close in fp32 points at the bf16 all-reduce,
        # apart in both at batch norm's per-replica statistics.
        log "issue 17: losses of two GPUs x 256 against one GPU x 512, fp32 and bf16"
        for precision in fp32 bf16; do
          loss_run=("$bin/feed_vs_prefetch" --data "$imagenet" --modes prefetch --threads 16 --warmup 10
                    --steps 20 --deterministic --record-loss --precision "$precision")
          run 180 "${loss_run[@]}" --batch 512 --json "$r/losses_${precision}_1gpu_batch512.json" 2>&1 | grep -E '^prefetch '
          run 180 bash "$root/scripts/launch.sh" 2 "${loss_run[@]}" --batch 256 \
            --json "$r/losses_${precision}_2gpu.json" 2>&1 | grep -E '^prefetch |launch'
        done
        python3 "$root/bench/summarize_scale.py" "$r" | grep -E '^(fp32|bf16):' | tee "$r/losses_summary.txt" ;;
      two-gpus-probe)
        # Before issue 17's run: NCCL across the two GPUs, first the two-GPU tests (two processes each), then
        # two processes through scripts/launch.sh for a few steps; NCCL says what it chose (NCCL_DEBUG=INFO).
        log "two GPUs: topology, then the two-GPU tests, then two processes"
        nvidia-smi topo -m; df -h /dev/shm | tail -1; awk 'NR > 2 {print $1}' /proc/net/dev | tr '\n' ' '; echo
        rm -f "$r/failed_runs"
        NCCL_DEBUG=INFO GPU_TEST_LIMIT=300 gpu_tests conveyor_data_parallel_gpu_tests --gtest_filter='Launchers/TwoGpus*'
        NCCL_DEBUG=INFO run 100 bash "$root/scripts/launch.sh" 2 "$bin/feed_vs_prefetch" --data "$imagenet" \
          --modes prefetch --threads 16 --steps 10 --warmup 2 --deterministic --batch 256 \
          --json "$r/probe_2gpu.json" >"$r/probe_2gpu.log" 2>&1
        grep -E '^prefetch|^mode|data parallel|NCCL INFO (Channel 00|Connected|comm .* Init COMPLETE)|WARN|rank .* exited' \
          "$r/probe_2gpu.log" | head -30
        tail -5 "$r/probe_2gpu.log"
        [ ! -f "$r/failed_runs" ] || { echo "!!! the probe failed: two-gpus is skipped"; touch "$r/probe_failed"; } ;;
      own-model)
        log "examples/own_model: a user's own cuBLAS model fed by DeviceFeeder (after fashion-recipes' data)"
        run 120 "$bin/own_model" "$data/fashion-mnist/train" --csv "$r/own_model_loss.csv" | tail -8 ;;
      scale)
        log "issue 16: data-parallel GPU tests (one GPU: world size 1 through NCCL), then shards vs files vs HTTP"
        gpu_tests conveyor_data_parallel_gpu_tests
        # The shards themselves stay out of the results (about 400 MB); their runs' JSON and logs are kept.
        ROUNDS=3 run 400 bash "$root/bench/pipeline/shards_vs_files.sh" "$bin" "$imagenet" /tmp/shards-run \
          --threads 16 --batch 256 --size 224 --epochs 4 --seed 7
        mkdir -p "$r/shards" && cp /tmp/shards-run/*.json /tmp/shards-run/*.log "$r/shards/" 2>/dev/null ;;
      shards)
        # shard_read_ahead="32 128": the whole comparison once per read-ahead (--shard-read-ahead; the same
        # shards), into shards-q32/, shards-q128/; unset: once with the default, into shards/.
        log "issue 16: shards (index, pattern, HTTP) vs files, alternating rounds"
        ensure_shards
        for q in ${shard_read_ahead:-default}; do
          dir=/tmp/shards-run-$q && name=shards-q$q && extra=(--shard-read-ahead "$q")
          [ "$q" = default ] && dir=/tmp/shards-run && name=shards && extra=()
          mkdir -p "$dir"
          [ "$dir" = /tmp/shards-run ] || ln -sfn "$shards" "$dir/shards"
          log "read-ahead $q"
          ROUNDS=${shard_rounds:-3} run 400 bash "$root/bench/pipeline/shards_vs_files.sh" "$bin" "$imagenet" \
            "$dir" --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 "${extra[@]}"
          mkdir -p "$r/$name" && cp "$dir"/*.json "$dir"/*.log "$r/$name/" 2>/dev/null
          rm -f "$r/$name/http_server.log"
        done ;;
      shards-variants)
        # The read-ahead settings against files, one run each (20,000 images, 16 threads unless named).
        log "issue 16: tar shard read-ahead variants"
        ensure_shards
        mkdir -p "$r/shards-variants"
        pt=("$bin/pipeline_throughput" --batch 256 --size 224 --epochs 4 --seed 7)
        for v in "files:$imagenet:16" "p1:$shards/shards.json:16:--parallel-shards 1" \
                 "p4:$shards/shards.json:16" "p8:$shards/shards.json:16:--parallel-shards 8" \
                 "p4q128:$shards/shards.json:16:--shard-read-ahead 128" \
                 "files14:$imagenet:14" "p4t14:$shards/shards.json:14"; do
          IFS=: read -r name data threads extra <<<"$v"
          # shellcheck disable=SC2086
          run 120 "${pt[@]}" --data "$data" --threads "$threads" $extra --json "$r/shards-variants/$name.json" | head -1 |
            sed "s/^/$name: /"
        done ;;
      warmup-probe)
        # Where a warm-cache warm-up goes: phases of two warm runs, one with every CUDA module loaded when
        # the context is made (not at first use), and one with cuDNN's API log (timestamps per call).
        log "issue 18: warm-up with a warm algorithm cache, by phase"
        step=("$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 20 --warmup 3)
        cache=$(mktemp -d /tmp/conveyor-algorithms.XXXXXX)
        CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" --json "$r/probe_cold.json" | grep -E '^(warm-up|steady)'
        for i in 1 2; do
          CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" --json "$r/probe_warm_$i.json" | grep -E '^(warm-up|steady)'
        done
        CUDA_MODULE_LOADING=EAGER CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" \
          --json "$r/probe_eager_modules.json" | grep -E '^(warm-up|steady)'
        CONVEYOR_ALGORITHM_CACHE=$cache run 60 "${step[@]}" --no-graph --json "$r/probe_warm_eager.json" \
          | grep -E '^(warm-up|steady)'
        CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$r/cudnn_api.log" CONVEYOR_ALGORITHM_CACHE=$cache \
          run 120 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 2 --warmup 1 \
          --json "$r/probe_logged.json" | grep -E '^(warm-up|steady)'
        gzip -f "$r/cudnn_api.log" ;;
      fvp-split)
        log "issue 20: prefetch with the hybrid split fixed and adapting, with train_step_bench"
        fvp=("$bin/feed_vs_prefetch" --data "$imagenet" --modes prefetch --batch 256 --steps 50 --warmup 5)
        mkdir -p "$r/fvp-split"
        for round in $(seq "${fvp_rounds:-2}"); do
          run 180 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 50 --warmup 5 \
            --json "$r/fvp-split/step_$round.json" 2>&1 | tail -1
          IFS=, read -r -a variants <<<"${fvp_variants:-0.5 1,0.5 0}"
          for variant in "${variants[@]}"; do
            read -r share fixed threads pipelining <<<"$variant"
            name=split_${share}_${fixed}${threads:+_t$threads}${pipelining:+_p$pipelining}_$round
            run 300 "${fvp[@]}" --threads "${threads:-16}" --gpu-share "$share" --pipeline-deterministic "$fixed" \
              --hardware-pipelining "${pipelining:-0}" \
              --json "$r/fvp-split/$name.json" 2>&1 | grep -E '^ *prefetch' | grep -v 'warm-up' | sed "s/^/$name: /"
          done
        done
        python3 "$root/bench/summarize_fvp_variants.py" "$r/fvp-split" | tee "$r/fvp-split/summary.txt" ;;
      pipelining-pipeline)
        log "issue 20: pipeline_throughput on the GPU, split adapting, nvJPEG's hardware buffering off and on"
        mkdir -p "$r/pipelining-pipeline"
        for pair in 1 2 3; do
          for pipelining in 0 1; do
            run 120 "$bin/pipeline_throughput" --data "$imagenet" --threads 16 --batch 256 --size 224 --epochs 4 \
              --seed 7 --device gpu --deterministic 0 --hardware-pipelining "$pipelining" \
              --json "$r/pipelining-pipeline/p${pipelining}_$pair.json" 2>&1 | grep -E '^threads 16:' |
              sed "s/^/hardware buffering $pipelining pair $pair: /"
          done
        done ;;
      fvp-nsys)
        log "issue 20: where the time goes while prefetch runs (Nsight Systems, when the machine has it)"
        nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
        if [ -z "$nsys" ]; then
          echo "no nsys on this machine"
        else
          run 300 "$nsys" profile -t cuda -o "$r/fvp_nsys" --force-overwrite true "$bin/feed_vs_prefetch" \
            --data "$imagenet" --modes prefetch --threads 16 --batch 256 --steps 30 --warmup 5 --gpu-share 0.5 \
            --pipeline-deterministic 1 2>&1 | grep -E '^ *prefetch ' | grep -v warm-up
          run 300 "$nsys" stats --report cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum --format csv \
            -o "$r/fvp_nsys" "$r/fvp_nsys.nsys-rep" >/dev/null 2>&1
          rm -f "$r/fvp_nsys.nsys-rep" "$r/fvp_nsys.sqlite"
          for f in "$r"/fvp_nsys_*.csv; do echo "--- $f"; head -12 "$f" | cut -c1-220; done
        fi ;;
      shards-ready)
        log "issue 16: files, local shards and HTTP: in order, as ready (deterministic 0), server at nice -10"
        mb=${shard_mb:-64}
        if [ "$mb" = 64 ]; then
          ensure_shards
          set_of_shards=$shards suffix=
        else
          set_of_shards=/tmp/shards-run-${mb}mb/shards suffix=-${mb}mb
          [ -f "$set_of_shards/shards.json" ] ||
            run 120 "$bin/make_shards" --input "$imagenet" --output "$set_of_shards" --shard-size "$mb" | tail -1
        fi
        for v in ${shard_blocks:-in-order:1: as-ready:0: in-order-nice:1:-10}; do
          IFS=: read -r name fixed nice <<<"$v"
          dir=/tmp/shards-run-$name$suffix
          mkdir -p "$dir" && ln -sfn "$set_of_shards" "$dir/shards"
          log "$name$suffix"
          KINDS="${shard_kinds:-files shards http}" HTTP_NICE=$nice ROUNDS=${shard_rounds:-3} run 400 bash \
            "$root/bench/pipeline/shards_vs_files.sh" "$bin" "$imagenet" "$dir" --threads 16 --batch 256 \
            --size 224 --epochs 4 --seed 7 --deterministic "$fixed"
          mkdir -p "$r/shards-$name$suffix" && cp "$dir"/*.json "$dir"/*.log "$r/shards-$name$suffix/" 2>/dev/null
          rm -f "$r/shards-$name$suffix/http_server.log"
        done ;;
      fvp-device)
        log "issue 20: feed_vs_prefetch prefetch (GPU augmentation + hybrid decode) vs train_step_bench"
        for i in 1 2; do
          run 300 "$bin/feed_vs_prefetch" --data "$imagenet" --modes prefetch --threads 16 --batch 256 --steps 50 \
            --warmup 5 --json "$r/fvp_device_$i.json" --trace-dir "$r/fvp_traces_$i" 2>&1 | grep -E '^prefetch|^mode|feed_vs_prefetch:'
          run 180 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 50 --warmup 5 \
            --json "$r/fvp_train_step_$i.json" 2>&1 | tail -2
        done
        run 300 "$bin/feed_vs_prefetch" --data "$imagenet" --modes prefetch --threads 16 --batch 256 --steps 50 \
          --warmup 5 --gpu-decode 0 --json "$r/fvp_device_cpu_decode.json" 2>&1 | grep -E '^prefetch|^mode|feed_vs_prefetch:'
        python3 "$root/bench/summarize_hybrid.py" "$r" | tee "$r/hybrid_summary.txt" ;;
      headline)
        log "headline rows, from the first batch: ${headline_rounds:-3} alternating rounds"
        h=$r/headline && mkdir -p "$h"
        # 24,000 images a run (issue 36 states its start-up target on that many).
        common=(--data "$imagenet" --limit 4800 --epochs 5 --batch 256 --size 224 --seed 7)
        headline_side() {
          local side=$1 i=$2
          case "$side" in
            cpu) run 120 "$bin/pipeline_throughput" "${common[@]}" --threads 16 --deterministic 0 \
                   --json "$h/cpu_$i.json" 2>&1 | grep -E '^threads 16:' ;;
            gpu) run 120 "$bin/pipeline_throughput" "${common[@]}" --threads 16 --deterministic 0 --device gpu \
                   --json "$h/gpu_$i.json" 2>&1 | grep -E '^threads 16:|^device:' ;;
            torch) run 240 python3 "$root/bench/peers/torch_dataloader.py" "${common[@]}" --workers 16 \
                     --antialias both --json "$h/torch_$i.json" | grep -E '^torch DataLoader' ;;
            tvgpu) run 240 python3 "$root/bench/peers/torchvision_gpu_decode.py" --data "$imagenet" --batch 256 \
                     --size 224 --epochs 2 --seed 7 --json "$h/tvgpu_$i.json" | grep -E '^torchvision|^strongest' ;;
            step) run 120 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 --steps 200 \
                    --warmup 5 --json "$h/step_$i.json" 2>&1 | grep -E '^first step|^steady' ;;
            fvp) run 240 "$bin/feed_vs_prefetch" --data "$imagenet" --modes prefetch --threads 16 --batch 256 \
                   --steps 300 --warmup 3 --progress 0 --json "$h/fvp_$i.json" 2>&1 | grep -E '^ *prefetch ' ;;
          esac
        }
        sides=(cpu gpu torch tvgpu step fvp)
        for i in $(seq "${headline_rounds:-3}"); do
          order=("${sides[@]}")
          [ "$i" = 2 ] && order=(fvp step tvgpu torch gpu cpu)
          for side in "${order[@]}"; do echo "--- round $i: $side"; headline_side "$side" "$i"; done
        done
        nvidia-smi --query-gpu=name --format=csv,noheader | head -1 >"$h/gpu.txt"
        python3 "$root/bench/summarize_headline.py" "$h" --machine "$(cat "$h/gpu.txt"), $(nproc) cores" \
          --commit "${CONVEYOR_COMMIT:-unknown}" --out "$h/entries.json" | tee "$h/summary.txt" ;;
      pip)
        log "pip install into this machine's Python, import elsewhere, the README's PyTorch example"
        # Without device-env's library path: the package must find its libraries through its RPATH.
        # The example on the data phase's set when it ran, else on the script's own small folder.
        examples=""; [ -d "$imagenet" ] && examples=$imagenet
        run 580 env -u LD_LIBRARY_PATH "$root/scripts/pip_install_on_gpu_machine.sh" /tmp/bundle $examples ;;
      seam-tests)
        log "issue 34: the train wing's GPU tests"
        for t in conveyor_train_gpu_tests conveyor_data_parallel_gpu_tests; do
          if [ ! -x "$bin/$t" ]; then echo "!!! $t is not in the bundle"; echo "$t missing" >>"$r/tests_failed"; continue; fi
          GPU_TEST_LIMIT=300 gpu_tests "$t"
          if grep -qE '^\[  FAILED  \]' "$r/$t.log" || ! grep -q '^\[  PASSED  \]' "$r/$t.log"; then
            echo "$t" >>"$r/tests_failed"
          fi
        done ;;
      seam)
        # seam_parts picks the parts (default all four), so that one call can take some and the next the rest:
        # fashion, step (the new and previous binary alternating), custom (custom_network on the GPU), torch
        # (max-autotune). A call with torch should take step too: the comparison is within one call.
        seam_parts=" ${seam_parts:-fashion step custom torch} "
        if [[ $seam_parts == *" fashion "* || $seam_parts == *" custom "* ]]; then
          # .xz where the bundle must be smaller than Debian's .gz (the 64 MiB that travel)
          mkdir -p "$data/idx" && for f in "$root"/.carry/fashion-mnist/*.gz "$root"/.carry/fashion-mnist/*.xz; do
            [ -f "$f" ] || continue
            case "$f" in *.gz) gzip -dc "$f" >"$data/idx/$(basename "${f%.gz}")" ;; *.xz) xz -dc "$f" >"$data/idx/$(basename "${f%.xz}")" ;; esac
          done
          [ -f "$data/fashion-mnist/train.txt" ] || run 180 "$bin/make_fashion_mnist" --idx "$data/idx" --out "$data/fashion-mnist"
        fi
        if [[ $seam_parts == *" fashion "* ]]; then
          log "issue 34: Fashion-MNIST, the default recipe, seeds 1-3"
          run 240 "$bin/train_fashion_mnist" --data "$data/fashion-mnist" --seeds 1,2,3 --json "$r/seam_fashion.json" \
            | grep -E '^(final|recipe|fast|warm-up)'
        fi
        if [[ $seam_parts == *" step "* ]]; then
          log "issue 34: train_step_bench ResNet-18 bf16 batch 256, new and previous binary alternating"
          prev=${seam_prev:-$bin/train_step_bench_prev}
          [ -x "$prev" ] || echo "!!! no previous train_step_bench at $prev (seam_prev=PATH)"
          step=(--model resnet18 --batch 256 --precision bf16 --steps 100 --warmup 10)
          cache=$(mktemp -d /tmp/conveyor-seam-algorithms.XXXXXX)
          CONVEYOR_ALGORITHM_CACHE=$cache run 120 "$bin/train_step_bench" "${step[@]}" --json "$r/seam_step_cold.json" \
            | grep -E '^(warm-up|algorithm|steady)'
          for i in $(seq 1 "${seam_pairs:-4}"); do
            # The order alternates too (previous first, then new first), so a drift of the machine falls on both.
            order="prev new"; [ $((i % 2)) -eq 0 ] && order="new prev"
            for which in $order; do
              exe=$bin/train_step_bench; [ "$which" = prev ] && exe=$prev
              echo "--- pair $i, $which"
              CONVEYOR_ALGORITHM_CACHE=$cache run 120 "$exe" "${step[@]}" --json "$r/seam_step_${which}_$i.json" \
                | grep -E '^(warm-up|algorithm|steady)'
            done
          done
        fi
        if [[ $seam_parts == *" custom "* ]]; then
          log "issue 34: custom_network on the GPU, 60 steps"
          run 120 "$bin/custom_network" --data "$data/fashion-mnist" --device gpu --steps 60 >"$r/seam_custom_network_gpu.log" 2>&1
          grep -E '^(cuDNN|warm-up|step (1|60)/|final)' "$r/seam_custom_network_gpu.log"
        fi
        if [[ $seam_parts == *" torch "* ]]; then
          log "issue 34: PyTorch ResNet-18, torch.compile max-autotune (its first step takes minutes)"
          run 420 python3 "$root/bench/peers/torch_resnet18.py" --batch 256 --precision bf16 --steps 100 --warmup 10 \
            --variants compile-max-autotune --json "$r/seam_torch_max_autotune.json" | tail -4
        fi
        python3 "$root/bench/train/summarize_seam.py" "$r" ;;
      issue36-tests)
        log "issue 36: nvJPEG ABI check, then the feeder's warm-up and hybrid-decode GPU tests"
        nvjpeg_abi_check
        GPU_TEST_LIMIT=300 gpu_tests conveyor_device_gpu_tests \
          --gtest_filter='FeederWarmup.*:GpuFeederDecode.*:NvjpegDecoderGpu.*' ;;
      issue36-hang)
        log "issue 36: two processes, two GPUs, beside nvJPEG: run after run without a hang"
        mkdir -p "$r/i36/hang"
        export NCCL_NVLS_ENABLE=0 CONVEYOR_LAUNCHER=processes  # NCCL's own bootstrap, as on a machine without MPI
        CONVEYOR_HANG_RUNS=${i36_test_runs:-10} GPU_TEST_LIMIT=1200 gpu_tests conveyor_data_parallel_gpu_tests --gtest_filter='TwoGpusBesideNvjpeg.*'
        ended=0
        for i in $(seq "${i36_hang_runs:-20}"); do
          run 120 bash "$root/scripts/launch.sh" 2 "$bin/feed_vs_prefetch" --data "$imagenet" --threads 16 \
            --batch 256 --warmup 5 --steps "${i36_hang_steps:-100}" --stall-report 30 --json "$r/i36/hang/fvp_$i.json" \
            >"$r/i36/hang/fvp_$i.log" 2>&1
          if grep -q '^prefetch ' "$r/i36/hang/fvp_$i.log"; then ended=$((ended + 1)); else echo "!!! run $i did not end"; fi
          grep -A12 'conveyor: no progress' "$r/i36/hang/fvp_$i.log" | head -14
          printf '%s ' "$(grep -E '^prefetch ' "$r/i36/hang/fvp_$i.log" | awk '{print $2}')"
        done
        echo; echo "feed_vs_prefetch, two processes: $ended of ${i36_hang_runs:-20} runs ended" | tee "$r/i36/hang/summary.txt" ;;
      issue36-scale)
        log "issue 36: one GPU, two processes, and the levers, alternating"
        mkdir -p "$r/i36/scale"
        export NCCL_NVLS_ENABLE=0
        fvp=("$bin/feed_vs_prefetch" --data "$imagenet" --modes prefetch --threads 16 --batch 256 --warmup 10
             --steps 300 --stall-report 30)
        variant() {  # NAME ROUND: one run of a variant into i36/scale/NAME_ROUND[.rankN].json
          local name=$1 round=$2 json=$r/i36/scale/$1_$2.json
          case "$name" in
            one) run 150 env CUDA_VISIBLE_DEVICES=0 "${fvp[@]}" --json "$json" ;;
            two) run 150 bash "$root/scripts/launch.sh" 2 "${fvp[@]}" --json "$json" ;;
            two_nopool) run 150 bash "$root/scripts/launch.sh" 2 "${fvp[@]}" --hardware-pool 0 --json "$json" ;;
            two_cpus) run 150 bash "$root/scripts/launch.sh" 2 "${fvp[@]}" --cpus auto --json "$json" ;;
          esac >"$r/i36/scale/$1_$2.log" 2>&1
          echo "$name round $round: $(grep -hE '^prefetch ' "$r/i36/scale/$1_$2.log" | awk '{printf "%s ", $2}')"
        }
        variants=(${i36_scale_variants:-one two two_nopool two_cpus})
        for round in $(seq "${i36_scale_rounds:-2}"); do
          order=("${variants[@]}")
          [ $((round % 2)) = 0 ] && order=($(printf '%s\n' "${variants[@]}" | tac))
          for v in "${order[@]}"; do variant "$v" "$round"; done
        done
        python3 "$root/bench/summarize_issue36.py" scale "$r/i36/scale" | tee "$r/i36/scale/summary.txt" ;;
      issue36-fvp)
        log "issue 36: prefetch against train_step_bench, with nvJPEG's pool on and off and fewer kernel blocks"
        mkdir -p "$r/i36/fvp"
        # Variants: pool (the defaults), nopool (--hardware-pool 0: before issue 36), blocksN (the defaults with
        # --kernel-blocks N: the feeder's kernels hold fewer of the GPU's multiprocessors beside the step).
        read -r -a fvp_variants <<<"${i36_fvp_variants:-pool nopool blocks2}"
        pf() {  # VARIANT ROUND
          local flags=()
          case "$1" in
            nopool) flags=(--hardware-pool 0) ;;
            blocks*) flags=(--kernel-blocks "${1#blocks}") ;;
          esac
          run 150 env CUDA_VISIBLE_DEVICES=0 "$bin/feed_vs_prefetch" --data "$imagenet" --modes prefetch --threads 16 \
            --batch 256 --steps 300 --warmup 10 --stall-report 30 "${flags[@]}" \
            --json "$r/i36/fvp/$1_$2.json" >"$r/i36/fvp/$1_$2.log" 2>&1
          echo "$1 round $2: $(grep -E '^prefetch ' "$r/i36/fvp/$1_$2.log" | head -1)"
        }
        step() {
          run 120 env CUDA_VISIBLE_DEVICES=0 "$bin/train_step_bench" --model resnet18 --batch 256 --precision bf16 \
            --steps 200 --warmup 10 --json "$r/i36/fvp/step_$1.json" | tail -1
        }
        for round in $(seq "${i36_fvp_rounds:-3}"); do
          if [ $((round % 2)) = 0 ]; then
            for v in $(printf '%s\n' "${fvp_variants[@]}" | tac); do pf "$v" "$round"; done
            step "$round"
          else
            step "$round"
            for v in "${fvp_variants[@]}"; do pf "$v" "$round"; done
          fi
        done
        python3 "$root/bench/summarize_issue36.py" fvp "$r/i36/fvp" | tee "$r/i36/fvp/summary.txt" ;;
      issue36-start)
        log "issue 36: the hybrid pipeline from its first batch, with and without the new levers, and the DataLoader"
        mkdir -p "$r/i36/start"
        pt=("$bin/pipeline_throughput" --data "$imagenet" --limit 4800 --epochs 5 --threads 16 --batch 256 --size 224
            --seed 7 --device gpu --deterministic 0)
        cache=$(mktemp -d /tmp/conveyor-split.XXXXXX)  # the split's memory, fresh for this call
        CONVEYOR_ALGORITHM_CACHE=$cache run 120 "${pt[@]}" --json "$r/i36/start/prime.json" | grep -E '^threads 16:|^split:'
        for round in $(seq "${i36_start_rounds:-3}"); do
          new() { CONVEYOR_ALGORITHM_CACHE=$cache run 120 "${pt[@]}" --json "$r/i36/start/new_$round.json" |
                    grep -E '^threads 16:|^split:' | sed "s/^/new $round: /"; }
          old() { CONVEYOR_ALGORITHM_CACHE=off run 120 "${pt[@]}" --feeder-warmup 0 --remember-split 0 \
                    --hardware-pool 0 --json "$r/i36/start/old_$round.json" | grep -E '^threads 16:' | sed "s/^/old $round: /"; }
          torch() { run 150 python3 "$root/bench/peers/torch_dataloader.py" --data "$imagenet" --limit 4800 --epochs 5 \
                      --workers 16 --batch 256 --size 224 --seed 7 --antialias "${i36_antialias:-true}" \
                      --json "$r/i36/start/torch_$round.json" | grep -E '^torch DataLoader'; }
          if [ $((round % 2)) = 0 ]; then torch; old; new; else new; old; torch; fi
        done
        python3 "$root/bench/summarize_issue36.py" start "$r/i36/start" | tee "$r/i36/start/summary.txt" ;;
      issue36-prepared)
        log "issue 36: prepared data sets (make_shards), read by conveyor and by the DataLoader"
        mkdir -p "$r/i36/prepared"
        prep=/tmp/i36-prepared
        rm -rf "$prep"
        for v in "original::" "q90s256:--max-side 256 --quality 90:" "raw160:--max-side 160 --store raw:"; do
          IFS=: read -r name flags _ <<<"$v"
          # shellcheck disable=SC2086
          run 180 "$bin/make_shards" --input "$imagenet" --output "$prep/$name" --shard-size 64 $flags \
            >"$r/i36/prepared/make_$name.log" 2>&1
          tail -2 "$r/i36/prepared/make_$name.log"
          cp "$prep/$name/shards.json" "$r/i36/prepared/index_$name.json"
          du -sh "$prep/$name" | sed "s/^/$name on disk: /"
          common=(--data "$prep/$name/shards.json" --shard-random-access 1 --epochs 4 --threads 16 --batch 256
                  --size 224 --seed 7 --deterministic 0)
          run 120 "$bin/pipeline_throughput" "${common[@]}" --json "$r/i36/prepared/cpu_$name.json" | grep -E '^threads 16:' |
            sed "s/^/$name CPU-only: /"
          run 120 "$bin/pipeline_throughput" "${common[@]}" --device gpu --json "$r/i36/prepared/gpu_$name.json" |
            grep -E '^threads 16:' | sed "s/^/$name hybrid: /"
          run 200 python3 "$root/bench/peers/torch_dataloader.py" --data "$prep/$name/shards.json" --epochs 4 \
            --workers 16 --batch 256 --size 224 --seed 7 --json "$r/i36/prepared/torch_$name.json" |
            grep -E '^torch DataLoader' | sed "s/^/$name DataLoader: /"
        done
        python3 "$root/bench/summarize_issue36.py" prepared "$r/i36/prepared" | tee "$r/i36/prepared/summary.txt" ;;
      issue36-summary)
        for part in hang scale fvp start prepared; do
          [ -d "$r/i36/$part" ] && python3 "$root/bench/summarize_issue36.py" "$part" "$r/i36/$part"
        done ;;
      fields)
        log "issue 35: segmentation and detection against the DataLoader, classification against the previous binary"
        [ -d "$imagenet" ] || run 120 "$bin/make_imagenet_like" --out "$data/imagenet-like-5000" --count 5000 --sources "$root/.carry/photos"
        fields=$data/fields-5000
        [ -f "$fields/instances.json" ] || run 120 "$bin/make_fields" --input "$imagenet" --out "$fields"
        for i in $(seq "${fields_rounds:-3}"); do
          for f in segmentation:512 detection:640; do
            IFS=: read -r format size <<<"$f"
            [ "$format" = detection ] && d=$fields/instances.json || d=$fields
            run 120 "$bin/pipeline_throughput" --format "$format" --data "$d" --threads 16 --batch 32 --size "$size" \
              --epochs 1 --seed 7 --json "$r/fields_${format}_${i}_conveyor.json" | grep -E '^threads 16'
            run 240 python3 "$root/bench/peers/torch_fields.py" --format "$format" --data "$d" --workers 16 --batch 32 \
              --size "$size" --epochs 1 --seed 7 --antialias both --json "$r/fields_${format}_${i}_torch.json" \
              --conveyor-json "$r/fields_${format}_${i}_conveyor.json" | grep -E '^torch|^conveyor'
          done
        done
        baseline=${fields_baseline:-$bin/pipeline_throughput_prev}
        if [ -x "$baseline" ]; then
          for i in $(seq "${fields_rounds:-3}"); do
            run 120 "$bin/pipeline_throughput" --data "$imagenet" --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 \
              --json "$r/fields_classification_${i}_conveyor.json" | grep -E '^threads 16'
            run 120 "$baseline" --data "$imagenet" --threads 16 --batch 256 --size 224 --epochs 4 --seed 7 \
              --json "$r/fields_classification_${i}_baseline.json" | grep -E '^threads 16'
          done
        else
          echo "!!! fields: no previous binary at $baseline (set fields_baseline): classification not compared"
        fi
        python3 "$root/bench/summarize_fields.py" "$r" | tee "$r/fields_summary.txt" ;;
      *) echo "unknown phase $phase" ;;
    esac
  done
  log done
} 2>&1 | tee "$r/console.log"
tar -C "$r" -czf "$out/results.tgz" .
# The benchmarks' own failures are reported (!!!) and the run goes on; a failed test fails the script.
if [ -f "$r/tests_failed" ]; then
  echo "gpu_run: test programs failed: $(tr '\n' ' ' <"$r/tests_failed")" >&2
  exit 1
fi
