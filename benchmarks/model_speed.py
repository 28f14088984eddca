"""mlx-lm models with ``mlx_sgemm.nn.replace_linear`` against the unmodified model.

    python benchmarks/model_speed.py --csv benchmarks/results/models-DATE-DEVICE.csv

Llama with the shapes of Llama 2 7B's layers (4 of them by default; random
weights, mlx_sgemm.bench.models), in every configuration below, each in a
process of its own (MLX reads MLX_ENABLE_TF32 once, at import):

* ``prefill``: one forward pass over a prompt of ``--prompt`` tokens into a
  fresh KV cache; ``decode``: ``--steps`` greedy steps through the cache after
  such a prompt, each evaluated before the next (the time per step); both for
  ``--batch`` sequences at once (the model's name says the batch);
  ``generate``: ``--steps`` tokens after such a prompt as ``mlx_lm.generate``
  makes them (mlx-lm's ``generate_step``: each step's graph built while the
  step before runs, ``mx.async_eval``, on mlx-lm's generation stream; the time
  per token). Each timed for the swapped model and the unmodified one (the
  same weights), in alternating rounds, the median round reported; ratio =
  MLX's time / ours.
  float32 runs compare at equal precision: ``precision="float32"`` layers
  against MLX with ``MLX_ENABLE_TF32=0`` (cuBLAS SGEMM), ``precision="tf32"``
  layers against MLX's default (TF32 cuBLAS); bfloat16 layers against MLX's
  bfloat16 model.
* ``first_forward_*`` / ``first_decode_*``: a process's first prompt and
  first decode step, each model alone in its process: ``new_process`` with an
  empty PTX cache (``MLX_PTX_CACHE_DIR``, where MLX keeps the kernels it
  compiled), ``cached`` in a second process that finds it filled.

Needs MLX's CUDA backend and mlx-lm.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CONFIGS = [("float32", "float32"), ("float32", "tf32"), ("bfloat16", "float32")]  # (dtype, precision)
# What --configs names each by: the model's precision, float32's two or bfloat16.
CONFIG_NAMES = {"float32": CONFIGS[0], "tf32": CONFIGS[1], "bfloat16": CONFIGS[2]}
COLUMNS = ["date", "device", "mlx", "commit", "model", "dtype", "precision", "phase", "tokens", "ours_s", "mlx_s",
           "ratio"]


def _model_pair(args, dtype_name: str, precision: str):
    """The unmodified model and a swapped one with the same weights (the same seed)."""
    import mlx.core as mx

    import mlx_sgemm
    from mlx_sgemm.bench import models

    dtype = getattr(mx, dtype_name)
    theirs, ours = (models.build(args.architecture, dtype, size=args.size, layers=args.layers) for _ in range(2))
    mlx_sgemm.nn.replace_linear(ours, precision=precision)
    return theirs, ours


def _speed(args) -> list[dict]:
    """Prefill and steady decode, ours and MLX's, alternating rounds."""
    import mlx.core as mx

    from mlx_sgemm.bench import models

    rows = []
    theirs, ours = _model_pair(args, args.dtype, args.precision)
    tokens = models.prompt(theirs, batch=args.batch, length=args.prompt)

    def prefill(model):
        def seconds():
            start = time.perf_counter()
            mx.eval(model(tokens, cache=models.new_cache(model)))
            return time.perf_counter() - start

        return seconds

    def decode(model):
        step = models.decode_step(model, tokens)

        def seconds():  # a step's, in a run of --steps
            start = time.perf_counter()
            for _ in range(args.steps):
                mx.eval(step())
            return (time.perf_counter() - start) / args.steps

        return seconds

    def generate(model):
        generate_step = importlib.import_module("mlx_lm.generate").generate_step

        def seconds():  # a token's, of --steps after the prompt's first
            made = generate_step(tokens[0], model, max_tokens=args.steps + 1)
            next(made)  # the prompt through the model, its first token out
            start = time.perf_counter()
            for _ in made:
                pass
            return (time.perf_counter() - start) / args.steps

        return seconds

    phases = [("prefill", prefill, args.prompt * args.batch), ("decode", decode, args.batch)]
    if args.batch == 1:  # mlx-lm's generate_step makes one sequence
        phases.append(("generate", generate, 1))
    for phase, make, count in phases:
        times = {"ours": [], "mlx": []}
        fns = {"ours": make(ours), "mlx": make(theirs)}
        for fn in fns.values():  # warm-up: compiles, allocates
            fn()
        for _ in range(args.rounds):
            for side, fn in fns.items():
                times[side].append(statistics.median(fn() for _ in range(args.repeats)))
        ours_s, mlx_s = statistics.median(times["ours"]), statistics.median(times["mlx"])
        rows.append(dict(phase=phase, tokens=count, ours_s=ours_s, mlx_s=mlx_s))
        print(f"{args.dtype} {args.precision} {phase}: ours {ours_s * 1e3:.2f} ms, MLX {mlx_s * 1e3:.2f} ms, "
              f"{mlx_s / ours_s:.2f}x", flush=True)
    return rows


