"""LiteRT's integer kernels for the quantized ops CpuRef computes in float (semantics "litert").

Each function reproduces one TFLite reference kernel bit for bit in TOSA integer ops, preferring the
ops Ethos-U's Vela maps (TABLE, RESCALE, MUL, ADD, REDUCE_MAX): no GATHER, INTDIV or SELECT. Functions
of a difference of int8 values become int8 TABLEs (one per byte of the result); TFLite's own
interpolated int16 tables become int16 TABLEs fed as TFLite feeds them. The per-row parts (the
reciprocal of a sum, an inverse square root) are gemmlowp's fixed-point steps: MUL with shift 31 is
its SaturatingRoundingDoublingHighMul, CLZ and shifts normalize, ARITHMETIC_RIGHT_SHIFT with `round`
is its RoundingDivideByPOT of a non-negative value (Vela maps CLZ, the shifts, MINIMUM and MAXIMUM on
every Ethos-U, BITWISE_AND not on U55/U65: docs/vela.md). They return None where TFLite would refuse
the tensor's quantization (or the shape exceeds what the kernel handles), and the caller then lowers
as CpuRef computes.

- softmax_int8 (reference_ops::Softmax, int8/uint8 in, int8/uint8 out at scale 1/256, rows up to 4095);
- softmax_int16 (reference_ops::SoftmaxInt16, scale 1/32768 out);
- sigmoid_tanh_int16 (reference_integer_ops::Logistic and Tanh, int16);
- l2_normalize (int8 reference_integer_ops::L2Normalization, uint8 reference_ops::L2Normalization);
- div (reference_ops::DivElementwise: uint8, int8, int16).
"""
from __future__ import annotations

import math
from typing import overload

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from ..fixed_point.carrier import QInfo
from ..fixed_point.litert_kernels import SigmoidFixedPoint
from ..fixed_point.rescale import clamp_int, rescale
from ..fixed_point.tflite import INT32_MAX, exp_on_negative_values, lut_int16_entries, quantize_multiplier, srdhm

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
    return ctx.tosa.mul(a, b, ctx.const(np.array([shift], np.int8), "i8"))


def _pot(ctx: LoweringContext, x: Value, exponent: int, out_dtype: str = "i32", out_zp: int = 0) -> Value:
    """x * 2**exponent rounded half up, + out_zp, saturated to out_dtype (an exact power of two: one
    rounding, so no DOUBLE_ROUND)."""
    return rescale(ctx, x, 2.0 ** exponent, out_dtype, out_zp=out_zp, rounding="SINGLE_ROUND")


def _reciprocal(ctx: LoweringContext, total: Value) -> tuple[Value, Value]:
    """TFLite's GetReciprocal of a positive i32 sum: (1 / normalized sum in Q0.31, CLZ of the sum).
    The sum shifted up by CLZ - 1 is gemmlowp's half denominator (1 + x) / 2 in [1/2, 1), Q0.31."""
    headroom = ctx.tosa.clz(total)
    half = ctx.tosa.logical_left_shift(total, ctx.tosa.sub(headroom, _scalar(ctx, 1, headroom)))
    x = ctx.tosa.add(_scalar(ctx, _NR_START, half), _mul(ctx, half, _scalar(ctx, _NR_SLOPE, half), 31))
    for _ in range(_NR_STEPS):  # the correction x * (1 - d x) is small: its saturating Q4 -> Q2 is a plain * 4
        error = ctx.tosa.sub(_scalar(ctx, 1 << 29, half), _mul(ctx, half, x, 31))
        x = ctx.tosa.add(x, _mul(ctx, _mul(ctx, x, error, 31), _scalar(ctx, 4, x)))
    # Q2.29 -> Q0.31 is a saturating doubling: min(x, 2**30) + min(x, 2**30 - 1) saturates at 2**31 - 1
    doubled = ctx.tosa.add(ctx.tosa.minimum(x, _scalar(ctx, 1 << 30, x)),
                           ctx.tosa.minimum(x, _scalar(ctx, (1 << 30) - 1, x)))
    return doubled, headroom


