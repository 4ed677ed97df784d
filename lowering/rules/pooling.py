"""Pooling: max_pool2d/3d, avg_pool2d/3d, l2_pool2d/3d, float and quantized (quantized max pooling:
shape.py, with the ops that move stored integers).

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
- l2_pool2d: sqrt (RECIPROCAL of RSQRT) of the average of x * x, padding uncounted, in f32; where
  the mean square of f32/bf16 data overflows f32, the same on x * 2^-64, times 2^64.
- 3-D pools: a 3-D pool is a 2-D pool over (H, W) of every depth slice, then a (depth x 1) pool
  over [N, D, OH*OW, C]. Max is exact. Averages are computed in f32 as window sums (both passes
  with divisor 1), times 1 / (divisor or the count): a window is a box, and nn's count of a box is
  the product of its per-axis counts.
Floats pool in their own type with an f32 accumulator; max pooling also takes i8 and i16 (and
quantized data whose input and result quantization agree: max commutes with dequantization).

Quantized lowering: average pooling.

- avg_pool2d with one quantization in and out: TOSA AVG_POOL2D with zero points (counted padding
  is padded with the zero point explicitly). Under LiteRT semantics it is TFLite's integer
  AveragePool (`_tflite_average_pool`).
- avg_pool3d: window sums from a CONV3D with a diagonal of ones (integer_convolution.py), one
  rounding.
Other cases (a rescaling average, a window count that varies) compute in f32 as CpuRef does
(quantization.float_fallback).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext, LoweringUnsupported
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import rescale, saturate_to
from ..registry import rule
from .convolution import ACCUMULATOR, FLOAT_TYPES, float_tensors, float_type
from .windows import drop_extra, fit_windows, slice_of
from .quantization import float_fallback, q_in, q_out
from .integer_convolution import ACCUMULATOR as INTEGER_ACCUMULATOR
from .integer_convolution import CONVOLUTION_CORE, quantized_convolution
from .shape import pad_constant


MAX_POOL_INTEGERS = ("i8", "i16")


def _lowest(dtype: str) -> float | int:
    """The value that never wins a max: -inf, or the integer minimum."""
    return -math.inf if dtype in FLOAT_TYPES else int(np.iinfo(TensorType((), dtype).numpy_dtype).min)


def _max_pool_type(ctx: LoweringContext, what: str) -> str:
    """The element type a max pool runs in: floats, i8/i16, or stored integers of one quantization."""
    x, y = ctx.nn_type("input"), ctx.nn_out_types[0]
    dtype = ctx.in_types[0].dtype
    if dtype in MAX_POOL_INTEGERS and x.quant == y.quant and x.dtype == y.dtype:
        return dtype
    if x.quant is None:
        ctx.check(max_pool_element_type, what)
    return float_type(ctx, what)


def max_pool_element_type(ctx: LoweringContext, what: str) -> str | None:
    """An unquantized max pool's operand is floating point, i8 or i16 (i8 and i16 with a result of the
    same type): TOSA MAX_POOL2D takes those only."""
    dtype = ctx.in_types[0].dtype
    if dtype not in FLOAT_TYPES:
        return f"{what} on {dtype} tensors: TOSA MAX_POOL2D takes floats, i8 and i16 only"
    return None


def _spatial_pads(pad: Sequence[int]) -> list[int]:
    """[top, bottom, left, right] as PAD's per-dimension pairs of an NHWC tensor."""
    return [0, 0, *pad, 0, 0]


def require_static_windows(ctx: LoweringContext, sizes: Sequence[int], what: str) -> None:
    """Pools need their spatial sizes: TOSA's windows must tile the padded input exactly, and the
    divisors, the clipped windows and the explicit padding all follow from the sizes."""
    ctx.check(static_windows, sizes, what)


def static_windows(ctx: LoweringContext, sizes: Sequence[int], what: str) -> str | None:
    """A pool's input height and width are known when converting (not dynamic): TOSA's windows must tile
    the padded input exactly, and the divisors and explicit padding follow from the sizes."""
    if any(size < 0 for size in sizes):
        return f"{what} over a dynamic height or width ({'x'.join(map(str, sizes))})"
    return None


