"""Pooling: max_pool2d/3d, avg_pool2d/3d, l2_pool2d/3d.

TOSA 1.0 has MAX_POOL2D and AVG_POOL2D only: no dilation, padding smaller than the kernel, exact
output sizes (`fit_windows`), and an average whose divisor counts the input elements of the window
(padding is never counted). The rest is decomposed, exactly:

- max_pool2d, padding >= kernel: the input is padded explicitly with the lowest value (-inf, or
  the integer minimum), which never wins, and pooled without padding.
- max_pool2d, dilation > 1 (space-to-batch): pad the input with the lowest value to a whole number
  of dilation blocks, move the dilation phases (row % dy, column % dx) into the batch, pool each
  phase with the undilated kernel at stride 1, move the phases back, and keep every stride-th row
  and column (a reshape and a slice). Max is exact, so the result is bit-identical.
- avg_pool2d: padding nn counts in the divisor (count_pad) is padded explicitly with zeros, so
  TOSA's own divisor is nn's; the uncounted rest stays TOSA padding. Where TOSA cannot take that
  padding (>= kernel) or a divisor overrides the count, all padding is explicit (TOSA divides by
  the kernel area) and a constant per output position rescales: result * area / (divisor or
  nn's count). A window with nothing counted gives 0 * inf = NaN, as nn's 0 / 0.
- l2_pool2d: sqrt (POW 0.5) of the average of x * x, padding uncounted.
- 3-D pools: a window is a box and nn's count of a box is the product of its per-axis counts, so a
  3-D pool is a 2-D pool over (H, W) of every depth slice, then a (depth x 1) pool over
  [N, D, OH*OW, C]. Max is exact; averages round twice (once per pass).
Floats pool in their own type with an f32 accumulator; max pooling also takes i8 and i16 (and
quantized data whose input and result quantization agree: max commutes with dequantization).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from . import rule
from .conv import ACCUMULATOR, FLOAT_TYPES, constant, drop_extra, fit_windows, float_type, padded, slice_of

MAX_POOL_INTEGERS = ("i8", "i16")


def _lowest(dtype: str) -> float | int:
    """The value that never wins a max: -inf, or the integer minimum."""
    return -math.inf if dtype in FLOAT_TYPES else int(np.iinfo(TensorType((), dtype).numpy_dtype).min)


def _max_pool_type(ctx: LoweringContext, what: str) -> str:
    x, y = ctx.nn_in_types[0], ctx.nn_out_types[0]
    dtype = ctx.in_types[0].dtype
    if dtype in MAX_POOL_INTEGERS and x.quant == y.quant and x.dtype == y.dtype:
        return dtype
    return float_type(ctx, what)


def _spatial_pads(pad: Sequence[int]) -> list[int]:
    """[top, bottom, left, right] as PAD's per-dimension pairs of an NHWC tensor."""
    return [0, 0, *pad, 0, 0]