def softmax_int8(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo, axis: int, beta: float) -> Value | None:
    """reference_ops::Softmax: exp of (x - max) * beta * s in Q5.26 by gemmlowp's exp (a function of
    the difference, 0..255: four int8 TABLEs hold its bytes), sum of the exps in Q12.19, their
    reciprocal, and each output round(exp * reciprocal / 2**k) - 128. TFLite checks the int8 output
    quantization (1/256, -128) and ignores uint8's; here both must be it."""
    if yq.dtype != "i8" or xq.dtype != "i8" or yq.zero_point != -128 or not _near(yq.scale, 1 / 256):
        return None
    depth = ctx.type_of(x).shape[axis]
    if depth >= 4096:  # the Q12.19 sum of up to 4095 exps of at most 1 stays below 2**31
        return None
    multiplier, left = quantize_multiplier(min(beta * xq.scale * 2.0 ** 26, 2.0 ** 31 - 1))
    if left < 0:
        return None
    diff_min = -math.floor(31 * 2.0 ** 26 / 2.0 ** left)
    diffs = range(-255, 1)
    exps = np.array([exp_on_negative_values(int(srdhm(d << left, multiplier)), 5) if d >= diff_min else 0 for d in diffs],
                    np.int64)
    top = ctx.tosa.reduce_max(x, axis=axis)
    d = ctx.tosa.sub(_pot(ctx, x, 0), _pot(ctx, top, 0))
    k = _pot(ctx, ctx.tosa.add(d, _scalar(ctx, 127, d)), 0, "i8")  # x - max + 127: -128..127
    # exp through four int8 TABLEs of its bytes (int8 TABLEs keep the graph in pro_int); the low three
    # bytes are stored minus 128 and the 128s come back as one constant
    e = _mul(ctx, _pot(ctx, ctx.tosa.table(k, ctx.const((exps >> 24).astype(np.int8), "i8")), 0),
             _scalar(ctx, 1 << 24, d))
    for bits in (16, 8, 0):
        byte = ((exps >> bits) & 0xFF) - 128
        part = ctx.tosa.table(k, ctx.const(byte.astype(np.int8), "i8"))
        e = ctx.tosa.add(e, _pot(ctx, part, bits))
    e = ctx.tosa.add(e, _scalar(ctx, 128 * ((1 << 16) + (1 << 8) + 1), e))  # Q0.31
    total = ctx.tosa.reduce_sum(_pot(ctx, e, -12), axis=axis)  # Q12.19
    scale, headroom = _reciprocal(ctx, total)
    # RoundingDivideByPOT(scale * exp, bits over unit + 31 - 8), bits over unit = 12 - headroom: past 31
    # (a sum of 512 or more, depth >= 512) as LiteRT's compiled kernel computes it
    shift = ctx.tosa.sub(_scalar(ctx, 35, headroom), headroom)
    q = _mul(ctx, scale, e, 31)  # >= 0
    clamped = shift if depth < 512 else ctx.tosa.minimum(shift, _scalar(ctx, 31, shift))
    near = ctx.tosa.arithmetic_right_shift(q, clamped, round=True)
    if depth >= 512:  # RESCALE by 1 takes values below 2**29 only; these saturate the output anyway
        near = ctx.tosa.minimum(_past_31(ctx, q, shift, near, largest=35), _scalar(ctx, 1 << 20, q))
    return _pot(ctx, near, 0, "i8", out_zp=-128)


