#!/usr/bin/env python3
"""PyTorch anchors for examples/train_fashion_mnist: the same small ResNet trained with the same recipe,
(1) from data held in GPU memory and (2) from the same JPEG files through a DataLoader, in one call.

The recipes are conveyor's, by name (--recipe; the table is fashion_recipes.py, which a test keeps equal
to examples/train_fashion_mnist/recipes.cpp; --list-recipes prints it). Every recipe shares:
  model      small_resnet: 3x3 stem, stages of width, 2x, 4x channels, 2 BasicBlocks each, global average
             pool, linear; convolutions Kaiming-normal (fan-out), linear U(+-1/sqrt(fan_in)); channels_last
  data       the JPEGs that data/fashion_mnist makes (DIR/train.txt, DIR/test.txt), decoded as grayscale;
             pixels normalized as (p - 72.94) / 90.02
  optimizer  SGD with the recipe's momentum, Nesterov and weight decay on every parameter, the training
             remainder dropped, the rate set before each step (linear warm-up, then a cosine to 0)
  precision  bf16 autocast, fp32 weights
and sets: epochs, batch, width, peak rate and warm-up, label smoothing (F.cross_entropy's), the crop's
padding and the training flip, and test-time flip (evaluation averages the logits of each image and of its
mirror image). The whole test split (10,000) is evaluated in inference mode after the last epoch, and
after every N-th with --eval-every N, as train_fashion_mnist does.
Feeds (--feeds):
  gpu         every image decoded once (before the clock starts; load_s) and held on the GPU as uint8; each
              epoch a permutation on the GPU, batches gathered there, crop and flip drawn on the GPU
  dataloader  torch.utils.data.DataLoader over the JPEG files: 16 workers (--workers), pinned memory,
              persistent workers, torchvision.io.decode_jpeg + v2.RandomCrop(28, padding=4) +
              v2.RandomHorizontalFlip in the workers; the test split read from its files every epoch
Implementations (--impl):
  graph    (default; what a practised user does for a launch-bound model this small) the whole training
           step - for the gpu feed also the crop and flip, then normalize, forward, loss, backward, fused
           SGD with the learning rate read from a device tensor - captured once as a CUDA graph and
           replayed; the evaluation forward is a second graph
  eager    the same steps without graphs
  compile  torch.compile(model) (default mode), the rest eager
Timing: seconds_training_and_evaluation runs from the first epoch's start to the last evaluation's end, as
train_fashion_mnist's does; warm-up (cuDNN's algorithm search, graph capture or compilation, on a few
throwaway steps whose effect on weights, batch-norm statistics and momentum is undone) is before it and
reported as warmup_s, as conveyor's Trainer::warmup is. The DataLoader's worker start is inside the clock.

  torch_fashion_mnist.py --data DIR [--recipe NAME[,NAME...]] [--feeds gpu,dataloader] [--impl graph]
                         [--seeds 1] [--eval-every 0] [--workers 16] [--json FILE]
                         [--epochs E] [--batch B] [--lr PEAK] [--width W]   (override the recipes)
  torch_fashion_mnist.py --list-recipes

--seeds 1,2,3 trains each recipe, feed and implementation once per seed; the summary gives the median.
"""
import argparse
import json
import sys
import time
import traceback

import fashion_recipes
import image_lists
import run_record
import timing_rules

