"""Softmax, log_softmax and the normalizations, decomposed into TOSA arithmetic and reductions.

Every decomposition computes in f32 (f16/bf16 operands are cast in, the result cast back): its
sums run over whole axes, where a 16-bit accumulator would lose the corpus' tolerance. Softmax
subtracts the maximum before exponentiating (no overflow); the normalizations subtract the mean
before squaring (no cancellation in the variance).

Quantized: softmax of i8 data: d = max - x is an integer in 0..255, exp(-beta * s * d) * 2**k comes
from a 256-entry GATHER table, and out = round(e / sum(e) / s_out) is one rounding integer division
(CpuRef's; semantics "litert" lowers softmax and L2 normalization as TFLite's integer kernels compute
them: fixed_point/litert_ops.py); batch_norm with constant statistics: a per-channel affine map, RESCALE per
channel + an i32 bias; the other normalizations compute in f32 (the "float_when_quantized" trait).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext, constant_value, float_rule_unquantized
from ..fixed_point import litert_ops
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import fraction_bits, max_input_for, narrow, rescale, saturate_to, widen
from ..registry import rule
from .arith import Arith, floating_point_operands
from .quantization import (float_fallback, float_when_an_end_is_not_quantized, q_in, q_out, quantized_ends,
                           require_per_tensor)
from .reductions import reduce_axes
from .shape import pad_constant, slice_axis


def _f32_operands(ctx: LoweringContext, what: str) -> tuple[Arith, list[Value]]:
    ctx.check(float_rule_unquantized, what, ctx.nn_in_types)
    ctx.check(floating_point_operands, what)
    return Arith(ctx, "f32", ctx.out_types[0].rank), [ctx.cast(v, "f32") for v in ctx.operands]


def _result(ctx: LoweringContext, y: Value) -> Value:
    return ctx.cast(y, ctx.out_types[0].dtype)


def _mean(ctx: LoweringContext, a: Arith, x: Value, axes: Sequence[int]) -> Value:
    count = int(np.prod([ctx.type_of(x).shape[i] for i in axes], dtype=np.int64))
    return a.mul(reduce_axes(ctx, x, TosaBuilder.reduce_sum, axes), 1.0 / count)


def _normalize(ctx: LoweringContext, a: Arith, x: Value, axes: Sequence[int], epsilon: float) -> Value:
    """(x - mean) / sqrt(var + epsilon) over `axes`, biased variance of the centred values. The
    mean gets one correction step (plus the mean of x - mean): a large common offset would otherwise
    leave the mean's rounding error, up to an ulp of the offset, in every centred value."""
    mean = _mean(ctx, a, x, axes)
    centred = a.sub(x, a.add(mean, _mean(ctx, a, a.sub(x, mean), axes)))
    var = _mean(ctx, a, a.mul(centred, centred), axes)
    return a.mul(centred, a.rsqrt(a.add(var, float(epsilon))))


def _shifted_logits(ctx: LoweringContext, a: Arith, x: Value) -> tuple[Value, int]:
    axis = int(ctx.attrs["axis"])
    beta = float(ctx.attrs["beta"])
    z = x if beta == 1.0 else a.mul(x, beta)
    return a.sub(z, ctx.tosa.reduce_max(z, axis=axis)), axis


@rule("nn.softmax", checks=(floating_point_operands,))
def softmax(ctx: LoweringContext) -> Value:
    a, (x,) = _f32_operands(ctx, "softmax")
    shifted, axis = _shifted_logits(ctx, a, x)
    e = a.exp(shifted)
    return _result(ctx, a.mul(e, a.reciprocal(ctx.tosa.reduce_sum(e, axis=axis))))


@rule("nn.log_softmax", checks=(floating_point_operands,))
def log_softmax(ctx: LoweringContext) -> Value:
    a, (x,) = _f32_operands(ctx, "log_softmax")
    shifted, axis = _shifted_logits(ctx, a, x)
    total = ctx.tosa.reduce_sum(a.exp(shifted), axis=axis)
    return _result(ctx, a.sub(shifted, a.log(total)))