def _first_call(args) -> list[dict]:
    """This process's first prompt and first decode step, one model alone."""
    import mlx.core as mx

    import mlx_sgemm
    from mlx_sgemm.bench import models
    from mlx_sgemm.build import registry

    model = models.build(args.architecture, getattr(mx, args.dtype), size=args.size, layers=args.layers)
    if args.side == "ours":
        mlx_sgemm.nn.replace_linear(model, precision=args.precision)
    tokens = models.prompt(model, batch=1, length=args.prompt)
    cache = models.new_cache(model)
    start = time.perf_counter()
    logits = model(tokens, cache=cache)
    mx.eval(logits)
    forward = time.perf_counter() - start
    start = time.perf_counter()
    mx.eval(model(mx.argmax(logits[:, -1:, :], axis=-1), cache=cache))
    step = time.perf_counter() - start
    kernels = registry.kernel.cache_info().currsize
    print(f"{args.side} first forward {forward:.3f} s, first decode step {step:.3f} s, {kernels} kernels", flush=True)
    return [dict(phase="first_forward", tokens=args.prompt, seconds=forward),
            dict(phase="first_decode", tokens=1, seconds=step, kernels=kernels)]


def _child(args) -> int:
    os.environ["MLX_ENABLE_TF32"] = "1" if args.precision == "tf32" else "0"
    rows = _first_call(args) if args.side else _speed(args)
    print("RESULT " + json.dumps(rows), flush=True)
    return 0


def _in_child(args, extra: list[str], env: dict | None = None) -> list[dict]:
    command = [sys.executable, __file__, "--child", "--architecture", args.architecture, "--size", args.size,
               "--layers", str(args.layers), "--batch", str(args.batch),
               "--prompt", str(args.prompt), "--steps", str(args.steps), "--rounds", str(args.rounds),
               "--repeats", str(args.repeats), *extra]
    done = subprocess.run(command, env=dict(os.environ, **(env or {})), capture_output=True, text=True, timeout=1200)
    sys.stdout.write(done.stdout)
    if done.returncode:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"{' '.join(extra)} failed (exit {done.returncode})")
    return json.loads(done.stdout.rsplit("RESULT ", 1)[1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--architecture", default="llama", choices=("llama", "qwen3"))
    parser.add_argument("--size", default="7b", choices=("7b", "small"),
                        help="the layers' shapes: Llama 2 7B's, or a small model's (mlx_sgemm.bench.models)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--prompt", type=int, default=512, help="prompt tokens (prefill)")
    parser.add_argument("--batch", type=int, default=1,
                        help="sequences at once (prefill and decode; generate, mlx-lm's, is timed for one alone)")
    parser.add_argument("--steps", type=int, default=32, help="decode steps timed together")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of ours and MLX's")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per round (median)")
    parser.add_argument("--csv", default=None, help="append the rows to this CSV")
    parser.add_argument("--configs", nargs="+", choices=list(CONFIG_NAMES), default=list(CONFIG_NAMES),
                        help="which models: float32 layers, TF32 layers, bfloat16 (default: all)")
    parser.add_argument("--no-first-calls", action="store_true",
                        help="skip the first-call timings (a process each, the longest part)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dtype", default="float32", help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="float32", help=argparse.SUPPRESS)
    parser.add_argument("--side", default=None, choices=("ours", "mlx"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args)

    import mlx.core as mx

    from mlx_sgemm.bench import measure
    from mlx_sgemm.dispatch import device

    if device.backend() != device.CUDA:
        print("needs MLX's CUDA backend: nothing to time here")
        return 1
    common = dict(date=datetime.date.today().isoformat(), device=device.name(), mlx=mx.__version__,
                  commit=measure.source_commit(),
                  model=f"{args.architecture} {args.layers} layers of {'7B' if args.size == '7b' else 'small'} shape"
                  + (f", batch of {args.batch}" if args.batch > 1 else ""))
    rows = []
    for dtype, precision in (CONFIG_NAMES[name] for name in args.configs):
        config = ["--dtype", dtype, "--precision", precision]
        for row in _in_child(args, config):
            rows.append(dict(common, dtype=dtype, precision=precision, **row, ratio=row["mlx_s"] / row["ours_s"]))
        if args.no_first_calls:
            continue
        with tempfile.TemporaryDirectory() as ptx:
            first = {}
            for cache in ("new_process", "cached"):
                for side in ("ours", "mlx"):
                    for row in _in_child(args, [*config, "--side", side], env={"MLX_PTX_CACHE_DIR": os.path.join(ptx, side)}):
                        first[(row["phase"], cache, side)] = row
            for phase in ("first_forward", "first_decode"):
                for cache in ("new_process", "cached"):
                    ours_s, mlx_s = first[(phase, cache, "ours")]["seconds"], first[(phase, cache, "mlx")]["seconds"]
                    rows.append(dict(common, dtype=dtype, precision=precision, phase=f"{phase}_{cache}",
                                     tokens=first[(phase, cache, "ours")]["tokens"], ours_s=ours_s, mlx_s=mlx_s,
                                     ratio=mlx_s / ours_s))
    if args.csv:
        new = not os.path.exists(args.csv)
        with open(args.csv, "a", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
            if new:
                writer.writeheader()
            for row in rows:
                writer.writerow({k: f"{v:.6g}" if isinstance(v, float) else v for k, v in row.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
