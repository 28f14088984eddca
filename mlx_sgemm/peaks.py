"""Peak float32 rates of known GPUs, for the "% of peak" column.

Figures are the vendors' datasheet (or, for Apple, cores x FP32 lanes x clock, as
seeds 001 and 004 compute them) non-tensor FP32 rates in GFLOP/s. An unknown
device gets ``None`` ("peak unknown") rather than a guess.
"""

from __future__ import annotations

# (substring of the device name, FP32 GFLOP/s). Longer, more specific names first.
KNOWN_FP32_PEAKS = (
    ("H200", 67_000.0),
    ("H100 PCIe", 51_200.0),
    ("H100", 67_000.0),
    ("A100", 19_500.0),
)


def fp32_peak_gflops(device_name: str) -> float | None:
    for key, peak in KNOWN_FP32_PEAKS:
        if key in device_name:
            return peak
    return None
