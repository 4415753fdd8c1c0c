#!/usr/bin/env bash
# scripts/mutation_check.sh [--in-place BUILD_DIR] [--ci | --list | NAME...]: breaks, one at a time, a
# behaviour users rely on (the mutations below), rebuilds only the test programs that guard it, runs them,
# and fails if any mutation survives (its tests still pass), does not apply any more (the code it names has
# changed: update the mutation), does not compile, or if those tests fail without any mutation.
#   (no argument)  every mutation
#   --ci           a rotating subset: CONVEYOR_MUTATIONS_PER_RUN (default 3) consecutive mutations, starting
#                  at a place that moves with the date (UTC), so that CI covers the whole list every few days
#   --list         the mutations, one per line
#   NAME...        those mutations
# Works on a copy of the tree (build-mutation/tree, synchronised by content with the working tree: tracked
# and untracked files, not ignored ones) built in build-mutation/build (Release at -O1, no CUDA, no examples,
# the libraries in unity batches); both stay between runs, so a later run rebuilds only what changed. The
# working tree is never modified.
#   --in-place BUILD_DIR  instead mutates the working tree itself and rebuilds in BUILD_DIR, an existing build
#                  of it (e.g. build, after ./conveyor.sh test): no second build of the libraries. Each file
#                  is put back after its mutation, also when the script is interrupted, with a new time
#                  stamp (the next build compiles it again). For a throwaway checkout such as CI's.
# Logs: build-mutation/logs/NAME.log; the report: build-mutation/report.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$root/build-mutation
tree=$work/tree
build=$work/build
logs=$work/logs
say() { printf 'mutation: %s\n' "$*" >&2; }
in_place=""
if [ "${1:-}" = --in-place ]; then
  [ -n "${2:-}" ] && [ -f "$2/build.ninja" ] || { say "--in-place needs a configured build folder"; exit 2; }
  build=$(cd "$2" && pwd) tree=$root in_place=1
  home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  [ "$(cd "$home" && pwd -P)" = "$(pwd -P)" ] || { say "$2 is a build of $home, not of $root"; exit 2; }
  shift 2
fi

# ---- the mutations -------------------------------------------------------------------------------------
# mutation NAME FILE FROM TO RUN: replace the one occurrence of FROM in FILE by TO. RUN says which tests must
# fail: "PROGRAM FILTER" runs the GoogleTest program PROGRAM (also its build target) with --gtest_filter=FILTER;
# "ctest REGEX TARGET..." builds the targets and runs ctest -R REGEX.
names=() files=() froms=() tos=() runs=()
mutation() {
  names+=("$1") files+=("$2") froms+=("$3") tos+=("$4") runs+=("$5")
}

mutation seed-ignores-epoch src/pipeline/pipeline_stages.cpp \
  'sample_seed(plan_.options.seed, order.epoch, order.index)' \
  'sample_seed(plan_.options.seed, 0, order.index)' \
  'conveyor_pipeline_tests EpochSeeds.*'
mutation seed-from-source-index src/pipeline/pipeline_stages.cpp \
  'sample_seed(plan_.options.seed, order.epoch, order.index)' \
  'sample_seed(plan_.options.seed, order.epoch, order.source_index)' \
  'conveyor_pipeline_tests EpochSeeds.*:Order.*:Batch.*'
mutation shuffle-ignores-epoch src/pipeline/element_order.cpp \
  'rng_ = Rng(combine_seeds(seed_, epoch), ' \
  'rng_ = Rng(combine_seeds(seed_, 0), ' \
  'conveyor_pipeline_tests Shuffle.*'
mutation shard-not-exactly-once src/pipeline/element_order.cpp \
  'if (element->index % num_shards_ != index_ || consumed(*element)) continue;' \
  'if (element->index % num_shards_ > index_ || consumed(*element)) continue;' \
  'conveyor_pipeline_tests Shard.*'
mutation skip-one-too-few src/pipeline/element_order.cpp \
  'for (; used_ < count_; ++used_)' \
  'for (; used_ + 1 < count_; ++used_)' \
  'conveyor_pipeline_tests SkipTake.*'
