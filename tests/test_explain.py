"""mlx_sgemm.explain, without a GPU: for every shape class of the shape suite
(benchmarks/shape_suite.py) it names what matmul runs, and that is what matmul
then launches (on a faked Hopper GPU, see conftest.fake_cuda)."""

import importlib.util
from pathlib import Path

import mlx.core as mx
import pytest

import mlx_sgemm
from mlx_sgemm.dispatch import device

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("shape_suite", ROOT / "benchmarks" / "shape_suite.py")
shape_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shape_suite)


def operand_shapes(batch, m, n, k, transposed):
    return (*batch, m, k), (*batch, k, n)


def suite_ids(case):
    batch, m, n, k, t = case
    return f"{'x'.join(map(str, batch)) + 'x' if batch else ''}{m}x{n}x{k}{'-WT' if t else ''}"


@pytest.mark.parametrize("precision", ["float32", "tf32"])
@pytest.mark.parametrize("case", shape_suite.SHAPES, ids=suite_ids)
def test_explain_names_what_matmul_launches(fake_cuda, case, precision):
    a_shape, b_shape = operand_shapes(*case)
    e = mlx_sgemm.explain(a_shape, b_shape, precision=precision, b_transposed=case[4])
    assert e.backend == "cuda" and e.device == "Fake H200"
    assert e.chosen_by.startswith("rule: ")
    # Not evaluated: the launch is decided (and recorded) when the call is built.
    a = mx.zeros(a_shape)
    b = mx.zeros(b_shape[:-2] + b_shape[-1:] + b_shape[-2:-1]).swapaxes(-1, -2) if case[4] else mx.zeros(b_shape)
    mlx_sgemm.matmul(a, b, precision=precision)
    launch = fake_cuda[-1]
    assert (launch.spec.stage, launch.k_splits) == (e.kernel, e.k_splits)
    assert e.source == f"kernels/cuda/{launch.spec.source_file}"
    assert e.parameters["block"] == f"{launch.spec.block_m}x{launch.spec.block_n}"
    padded_k = a_shape[-1] + e.padding[0]
    assert launch.a_shape[-1] == padded_k and launch.b_shape[-1] == b_shape[-1] + e.padding[1]
    text = str(e)
    for field in ("product", "backend", "kernel", "K split", "padding", "chosen by", "operand a", "operand b",
                  "contract", "recorded"):
        assert field in text
    # Every shape class of the suite was measured on an H100 and an H200.
    assert e.recorded is not None and e.recorded["ratio"] > 0


@pytest.mark.parametrize("backend", ["cuda", "metal"])
@pytest.mark.parametrize("case", shape_suite.SHAPES, ids=suite_ids)
def test_explain_plans_for_a_gpu_this_machine_lacks(case, backend):
    a_shape, b_shape = operand_shapes(*case)
    for wgmma in (True, False):
        e = mlx_sgemm.explain(a_shape, b_shape, backend=backend, wgmma=wgmma, b_transposed=case[4])
        assert e.backend == backend
        assert ("none here" in e.device) == (device.backend() != backend)
        assert e.source.startswith(f"kernels/{backend}/") and e.parameters["blocks"] >= 1
        if backend == "metal":
            assert e.kernel in ("tile_async", "small_m") and e.recorded is None


@pytest.mark.parametrize("b_transposed", [False, True])
def test_explain_says_the_tf32_pipeline_rounds_its_operands(b_transposed):
    """tile_wgmma at TF32 takes A from a rounding pass (a copy) where the TMA
    copies it (256-row blocks), rounds A's tiles in shared memory where the
    producer copies them (fewer rows), and rounds B in registers; at float32
    (3xTF32) A is read in place."""
    tf32 = mlx_sgemm.explain((2048, 4096), (4096, 4096), precision="tf32", backend="cuda", wgmma=True,
                             b_transposed=b_transposed)
    assert tf32.kernel == "matmul_tf32_wgmma"
    assert tf32.layouts["a"].startswith("rounded to nearest TF32 by a pass") and "tf32_round.cu" in tf32.layouts["a"]
    assert "rounded to nearest TF32 in registers" in tf32.layouts["b"] and "rounded to nearest" in tf32.contract
    few_rows = mlx_sgemm.explain((32, 4096), (4096, 4096), precision="tf32", backend="cuda", wgmma=True,
                                 b_transposed=b_transposed)
    assert few_rows.kernel == "matmul_tf32_wgmma" and few_rows.layouts["a"].startswith("read in place")
    assert "rounded to nearest TF32 in shared memory" in few_rows.layouts["a"]
    assert "rounded to nearest TF32 in registers" in few_rows.layouts["b"]
    plain = mlx_sgemm.explain((1000, 4096), (4096, 4096), backend="cuda", wgmma=True, b_transposed=b_transposed)
    assert plain.kernel == "tile_wgmma" and plain.layouts["a"].startswith("read in place")


def test_explain_on_the_cpu_says_mx_matmul_runs():
    e = mlx_sgemm.explain(mx.zeros((3, 4)), mx.zeros((4, 5)), stream=mx.cpu)
    assert e.backend == device.CPU_FALLBACK
    assert e.kernel == "mx.matmul" and "CPU" in e.chosen_by


