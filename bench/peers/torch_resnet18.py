#!/usr/bin/env python3
"""PyTorch peer of bench/train/train_step_bench: the same training step in PyTorch, in the strongest ways a
practised PyTorch user would write it, all in one run, so that conveyor is compared with the best of them.

Every variant: torchvision's ResNet-18 (or conveyor's small_resnet), channels_last, bf16 or fp16 autocast
(fp16 with a GradScaler) or plain fp32 (TF32 off), SGD(lr 0.1, momentum 0.9, weight decay 5e-4,
fused=True), zero_grad(set_to_none=True), cudnn.benchmark on, the same initial weights. Before each step a
fresh batch of random uint8 NHWC pixels and labels is drawn on the GPU (outside the timed events); the
step normalizes them on the GPU, as conveyor's step does, then forward, loss, backward, SGD.

Variants (--variants, run in the order given):
  eager                    plain PyTorch
  graph                    the whole step (normalize, forward, backward, SGD) captured as one CUDA graph
                           (torch.cuda.graph after three warm-up steps on a side stream, static input
                           tensors that each step's fresh batch is drawn into), then replayed
  compile                  normalize + forward + loss under torch.compile (default mode); the backward is
                           compiled with it (AOTAutograd); SGD is the fused kernel
  compile-max-autotune     the same with mode="max-autotune-no-cudagraphs" (Triton autotuning; slow to compile)
  compile-reduce-overhead  the same with mode="reduce-overhead" (torch.compile's own CUDA graphs)

Timing: the first step (cuDNN's algorithm search, compilation, and for `graph` the capture) and --warmup
more steps are reported apart and never timed. Then each variant runs --steps steps, each between two CUDA
events; the figure is the median step (images_per_s = batch / median); images_per_s_wall is the wall
clock over the same steps (the draw of the data included). With --rounds R, the variants are measured R
times in alternating order (A B C, C B A, ...) and each variant's steps of all rounds are pooled.

The JSON's top-level fields (images_per_s, first_step_s, step_ms_median, ...) are those of the strongest
variant (named in "strongest" and "variant"); "variants" holds every variant's figures.

  python3 torch_resnet18.py --batch 256 --precision bf16 --steps 50 --warmup 10 [--variants eager,graph,compile]
                            [--rounds 1] [--unfused-bn] [--graph] [--model resnet18|small_resnet] [--size 224]
                            [--json FILE]

--graph alone means --variants graph. --unfused-bn replaces every BatchNorm2d by separate mean, variance and normalize ops.
"""
import argparse
import sys
import time
import traceback

import run_record
import timing_rules

VARIANTS = {
    "eager": "eager PyTorch",
    "graph": "whole step (normalize, forward, backward, fused SGD) as one CUDA graph (torch.cuda.graph)",
    "compile": "torch.compile(normalize + forward + loss), default mode; fused SGD eager",
    "compile-max-autotune": 'torch.compile, mode="max-autotune-no-cudagraphs"; fused SGD eager',
    "compile-reduce-overhead": 'torch.compile, mode="reduce-overhead" (CUDA graphs by torch.compile); fused SGD eager',
}
COMPILE_MODES = {"compile": None, "compile-max-autotune": "max-autotune-no-cudagraphs",
                 "compile-reduce-overhead": "reduce-overhead"}