mutation skip-reasons-not-counted src/observe/pipeline_counters.cpp \
  '++skip_reasons_[stage + ": " + kind];' \
  'skip_reasons_[stage + ": " + kind] = 1;' \
  'conveyor_pipeline_tests Skip.*'
mutation skipped-sample-not-listed src/observe/pipeline_counters.cpp \
  'if (skipped_samples_.size() < PipelineStats::kMaxSkippedSamples)' \
  'if (skipped_samples_.size() < PipelineStats::kMaxSkippedSamples && stage != "read")' \
  'conveyor_pipeline_tests Skip.*'
mutation stage-stats-renamed src/observe/pipeline_counters.cpp \
  'stats.stages.push_back(StageStats{names_[i], ' \
  'stats.stages.push_back(StageStats{names_[i] + " stage", ' \
  'conveyor_pipeline_tests Batch.AnImageLeftOutsideTheSlotIsCopiedIntoIt:Skip.TheReasonKindComesFromTheExceptionType'
mutation batch-slots-reversed src/pipeline/pipeline_stages.cpp \
  'element.slot = current_used_++;' \
  'element.slot = plan_.batch_size - 1 - current_used_++;' \
  'conveyor_pipeline_tests Batch.*:Holes.*'
mutation host-memory-ignored src/pipeline/pipeline.cpp \
  'BatchPool::create_with_layout(pool_capacity_, plan_.batch_size, layout, plan_.options.host_memory)' \
  'BatchPool::create_with_layout(pool_capacity_, plan_.batch_size, layout)' \
  'conveyor_pipeline_tests Pool.*'
mutation buffer-does-not-hold-its-pool src/memory/batch_pool.cpp \
  $'std::shared_ptr<BatchPool> pool;\n    Slot* slot;\n    void operator()(BatchBuffer*) const noexcept { pool->give_back(slot); }' \
  $'std::weak_ptr<BatchPool> pool;\n    Slot* slot;\n    void operator()(BatchBuffer*) const noexcept {\n      if (auto p = pool.lock()) p->give_back(slot);\n    }' \
  'conveyor_pipeline_tests BatchPool.*:Pool.*'
mutation batch-buffer-leaked src/memory/batch_pool.cpp \
  $'void BatchPool::give_back(Slot* slot) noexcept {\n' \
  $'void BatchPool::give_back(Slot* slot) noexcept {\n  static_cast<void>(new HostAllocation(std::move(slot->memory)));\n  {\n    auto fresh = make_slot();\n    slot->memory = std::move(fresh->memory);\n    slot->buffer = fresh->buffer;\n  }\n' \
  'conveyor_reliability_stress_tests FaultsAndLoad.ResidentMemoryStaysFlatOverALongRun'
mutation cancel-does-not-wake-the-producer src/pipeline/output_queue.h \
  $'    ready_.notify_all();\n    room_.notify_all();' \
  $'    ready_.notify_all();' \
  'conveyor_pipeline_concurrency_tests Cancel.DestroyingWhileThePipelineWaitsForTheConsumer'
mutation cancel-does-not-wake-the-pool src/memory/batch_pool.cpp \
  $'    cancelled_ = true;\n  }\n  returned_.notify_all();' \
  $'    cancelled_ = true;\n  }' \
  'conveyor_pipeline_tests BatchPool.*'
mutation maps-go-on-after-cancel src/pipeline/pipeline_stages.cpp \
  $'    if (given_up()) {\n      element.outcome = Outcome::cancelled;\n      return;\n    }\n    const Step& step' \
  $'    if (false) {\n      element.outcome = Outcome::cancelled;\n      return;\n    }\n    const Step& step' \
  'conveyor_pipeline_concurrency_tests Cancel.DestroyingWhileMapsAreSlow*'
mutation shape-probe-ignores-cancel src/pipeline/pipeline.cpp \
  'while (!stop_.load()) {' \
  'while (true) {' \
  'conveyor_pipeline_concurrency_tests Cancel.DestroyingDuringAShapeProbe*'
