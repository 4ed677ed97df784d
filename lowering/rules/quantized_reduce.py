"""Quantized lowering: reductions (sum, mean, max, min, prod) in i32 fixed point, the quantized
counterparts of rules/reduce.py.

- sum and mean add (x - zp) exactly in i32 and RESCALE once (the mean divides by the count there);
  over H and W of NHWC data the sum is a DEPTHWISE_CONV2D of ones and TFLite's mean an AVG_POOL2D
  where that is exact (quantized_mean.py);
- max and min select stored integers (the encoding is monotonic);
- prod computes in f32 as CpuRef does, or under LiteRT semantics as TFLite's integer chain.

Under LiteRT semantics (lowering/semantics.py) sum and mean follow TFLite's integer kernels: their
multipliers (QuantizeMultiplier, `tflite_mean_multiplier`) and MultiplyByQuantizedMultiplier's two
roundings (RESCALE DOUBLE_ROUND).
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from ..fixed_point.rescale import narrow, requantize_like_tflite, saturate_to, widen
from ..fixed_point.tflite import quantize_multiplier
from . import rule
from .quantized import float_fallback, q_in, q_out, require_per_tensor, requantize_value
from .quantized_mean import mean_as_avg_pool, spatial_sum
from .reduce import reduce_axes
from .shape import slice_axis


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


@rule("nn.reduce_sum", "nn.reduce_mean", quantized=True, checks=(sum_fits_i32,))
def reduce_sum(ctx: LoweringContext) -> Value | list[Value]:
    xq, yq = q_in(ctx), q_out(ctx)
    if xq is None or yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, xq, yq)
    x = ctx.operands[0]
    axes = [int(a) for a in ctx.attrs["axes"]]
    count = math.prod(ctx.type_of(x).shape[a] for a in axes)
    ctx.check(sum_fits_i32, xq.span, count)
    mean = ctx.op_name == "nn.reduce_mean"
    if ctx.semantics == "litert" and mean:
        multiplier, exponent = tflite_mean_multiplier(xq.scale / yq.scale, count)
        pooled = mean_as_avg_pool(ctx, x, xq, yq, axes, multiplier, exponent)
        if pooled is not None:
            return _keep_dims_result(ctx, pooled)
    # over H and W a DEPTHWISE_CONV2D of ones (what NPU compilers map), else REDUCE_SUMs
    total = spatial_sum(ctx, x, xq, axes) or reduce_axes(ctx, widen(ctx, x, xq), "tosa.reduce_sum", axes)
    if ctx.semantics == "litert" and mean:
        return _keep_dims_result(ctx, requantize_like_tflite(ctx, total, multiplier, exponent, yq))
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
def reduce_extremum(ctx: LoweringContext) -> Value | list[Value]:
    xq, yq = q_in(ctx), q_out(ctx)
    if xq is None or yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, xq, yq)
    op = "tosa.reduce_max" if ctx.op_name == "nn.reduce_max" else "tosa.reduce_min"
    y = reduce_axes(ctx, ctx.operands[0], op, ctx.attrs["axes"])
    return _keep_dims_result(ctx, requantize_value(ctx, y, xq, yq))


@rule("nn.reduce_prod", quantized=True, checks=(product_shift_in_range,))
def reduce_prod(ctx: LoweringContext) -> Value | list[Value]:
    """cpuref: in f32 as CpuRef computes it. litert: TFLite's QuantizedReduceProd, a chain in the
    input's element order: p = x0 - zp, then p = round(p * (xi - zp) * r / 2**t) for each next
    element, and round(p * r / 2**t) + zp_out at the end, with (r, t) the 16-bit reduced form
    MultiplyByQuantizedMultiplier takes for an int64 value of the multiplier of
    s_in / s_out**(1 / n). Each step is a TOSA MUL with shift t (its 64-bit product, half up)."""
    xq, yq = q_in(ctx), q_out(ctx)
    if ctx.semantics != "litert" or xq is None or yq is None or xq.offset or xq.dtype not in ("i8", "i16"):
        return float_fallback(ctx)  # TFLite's integer product takes int8 and int16 data only
    require_per_tensor(ctx, xq, yq)
    x = ctx.operands[0]
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
        return ctx.op("tosa.mul", [*ctx.same_rank(a, b), shift_operand])

    product = widen(ctx, slice_axis(ctx, x, rank - 1, 0, 1), xq)
    for i in range(1, n):
        product = scaled_mul(product, ctx.mul(widen(ctx, slice_axis(ctx, x, rank - 1, i, 1), xq), r))
    y = ctx.binary("tosa.add", scaled_mul(product, r), ctx.scalar(yq.zero_point, "i32", rank))
    return _keep_dims_result(ctx, saturate_to(ctx, y, yq.dtype))