def test_explain_deterministic_mode_and_the_autotune_cache(fake_cuda, monkeypatch):
    d = mlx_sgemm.explain((7, 4096), (4096, 4096), deterministic=True)
    assert d.chosen_by.startswith("deterministic") and d.k_splits == 1 and d.recorded is None
    assert d.kernel == mlx_sgemm.explain((4096, 4096), (4096, 4096), deterministic=True).kernel
    from mlx_sgemm.dispatch import kernel_choice

    planted = kernel_choice.Launch(kernel_choice.specs.spec("tile_threads", "cuda"), 2)
    monkeypatch.setattr(kernel_choice, "tuned", lambda backend, precision, p: planted)
    e = mlx_sgemm.explain((64, 4096), (4096, 4096))
    assert e.kernel == "tile_threads" and e.k_splits == 2 and e.chosen_by.startswith("autotune cache")


def test_explain_errors_name_the_argument():
    with pytest.raises(TypeError, match="b must"):
        mlx_sgemm.explain((2, 3), "3x4")
    with pytest.raises(ValueError, match="precision"):
        mlx_sgemm.explain((2, 3), (3, 4), precision="fp8")
    with pytest.raises(ValueError, match="backend"):
        mlx_sgemm.explain((2, 3), (3, 4), backend="vulkan")
    with pytest.raises(ValueError):
        mlx_sgemm.explain((2, 3), (4, 5), backend="cuda")  # K mismatch, as mx.matmul says
    assert mlx_sgemm.explain((0, 3), (3, 4), backend="cuda").kernel == "none"


def test_explain_quotes_the_newest_of_equally_near_recorded_runs(tmp_path, monkeypatch):
    """Two runs measured the same shape: the newer one (by the date in its
    name, whatever its name sorts as) measured the kernels as they are now."""
    from mlx_sgemm.bench import results

    header = "device,kernel,precision,M,N,K,gflops,x_matmul\n"
    (tmp_path / "bench-2026-11-26-h100.csv").write_text(header + "New GPU,matmul,float32,64,64,64,2000,2.5\n")
    (tmp_path / "bench-2026-11-24.csv").write_text(header + "Old GPU,matmul,float32,64,64,64,1000,1.5\n")
    (tmp_path / "targets-2026-11-22.csv").write_text(header + "Old GPU,matmul,float32,64,64,64,1000,1.4\n")
    (tmp_path / "bench-2026-11-20.csv").write_text(header + "Older GPU,matmul,float32,32,32,32,500,1.2\n")
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    e = mlx_sgemm.explain((64, 64), (64, 64), backend="cuda")
    assert (e.recorded["device"], e.recorded["ratio"], e.recorded["file"]) == (
        "New GPU", 2.5, "bench-2026-11-26-h100.csv")
    near = mlx_sgemm.explain((30, 30), (30, 30), backend="cuda")  # nearer the old shape: distance decides
    assert near.recorded["device"] == "Older GPU"


def test_explain_reads_the_crossover_benchmarks_rows_at_their_precision(tmp_path, monkeypatch):
    """benchmarks/emulation_crossover.py's matmul rows carry their ratio to
    mx.matmul as x_cublas_sgemm (float32) or x_cublas_tf32 (TF32)."""
    from mlx_sgemm.bench import results

    header = "device,kernel,precision,M,N,K,us,gflops,{},x_wgmma,error\n"
    (tmp_path / "tf32-crossover-2026-11-27.csv").write_text(
        header.format("x_cublas_tf32") + "GPU,mx.matmul,tf32,64,64,64,1,900,1.0,0.9,1e-5\n"
        "GPU,matmul,tf32,64,64,64,1,1000,1.18,1.3,1e-5\n")
    (tmp_path / "emulation-crossover-2026-11-27.csv").write_text(
        header.format("x_cublas_sgemm") + "GPU,matmul,float32,64,64,64,1,300,3.3,1.2,5e-9\n")
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    assert mlx_sgemm.explain((64, 64), (64, 64), precision="tf32", backend="cuda").recorded["ratio"] == 1.18
    assert mlx_sgemm.explain((64, 64), (64, 64), backend="cuda").recorded["ratio"] == 3.3


def test_explain_quotes_float32_rows_timed_one_at_a_time_where_a_run_has_both(tmp_path, monkeypatch):
    """A run with half-dtype rows and both ways of calling: explain's recorded
    line (of float32 operands) quotes its float32 row timed one at a time, and says so."""
    from mlx_sgemm.bench import results

    header = "device,kernel,precision,M,N,K,gflops,x_matmul,dtype,calls\n"
    (tmp_path / "bench-2026-11-28-h100.csv").write_text(
        header + "GPU,matmul,float32,64,64,64,1000,2.0,float32,one at a time\n"
        "GPU,matmul,float32,64,64,64,1000,9.0,bfloat16,one at a time\n"
        "GPU,matmul,float32,64,64,64,1000,3.0,float32,independent\n")
    (tmp_path / "shapes-2026-11-28-h100.csv").write_text(
        "device,precision,dtype,calls,batch,M,N,K,b_transposed_view,ratio\n"
        "GPU,float32,float16,one at a time,,64,64,64,False,7.0\n")
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    e = mlx_sgemm.explain((64, 64), (64, 64), backend="cuda")
    assert (e.recorded["ratio"], e.recorded["calls"]) == (2.0, "one at a time")
    assert str(e).endswith("(bench-2026-11-28-h100.csv, calls: one at a time)")