def _past_31(ctx: LoweringContext, q: Value, e: Value, near: Value, largest: int = 1 << 31) -> Value:
    """gemmlowp's RoundingDivideByPOT(q, e) for e up to 63 as LiteRT computes it compiled (x86-64 and
    AArch64 alike): for e > 31, where gemmlowp only asserts, its mask 2**e - 1 truncated to int32 is all
    ones and the int32 shift takes e modulo 32, giving (q >> (e - 32)) + (q >= 0), far from the
    quotient. `near` is the result for e <= 31 (e clamped to 31 there). Arithmetic only (no SELECT,
    which Ethos-U55 and U65 lack); e modulo 32 is e - 32 when e never reaches 64 (`largest`), else
    a BITWISE_AND (which U55 and U65 lack too)."""
    def sign_bit(v: Value) -> Value:  # -1 for negative values, else 0
        return ctx.tosa.arithmetic_right_shift(v, _scalar(ctx, 31, v), round=False)

    if largest < 64:
        modulo = ctx.tosa.maximum(ctx.tosa.sub(e, _scalar(ctx, 32, e)), _scalar(ctx, 0, e))
    else:
        modulo = ctx.tosa.bitwise_and(e, _scalar(ctx, 31, e))
    far = ctx.tosa.add(ctx.tosa.arithmetic_right_shift(q, modulo, round=False),
                       ctx.tosa.add(sign_bit(q), _scalar(ctx, 1, q)))
    beyond = ctx.tosa.minimum(ctx.tosa.arithmetic_right_shift(e, _scalar(ctx, 5, e), round=False),
                              _scalar(ctx, 1, e))  # e > 31: 1, else 0
    return ctx.tosa.add(near, _mul(ctx, beyond, ctx.tosa.sub(far, near)))


def _exp_table() -> np.ndarray:
    """TFLite's int16 softmax exp LUT: exp on [-10, 0] in Q0.15 over int16 inputs."""
    return lut_int16_entries(np.exp, np.float64, 10.0 / 65535, 32767, 2.0 / 65535, 0).astype(np.int16)


def _one_over_one_plus_x_table() -> np.ndarray:
    """TFLite's int16 softmax 1 / (1 + x) LUT on [0, 1] in Q0.15."""
    return lut_int16_entries(lambda v: 1.0 / (1.0 + v), np.float64, 1.0 / 65535, -32768, 2.0 / 65535,
                             0).astype(np.int16)


def _lookup(ctx: LoweringContext, x: Value, table: np.ndarray) -> Value:
    """TFLite's interpolated int16 lookup: TOSA TABLE gives base * 128 + slope * fraction, TFLite
    rounds that to base + round(slope * fraction / 128), halves up."""
    return _pot(ctx, ctx.tosa.table(x, ctx.const(table, "i16")), -7)


def softmax_int16(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo, axis: int, beta: float) -> Value | None:
    """reference_ops::SoftmaxInt16: (x - max) scaled so that -65535 is -10, recentred, through the
    interpolated exp LUT (Q0.15); the sum normalized by CLZ through the 1 / (1 + x) LUT; each output
    exp * reciprocal, rounding-shifted by 31 - CLZ."""
    if xq.dtype != "i16" or yq.dtype != "i16" or xq.zero_point or yq.zero_point or not _near(yq.scale, 1 / 32768):
        return None
    # the kernel multiplies the float scale by the float beta in float, then divides in double
    multiplier, exponent = quantize_multiplier(float(np.float32(xq.scale) * np.float32(beta)) / (10.0 / 65535.0))
    shift = 31 - exponent  # MultiplyByQuantizedMultiplier as RESCALE (rescale picks DOUBLE_ROUND past 31)
    if not 18 <= shift <= 62:  # RESCALE takes |x - max| <= 65535 only with shift >= 18
        return None
    top = ctx.tosa.reduce_max(x, axis=axis)
    d = ctx.tosa.sub(_pot(ctx, x, 0), _pot(ctx, top, 0))
    scaled = rescale(ctx, d, 1.0, "i32", fixed=(multiplier, shift))
    centred = _pot(ctx, ctx.tosa.add(scaled, _scalar(ctx, 32767, scaled)), 0, "i16")  # saturates
    e = _lookup(ctx, centred, _exp_table())  # Q0.15
    total = ctx.tosa.reduce_sum(e, axis=axis)  # Q16.15
    headroom = ctx.tosa.clz(total)
    normalized = ctx.tosa.logical_left_shift(total,
                                             ctx.tosa.sub(headroom, _scalar(ctx, 1, headroom)))  # [2**30, 2**31)
    # x = sum - 1 in Q0.15, recentred from [0, 65535] to int16 (saturating)
    fraction = ctx.tosa.add(_pot(ctx, normalized, -14), _scalar(ctx, -(1 << 15) - (1 << 16), normalized))
    reciprocal = _lookup(ctx, _pot(ctx, fraction, 0, "i16"), _one_over_one_plus_x_table())
    down = ctx.tosa.sub(_scalar(ctx, 31, headroom), headroom)
    y = ctx.tosa.arithmetic_right_shift(_mul(ctx, e, reciprocal), down, round=True)
    return _pot(ctx, y, 0, "i16")  # saturates at 32767


