"""Matrix products: matmul (batched, broadcasting) and fully_connected, float and quantized.

TOSA has one MATMUL, [N, H, C] x [N, C, W] -> [N, H, W] with equal batches and zero points, and no
FULLY_CONNECTED. So:
- matmul: batch dimensions broadcast as in numpy. When b has no batch (a weight matrix), a's batch
  folds into its rows (one [1, B*M, K] x [1, K, N] product); otherwise each operand is tiled to the
  common batch and both are reshaped to TOSA's 3-D form.
- fully_connected: a 1x1 CONV2D of x [..., K] as [1, M, 1, K] with W [O, K] as [O, 1, 1, K] (W's own
  layout: a constant W stays a view of the file's bytes, where a MATMUL would need W^T, a copy of
  every weight), bias included, reshaped back to [..., O].
Floats multiply in their own type and accumulate in f32 (f16 and bf16 matmul products come out as
f32 and one cast rounds to the result type; the convolution adds the bias in its f32 accumulator and
rounds once). Plain i8 data multiplies exactly into i32 by MATMUL (then wraps to an i8 result, as
nn integers do); wider integers have no TOSA product.
Quantized: fully_connected is a 1x1 conv2d of the integer convolution (integer_convolution.py; under LiteRT
semantics it rounds once); matmul of two tensors is TOSA MATMUL with both zero points (i16 x i16 -> i48
with the int16 extension), then one RESCALE.
"""
from __future__ import annotations

from collections.abc import Sequence
import math

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from ..fixed_point.rescale import narrow, rescale
from ..registry import rule
from ..semantics import kernel_rounding
from .convolution import (FLOAT_TYPES, cast, convolution, convolution_quantizations, float_tensors, float_type,
                          rearrange)
from .integer_convolution import (ACCUMULATOR, CONVOLUTION_CHECKS, bias_in_accumulator, constant_weights,
                                  matmul_operand_types, out_channel_scales, quantized_convolution)
from .quantization import float_when_an_end_is_not_quantized, q_in, q_out, require_per_tensor
from .shape import tile


# element type -> type of the MATMUL result (its accumulator)
PRODUCT_TYPE = {"f32": "f32", "f16": "f32", "bf16": "f32", "i8": "i32"}


def _product_type(ctx: LoweringContext, what: str) -> str:
    """The element type both operands are multiplied in: i8 for plain i8 data, else their float type."""
    dtypes = {t.dtype for t in ctx.in_types if isinstance(t, TensorType)}
    plain = all(getattr(t, "quant", None) is None for t in ctx.nn_in_types + ctx.nn_out_types)
    if dtypes == {"i8"} and plain:
        return "i8"
    if plain:
        ctx.check(matmul_float_or_i8, what)
    return float_type(ctx, what)


def matmul_float_or_i8(ctx: LoweringContext, what: str) -> str | None:
    """Unquantized operands are floating point or all i8: TOSA MATMUL multiplies those (i16 only as
    quantized data)."""
    dtypes = {t.dtype for t in ctx.in_types if isinstance(t, TensorType)}
    if dtypes - set(FLOAT_TYPES) and dtypes != {"i8"}:
        return (f"{what} on {', '.join(sorted(dtypes))} tensors: TOSA MATMUL multiplies floats and i8 "
                "(i16 only as quantized data)")
    return None


def batch_matmul(ctx: LoweringContext, a: Value, b: Value, dtype: str) -> Value:
    """TOSA MATMUL of [N, H, C] and [N, C, W] operands in `dtype`; the result is in PRODUCT_TYPE[dtype]."""
    a, b = cast(ctx, a, dtype), cast(ctx, b, dtype)
    (n, h, _), w = ctx.type_of(a).shape, ctx.type_of(b).shape[2]
    zero = ctx.zero_point(dtype)
    return ctx.tosa.matmul(a, b, zero, zero, types=[TensorType((n, h, w), PRODUCT_TYPE[dtype])])