mutation cpu-feeder-lets-a-held-batch-go src/device/cpu_feeder.cpp \
  'slot.batch = std::move(batch);' \
  'slot.batch = Batch();' \
  'conveyor_device_tests CpuFeeder*'
mutation gpu-share-by-consecutive-indices src/device/decode/decode_split.h \
  'return ((index * kInverseGoldenRatio) >> 48) < share_q16;  // wraps mod 2^64: the fractional part' \
  'return ((index + 1) * share_q16 >> 16) != (index * share_q16 >> 16);' \
  'conveyor_device_stage_tests DecodeSplit.*'
mutation staging-thread-does-not-wait-for-a-slot src/device/lookahead.cpp \
  '      if (!wait_for_a_slot()) break;' \
  '      // the slot wait taken out' \
  'conveyor_device_tests Lookahead.*'
mutation chain-position-ignores-filters src/pipeline/dataset.cpp \
  '    if (up->step) ++position;' \
  '    if (up->step && up->step->map) ++position;' \
  'conveyor_device_tests PlacePixelOps.*'
mutation roi-margin-dropped ops/image/decode_jpeg.cpp \
  'int x0 = std::max(0, stored.x - 1);' \
  'int x0 = std::max(0, stored.x);' \
  'conveyor_ops_tests *RoiDecode.*:DecodeRandomResizedCrop.*:DecodeCenterCrop.*'
mutation dct-scale-off-by-one ops/image/decode_jpeg.cpp \
  'if (width >= denom * target_width && height >= denom * target_height) return denom;' \
  'if (width > denom * target_width && height > denom * target_height) return denom;' \
  'conveyor_ops_tests DctScale.*:*RandomResizedCrop*'
mutation unreadable-folder-not-skipped src/sources/image_folder.cpp \
  'fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, error);' \
  'fs::recursive_directory_iterator it(folder, fs::directory_options::none, error);' \
  'ctest _permission_tests$ conveyor_pipeline_tests conveyor_reliability_tests'
mutation benchmark-json-field-renamed bench/pipeline/pipeline_throughput.cpp \
  'out["checksum"] = main.checksum;' \
  'out["check_sum"] = main.checksum;' \
  'ctest ^pipeline_throughput_program$ pipeline_throughput make_imagenet_like make_shards'
mutation shards-never-as-ready src/sources/shard_streamer.cpp \
  'if (!in_order_) turn_ = ready_turn();' \
  'if (false) turn_ = ready_turn();' \
  'conveyor_sources_tests HttpShards.OutOfOrder*'
mutation distort-factors-upper-half ops/image/distort.cpp \
  'return rng.uniform(std::max(0.0, 1.0 - spread), 1.0 + spread); };' \
  'return rng.uniform(std::max(0.0, 1.0 - spread), 1.0 + spread / 2); };' \
  'conveyor_ops_tests ColorJitterDraws.*'
mutation rrc-ratio-not-log-uniform ops/image/random_resized_crop.cpp \
  'const double ratio = std::exp(rng.uniform(log_ratio_min, log_ratio_max));' \
  'const double ratio = rng.uniform(options.ratio_min, options.ratio_max);' \
  'conveyor_ops_tests RandomResizedCropDraws.*'
mutation flip-rate-0.6 ops/image/flip.cpp \
  'return rng.bernoulli(p);' \
  'return rng.bernoulli(p + 0.1);' \
  'conveyor_ops_tests FlipDraws.*'
mutation service-remainder-from-delivered src/service/client/split_ledger.cpp \
  'if (h.maker == nullptr && h.received < h.batches) return Work{split, h.received};' \
  'if (h.maker == nullptr && h.received < h.batches) return Work{split, h.delivered};' \
  'conveyor_service_tests SplitLedger.*'
mutation service-batch-out-of-turn-taken src/service/client/split_ledger.cpp \
  'if (h.maker != maker || h.ended || batch_in_split != h.received || h.received >= h.batches) return false;' \
  'if (h.ended || h.received >= h.batches) return false;' \
  'conveyor_service_tests SplitLedger.*'