# ------------------------------------------------------------------------------ int16 logistic and tanh
def _byte_tables(ctx: LoweringContext, index: Value, values: np.ndarray) -> Value:
    """values[index] (0 <= values < 2**16, index an i8 tensor holding i - 128) as i32, from two int8
    TABLEs of its bytes (stored minus 128; the 128s come back as one constant)."""
    high = _pot(ctx, ctx.tosa.table(index, ctx.const(((values >> 8) - 128).astype(np.int8), "i8")), 8)
    low = _pot(ctx, ctx.tosa.table(index, ctx.const(((values & 0xFF) - 128).astype(np.int8), "i8")), 0)
    return ctx.tosa.add(ctx.tosa.add(high, low), _scalar(ctx, 128 * 257, high))


def sigmoid_tanh_int16(ctx: LoweringContext, x: Value, fp: SigmoidFixedPoint) -> Value:
    """reference_integer_ops::Logistic / Tanh (int16) step by step (litert_kernels.SigmoidFixedPoint):
    the input rescaled (RESCALE to i32, MUL, rounding shift), |s| by its sign, the 256-entry sigmoid
    table and its slopes read at |s| >> bits through int8 TABLEs of their bytes, the interpolation
    in i32, one rounding RESCALE, and the mirror for s < 0 as a multiplication by the sign. TOSA's
    int16 TABLE interpolates 128-input segments of x, which TFLite's rescaled 256- or 512-input
    segments of s do not line up with; this form uses only the ops every Ethos-U maps (no GATHER)."""
    s = _mul(ctx, rescale(ctx, x, 1.0, "i32", rounding="SINGLE_ROUND"), _scalar(ctx, fp.multiplier, x))
    if fp.shift:
        s = ctx.tosa.arithmetic_right_shift(s, _scalar(ctx, fp.shift, s), round=True)
    sign = ctx.tosa.add(_shl(ctx, ctx.tosa.arithmetic_right_shift(s, _scalar(ctx, 31, s), round=False), 1),
                        _scalar(ctx, 1, s))  # -1 or 1
    magnitude = _mul(ctx, s, sign)
    segment = ctx.tosa.arithmetic_right_shift(magnitude, _scalar(ctx, fp.bits, s), round=False)
    fraction = ctx.tosa.sub(magnitude, _shl(ctx, segment, fp.bits))
    index = _pot(ctx, ctx.tosa.minimum(segment, _scalar(ctx, 255, s)), 0, "i8", out_zp=-128)
    r = ctx.tosa.add(_shl(ctx, _byte_tables(ctx, index, fp.entries), fp.bits),
                     _mul(ctx, fraction, _byte_tables(ctx, index, fp.slopes)))
    if fp.tanh:  # ((r + 128) >> 8) - 32768, negated below 0
        y = _mul(ctx, ctx.tosa.add(_pot(ctx, r, -8), _scalar(ctx, -32768, s)), sign)
    else:  # 16384 +- (((r + 512) >> 10) - 16384)
        y = ctx.tosa.add(_mul(ctx, ctx.tosa.add(_pot(ctx, r, -10), _scalar(ctx, -16384, s)), sign),
                         _scalar(ctx, 16384, s))
    return _pot(ctx, y, 0, "i16")


