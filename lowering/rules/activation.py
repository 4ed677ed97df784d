"""Clamps and activations: clamp, relu (TOSA CLAMP, or i32 MAXIMUM/MINIMUM for wider or unsigned
integers), leaky_relu and prelu.
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from . import rule
from .arith import (FLOAT_TYPES, INF, UNSIGNED_WIDTH, Arith, check_unquantized, clamp_not_boolean, float_arith,
                    floating_point_operands, from_i32, int_operands, integers_fit_i32, nn_in_dtype, operand_dtype)


# ------------------------------------------------------------------------------ activations and clamps
def _integer_bounds(nn_dtype: str) -> tuple[int, int]:
    if nn_dtype in UNSIGNED_WIDTH:
        return 0, (1 << UNSIGNED_WIDTH[nn_dtype]) - 1
    info = np.iinfo(TensorType((), nn_dtype).numpy_dtype)
    return int(info.min), int(info.max)


def clamp_values(ctx: LoweringContext, lo: float, hi: float) -> Value:
    """min(max(x, lo), hi) on the op's operand 0 in its own type: TOSA CLAMP for floats and i8,
    i32 MAXIMUM/MINIMUM for wider or unsigned integers (CLAMP has no i32 form, and its i16 form
    would need EXT-INT16)."""
    check_unquantized(ctx)
    x = ctx.operands[0]
    dtype, nn_dtype = operand_dtype(ctx), nn_in_dtype(ctx, 0)
    lo = min(lo, hi)  # a lower bound above the upper one: everything becomes hi (nn.clamp, numpy.clip)
    if dtype in FLOAT_TYPES:
        return ctx.op("tosa.clamp", [x], {"min_val": float(lo), "max_val": float(hi)})
    ctx.check(clamp_not_boolean)
    tmin, tmax = _integer_bounds(nn_dtype)
    ilo = tmin if lo == -INF else min(max(math.ceil(lo), tmin), tmax)
    ihi = tmax if hi == INF else max(min(math.floor(hi), tmax), tmin)
    ilo = min(ilo, ihi)  # no integer between two bounds in one unit interval
    if nn_dtype == "i8":
        return ctx.op("tosa.clamp", [x], {"min_val": ilo, "max_val": ihi})
    (wide,) = int_operands(ctx, "clamp")
    a = Arith(ctx, "i32", ctx.type_of(wide).rank)
    return from_i32(ctx, a.minimum(a.maximum(wide, max(ilo, -(1 << 31))), min(ihi, (1 << 31) - 1)))


@rule("nn.clamp", checks=(clamp_not_boolean, integers_fit_i32))
def clamp(ctx: LoweringContext) -> Value:
    return clamp_values(ctx, float(ctx.attrs["min"]), float(ctx.attrs["max"]))


@rule("nn.relu", checks=(clamp_not_boolean, integers_fit_i32))
def relu(ctx: LoweringContext) -> Value:
    return clamp_values(ctx, 0.0, INF)


def _negative_slope(ctx: LoweringContext, x: Value, slope: Value, strict: bool) -> Value:
    """x where x >= 0 (x > 0 when strict), slope * x elsewhere (NaN stays NaN)."""
    a = Arith(ctx, ctx.type_of(x).dtype, ctx.out_types[0].rank)
    keep = a.gt(x, 0.0) if strict else a.ge(x, 0.0)
    return a.select(keep, x, a.mul(slope, x))


@rule("nn.leaky_relu", checks=(floating_point_operands,))
def leaky_relu(ctx: LoweringContext) -> Value:
    a = float_arith(ctx, "leaky_relu")
    x = ctx.operands[0]
    return _negative_slope(ctx, x, ctx.scalar(float(ctx.attrs["alpha"]), operand_dtype(ctx), a.rank), strict=False)


@rule("nn.prelu", checks=(floating_point_operands,))
def prelu(ctx: LoweringContext) -> Value:
    float_arith(ctx, "prelu")
    x, alpha = ctx.same_rank(*ctx.operands)
    return _negative_slope(ctx, x, alpha, strict=False)
