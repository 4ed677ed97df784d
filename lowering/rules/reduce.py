"""Reductions over several axes (keep_dims both ways) and argmax/argmin.

TOSA reduces one axis at a time and keeps it with size 1, so a reduction is a chain of TOSA
reductions and a final RESHAPE. Element types TOSA lacks a form for are widened: f16/bf16 sums,
means and products accumulate in f32; integer sums, means, products and unsigned max/min work in
i32 (TOSA's REDUCE_SUM/PRODUCT have no i8/i16 form), narrowing back wraps as nn's integers do;
boolean sums and means are REDUCE_ANY (the result type is boolean: any non-zero count is true).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext, float_rule_unquantized
from . import rule
from .arith import FLOAT_TYPES, UNSIGNED_WIDTH, Arith, to_i32
from .cast import convert
from .shape import product_tree, slice_axis

REDUCE = {"nn.reduce_sum": "tosa.reduce_sum", "nn.reduce_mean": "tosa.reduce_sum", "nn.reduce_max": "tosa.reduce_max",
          "nn.reduce_min": "tosa.reduce_min", "nn.reduce_prod": "tosa.reduce_product",
          "nn.reduce_any": "tosa.reduce_any", "nn.reduce_all": "tosa.reduce_all"}
# on booleans: sums, means and maxima are "any", products and minima "all"
BOOLEAN_REDUCE = {"nn.reduce_sum": "tosa.reduce_any", "nn.reduce_mean": "tosa.reduce_any",
                  "nn.reduce_max": "tosa.reduce_any", "nn.reduce_min": "tosa.reduce_all",
                  "nn.reduce_prod": "tosa.reduce_all", "nn.reduce_any": "tosa.reduce_any",
                  "nn.reduce_all": "tosa.reduce_all"}


def reduce_axes(ctx: LoweringContext, x: Value, tosa_op: str, axes: Sequence[int]) -> Value:
    """`tosa_op` over each of `axes` in turn (the axes stay, with size 1)."""
    for axis in sorted(set(int(a) for a in axes)):
        if ctx.type_of(x).shape[axis] != 1 or tosa_op in ("tosa.reduce_any", "tosa.reduce_all"):
            x = ctx.op(tosa_op, [x], {"axis": axis})
    return x


def integer_extremum_fits_i32(ctx: LoweringContext) -> str | None:
    """A max, min or mean reduction, argmax or argmin of integers is not of ui32 or ui64 data: TOSA's
    widest integer is i32, signed (sums and products wrap as nn's do, and any/all see booleans)."""
    nn_dtype = ctx.nn_in_types[0].dtype
    wrapping = ("nn.reduce_sum", "nn.reduce_prod", "nn.reduce_any", "nn.reduce_all")
    if nn_dtype in ("ui32", "ui64") and ctx.op_name not in wrapping:
        return f"{ctx.op_name} of {nn_dtype} (TOSA's widest integer is i32, signed)"
    return None


@rule(*REDUCE, constraints=(integer_extremum_fits_i32,))
def reduce(ctx: LoweringContext) -> Value:
    ctx.check(float_rule_unquantized, "reductions", ctx.nn_in_types[:1])
    x = ctx.operands[0]
    axes = [int(a) for a in ctx.attrs["axes"]]
    op = ctx.op_name
    dtype, nn_dtype, out_nn = ctx.type_of(x).dtype, ctx.nn_in_types[0].dtype, ctx.nn_out_types[0].dtype
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
            y = ctx.binary("tosa.intdiv", y, ctx.scalar(count, "i32", ctx.type_of(y).rank))
        y = ctx.cast(y, ctx.out_types[0].dtype)
    return ctx.reshape(y, ctx.out_types[0].shape)


# ------------------------------------------------------------------------------ argmax / argmin
@rule("nn.argmax", "nn.argmin", constraints=(integer_extremum_fits_i32,))
def arg_extremum(ctx: LoweringContext) -> Value:
    """First index of the extremum. TOSA ARGMAX (first maximum, NaN wins) takes f32/f16/bf16 and
    i8; argmin runs it on -x (floats) or ~x (i8: order-reversing without overflow). Other integer
    types use i32 arithmetic instead: the extremum, where x equals it, the smallest such index."""
    x = ctx.operands[0]  # quantized data orders as its stored integers do (positive scales)
    axis = int(ctx.attrs["axis"])
    t = ctx.type_of(x)
    nn_dtype = ctx.nn_in_types[0].dtype
    is_min = ctx.op_name == "nn.argmin"
    if t.dtype == "i1":
        x, t = ctx.cast(x, "i8"), t.with_dtype("i8")
    if t.dtype in FLOAT_TYPES or (t.dtype == "i8" and nn_dtype not in UNSIGNED_WIDTH):
        if is_min:
            x = ctx.negate(x) if t.dtype in FLOAT_TYPES else ctx.op("tosa.bitwise_not", [x])
        index = ctx.op("tosa.argmax", [x], {"axis": axis})
    else:
        wide = to_i32(ctx, x, nn_dtype)
        a = Arith(ctx, "i32", t.rank)
        extremum = ctx.op("tosa.reduce_min" if is_min else "tosa.reduce_max", [wide], {"axis": axis})
        positions = np.arange(t.shape[axis], dtype=np.int32).reshape([-1 if i == axis else 1 for i in range(t.rank)])
        candidates = a.select(a.eq(wide, extremum), ctx.const(positions, "i32"), t.shape[axis])
        index = ctx.op("tosa.reduce_min", [candidates], {"axis": axis})
    return ctx.reshape(ctx.cast(index, ctx.out_types[0].dtype), ctx.out_types[0].shape)
