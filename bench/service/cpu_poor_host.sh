#!/usr/bin/env bash
# cpu_poor_host.sh BIN DATA [OUT]: issue 40's two measurements of the data service, each against its baseline
# in the same call. BIN holds conveyor-dispatcher, conveyor-worker, pipeline_throughput, feed_vs_prefetch
# and train_step_bench (with their libraries: on the GPU machine `source shared/tools/device-env LIBS` first);
# DATA is an ImageFolder (the data phase's imagenet-like-5000/train; (b) also takes local tar shards, a .json
# index or a pattern, such as photos prepared by make_shards --max-side 320). Results go to OUT (default:
# ./service-results): each program's JSON and console, and summary.json with the ratios.
#
#   (a) a CPU-poor GPU host (STEP=1, a GPU): train_step_bench (ResNet-18 bf16, batch 256) for the step's own rate;
#       feed_vs_prefetch --modes prefetch confined to the trainer's cores (TRAINER_CPUS, default 0-3) alone;
#       then the same program, same cores, fed by workers on the other cores (WORKER_CPUS, default 4-15, cut
#       into WORKERS workers, default 3) over loopback, once with the trainer's cores making splits too
#       (--service-local-threads LOCAL, default 2) and once without. Target: >= 97 % of train_step_bench.
#       VARIANTS="NAME=FLAGS;NAME=FLAGS" runs the fed trainer once more a round for each, FLAGS added (with
#       --service-local-threads LOCAL unless FLAGS name it), such as
#       "gpu1=--gpu-share 1 --gpu-adapt 0" (the trainer's own splits all decoded by its GPU): a_service_NAME_R.
#       FLAGS may begin with program=NAME: BIN/NAME instead of feed_vs_prefetch (another build's, beside).
#       HOST=1 adds, each round, the same program on every core of the host without the service (a_host_R):
#       what the whole host makes, the bound of any split of its cores.
#   (b) transport cost (always): for each K in KS (default "4 12", cores WORKER_CPUS' first K):
#       pipeline_throughput on those K cores alone (--threads K), against one worker with --threads K on the
#       same K cores serving pipeline_throughput --service on the trainer's cores. Target: >= 0.9x.
#       B_VARIANTS="NAME=WORKERS SPLIT [VAR=VALUE | --FLAG=VALUE]...;..." serves the trainer once more a round
#       for each: the K cores cut into WORKERS workers, splits of SPLIT batches (the default run: 1 4), the
#       trainer run with the environment VAR=VALUE (say GLIBC_TUNABLES=...) and its flags --FLAG=VALUE (say
#       --service-streams=1): b_kK_service-NAME_R.
#
# On the 2-core build machine (no GPU): STEP=0 TRAINER_CPUS=0 WORKER_CPUS=1 KS=1 measures (b)'s shape at K = 1.
# Every run is one call; ROUNDS (default 2) repeats each pair, the order reversed in even rounds.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: cpu_poor_host.sh BIN DATA [OUT]" >&2; exit 2; }
bin=$(cd "$1" && pwd)
data=$2
out=${3:-service-results}
mkdir -p "$out"
out=$(cd "$out" && pwd)
step=${STEP:-1}
trainer_cpus=${TRAINER_CPUS:-0-3}
worker_cpus=${WORKER_CPUS:-4-15}
workers=${WORKERS:-3}
local_threads=${LOCAL:-2}
variants=${VARIANTS:-}
b_variants=${B_VARIANTS:-}
ks=${KS:-"4 12"}
rounds=${ROUNDS:-2}
batch=${BATCH:-256}
epochs=${EPOCHS:-2}          # pipeline_throughput's passes over DATA in (b)
fvp_steps=${FVP_STEPS:-300}  # feed_vs_prefetch's timed steps in (a)
log() { printf '%s cpu_poor_host: %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$out/console.log" >&2; }

# The CPUs of a list such as "4-15" or "1,3", one per line.
cpus_of() {
  local IFS=,
  for part in $1; do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}
mapfile -t worker_list < <(cpus_of "$worker_cpus")
join_cpus() { local IFS=,; echo "$*"; }

servers=()
# The CPU time the servers have used so far, as JSON into $1: {"dispatcher": {...}, "workers": [{...}]}, each
# {"user_s", "system_s"} from /proc/PID/stat (utime and stime; a worker's whole life, split set-up included).
account_servers() {
  local tick pid fields first=1
  tick=$(getconf CLK_TCK)
  {
    printf '{'
    for pid in "${servers[@]}"; do
      read -ra fields < <(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null) || continue
      # After "pid (comm) ": utime and stime are the 12th and 13th fields.
      if [ "$first" = 1 ]; then printf '"dispatcher": '; else
        [ "$first" = 2 ] && printf ', "workers": [' || printf ', '
      fi
      awk -v u="${fields[11]}" -v s="${fields[12]}" -v t="$tick" \
        'BEGIN { printf "{\"user_s\": %.3f, \"system_s\": %.3f}", u / t, s / t }'
      first=$((first == 1 ? 2 : 3))
    done
    [ "$first" = 3 ] && printf ']'
    printf '}\n'
  } >"$1"
}
stop_servers() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${servers[@]}"; do wait "$pid" 2>/dev/null || true; done
  servers=()
}
trap stop_servers EXIT