FEEDS = {
    "gpu": "every image decoded once and held in GPU memory; permutation, crop and flip on the GPU",
    "dataloader": "DataLoader over the JPEG files: workers, pinned memory, persistent workers, decode_jpeg + "
                  "v2.RandomCrop(28, padding=4) + v2.RandomHorizontalFlip in the workers",
}
IMPLS = {
    "graph": "whole training step as one CUDA graph (torch.cuda.graph), evaluation forward as another",
    "eager": "eager PyTorch",
    "compile": "torch.compile(model), default mode; loss, backward and fused SGD around it eager",
}
MEAN, STD = 72.94, 90.02  # Fashion-MNIST's pixel mean and standard deviation on the 0..255 scale
SIDE = 28
WARMUP_STEPS = 3
OVERRIDES = ("epochs", "batch", "lr", "width")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list-recipes", action="store_true", help="print the recipe table as JSON and exit")
    ap.add_argument("--data", help="folder with train.txt and test.txt (data/fashion_mnist makes it)")
    ap.add_argument("--recipe", default=fashion_recipes.DEFAULT,
                    help=f"comma-separated, from {', '.join(r['name'] for r in fashion_recipes.RECIPES)}")
    ap.add_argument("--feeds", default="gpu,dataloader", help=f"comma-separated, from {', '.join(FEEDS)}")
    ap.add_argument("--impl", default="graph", help=f"comma-separated, from {', '.join(IMPLS)}")
    ap.add_argument("--seeds", default="1", help="comma-separated seeds, e.g. 1,2,3")
    ap.add_argument("--eval-every", type=int, default=0,
                    help="also evaluate after every N-th epoch (default 0: after the last one only)")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--epochs", type=int, help="override every recipe's epochs")
    ap.add_argument("--batch", type=int, help="override every recipe's batch")
    ap.add_argument("--lr", type=float, help="override every recipe's peak learning rate")
    ap.add_argument("--width", type=int, help="override every recipe's width")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    if a.list_recipes:
        return a
    if not a.data:
        ap.error("--data is required")
    try:
        a.feeds = timing_rules.parse_choices(a.feeds, list(FEEDS), "feed")
        a.impl = timing_rules.parse_choices(a.impl, list(IMPLS), "implementation")
        a.seeds = [int(s) for s in a.seeds.split(",") if s.strip()]
        a.recipes = [fashion_recipes.find(name) for name in timing_rules.parse_choices(
            a.recipe, [r["name"] for r in fashion_recipes.RECIPES], "recipe")]
    except ValueError as error:
        ap.error(str(error))
    if not a.seeds:
        ap.error("--seeds: at least one seed")
    for name in ("epochs", "batch", "width"):
        if getattr(a, name) is not None and getattr(a, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if a.lr is not None and not a.lr > 0:
        ap.error("--lr must be > 0")
    if a.workers < 0 or a.eval_every < 0:
        ap.error("--workers and --eval-every must be >= 0")
    for r in a.recipes:
        for name, field in (("epochs", "epochs"), ("batch", "batch"), ("lr", "peak_lr"), ("width", "width")):
            if getattr(a, name) is not None:
                r[field] = getattr(a, name)
    return a


def summarize(runs):
    """Per recipe, feed and implementation: the median final accuracy and seconds over the seeds."""
    groups = {}
    for run in runs:
        if "final_test_accuracy" in run:
            groups.setdefault(f"{run['recipe']}/{run['feed']}/{run['impl']}", []).append(run)
    return {key: {"seeds": [r["seed"] for r in rs],
                  "median_final_test_accuracy": timing_rules.median([r["final_test_accuracy"] for r in rs]),
                  "median_seconds_training_and_evaluation":
                      timing_rules.median([r["seconds_training_and_evaluation"] for r in rs])}
            for key, rs in groups.items()}


def require_torch():
    try:
        import torch
        import torchvision
    except ImportError as error:
        sys.exit(f"torch_fashion_mnist.py: cannot import torch/torchvision ({error}); run it with the Python that "
                 f"has torch (the GPU machine's python3)")
    if not torch.cuda.is_available():
        sys.exit("torch_fashion_mnist.py: torch sees no CUDA device (torch.cuda.is_available() is False)")
    return torch, torchvision


def gray_jpegs(samples, augment, recipe=None):
    from torch_datasets import GrayJpegs

    if recipe is None:
        return GrayJpegs(samples, SIDE, 0, False)
    return GrayJpegs(samples, SIDE, recipe["crop_padding"], augment, flip=recipe["train_flip"])


def load_to_gpu(torch, samples, workers, device):
    """Every listed image decoded (by `workers` processes) into one uint8 N x 1 x 28 x 28 tensor on the GPU,
    with its labels."""
    loader = torch.utils.data.DataLoader(gray_jpegs(samples, augment=False), batch_size=1024,
                                         num_workers=workers, shuffle=False)
    images, labels = [], []
    for x, y in loader:
        images.append(x)
        labels.append(y)
    return torch.cat(images).to(device), torch.cat(labels).to(device)


class Training:
    """One model, optimizer and implementation, fed through static device tensors (train_x/train_y and
    eval_x): every feed copies its batch into them, and a step either replays a graph or runs eagerly."""

    def __init__(self, torch, recipe, impl, seed, augment_on_gpu):
        import torch_models

        self.torch, self.recipe, self.impl, self.augment_on_gpu = torch, recipe, impl, augment_on_gpu
        F = torch.nn.functional
        dev = torch.device("cuda")
        torch.manual_seed(seed)
        self.model = torch_models.small_resnet(1, recipe["width"], 2, 10).to(dev).to(memory_format=torch.channels_last)
        self.lr = torch.tensor(recipe["peak_lr"], dtype=torch.float32, device=dev)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=self.lr, momentum=recipe["momentum"],
                                   weight_decay=recipe["weight_decay"], nesterov=recipe["nesterov"], fused=True)
        b = recipe["batch"]
        pad, smoothing = recipe["crop_padding"], recipe["label_smoothing"]
        self.train_x = torch.zeros((b, 1, SIDE, SIDE), dtype=torch.uint8, device=dev)
        self.train_y = torch.zeros((b,), dtype=torch.int64, device=dev)
        self.eval_x = torch.zeros((b, 1, SIDE, SIDE), dtype=torch.uint8, device=dev)
        self.loss_sum = torch.zeros((), dtype=torch.float32, device=dev)
        self.correct = torch.zeros((), dtype=torch.int64, device=dev)
        arange = torch.arange(SIDE, device=dev)
        batch_index = torch.arange(b, device=dev).view(b, 1, 1)
        forward = torch.compile(self.model) if impl == "compile" else self.model
        graphed = impl == "graph"

        def normalize(x):
            return x.float().sub(MEAN).div(STD).contiguous(memory_format=torch.channels_last)

        def crop_and_flip(x):
            # Pad with zeros, take a 28x28 window at a random offset 0..2 pad each way, mirror it with p 0.5
            # (when the recipe flips): one gather whose row and column indices carry the offsets and the flip.
            padded = F.pad(x[:, 0], (pad, pad, pad, pad))
            oy = torch.randint(0, 2 * pad + 1, (b, 1, 1), device=dev)
            ox = torch.randint(0, 2 * pad + 1, (b, 1, 1), device=dev)
            flip = (torch.rand((b, 1, 1), device=dev) < 0.5) & recipe["train_flip"]
            rows = oy + arange.view(1, SIDE, 1)
            cols = torch.where(flip, ox + (SIDE - 1) - arange.view(1, 1, SIDE), ox + arange.view(1, 1, SIDE))
            return padded[batch_index, rows, cols].unsqueeze(1)

        def train_body():
            x = crop_and_flip(self.train_x) if augment_on_gpu else self.train_x
            with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=not graphed):
                logits = forward(normalize(x))
                loss = F.cross_entropy(logits, self.train_y, label_smoothing=smoothing)
            loss.backward()
            self.opt.step()
            with torch.no_grad():
                self.loss_sum.add_(loss.detach().float() * b)
                self.correct.add_((logits.argmax(1) == self.train_y).sum())

        def eval_body():
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=not graphed):
                x = normalize(self.eval_x)
                logits = forward(x).float()
                if recipe["test_time_flip"]:  # the mean of the logits of each image and of its mirror image
                    logits = 0.5 * (logits + forward(x.flip(3)).float())
                return logits.argmax(1)

        self.train_body, self.eval_body = train_body, eval_body
        self.train_graph = self.eval_graph = None

    def step(self):
        if self.train_graph is not None:
            self.train_graph.replay()
        else:
            self.opt.zero_grad(set_to_none=True)
            self.train_body()

    def predict(self):
        """Predicted classes of eval_x (all of it; the caller counts the rows that hold images)."""
        if self.eval_graph is not None:
            self.eval_graph.replay()
            return self.eval_pred
        self.model.eval()
        pred = self.eval_body()
        self.model.train()
        return pred

    def warmup(self):
        """cuDNN's search, compilation or capture on WARMUP_STEPS throwaway steps (on whatever the static
        tensors hold), then weights, statistics and momentum put back as they were: training starts from
        the seed's initial model as if the warm-up had not happened. Returns the seconds it took."""
        torch = self.torch
        start = time.perf_counter()
        saved = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP_STEPS):
                self.opt.zero_grad(set_to_none=True)
                self.train_body()
            self.model.eval()
            for _ in range(2):
                self.eval_body()
            self.model.train()
        torch.cuda.current_stream().wait_stream(side)
        if self.impl == "graph":
            # Gradients set to None before capture are allocated from the graph's pool by the captured
            # backward, and every replay writes them afresh (PyTorch's whole-network capture example).
            self.opt.zero_grad(set_to_none=True)
            self.train_graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.train_graph):
                self.train_body()
            self.model.eval()
            self.eval_graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.eval_graph):
                self.eval_pred = self.eval_body()
            self.model.train()
        # load_state_dict copies in place, so the graphs keep reading the same tensors. A zero momentum
        # buffer makes the next step exactly a first step (buffer = gradient), as a fresh optimizer would.
        self.model.load_state_dict(saved)
        for state in self.opt.state.values():
            state["momentum_buffer"].zero_()
        self.loss_sum.zero_()
        self.correct.zero_()
        torch.cuda.synchronize()
        return time.perf_counter() - start


