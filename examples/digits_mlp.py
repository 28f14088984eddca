"""Train a small MLP on scikit-learn's bundled digits twice: with mlx.nn.Linear
and with mlx_sgemm.nn.Linear (the product on our kernels), and compare test
accuracy and time. Runs on any MLX device (on the CPU both use mx.matmul).

    python examples/digits_mlp.py            # full run: 60 epochs
    python examples/digits_mlp.py --quick    # a few epochs (CI)
"""

from __future__ import annotations

import argparse
import time

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


def train(linear, epochs: int, seed: int = 0) -> tuple[float, float]:
    """Test accuracy and training seconds (after the first epoch) of one run."""
    mx.random.seed(seed)
    x_tr, y_tr, x_te, y_te = data(seed)
    model = MLP(linear)
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
    accuracy = mx.mean(mx.argmax(model(x_te), axis=1) == y_te).item()
    return accuracy, seconds


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
    for name, (acc, seconds) in results.items():
        print(f"{name:22s} test accuracy {100 * acc:5.1f}%   epochs 2-{epochs}: {seconds:6.2f} s")
    gap = abs(results["mlx.nn.Linear"][0] - results["mlx_sgemm.nn.Linear"][0])
    print(f"accuracy gap: {100 * gap:.1f} points")
    return 0 if args.quick or gap <= 0.01 else 1


if __name__ == "__main__":
    raise SystemExit(main())
