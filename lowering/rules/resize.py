"""Resize (nearest and bilinear) of NHWC images.

Along each axis nn samples the input at a source coordinate that is an exact rational affine
function of the output index o, src(o) = (o * d + offset) / n (in integers):
  align_corners    o * (in - 1) / (out - 1)            n = out - 1, d = in - 1, offset = 0
  half_pixel       (o + 1/2) * in / out - 1/2          n = 2 out,   d = 2 in,   offset = in - out
  otherwise        o * in / out                        n = out,     d = in,     offset = 0
Nearest takes floor(src + 1/2) (nearest_rounding 'half_up') or floor(src) ('floor': the same as
half_up of src - 1/2, i.e. n, d, offset doubled and offset - n), clamped to the input; bilinear
weighs the two clamped neighbours of floor(src) by the fraction of src.

That is exactly TOSA RESIZE with scale [n, d], offset and border = (out - 1) * d - (in - 1) * n +
offset (the border makes TOSA's output size formula give `out`): RESIZE picks floor(src) + 1 when
its fraction is >= 1/2 and clamps the neighbours the same way. RESIZE is used when both axes meet
its limits (n <= 2048, d < 16 n, -n <= offset < 16 n, -16 n <= border < n; level 8K: n <= 256 d)
and the type has a RESIZE (floats; i8/i16 nearest). An input axis of size 1 samples its only row
whatever the mode: RESIZE takes it with n = out, d = 1.

The TOSA reference model computes a float RESIZE's source coordinate y / n in f32, so it is off by
up to half an ulp of the coordinate: the index choice stays right while that ulp is below 1/n, and
f32 bilinear weights stay within the fp32 tolerance (the error is at most that ulp times the value
range) while the coordinate is below 512 (ulp 2^-15). f16/bf16 round far more than that anyway.

Otherwise (a downscale by 16 or more, an upscale beyond 256, align_corners onto one pixel from many,
large f32 images, i32 data) the resize is decomposed per axis, width first then height as nn
interpolates: the source rows are fetched with TOSA GATHER (indices computed here, exactly) and
bilinear weighs the two gathered neighbours with constant weights.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from . import rule
from .conv import FLOAT_TYPES

# RESIZE limits (TOSA 1.0 ERROR_IFs, and level 8K's MAX_SCALE)
MAX_SCALE_NUMERATOR = 1 << 11
MAX_DOWNSCALE = 16
MAX_SCALE = 256
# largest f32 ulp of a bilinear f32 RESIZE's source coordinate (see the module doc)
F32_BILINEAR_COORDINATE_ULP = 2.0 ** -15
# element types RESIZE takes, per mode (integers: nearest only; bilinear of integers is fixed point)
RESIZE_TYPES = {"nearest": (*FLOAT_TYPES, "i8", "i16"), "bilinear": FLOAT_TYPES}
GATHER_TYPES = (*FLOAT_TYPES, "i8", "i16", "i32")


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
        """Whether RESIZE's f32 coordinate keeps nn's result (see the module doc)."""
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
    """How nn.resize samples one axis (see the module doc)."""
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
    """The input index nn's nearest resize reads for every output index (see the module doc)."""
    base, fraction = s.floor_and_fraction()
    return np.clip(base + (2 * fraction >= s.n), 0, s.size - 1)


AxisMap = Callable[[Value], Value]  # [N, K, R] -> [N, K', R] along axis 1


def separable(ctx: LoweringContext, x: Value, out: tuple[int, int],
              along_height: AxisMap | None, along_width: AxisMap | None) -> Value:
    """x [N, H, W, C] -> [N, out_h, out_w, C], along the width first (on [N, W, H*C]), then the
    height (on [N, H, W'*C]), as nn interpolates; None: the axis is left as it is."""
    n, h, w, c = ctx.type_of(x).shape
    out_h, out_w = out
    if along_width is not None:
        t = along_width(ctx.reshape(ctx.transpose(x, (0, 2, 1, 3)), (n, w, h * c)))
        x = ctx.transpose(ctx.reshape(t, (n, out_w, h, c)), (0, 2, 1, 3))
    if along_height is not None:
        t = along_height(ctx.reshape(x, (n, h, out_w * c)))
        x = ctx.reshape(t, (n, out_h, out_w, c))
    return x


def gather_resize(ctx: LoweringContext, x: Value, rows: np.ndarray, columns: np.ndarray) -> Value:
    """x [N, H, W, C] -> [N, len(rows), len(columns), C] reading x[:, rows[i], columns[j]]."""
    _, h, w, _ = ctx.type_of(x).shape

    def along(index: np.ndarray, size: int) -> AxisMap | None:
        return None if np.array_equal(index, np.arange(size)) else lambda t: _gather_rows(ctx, t, index)
    return separable(ctx, x, (len(rows), len(columns)), along(rows, h), along(columns, w))