# ------------------------------------------------------------------------------ L2 normalization
# The arithmetic below takes tensors or Python constants and folds constants: a tensor operand gives a
# tensor, two constants a constant (the overloads say so, so a result known to be a tensor is one).
@overload
def _srdhm(ctx: LoweringContext, a: int, b: int) -> int: ...
@overload
def _srdhm(ctx: LoweringContext, a: Value, b: Value | int) -> Value: ...
@overload
def _srdhm(ctx: LoweringContext, a: Value | int, b: Value) -> Value: ...
def _srdhm(ctx: LoweringContext, a: Value | int, b: Value | int) -> Value | int:
    """SaturatingRoundingDoublingHighMul of tensors or Python constants (constants fold here)."""
    if isinstance(a, int) and isinstance(b, int):
        return int(srdhm(a, b))
    like = next(v for v in (a, b) if isinstance(v, Value))
    a, b = (_scalar(ctx, v, like) if isinstance(v, int) else v for v in (a, b))
    return _mul(ctx, a, b, 31)


@overload
def _sub(ctx: LoweringContext, a: int, b: int) -> int: ...
@overload
def _sub(ctx: LoweringContext, a: Value, b: Value | int) -> Value: ...
@overload
def _sub(ctx: LoweringContext, a: Value | int, b: Value) -> Value: ...
def _sub(ctx: LoweringContext, a: Value | int, b: Value | int) -> Value | int:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    like = next(v for v in (a, b) if isinstance(v, Value))
    a, b = (_scalar(ctx, v, like) if isinstance(v, int) else v for v in (a, b))
    return ctx.tosa.sub(a, b)


@overload
def _shl(ctx: LoweringContext, a: int, bits: int) -> int: ...
@overload
def _shl(ctx: LoweringContext, a: Value, bits: int) -> Value: ...
def _shl(ctx: LoweringContext, a: Value | int, bits: int) -> Value | int:
    """a * 2**bits for values that cannot overflow (checked for the inverse square root's range)."""
    return a << bits if isinstance(a, int) else _mul(ctx, a, _scalar(ctx, 1 << bits, a))


def inverse_sqrt(ctx: LoweringContext, acc: Value) -> tuple[Value, Value]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp of a row's sum of squares: (Q0.31 multiplier, p) with
    the sum normalized by 4**p into [2**27, 2**29) (p = -1: the sum was divided by 4). The kernel's
    exponent is then 11 - p. Its Newton-Raphson steps on Q3.28 stay inside int32 for every normalized
    sum (the largest cube is 0.3 % below the saturation bound), so its saturating shifts are plain
    multiplications here."""
    headroom = ctx.tosa.clz(acc)
    p = ctx.tosa.sub(ctx.tosa.arithmetic_right_shift(_sub(ctx, headroom, 1), _scalar(ctx, 1, acc), round=False),
                     _scalar(ctx, 1, acc))
    two_p = _shl(ctx, p, 1)
    up = ctx.tosa.maximum(two_p, _scalar(ctx, 0, acc))
    down = ctx.tosa.maximum(_sub(ctx, 0, two_p), _scalar(ctx, 0, acc))
    normalized = ctx.tosa.arithmetic_right_shift(ctx.tosa.logical_left_shift(acc, up), down, round=False)
    half = ctx.tosa.arithmetic_right_shift(
        ctx.tosa.arithmetic_right_shift(normalized, _scalar(ctx, 1, acc), round=False), _scalar(ctx, 1, acc),
        round=True)  # Q3.28 input / 2

    def step(x: Value | int) -> Value:
        cube = _shl(ctx, _srdhm(ctx, _srdhm(ctx, x, x), x), 6)
        return _shl(ctx, _sub(ctx, _srdhm(ctx, (1 << 28) + (1 << 27), x), _srdhm(ctx, half, cube)), 3)

    x = step(1 << 28)  # five steps from 1 in Q3.28 (the first one's cube folds to a constant)
    for _ in range(4):
        x = step(x)
    return _srdhm(ctx, x, 1518500250), p  # times sqrt(2) / 2


def rounding_divide(ctx: LoweringContext, x: Value, shift: Value) -> Value:
    """gemmlowp RoundingDivideByPOT by a per-row shift: halves away from zero, so the magnitude is
    shifted with TOSA's half-up rounding and the sign put back (a multiplication by +-1)."""
    magnitude = ctx.tosa.arithmetic_right_shift(ctx.tosa.abs(x), shift, round=True)
    sign = ctx.tosa.add(_shl(ctx, ctx.tosa.arithmetic_right_shift(x, _scalar(ctx, 31, x), round=False), 1),
                        _scalar(ctx, 1, x))
    return _mul(ctx, magnitude, sign)