def clip_windows(sizes: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
                 pad: Sequence[int]) -> tuple[list[int], list[int]]:
    """Kernel and [before, after] pads per axis whose windows cover the same input elements as the
    given ones, each window no longer than the input plus the leading padding.

    Only for pools that ignore padding (max, average not counting it): a window reaching past the
    input's end on both sides of every output position gains nothing from its extra taps, and the
    reference model's time grows with the taps (a kernel of 2**31 - 1 never ends).
    - Every window already reaches past the end (kernel - before >= size): cut the taps past it off
      the kernel and the trailing padding; the windows keep their starts and still end past the input.
    - Every window then starts at or before the input's start (before - (out - 1) * stride >= 0): cut
      the leading taps off the kernel and the leading padding; the windows keep their ends."""
    kernel, pad = list(kernel), list(pad)
    for i, (size, s) in enumerate(zip(sizes, stride)):
        out = (size + pad[2 * i] + pad[2 * i + 1] - kernel[i]) // s + 1
        past_end = kernel[i] - pad[2 * i] - size
        if past_end > 0:
            kernel[i] -= past_end
            pad[2 * i + 1] -= past_end
        before_start = min(pad[2 * i] - (out - 1) * s, kernel[i] - 1)
        if before_start > 0:
            kernel[i] -= before_start
            pad[2 * i] -= before_start
    return kernel, pad


