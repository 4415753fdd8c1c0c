#!/usr/bin/env bash
# pipeline_vs_peers.sh [--rounds N] [--limit IMAGES] [--epochs N] [--threads N] [--sides "cpu gpu torch tvgpu"]
#                      [--tvgpu-variants sample,image] [--variant NAME="FLAGS"]...
# The input pipeline against its peers, alternating rounds, every side counted from its first batch (start-up
# reported apart): pipeline_throughput CPU-only (cpu) and hybrid (gpu: nvJPEG decodes a share, flip and
# distort on the GPU), the split adapting; PyTorch's DataLoader, 16 workers, antialias on and off (torch);
# torchvision decoding on the GPU as a practised user writes it (tvgpu: batched decode, two streams; its
# variants sample, flip and jitter batched, and image, v2 image by image; the faster one of each round is the
# peer; --sides "gpu tvgpu" is issue 41's GPU peer alone). RRC 224 + flip + distort, batches of 256, 16
# threads; by default 24,000 images a run (4,800 x 5 epochs). Each --variant runs the hybrid once more per round
# with FLAGS added (say --variant ahead4="--host-blocks-ahead 4"; leading NAME=VALUE words set its environment),
# reported against the hybrid with the defaults of the same round. The headline's pipeline rows:
# bench/summarize_headline.py writes entries.json (headline.json's form) beside the runs.
source "$(dirname "$0")/lib.sh"
bench_options rounds=3 limit=4800 epochs=5 threads=16 sides="cpu gpu torch tvgpu" tvgpu-variants=sample,image \
  variant+= -- "$@"
bench_begin pipeline_vs_peers "$@"
images=$(imagenet_like)
common=(--data "$images" --limit "$limit" --epochs "$epochs" --batch 256 --size 224 --seed 7)
declare -A flags=()
for v in "${variant[@]}"; do flags[gpu-${v%%=*}]=${v#*=}; sides+=" gpu-${v%%=*}"; done

side() {
  case "$1" in
    cpu) bench_run 240 "$bin/pipeline_throughput" "${common[@]}" --threads "$threads" --deterministic 0 \
           --json "$r/cpu_$2.json" 2>&1 | grep -E '^threads [0-9]+:' ;;
    gpu | gpu-*) split_variant "${flags[$1]-}"  # a variant's environment and flags (none for gpu)
      bench_run 240 env "${variant_env[@]}" "$bin/pipeline_throughput" "${common[@]}" --threads "$threads" \
        --deterministic 0 --device gpu "${variant_flags[@]}" --json "$r/$1_$2.json" 2>&1 |
        grep -E '^threads [0-9]+:|^device:' ;;
    torch) bench_run 400 python3 "$root/bench/peers/torch_dataloader.py" "${common[@]}" --workers "$threads" \
             --antialias both --json "$r/torch_$2.json" | grep -E '^torch DataLoader' ;;
    tvgpu) bench_run 400 python3 "$root/bench/peers/torchvision_gpu_decode.py" --data "$images" --batch 256 --size 224 \
             --epochs 2 --seed 7 --variants "$tvgpu_variants" --json "$r/tvgpu_$2.json" | grep -E '^torchvision|^strongest' ;;
    *) echo "!!! unknown side $1" ;;
  esac
}
# shellcheck disable=SC2086
alternate "$rounds" side $sides
python3 "$root/bench/summarize_headline.py" "$r" --machine "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" \
  --commit "$CONVEYOR_COMMIT" --out "$r/entries.json" | tee "$r/summary.txt"
bench_end