def train(torch, args, recipe, feed, impl, seed, data):
    """One training run; returns its record (accuracy per epoch, seconds, warm-up)."""
    b = recipe["batch"]
    training = Training(torch, recipe, impl, seed, augment_on_gpu=feed == "gpu")
    if feed == "gpu":
        train_images, train_labels, test_images, test_labels = data["gpu"]
        train_count = train_images.shape[0]
        generator = torch.Generator(device="cuda").manual_seed(seed)
        training.train_x.copy_(train_images[:b])  # warm-up on real images
    else:
        train_samples, test_samples = data["files"]
        train_count = len(train_samples)
    steps_per_epoch = train_count // b
    if steps_per_epoch == 0:
        raise ValueError(f"--batch {b} is larger than the training set ({train_count})")
    warmup_s = training.warmup()

    if feed == "dataloader":
        loader_options = dict(batch_size=b, num_workers=args.workers, pin_memory=True,
                              persistent_workers=args.workers > 0)
        torch.manual_seed(seed)
        train_loader = torch.utils.data.DataLoader(gray_jpegs(train_samples, augment=True, recipe=recipe),
                                                   shuffle=True, drop_last=True, **loader_options)
        test_loader = torch.utils.data.DataLoader(gray_jpegs(test_samples, augment=False), shuffle=False,
                                                  **loader_options)

    def test_batches():
        if feed == "gpu":
            for i in range(0, test_images.shape[0], b):
                yield test_images[i:i + b], test_labels[i:i + b]
        else:
            for x, y in test_loader:
                yield x, y

    epochs, final, tag = [], 0.0, f"[{recipe['name']}, {feed}, {impl}, seed {seed}]"
    print(f"{'epoch':>5} {'loss':>8} {'train acc':>9} {'test acc':>9} {'images/s':>10} {'s':>7}  {tag}", flush=True)
    torch.cuda.synchronize()
    run_start = time.perf_counter()
    for epoch in range(recipe["epochs"]):
        epoch_start = time.perf_counter()
        if feed == "gpu":
            order = torch.randperm(train_count, device="cuda", generator=generator)
            batches = (order[s * b:(s + 1) * b] for s in range(steps_per_epoch))
        else:
            batches = iter(train_loader)
        step = 0
        for item in batches:
            if feed == "gpu":
                torch.index_select(train_images, 0, item, out=training.train_x)
                torch.index_select(train_labels, 0, item, out=training.train_y)
            else:
                x, y = item
                training.train_x.copy_(x, non_blocking=True)
                training.train_y.copy_(y, non_blocking=True)
            training.lr.fill_(fashion_recipes.learning_rate(recipe, epoch * steps_per_epoch + step, steps_per_epoch))
            training.step()
            step += 1
        if step != steps_per_epoch:
            raise RuntimeError(f"epoch {epoch + 1} had {step} steps, expected {steps_per_epoch}")
        loss = training.loss_sum.item() / (step * b)
        train_accuracy = training.correct.item() / (step * b)
        training.loss_sum.zero_()
        training.correct.zero_()
        train_s = time.perf_counter() - epoch_start

        test_accuracy = None
        if epoch + 1 == recipe["epochs"] or (args.eval_every and (epoch + 1) % args.eval_every == 0):
            correct = torch.zeros((), dtype=torch.int64, device="cuda")
            seen = 0
            for x, y in test_batches():
                n = x.shape[0]
                training.eval_x[:n].copy_(x, non_blocking=True)
                y = y.to("cuda", non_blocking=True)
                correct += (training.predict()[:n] == y).sum()
                seen += n
            test_accuracy = final = correct.item() / seen
        seconds = time.perf_counter() - run_start
        epochs.append({"epoch": epoch + 1, "loss": loss, "train_accuracy": train_accuracy, "test_accuracy": test_accuracy,
                       "images_per_s": step * b / train_s, "seconds": seconds})
        shown = f"{100 * test_accuracy:>8.2f}%" if test_accuracy is not None else f"{'-':>9}"
        print(f"{epoch + 1:>5} {loss:>8.4f} {100 * train_accuracy:>8.2f}% {shown} "
              f"{step * b / train_s:>10.0f} {seconds:>7.2f}", flush=True)
    total = time.perf_counter() - run_start
    print(f"final test accuracy {100 * final:.2f}% after {recipe['epochs']} epochs, {total:.2f} s of training and "
          f"evaluation (warm-up {warmup_s:.2f} s) {tag}", flush=True)
    return {"recipe": recipe["name"], "feed": feed, "impl": impl, "seed": seed, "final_test_accuracy": final,
            "seconds_training_and_evaluation": total, "warmup_s": warmup_s, "epochs": epochs}