def l2_normalize(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo, axes: list[int]) -> Value | None:
    """TFLite's int8 (reference_integer_ops) and uint8 (reference_ops) L2Normalization: the sum of
    squares of x - zp, its inverse square root as a multiplier and exponent, and each output
    x - zp times it in 1/128 units. TFLite accepts only that output scale (zero point 0, uint8 128);
    for another scale the ratio 1 / (128 * scale) joins the row's multiplier (one SRDHM more), so
    the rest of the arithmetic stays TFLite's."""
    if xq.dtype != "i8" or yq.dtype != "i8" or yq.zero_point != 0 or xq.offset != yq.offset:
        return None
    unsigned = xq.offset == 128
    ratio_multiplier, ratio_exponent = quantize_multiplier(1.0 / (128.0 * yq.scale))
    exact = ratio_multiplier == 1 << 30 and ratio_exponent == 1  # the ratio is 1: TFLite's own scale
    if not exact and not -7 <= ratio_exponent <= 7:
        return None
    v = rescale(ctx, x, 1.0, "i32", in_zp=xq.zero_point, rounding="SINGLE_ROUND")
    acc = _mul(ctx, v, v)
    for axis in sorted(axes):
        acc = ctx.tosa.reduce_sum(acc, axis=axis)
    # a sum of 0 or 1 takes the kernel's special case, multiplier 2**31 - 1 and exponent 0 (0 only
    # comes with x - zp = 0 everywhere): as the sum 1 (p = 14) with the multiplier saturated below
    inverse, p = inverse_sqrt(ctx, ctx.tosa.maximum(acc, _scalar(ctx, 1, acc)))
    # exponent 11 - p; a negative one moves into the multiplier, saturating (p = 14 only for the
    # special case: its multiplier becomes 2**31 - 8, which rounds |x - zp| <= 1 as 2**31 - 1 does)
    into_multiplier = ctx.tosa.maximum(_sub(ctx, p, 11), _scalar(ctx, 0, p))
    limit = ctx.tosa.arithmetic_right_shift(_scalar(ctx, INT32_MAX, p), into_multiplier, round=False)
    inverse = ctx.tosa.logical_left_shift(ctx.tosa.minimum(inverse, limit), into_multiplier)
    right = ctx.tosa.maximum(_sub(ctx, 11, p), _scalar(ctx, 0, p))  # the kernel's right shift, 0..12
    left_bits = 0 if exact else ratio_exponent  # SRDHM by the ratio's multiplier leaves 2**-exponent
    if not exact:
        inverse = _srdhm(ctx, inverse, ratio_multiplier)
    if unsigned:  # RoundingDivideByPOT(SRDHM(128 * (x - zp), multiplier), right)
        y = rounding_divide(ctx, _srdhm(ctx, _shl(ctx, v, 7 + left_bits), inverse), right)
    else:  # MultiplyByQuantizedMultiplier(x - zp, multiplier, 7 - right)
        exponent = _sub(ctx, 7 + left_bits, right)
        shifted = ctx.tosa.logical_left_shift(v, ctx.tosa.maximum(exponent, _scalar(ctx, 0, p)))
        y = rounding_divide(ctx, _srdhm(ctx, shifted, inverse),
                             ctx.tosa.maximum(_sub(ctx, 0, exponent), _scalar(ctx, 0, p)))
    return _pot(ctx, y, 0, "i8")


