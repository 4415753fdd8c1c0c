"""The named training recipes of examples/train_fashion_mnist (recipes.cpp), for the PyTorch anchors: the
same fields, the same learning-rate schedule, the same --list-recipes JSON. tests/bench/test_fashion_recipes.py
checks that the two tables agree. Needs no torch."""

import json
import math

FIELDS = ("name", "summary", "epochs", "batch", "width", "peak_lr", "warmup_epochs", "momentum", "nesterov",
          "weight_decay", "label_smoothing", "crop_padding", "train_flip", "test_time_flip")


def _recipe(**fields):
    r = {"name": "", "summary": "", "epochs": 15, "batch": 256, "width": 32, "peak_lr": 0.1, "warmup_epochs": 0.0,
         "momentum": 0.9, "nesterov": True, "weight_decay": 5e-4, "label_smoothing": 0.0, "crop_padding": 4,
         "train_flip": True, "test_time_flip": False}
    r.update(fields)
    return r


def _fast(epochs):
    return _recipe(name=f"fast{epochs}", epochs=epochs, peak_lr=0.1, warmup_epochs=1.0, label_smoothing=0.1,
                   test_time_flip=True,
                   summary=f"{epochs} epochs; warm-up 1 epoch then cosine from 0.1 to 0; label smoothing 0.1; "
                           f"pad 4 + crop + flip; test-time flip")


# The default first, as in recipes.cpp.
RECIPES = [_fast(15), _fast(16), _fast(18), _fast(20),
           _recipe(name="baseline",
                   summary="15 epochs; cosine from 0.1 to 0; pad 4 + crop + flip (the recipe before issue 18)")]
DEFAULT = RECIPES[0]["name"]


def find(name):
    """The recipe of that name (a copy); ValueError naming the choices otherwise."""
    for r in RECIPES:
        if r["name"] == name:
            return dict(r)
    raise ValueError(f"unknown recipe '{name}' ({', '.join(r['name'] for r in RECIPES)})")


def warmup_steps(recipe, steps_per_epoch):
    """warmup_epochs x steps_per_epoch rounded half away from zero (C++'s llround)."""
    return int(math.floor(recipe["warmup_epochs"] * steps_per_epoch + 0.5))


def learning_rate(recipe, step, steps_per_epoch):
    """The rate of step `step` (0-based over the whole run): linear from peak / warm-up steps to the peak over
    the warm-up, then a cosine from the peak to 0 at the last step."""
    total = recipe["epochs"] * steps_per_epoch
    warm = min(warmup_steps(recipe, steps_per_epoch), total)
    if step < warm:
        return recipe["peak_lr"] * (step + 1) / warm
    return 0.5 * recipe["peak_lr"] * (1 + math.cos((step - warm) / (total - warm) * math.pi))


def recipes_json(steps_per_epoch):
    """What train_fashion_mnist --list-recipes prints, as a Python object."""
    out = []
    for r in RECIPES:
        total = r["epochs"] * steps_per_epoch
        warm = warmup_steps(r, steps_per_epoch)
        steps = [0, 1, warm - 1 if warm else 0, warm, total // 2, total - 1]
        entry = {k: r[k] for k in FIELDS}
        entry["learning_rate_at_step"] = {str(s): learning_rate(r, s, steps_per_epoch) for s in steps}
        out.append(entry)
    return {"steps_per_epoch": steps_per_epoch, "default": DEFAULT, "recipes": out}


if __name__ == "__main__":
    print(json.dumps(recipes_json(234), indent=1, sort_keys=True))