def weigh_integers(ctx: LoweringContext, x: Value, s: Sampling) -> Value:
    """Along axis 1 of i32 x [N, size, R]: (n - f) * x[i] + f * x[i + 1] with src = i + f / n and the
    neighbours clamped, RESIZE BILINEAR's integer weights along one axis (exact while it fits i32)."""
    base, fraction = s.floor_and_fraction()
    low = _gather_rows(ctx, x, np.clip(base, 0, s.size - 1))
    high = _gather_rows(ctx, x, np.clip(base + 1, 0, s.size - 1))
    return ctx.op("tosa.add", [ctx.mul(low, ctx.const((s.n - fraction).reshape(1, -1, 1), "i32")),
                               ctx.mul(high, ctx.const(fraction.reshape(1, -1, 1), "i32"))])


def resize_mode_known(ctx: LoweringContext) -> str | None:
    """The resize mode is 'nearest' or 'bilinear'."""
    if ctx.attrs["mode"] not in RESIZE_TYPES:
        return f"resize mode {ctx.attrs['mode']!r} is not 'nearest' or 'bilinear'"
    return None


def nearest_rounding_known(ctx: LoweringContext) -> str | None:
    """Nearest-neighbour rounding is 'half_up' or 'floor'."""
    if ctx.attrs.get("nearest_rounding", "half_up") not in ("half_up", "floor"):
        return f"nearest_rounding {ctx.attrs['nearest_rounding']!r} is not 'half_up' or 'floor'"
    return None


def float_resize_unquantized(ctx: LoweringContext) -> str | None:
    """The float rule resizes unquantized data, or nearest-neighbour data of one quantization (it only
    moves stored values); the quantized rules lower the rest."""
    x, y = ctx.nn_in_types[0], ctx.nn_out_types[0]
    mode = ctx.attrs["mode"]
    if (x.quant is not None or y.quant is not None) and not (mode == "nearest" and x.quant == y.quant):
        return f"quantized {mode} resize is lowered by the quantized rules, not by the float one"
    return None


def resize_element_type(ctx: LoweringContext) -> str | None:
    """Bilinear resize takes floating-point data, nearest resize also i8, i16 and i32 (integers are
    interpolated only as fixed-point quantized data)."""
    dtype, mode = ctx.in_types[0].dtype, ctx.attrs["mode"]
    if dtype not in GATHER_TYPES or (mode == "bilinear" and dtype not in FLOAT_TYPES):
        return f"{mode} resize of {dtype} tensors: TOSA interpolates floats (integers only as fixed-point quantized data)"
    return None


def _tosa_resize(ctx: LoweringContext, x: Value, axes: tuple[Sampling, Sampling]) -> Value:
    sy, sx = axes
    mode = "BILINEAR" if ctx.attrs["mode"] == "bilinear" else "NEAREST_NEIGHBOR"
    operands = [x, ctx.shape([sy.n, sy.d, sx.n, sx.d]), ctx.shape([sy.offset, sx.offset]),
                ctx.shape([sy.border, sx.border])]
    return ctx.op("tosa.resize", operands, {"mode": mode}, types=[ctx.out_types[0]])


def _gather_rows(ctx: LoweringContext, x: Value, indices: np.ndarray) -> Value:
    """x [N, K, R] -> [N, len(indices), R], row i being x[:, indices[i]]."""
    n, _, r = ctx.type_of(x).shape
    index = ctx.const(np.tile(indices.astype(np.int32), (n, 1)), "i32")
    return ctx.op("tosa.gather", [x, index])


def _interpolate_axis(ctx: LoweringContext, x: Value, s: Sampling) -> Value:
    """nn's resize along axis 1 of x [N, size, R] -> [N, out, R]."""
    if ctx.attrs["mode"] == "nearest":
        return _gather_rows(ctx, x, exact_nearest_indices(s))
    base, fraction = s.floor_and_fraction()
    dtype = ctx.type_of(x).dtype
    low = _gather_rows(ctx, x, np.clip(base, 0, s.size - 1))
    high = _gather_rows(ctx, x, np.clip(base + 1, 0, s.size - 1))
    weight = (fraction / s.n).reshape(1, -1, 1)
    return ctx.op("tosa.add", [ctx.mul(low, ctx.const(1 - weight, dtype)),
                               ctx.mul(high, ctx.const(weight, dtype))])


def _decomposed_resize(ctx: LoweringContext, x: Value, axes: tuple[Sampling, Sampling]) -> Value:
    mode = ctx.attrs["mode"]

    def along(s: Sampling) -> AxisMap | None:
        return None if s.is_identity(mode) else lambda t: _interpolate_axis(ctx, t, s)
    sy, sx = axes
    return separable(ctx, x, (sy.out, sx.out), along(sy), along(sx))


@rule("nn.resize", constraints=(resize_mode_known, nearest_rounding_known, float_resize_unquantized,
                                 resize_element_type))
def resize(ctx: LoweringContext) -> Value:
    dtype = ctx.in_types[0].dtype
    x = ctx.operands[0]
    _, h, w, _ = ctx.type_of(x).shape
    oh, ow = ctx.attrs["size"]
    axes = (sampling(h, oh, ctx.attrs), sampling(w, ow, ctx.attrs))
    mode = ctx.attrs["mode"]
    if dtype in RESIZE_TYPES[mode] and all(s.fits_resize() and s.resize_is_exact(mode, dtype) for s in axes):
        return _tosa_resize(ctx, x, axes)
    return _decomposed_resize(ctx, x, axes)
