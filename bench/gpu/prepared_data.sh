#!/usr/bin/env bash
# prepared_data.sh [--sets "NAME:MAKE_SHARDS_FLAGS;..."] [--rounds N]
# Data prepared once, as FFCV prepares it: make_shards packs the ImageNet-like photos as they are (original)
# and shrunk or stored decoded (default sets: q90s320 "--max-side 320 --quality 90", raw160 "--max-side 160
# --store raw"), timed, sizes in each index; then, on every set read at random from its shards,
# pipeline_throughput CPU-only (cpu) and hybrid (gpu), and PyTorch's DataLoader on the same files (torch),
# alternating rounds. Files: {cpu,gpu,torch}_SET_R.json, index_SET.json; bench/summarize_gpu_scripts.py
# prepared_data (summary.txt). The share of the training step on a prepared set (issue 41): feed_vs_step.sh
# --prepared SET:FLAGS, and on N GPUs against one, scaling.sh --prepared SET:FLAGS (feed_vs_prefetch reads
# folders: lib.sh's prepared_folder writes the set's shards out as one).
source "$(dirname "$0")/lib.sh"
bench_options sets="original:;q90s320:--max-side 320 --quality 90;raw160:--max-side 160 --store raw" rounds=2 -- "$@"
bench_begin prepared_data "$@"
# (not "names": bash scopes dynamically, and alternate() has a local of that name that side() would see)
prepared=()
IFS=';' read -r -a specs <<<"$sets"
for spec in "${specs[@]}"; do
  name=${spec%%:*} options=${spec#*:}
  # shellcheck disable=SC2086  # make_shards' flags, split
  index=$(shards_of "$name" $options)
  tail -2 "$r/make_shards_$name.log" 2>/dev/null
  cp "$index" "$r/index_$name.json" && du -sh "$(dirname "$index")" | sed "s/^/$name on disk: /"
  prepared+=("$name")
done

side() {  # SIDE ROUND, on every set
  local name common
  for name in "${prepared[@]}"; do
    common=(--data "/tmp/shards/$name/shards.json" --epochs 4 --batch 256 --size 224 --seed 7)
    case "$1" in
      cpu) bench_run 180 "$bin/pipeline_throughput" "${common[@]}" --shard-random-access 1 --threads 16 --deterministic 0 \
             --json "$r/cpu_${name}_$2.json" | grep -E '^threads 16:' | sed "s/^/$name: /" ;;
      gpu) bench_run 180 "$bin/pipeline_throughput" "${common[@]}" --shard-random-access 1 --threads 16 --deterministic 0 \
             --device gpu --json "$r/gpu_${name}_$2.json" | grep -E '^threads 16:' | sed "s/^/$name: /" ;;
      torch) bench_run 300 python3 "$root/bench/peers/torch_dataloader.py" "${common[@]}" --workers 16 \
               --json "$r/torch_${name}_$2.json" | grep -E '^torch DataLoader' | sed "s/^/$name: /" ;;
    esac
  done
}
alternate "$rounds" side cpu gpu torch
python3 "$root/bench/summarize_gpu_scripts.py" prepared_data "$r" | tee "$r/summary.txt"
bench_end