# A dispatcher on the trainer's cores (it does little) and N workers on CPU lists; sets `port` to the
# dispatcher's. (Not in a command substitution: the servers must be this shell's children, to be stopped.)
start_service() {
  local tag=$1; shift
  taskset -c "$trainer_cpus" "$bin/conveyor-dispatcher" --host 127.0.0.1 --port 0 >"$out/$tag.dispatcher.log" 2>&1 &
  servers+=($!)
  port=""
  for _ in $(seq 1 200); do
    port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$out/$tag.dispatcher.log")
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { log "the dispatcher did not start"; cat "$out/$tag.dispatcher.log" >&2; exit 1; }
  local i=0
  for cpus in "$@"; do
    local n
    n=$(cpus_of "$cpus" | wc -l)
    taskset -c "$cpus" "$bin/conveyor-worker" --dispatcher "127.0.0.1:$port" --host 127.0.0.1 --threads "$n" \
      >"$out/$tag.worker$i.log" 2>&1 &
    servers+=($!)
    i=$((i + 1))
  done
  for _ in $(seq 1 200); do
    [ "$("$bin/conveyor-service-status" "grpc://127.0.0.1:$port" 2>/dev/null | grep -c '  alive  ')" -ge $# ] && break
    sleep 0.05
  done
}

log "machine: $(hostname), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); trainer CPUs $trainer_cpus, workers $worker_cpus"

# ---- (a) a CPU-poor GPU host ----
if [ "$step" = 1 ]; then
  # The workers' CPU lists: WORKER_CPUS cut into $workers contiguous parts.
  per=$(( ${#worker_list[@]} / workers ))
  parts=()
  for ((w = 0; w < workers; w++)); do
    parts+=("$(join_cpus "${worker_list[@]:$((w * per)):$per}")")
  done
  trainer_count=$(cpus_of "$trainer_cpus" | wc -l)
  # The trainer's arguments apart from its program: a variant may run another build's program with them.
  fvp_args=(--data "$data" --modes prefetch --batch "$batch" --warmup 10 --steps "$fvp_steps")
  fvp_all=("$bin/feed_vs_prefetch" "${fvp_args[@]}")
  fvp=("${fvp_all[@]}" --threads "$trainer_count")
  for ((round = 1; round <= rounds; round++)); do
    log "(a) round $round: train_step_bench"
    "$bin/train_step_bench" --model resnet18 --batch "$batch" --precision bf16 --steps 200 --warmup 5 \
      --json "$out/a_step_$round.json" >"$out/a_step_$round.log" 2>&1
    log "(a) round $round: feed_vs_prefetch on CPUs $trainer_cpus alone"
    taskset -c "$trainer_cpus" "${fvp[@]}" --json "$out/a_alone_$round.json" >"$out/a_alone_$round.log" 2>&1
    if [ "${HOST:-0}" = 1 ]; then
      log "(a) round $round: feed_vs_prefetch on every core, no service"
      "${fvp_all[@]}" --threads "$(nproc)" --json "$out/a_host_$round.json" >"$out/a_host_$round.log" 2>&1
    fi
    start_service "a$round" "${parts[@]}"
    for lt in 0 "$local_threads"; do
      log "(a) round $round: feed_vs_prefetch on CPUs $trainer_cpus fed by $workers workers on $worker_cpus, local threads $lt"
      taskset -c "$trainer_cpus" "${fvp[@]}" --service "grpc://127.0.0.1:$port" --service-local-threads "$lt" \
        --json "$out/a_service_local${lt}_$round.json" >"$out/a_service_local${lt}_$round.log" 2>&1
    done
    IFS=';' read -ra variant_list <<<"$variants"
    for v in "${variant_list[@]}"; do
      name=${v%%=*}
      read -ra flags <<<"${v#*=}"
      program=feed_vs_prefetch  # program=NAME first: another build's, carried beside in BIN
      if [[ ${flags[0]:-} == program=* ]]; then program=${flags[0]#program=}; flags=("${flags[@]:1}"); fi
      [[ " ${flags[*]} " == *" --service-local-threads "* ]] || flags+=(--service-local-threads "$local_threads")
      log "(a) round $round: $program on CPUs $trainer_cpus fed by $workers workers, variant $name:" \
        "${flags[*]}"
      taskset -c "$trainer_cpus" "$bin/$program" "${fvp_args[@]}" --threads "$trainer_count" \
        --service "grpc://127.0.0.1:$port" "${flags[@]}" --json "$out/a_service_${name}_$round.json" >"$out/a_service_${name}_$round.log" 2>&1
    done
    "$bin/conveyor-service-status" "grpc://127.0.0.1:$port" >"$out/a_status_$round.txt" 2>&1 || true
    stop_servers
  done
fi

# ---- (b) transport cost: K cores as a worker over loopback against a local pipeline on the same K cores ----
for k in $ks; do
  cores=$(join_cpus "${worker_list[@]:0:$k}")
  # Local tar shards (DATA a .json index or a pattern) read at random, as the workers read them.
  pt=(--data "$data" --batch "$batch" --epochs "$epochs" --size 224 --checksum 0 --deterministic 0
      --shard-random-access 1)
  for ((round = 1; round <= rounds; round++)); do
    local_run() {
      log "(b) K=$k round $round: pipeline_throughput --threads $k on CPUs $cores"
      # At nice 0, as the worker's pipelines run (PipelineOptions::worker_nice's 10 would yield the cores to any
      # other process, which a worker host does not have).
      taskset -c "$cores" "$bin/pipeline_throughput" "${pt[@]}" --threads "$k" --worker-nice 0 \
        --json "$out/b_k${k}_local_$round.json" >"$out/b_k${k}_local_$round.log" 2>&1
    }
    # service_run NAME WORKERS SPLIT [VAR=VALUE | --FLAG=VALUE]...: the K cores cut into WORKERS workers serving
    # the trainer.
    service_run() {
      local name=$1 n=$2 split=$3 a environment=() flags=()
      shift 3
      for a in "$@"; do if [[ $a == --* ]]; then flags+=("$a"); else environment+=("$a"); fi; done
      local per=$((k / n)) w parts=()
      for ((w = 0; w < n; w++)); do parts+=("$(join_cpus "${worker_list[@]:$((w * per)):$per}")"); done
      start_service "b_k${k}_${name}_$round" "${parts[@]}"
      log "(b) K=$k round $round: $n worker(s) on CPUs $cores serving pipeline_throughput --service on CPUs" \
        "$trainer_cpus ($name: splits of $split batches${*:+, $*})"
      env "${environment[@]}" taskset -c "$trainer_cpus" "$bin/pipeline_throughput" "${pt[@]}" "${flags[@]}" \
        --service "grpc://127.0.0.1:$port" --service-split "$split" --json "$out/b_k${k}_${name}_$round.json" \
        >"$out/b_k${k}_${name}_$round.log" 2>&1
      account_servers "$out/b_k${k}_${name}_$round.cpu.json"
      stop_servers
    }
    service_runs() {
      service_run service 1 4
      local v spec
      IFS=';' read -ra b_list <<<"$b_variants"
      for v in "${b_list[@]}"; do
        read -ra spec <<<"${v#*=}"
        service_run "service-${v%%=*}" "${spec[@]}"
      done
    }
    if (( round % 2 == 0 )); then service_runs; local_run; else local_run; service_runs; fi
  done
done

# ---- the ratios, from the programs' own JSON (each the median of the rounds' own ratios) ----
python3 "$(dirname "$0")/summarize_cpu_poor_host.py" "$out"
log "done: $out"