def _tiled_to(ctx: LoweringContext, x: Value, batch: tuple[int, ...]) -> Value:
    """x [..batch.., M, K] with its batch dimensions of size 1 repeated to `batch`."""
    shape = ctx.type_of(x).shape
    return tile(ctx, x, [b // d for b, d in zip(batch, shape[:-2])] + [1, 1])


@rule("nn.matmul", checks=(matmul_float_or_i8, float_tensors))
def matmul(ctx: LoweringContext) -> Value:
    dtype = _product_type(ctx, "matmul")
    a, b = ctx.same_rank(ctx.operand("a"), ctx.operand("b"))
    a_shape, b_shape = ctx.type_of(a).shape, ctx.type_of(b).shape
    (m, k), n = a_shape[-2:], b_shape[-1]
    out = ctx.out_types[0]
    batch = out.shape[:-2]
    if all(d == 1 for d in b_shape[:-2]):  # b is one matrix: a's batch joins its rows
        y = batch_matmul(ctx, ctx.reshape(a, (1, math.prod(batch) * m, k)), ctx.reshape(b, (1, k, n)), dtype)
    else:
        a3 = ctx.reshape(_tiled_to(ctx, a, batch), (math.prod(batch), m, k))
        b3 = ctx.reshape(_tiled_to(ctx, b, batch), (math.prod(batch), k, n))
        y = batch_matmul(ctx, a3, b3, dtype)
    return ctx.reshape(ctx.cast(y, out.dtype), out.shape)


@rule("nn.fully_connected", checks=(matmul_float_or_i8, float_tensors))
def fully_connected(ctx: LoweringContext) -> Value:
    dtype = _product_type(ctx, "fully_connected")
    x, w = ctx.operand("input"), ctx.operand("weight")
    o, k = ctx.type_of(w).shape
    out = ctx.out_types[0]
    rows = ctx.type_of(x).num_elements // k
    if dtype == "i8":  # plain i8: an exact i32 MATMUL product (convolution() accumulates floats only)
        y = batch_matmul(ctx, ctx.reshape(x, (1, rows, k)), rearrange(ctx, w, perm=(1, 0), shape=(1, k, o)), dtype)
        bias = ctx.optional_operand("bias")
        if bias is not None:
            row_bias = rearrange(ctx, cast(ctx, bias, ctx.type_of(y).dtype), shape=(1, 1, o))
            y = ctx.tosa.add(y, row_bias)
        return ctx.reshape(ctx.cast(y, out.dtype), out.shape)
    bias = ctx.optional_operand("bias")
    y = convolution(ctx, TosaBuilder.conv2d, ctx.reshape(x, (1, rows, 1, k)), rearrange(ctx, w, shape=(o, 1, 1, k)), bias,
                    dtype, kernel=(1, 1), pad=(0, 0, 0, 0), stride=(1, 1), dilation=(1, 1))
    return ctx.reshape(ctx.cast(y, out.dtype), out.shape)


@rule("nn.fully_connected", quantized=True, checks=CONVOLUTION_CHECKS)
def quantized_fully_connected(ctx: LoweringContext) -> Value:
    """x [..., K] times W^T [K, O]: a 1x1 conv2d of [rows, 1, 1, K] with [O, 1, 1, K] weights."""
    xq, yq = convolution_quantizations(ctx)
    w, wq = constant_weights(ctx)
    o, k = w.shape
    acc_scales = xq.scale * out_channel_scales(wq, o)
    bias = bias_in_accumulator(ctx, acc_scales)
    x = ctx.operand("input")
    rows = ctx.type_of(x).num_elements // k
    attrs = {"stride": [1, 1], "pad": [0, 0, 0, 0], "dilation": [1, 1]}
    # LiteRT's reference FULLY_CONNECTED rounds acc * s_x * s_w / s_y once, in double (not
    # MultiplyByQuantizedMultiplier as its convolutions do): one rounding, SINGLE_ROUND
    rounding = kernel_rounding(ctx, "SINGLE_ROUND")
    y = quantized_convolution(ctx, TosaBuilder.conv2d, ctx.reshape(x, (rows, 1, 1, k)), xq, w.reshape(o, 1, 1, k), wq,
                              bias, acc_scales / yq.scale, yq, (1, 2, 3), attrs, rounding=rounding)
    return ctx.reshape(y, ctx.out_types[0].shape)


float_when_an_end_is_not_quantized("nn.matmul", operands=(0, 1))


@rule("nn.matmul", quantized=True, checks=(matmul_operand_types,))
def quantized_matmul(ctx: LoweringContext) -> Value:
    """TOSA MATMUL of the carried integers with both zero points, then one RESCALE."""
    aq, bq, yq = q_in(ctx, "a"), q_in(ctx, "b"), q_out(ctx)
    assert aq is not None and bq is not None and yq is not None, "in_float takes the ends not quantized"
    require_per_tensor(ctx, aq, bq, yq)
    ctx.check(matmul_operand_types, aq, bq)
    a, b = ctx.same_rank(ctx.operand("a"), ctx.operand("b"))
    a_shape, b_shape = ctx.type_of(a).shape, ctx.type_of(b).shape
    (m, k), n = a_shape[-2:], b_shape[-1]
    batch = ctx.out_types[0].shape[:-2]
    count = math.prod(batch)
    a3 = ctx.reshape(_tiled(ctx, a, batch), (count, m, k))
    b3 = ctx.reshape(_tiled(ctx, b, batch), (count, k, n))
    acc_type = ACCUMULATOR[aq.dtype]
    acc = ctx.tosa.matmul(a3, b3, ctx.zero_point(aq.dtype, aq.zero_point), ctx.zero_point(bq.dtype, bq.zero_point),
                          types=[TensorType((count, m, n), acc_type)])
    scale = aq.scale * bq.scale / yq.scale
    if acc_type == "i48":
        shift = max(0, math.ceil(math.log2(max(aq.span * bq.span * k, 1))) - 30)
        acc = rescale(ctx, acc, 2.0 ** -shift, "i32")
        scale *= 2.0 ** shift
    exact_bound = None if acc_type == "i48" and shift else aq.span * bq.span * k
    return ctx.reshape(narrow(ctx, acc, scale, yq, max_abs=exact_bound), ctx.out_types[0].shape)


def _tiled(ctx: LoweringContext, x: Value, batch: Sequence[int]) -> Value:
    shape = ctx.type_of(x).shape
    multiples = [b // d for b, d in zip(batch, shape[:-2])] + [1, 1]
    if all(mult == 1 for mult in multiples):
        return x
    out = tuple(d * mult for d, mult in zip(shape, multiples))
    return ctx.tosa.tile(x, ctx.shape(multiples), types=[ctx.type_of(x).with_shape(out)])