mutation service-token-not-checked src/service/common/job_identity.cpp \
  'if (hash.empty()) return true;  // the job has no token' \
  'return true;' \
  'conveyor_service_tests Dispatcher.RefusesAnotherChainTokenProtocolOrConsumer:DataService.RefusesAWrongTokenAndAnotherChainUnderTheJobsName'
mutation service-lent-range-unchecked src/service/common/shared_region.cpp \
  'offset > bytes_ || bytes > bytes_ - offset)' \
  'offset > bytes_)' \
  'conveyor_service_tests SharedRegion.*'

# ---- which ones ------------------------------------------------------------------------------------------
count=${#names[@]}
selected=()
case "${1:-}" in
  --list) printf '%s\n' "${names[@]}"; exit 0 ;;
  --ci)
    per_run=${CONVEYOR_MUTATIONS_PER_RUN:-3}
    day=$(($(date -u +%s) / 86400))
    start=$((day * per_run % count))
    for ((k = 0; k < per_run && k < count; k++)); do selected+=($(((start + k) % count))); done
    say "CI subset for $(date -u +%F): ${per_run} of ${count}, from number $((start + 1)) (--list shows them all)" ;;
  "") for ((i = 0; i < count; i++)); do selected+=("$i"); done ;;
  -*) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  *)
    for wanted in "$@"; do
      found=""
      for ((i = 0; i < count; i++)); do [ "${names[$i]}" = "$wanted" ] && found=$i; done
      [ -n "$found" ] || { say "no mutation named '$wanted' (--list)"; exit 2; }
      selected+=("$found")
    done ;;
esac

