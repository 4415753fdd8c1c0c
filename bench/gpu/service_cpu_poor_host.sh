#!/usr/bin/env bash
# service_cpu_poor_host.sh [--rounds N] [--trainer-cpus LIST] [--worker-cpus LIST] [--workers N] [--local N]
#                          [--ks "4 12"] [--steps N] [--epochs N] [--variants "NAME=FLAGS;..."]
#                          [--prepared NAME:FLAGS] [--transport-only] [--host]
#                          [--b-variants "NAME=WORKERS SPLIT [VAR=VALUE | --FLAG=VALUE]...;..."]
# Issue 40's two measurements of the data service, each against its baseline in this call
# (bench/service/cpu_poor_host.sh does the work and writes summary.json):
#   (a) a CPU-poor GPU host: feed_vs_prefetch (ResNet-18 bf16) on the trainer's cores alone, then fed by
#       workers on the other cores over loopback (with and without local threads), against train_step_bench;
#   (b) the transport cost: a worker on K cores serving over loopback against a local pipeline on those cores.
# --variants: more fed trainer runs a round (bench/service/cpu_poor_host.sh's VARIANTS). --prepared: every run
# reads the ImageNet-like set as make_shards prepared it (say q90s320:"--max-side 320 --quality 90"), written
# out as a folder, where the 16 cores alone can make the step's rate. --epochs: (b)'s passes over the data a run
# (2: about a second a run at 12 cores' rate on prepared data, too short for the service's start).
# --transport-only: (b) alone. --host: (a) also runs the trainer on every core without the service, the bound
# of any split of the host's cores (cpu_poor_host.sh's HOST=1). --b-variants: more served runs in (b) (cpu_poor_host.sh's B_VARIANTS).
# The bundle needs conveyor-dispatcher, conveyor-worker, pipeline_throughput, feed_vs_prefetch and
# train_step_bench (only those of the parts that run), and conveyor-service-status for the workers' own
# account.
source "$(dirname "$0")/lib.sh"
bench_options rounds=2 trainer-cpus=0-3 worker-cpus=4-15 workers=3 local=2 ks="4 12" steps=300 epochs=2 \
  variants= prepared= transport-only! host! b-variants= -- "$@"
bench_begin service_cpu_poor_host "$@"
images=$(imagenet_like)
[ -z "$prepared" ] || images=$(prepared_folder "$prepared")
programs=(conveyor-dispatcher conveyor-worker)
[ -z "${ks// /}" ] || programs+=(pipeline_throughput)             # (b)
[ "$transport_only" = 1 ] || programs+=(feed_vs_prefetch train_step_bench)  # (a)
for program in "${programs[@]}"; do
  [ -x "$bin/$program" ] || { echo "!!! $program is not in the bundle"; echo "$program missing" >>"$r/failed_runs"; }
done
if [ ! -e "$r/failed_runs" ]; then
  STEP=$((1 - transport_only)) HOST=$host ROUNDS=$rounds TRAINER_CPUS=$trainer_cpus WORKER_CPUS=$worker_cpus \
    WORKERS=$workers LOCAL=$local KS=$ks B_VARIANTS=$b_variants FVP_STEPS=$steps EPOCHS=$epochs \
    VARIANTS=$variants \
    bench_run 540 bash "$root/bench/service/cpu_poor_host.sh" "$bin" "$images" "$r/service"
  [ -f "$r/service/summary.json" ] && cp "$r/service/summary.json" "$r/summary.json"
fi
bench_end
