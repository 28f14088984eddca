"""Peak rates and memory bandwidth of known GPUs, and which peak a kernel's row
is measured against.

Used for the "% of peak" column and the roofline. Rates are GFLOP/s and
bandwidths GB/s, from the vendors' datasheets: the FP32 (FFMA) rate, and on
NVIDIA GPUs the dense TF32 tensor-core rate and, where listed, the dense INT8
tensor-core rate in GOPS (what the INT8 emulation's products run on), and the
dense FP16 rate (FP32 accumulation: the float16 split's products). A row's
percentage is of the peak of the units its kernel runs on (:func:`units`): FP32
FFMA, TF32, or TF32 / 3 for 3xTF32, which spends three TF32 products per
float32 product; where ``matmul`` runs the float16 split, FP16, or FP16 / 3 for
its three float16 products per float32 product (3xFP16); ``mx.matmul`` on
float16 or bfloat16 operands, cuBLAS's half GEMM, FP16 or BF16 tensor cores,
and so does ``matmul`` on a pair of one half type (half_wgmma on Hopper,
half_mma on other CUDA GPUs, half_gemv for up to 8 rows); our other kernels
compute half operands in float32, on the units of their float32 path. For Apple
GPUs the rate is GPU cores x 128 FP32 lanes x 2 FLOP x clock, as the M2 SGEMM
journey and the M1 Pro matmul tutorial count it (an 8-core M2 at 1.398 GHz:
2.86 TFLOP/s); their simdgroup matrices run at that rate. An unknown device has
no entry: the report says "peak unknown" rather than guess; ``--peak-gflops``
and ``--bandwidth`` override.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..dispatch import kernel_choice
from ..dispatch.problem import plan


@dataclass(frozen=True)
class DevicePeak:
    fp32_gflops: float | None
    bandwidth_gbs: float | None
    source: str
    tf32_gflops: float | None = None  # dense TF32 tensor cores (NVIDIA)
    int8_gops: float | None = None  # dense INT8 tensor cores (NVIDIA), integer GOPS
    fp16_gflops: float | None = None  # dense FP16 tensor cores, FP32 accumulation (NVIDIA)


# (pattern on the device name, FP32 GFLOP/s, GB/s, dense TF32 GFLOP/s, dense
# INT8 GOPS, dense FP16 GFLOP/s). First match wins, so the more specific names
# come first. The INT8 and FP16 rates are the datasheets' dense figures (they
# also print twice as much "with sparsity", which a dense product cannot use):
# INT8 H100 SXM and H200 1979 TOPS, H100 PCIe 1513, A100 624; FP16 989.5, 756.5
# and 312 TFLOP/s. None where not listed: the emulations run on Hopper GPUs only.
NVIDIA = (
    (r"H200", 67_000, 4_800, 494_700, 1_979_000, 989_500),
    (r"H100.*PCIe", 51_200, 2_000, 378_000, 1_513_000, 756_500),
    (r"H100", 67_000, 3_350, 494_700, 1_979_000, 989_500),
    (r"A100.*80GB", 19_500, 2_039, 156_000, 624_000, 312_000),
    (r"A100", 19_500, 1_555, 156_000, 624_000, 312_000),
    (r"RTX 4090", 82_600, 1_008, 82_600, None, None),
    (r"RTX 3090", 35_600, 936, 35_600, None, None),
    (r"RTX A6000", 38_700, 768, 77_400, None, None),
    (r"L40S", 91_600, 864, 183_000, None, None),
)

# The units each kernel's products run on, on CUDA (on Metal every kernel runs
# at the FP32 rate). matmul's float32 kernel where the float16 split does not
# run (off Hopper, or below its bounds) is 3xTF32 on tensor cores; its few-row
# kernels are FP32 FMAs, but bound by memory.
FP32, TF32, THREE_TF32, FP16, THREE_FP16 = "FP32", "TF32", "3xTF32", "FP16", "3xFP16"
# mx.matmul on a pair of half operands: cuBLAS on the half tensor cores. The
# datasheets give BF16 the FP16 rate (dense: H100 SXM and H200 989.5 TFLOP/s,
# H100 PCIe 756.5, A100 312), so both are of DevicePeak.fp16_gflops.
BF16 = "BF16"
_HALF_TENSOR_CORES = {"float16": FP16, "bfloat16": BF16}
# The GPUs on which matmul runs the float16 split where kernel_choice's rule takes it (wgmma).
_HOPPER = re.compile(r"H100|H200")
_CUDA_FLOAT32_UNITS = {"tile_simdgroup": THREE_TF32, "tile_async": THREE_TF32, "matmul": THREE_TF32}

# Apple families: (chip, GPU clock GHz, {GPU cores: bandwidth GB/s}).
APPLE = (
    ("M1 Ultra", 1.296, {48: 800, 64: 800}),
    ("M1 Max", 1.296, {24: 400, 32: 400}),
    ("M1 Pro", 1.296, {14: 200, 16: 200}),
    ("M1", 1.278, {7: 68, 8: 68}),
    ("M2 Ultra", 1.398, {60: 800, 76: 800}),
    ("M2 Max", 1.398, {30: 400, 38: 400}),
    ("M2 Pro", 1.398, {16: 200, 19: 200}),
    ("M2", 1.398, {8: 100, 10: 100}),
    ("M3 Max", 1.38, {30: 300, 40: 400}),
    ("M3 Pro", 1.38, {14: 150, 18: 150}),
    ("M3", 1.38, {8: 100, 10: 100}),
    ("M4 Max", 1.578, {32: 410, 40: 546}),
    ("M4 Pro", 1.578, {16: 273, 20: 273}),
    ("M4", 1.578, {8: 120, 10: 120}),
)


def apple_peak(chip: str, gpu_cores: int) -> DevicePeak:
    for name, ghz, cores in APPLE:
        if name == chip:
            return DevicePeak(
                gpu_cores * 128 * 2 * ghz, cores.get(gpu_cores),
                f"{chip} {gpu_cores}-core GPU at {ghz} GHz",
            )
    return DevicePeak(None, None, f"{chip}: peak unknown")


def lookup(device_name: str, gpu_cores: int | None = None) -> DevicePeak:
    """The peaks of a device by the name MLX reports (and, on Apple, core count)."""
    for pattern, gflops, gbs, tf32, int8, fp16 in NVIDIA:
        if re.search(pattern, device_name):
            return DevicePeak(float(gflops), float(gbs), f"{pattern} datasheet", float(tf32),
                              float(int8) if int8 else None, float(fp16) if fp16 else None)
    for chip, _, _ in APPLE:
        if re.search(rf"\b{re.escape(chip)}\b", device_name):
            if gpu_cores:
                return apple_peak(chip, gpu_cores)
            break
    return DevicePeak(None, None, "peak unknown")


def units(row: dict, split: bool = True) -> str:
    """FP32, TF32, 3xTF32, FP16, 3xFP16 or BF16: what the row's kernel
    multiplies on. For ``matmul``, the kernel kernel_choice's rule picks for
    the row's M, N and K on its device (a Hopper GPU by its name): the float16
    split where it takes the product, FP32 FMAs for its few-row kernels;
    ``split=False`` for rows recorded before the split existed. For
    ``mx.matmul`` on half operands (the row's ``dtype``), the half tensor cores."""
    if row["backend"] != "cuda":
        return FP32
    if row["kernel"] == "mx.matmul" and row.get("dtype") in _HALF_TENSOR_CORES:
        return _HALF_TENSOR_CORES[row["dtype"]]
    if row["kernel"] == "matmul" and row.get("dtype") in _HALF_TENSOR_CORES and row.get("M") is not None:
        # half_wgmma, or half_mma without wgmma, and half_gemv for a few rows (chapter 8)
        return _HALF_TENSOR_CORES[row["dtype"]]
    if row["kernel"] == "matmul" and row.get("M") is not None:
        hopper = bool(_HOPPER.search(row.get("device") or ""))
        m, n, k = (int(row[d]) for d in "MNK")
        p = plan((m, k), (k, n))
        if hopper and kernel_choice.half_split_serves(row["precision"], p):
            if split:
                return FP16 if row["precision"] == "tf32" else THREE_FP16
        elif kernel_choice.runs_on_fma(kernel_choice.choose("cuda", row["precision"], p, hopper)):
            return FP32
    if row["precision"] == "tf32":
        return TF32
    return _CUDA_FLOAT32_UNITS.get(row["kernel"], FP32)


def row_units(row: dict) -> str:
    """The units a row ran on: its recorded ``peak_kind``, else :func:`units`."""
    return row.get("peak_kind") or units(row)


def units_peak(row: dict, peak: DevicePeak) -> float | None:
    """The peak GFLOP/s of the units the row's kernel runs on (its recorded
    ``peak_kind`` where it has one, else :func:`units`), if known."""
    kind = row_units(row)
    if kind == FP32:
        return peak.fp32_gflops
    rate = peak.fp16_gflops if kind in (FP16, THREE_FP16, BF16) else peak.tf32_gflops
    if rate is None:
        return None
    return rate / 3 if kind in (THREE_TF32, THREE_FP16) else rate


def pct_of_units_peak(row: dict, gflops: float, peak: DevicePeak) -> float | None:
    """``gflops`` as a percentage of :func:`units_peak`, or None where that is unknown."""
    rate = units_peak(row, peak)
    return 100 * gflops / rate if rate else None
