"""benchmarks/half_precision.py on a faked Hopper GPU (conftest's fake_cuda) and
small shapes: the rows it records (chosen kernel, both ways of timing, errors,
a token's bytes of W a second) and the variants it times, half_mma's and
half_gemv's among them. Speed is not checked."""

import csv

from mlx_sgemm.build import specs

from . import benchmark_scripts


def load():
    return benchmark_scripts.load("half_precision")


def test_rows_of_the_chosen_kernels_and_the_variants(fake_cuda, tmp_path):
    path = tmp_path / "half-precision-2026-11-28-test.csv"
    argv = ["--shapes", "1,40,24", "130,40,24", "--dtype", "bfloat16", "--layouts", "transposed", "row-major",
            "--repeats", "2", "--rounds", "1", "--variants", "--half-mma", "--gemv-variants", "--csv", str(path)]
    assert load().main(argv) == 0
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    chosen = [r for r in rows if r["chosen"] == "True"]
    assert [(r["layout"], r["M"]) for r in chosen] == [(lay, m) for lay in ("transposed", "row-major")
                                                      for m in ("1", "130")]
    assert {r["kernel"].split("[")[0] for r in chosen} == {"half_gemv", "half_wgmma"}
    assert all(r["calls"] == "one at a time" and float(r["chained_seconds"]) > 0 for r in rows)
    # Half outputs: both errors are the output's rounding to bfloat16.
    assert all(0 < float(r["error"]) < 2**-7 and 0 < float(r["mx_error"]) < 2**-7 for r in rows)
    # A token's bytes of W a second, for the few-row products alone.
    assert all((r["w_gbs"] != "") == (r["M"] == "1") for r in chosen)
    # Every block shape of half_wgmma, beside the chosen launch, for the larger product.
    # And half_mma's launch as a GPU without wgmma would make it (--half-mma);
    # for the token, half_gemv's variants and the small-M kernel (--gemv-variants).
    variants = {r["kernel"] for r in rows if r["chosen"] == "False"}
    module = load()
    # 130 rows: two tiles of 128 rows could fill few of the SMs, so half_mma's are of 64 rows.
    assert {v.split("/")[0] for v in variants} == {f"half_wgmma[{m}x{n}]" for m, n in specs.HALF_WGMMA_BLOCKS} | {
        "half_mma[64x128]", "small_m[8x32]"} | {f"half_gemv[N{nt},W{w},F{f},B{b}]" for nt, w, f, b in
                                                  module.GEMV_VARIANTS}
    assert all(r["w_gbs"] != "" for r in rows if r["kernel"].startswith(("half_gemv", "small_m")))