def max_pool(ctx: LoweringContext, x: Value, kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int],
             dilation: Sequence[int] = (1, 1)) -> Value:
    """nn's max_pool2d of NHWC `x` (TOSA MAX_POOL2D where it fits, else the decompositions above)."""
    lowest = _lowest(ctx.type_of(x).dtype)
    if any(d > 1 for d in dilation):
        return _dilated_max_pool(ctx, x, kernel, stride, pad, dilation, lowest)
    if any(p >= kernel[i // 2] for i, p in enumerate(pad)):
        x, pad = padded(ctx, x, _spatial_pads(pad), lowest), [0, 0, 0, 0]
    x, pad, extra = fit_windows(ctx, x, kernel, stride, pad)
    y = ctx.op("tosa.max_pool2d", [x], {"kernel": list(kernel), "stride": list(stride), "pad": pad})
    return drop_extra(ctx, y, extra)


def _dilated_max_pool(ctx: LoweringContext, x: Value, kernel: Sequence[int], stride: Sequence[int],
                      pad: Sequence[int], dilation: Sequence[int], lowest: float | int) -> Value:
    n, h, w, c = ctx.type_of(x).shape
    (kh, kw), (sy, sx), (dy, dx) = kernel, stride, dilation
    out = [(size + pad[2 * i] + pad[2 * i + 1] - (k - 1) * d - 1) // s + 1
           for i, (size, k, s, d) in enumerate(zip((h, w), kernel, stride, dilation))]
    # rows per phase: enough for out * stride rows of the stride-1 pooling (a whole number of strides)
    blocks = [-(-o * s // d) + k - 1 for o, s, d, k in zip(out, stride, dilation, kernel)]
    extent = [b * d for b, d in zip(blocks, dilation)]
    after = [e - size - pad[2 * i] for i, (e, size) in enumerate(zip(extent, (h, w)))]
    x = padded(ctx, x, _spatial_pads([pad[0], max(after[0], 0), pad[2], max(after[1], 0)]), lowest)
    x = slice_of(ctx, x, (0, 0, 0, 0), (n, extent[0], extent[1], c))
    by, bx = blocks
    phases = ctx.reshape(ctx.transpose(ctx.reshape(x, (n, by, dy, bx, dx, c)), (2, 4, 0, 1, 3, 5)),
                         (dy * dx * n, by, bx, c))
    pooled = ctx.op("tosa.max_pool2d", [phases], {"kernel": [kh, kw], "stride": [1, 1], "pad": [0, 0, 0, 0]})
    ph, pw = by - kh + 1, bx - kw + 1
    y = ctx.reshape(ctx.transpose(ctx.reshape(pooled, (dy, dx, n, ph, pw, c)), (2, 3, 0, 4, 1, 5)),
                    (n, ph * dy, pw * dx, c))
    oh, ow = out
    y = slice_of(ctx, y, (0, 0, 0, 0), (n, oh * sy, ow * sx, c))
    if sy == sx == 1:
        return y
    every_stride = slice_of(ctx, ctx.reshape(y, (n, oh, sy, ow, sx, c)), (0,) * 6, (n, oh, 1, ow, 1, c))
    return ctx.reshape(every_stride, (n, oh, ow, c))


def _window_counts(size: int, out: int, kernel: int, stride: int, pad_before: int, counted_before: int,
                   counted_after: int) -> np.ndarray:
    """Per output position along one axis: how many of its window's elements lie in the input or
    in the counted padding."""
    start = np.arange(out) * stride - pad_before
    return np.clip(np.minimum(start + kernel, size + counted_after) - np.maximum(start, -counted_before), 0, None)


def average_pool(ctx: LoweringContext, x: Value, kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int],
                 count_pad: Sequence[int] = (0, 0, 0, 0), divisor: int = 0) -> Value:
    """nn's avg_pool2d of NHWC float `x`: each window's sum divided by `divisor` (> 0) or by the
    number of its elements in the input or in the counted padding."""
    t = ctx.type_of(x)
    uncounted = [p - c for p, c in zip(pad, count_pad)]
    explicit = list(count_pad)
    factor = None
    if divisor > 0 or any(u >= kernel[i // 2] for i, u in enumerate(uncounted)):
        explicit, uncounted = list(pad), [0, 0, 0, 0]
        if divisor > 0:
            counts = np.full((1, 1), float(divisor))
        else:
            out = [(size + pad[2 * i] + pad[2 * i + 1] - k) // s + 1
                   for i, (size, k, s) in enumerate(zip(t.shape[1:3], kernel, stride))]
            cy, cx = (_window_counts(size, o, k, s, pad[2 * i], count_pad[2 * i], count_pad[2 * i + 1])
                      for i, (size, o, k, s) in enumerate(zip(t.shape[1:3], out, kernel, stride)))
            counts = np.outer(cy, cx).astype(np.float64)
        with np.errstate(divide="ignore"):
            factor = kernel[0] * kernel[1] / counts
        if np.all(factor == factor.flat[0]):
            factor = factor[:1, :1]
    x = padded(ctx, x, _spatial_pads(explicit), 0)
    x, uncounted, extra = fit_windows(ctx, x, kernel, stride, uncounted)
    zero = ctx.zero_point(t.dtype)
    y = ctx.op("tosa.avg_pool2d", [x, zero, zero], {"kernel": list(kernel), "stride": list(stride), "pad": uncounted,
                                                     "acc_type": ACCUMULATOR[t.dtype]})
    y = drop_extra(ctx, y, extra)
    if factor is None or np.all(factor == 1):
        return y
    return ctx.mul(y, constant(ctx, factor.reshape((1, *factor.shape, 1)), t.dtype))


def _sqrt(ctx: LoweringContext, x: Value) -> Value:
    """sqrt(x) as POW(x, 0.5), TOSA having no SQRT (pow(0, 0.5) = 0, unlike x * rsqrt(x))."""
    t = ctx.type_of(x)
    return ctx.op("tosa.pow", [x, constant(ctx, np.full((1,) * t.rank, 0.5), t.dtype)])


def l2_pool(ctx: LoweringContext, x: Value, kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int]) -> Value:
    return _sqrt(ctx, average_pool(ctx, ctx.mul(x, x), kernel, stride, pad))


def _pool3d(ctx: LoweringContext, x: Value, pool: Callable[..., Value], hw_options: dict | None = None,
            depth_options: dict | None = None) -> Value:
    """A 3-D pool of NDHWC `x` as `pool` over (H, W) of each depth slice, then over depth."""
    n, d, h, w, c = ctx.type_of(x).shape
    kernel, stride, pad = ctx.attrs["kernel"], ctx.attrs["stride"], ctx.attrs["pad"]
    y = pool(ctx, ctx.reshape(x, (n * d, h, w, c)), kernel[1:], stride[1:], pad[2:], **(hw_options or {}))
    _, oh, ow, _ = ctx.type_of(y).shape
    y = pool(ctx, ctx.reshape(y, (n, d, oh * ow, c)), (kernel[0], 1), (stride[0], 1), (*pad[:2], 0, 0),
             **(depth_options or {}))
    return ctx.reshape(y, ctx.out_types[0].shape)


def _float_input(ctx: LoweringContext, what: str) -> Value:
    return ctx.cast(ctx.operands[0], float_type(ctx, what))


def _finish(ctx: LoweringContext, y: Value) -> Value:
    return ctx.cast(y, ctx.out_types[0].dtype)


# ------------------------------------------------------------------------------ rules
@rule("nn.max_pool2d")
def max_pool2d(ctx: LoweringContext) -> Value:
    x = ctx.cast(ctx.operands[0], _max_pool_type(ctx, "max_pool2d"))
    a = ctx.attrs
    return _finish(ctx, max_pool(ctx, x, a["kernel"], a["stride"], a["pad"], a.get("dilation", (1, 1))))


@rule("nn.avg_pool2d")
def avg_pool2d(ctx: LoweringContext) -> Value:
    a = ctx.attrs
    y = average_pool(ctx, _float_input(ctx, "avg_pool2d"), a["kernel"], a["stride"], a["pad"], a["count_pad"],
                     a["divisor"])
    return _finish(ctx, y)


@rule("nn.l2_pool2d")
def l2_pool2d(ctx: LoweringContext) -> Value:
    a = ctx.attrs
    return _finish(ctx, l2_pool(ctx, _float_input(ctx, "l2_pool2d"), a["kernel"], a["stride"], a["pad"]))


@rule("nn.max_pool3d")
def max_pool3d(ctx: LoweringContext) -> Value:
    x = ctx.cast(ctx.operands[0], _max_pool_type(ctx, "max_pool3d"))
    return _finish(ctx, _pool3d(ctx, x, max_pool))


@rule("nn.avg_pool3d")
def avg_pool3d(ctx: LoweringContext) -> Value:
    count_pad, divisor = ctx.attrs["count_pad"], ctx.attrs["divisor"]
    # with a divisor, the first pass sums (divisor 1) and the second divides by it
    y = _pool3d(ctx, _float_input(ctx, "avg_pool3d"), average_pool, {"count_pad": count_pad[2:], "divisor": 1 if divisor > 0 else 0},
                {"count_pad": (*count_pad[:2], 0, 0), "divisor": divisor})
    return _finish(ctx, y)


@rule("nn.l2_pool3d")
def l2_pool3d(ctx: LoweringContext) -> Value:
    x = _float_input(ctx, "l2_pool3d")
    return _finish(ctx, _sqrt(ctx, _pool3d(ctx, ctx.mul(x, x), average_pool)))