def main():
    args = parse_args()
    if args.list_recipes:
        print(json.dumps(fashion_recipes.recipes_json(234), indent=1, sort_keys=True))
        return
    try:
        train_samples = image_lists.read_list_file(f"{args.data}/train.txt")
        test_samples = image_lists.read_list_file(f"{args.data}/test.txt")
    except image_lists.ListingError as error:
        sys.exit(f"torch_fashion_mnist.py: {error} (data/fashion_mnist/make_fashion_mnist.sh makes the set)")
    torch, torchvision = require_torch()
    torch.backends.cudnn.benchmark = True
    data = {"files": (train_samples, test_samples)}
    load_s = None
    if "gpu" in args.feeds:
        start = time.perf_counter()
        data["gpu"] = (*load_to_gpu(torch, train_samples, args.workers, "cuda"),
                       *load_to_gpu(torch, test_samples, args.workers, "cuda"))
        torch.cuda.synchronize()
        load_s = time.perf_counter() - start
        print(f"decoded {len(train_samples) + len(test_samples)} JPEGs into GPU memory in {load_s:.2f} s", flush=True)

    runs, failed = [], []
    for recipe in args.recipes:
        for seed in args.seeds:
            for feed in args.feeds:
                for impl in args.impl:
                    try:
                        runs.append(train(torch, args, recipe, feed, impl, seed, data))
                    except Exception as error:  # one run's failure must not hide the others' figures
                        failed.append(f"{recipe['name']}/{feed}/{impl}/seed {seed}")
                        runs.append({"recipe": recipe["name"], "feed": feed, "impl": impl, "seed": seed,
                                     "error": f"{type(error).__name__}: {error}"})
                        print(f"[{recipe['name']}, {feed}, {impl}, seed {seed}] FAILED: {type(error).__name__}: "
                              f"{error}", flush=True)
                        traceback.print_exc()

    result = run_record.header("torch_fashion_mnist")
    result.update({
        "data": args.data, "train_images": len(train_samples), "test_images": len(test_samples),
        "workers": args.workers, "eval_every": args.eval_every,
        "overrides": {name: getattr(args, name) for name in OVERRIDES},
        "recipes": args.recipes,
        "common": "small_resnet, SGD, bf16 autocast, channels_last, training remainder dropped, test split after "
                  "the last epoch (and every --eval-every epochs)",
        "feeds": {f: FEEDS[f] for f in args.feeds}, "impls": {i: IMPLS[i] for i in args.impl},
        "load_to_gpu_s": load_s, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
        "torchvision": torchvision.__version__, "cudnn": torch.backends.cudnn.version(),
        "runs": runs, "summary": summarize(runs),
    })
    for key, figures in result["summary"].items():
        print(f"{key}: median final test accuracy {100 * figures['median_final_test_accuracy']:.2f}% in "
              f"{figures['median_seconds_training_and_evaluation']:.1f} s (seeds {figures['seeds']})")
    if args.json:
        run_record.write_json(args.json, result)
    if failed:
        sys.exit(f"torch_fashion_mnist.py: runs that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
