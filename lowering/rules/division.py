"""Divisions, remainders, powers and squares TOSA has no single operator for: div, floor_div, mod,
fmod (float remainders exact, as numpy's, also for quotients beyond f32's integers), pow,
squared_difference and square, on floats and on integers (through i32); quantized div (an exact
rounding integer division of the operands on a common fixed-point unit, or TFLite's kernel under LiteRT
semantics: fixed_point.litert_ops.div).
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext, constant_value
from ..fixed_point import litert_ops
from ..fixed_point.rescale import fraction_bits, narrow, widen
from ..registry import rule
from .arith import (Arith, FLOAT_TYPES, check_unquantized, float_arith, floating_point_operands, from_i32,
                    in_compute_type, int_operands, integers_fit_i32, operand_dtype, result_dtype, two_product)
from .elementwise import operands_all_quantized, quantized_operands
from .quantization import float_fallback, q_out, require_per_tensor


def _float_divmod(a: Arith, x: Value, y: Value, floor: bool, sign_of: Value | None = None) -> tuple[Value, Value]:
    """(q, r) with q = floor(x / y) (or trunc) and r = x - q*y, r exact while |x / y| < 2^23 (the
    remainder is then representable and computed from an exact product). The quotient estimate
    fl(x * fl(1/y)) can sit one off an integer boundary; the exact remainder's sign moves it back.
    A truncated remainder takes the sign of `sign_of` (default x)."""
    q0 = a.div(x, y)
    if floor:
        q = a.floor(q0)
    else:
        q = a.truncate(q0)
    p, e = two_product(a, q, y)
    t = a.sub(x, p)
    r = a.sub(t, e)
    # whether x - p or t - e rounded (Fast2Sum error terms; both are exact when the remainder is
    # representable, so this only fires for a tiny x against a y of the other sign)
    rounded = a.either(a.negation(a.eq(a.sub(x, a.add(t, p)), 0.0)), a.negation(a.eq(a.sub(a.sub(t, r), e), 0.0)))
    # floor: r must have y's sign (or be 0), trunc: x's; and |r| < |y|. Either way, one step of q
    # toward r / y's sign (r -= step * y) brings r back into range. |r| == |y| after rounding is a
    # remainder just short of y (mod of a tiny x by a y of the other sign): it stays, as in numpy.
    wanted_negative = a.lt(y, 0.0) if floor else a.lt(x if sign_of is None else sign_of, 0.0)
    wrong_sign = a.both(a.negation(a.eq(r, 0.0)), a.negation(a.same(a.lt(r, 0.0), wanted_negative)))
    too_large = a.either(a.gt(a.abs(r), a.abs(y)), a.both(a.eq(a.abs(r), a.abs(y)), a.negation(rounded)))
    off = a.either(wrong_sign, too_large)
    toward = a.select(a.same(a.lt(r, 0.0), a.lt(y, 0.0)), 1.0, -1.0)
    step = a.select(off, toward, 0.0)
    q = a.add(q, step)
    r = a.sub(r, a.mul(step, y))
    return q, r


def _int_divmod(ctx: LoweringContext, x: Value, y: Value, floor: bool) -> tuple[Value, Value]:
    """i32 (q, r): TOSA INTDIV truncates; floor division moves q down when r and y differ in sign."""
    q = ctx.tosa.intdiv(x, y)
    r = ctx.tosa.sub(x, ctx.mul(q, y))
    if floor:
        a = Arith(ctx, "i32", ctx.type_of(q).rank)
        adjust = a.both(a.negation(a.eq(r, 0)), a.negation(a.same(a.lt(r, 0), a.lt(y, 0))))
        q = a.select(adjust, a.sub(q, 1), q)
        r = a.select(adjust, a.add(r, y), r)
    return q, r


# nn op -> (floor rounding?, result: 0 quotient / 1 remainder)
DIVISIONS = {"nn.floor_div": (True, 0), "nn.mod": (True, 1), "nn.fmod": (False, 1)}


@rule("nn.div", checks=(floating_point_operands, integers_fit_i32))
def div(ctx: LoweringContext) -> Value:
    if operand_dtype(ctx) in FLOAT_TYPES:
        a = float_arith(ctx, "div")
        x, y = in_compute_type(ctx, a, ctx.operand("x"), ctx.operand("y"))
        return ctx.cast(a.div(x, y), result_dtype(ctx))
    x, y = int_operands(ctx, "integer division")
    return from_i32(ctx, ctx.tosa.intdiv(x, y))


@rule(*DIVISIONS, checks=(floating_point_operands, integers_fit_i32))
def division(ctx: LoweringContext) -> Value:
    floor, which = DIVISIONS[ctx.op_name]
    if operand_dtype(ctx) in FLOAT_TYPES:
        a = float_arith(ctx, ctx.op_name)
        x, y = ctx.same_rank(*in_compute_type(ctx, a, ctx.operand("x"), ctx.operand("y")))
        q, r = _float_divmod(a, x, y, floor)
        if which == 0:
            # past 2^23 every float is an integer: the rounded quotient is the answer; so it is for
            # the special values (x/0, inf/y, x/inf: the remainder is NaN there)
            q0 = a.div(x, y)
            result = a.select(a.both(a.lt(a.abs(q0), 2.0 ** 23), a.is_finite(r)), q, a.floor(q0))
        else:
            steps = _reduction_steps(operand_dtype(ctx), constant_value(ctx, ctx.operand("y")))
            result = _remainder_specials(a, x, y, _large_quotient_remainder(a, x, y, r, floor, steps), floor)
        return ctx.cast(result, result_dtype(ctx))
    x, y = int_operands(ctx, ctx.op_name)
    return from_i32(ctx, _int_divmod(ctx, x, y, floor)[which])


def _large_quotient_remainder(a: Arith, x: Value, y: Value, r: Value, floor: bool, steps: int) -> Value:
    """The remainder where |x / y| >= 2^23: reduce x exactly by y * (12-bit multiples) until the
    quotient is small, then finish with the exact step. Each step removes 11 bits of quotient; the
    `steps` must cover the range of x / y (see _reduction_steps)."""
    q0 = a.abs(a.div(x, y))
    large = a.ge(q0, 2.0 ** 22)
    rem = x
    # multiples of y (2^100 y, 2^200 y): reducing by them first keeps every quotient below 2^120;
    # 2^200 y is only used when |x / y| > 2^220, where |y| < 2^-92 and it cannot overflow
    y_far = a.mul(y, 2.0 ** 100)
    y_farther = a.mul(y_far, 2.0 ** 100)
    for _ in range(steps):
        overflow = a.gt(a.abs(a.div(rem, y)), 2.0 ** 120)
        overflow_far = a.gt(a.abs(a.div(rem, y_far)), 2.0 ** 120)
        d = a.select(overflow_far, y_farther, a.select(overflow, y_far, y))
        q = a.div(rem, d)
        q = a.truncate(q)
        c = a.mul(q, 4097.0 * 2.0 ** -64)  # 12 leading bits of q, scaled so that q*4097 cannot overflow
        q_hi = a.mul(a.sub(c, a.sub(c, a.mul(q, 2.0 ** -64))), 2.0 ** 64)
        q_hi = a.select(a.lt(a.abs(q), 2.0 ** 12), q, q_hi)
        p, e = two_product(a, q_hi, d)
        rem = a.sub(a.sub(rem, p), e)
    _, final = _float_divmod(a, rem, y, floor, sign_of=x)
    # trunc remainder keeps x's sign; a zero remainder after reduction must too
    if not floor:
        final = a.select(a.eq(final, 0.0), a.mul(x, 0.0), final)
    nonfinite = a.negation(a.both(a.is_finite(x), a.is_finite(y)))
    return a.select(a.both(large, a.negation(nonfinite)), final, r)


# log2 of the largest |x / y| per operand type: the largest finite value over the smallest subnormal
LOG2_QUOTIENT_RANGE = {"f32": 128 + 149, "bf16": 128 + 133, "f16": 16 + 24}


def _reduction_steps(dtype: str, divisor: np.ndarray | None) -> int:
    """Reduction steps for quotients up to the operand type's range (or, for a constant divisor, up
    to the largest finite x over its smallest magnitude): each step removes 11 bits, the exact final
    step takes the last 22."""
    log2_range = LOG2_QUOTIENT_RANGE[dtype]
    if divisor is not None and divisor.dtype.kind == "f" and np.all(np.isfinite(divisor)) and np.any(divisor):
        smallest = float(np.min(np.abs(divisor[divisor != 0]).astype(np.float64)))
        log2_range = min(log2_range, {"f32": 128, "bf16": 128, "f16": 16}[dtype] - math.floor(math.log2(smallest)))
    return max(1, math.ceil((log2_range - 22) / 11) + 1)


def _remainder_specials(a: Arith, x: Value, y: Value, r: Value, floor: bool) -> Value:
    """numpy's remainders at the special values: NaN for x = inf, y = 0 or a NaN operand; for
    y = inf, x itself (mod: y when x is non-zero and of the other sign)."""
    if floor:
        other_sign = a.both(a.negation(a.eq(x, 0.0)), a.negation(a.same(a.lt(x, 0.0), a.lt(y, 0.0))))
        by_inf = a.select(other_sign, y, x)
    else:
        by_inf = x
    r = a.select(a.both(a.is_inf(y), a.is_finite(x)), by_inf, r)
    nan = a.either(a.either(a.is_nan(y), a.negation(a.is_finite(x))), a.eq(y, 0.0))
    return a.select(nan, float("nan"), r)


@rule("nn.squared_difference", checks=(integers_fit_i32,))
def squared_difference(ctx: LoweringContext) -> Value:
    if operand_dtype(ctx) in FLOAT_TYPES:
        check_unquantized(ctx)
        x, y = ctx.operand("x"), ctx.operand("y")
        d = ctx.tosa.sub(x, y)
        return ctx.mul(d, d)
    x, y = int_operands(ctx, "squared_difference")
    d = ctx.tosa.sub(x, y)
    return from_i32(ctx, ctx.mul(d, d))


@rule("nn.pow", checks=(floating_point_operands, integers_fit_i32))
def pow_(ctx: LoweringContext) -> Value:
    if operand_dtype(ctx) not in FLOAT_TYPES:
        return _integer_pow(ctx)
    a = float_arith(ctx, "pow")
    x, y = in_compute_type(ctx, a, ctx.operand("x"), ctx.operand("y"))
    x, y = ctx.same_rank(x, y)
    return ctx.cast(a.pow(x, y), result_dtype(ctx))


def _integer_pow(ctx: LoweringContext) -> Value:
    """x ** y on integers by repeated squaring in i32 (products wrap as nn's integers do); a
    negative exponent gives the truncated real power: 1 for x = 1, +-1 for x = -1, else 0. One
    squaring step per bit of the largest exponent (31, or fewer for a constant exponent)."""
    x, y = int_operands(ctx, "pow")
    a = Arith(ctx, "i32", ctx.type_of(x).rank)
    known = constant_value(ctx, ctx.operand("y"))
    bits = 31 if known is None else max(1, int(np.max(np.abs(known.astype(np.int64)))).bit_length())
    result, base = a.v(1), x
    for bit in range(bits):
        if bit:
            base = ctx.mul(base, base)
        on = a.eq(ctx.tosa.bitwise_and(ctx.tosa.arithmetic_right_shift(y, a.v(bit), round=False), a.v(1)), 1)
        result = a.select(on, ctx.mul(result, base), result)
    odd = a.eq(ctx.tosa.bitwise_and(y, a.v(1)), 1)
    negative_power = a.select(a.eq(x, 1), 1, a.select(a.eq(x, -1), a.select(odd, -1, 1), 0))
    return from_i32(ctx, a.select(a.lt(y, 0), negative_power, result))


@rule("nn.square", checks=(integers_fit_i32,))
def square(ctx: LoweringContext) -> Value:
    x = ctx.operand("x")
    if operand_dtype(ctx) in FLOAT_TYPES:
        check_unquantized(ctx)
        return ctx.mul(x, x)
    (wide,) = int_operands(ctx, "square")
    return from_i32(ctx, ctx.mul(wide, wide))


DIVISION_FRACTION_BITS = 10


@rule("nn.div", quantized=True, checks=(operands_all_quantized,))
def quantized_div(ctx: LoweringContext) -> Value | list[Value]:
    """round(A * K / B) for A = a - zpa, B = b - zpb, K = sa / (sb * sy): the numerator A * K * 2**p
    (one RESCALE), INTDIV by B (truncating: an error below 2**-p of an output step), one RESCALE by
    2**-p. Division by zero gives what CpuRef's float division encodes: the saturated extreme of the
    numerator's sign (0 / 0, a NaN CpuRef refuses to encode, gives the zero point). When the
    numerator leaves fewer than DIVISION_FRACTION_BITS for the quotient (int16 data), it computes in
    f32 as CpuRef does. That is CpuRef's division; semantics "litert" takes TFLite's integer kernel
    (litert_ops.div) wherever TFLite accepts the operands."""
    (a, b), (aq, bq) = quantized_operands(ctx)
    yq = q_out(ctx)
    if yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, yq)
    if ctx.semantics == "litert":  # TFLite's integer kernel
        y = litert_ops.div(ctx, a, b, aq, bq, yq)
        if y is not None:
            return y
    ratio = aq.scale / (bq.scale * yq.scale)
    p = fraction_bits(aq.span, ratio, headroom=1, input_span=aq.span)
    if p < DIVISION_FRACTION_BITS:  # wide numerators (int16) leave too few bits for the quotient
        return float_fallback(ctx)
    numerator = widen(ctx, a, aq, ratio * 2.0 ** p)
    denominator = widen(ctx, b, bq)
    numerator, denominator = ctx.same_rank(numerator, denominator)
    rank = ctx.type_of(numerator).rank
    zero, one = ctx.scalar(0, "i32", rank), ctx.scalar(1, "i32", rank)
    by_zero = ctx.tosa.equal(denominator, zero)
    safe = ctx.tosa.select(by_zero, one, denominator)
    quotient = narrow(ctx, ctx.tosa.intdiv(numerator, safe), 2.0 ** -p, yq)
    dtype = yq.dtype
    rank_y = ctx.type_of(quotient).rank

    def extreme(value: int) -> Value:
        return ctx.const(np.full((1,) * rank_y, value), dtype)

    positive = ctx.tosa.greater(numerator, zero)
    negative = ctx.tosa.greater(zero, numerator)
    infinite = ctx.tosa.select(positive, extreme(yq.qmax),
                               ctx.tosa.select(negative, extreme(yq.qmin), extreme(yq.zero_point)))
    return ctx.tosa.select(by_zero, infinite, quotient)