def max_pool(ctx: LoweringContext, x: Value, kernel: Sequence[int], stride: Sequence[int], pad: Sequence[int],
             dilation: Sequence[int] = (1, 1)) -> Value:
    """nn's max_pool2d of NHWC `x` (TOSA MAX_POOL2D where it fits, else the decompositions above)."""
    lowest = _lowest(ctx.type_of(x).dtype)
    if any(d > 1 for d in dilation):
        return _dilated_max_pool(ctx, x, kernel, stride, pad, dilation, lowest)
    require_static_windows(ctx, ctx.type_of(x).shape[1:3], "max_pool2d")
    kernel, pad = clip_windows(ctx.type_of(x).shape[1:3], kernel, stride, pad)
    if any(p >= kernel[i // 2] for i, p in enumerate(pad)):
        x, pad = pad_constant(ctx, x, _spatial_pads(pad), lowest), [0, 0, 0, 0]
    x, pad, extra = fit_windows(ctx, x, kernel, stride, pad)
    y = ctx.tosa.max_pool2d(x, kernel=list(kernel), stride=list(stride), pad=pad)
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
    x = pad_constant(ctx, x, _spatial_pads([pad[0], max(after[0], 0), pad[2], max(after[1], 0)]), lowest)
    x = slice_of(ctx, x, (0, 0, 0, 0), (n, extent[0], extent[1], c))
    by, bx = blocks
    phases = ctx.reshape(ctx.transpose(ctx.reshape(x, (n, by, dy, bx, dx, c)), (2, 4, 0, 1, 3, 5)),
                         (dy * dx * n, by, bx, c))
    pooled = ctx.tosa.max_pool2d(phases, kernel=[kh, kw], stride=[1, 1], pad=[0, 0, 0, 0])
    ph, pw = by - kh + 1, bx - kw + 1
    y = ctx.reshape(ctx.transpose(ctx.reshape(pooled, (dy, dx, n, ph, pw, c)), (2, 3, 0, 4, 1, 5)),
                    (n, ph * dy, pw * dx, c))
    oh, ow = out
    y = slice_of(ctx, y, (0, 0, 0, 0), (n, oh * sy, ow * sx, c))
    if sy == sx == 1:
        return y
    every_stride = slice_of(ctx, ctx.reshape(y, (n, oh, sy, ow, sx, c)), (0,) * 6, (n, oh, 1, ow, 1, c))
    return ctx.reshape(every_stride, (n, oh, ow, c))


def window_counts(size: int, out: int, kernel: int, stride: int, pad_before: int, counted_before: int,
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
    require_static_windows(ctx, t.shape[1:3], "avg_pool2d")
    if divisor == 0 and not any(count_pad):
        kernel, pad = clip_windows(t.shape[1:3], kernel, stride, pad)
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
            cy, cx = (window_counts(size, o, k, s, pad[2 * i], count_pad[2 * i], count_pad[2 * i + 1])
                      for i, (size, o, k, s) in enumerate(zip(t.shape[1:3], out, kernel, stride)))
            counts = np.outer(cy, cx).astype(np.float64)
        with np.errstate(divide="ignore"):
            factor = kernel[0] * kernel[1] / counts
        if np.all(factor == factor.flat[0]):
            factor = factor[:1, :1]
    x = pad_constant(ctx, x, _spatial_pads(explicit), 0)
    if factor is None:  # the counted padding is now input, and the rest is ignored: clip to it
        kernel, uncounted = clip_windows(ctx.type_of(x).shape[1:3], kernel, stride, uncounted)
    x, uncounted, extra = fit_windows(ctx, x, kernel, stride, uncounted)
    zero = ctx.zero_point(t.dtype)
    y = ctx.tosa.avg_pool2d(x, zero, zero, kernel=list(kernel), stride=list(stride), pad=uncounted,
                            acc_type=ACCUMULATOR[t.dtype])
    y = drop_extra(ctx, y, extra)
    if factor is None or np.all(factor == 1):
        return y
    return ctx.mul(y, ctx.const(factor.reshape((1, *factor.shape, 1)), t.dtype))


def _sqrt(ctx: LoweringContext, x: Value) -> Value:
    """sqrt(x) as RECIPROCAL(RSQRT(x)), TOSA having no SQRT. POW(x, 0.5) would be one rounding, but
    TOSA leaves POW unpredictable for NaN and infinite operands (which an L2 pool can produce), and
    x * RSQRT(x) gives NaN for 0."""
    return ctx.tosa.reciprocal(ctx.tosa.rsqrt(x))


# L2 pools square in f32; magnitudes beyond 2^63 would overflow there, so those windows are redone
# on x * 2^-64 (exact: a power of two) and scaled back.
L2_RESCALE = 2.0 ** -64


def l2_pool(ctx: LoweringContext, x: Value, mean: Callable[[Value], Value]) -> Value:
    """sqrt(mean(x * x)) of float `x`, `mean` being the pool's average over windows (padding not
    counted). Computed in f32 whatever x's float type: f16 squares always fit it; for f32 and bf16
    data, windows whose mean square overflows f32 take the result of the rescaled input."""
    dtype = ctx.type_of(x).dtype
    x = ctx.cast(x, "f32")
    y = _sqrt(ctx, mean(ctx.mul(x, x)))
    if dtype != "f16":
        rank = ctx.type_of(x).rank
        small = ctx.mul(x, ctx.scalar(L2_RESCALE, "f32", rank))
        rescaled = ctx.mul(_sqrt(ctx, mean(ctx.mul(small, small))), ctx.scalar(1 / L2_RESCALE, "f32", rank))
        overflowed = ctx.tosa.equal(y, ctx.scalar(math.inf, "f32", rank))
        y = ctx.tosa.select(*ctx.same_rank(overflowed, rescaled, y))
    return ctx.cast(y, dtype)


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


def average_pool3d(ctx: LoweringContext, x: Value, count_pad: Sequence[int], divisor: int) -> Value:
    """nn's avg_pool3d (the op's window attributes) of f32 NDHWC `x`: window sums by two 2-D passes
    (padding adds zeros), times one constant per output position, 1 / (divisor or the product of the
    per-axis counts). Sums, not averages, pass between the 2-D pools: an average would carry NaN
    for a (H, W) window of uncounted padding into a counted depth-padding row, where nn counts it."""
    sums = _pool3d(ctx, x, average_pool, {"divisor": 1}, {"divisor": 1})
    if divisor > 0:
        counts = np.full((1, 1, 1), float(divisor))
    else:
        counts = np.ones((1, 1, 1))
        kernel, stride, pad = ctx.attrs["kernel"], ctx.attrs["stride"], ctx.attrs["pad"]
        for i, (size, out) in enumerate(zip(ctx.type_of(x).shape[1:4], ctx.out_types[0].shape[1:4])):
            axis = window_counts(size, out, kernel[i], stride[i], pad[2 * i], count_pad[2 * i], count_pad[2 * i + 1])
            counts = counts * axis.reshape([-1 if j == i else 1 for j in range(3)])
    with np.errstate(divide="ignore"):
        scale = 1 / counts
    if np.all(scale == scale.flat[0]):
        scale = scale[:1, :1, :1]
    return ctx.mul(sums, ctx.const(scale.reshape((1, *scale.shape, 1)), "f32"))


def _float_input(ctx: LoweringContext, what: str) -> Value:
    return ctx.cast(ctx.operand("input"), float_type(ctx, what))


def _finish(ctx: LoweringContext, y: Value) -> Value:
    return ctx.cast(y, ctx.out_types[0].dtype)


# ------------------------------------------------------------------------------ rules
@rule("nn.max_pool2d", checks=(max_pool_element_type, float_tensors, static_windows))
def max_pool2d(ctx: LoweringContext) -> Value:
    x = ctx.cast(ctx.operand("input"), _max_pool_type(ctx, "max_pool2d"))
    a = ctx.attrs
    return _finish(ctx, max_pool(ctx, x, a["kernel"], a["stride"], a["pad"], a.get("dilation", (1, 1))))


@rule("nn.avg_pool2d", checks=(float_tensors, static_windows))
def avg_pool2d(ctx: LoweringContext) -> Value:
    a = ctx.attrs
    y = average_pool(ctx, _float_input(ctx, "avg_pool2d"), a["kernel"], a["stride"], a["pad"], a["count_pad"],
                     a["divisor"])
    return _finish(ctx, y)


@rule("nn.l2_pool2d", checks=(float_tensors, static_windows))
def l2_pool2d(ctx: LoweringContext) -> Value:
    a = ctx.attrs
    return _finish(ctx, l2_pool(ctx, _float_input(ctx, "l2_pool2d"),
                                lambda v: average_pool(ctx, v, a["kernel"], a["stride"], a["pad"])))


@rule("nn.max_pool3d", checks=(max_pool_element_type, float_tensors, static_windows))
def max_pool3d(ctx: LoweringContext) -> Value:
    x = ctx.cast(ctx.operand("input"), _max_pool_type(ctx, "max_pool3d"))
    return _finish(ctx, _pool3d(ctx, x, max_pool))


@rule("nn.avg_pool3d", checks=(float_tensors, static_windows))
def avg_pool3d(ctx: LoweringContext) -> Value:
    x = ctx.cast(_float_input(ctx, "avg_pool3d"), "f32")
    return _finish(ctx, average_pool3d(ctx, x, ctx.attrs["count_pad"], ctx.attrs["divisor"]))


@rule("nn.l2_pool3d", checks=(float_tensors, static_windows))
def l2_pool3d(ctx: LoweringContext) -> Value:
    return _finish(ctx, l2_pool(ctx, _float_input(ctx, "l2_pool3d"), lambda v: average_pool3d(ctx, v, (0,) * 6, 0)))


def _pools_integers(ctx: LoweringContext) -> bool:
    """One per-tensor quantization in and out, of a type AVG_POOL2D sums, no divisor of its own."""
    xq, yq = q_in(ctx), q_out(ctx)
    return (xq is not None and yq is not None and not xq.per_axis and xq == yq and xq.dtype in INTEGER_ACCUMULATOR
            and int(ctx.attrs["divisor"]) <= 0)


@rule("nn.avg_pool2d", quantized=True, checks=(static_windows,), benefit=20,
      when=lambda ctx: not _pools_integers(ctx))
def avg_pool2d_in_float(ctx: LoweringContext) -> Value | list[Value]:
    """Quantizations that differ, or a divisor: CpuRef's float computation."""
    return float_fallback(ctx)


def _pool_windows(ctx: LoweringContext) -> tuple[QInfo, list[int], list[int], list[int], list[int]]:
    """The quantization, kernel, stride, pad and counted pad of an integer pool (windows reaching past the
    input only over padding nn does not count are clipped)."""
    xq = q_in(ctx)
    assert xq is not None, "avg_pool2d_in_float takes unquantized data"
    kernel, stride = list(ctx.attrs["kernel"]), list(ctx.attrs["stride"])
    pad, count_pad = list(ctx.attrs["pad"]), list(ctx.attrs["count_pad"])
    require_static_windows(ctx, ctx.in_types[0].shape[1:3], "avg_pool2d")
    if not any(count_pad):
        kernel, pad = clip_windows(ctx.in_types[0].shape[1:3], kernel, stride, pad)
    return xq, kernel, stride, pad, count_pad


@rule("nn.avg_pool2d", quantized=True, checks=(static_windows,), benefit=10, semantics="litert",
      when=lambda ctx: not any(ctx.attrs["count_pad"]))
def litert_avg_pool2d(ctx: LoweringContext) -> Value:
    """TFLite's integer AveragePool (padding not counted: `_tflite_average_pool`)."""
    xq, kernel, stride, pad, _ = _pool_windows(ctx)
    return _tflite_average_pool(ctx, xq, kernel, stride, pad)


@rule("nn.avg_pool2d", quantized=True, checks=(static_windows,))
def quantized_avg_pool2d(ctx: LoweringContext) -> Value | list[Value]:
    """One quantization in and out: AVG_POOL2D with the zero point (TOSA leaves padding out of the
    count; padding nn counts is padded with the zero point, i.e. real zeros, before)."""
    xq, kernel, stride, pad, count_pad = _pool_windows(ctx)
    yq = xq  # (_pools_integers: one quantization in and out)
    uncounted = [p - c for p, c in zip(pad, count_pad)]
    if any(u >= kernel[i // 2] for i, u in enumerate(uncounted)):
        return float_fallback(ctx)
    x = ctx.operand("input")
    if any(count_pad):
        x = pad_constant(ctx, x, [0, 0, *count_pad, 0, 0], xq.zero_point)
    x, uncounted, extra = fit_windows(ctx, x, kernel, stride, uncounted)
    zp_in, zp_out = ctx.zero_point(xq.dtype, xq.zero_point), ctx.zero_point(yq.dtype, yq.zero_point)
    y = ctx.tosa.avg_pool2d(x, zp_in, zp_out, kernel=kernel, stride=stride, pad=uncounted, acc_type="i32")
    return drop_extra(ctx, y, extra)


def _reciprocal_scale_exact(xq: QInfo, counts: np.ndarray) -> bool:
    """Whether TOSA AVG_POOL2D's division of a window sum S by its count n rounds S / n half away from
    zero for every sum of stored integers of xq's type. It multiplies by reciprocal_scale(n) =
    floor((2**30 + 1) * 2**k / n) / 2**(30 + k) (2**(k-1) < n <= 2**k), never below 1 / n, and rounds
    half up: an excess e over 1 / n moves S / n by e * |S|, which leaves every rounding as exact
    arithmetic's while e * max |S| < 1 / (2 n) (values of S / n + 1/2 are 1 / (2 n) apart). Above
    zero that is half up; below, the excess pushes exact halves down: half away from zero, TFLite's
    (S +- n // 2) / n truncated."""
    largest = max(abs(xq.qmin + xq.offset), abs(xq.qmax + xq.offset))
    for n in np.unique(counts):
        n = int(n)
        k = (n - 1).bit_length()
        excess = (((1 << 30) + 1 << k) // n) / 2.0 ** (30 + k) - 1.0 / n
        if excess * largest * n >= 1.0 / (2 * n):
            return False
    return True


def _tflite_average_pool(ctx: LoweringContext, xq: QInfo, kernel: list[int], stride: list[int],
                         pad: list[int]) -> Value:
    """TFLite's integer AveragePool (input and output quantized alike, padding not counted): the sum
    of the stored integers of each window divided by its count n, rounded half away from zero as
    (sum +- n // 2) / n truncated. TOSA AVG_POOL2D computes exactly that with zero points that make
    it sum the stored integers (0, or -128 for uint8 carried as int8: TFLite sums the unsigned
    values) wherever `_reciprocal_scale_exact` holds (every 8-bit pool; 16-bit windows up to
    thousands of elements): one op every Ethos-U maps. Elsewhere: exact window sums from a
    DEPTHWISE_CONV2D with weights 1 (padding reads 0 and is out of the count), the sign's half
    added, INTDIV (truncating) by the per-position count."""
    x = ctx.operand("input")
    _, h, w, c = ctx.type_of(x).shape
    _, oh, ow, _ = ctx.out_types[0].shape
    counts = np.outer(*(window_counts(size, out, k, s, pad[2 * i], 0, 0)
                        for i, (size, out, k, s) in enumerate(zip((h, w), (oh, ow), kernel, stride))))
    if np.all(counts == counts.flat[0]):
        counts = counts[:1, :1]
    counts = counts.reshape((1, *counts.shape, 1)).astype(np.int64)
    if not counts.all():  # an INTDIV by 0 has no result (the reference model stops)
        raise LoweringUnsupported("a window lies wholly in the padding: TFLite's AveragePool refuses to "
                                  "average no elements")
    x, window_pad, extra = fit_windows(ctx, x, kernel, stride, pad)
    if _reciprocal_scale_exact(xq, counts):
        zp = ctx.zero_point(xq.dtype, -xq.offset)
        y = ctx.tosa.avg_pool2d(x, zp, zp, kernel=kernel, stride=stride, pad=window_pad, acc_type="i32")
        return drop_extra(ctx, y, extra)
    acc_type = INTEGER_ACCUMULATOR[xq.dtype]
    ones = ctx.const(np.ones((*kernel, c, 1), np.int8), "i8")
    total = ctx.tosa.depthwise_conv2d(x, ones, ctx.const(np.zeros(c, np.int64), acc_type),
                                      ctx.zero_point(xq.dtype), ctx.zero_point("i8"),
                                      pad=window_pad, stride=stride, dilation=[1, 1], acc_type=acc_type)
    total = drop_extra(ctx, total, extra)
    if acc_type == "i48":  # |sum| <= 32768 * n fits i32: an exact RESCALE by 1
        total = rescale(ctx, total, 1.0, "i32")
    if xq.offset:  # uint8 data: TFLite sums the unsigned integers, x + 128 each
        total = ctx.tosa.add(total, ctx.const(xq.offset * counts, "i32"))
    positive = ctx.tosa.greater(total, ctx.scalar(0, "i32", 4))
    halves = (ctx.const(counts // 2, "i32"), ctx.const(-(counts // 2), "i32"))
    half = ctx.tosa.select(*ctx.same_rank(positive, *halves))
    mean = ctx.tosa.intdiv(ctx.tosa.add(total, half), ctx.const(counts, "i32"))
    if xq.offset:
        mean = ctx.tosa.sub(mean, ctx.scalar(xq.offset, "i32", 4))
    return saturate_to(ctx, mean, xq.dtype)


@rule("nn.avg_pool3d", quantized=True, checks=CONVOLUTION_CORE)
def quantized_avg_pool3d(ctx: LoweringContext) -> Value | list[Value]:
    """TOSA has no 3-D average pool: window sums come exact from a CONV3D with weights 1 on the
    diagonal of [C, KD, KH, KW, C] (padding reads the zero point), divided by the window size in one
    rounding. A count that varies across windows (padding left out of it) computes in f32."""
    xq, yq = q_in(ctx), q_out(ctx)
    kernel, pad, count_pad = list(ctx.attrs["kernel"]), list(ctx.attrs["pad"]), list(ctx.attrs["count_pad"])
    divisor = int(ctx.attrs["divisor"])
    if (xq is None or yq is None or xq.per_axis or yq.per_axis or xq.dtype != "i8"
            or (count_pad != pad and divisor <= 0)):
        return float_fallback(ctx)
    count = divisor if divisor > 0 else math.prod(kernel)
    channels = ctx.type_of(ctx.operand("input")).shape[-1]
    weights = np.zeros((channels, *kernel, channels), np.int8)
    weights[np.arange(channels), ..., np.arange(channels)] = 1
    ones = QInfo("i8", (1.0,), (0,), None)
    attrs = {"stride": list(ctx.attrs["stride"]), "pad": pad, "dilation": [1, 1, 1]}
    factor = np.full(channels, xq.scale / (count * yq.scale))
    return quantized_convolution(ctx, TosaBuilder.conv3d, ctx.operand("input"), xq, weights, ones, np.zeros(channels, np.int64),
                                 factor, yq, (1, 2, 3, 4), attrs, kernel)
