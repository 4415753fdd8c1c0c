#!/usr/bin/env bash
# pytorch_loop.sh [--passes N] [--modes eager,compile] [--threads N]
# PyTorch's ResNet-18 training loop (bf16, batch 256, on a CUDA stream of its own) fed three ways from the
# same JPEG folder, N passes (bench/peers/torch_train_from_jpeg.py): PyTorch's DataLoader (16 workers),
# conveyor's Python module (the GPU-side stages on, the split adapting), and one batch held on the GPU (the
# loop's own ceiling); eager, and the model under torch.compile. Needs the Python module: built here from
# the bundle (scripts/device-bundle.sh --python) when python_module.sh has not built it in this call. The
# headline's PyTorch-loop row: conveyor against the DataLoader, the median of the passes' ratios.
source "$(dirname "$0")/lib.sh"
bench_options passes=3 modes=eager,compile threads=16 -- "$@"
bench_begin pytorch_loop "$@"
images=$(imagenet_like)
module=/tmp/build-python
ls "$module"/conveyor/_conveyor*.so >/dev/null 2>&1 ||
  bench_run 580 "$root/scripts/build_python_on_gpu_machine.sh" "$bundle" "$module" | tail -3
for pass in $(seq "$passes"); do
  echo "--- pass $pass"
  bench_run 580 python3 "$root/bench/peers/torch_train_from_jpeg.py" --data "$images" --modes "$modes" \
    --feeds dataloader,conveyor,gpu --threads "$threads" --conveyor-deterministic 0 --conveyor-python "$module" \
    --json "$r/pass_$pass.json" | grep -E '^\[|conveyor|ratio' | tail -12
done
bench_end
