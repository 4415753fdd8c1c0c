#!/usr/bin/env python3
"""One PyTorch ResNet-18 training loop fed three ways from the same JPEG folder, in one call (issue 14):

  dataloader  torch.utils.data.DataLoader: --workers processes, pinned memory, torchvision.io.decode_jpeg on
              uint8 tensors + v2.RandomResizedCrop(224, antialias=False) + RandomHorizontalFlip(0.5) +
              ColorJitter(.4, .4, .4) in the workers; the loop copies each uint8 batch to the GPU and
              normalizes it there
  conveyor    conveyor's Python module: image_folder -> shuffle(10,000) -> repeat -> decode_random_resized_crop
              (224) -> flip_horizontal(0.5) -> distort(.4, .4, .4), --threads threads, batch, prefetch(4),
              handed over on the GPU as normalized bfloat16 (to_device) and taken with torch.from_dlpack;
              to_device's defaults: flip and distort run on the GPU fused with normalize, and the GPU's
              JPEG decoder (nvJPEG) takes a share of the images (--gpu-share, else 0.5)
  conveyor-cpu the same with to_device(gpu_augment=False, gpu_decode=False): every pixel made on the CPU
  gpu         one real batch, decoded, augmented and normalized once, held on the GPU and fed every step:
              the loop's own ceiling
and then the same three with the model under torch.compile (--modes eager,compile).

The loop (the same for every feed): torchvision resnet18 (classes = the folder's class count),
channels_last, bf16 autocast, SGD(lr 0.1, momentum 0.9, weight decay 5e-4, fused=True),
zero_grad(set_to_none=True); the step takes a normalized bf16 channels_last batch. Nothing in the loop
waits for the GPU: the CPU runs ahead as far as PyTorch lets it. The loop runs on a CUDA stream of its own
(--loop-stream side, the default, as the README's PyTorch section advises when conveyor decodes on the GPU);
--loop-stream default runs it on PyTorch's default stream, the legacy stream. There the compiled loop fed
by conveyor reached a median 81.8 % of its on-GPU rate, against 92.5 % on a side stream (six alternating
pairs, bench/results/2026-11-27-h100-run15-loop-stream/ and -run16-loop-stream-passes/).

Timing: each feed runs --warmup steps, then --steps timed steps. A CUDA event is recorded on the stream as
each step starts and after the last one ends: consecutive events give each step's period on the GPU's
timeline, waiting for data included. images_per_s = timed images / the time from the first timed step's
start to the last one's end (the overall rate: the headline, robust when a loader delivers in bursts);
images_per_s_median_step = batch / the median period. The warm-up must outlast the loaders' queues
(the DataLoader holds up to 2 x workers batches, filled while the model compiles): the default 60 does.
For the compiled model, compilation runs first, on the gpu feed's batch, and is reported as first_step_s.

The conveyor feed imports `conveyor` from --conveyor-python DIR (added to sys.path; the folder that holds
the built module); when the import fails, its variants are skipped with the reason, and the rest run.

  torch_train_from_jpeg.py --data DIR [--conveyor-python DIR] [--modes eager,compile]
                           [--feeds dataloader,conveyor,gpu,conveyor-cpu] [--steps 200] [--warmup 60] [--batch 256]
                           [--size 224] [--workers 16] [--threads 16] [--loop-stream side] [--seed 42]
                           [--json FILE]
"""
import argparse
import random
import sys
import time
import traceback

import image_lists
import run_record
import timing_rules

