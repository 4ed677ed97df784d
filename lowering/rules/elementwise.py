"""Constants, elementwise ops that map one to one, and the simplest data movement."""
from __future__ import annotations

from nn2tosa.ir import Value

from ..context import LoweringContext
from . import rule

# nn op -> TOSA op, operands in the same order (rank equalized for broadcasting)
DIRECT_BINARY = {
    "nn.add": "tosa.add", "nn.sub": "tosa.sub", "nn.maximum": "tosa.maximum", "nn.minimum": "tosa.minimum",
    "nn.bitwise_and": "tosa.bitwise_and", "nn.bitwise_or": "tosa.bitwise_or",
    "nn.bitwise_xor": "tosa.bitwise_xor", "nn.logical_and": "tosa.logical_and", "nn.logical_or": "tosa.logical_or",
    "nn.logical_xor": "tosa.logical_xor", "nn.equal": "tosa.equal", "nn.greater": "tosa.greater",
    "nn.greater_equal": "tosa.greater_equal",
}
# comparisons TOSA has only one direction of: swap the operands
SWAPPED_BINARY = {"nn.less": "tosa.greater", "nn.less_equal": "tosa.greater_equal"}
DIRECT_UNARY = {
    "nn.abs": "tosa.abs", "nn.exp": "tosa.exp", "nn.log": "tosa.log", "nn.floor": "tosa.floor", "nn.ceil": "tosa.ceil",
    "nn.sin": "tosa.sin", "nn.cos": "tosa.cos", "nn.rsqrt": "tosa.rsqrt", "nn.reciprocal": "tosa.reciprocal",
    "nn.sigmoid": "tosa.sigmoid", "nn.tanh": "tosa.tanh", "nn.erf": "tosa.erf", "nn.logical_not": "tosa.logical_not",
    "nn.bitwise_not": "tosa.bitwise_not", "nn.identity": "tosa.identity",
}


# TOSA ops whose integer form is i32 only: narrower integers (and booleans, for comparisons) are
# widened to i32, and an integer result is cast back (TOSA's narrowing CAST wraps, like nn's integers)
I32_ONLY = frozenset({"tosa.add", "tosa.sub", "tosa.maximum", "tosa.minimum", "tosa.abs", "tosa.equal", "tosa.greater",
                      "tosa.greater_equal", "tosa.mul"})
NARROW_INTEGERS = frozenset({"i1", "i8", "i16"})


def _apply(ctx: LoweringContext, tosa_op: str, operands: list[Value]) -> Value:
    """`tosa_op` on `operands` (rank equalized), through i32 where TOSA needs it."""
    narrow = tosa_op in I32_ONLY and ctx.type_of(operands[0]).dtype in NARROW_INTEGERS
    if narrow:
        operands = [ctx.cast(x, "i32") for x in operands]
    if tosa_op == "tosa.mul":
        result = ctx.mul(*operands)
    elif len(operands) == 2:
        x, y = operands
        result = ctx.binary(tosa_op, x, y)
    else:
        result = ctx.op(tosa_op, operands)
    return ctx.cast(result, ctx.out_types[0].dtype) if narrow else result


@rule(*DIRECT_BINARY)
def direct_binary(ctx: LoweringContext) -> Value:
    return _apply(ctx, DIRECT_BINARY[ctx.op_name], list(ctx.operands))


@rule(*SWAPPED_BINARY)
def swapped_binary(ctx: LoweringContext) -> Value:
    x, y = ctx.operands
    return _apply(ctx, SWAPPED_BINARY[ctx.op_name], [y, x])


@rule("nn.not_equal")
def not_equal(ctx: LoweringContext) -> Value:
    return ctx.op("tosa.logical_not", [_apply(ctx, "tosa.equal", list(ctx.operands))])


@rule(*DIRECT_UNARY)
def direct_unary(ctx: LoweringContext) -> Value:
    return _apply(ctx, DIRECT_UNARY[ctx.op_name], list(ctx.operands))


@rule("nn.mul")
def mul(ctx: LoweringContext) -> Value:
    return _apply(ctx, "tosa.mul", list(ctx.operands))


@rule("nn.neg")
def neg(ctx: LoweringContext) -> Value:
    return ctx.negate(ctx.operands[0])


@rule("nn.constant")
def constant(ctx: LoweringContext) -> Value:
    t = ctx.out_types[0]
    value = ctx.attrs["value"]
    if value.dtype != t.numpy_dtype:  # narrowed at TOSA level (i64 -> i32, f64 -> f32)
        value = value.astype(t.numpy_dtype)
    return ctx.const(value, t.dtype)


@rule("nn.reshape")
def reshape(ctx: LoweringContext) -> Value:
    return ctx.reshape(ctx.operands[0], ctx.attrs["shape"])


@rule("nn.transpose")
def transpose(ctx: LoweringContext) -> Value:
    return ctx.transpose(ctx.operands[0], ctx.attrs["perm"])