@rule("nn.layer_norm", checks=(floating_point_operands,))
def layer_norm(ctx: LoweringContext) -> Value:
    a, (x, *affine) = _f32_operands(ctx, "layer_norm")
    y = _normalize(ctx, a, x, [int(i) for i in ctx.attrs["axes"]], ctx.attrs["epsilon"])
    if len(affine) > 0:
        y = a.mul(y, affine[0])
    if len(affine) > 1:
        y = a.add(y, affine[1])
    return _result(ctx, y)


@rule("nn.instance_norm", checks=(floating_point_operands,))
def instance_norm(ctx: LoweringContext) -> Value:
    """Per sample and channel over the spatial axes of channels-last data; gamma/beta [C]."""
    a, (x, gamma, beta) = _f32_operands(ctx, "instance_norm")
    rank = ctx.type_of(x).rank
    y = _normalize(ctx, a, x, list(range(1, rank - 1)), ctx.attrs["epsilon"])
    return _result(ctx, a.add(a.mul(y, gamma), beta))


# batch_norm's statistics operands, in the order its formulas take them
STATISTICS = ("mean", "var", "gamma", "beta")


def _constant_value(ctx: LoweringContext, v: Value) -> np.ndarray | None:
    """The value of a tosa.const operand in real numbers (None when it is computed at run time)."""
    stored = constant_value(ctx, v)
    if stored is None:
        return None
    if ctx.type_of(v).dtype == "bf16":
        return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return stored.astype(np.float64)


@rule("nn.batch_norm", checks=(floating_point_operands,))
def batch_norm(ctx: LoweringContext) -> Value:
    """(x - mean) * scale + beta with scale = gamma / sqrt(var + epsilon) along `axis`; scale is
    computed here in float64 when the statistics are constants (else with TOSA RSQRT)."""
    a, (x, mean, var, gamma, beta) = _f32_operands(ctx, "batch_norm")
    axis, rank = int(ctx.attrs["axis"]), ctx.type_of(x).rank
    along = [-1 if i == axis else 1 for i in range(rank)]
    stats = [_constant_value(ctx, ctx.operand(name)) for name in STATISTICS]
    known = [s for s in stats if s is not None]
    if len(known) == len(stats):
        m, v, g, b = known
        scale = ctx.const((g / np.sqrt(v + float(ctx.attrs["epsilon"]))).astype(np.float32).reshape(along), "f32")
        mean, beta = (ctx.const(s.astype(np.float32).reshape(along), "f32") for s in (m, b))
    else:
        mean, var, gamma, beta = (ctx.reshape(s, [ctx.type_of(s).shape[0] if d == -1 else 1 for d in along])
                                  for s in (mean, var, gamma, beta))
        scale = a.mul(gamma, a.rsqrt(a.add(var, float(ctx.attrs["epsilon"]))))
    return _result(ctx, a.add(a.mul(a.sub(x, mean), scale), beta))


@rule("nn.l2_normalize", checks=(floating_point_operands,))
def l2_normalize(ctx: LoweringContext) -> Value:
    """x / sqrt(max(sum x^2, epsilon)). Where |x| > 2^60 the squares would overflow f32: such
    slices are scaled by 2^-64 first (epsilon by 2^-128), exactly, as powers of two are."""
    a, (x,) = _f32_operands(ctx, "l2_normalize")
    axes = [int(i) for i in ctx.attrs["axes"]]
    epsilon = float(ctx.attrs["epsilon"])
    big = a.gt(reduce_axes(ctx, a.abs(x), TosaBuilder.reduce_max, axes), 2.0 ** 60)
    xs = a.mul(x, a.select(big, 2.0 ** -64, 1.0))
    squares = reduce_axes(ctx, a.mul(xs, xs), TosaBuilder.reduce_sum, axes)
    floor = a.select(big, epsilon * 2.0 ** -128, epsilon)
    return _result(ctx, a.mul(xs, a.rsqrt(a.maximum(squares, floor))))


