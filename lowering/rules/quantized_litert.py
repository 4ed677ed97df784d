"""LiteRT's integer kernels for the quantized ops CpuRef computes in float (semantics "litert").

Each function reproduces one TFLite reference kernel bit for bit in TOSA integer ops, preferring the
ops Ethos-U's Vela maps (TABLE, RESCALE, MUL, ADD, REDUCE_MAX): no GATHER, INTDIV or SELECT. Functions
of a difference of int8 values become int8 TABLEs (one per byte of the result), TFLite's own
interpolated int16 tables become int16 TABLEs fed as TFLite feeds them. The per-row parts (the reciprocal of a sum) are gemmlowp's fixed-point steps: MUL with shift 31
is its SaturatingRoundingDoublingHighMul, CLZ and shifts normalize, ARITHMETIC_RIGHT_SHIFT with
`round` is its RoundingDivideByPOT of a non-negative value. They return None where TFLite would
refuse the tensor's quantization (or the shape exceeds what the kernel handles), and the caller
then lowers as CpuRef computes.

- softmax_int8 (reference_ops::Softmax, int8/uint8 in, int8/uint8 out at scale 1/256);
- softmax_int16 (reference_ops::SoftmaxInt16, scale 1/32768 out).
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from ..quant import QInfo, rescale
from ..tflite_fixed import (exp_on_negative_values, lut_int16, multiply_by_quantized_multiplier, quantize_multiplier,
                            srdhm)

# gemmlowp's one_over_one_plus_x_for_x_in_0_1: Newton-Raphson from 48/17 - 32/17 * d in Q2.29
_NR_START, _NR_SLOPE, _NR_STEPS = 1515870810, -1010580540, 3


def _near(scale: float, want: float) -> bool:
    """TFLite's TF_LITE_ENSURE_NEAR on an output scale (0.1 % of the expected value)."""
    return abs(scale - want) <= 0.001 * want


def _scalar(ctx: LoweringContext, value: int, like: Value) -> Value:
    return ctx.scalar(value, "i32", ctx.type_of(like).rank)


def _mul(ctx: LoweringContext, a: Value, b: Value, shift: int = 0) -> Value:
    """i32 MUL; shift 31 is gemmlowp's SaturatingRoundingDoublingHighMul (round half up)."""
    a, b = ctx.same_rank(a, b)
    return ctx.op("tosa.mul", [a, b, ctx.const(np.array([shift], np.int8), "i8")])


def _shift_pair(multiplier: int, exponent: int) -> tuple[tuple[int, int], str]:
    """TFLite's (multiplier, exponent) as RESCALE's (multiplier, shift) and the rounding that gives
    MultiplyByQuantizedMultiplier: one rounding for left shifts, DOUBLE_ROUND for right shifts."""
    shift = 31 - exponent
    return (multiplier, shift), ("DOUBLE_ROUND" if shift > 31 else "SINGLE_ROUND")


def _pot(ctx: LoweringContext, x: Value, exponent: int, out_dtype: str = "i32", out_zp: int = 0) -> Value:
    """x * 2**exponent rounded half up, + out_zp, saturated to out_dtype (an exact power of two: one
    rounding, so no DOUBLE_ROUND)."""
    return rescale(ctx, x, 2.0 ** exponent, out_dtype, out_zp=out_zp, rounding="SINGLE_ROUND")


def _reciprocal(ctx: LoweringContext, total: Value) -> tuple[Value, Value]:
    """TFLite's GetReciprocal of a positive i32 sum: (1 / normalized sum in Q0.31, CLZ of the sum).
    The sum shifted up by CLZ - 1 is gemmlowp's half denominator (1 + x) / 2 in [1/2, 1), Q0.31."""
    headroom = ctx.op("tosa.clz", [total])
    half = ctx.binary("tosa.logical_left_shift", total, ctx.binary("tosa.sub", headroom, _scalar(ctx, 1, headroom)))
    x = ctx.binary("tosa.add", _scalar(ctx, _NR_START, half), _mul(ctx, half, _scalar(ctx, _NR_SLOPE, half), 31))
    for _ in range(_NR_STEPS):
        error = ctx.binary("tosa.sub", _scalar(ctx, 1 << 29, half), _mul(ctx, half, x, 31))
        x = ctx.binary("tosa.add", x, _mul(ctx, _mul(ctx, x, error, 31), _scalar(ctx, 4, x)))
    # Q2.29 -> Q0.31 is a saturating doubling: min(x, 2**30) + min(x, 2**30 - 1) saturates at 2**31 - 1
    doubled = ctx.binary("tosa.add", ctx.binary("tosa.minimum", x, _scalar(ctx, 1 << 30, x)),
                         ctx.binary("tosa.minimum", x, _scalar(ctx, (1 << 30) - 1, x)))
    return doubled, headroom


