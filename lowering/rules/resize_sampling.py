"""Where a resize samples its input along one axis: nn's exact rational source coordinate (`sampling`),
TFLite's 10-bit fixed-point one (`tflite_bilinear_sampling`) and float32 nearest indices, as TOSA RESIZE's
scale, offset and border, with RESIZE's limits. resize.py's doc says how they are derived; its rules use them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


# RESIZE limits (TOSA 1.0 ERROR_IFs, and level 8K's MAX_SCALE)
MAX_SCALE_NUMERATOR = 1 << 11
MAX_DOWNSCALE = 16
MAX_SCALE = 256
# largest f32 ulp of a bilinear f32 RESIZE's source coordinate (see resize.py's doc)
F32_BILINEAR_COORDINATE_ULP = 2.0 ** -15


@dataclass(frozen=True)
class Sampling:
    """Source coordinate (o * d + offset) / n of output index o along one axis of size `size` -> `out`."""

    n: int
    d: int
    offset: int
    size: int
    out: int

    @property
    def border(self) -> int:
        return (self.out - 1) * self.d - (self.size - 1) * self.n + self.offset

    def fits_resize(self) -> bool:
        n, d = self.n, self.d
        return (0 < n <= MAX_SCALE_NUMERATOR and 0 < d < MAX_DOWNSCALE * n and n <= MAX_SCALE * d
                and -n <= self.offset < MAX_DOWNSCALE * n and -MAX_DOWNSCALE * n <= self.border < n)

    def coordinate_ulp(self) -> float:
        """The f32 ulp of the largest source coordinate (the reference model divides in f32)."""
        largest = max(abs(self.offset), abs((self.out - 1) * self.d + self.offset)) / self.n
        return float(np.spacing(np.float32(largest)))

    def resize_is_exact(self, mode: str, dtype: str) -> bool:
        """Whether RESIZE's f32 coordinate keeps nn's result (see resize.py's doc)."""
        ulp = self.coordinate_ulp()
        if ulp * self.n >= 1:  # floor(y / n) or a nearest tie could round the wrong way
            return False
        return not (mode == "bilinear" and dtype == "f32" and ulp > F32_BILINEAR_COORDINATE_ULP)

    def is_identity(self, mode: str) -> bool:
        """Whether output index o samples exactly input index o (nothing to do along this axis)."""
        if self.size != self.out:
            return False
        base, fraction = self.floor_and_fraction()
        if mode == "nearest":
            return bool(np.array_equal(base + (2 * fraction >= self.n), np.arange(self.out)))
        return bool(np.array_equal(base, np.arange(self.out)) and not fraction.any())

    def floor_and_fraction(self) -> tuple[np.ndarray, np.ndarray]:
        """floor(src) and the numerator of its fraction (over n), for every output index."""
        y = np.arange(self.out, dtype=np.int64) * self.d + self.offset
        return y // self.n, y % self.n


def sampling(size: int, out: int, attrs: dict) -> Sampling:
    """How nn.resize samples one axis (see resize.py's doc)."""
    if size == 1:  # every mode reads the only row; TOSA needs d > 0
        n, d, offset = out, 1, 0
    elif attrs["align_corners"]:
        n, d, offset = (out - 1, size - 1, 0) if out > 1 else (1, 1, 0)
    elif attrs["half_pixel_centers"]:
        n, d, offset = 2 * out, 2 * size, size - out
    else:
        n, d, offset = out, size, 0
    if attrs["mode"] == "nearest" and attrs.get("nearest_rounding", "half_up") == "floor" and size > 1:
        n, d, offset = 2 * n, 2 * d, 2 * offset - n
    g = math.gcd(n, d, offset)
    return Sampling(n // g, d // g, offset // g, size, out)


# TFLite's integer bilinear resize keeps its source coordinates in fixed point with 10 fraction bits
TFLITE_COORDINATE_ONE = 1 << 10


def tflite_bilinear_sampling(size: int, out: int, attrs: dict) -> Sampling:
    """TFLite's integer bilinear coordinate along one axis (ResizeBilinearInteger, what LiteRT runs for
    int8 and int16) as a RESIZE sampling whose integer weights are TFLite's.

    TFLite rounds the ratio to 10 fraction bits, r = round(1024 * in / out) (with align_corners
    round(1024 * (in - 1) / (out - 1))), and samples s(o) = o * r, plus r // 2 - 512 with half-pixel
    centres: neighbours s // 1024 and the next, weights 1024 - s % 1024 and s % 1024. That is RESIZE
    with n = 1024, d = r and that offset (reduced by common factors: n stays a power of two). A
    coordinate before the first row reads row 0 twice in both; past the last row TFLite reads out of
    bounds (only for rounding errors of r adding up over hundreds of rows) and RESIZE clamps. One input
    row is read whatever the weights: n is then the smallest power of two above out - 1 (d = 1)."""
    if size == 1:
        return Sampling(1 << (out - 1).bit_length(), 1, 0, size, out)
    align = attrs["align_corners"] and out > 1
    num, den = (size - 1, out - 1) if align else (size, out)
    ratio = (num * TFLITE_COORDINATE_ONE + den // 2) // den
    offset = ratio // 2 - TFLITE_COORDINATE_ONE // 2 if attrs["half_pixel_centers"] and not align else 0
    g = math.gcd(TFLITE_COORDINATE_ONE, ratio, offset)
    return Sampling(TFLITE_COORDINATE_ONE // g, ratio // g, offset // g, size, out)


def tflite_nearest_indices(size: int, out: int, attrs: dict) -> np.ndarray:
    """The input index TFLite's nearest resize reads for every output index along one axis. It computes
    the coordinate in float32 (the ratio rounded to float32, then one rounded product), which lands on
    the other side of an integer (or of a half, with align_corners) for some sizes, e.g. 26 -> 22."""
    f32 = np.float32
    align = attrs["align_corners"] and out > 1
    ratio = f32(size - 1) / f32(out - 1) if align else f32(size) / f32(out)
    shift = f32(0.5) if attrs["half_pixel_centers"] else f32(0.0)
    coordinate = (np.arange(out, dtype=f32) + shift) * ratio  # float32 throughout, as TFLite
    # align_corners rounds half away from zero (the coordinate is never negative), otherwise floor
    index = np.floor(coordinate + f32(0.5)) if attrs["align_corners"] else np.floor(coordinate)
    return np.clip(index.astype(np.int64), 0, size - 1)


def exact_nearest_indices(s: Sampling) -> np.ndarray:
    """The input index nn's nearest resize reads for every output index (see resize.py's doc)."""
    base, fraction = s.floor_and_fraction()
    return np.clip(base + (2 * fraction >= s.n), 0, s.size - 1)
