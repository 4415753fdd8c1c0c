#!/usr/bin/env bash
# fashion_mnist.sh [--seeds 1,2,3] [--recipe NAME] [--torch-feeds gpu,dataloader]
# Fashion-MNIST, the small ResNet, trained from the JPEG files (made here from the carried IDX files,
# scripts/device-bundle.sh --fashion): train_fashion_mnist's recipe (default: its default recipe) once per
# seed, then PyTorch's anchors on the same recipe, one seed each (bench/peers/torch_fashion_mnist.py: the
# data decoded once into GPU memory, and a DataLoader over the files). The headline's Fashion-MNIST row:
# conveyor's median of the seeds against the GPU-memory anchor, accuracy beside time.
source "$(dirname "$0")/lib.sh"
bench_options seeds=1,2,3 recipe= torch-feeds=gpu,dataloader -- "$@"
bench_begin fashion_mnist "$@"
set=$(fashion_mnist)
bench_run 400 "$bin/train_fashion_mnist" --data "$set" --seeds "$seeds" ${recipe:+--recipe "$recipe"} \
  --json "$r/conveyor.json" | grep -E '^(final|recipe|fast|warm-up)'
bench_run 400 python3 "$root/bench/peers/torch_fashion_mnist.py" --data "$set" --feeds "$torch_feeds" \
  ${recipe:+--recipe "$recipe"} --seeds 1 --json "$r/torch.json" | grep -E 'final|median|FAILED'
bench_end