@rule("nn.local_response_norm", checks=(floating_point_operands,))
def local_response_norm(ctx: LoweringContext) -> Value:
    """x / (bias + alpha * window)^beta, window = sum of x^2 over channels c-radius..c+radius
    (channels last): the squares zero-padded by radius on both sides, summed over 2r+1 shifts."""
    a, (x,) = _f32_operands(ctx, "local_response_norm")
    t = ctx.type_of(x)
    channels = t.shape[-1]
    radius = min(int(ctx.attrs["radius"]), channels - 1)  # beyond the last channel there is nothing
    sq = a.mul(x, x)
    padded = sq
    if radius:
        padded = pad_constant(ctx, sq, [0] * (2 * t.rank - 2) + [radius, radius], 0.0)
    window = slice_axis(ctx, padded, t.rank - 1, 0, channels)
    for shift in range(1, 2 * radius + 1):
        window = a.add(window, slice_axis(ctx, padded, t.rank - 1, shift, channels))
    base = a.add(a.mul(window, float(ctx.attrs["alpha"])), float(ctx.attrs["bias"]))
    return _result(ctx, a.mul(x, a.pow(base, a.v(-float(ctx.attrs["beta"])))))


def statistics_finite(ctx: LoweringContext, a: np.ndarray, b: np.ndarray) -> str | None:
    """A quantized batch norm's folded statistics (scale and offset per channel) are finite."""
    if not (np.isfinite(a).all() and np.isfinite(b).all()):  # no fixed-point form (a damaged file's statistics)
        return "batch-norm statistics that are not finite (NaN or infinity once folded)"
    return None


# ------------------------------------------------------------------------------ softmax
def _softmax_exp_bits(count: int, inverse_scale: float) -> int:
    """k for exp values e <= 2**k: 2 * e / s_out + sum(e) (at most count * 2**k) stays in i32."""
    return int(math.floor(30 - math.log2(2 * inverse_scale + count)))


float_when_an_end_is_not_quantized("nn.softmax", "nn.batch_norm")


@rule("nn.softmax", quantized=True, benefit=10, semantics="litert")
def litert_softmax(ctx: LoweringContext) -> Value | None:
    """TFLite's integer kernel where TFLite accepts the quantization; else falls through."""
    xq, yq = quantized_ends(ctx)
    x = ctx.operand("x")
    axis, beta = int(ctx.attrs["axis"]) % ctx.type_of(x).rank, float(ctx.attrs["beta"])
    kernel = litert_ops.softmax_int16 if xq.dtype == "i16" else litert_ops.softmax_int8
    return kernel(ctx, x, xq, yq, axis, beta)


@rule("nn.softmax", quantized=True)
def quantized_softmax(ctx: LoweringContext) -> Value | list[Value]:
    """CpuRef's: the exponentials from a table, one rounding division (i8; else in float)."""
    xq, yq = quantized_ends(ctx)
    x = ctx.operand("x")
    t = ctx.type_of(x)
    axis, beta = int(ctx.attrs["axis"]) % t.rank, float(ctx.attrs["beta"])
    if xq.dtype != "i8" or yq.dtype != "i8":
        return float_fallback(ctx)
    count = t.shape[axis]
    k = _softmax_exp_bits(count, 1.0 / yq.scale)
    k = min(k, int(math.floor(math.log2(max_input_for(2.0 / yq.scale) + 1))) - 1)  # RESCALE's input limit
    if k < 16:
        return float_fallback(ctx)
    v = ctx.cast(x, "i32")
    distance = ctx.tosa.sub(ctx.tosa.reduce_max(v, axis=axis), v)  # 0..255
    # exp(-beta * s * d) as CpuRef computes it in float32, scaled by 2**k
    d = np.arange(256, dtype=np.float32)
    real = np.exp(-(d * np.float32(xq.scale)) * np.float32(beta)).astype(np.float64)
    table = np.floor(real * 2.0 ** k + 0.5).astype(np.int32)
    n = t.num_elements
    e = ctx.tosa.gather(ctx.const(table.reshape(1, 256, 1), "i32"), ctx.reshape(distance, (1, n)),
                        types=[TensorType((1, n, 1), "i32")])
    e = ctx.reshape(e, t.shape)
    total = ctx.tosa.reduce_sum(e, axis=axis)
    # round(e / total / s_out) = floor((2 e / s_out + total) / (2 total)), every term non-negative
    numerator = rescale(ctx, e, 2.0 / yq.scale, "i32")
    quotient = ctx.tosa.intdiv(ctx.tosa.add(numerator, total),
                               ctx.tosa.add(total, total))
    if yq.zero_point:
        quotient = ctx.tosa.add(quotient, ctx.scalar(yq.zero_point, "i32", t.rank))
    return saturate_to(ctx, quotient, yq.dtype)