MODES = {"eager": "eager PyTorch", "compile": "model under torch.compile (default mode); fused SGD eager"}
FEEDS = {
    "dataloader": "DataLoader, workers, pinned memory, decode_jpeg + v2.RandomResizedCrop(antialias=False) + "
                  "RandomHorizontalFlip + ColorJitter(.4,.4,.4); uint8 copied to the GPU and normalized there",
    "conveyor": "conveyor: image_folder, shuffle(10000), repeat, decode_random_resized_crop, flip_horizontal, "
                "distort(.4,.4,.4), batch, prefetch(4), to_device(bfloat16, normalized; flip, distort and a "
                "share of the decoding on the GPU), torch.from_dlpack",
    "conveyor-cpu": "conveyor as above with to_device(gpu_augment=False, gpu_decode=False): all on the CPU",
    "gpu": "one real batch held on the GPU, normalized once (the loop's ceiling)",
}
MEAN = [123.675, 116.28, 103.53]  # ImageNet's, on the 0..255 scale of the pixels
STD = [58.395, 57.12, 57.375]
TARGETS = {"eager": {"conveyor_over_dataloader": 3.0, "conveyor_over_gpu": 0.95},
           "compile": {"conveyor_over_gpu": 0.85}}


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="ImageFolder root (ROOT/<class>/*.jpg)")
    ap.add_argument("--conveyor-python", default="", help="folder holding the conveyor module (put on sys.path)")
    ap.add_argument("--conveyor-layout", default="NCHW", choices=["NCHW", "NHWC"],
                    help="to_device's layout; NHWC is taken as an NCHW view with channels_last strides (no copy)")
    ap.add_argument("--modes", default="eager,compile", help=f"comma-separated, from {', '.join(MODES)}")
    ap.add_argument("--feeds", default="dataloader,conveyor,gpu", help=f"comma-separated, from {', '.join(FEEDS)}")
    ap.add_argument("--steps", type=int, default=200, help="timed steps per feed")
    ap.add_argument("--warmup", type=int, default=60, help="untimed steps per feed before the timed ones")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--workers", type=int, default=16, help="DataLoader worker processes")
    ap.add_argument("--threads", type=int, default=16, help="conveyor's threads")
    ap.add_argument("--worker-nice", type=int, default=None,
                    help="the nice value of conveyor's threads (PipelineOptions.worker_nice; default: the "
                         "library's, 10)")
    ap.add_argument("--prefetch", type=int, default=4, help="conveyor's prefetch depth (batches)")
    ap.add_argument("--gpu-share", type=float, default=None,
                    help="to_device's gpu_share: the share of images the GPU decodes, fixed (default: conveyor's, "
                         "which adapts unless the pipeline is deterministic)")
    ap.add_argument("--conveyor-deterministic", type=int, default=1, choices=[0, 1],
                    help="the conveyor pipeline's deterministic option (0: batches as ready and the GPU's decode "
                         "share adapting, the fastest, the batches then depend on timing; 1: the same batches "
                         "every run at a fixed share)")
    ap.add_argument("--mp-context", default=None, choices=["fork", "forkserver", "spawn"],
                    help="how the DataLoader starts its workers (default: the platform's, fork on Linux)")
    ap.add_argument("--loop-stream", default="side", choices=["side", "default"],
                    help="the CUDA stream every feed's loop runs on: side, a stream of its own (torch.cuda.Stream, "
                         "made current with torch.cuda.set_stream); default, PyTorch's default stream (the legacy "
                         "stream, which implicitly waits for and holds up work on every blocking stream of the "
                         "process)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    try:
        a.modes = timing_rules.parse_choices(a.modes, list(MODES), "mode")
        a.feeds = timing_rules.parse_choices(a.feeds, list(FEEDS), "feed")
    except ValueError as error:
        ap.error(str(error))
    if a.steps < 2 or a.warmup < 1 or a.batch < 1 or a.size < 1 or a.workers < 0 or a.threads < 1 or a.prefetch < 1:
        ap.error("--steps must be >= 2, --warmup, --batch, --size, --threads, --prefetch >= 1, --workers >= 0")
    return a


def feed_figures(marks_ms, batch, wait_s, wall_s):
    """A feed's figures from the CUDA-event marks (ms since the first timed step's start; steps + 1 marks),
    the CPU's seconds spent waiting for batches during the timed steps, and the timed steps' wall time."""
    periods = timing_rules.periods(marks_ms)
    summary = timing_rules.step_summary(periods, batch)
    seconds = (marks_ms[-1] - marks_ms[0]) / 1000.0
    return {
        "timed_steps": len(periods),
        "images_per_s": batch * len(periods) / seconds if seconds > 0 else 0.0,
        "images_per_s_median_step": summary["images_per_s"],
        "step_ms_median": summary["step_ms_median"],
        "step_ms_p95": summary["step_ms_p95"],
        "gpu_timeline_s": seconds,
        "data_wait_fraction": wait_s / wall_s if wall_s > 0 else 0.0,
    }


def ratios(by_feed, mode):
    """conveyor / DataLoader and conveyor / on-GPU for one mode, from the overall rates and from the median
    steps, each with its target (issue 14) where there is one."""
    rate = {feed: f.get("images_per_s") for feed, f in by_feed.items()}
    median = {feed: f.get("images_per_s_median_step") for feed, f in by_feed.items()}
    out = {}
    for name, peer in (("conveyor_over_dataloader", "dataloader"), ("conveyor_over_gpu", "gpu")):
        out[name] = timing_rules.ratio(rate.get("conveyor"), rate.get(peer))
        out[name + "_median_step"] = timing_rules.ratio(median.get("conveyor"), median.get(peer))
        if name in TARGETS.get(mode, {}):
            out[name + "_target"] = TARGETS[mode][name]
    out["dataloader_over_gpu"] = timing_rules.ratio(rate.get("dataloader"), rate.get("gpu"))
    return out


def import_conveyor(directory):
    """(module, None) or (None, the reason it could not be imported)."""
    if directory:
        sys.path.insert(0, directory)
    try:
        import conveyor
    except Exception as error:  # ImportError, or an error raised while the extension loads
        where = f"from --conveyor-python {directory}" if directory else "(no --conveyor-python given)"
        return None, f"cannot import conveyor {where}: {type(error).__name__}: {error}"
    return conveyor, None


def require_torch():
    try:
        import torch
        import torchvision
    except ImportError as error:
        sys.exit(f"torch_train_from_jpeg.py: cannot import torch/torchvision ({error}); run it with the Python "
                 f"that has torch (the GPU machine's python3)")
    if not torch.cuda.is_available():
        sys.exit("torch_train_from_jpeg.py: torch sees no CUDA device (torch.cuda.is_available() is False)")
    return torch, torchvision


def check_batch(torch, x, y, args, feed):
    """The step's contract: bf16, N x 3 x size x size with channels_last strides, on the GPU; int64 labels
    of the same count on the GPU. A mismatch names the feed and what it gave."""
    want = (args.batch, 3, args.size, args.size)
    problems = []
    if tuple(x.shape) != want:
        problems.append(f"images of shape {tuple(x.shape)}, expected {want}")
    if x.dtype != torch.bfloat16:
        problems.append(f"images of dtype {x.dtype}, expected torch.bfloat16")
    if x.device.type != "cuda":
        problems.append(f"images on {x.device}, expected a CUDA device")
    if not x.is_contiguous(memory_format=torch.channels_last):
        problems.append(f"images with strides {x.stride()}, expected channels_last")
    if tuple(y.shape) != (args.batch,) or y.dtype != torch.int64 or y.device.type != "cuda":
        problems.append(f"labels {tuple(y.shape)} {y.dtype} on {y.device}, expected ({args.batch},) int64 on CUDA")
    if problems:
        raise ValueError(f"the {feed} feed gave " + "; ".join(problems))


def dataloader_batches(torch, args, samples, mean, std):
    """The DataLoader feed: (bf16 channels_last normalized images, int64 labels) on the GPU, endlessly
    enough for the run (the list repeated and read as one shuffled pass, as torch_dataloader.py does, so no
    epoch boundary restarts the workers)."""
    from torch_datasets import JpegFolder

    passes = timing_rules.steps_needed_epochs(len(samples), args.batch, args.warmup + args.steps + 1)
    loader = torch.utils.data.DataLoader(
        JpegFolder(samples * passes, args.size, antialias=False), batch_size=args.batch, shuffle=True,
        num_workers=args.workers, pin_memory=True, drop_last=True, multiprocessing_context=args.mp_context)
    for x, y in loader:
        x = x.to("cuda", non_blocking=True).contiguous(memory_format=torch.channels_last)
        yield x.float().sub_(mean).div_(std).to(torch.bfloat16), y.to("cuda", non_blocking=True)


def conveyor_batches(conveyor, torch, args, on_gpu, report):
    """The conveyor feed, written against the Python API of issue 14: batches handed over on the GPU as
    normalized bfloat16, taken zero-copy with torch.from_dlpack. NCHW is made channels_last (one copy on
    the GPU, the layout the loop trains in); NHWC is viewed as NCHW with channels_last strides (no copy).
    on_gpu: to_device's defaults (GPU augmentation and hybrid decoding), else everything on the CPU. When
    the generator is closed, `report` gets what the feeder did."""
    ds = (conveyor.Dataset.image_folder(args.data)
          .shuffle(10_000, seed=args.seed).repeat()
          .map(conveyor.ops.decode_random_resized_crop(args.size))
          .map(conveyor.ops.flip_horizontal(0.5))
          .map(conveyor.ops.distort(brightness=0.4, contrast=0.4, saturation=0.4))
          .with_options(threads=args.threads, seed=args.seed, on_error="skip",
                        deterministic=bool(args.conveyor_deterministic),
                        **({} if args.worker_nice is None else {"worker_nice": args.worker_nice}))
          .batch(args.batch).prefetch(args.prefetch))
    device = f"cuda:{torch.cuda.current_device()}"
    where = dict(gpu_share=args.gpu_share) if on_gpu else dict(gpu_augment=False, gpu_decode=False)
    iterator = ds.to_device(device, dtype="bfloat16", layout=args.conveyor_layout, mean=MEAN, std=STD, **where)
    try:
        for batch in iterator:
            x, y = torch.from_dlpack(batch.images), torch.from_dlpack(batch.labels)
            if args.conveyor_layout == "NHWC":
                x = x.permute(0, 3, 1, 2)
            else:
                x = x.contiguous(memory_format=torch.channels_last)
            yield x, y.to(device, non_blocking=True).long()
    finally:
        stats, pipeline = iterator.feeder_stats(), iterator.stats()
        report.update({"decoder": stats.decoder, "gpu_decoded": stats.gpu_decoded,
                       "cpu_fallbacks": stats.cpu_fallbacks, "gpu_share_at_end": stats.gpu_share,
                       "images_decoded_by_the_pipeline": pipeline.elements_out - pipeline.deferred,
                       "decode_host_s": stats.decode_host_seconds, "decode_gpu_s": stats.decode_gpu_seconds})
        iterator.close()


def gpu_batches(torch, args, samples, mean, std):
    """The ceiling: one batch of real images (a seeded sample of the folder, augmented as the DataLoader
    does), normalized once, fed again and again."""
    from torch_datasets import JpegFolder

    chosen = random.Random(args.seed).sample(samples, args.batch) if len(samples) >= args.batch \
        else [samples[i % len(samples)] for i in range(args.batch)]
    dataset = JpegFolder(chosen, args.size, antialias=False)
    images = torch.stack([dataset[i][0] for i in range(len(chosen))])
    labels = torch.tensor([label for _, label in chosen], dtype=torch.int64)
    x = images.to("cuda").contiguous(memory_format=torch.channels_last).float().sub_(mean).div_(std)
    x, y = x.to(torch.bfloat16), labels.to("cuda")
    while True:
        yield x, y


class Loop:
    """The training loop's model, optimizer and step; `forward` is the model or its compiled form."""

    def __init__(self, torch, torchvision, args, classes, mode):
        self.torch = torch
        torch.manual_seed(args.seed)
        self.model = torchvision.models.resnet18(num_classes=classes).to("cuda").to(memory_format=torch.channels_last)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4, fused=True)
        self.forward = torch.compile(self.model) if mode == "compile" else self.model
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.loss = None

    def step(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        with self.torch.autocast("cuda", dtype=self.torch.bfloat16):
            loss = self.loss_fn(self.forward(x), y)
        loss.backward()
        self.opt.step()
        self.loss = loss


def run_feed(torch, loop, batches, args, feed):
    """--warmup steps, then --steps timed ones, from the `batches` generator (closed afterwards, which
    stops its loader)."""
    events = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps + 1)]
    start = time.perf_counter()
    first_batch_s = wait_s = 0.0
    try:
        for i in range(args.warmup + args.steps):
            asked = time.perf_counter()
            try:
                x, y = next(batches)
            except StopIteration:
                raise RuntimeError(f"the {feed} feed ended after {i} batches") from None
            got = time.perf_counter()
            if i == 0:
                first_batch_s = got - start
                check_batch(torch, x, y, args, feed)
            if i == args.warmup:
                timed_start = asked
            if i >= args.warmup:
                wait_s += got - asked
                events[i - args.warmup].record()
            loop.step(x, y)
        events[-1].record()
        torch.cuda.synchronize()
        end = time.perf_counter()
    finally:
        batches.close()
    marks = [events[0].elapsed_time(e) for e in events]
    figures = feed_figures(marks, args.batch, wait_s, end - timed_start)
    figures.update({"what": FEEDS[feed], "warmup_steps": args.warmup, "time_to_first_batch_s": first_batch_s,
                    "seconds_total": end - start, "last_loss": float(loop.loss)})
    return figures