def softmax_int8(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo, axis: int, beta: float) -> Value | None:
    """reference_ops::Softmax: exp of (x - max) * beta * s in Q5.26 by gemmlowp's exp (a function of
    the difference, 0..255: four int8 TABLEs hold its bytes), sum of the exps in
    Q12.19, their reciprocal, and each output round(exp * reciprocal / 2**k) - 128."""
    if yq.dtype != "i8" or xq.dtype != "i8" or yq.zero_point != -128 or not _near(yq.scale, 1 / 256):
        return None
    depth = ctx.type_of(x).shape[axis]
    if depth >= 512:  # the kernel's output shift leaves 0..31 only while the Q12.19 sum stays below 2**28
        return None
    multiplier, left = quantize_multiplier(min(beta * xq.scale * 2.0 ** 26, 2.0 ** 31 - 1))
    if left < 0:
        return None
    diff_min = -math.floor(31 * 2.0 ** 26 / 2.0 ** left)
    diffs = range(-255, 1)
    exps = np.array([exp_on_negative_values(srdhm(d << left, multiplier), 5) if d >= diff_min else 0 for d in diffs],
                    np.int64)
    top = ctx.op("tosa.reduce_max", [x], {"axis": axis})
    d = ctx.binary("tosa.sub", _pot(ctx, x, 0), _pot(ctx, top, 0))
    k = _pot(ctx, ctx.binary("tosa.add", d, _scalar(ctx, 127, d)), 0, "i8")  # x - max + 127: -128..127
    # exp through four int8 TABLEs of its bytes (int8 TABLEs keep the graph in pro_int); the low three
    # bytes are stored minus 128 and the 128s come back as one constant
    e = _mul(ctx, _pot(ctx, ctx.op("tosa.table", [k, ctx.const((exps >> 24).astype(np.int8), "i8")]), 0),
             _scalar(ctx, 1 << 24, d))
    for shift in (16, 8, 0):
        byte = ((exps >> shift) & 0xFF) - 128
        e = ctx.binary("tosa.add", e, _pot(ctx, ctx.op("tosa.table", [k, ctx.const(byte.astype(np.int8), "i8")]), shift))
    e = ctx.binary("tosa.add", e, _scalar(ctx, 128 * ((1 << 16) + (1 << 8) + 1), e))  # Q0.31
    total = ctx.op("tosa.reduce_sum", [_pot(ctx, e, -12)], {"axis": axis})  # Q12.19
    scale, headroom = _reciprocal(ctx, total)
    # RoundingDivideByPOT(scale * exp, bits over unit + 31 - 8), bits over unit = 12 - headroom
    shift = ctx.binary("tosa.sub", _scalar(ctx, 35, headroom), headroom)
    y = ctx.binary("tosa.arithmetic_right_shift", _mul(ctx, scale, e, 31), shift, {"round": True})
    return _pot(ctx, y, 0, "i8", out_zp=-128)


def _exp_table() -> np.ndarray:
    """TFLite's int16 softmax exp LUT: exp on [-10, 0] in Q0.15 over int16 inputs."""
    return np.array(lut_int16(math.exp, 10.0 / 65535, 32767, 2.0 / 65535, 0), np.int16)


def _one_over_one_plus_x_table() -> np.ndarray:
    """TFLite's int16 softmax 1 / (1 + x) LUT on [0, 1] in Q0.15."""
    return np.array(lut_int16(lambda v: 1.0 / (1.0 + v), 1.0 / 65535, -32768, 2.0 / 65535, 0), np.int16)


def _lookup(ctx: LoweringContext, x: Value, table: np.ndarray) -> Value:
    """TFLite's interpolated int16 lookup: TOSA TABLE gives base * 128 + slope * fraction, TFLite
    rounds that to base + round(slope * fraction / 128), halves up."""
    return _pot(ctx, ctx.op("tosa.table", [x, ctx.const(table, "i16")]), -7)


def softmax_int16(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo, axis: int, beta: float) -> Value | None:
    """reference_ops::SoftmaxInt16: (x - max) scaled so that -65535 is -10, recentred, through the
    interpolated exp LUT (Q0.15); the sum normalized by CLZ through the 1 / (1 + x) LUT; each output
    exp * reciprocal, rounding-shifted by 31 - CLZ."""
    if xq.dtype != "i16" or yq.dtype != "i16" or xq.zero_point or yq.zero_point or not _near(yq.scale, 1 / 32768):
        return None
    # the kernel multiplies the float scale by the float beta in float, then divides in double
    multiplier, exponent = quantize_multiplier(float(np.float32(xq.scale) * np.float32(beta)) / (10.0 / 65535.0))
    pair, rounding = _shift_pair(multiplier, exponent)
    if not 18 <= pair[1] <= 62:  # RESCALE takes |x - max| <= 65535 only with shift >= 18
        return None
    assert multiply_by_quantized_multiplier(-65535, multiplier, exponent) <= 0
    top = ctx.op("tosa.reduce_max", [x], {"axis": axis})
    d = ctx.binary("tosa.sub", _pot(ctx, x, 0), _pot(ctx, top, 0))
    scaled = rescale(ctx, d, 1.0, "i32", pair=pair, rounding=rounding)
    centred = _pot(ctx, ctx.binary("tosa.add", scaled, _scalar(ctx, 32767, scaled)), 0, "i16")  # saturates
    e = _lookup(ctx, centred, _exp_table())  # Q0.15
    total = ctx.op("tosa.reduce_sum", [e], {"axis": axis})  # Q16.15
    headroom = ctx.op("tosa.clz", [total])
    normalized = ctx.binary("tosa.logical_left_shift", total,
                            ctx.binary("tosa.sub", headroom, _scalar(ctx, 1, headroom)))  # [2**30, 2**31)
    # x = sum - 1 in Q0.15, recentred from [0, 65535] to int16 (saturating)
    fraction = ctx.binary("tosa.add", _pot(ctx, normalized, -14), _scalar(ctx, -(1 << 15) - (1 << 16), normalized))
    reciprocal = _lookup(ctx, _pot(ctx, fraction, 0, "i16"), _one_over_one_plus_x_table())
    shift = ctx.binary("tosa.sub", _scalar(ctx, 31, headroom), headroom)
    y = ctx.binary("tosa.arithmetic_right_shift", _mul(ctx, e, reciprocal), shift, {"round": True})
    return _pot(ctx, y, 0, "i16")  # saturates at 32767
