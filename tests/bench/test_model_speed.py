"""benchmarks/model_speed.py's measurements, run on the CPU on a small model
and a few tokens: what it times on a GPU (the same code) stays runnable.
Speed is not checked here."""

import types

import pytest

pytest.importorskip("mlx_lm", reason="mlx-lm (the test extra) builds the model")

from . import benchmark_scripts


@pytest.fixture(scope="module")
def model_speed():
    return benchmark_scripts.load("model_speed")


def tiny(**kwargs):
    return types.SimpleNamespace(architecture="llama", size="small", layers=1, dtype="float32", precision="float32",
                                 prompt=4, steps=2, rounds=1, repeats=1, side=None, **{"batch": 1, **kwargs})


def test_prefill_decode_and_generate_rows(model_speed):
    rows = model_speed._speed(tiny())
    assert [r["phase"] for r in rows] == ["prefill", "decode", "generate"]
    assert all(r["ours_s"] > 0 and r["mlx_s"] > 0 for r in rows)


def test_a_batch_of_sequences_times_prefill_and_decode(model_speed):
    """--batch: prefill and decode of 2 sequences at once (their tokens
    counted); generate, mlx-lm's, makes one sequence and is not timed."""
    rows = model_speed._speed(tiny(batch=2))
    assert [(r["phase"], r["tokens"]) for r in rows] == [("prefill", 8), ("decode", 2)]


def test_first_calls_of_a_process(model_speed):
    args = tiny()
    args.side = "ours"
    rows = model_speed._first_call(args)
    assert [r["phase"] for r in rows] == ["first_forward", "first_decode"]
    assert all(r["seconds"] > 0 for r in rows)


def test_without_cuda_it_says_so(model_speed, capsys, monkeypatch):
    from mlx_sgemm.dispatch import device

    # A machine without CUDA, also where the suite runs on a GPU (there main
    # would time the models).
    monkeypatch.setattr(device, "backend", lambda: device.CPU_FALLBACK)
    assert model_speed.main([]) == 1
    assert "needs MLX's CUDA backend" in capsys.readouterr().out
