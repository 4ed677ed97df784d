"""Quantized lowering: data movement (reshape, transpose, slice, gather, max pooling, pad, concat,
argmax / argmin).

The float rules move the integers as they are; a result quantized differently from its operand is
requantized afterwards (quantization.requantize_value). concat requantizes each operand to the
result's quantization; constant pad fills with the encoded pad value.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from ..fixed_point.carrier import carried_type, encode, qinfo
from ..registry import RULES, ops_with, rule
from .quantization import q_in, q_out, require_per_tensor, requantize_value, same_quantization
from .shape import concat, pad_constant


# ------------------------------------------------------------------------------ data movement
def float_rule_on_carried(ctx: LoweringContext, out_types: Sequence[TensorType] | None = None) -> Value | list[Value]:
    """The op's float rule, seeing the carried types (signed, zero points moved) it really works on."""
    saved = ctx.nn_in_types, ctx.nn_out_types
    ctx.nn_in_types = [carried_type(t) for t in ctx.nn_in_types]
    ctx.nn_out_types = [carried_type(t) for t in (out_types or ctx.nn_out_types)]
    try:
        return ctx.apply(RULES[ctx.op_name])
    finally:
        ctx.nn_in_types, ctx.nn_out_types = saved


@rule(*ops_with("moves_data"), quantized=True)
def movement(ctx: LoweringContext) -> Value | list[Value]:
    """The float rule moves (or, for max pooling, selects) the stored integers; results quantized
    unlike the data operand are requantized (max commutes with the monotonic encoding)."""
    xq = q_in(ctx)
    x_type = carried_type(ctx.nn_in_types[0])
    # the float rule sees results quantized as the data operand: it only moves integers
    results = float_rule_on_carried(ctx, [TensorType(t.shape, x_type.dtype, x_type.quant) if t.quant is not None
                                          else t for t in ctx.nn_out_types])
    single = isinstance(results, Value)
    values = [results] if isinstance(results, Value) else list(results)
    out = []
    for value, t in zip(values, ctx.nn_out_types):
        yq = qinfo(t) if t.quant is not None else None
        if xq is not None and yq is not None and not same_quantization(xq, yq):
            require_per_tensor(ctx, xq, yq)
            value = requantize_value(ctx, value, xq, yq)
        out.append(value)
    return out[0] if single else out


@rule("nn.argmax", "nn.argmin", quantized=True)
def arg_extremum(ctx: LoweringContext) -> Value | list[Value]:
    """Positions of the largest (smallest) stored integers: the encoding is monotonic."""
    return float_rule_on_carried(ctx)


@rule("nn.pad", quantized=True)
def pad(ctx: LoweringContext) -> Value | list[Value]:
    """A constant pad fills with the pad value encoded in the tensor's quantization (legalize-armnn
    gives Arm NN's raw quantized pad value as the real value it stands for)."""
    xq, yq = q_in(ctx), q_out(ctx)
    if ctx.attrs["mode"] != "constant":
        return movement(ctx)
    assert xq is not None and yq is not None, "a constant pad between quantized and unquantized data"
    require_per_tensor(ctx, xq, yq)
    x = requantize_value(ctx, ctx.operands[0], xq, yq)
    fill = int(encode(np.array([ctx.attrs["value"]], np.float32), yq)[0])
    return pad_constant(ctx, x, ctx.attrs["pads"], fill)


def concat_operands_quantized(ctx: LoweringContext) -> str | None:
    """A quantized concatenation's operands are all quantized (not mixed with float tensors)."""
    if any(q_in(ctx, k) is None for k in range(len(ctx.operands))):
        return "concatenation of quantized and float tensors"
    return None


@rule("nn.concat", quantized=True, constraints=(concat_operands_quantized,))
def concat_rule(ctx: LoweringContext) -> Value:
    yq = q_out(ctx)
    assert yq is not None, "a concatenation of quantized tensors into an unquantized one"
    parts = []
    for k, x in enumerate(ctx.operands):
        xq = q_in(ctx, k)
        assert xq is not None  # concat_operands_quantized
        require_per_tensor(ctx, xq, yq)
        parts.append(requantize_value(ctx, x, xq, yq))
    return concat(ctx, parts, ctx.attrs["axis"])
