"""Peak float32 rate and memory bandwidth of known GPUs.

Used for the "% of peak" column and the roofline. Rates are non-tensor FP32
GFLOP/s and bandwidths GB/s, from the vendors' datasheets; for Apple GPUs the
rate is GPU cores x 128 FP32 lanes x 2 FLOP x clock, as seeds 001 and 004 count
it (an 8-core M2 at 1.398 GHz: 2.86 TFLOP/s). An unknown device has no entry:
the report says "peak unknown" rather than guess; ``--peak-gflops`` and
``--bandwidth`` override.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePeak:
    fp32_gflops: float | None
    bandwidth_gbs: float | None
    source: str


# (pattern on the device name, FP32 GFLOP/s, GB/s). First match wins, so the more
# specific names come first.
NVIDIA = (
    (r"H200", 67_000, 4_800),
    (r"H100.*PCIe", 51_200, 2_000),
    (r"H100", 67_000, 3_350),
    (r"A100.*80GB", 19_500, 2_039),
    (r"A100", 19_500, 1_555),
    (r"RTX 4090", 82_600, 1_008),
    (r"RTX 3090", 35_600, 936),
    (r"RTX A6000", 38_700, 768),
    (r"L40S", 91_600, 864),
)

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
    for pattern, gflops, gbs in NVIDIA:
        if re.search(pattern, device_name):
            return DevicePeak(float(gflops), float(gbs), f"{pattern} datasheet")
    for chip, _, _ in APPLE:
        if re.search(rf"\b{re.escape(chip)}\b", device_name):
            if gpu_cores:
                return apple_peak(chip, gpu_cores)
            break
    return DevicePeak(None, None, "peak unknown")
