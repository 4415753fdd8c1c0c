"""conveyor's pipeline measured on your own image folder: python -m conveyor.bench DIR --help.

The same chain on every side (JPEG decode + random resized crop + horizontal flip + colour distortion,
batched), each run in turn, its rate counted from its first batch (the time to that first batch reported
apart, as start-up):
  feed        one image after another on one thread, as a training loop that makes each step's batch itself
  conveyor    the pipeline on all the threads asked for, batches prefetched
  dataloader  PyTorch's DataLoader with as many workers, torchvision.io decode and v2 transforms (when torch
              and torchvision are importable), at both antialias settings; the faster one is its figure
"""