# ---- the copy, its build, and the tests of each mutation --------------------------------------------------
start_time=$SECONDS
mkdir -p "$tree" "$logs"
# Content-based: a file whose bytes are unchanged keeps its time stamp (nothing to rebuild); a changed one
# (or one a killed run left mutated) is written anew, so its newer time stamp makes ninja rebuild it.
synchronise_the_copy() {
python3 - "$root" "$tree" <<'EOF'
import filecmp, os, shutil, subprocess, sys
source, copy = sys.argv[1], sys.argv[2]
listed = subprocess.run(["git", "-C", source, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                        check=True, capture_output=True).stdout.decode().split("\0")
keep = set()
for rel in filter(None, listed):
    src, dst = os.path.join(source, rel), os.path.join(copy, rel)
    if not os.path.lexists(src):
        continue  # deleted in the working tree, not yet in git
    keep.add(rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.islink(src):
        if not os.path.islink(dst) or os.readlink(dst) != os.readlink(src):
            if os.path.lexists(dst):
                os.remove(dst)
            os.symlink(os.readlink(src), dst)
    elif not (os.path.isfile(dst) and not os.path.islink(dst) and filecmp.cmp(src, dst, shallow=False)):
        if os.path.lexists(dst):
            os.remove(dst)
        shutil.copyfile(src, dst)
        shutil.copymode(src, dst)
for folder, _, names in os.walk(copy):
    for name in names:
        rel = os.path.relpath(os.path.join(folder, name), copy)
        if rel not in keep:
            os.remove(os.path.join(folder, name))
EOF
}
[ -n "$in_place" ] || synchronise_the_copy

if [ ! -f "$build/build.ninja" ]; then
  # -O1 instead of Release's -O3: a mutant's tests only have to fail, not to run fast, and the library, built
  # here once more, compiles faster (src/pipeline/element_order.cpp 4.0 s against 6.3, src/train/checkpoint.cpp
  # 9.9 s against 12.6 on the build machine, 2026-11-26).
  cmake -S "$tree" -B "$build" -G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCONVEYOR_CUDA=OFF -DCONVEYOR_EXAMPLES=OFF -DCONVEYOR_UNITY_BUILD=ON >"$logs/configure.log" 2>&1 || { cat "$logs/configure.log"; exit 1; }
fi

# The targets a RUN needs, and how to run it (exit status: 0 when its tests pass).
targets_of() {
  local words
  read -r -a words <<<"$1"
  if [ "${words[0]}" = ctest ]; then printf '%s\n' "${words[@]:2}"; else printf '%s\n' "${words[0]}"; fi
}
run_tests() {
  local words program
  read -r -a words <<<"$1"
  if [ "${words[0]}" = ctest ]; then
    ctest --test-dir "$build" -R "${words[1]}" --output-on-failure --timeout 300 --no-tests=error
  else
    program=$(find "$build/tests" -type f -name "${words[0]}" -perm -u+x | head -n 1)
    [ -n "$program" ] || { echo "no program ${words[0]} in $build"; return 2; }
    timeout 300 "$program" --gtest_filter="${words[1]}"
  fi
}
build_targets() { cmake --build "$build" -j "$(nproc)" --target "$@" -- --quiet; }
# replace FILE FROM TO: exits 3 unless FROM occurs exactly once.
replace() {
  python3 - "$@" <<'EOF'
import sys
path, old, new = sys.argv[1:4]
text = open(path, encoding="utf-8").read()
if text.count(old) != 1:
    sys.exit(3)
with open(path, "w", encoding="utf-8") as f:
    f.write(text.replace(old, new))
EOF
}

needed=()
for i in "${selected[@]}"; do mapfile -t -O "${#needed[@]}" needed < <(targets_of "${runs[$i]}"); done
mapfile -t needed < <(printf '%s\n' "${needed[@]}" | sort -u)
say "building ${needed[*]} in $build"
build_targets "${needed[@]}" >"$logs/build.log" 2>&1 || { tail -n 40 "$logs/build.log"; say "the unmutated build fails"; exit 1; }

# Without a mutation every selected RUN must pass, or a failure would prove nothing.
declare -A baseline_done=()
for i in "${selected[@]}"; do
  [ -n "${baseline_done[${runs[$i]}]:-}" ] && continue
  baseline_done[${runs[$i]}]=1
  if ! run_tests "${runs[$i]}" >"$logs/baseline.log" 2>&1; then
    tail -n 40 "$logs/baseline.log"
    say "'${runs[$i]}' fails without any mutation"
    exit 1
  fi
done

# Interrupted with a mutation applied: put the original back (the next run's sync would too, by content).
mutated=""
trap '[ -z "$mutated" ] || cp "$work/original" "$mutated"' EXIT
report=$work/report.txt
printf '%-36s %-10s %5s  %s\n' mutation result secs "killed by (failed tests)" | tee "$report"
failures=0
for i in "${selected[@]}"; do
  name=${names[$i]} file=$tree/${files[$i]} log=$logs/${names[$i]}.log
  mutation_start=$SECONDS
  cp "$file" "$work/original"
  mutated=$file
  status=0
  replace "$file" "${froms[$i]}" "${tos[$i]}" || status=$?
  if [ "$status" -ne 0 ]; then
    result=STALE detail="${files[$i]} no longer holds the code this mutation changes (exactly once)"
  else
    mapfile -t targets < <(targets_of "${runs[$i]}")
    if ! build_targets "${targets[@]}" >"$log" 2>&1; then
      result=NOBUILD detail="the mutated code does not compile: $log"
    elif run_tests "${runs[$i]}" >>"$log" 2>&1; then
      result=SURVIVED detail="every test of '${runs[$i]}' passed"
    else
      result=killed
      detail=$( (grep -E '^\[  FAILED  \] [^0-9]' "$log" | sed 's/^\[  FAILED  \] //; s/ (.*//' | sort -u | head -n 3
                 grep -E "watchdog: |Test +#[0-9]+: .*\*\*\*Failed|Segmentation|Aborted" "$log" | head -n 2) |
               paste -sd ';' - || true)
      [ -n "$detail" ] || detail="exit status non-zero: $log"
    fi
  fi
  cp "$work/original" "$file"  # the original bytes, with a new time stamp: the next build recompiles it
  mutated=""
  [ "$result" = killed ] || failures=$((failures + 1))
  printf '%-36s %-10s %5d  %s\n' "$name" "$result" $((SECONDS - mutation_start)) "${detail:0:160}" | tee -a "$report"
done
printf '%d mutations, %d not killed, %d s\n' "${#selected[@]}" "$failures" $((SECONDS - start_time)) | tee -a "$report"
[ "$failures" -eq 0 ]