@rule("nn.l2_normalize", quantized=True, benefit=10, semantics="litert")
def litert_l2_normalize(ctx: LoweringContext) -> Value | None:
    """TFLite's integer kernel (int8 / uint8 data, per tensor); else falls through."""
    xq, yq = q_in(ctx), q_out(ctx)
    if xq is None or yq is None or xq.per_axis or yq.per_axis:
        return None
    rank = ctx.type_of(ctx.operand("x")).rank
    return litert_ops.l2_normalize(ctx, ctx.operand("x"), xq, yq, [int(a) % rank for a in ctx.attrs["axes"]])


@rule("nn.l2_normalize", quantized=True)
def quantized_l2_normalize(ctx: LoweringContext) -> Value | list[Value]:
    """CpuRef's float32."""
    return float_fallback(ctx)


# ------------------------------------------------------------------------------ batch normalization
@rule("nn.batch_norm", quantized=True, checks=(statistics_finite,))
def quantized_batch_norm(ctx: LoweringContext) -> Value | list[Value]:
    """y = a_c * x + b_c per channel (a_c = gamma / sqrt(var + eps), b_c = beta - mean * a_c, from
    constant statistics): RESCALE per channel of +-(x - zp) to 2**p output units, plus round(b_c /
    s_out * 2**p), then one RESCALE by 2**-p."""
    x = ctx.operand("x")
    xq, yq = quantized_ends(ctx, per_tensor=False)  # (after the statistics: non-constant ones compute in float)
    rank = ctx.type_of(x).rank
    axis = int(ctx.attrs["axis"])
    stats = []
    for name in STATISTICS:
        array = constant_value(ctx, ctx.operand(name))
        if array is None:
            return float_fallback(ctx)
        q = q_in(ctx, name)
        stats.append(array.astype(np.float64) if q is None else
                     dequantize_constant(array, q))
    require_per_tensor(ctx, xq, yq)
    mean, var, gamma, beta = stats
    a = gamma / np.sqrt(var + float(ctx.attrs["epsilon"]))
    b = beta - mean * a
    ctx.check(statistics_finite, a, b)
    ratio = np.abs(a) * xq.scale / yq.scale
    offset = b / yq.scale
    channels = ctx.type_of(x).shape[axis]
    ratio, offset = np.broadcast_to(ratio, (channels,)), np.broadcast_to(offset, (channels,))
    peak = float(np.max(ratio * xq.span + np.abs(offset)))
    p = fraction_bits(max(peak, 1e-30), 1.0, headroom=1)
    p = min(p, min(fraction_bits(xq.span, float(r), headroom=1, input_span=xq.span) for r in ratio if r > 0)
            if np.any(ratio > 0) else p)
    bias = np.floor(offset * 2.0 ** p + 0.5).astype(np.int64)
    if np.any(np.abs(bias) >= 1 << 30):
        return float_fallback(ctx)
    # RESCALE works per channel of the last axis: move the normalized axis there and back
    to_last = [d for d in range(rank) if d != axis] + [axis]
    along_last = (1,) * (rank - 1) + (channels,)
    v = widen(ctx, ctx.transpose(x, to_last), xq)
    signs = np.where(np.broadcast_to(a, (channels,)) < 0, -1, 1).astype(np.int32)
    if np.any(signs < 0):  # RESCALE multipliers are non-negative: negative slopes negate first
        v = ctx.mul(v, ctx.const(signs.reshape(along_last), "i32"))
    scaled = rescale(ctx, v, ratio * 2.0 ** p, "i32")
    acc = ctx.tosa.add(scaled, ctx.const(bias.astype(np.int32).reshape(along_last), "i32"))
    y = narrow(ctx, acc, 2.0 ** -p, yq)
    return ctx.transpose(y, [to_last.index(d) for d in range(rank)])


def dequantize_constant(array: np.ndarray, q: QInfo) -> np.ndarray:
    """Stored (carried) integers of a constant as CpuRef's float32 decoding, widened to float64."""
    return ((array.astype(np.int64) - np.asarray(q.zero_points)).astype(np.float32) *
            np.asarray(q.scales, np.float32)).astype(np.float64)