def main():
    args = parse_args()
    try:
        samples = image_lists.list_image_folder(args.data)
    except image_lists.ListingError as error:
        sys.exit(f"torch_train_from_jpeg.py: {error}")
    classes = image_lists.class_count(samples)
    # torch first: it and conveyor's module both need libcudart.so.13 and the process keeps the first one
    # loaded, which must be torch's (it may be newer than the toolkit conveyor was built with).
    torch, torchvision = require_torch()
    conveyor, conveyor_skip = (None, None)
    if any(feed.startswith("conveyor") for feed in args.feeds):
        conveyor, conveyor_skip = import_conveyor(args.conveyor_python)
        if conveyor_skip:
            print(f"conveyor-fed variants SKIPPED: {conveyor_skip}", flush=True)
    torch.backends.cudnn.benchmark = True
    if args.loop_stream == "side":
        torch.cuda.set_stream(torch.cuda.Stream())
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1)

    results, first_step_s, failed = {}, {}, []
    for mode in args.modes:
        loop = Loop(torch, torchvision, args, classes, mode)
        # The first step carries cuDNN's algorithm search and, under torch.compile, the compilation: run
        # it on the ceiling's batch before any loader starts, so no loader's queue fills meanwhile.
        x, y = next(gpu_batches(torch, args, samples, mean, std))
        torch.cuda.synchronize()
        start = time.perf_counter()
        loop.step(x, y)
        torch.cuda.synchronize()
        first_step_s[mode] = time.perf_counter() - start
        print(f"[{mode}] first step {first_step_s[mode]:.2f} s", flush=True)
        results[mode] = {}
        for feed in args.feeds:
            if feed.startswith("conveyor") and conveyor is None:
                results[mode][feed] = {"what": FEEDS[feed], "skipped": conveyor_skip}
                continue
            if feed == "dataloader":
                batches = dataloader_batches(torch, args, samples, mean, std)
            elif feed.startswith("conveyor"):
                feeder_report = {}
                batches = conveyor_batches(conveyor, torch, args, feed == "conveyor", feeder_report)
            else:
                batches = gpu_batches(torch, args, samples, mean, std)
            try:
                figures = run_feed(torch, loop, batches, args, feed)
            except Exception as error:  # one variant's failure must not hide the others' figures
                failed.append(f"{mode}/{feed}")
                results[mode][feed] = {"what": FEEDS[feed], "error": f"{type(error).__name__}: {error}"}
                print(f"[{mode}] {feed}: FAILED: {type(error).__name__}: {error}", flush=True)
                traceback.print_exc()
                continue
            if feed.startswith("conveyor"):
                figures["feeder"] = feeder_report
            results[mode][feed] = figures
            print(f"[{mode}] {feed:>10}: {figures['images_per_s']:>8.0f} images/s overall, "
                  f"{figures['images_per_s_median_step']:>8.0f} from the median step "
                  f"({figures['step_ms_median']:.2f} ms, p95 {figures['step_ms_p95']:.2f}), data wait "
                  f"{100 * figures['data_wait_fraction']:.1f} %, first batch after "
                  f"{figures['time_to_first_batch_s']:.2f} s", flush=True)
        del loop
        torch.cuda.empty_cache()

    result = run_record.header("torch_train_from_jpeg")
    result.update({
        "data": args.data, "images": len(samples), "classes": classes, "batch": args.batch, "size": args.size,
        "workers": args.workers, "threads": args.threads, "prefetch": args.prefetch, "steps": args.steps,
        "worker_nice": args.worker_nice,  # None: the library's default
        "conveyor_deterministic": bool(args.conveyor_deterministic),
        "warmup": args.warmup, "seed": args.seed, "conveyor_layout": args.conveyor_layout,
        "gpu_share": args.gpu_share, "loop_stream": args.loop_stream,
        "loop": "torchvision resnet18, channels_last, bf16 autocast, SGD(lr, momentum 0.9, wd 5e-4, fused=True), "
                "zero_grad(set_to_none=True)",
        "timing": "images_per_s: timed images over the GPU timeline from the first timed step's start to the last "
                  "one's end; images_per_s_median_step: batch / median step period (CUDA events)",
        "modes": {m: MODES[m] for m in args.modes},
        "conveyor_python": args.conveyor_python, "conveyor_skipped": conveyor_skip,
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "torchvision": torchvision.__version__,
        "cudnn": torch.backends.cudnn.version(), "first_step_s": first_step_s,
        "results": results, "ratios": {mode: ratios(by_feed, mode) for mode, by_feed in results.items()},
    })
    print(f"{'mode':>8} {'dataloader':>11} {'conveyor':>10} {'gpu':>10} {'conv/DL':>8} {'conv/gpu':>9} "
          f"{'conveyor-cpu':>13}")
    for mode, by_feed in results.items():
        cells = [f"{by_feed[f]['images_per_s']:.0f}" if "images_per_s" in by_feed.get(f, {}) else "-"
                 for f in ("dataloader", "conveyor", "gpu", "conveyor-cpu")]
        r = result["ratios"][mode]
        shown = [f"{r[k]:.2f}" if r.get(k) else "-" for k in ("conveyor_over_dataloader", "conveyor_over_gpu")]
        print(f"{mode:>8} {cells[0]:>11} {cells[1]:>10} {cells[2]:>10} {shown[0]:>8} {shown[1]:>9} {cells[3]:>13}")
    if args.json:
        run_record.write_json(args.json, result)
    if failed:
        sys.exit(f"torch_train_from_jpeg.py: variants that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
