"""Reductions over several axes (keep_dims both ways) and argmax/argmin, float and quantized.

TOSA reduces one axis at a time and keeps it with size 1, so a reduction is a chain of TOSA
reductions and a final RESHAPE. Element types TOSA lacks a form for are widened: f16/bf16 sums,
means and products accumulate in f32; integer sums, means, products and unsigned max/min work in
i32 (TOSA's REDUCE_SUM/PRODUCT have no i8/i16 form), narrowing back wraps as nn's integers do;
boolean sums and means are REDUCE_ANY (the result type is boolean: any non-zero count is true).

Quantized lowering: reductions (sum, mean, max, min, prod) in i32 fixed point, the quantized
counterparts of the float rules above.

- sum and mean add (x - zp) exactly in i32 and RESCALE once (the mean divides by the count there);
  over H and W of NHWC data the sum is a DEPTHWISE_CONV2D of ones and TFLite's mean an AVG_POOL2D
  where that is exact (`mean_as_avg_pool`);
- max and min select stored integers (the encoding is monotonic);
- prod computes in f32 as CpuRef does, or under LiteRT semantics as TFLite's integer chain.

Under LiteRT semantics (lowering/semantics.py) sum and mean follow TFLite's integer kernels: their
multipliers (QuantizeMultiplier, `tflite_mean_multiplier`) and MultiplyByQuantizedMultiplier's two
roundings (RESCALE DOUBLE_ROUND).

Quantized sums and means over H and W of an NHWC tensor (a global pool) in the shapes NPU compilers
map: Vela runs REDUCE_SUM over H and W through transposes, and lowers TFLite's own MEAN to a
DEPTHWISE_CONV2D of ones, which is what these helpers build.

- `spatial_sum`: the exact i32 sum of (x - zp) over H and W as one DEPTHWISE_CONV2D with weights 1,
  the input zero point as its input_zp, no padding: the same integers as a widening RESCALE and two
  REDUCE_SUMs (both semantics requantize that sum as before).
- `mean_as_avg_pool`: TFLite's mean as AVG_POOL2D (+ a RESCALE to the output quantization) where
  that gives TFLite's integer for every sum the window can have (checked here, all of them).
  AVG_POOL2D rounds sum / count once; TFLite's mean rounds twice (MultiplyByQuantizedMultiplier: the
  rounding doubling high multiply, then a rounding shift, by a truncated multiplier of
  s_in / (count * s_out)), so 7 / 16 is 0 to AVG_POOL2D and 1 to TFLite. Over windows of 2 to 196
  elements, six output scales and three zero-point pairs, the two agree only for windows of 2 or 3
  elements; every global pool of a real network (ResNet-50's 7 x 7, MobileNet's) keeps the exact
  sum and TFLite's own RESCALE, at the same Vela cost as TFLite's MEAN.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import Value

from ..context import LoweringContext, float_rule_unquantized
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import narrow, requantize_like_tflite, rescale, rescale_values, saturate_to, widen
from ..fixed_point.tflite import multiply_by_quantized_multiplier, quantize_multiplier
from ..npu_target import choose
from ..registry import rule
from .arith import Arith, FLOAT_TYPES, UNSIGNED_WIDTH, to_i32
from .cast import convert
from .quantization import (float_fallback, float_when_an_end_is_not_quantized, q_in, q_out, quantized_ends,
                           requantize_value)
from .shape import product_tree, slice_axis


# a TOSA reduction's typed builder method, unbound (TosaBuilder.reduce_sum): `reduction(ctx.tosa, x, axis=k)`
Reduction = Callable[..., Value]
REDUCE: dict[str, Reduction] = {
    "nn.reduce_sum": TosaBuilder.reduce_sum, "nn.reduce_mean": TosaBuilder.reduce_sum,
    "nn.reduce_max": TosaBuilder.reduce_max, "nn.reduce_min": TosaBuilder.reduce_min,
    "nn.reduce_prod": TosaBuilder.reduce_product, "nn.reduce_any": TosaBuilder.reduce_any,
    "nn.reduce_all": TosaBuilder.reduce_all}
# on booleans: sums, means and maxima are "any", products and minima "all"
BOOLEAN_REDUCE: dict[str, Reduction] = {
    "nn.reduce_sum": TosaBuilder.reduce_any, "nn.reduce_mean": TosaBuilder.reduce_any,
    "nn.reduce_max": TosaBuilder.reduce_any, "nn.reduce_min": TosaBuilder.reduce_all,
    "nn.reduce_prod": TosaBuilder.reduce_all, "nn.reduce_any": TosaBuilder.reduce_any,
    "nn.reduce_all": TosaBuilder.reduce_all}


def reduce_axes(ctx: LoweringContext, x: Value, reduction: Reduction, axes: Sequence[int]) -> Value:
    """`reduction` (a TosaBuilder reduce method) over each of `axes` in turn (the axes stay, with size 1)."""
    for axis in sorted(set(int(a) for a in axes)):
        if ctx.type_of(x).shape[axis] != 1 or reduction in (TosaBuilder.reduce_any, TosaBuilder.reduce_all):
            x = reduction(ctx.tosa, x, axis=axis)
    return x


def integer_extremum_fits_i32(ctx: LoweringContext) -> str | None:
    """A max, min or mean reduction, argmax or argmin of integers is not of ui32 or ui64 data: TOSA's
    widest integer is i32, signed (sums and products wrap as nn's do, and any/all see booleans)."""
    nn_dtype = ctx.nn_type("x").dtype
    wrapping = ("nn.reduce_sum", "nn.reduce_prod", "nn.reduce_any", "nn.reduce_all")
    if nn_dtype in ("ui32", "ui64") and ctx.op_name not in wrapping:
        return f"{ctx.op_name} of {nn_dtype} (TOSA's widest integer is i32, signed)"
    return None


@rule(*REDUCE, constraints=(integer_extremum_fits_i32,))
def reduce(ctx: LoweringContext) -> Value:
    ctx.check(float_rule_unquantized, "reductions", [ctx.nn_type("x")])
    x = ctx.operand("x")
    axes = [int(a) for a in ctx.attrs["axes"]]
    op = ctx.op_name
    dtype, nn_dtype, out_nn = ctx.type_of(x).dtype, ctx.nn_type("x").dtype, ctx.nn_out_types[0].dtype
    count = int(np.prod([ctx.type_of(x).shape[a] for a in axes], dtype=np.int64))
    if op in ("nn.reduce_any", "nn.reduce_all") and dtype != "i1":
        x = convert(ctx, x, nn_dtype, "i1")
        dtype = "i1"
    if dtype == "i1":
        y = reduce_axes(ctx, x, BOOLEAN_REDUCE[op], axes)
        y = convert(ctx, y, "i1", out_nn)
    elif dtype in FLOAT_TYPES:
        in_f32 = op in ("nn.reduce_sum", "nn.reduce_mean", "nn.reduce_prod")  # accumulate in f32
        y = reduce_axes(ctx, ctx.cast(x, "f32") if in_f32 else x, REDUCE[op], axes)
        if op == "nn.reduce_mean":
            y = ctx.mul(y, ctx.scalar(1.0 / count, "f32", ctx.type_of(y).rank))
        y = ctx.cast(y, dtype)
    else:
        direct = op in ("nn.reduce_max", "nn.reduce_min") and nn_dtype not in UNSIGNED_WIDTH
        wide = x if direct else to_i32(ctx, x, nn_dtype)
        if op == "nn.reduce_prod":
            for axis in sorted(set(axes)):
                wide = product_tree(ctx, wide, axis)
            y = wide
        else:
            y = reduce_axes(ctx, wide, REDUCE[op], axes)
        if op == "nn.reduce_mean":  # numpy's float mean, truncated toward zero by the integer result
            y = ctx.tosa.intdiv(y, ctx.scalar(count, "i32", ctx.type_of(y).rank))
        y = ctx.cast(y, ctx.out_types[0].dtype)
    return ctx.reshape(y, ctx.out_types[0].shape)


# ------------------------------------------------------------------------------ argmax / argmin
@rule("nn.argmax", "nn.argmin", constraints=(integer_extremum_fits_i32,))
def arg_extremum(ctx: LoweringContext) -> Value:
    """First index of the extremum. TOSA ARGMAX (first maximum, NaN wins) takes f32/f16/bf16 and
    i8; argmin runs it on -x (floats) or ~x (i8: order-reversing without overflow). Other integer
    types use i32 arithmetic instead: the extremum, where x equals it, the smallest such index."""
    x = ctx.operand("x")  # quantized data orders as its stored integers do (positive scales)
    axis = int(ctx.attrs["axis"])
    t = ctx.type_of(x)
    nn_dtype = ctx.nn_type("x").dtype
    is_min = ctx.op_name == "nn.argmin"
    if t.dtype == "i1":
        x, t = ctx.cast(x, "i8"), t.with_dtype("i8")
    if t.dtype in FLOAT_TYPES or (t.dtype == "i8" and nn_dtype not in UNSIGNED_WIDTH):
        if is_min:
            x = ctx.negate(x) if t.dtype in FLOAT_TYPES else ctx.tosa.bitwise_not(x)
        index = ctx.tosa.argmax(x, axis=axis)
    else:
        wide = to_i32(ctx, x, nn_dtype)
        a = Arith(ctx, "i32", t.rank)
        extremum = ctx.tosa.reduce_min(wide, axis=axis) if is_min else ctx.tosa.reduce_max(wide, axis=axis)
        positions = np.arange(t.shape[axis], dtype=np.int32).reshape([-1 if i == axis else 1 for i in range(t.rank)])
        candidates = a.select(a.eq(wide, extremum), ctx.const(positions, "i32"), t.shape[axis])
        index = ctx.tosa.reduce_min(candidates, axis=axis)
    return ctx.reshape(ctx.cast(index, ctx.out_types[0].dtype), ctx.out_types[0].shape)


def sum_fits_i32(ctx: LoweringContext, span: int, count: int) -> str | None:
    """A quantized sum or mean adds few enough values that their sum fits i32 (span * count < 2^30)."""
    if span * count >= 1 << 30:
        return f"the quantized sum does not fit i32 ({count} values of span {span})"
    return None


def product_shift_in_range(ctx: LoweringContext, exponent: int) -> str | None:
    """Under litert semantics, a quantized reduce_prod's scaling exponent gives a TOSA MUL shift of 1 to 63."""
    if not 1 <= 15 - exponent <= 63:
        return f"the quantized product's scaling exponent {exponent} is out of TOSA MUL's shifts"
    return None


def _keep_dims_result(ctx: LoweringContext, y: Value) -> Value:
    return ctx.reshape(y, ctx.out_types[0].shape)


float_when_an_end_is_not_quantized("nn.reduce_sum", "nn.reduce_mean", "nn.reduce_max", "nn.reduce_min")


def _summed(ctx: LoweringContext) -> tuple[Value, QInfo, QInfo, list[int], int]:
    """The operand, its and the result's quantizations, the axes and the number of values each sum adds."""
    xq, yq = quantized_ends(ctx)
    x = ctx.operand("x")
    axes = [int(a) for a in ctx.attrs["axes"]]
    count = math.prod(ctx.type_of(x).shape[a] for a in axes)
    ctx.check(sum_fits_i32, xq.span, count)
    return x, xq, yq, axes, count


def _sum(ctx: LoweringContext, x: Value, xq: QInfo, axes: Sequence[int]) -> Value:
    """The i32 sum of x - zp: over H and W a DEPTHWISE_CONV2D of ones (what NPU compilers map), else REDUCE_SUMs."""
    return spatial_sum(ctx, x, xq, axes) or reduce_axes(ctx, widen(ctx, x, xq), TosaBuilder.reduce_sum, axes)


@rule("nn.reduce_mean", quantized=True, checks=(sum_fits_i32,), benefit=10, semantics="litert")
def litert_reduce_mean(ctx: LoweringContext) -> Value:
    """TFLite's mean: the sum times its truncated multiplier (`tflite_mean_multiplier`), as one AVG_POOL2D
    where that gives its integers (`mean_as_avg_pool`)."""
    x, xq, yq, axes, count = _summed(ctx)
    multiplier, exponent = tflite_mean_multiplier(xq.scale / yq.scale, count)
    pooled = mean_as_avg_pool(ctx, x, xq, yq, axes, multiplier, exponent)
    if pooled is not None:
        return _keep_dims_result(ctx, pooled)
    return _keep_dims_result(ctx, requantize_like_tflite(ctx, _sum(ctx, x, xq, axes), multiplier, exponent, yq))


@rule("nn.reduce_sum", "nn.reduce_mean", quantized=True, checks=(sum_fits_i32,))
def reduce_sum(ctx: LoweringContext) -> Value:
    """The exact sum, one RESCALE to the result: CpuRef's sum and mean, and LiteRT's sum."""
    x, xq, yq, axes, count = _summed(ctx)
    mean = ctx.op_name == "nn.reduce_mean"
    total = _sum(ctx, x, xq, axes)
    # CpuRef's sum, and LiteRT's: its SUM kernel (the builtin one; the reference kernel reads int8
    # data as uint8) rounds sum * s_in / s_out half away from zero
    factor = xq.scale / yq.scale / (count if mean else 1)
    return _keep_dims_result(ctx, narrow(ctx, total, factor, yq, max_abs=xq.span * count, halves_away=True,
                                         rounding="SINGLE_ROUND"))


def tflite_mean_multiplier(ratio: float, count: int) -> tuple[int, int]:
    """TFLite's multiplier for a sum (count 1) or a mean of `count` elements (QuantizedMeanOrSum):
    QuantizeMultiplier(s_in / s_out), then for a mean the multiplier times 2**k / count truncated,
    k = floor(log2 count) limited to 32 and to 31 + exponent, and the exponent lowered by k. That
    truncated quotient is not the rounded s_in / (count * s_out): results differ near halves."""
    multiplier, exponent = quantize_multiplier(ratio)
    if count <= 1:
        return multiplier, exponent
    k = min(count.bit_length() - 1, 32, 31 + exponent)
    return (multiplier << k) // count, exponent - k


@rule("nn.reduce_max", "nn.reduce_min", quantized=True)
def reduce_extremum(ctx: LoweringContext) -> Value:
    xq, yq = quantized_ends(ctx)
    y = reduce_axes(ctx, ctx.operand("x"), REDUCE[ctx.op_name], ctx.attrs["axes"])
    return _keep_dims_result(ctx, requantize_value(ctx, y, xq, yq))


def _int8_or_int16_ends(ctx: LoweringContext) -> bool:
    """Both ends quantized, int8 or int16 data (TFLite's integer product takes those only)."""
    xq, yq = q_in(ctx), q_out(ctx)
    return xq is not None and yq is not None and not xq.offset and xq.dtype in ("i8", "i16")


@rule("nn.reduce_prod", quantized=True, checks=(product_shift_in_range,), benefit=10, semantics="litert",
      when=_int8_or_int16_ends)
def litert_reduce_prod(ctx: LoweringContext) -> Value:
    """TFLite's QuantizedReduceProd, a chain in the input's element order: p = x0 - zp, then
    p = round(p * (xi - zp) * r / 2**t) for each next element, and round(p * r / 2**t) + zp_out at the end,
    with (r, t) the 16-bit reduced form MultiplyByQuantizedMultiplier takes for an int64 value of the
    multiplier of s_in / s_out**(1 / n). Each step is a TOSA MUL with shift t (its 64-bit product, half up)."""
    xq, yq = quantized_ends(ctx)
    x = ctx.operand("x")
    shape = ctx.type_of(x).shape
    axes = sorted(set(int(a) % len(shape) for a in ctx.attrs["axes"]))
    kept = [d for d in range(len(shape)) if d not in axes]
    n = math.prod(shape[a] for a in axes)
    # the reduced elements of each output, last axis, in TFLite's (row-major) order
    x = ctx.reshape(ctx.transpose(x, kept + axes), [*(shape[d] for d in kept), n])
    multiplier, exponent = quantize_multiplier(xq.scale / math.pow(yq.scale, 1.0 / n))
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    shift = 15 - exponent
    ctx.check(product_shift_in_range, exponent)
    rank = len(kept) + 1
    shift_operand = ctx.const(np.array([shift], np.int8), "i8")
    r = ctx.scalar(reduced, "i32", rank)

    def scaled_mul(a: Value, b: Value) -> Value:
        return ctx.tosa.mul(a, b, shift_operand)

    product = widen(ctx, slice_axis(ctx, x, rank - 1, 0, 1), xq)
    for i in range(1, n):
        product = scaled_mul(product, ctx.mul(widen(ctx, slice_axis(ctx, x, rank - 1, i, 1), xq), r))
    y = ctx.tosa.add(scaled_mul(product, r), ctx.scalar(yq.zero_point, "i32", rank))
    return _keep_dims_result(ctx, saturate_to(ctx, y, yq.dtype))


@rule("nn.reduce_prod", quantized=True)
def reduce_prod_in_float(ctx: LoweringContext) -> Value | list[Value]:
    """In f32 as CpuRef computes it (and LiteRT where its integer product takes no such data)."""
    return float_fallback(ctx)


# TOSA 1.0 level 8K: kernel sizes up to MAX_KERNEL
MAX_KERNEL = 8192
# The ones a DEPTHWISE_CONV2D sum needs are H * W * C bytes of weights: above this, REDUCE_SUM
MAX_ONES_BYTES = 1 << 20


def _spatial(ctx: LoweringContext, x: Value, axes: Sequence[int]) -> tuple[int, int, int] | None:
    """(H, W, C) when `axes` are exactly H and W of an NHWC tensor a window op can cover."""
    shape = ctx.type_of(x).shape
    if len(shape) != 4 or sorted(set(int(a) for a in axes)) != [1, 2]:
        return None
    _, h, w, c = shape
    if h * w <= 1 or h > MAX_KERNEL or w > MAX_KERNEL:
        return None
    return h, w, c


def spatial_sum(ctx: LoweringContext, x: Value, xq: QInfo, axes: Sequence[int]) -> Value | None:
    """sum over H, W of (x - zp) as [N, 1, 1, C] i32, or None where a window does not fit. 16-bit data
    (zero point 0, as TOSA requires) sums in i48, taken to i32 by a RESCALE by 1 (exact: the window
    holds fewer than 65536 elements, so the sum fits i32), where the --target preset asks for it."""
    spatial = _spatial(ctx, x, axes)
    if (spatial is None or spatial[0] * spatial[1] * spatial[2] > MAX_ONES_BYTES
            or not (xq.dtype == "i8" or (xq.dtype == "i16" and xq.zero_point == 0 and spatial[0] * spatial[1] < 1 << 16))
            or (xq.dtype == "i16" and choose(ctx, "int16_spatial_sum") != "depthwise_conv2d")):
        return None
    h, w, c = spatial
    acc_type = "i32" if xq.dtype == "i8" else "i48"
    total = ctx.tosa.depthwise_conv2d(x, ctx.const(np.ones((h, w, c, 1), np.int8), "i8"),
                                      ctx.const(np.zeros(c, np.int64), acc_type),
                                      ctx.zero_point(xq.dtype, xq.zero_point), ctx.zero_point("i8"),
                                      pad=[0, 0, 0, 0], stride=[1, 1], dilation=[1, 1], acc_type=acc_type)
    return total if acc_type == "i32" else rescale(ctx, total, 1.0, "i32")


def avg_pool_values(sums: np.ndarray, count: int, output_zp: int) -> np.ndarray:
    """TOSA 1.0 AVG_POOL2D's integer result for window sums of (x - input_zp) over `count` elements
    (before saturation): the sum times reciprocal_scale(count), rounded, plus the output zero point."""
    k = (count - 1).bit_length()  # 2**(k - 1) < count <= 2**k
    multiplier = (((1 << 30) + 1) << k) // count
    return rescale_values(sums, multiplier, 30 + k) + output_zp


def mean_as_avg_pool(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo, axes: Sequence[int],
                     multiplier: int, exponent: int) -> Value | None:
    """TFLite's mean (sum times its (multiplier, exponent), plus the output zero point) as AVG_POOL2D,
    alone when its zero point can be the output's, else followed by a RESCALE by TFLite's s_in / s_out;
    None unless one of the two gives TFLite's integer for every possible sum."""
    spatial = _spatial(ctx, x, axes)
    if spatial is None or xq.dtype != "i8" or yq.dtype != "i8" or multiplier <= 0:
        return None
    h, w, _ = spatial
    count = h * w
    sums = np.arange(count * (xq.qmin - xq.zero_point), count * (xq.qmax - xq.zero_point) + 1, dtype=np.int64)
    want = np.clip(multiply_by_quantized_multiplier(sums, multiplier, exponent) + yq.zero_point, yq.qmin, yq.qmax)

    def pool(output_zp: int) -> Value:
        return ctx.tosa.avg_pool2d(x, ctx.zero_point("i8", xq.zero_point), ctx.zero_point("i8", output_zp),
                                   kernel=[h, w], stride=[1, 1], pad=[0, 0, 0, 0], acc_type="i32")

    if np.array_equal(np.clip(avg_pool_values(sums, count, yq.zero_point), yq.qmin, yq.qmax), want):
        return pool(yq.zero_point)
    # the mean in the input's units (its zero point keeps it in range), then to the output's
    pooled = np.clip(avg_pool_values(sums, count, xq.zero_point), xq.qmin, xq.qmax)
    m, e = quantize_multiplier(xq.scale / yq.scale)
    if m <= 0 or not 2 <= 31 - e <= 62:
        return None
    requantized = np.clip(rescale_values(pooled - xq.zero_point, m, 31 - e, "DOUBLE_ROUND") + yq.zero_point,
                          yq.qmin, yq.qmax)
    if not np.array_equal(requantized, want):
        return None
    return rescale(ctx, pool(xq.zero_point), 0.0, "i8", in_zp=xq.zero_point, out_zp=yq.zero_point,
                   fixed=(m, 31 - e), rounding="DOUBLE_ROUND")