# ------------------------------------------------------------------------------ division
def div(ctx: LoweringContext, a: Value, b: Value, aq: QInfo, bq: QInfo, yq: QInfo) -> Value | None:
    """reference_ops::DivElementwise (uint8, int8, int16): the divisor's sign moved to the dividend,
    the divisor's reciprocal by GetReciprocal (CLZ and the Newton-Raphson of softmax), the dividend
    shifted up by its redundant sign bits, both multiplied (SRDHM), then by the output multiplier,
    and rounding-divided by 2**e, e = the reciprocal's exponent + the dividend's headroom - the
    output exponent. For small dividends e exceeds 31, where gemmlowp's RoundingDivideByPOT only
    asserts: compiled (x86-64 and AArch64 alike) its mask is all ones and its shift takes e modulo 32,
    giving (q >> (e - 32)) + (q >= 0), far from the quotient; LiteRT computes that, and so does this.
    A zero divisor (a TFLite debug check, undefined otherwise) divides by 1."""
    same_type = aq.dtype == bq.dtype == yq.dtype and len({aq.offset, bq.offset, yq.offset}) == 1
    if not same_type or aq.dtype not in ("i8", "i16"):
        return None
    if aq.dtype == "i16" and (aq.zero_point or bq.zero_point or yq.zero_point):
        return None
    real = float(np.float32(aq.scale) / (np.float32(bq.scale) * np.float32(yq.scale)))  # float, as the kernel
    multiplier, exponent = quantize_multiplier(real)
    if exponent > (23 if aq.dtype == "i8" else 15):  # e >= 0 needs the smallest headroom (|x| <= 255 or 65535)
        return None
    x = rescale(ctx, a, 1.0, "i32", in_zp=aq.zero_point, rounding="SINGLE_ROUND")
    d = rescale(ctx, b, 1.0, "i32", in_zp=bq.zero_point, rounding="SINGLE_ROUND")
    x, d = ctx.same_rank(x, d)

    def sign_bit(v: Value) -> Value:  # -1 for negative values, else 0
        return ctx.tosa.arithmetic_right_shift(v, _scalar(ctx, 31, v), round=False)

    sign = ctx.tosa.add(_shl(ctx, sign_bit(d), 1), _scalar(ctx, 1, d))
    x, d = _mul(ctx, x, sign), _mul(ctx, d, sign)
    reciprocal, headroom_plus_one = _reciprocal(ctx, ctx.tosa.maximum(d, _scalar(ctx, 1, d)))
    # CountLeadingSignBits(x) = CLZ(x ^ (x >> 31)) - 1
    headroom = _sub(ctx, ctx.tosa.clz(ctx.tosa.bitwise_xor(x, sign_bit(x))), 1)
    quotient = _srdhm(ctx, _srdhm(ctx, ctx.tosa.logical_left_shift(x, headroom), reciprocal), multiplier)
    e = ctx.tosa.add(_sub(ctx, 31 - exponent, headroom_plus_one), headroom)
    near = rounding_divide(ctx, quotient, ctx.tosa.minimum(e, _scalar(ctx, 31, e)))
    y = _past_31(ctx, quotient, e, near)
    y = clamp_int(ctx, y, -(1 << 20), 1 << 20)  # RESCALE by 1 takes |y| < 2**29 only; the output saturates anyway
    return _pot(ctx, y, 0, yq.dtype, out_zp=yq.zero_point if yq.dtype == "i8" else 0)
