"""Softmax, log_softmax and the normalizations, decomposed into TOSA arithmetic and reductions.

Every decomposition computes in f32 (f16/bf16 operands are cast in, the result cast back): its
sums run over whole axes, where a 16-bit accumulator would lose the corpus' tolerance. Softmax
subtracts the maximum before exponentiating (no overflow); the normalizations subtract the mean
before squaring (no cancellation in the variance).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext, constant_value, float_rule_unquantized
from . import rule
from .arith import Arith, floating_point_operands
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
    return a.mul(reduce_axes(ctx, x, "tosa.reduce_sum", axes), 1.0 / count)


def _normalize(ctx: LoweringContext, a: Arith, x: Value, axes: Sequence[int], epsilon: float) -> Value:
    """(x - mean) / sqrt(var + epsilon) over `axes`, biased variance of the centred values. The
    mean gets one correction step (plus the mean of x - mean): a large common offset would otherwise
    leave the mean's rounding error, up to an ulp of the offset, in every centred value."""
    mean = _mean(ctx, a, x, axes)
    centred = a.sub(x, a.add(mean, _mean(ctx, a, a.sub(x, mean), axes)))
    var = _mean(ctx, a, a.mul(centred, centred), axes)
    return a.mul(centred, a.unary("tosa.rsqrt", a.add(var, float(epsilon))))


def _shifted_logits(ctx: LoweringContext, a: Arith, x: Value) -> tuple[Value, int]:
    axis = int(ctx.attrs["axis"])
    beta = float(ctx.attrs["beta"])
    z = x if beta == 1.0 else a.mul(x, beta)
    return a.sub(z, ctx.op("tosa.reduce_max", [z], {"axis": axis})), axis


@rule("nn.softmax", checks=(floating_point_operands,))
def softmax(ctx: LoweringContext) -> Value:
    a, (x,) = _f32_operands(ctx, "softmax")
    shifted, axis = _shifted_logits(ctx, a, x)
    e = a.exp(shifted)
    return _result(ctx, a.mul(e, a.unary("tosa.reciprocal", ctx.op("tosa.reduce_sum", [e], {"axis": axis}))))


@rule("nn.log_softmax", checks=(floating_point_operands,))
def log_softmax(ctx: LoweringContext) -> Value:
    a, (x,) = _f32_operands(ctx, "log_softmax")
    shifted, axis = _shifted_logits(ctx, a, x)
    total = ctx.op("tosa.reduce_sum", [a.exp(shifted)], {"axis": axis})
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
    stats = [_constant_value(ctx, v) for v in ctx.operands[1:]]
    known = [s for s in stats if s is not None]
    if len(known) == len(stats):
        m, v, g, b = known
        scale = ctx.const((g / np.sqrt(v + float(ctx.attrs["epsilon"]))).astype(np.float32).reshape(along), "f32")
        mean, beta = (ctx.const(s.astype(np.float32).reshape(along), "f32") for s in (m, b))
    else:
        mean, var, gamma, beta = (ctx.reshape(s, [ctx.type_of(s).shape[0] if d == -1 else 1 for d in along])
                                  for s in (mean, var, gamma, beta))
        scale = a.mul(gamma, a.unary("tosa.rsqrt", a.add(var, float(ctx.attrs["epsilon"]))))
    return _result(ctx, a.add(a.mul(a.sub(x, mean), scale), beta))


@rule("nn.l2_normalize", checks=(floating_point_operands,))
def l2_normalize(ctx: LoweringContext) -> Value:
    """x / sqrt(max(sum x^2, epsilon)). Where |x| > 2^60 the squares would overflow f32: such
    slices are scaled by 2^-64 first (epsilon by 2^-128), exactly, as powers of two are."""
    a, (x,) = _f32_operands(ctx, "l2_normalize")
    axes = [int(i) for i in ctx.attrs["axes"]]
    epsilon = float(ctx.attrs["epsilon"])
    big = a.gt(reduce_axes(ctx, a.abs(x), "tosa.reduce_max", axes), 2.0 ** 60)
    xs = a.mul(x, a.select(big, 2.0 ** -64, 1.0))
    squares = reduce_axes(ctx, a.mul(xs, xs), "tosa.reduce_sum", axes)
    floor = a.select(big, epsilon * 2.0 ** -128, epsilon)
    return _result(ctx, a.mul(xs, a.unary("tosa.rsqrt", a.maximum(squares, floor))))


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
