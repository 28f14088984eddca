"""Train a small MLP on scikit-learn's bundled digits twice: with mlx.nn.Linear
and with mlx_sgemm.nn.Linear (the product on our kernels), and compare test
accuracy and time. Runs on any MLX device (on the CPU both use mx.matmul).
side_by_side() compares them in float32 and bfloat16, the same trained weights
run through both kinds of layer (the benchmark notebook's model section).

    python examples/digits_mlp.py            # full run: 60 epochs
    python examples/digits_mlp.py --quick    # a few epochs (CI)
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import NamedTuple

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import mlx_sgemm


class MLP(nn.Module):
    def __init__(self, linear=nn.Linear, hidden: int = 256):
        super().__init__()
        self.layers = [linear(64, hidden), linear(hidden, hidden), linear(hidden, 10)]

    def __call__(self, x):
        for layer in self.layers[:-1]:
            x = nn.relu(layer(x))
        return self.layers[-1](x)


def data(seed: int = 0):
    digits = load_digits()  # bundled with scikit-learn: no download
    x = (digits.data / 16.0).astype(np.float32)
    x_tr, x_te, y_tr, y_te = train_test_split(x, digits.target, test_size=0.25, random_state=seed)
    return mx.array(x_tr), mx.array(y_tr), mx.array(x_te), mx.array(y_te)


class Trained(NamedTuple):
    accuracy: float  # on the test split
    seconds: float  # training, after the first epoch
    model: MLP


def train(linear, epochs: int, seed: int = 0, dtype=mx.float32) -> Trained:
    """One run: an MLP of ``linear`` layers with ``dtype`` weights and inputs,
    trained from ``seed``."""
    mx.random.seed(seed)
    x_tr, y_tr, x_te, y_te = (x.astype(dtype) if x.dtype == mx.float32 else x for x in data(seed))
    model = MLP(linear)
    model.set_dtype(dtype)
    opt = optim.Adam(learning_rate=1e-3)
    loss_and_grad = nn.value_and_grad(model, lambda m, x, y: nn.losses.cross_entropy(m(x), y).mean())
    state = [model.state, opt.state]

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        opt.update(model, grads)
        return loss

    step = mx.compile(step, inputs=state, outputs=state)
    order = np.random.default_rng(seed)
    start = time.perf_counter()
    for epoch in range(epochs):
        if epoch == 1:  # the first epoch compiles kernels and graphs: not timed
            start = time.perf_counter()
        perm = mx.array(order.permutation(x_tr.shape[0]))
        for i in range(0, x_tr.shape[0], 64):
            idx = perm[i : i + 64]
            step(x_tr[idx], y_tr[idx])
            mx.eval(state)
    seconds = time.perf_counter() - start
    return Trained(accuracy_on(model, x_te, y_te), seconds, model)


def accuracy_on(model, x, y) -> float:
    """The share of rows of x whose predicted class is y's."""
    return mx.mean(mx.argmax(model(x), axis=1) == y).item()


def side_by_side(kernels=("tile_simdgroup", "matmul"), dtypes=(mx.float32, mx.bfloat16), epochs: int = 5,
                 seed: int = 0) -> list[dict]:
    """For each dtype, an MLP trained with mlx.nn.Linear next to our layers of
    each kernel: the same trained weights run through our layers
    (replace_linear), how far their logits are from mlx.nn.Linear's (largest
    difference over the largest logit) and how many predictions agree; and
    each layer trained from the same seed, its test accuracy."""
    rows = []
    for dtype in dtypes:
        x_te = data(seed)[2].astype(dtype)
        reference = train(nn.Linear, epochs, seed, dtype)
        logits = reference.model(x_te)
        name = str(dtype).rpartition(".")[2]
        rows.append({"dtype": name, "layer": "mlx.nn.Linear", "logits_difference": 0.0, "same_predictions": 1.0,
                     "trained_accuracy": reference.accuracy})
        for kernel in kernels:
            ours = MLP()
            ours.update(reference.model.parameters())
            mlx_sgemm.nn.replace_linear(ours, kernel=kernel)
            theirs = ours(x_te)
            difference = (mx.abs(theirs - logits).max() / mx.abs(logits).max()).item()
            agree = mx.mean(mx.argmax(theirs, axis=1) == mx.argmax(logits, axis=1)).item()
            trained = train(functools.partial(mlx_sgemm.nn.Linear, kernel=kernel), epochs, seed, dtype)
            rows.append({"dtype": name, "layer": f"mlx_sgemm.nn.Linear({kernel!r})", "logits_difference": difference,
                         "same_predictions": agree, "trained_accuracy": trained.accuracy})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 epochs (CI smoke run)")
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args(argv)
    epochs = 3 if args.quick else args.epochs
    print(f"device: {mx.default_device()}, mlx_sgemm backend: {mlx_sgemm.backend()}, epochs: {epochs}")
    results = {
        "mlx.nn.Linear": train(nn.Linear, epochs),
        "mlx_sgemm.nn.Linear": train(mlx_sgemm.nn.Linear, epochs),
    }
    for name, (acc, seconds, _) in results.items():
        print(f"{name:22s} test accuracy {100 * acc:5.1f}%   epochs 2-{epochs}: {seconds:6.2f} s")
    gap = abs(results["mlx.nn.Linear"][0] - results["mlx_sgemm.nn.Linear"][0])
    print(f"accuracy gap: {100 * gap:.1f} points")
    return 0 if args.quick or gap <= 0.01 else 1


if __name__ == "__main__":
    raise SystemExit(main())