DEFAULT_VARIANTS = "eager,graph,compile"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet18", choices=["resnet18", "small_resnet"])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--steps", type=int, default=50, help="timed steps per variant and round")
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps after the first, per variant")
    ap.add_argument("--size", type=int, default=0, help="image side (default 224 for resnet18, 28 otherwise)")
    ap.add_argument("--unfused-bn", action="store_true")
    ap.add_argument("--graph", action="store_true", help="the graph variant only (same as --variants graph)")
    ap.add_argument("--variants", default=None, help=f"comma-separated, from {', '.join(VARIANTS)} "
                                                     f"(default {DEFAULT_VARIANTS})")
    ap.add_argument("--rounds", type=int, default=1, help="measure the variants R times in alternating order")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.graph and a.variants is not None:
        ap.error("--graph and --variants together: name the variants in --variants only")
    try:
        a.variants = timing_rules.parse_choices("graph" if a.graph else (a.variants or DEFAULT_VARIANTS),
                                                list(VARIANTS), "variant")
        a.order = timing_rules.alternating_order(a.variants, a.rounds)
    except ValueError as error:
        ap.error(str(error))
    for name in ("batch", "steps"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be at least 1")
    if a.warmup < 0 or a.size < 0:
        ap.error("--warmup and --size must not be negative")
    a.size = a.size or (224 if a.model == "resnet18" else 28)
    return a


def skip_reason(name, args):
    """Why a variant cannot run with these options, or None."""
    if args.precision == "fp16" and name in ("graph", "compile-reduce-overhead"):
        return "fp16's GradScaler reads its scale on the host every step, which a CUDA graph cannot hold"
    return None


def require_torch():
    """torch and torchvision, or the end of the program with a message saying where to run it."""
    try:
        import torch
        import torchvision
    except ImportError as error:
        sys.exit(f"torch_resnet18.py: cannot import torch/torchvision ({error}); run it with the Python that "
                 f"has torch (the GPU machine's python3)")
    if not torch.cuda.is_available():
        sys.exit("torch_resnet18.py: torch sees no CUDA device (torch.cuda.is_available() is False)")
    return torch, torchvision


class Runner:
    """One variant: its own model (same initial weights as the others), optimizer, input tensors and step."""

    def __init__(self, name, args, torch, torchvision):
        self.name, self.args, self.torch = name, args, torch
        import torch_models

        nn = torch.nn
        dev = torch.device("cuda")
        resnet18 = args.model == "resnet18"
        channels, self.classes = (3, 1000) if resnet18 else (1, 10)
        torch.manual_seed(0)  # every variant starts from the same weights
        model = (torchvision.models.resnet18(num_classes=self.classes) if resnet18
                 else torch_models.small_resnet(channels, classes=self.classes))
        if args.unfused_bn:
            torch_models.unfuse(model)
        self.model = model.to(dev).to(memory_format=torch.channels_last)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, fused=True)
        self.scaler = torch.amp.GradScaler("cuda", enabled=args.precision == "fp16")
        loss_fn = nn.CrossEntropyLoss()
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": None}[args.precision]
        mean = torch.tensor([123.675, 116.28, 103.53][:channels], device=dev).view(1, channels, 1, 1)
        std = torch.tensor([58.395, 57.12, 57.375][:channels], device=dev).view(1, channels, 1, 1)
        self.pixels = torch.empty((args.batch, args.size, args.size, channels), dtype=torch.uint8, device=dev)
        self.labels = torch.empty((args.batch,), dtype=torch.int64, device=dev)
        self.gen = torch.Generator(device=dev).manual_seed(42)
        graph = name == "graph"
        model_ = self.model

        def loss_of(pixels, labels):
            # NHWC uint8 -> NCHW view with channels_last strides; the float ops keep them.
            x = pixels.permute(0, 3, 1, 2).float().sub(mean).div(std).contiguous(memory_format=torch.channels_last)
            # The autocast cache must be off for graph capture (PyTorch's CUDA graph notes).
            with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None,
                                cache_enabled=not graph):
                return loss_fn(model_(x), labels)

        self.loss_of = loss_of
        # torch.compile's mode: None is its default; reduce-overhead needs a step mark before each call.
        self.marks_steps = COMPILE_MODES.get(name) == "reduce-overhead"
        if name in COMPILE_MODES:
            self.loss_of = torch.compile(loss_of, mode=COMPILE_MODES[name])
        self.first_step_s = self.capture_s = None
        self.replay = None
        self.step_ms, self.walls, self.rounds_rate = [], [], []
        self.first_loss = self.last_loss = None

    def draw(self):
        """A fresh batch into the input tensors (the graph reads them where they are)."""
        self.pixels.random_(0, 256, generator=self.gen)
        self.labels.random_(0, self.classes, generator=self.gen)

    def eager_step(self):
        if self.marks_steps:
            self.torch.compiler.cudagraph_mark_step_begin()
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_of(self.pixels, self.labels)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        return loss

    def run(self):
        if self.replay is not None:
            self.replay.replay()
            return self.static_loss
        return self.eager_step()

    def prepare(self):
        """First step (timed apart), capture for `graph`, then the warm-up steps."""
        torch = self.torch
        self.draw()
        torch.cuda.synchronize()
        start = time.perf_counter()
        self.first_loss = float(self.eager_step())  # carries cuDNN's search and compilation
        self.first_step_s = time.perf_counter() - start
        if self.name == "graph":
            start = time.perf_counter()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    self.eager_step()
            torch.cuda.current_stream().wait_stream(side)
            # Gradients set to None before capture are allocated from the graph's pool by the captured
            # backward, and every replay writes them afresh (PyTorch's whole-network capture example).
            self.opt.zero_grad(set_to_none=True)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.static_loss = self.loss_of(self.pixels, self.labels)
                self.static_loss.backward()
                self.opt.step()
            self.replay = graph
            torch.cuda.synchronize()
            self.capture_s = time.perf_counter() - start
        for _ in range(self.args.warmup):
            self.draw()
            self.run()
        torch.cuda.synchronize()

    def measure(self, steps):
        torch = self.torch
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(steps)]
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = None
        for begin, end in events:
            self.draw()
            begin.record()
            loss = self.run()
            end.record()
        torch.cuda.synchronize()
        self.walls.append(time.perf_counter() - start)
        times = [b.elapsed_time(e) for b, e in events]
        self.step_ms.extend(times)
        self.rounds_rate.append(timing_rules.step_summary(times, self.args.batch)["images_per_s"])
        self.last_loss = float(loss)

    def figures(self):
        out = {"what": VARIANTS[self.name], "first_step_s": self.first_step_s, "warmup_steps": self.args.warmup}
        if self.capture_s is not None:
            out["capture_s"] = self.capture_s
        out.update(timing_rules.step_summary(self.step_ms, self.args.batch))
        out["images_per_s_wall"] = self.args.batch * len(self.step_ms) / sum(self.walls)
        out["rounds_images_per_s"] = self.rounds_rate
        out["first_loss"], out["last_loss"] = self.first_loss, self.last_loss
        return out


