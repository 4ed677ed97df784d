"""Ops that convert or test values rather than compute with them: cast (and `convert`, its semantics,
which reduce uses too), the shifts, sign, isnan/isinf and select.
"""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import Value

from ..context import TOSA_ELEMENT_OF, LoweringContext
from ..registry import rule
from .arith import (FLOAT_TYPES, UNSIGNED_WIDTH, Arith, check_unquantized, from_i32, int_operands, integers_fit_i32,
                    nn_in_dtype, operand_dtype, to_i32)


# ------------------------------------------------------------------------------ cast
@rule("nn.cast")
def cast(ctx: LoweringContext) -> Value:
    """nn.cast between any two non-quantized types TOSA can hold (see convert)."""
    check_unquantized(ctx)
    return convert(ctx, ctx.operand("x"), nn_in_dtype(ctx, 0), ctx.nn_out_types[0].dtype)


def convert(ctx: LoweringContext, x: Value, src: str, dst: str) -> Value:
    """Convert x (TOSA-level storage of nn type `src`) to nn type `dst`, with nn.cast's semantics:
    float -> int rounds half to even and saturates to dst's range (unsigned ranges included);
    to bool is x != 0; unsigned sources are zero-extended; integer narrowing wraps."""
    t = ctx.type_of(x)
    low_dst = TOSA_ELEMENT_OF.get(dst, dst)
    a = Arith(ctx, t.dtype, t.rank)
    if t.dtype == low_dst:
        return x  # the same storage: i32 -> i64, ui8 -> i8 (bits kept), f64 -> f32, ...
    if low_dst == "i1":
        if t.dtype in FLOAT_TYPES:
            return a.negation(a.eq(x, 0.0))
        return ctx.cast(x, "i1")
    if t.dtype == "i1":
        if low_dst in FLOAT_TYPES:
            return Arith(ctx, low_dst, t.rank).select(x, 1.0, 0.0)
        return ctx.cast(x, low_dst)
    if t.dtype in FLOAT_TYPES and low_dst in FLOAT_TYPES:
        if {t.dtype, low_dst} == {"f16", "bf16"}:
            x = ctx.cast(x, "f32")
        return ctx.cast(x, low_dst)
    if t.dtype in FLOAT_TYPES:  # float -> integer
        if dst in UNSIGNED_WIDTH:  # clamp in f32: 16-bit floats cannot hold the bound 65535
            x = ctx.cast(x, "f32")
            a = Arith(ctx, "f32", t.rank)
            hi = float((1 << UNSIGNED_WIDTH[dst]) - 1) if UNSIGNED_WIDTH[dst] < 32 else 4294967040.0
            x = ctx.tosa.clamp(x, min_val=0.0, max_val=hi)
            if UNSIGNED_WIDTH[dst] >= 32:  # the upper half lands on negative i32 bits
                x = a.select(a.ge(x, 2.0 ** 31), a.sub(x, 2.0 ** 32), x)
            return ctx.cast(ctx.cast(x, "i32"), low_dst)
        return ctx.cast(x, low_dst)
    # integer source
    if src in ("ui32", "ui64") and low_dst in FLOAT_TYPES:
        f = ctx.cast(x, "f32")
        fa = Arith(ctx, "f32", t.rank)
        return ctx.cast(fa.select(fa.lt(f, 0.0), fa.add(f, 2.0 ** 32), f), low_dst)
    wide = to_i32(ctx, x, src)
    return ctx.cast(wide, low_dst)


# ------------------------------------------------------------------------------ shifts
@rule("nn.shift_left")
def shift_left(ctx: LoweringContext) -> Value:
    check_unquantized(ctx)
    x, amount = ctx.operand("x"), ctx.operand("y")
    return ctx.tosa.logical_left_shift(x, amount)


@rule("nn.shift_right")
def shift_right(ctx: LoweringContext) -> Value:
    """Arithmetic for signed types, logical for unsigned ones (their bits are the same)."""
    check_unquantized(ctx)
    x, amount = ctx.operand("x"), ctx.operand("y")
    if nn_in_dtype(ctx, 0) in UNSIGNED_WIDTH:
        return ctx.tosa.logical_right_shift(x, amount)
    return ctx.tosa.arithmetic_right_shift(x, amount, round=False)


# ------------------------------------------------------------------------------ sign and classification
@rule("nn.sign", checks=(integers_fit_i32,))
def sign(ctx: LoweringContext) -> Value:
    check_unquantized(ctx)
    x = ctx.operand("x")
    dtype = operand_dtype(ctx)
    if dtype in FLOAT_TYPES:
        a = Arith(ctx, dtype, ctx.out_types[0].rank)
        return a.select(a.gt(x, 0.0), 1.0, a.select(a.lt(x, 0.0), -1.0, x))  # keeps 0, -0 and NaN
    (wide,) = int_operands(ctx, "sign")
    a = Arith(ctx, "i32", ctx.out_types[0].rank)
    return from_i32(ctx, a.select(a.gt(wide, 0), 1, a.select(a.lt(wide, 0), -1, 0)))


@rule("nn.isnan", "nn.isinf")
def classify(ctx: LoweringContext) -> Value:
    check_unquantized(ctx)
    x = ctx.operand("x")
    t = ctx.type_of(x)
    if t.dtype not in FLOAT_TYPES:  # integers are never NaN or infinite
        return ctx.const(np.zeros(t.shape, bool), "i1")
    a = Arith(ctx, t.dtype, t.rank)
    return a.is_nan(x) if ctx.op_name == "nn.isnan" else a.is_inf(x)


@rule("nn.select")
def select(ctx: LoweringContext) -> Value:
    cond, x, y = ctx.same_rank(ctx.operand("cond"), ctx.operand("x"), ctx.operand("y"))
    return ctx.tosa.select(cond, x, y)