def assemble(args, variants, environment):
    """The JSON: the run's settings, every variant's figures, and the strongest variant's at the top level
    (the fields a reader of the results folder, or a summarizer, takes)."""
    result = run_record.header("torch_resnet18")
    result.update({
        "model": args.model, "batch": args.batch, "size": args.size, "precision": args.precision,
        "fused_bn": not args.unfused_bn,
        "optimizer": "SGD(lr=0.1, momentum=0.9, weight_decay=5e-4, fused=True), zero_grad(set_to_none=True)",
        "data": "fresh random uint8 NHWC pixels and labels drawn on the GPU before every step, outside the timed events",
        "rounds": args.rounds, "order": args.order,
    })
    result.update(environment)
    result["variants"] = variants
    best = timing_rules.strongest({name: v.get("images_per_s") for name, v in variants.items()})
    result["strongest"] = best
    if best:
        top = variants[best]
        result.update({"variant": best, "graph": best == "graph", "first_step_s": top["first_step_s"],
                       "steps": top["steps"], "step_ms_median": top["step_ms_median"],
                       "step_ms_p95": top["step_ms_p95"], "images_per_s": top["images_per_s"],
                       "images_per_s_wall": top["images_per_s_wall"], "first_loss": top["first_loss"],
                       "last_loss": top["last_loss"]})
    return result


def main():
    args = parse_args()
    torch, torchvision = require_torch()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    runners, variants, failed = {}, {}, []
    for name in args.variants:
        reason = skip_reason(name, args)
        if reason:
            variants[name] = {"what": VARIANTS[name], "skipped": reason}
            print(f"{name:>24}: skipped: {reason}", flush=True)
            continue
        try:
            runner = Runner(name, args, torch, torchvision)
            runner.prepare()
            runners[name] = runner
            extra = f", capture {runner.capture_s:.2f} s" if runner.capture_s is not None else ""
            print(f"{name:>24}: first step {runner.first_step_s:.2f} s{extra}, {args.warmup} warm-up steps", flush=True)
        except Exception as error:  # one variant's failure must not hide the others' figures
            variants[name] = {"what": VARIANTS[name], "error": f"{type(error).__name__}: {error}"}
            failed.append(name)
            print(f"{name:>24}: FAILED while preparing: {type(error).__name__}: {error}", flush=True)
            traceback.print_exc()
    for round_order in args.order:
        for name in round_order:
            if name not in runners:
                continue
            try:
                runners[name].measure(args.steps)
            except Exception as error:
                variants[name] = {"what": VARIANTS[name], "error": f"{type(error).__name__}: {error}"}
                failed.append(name)
                del runners[name]
                print(f"{name:>24}: FAILED while timing: {type(error).__name__}: {error}", flush=True)
                traceback.print_exc()
    for name in args.variants:
        if name in runners:
            variants[name] = runners[name].figures()
    variants = {name: variants[name] for name in args.variants}

    environment = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "torchvision": torchvision.__version__, "cuda": torch.version.cuda,
                   "cudnn": torch.backends.cudnn.version()}
    result = assemble(args, variants, environment)
    print(f"{'variant':>24} {'images/s':>10} {'median ms':>10} {'p95 ms':>8} {'wall img/s':>11} {'first s':>8}")
    for name, v in variants.items():
        if "images_per_s" in v:
            print(f"{name:>24} {v['images_per_s']:>10.0f} {v['step_ms_median']:>10.3f} {v['step_ms_p95']:>8.3f} "
                  f"{v['images_per_s_wall']:>11.0f} {v['first_step_s']:>8.2f}")
        else:
            print(f"{name:>24} {'-':>10}  {v.get('skipped') or v.get('error')}")
    print(f"strongest: {result['strongest']}"
          + (f" at {result['images_per_s']:.0f} images/s" if result["strongest"] else " (no variant ran)"))
    if args.json:
        run_record.write_json(args.json, result)
    if failed or not result["strongest"]:
        sys.exit(f"torch_resnet18.py: variants that failed: {', '.join(failed) or 'none ran'}")


if __name__ == "__main__":
    main()
