"""gemmlowp's int16 fixed-point logistic and tanh (TFLite's ApplySigmoid / ApplyTanh in the integer
LSTMs) computed step by step in TOSA i32 arithmetic, for NPUs that map no GATHER (Ethos-U55 and U65).

Each step is one of gemmlowp's (fixed_point/tflite.py models them in numpy on all 65536 inputs):
FixedPoint<int16> raws held in i32; SaturatingRoundingDoublingHighMul is MUL with shift 15 (its rounding
is half up, as TOSA's) capped at 32767 (the one overflowing product, -32768 squared); int16's wrapping
addition is a left shift by 16 and an arithmetic right shift back; RoundingDivideByPOT rounds the
magnitude (halves away from zero); a saturating left shift is a MUL and a clamp; every `x ? a : b` is
b + bit * (a - b) with the bit from arithmetic shifts (no SELECT, comparison or BITWISE_AND, which
Ethos-U55 and U65 lack). tests/lowering/test_npu_elementwise.py checks both functions against the numpy model on
every int16 input.
"""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from .rescale import rescale
from .tflite import EXP_POWERS, rounding_divide_by_pot

_ONE = 32767  # FixedPoint<int16, 0>::One()


class _Int16:
    """int16 fixed-point operations on i32 tensors shaped like `like`."""

    def __init__(self, ctx: LoweringContext, like: Value):
        self.ctx, self.rank = ctx, ctx.type_of(like).rank

    def k(self, value: int) -> Value:
        return self.ctx.scalar(value, "i32", self.rank)

    def add(self, a: Value, b: Value | int) -> Value:
        return self.ctx.tosa.add(a, self.k(b) if isinstance(b, int) else b)

    def sub(self, a: Value | int, b: Value | int) -> Value:
        a, b = (self.k(v) if isinstance(v, int) else v for v in (a, b))
        return self.ctx.tosa.sub(a, b)

    def times(self, a: Value, b: Value | int, shift: int = 0) -> Value:
        a, b = self.ctx.same_rank(a, self.k(b) if isinstance(b, int) else b)
        return self.ctx.tosa.mul(a, b, self.ctx.const(np.array([shift], np.int8), "i8"))

    def asr(self, a: Value, bits: int, rounded: bool = False) -> Value:
        return self.ctx.tosa.arithmetic_right_shift(a, self.k(bits), round=rounded)

    def clamp(self, a: Value, low: int, high: int) -> Value:
        return self.ctx.tosa.minimum(self.ctx.tosa.maximum(a, self.k(low)), self.k(high))

    def wrap(self, a: Value) -> Value:
        """int16's wrapping: the low 16 bits, sign-extended."""
        return self.asr(self.ctx.tosa.logical_left_shift(a, self.k(16)), 16)

    def mul(self, a: Value, b: Value | int) -> Value:
        """SaturatingRoundingDoublingHighMul (16-bit)."""
        return self.ctx.tosa.minimum(self.times(a, b, 15), self.k(_ONE))

    def divide_by_pot(self, a: Value, exponent: int) -> Value:
        """RoundingDivideByPOT: |a| shifted with half-up rounding, the sign put back."""
        if exponent == 0:
            return a
        magnitude = self.asr(self.ctx.tosa.abs(a), exponent, rounded=True)
        return self.times(magnitude, self.sign(a))

    def shl_saturated(self, a: Value, exponent: int) -> Value:
        """SaturatingRoundingMultiplyByPOT."""
        if exponent <= 0:
            return self.divide_by_pot(a, -exponent)
        return self.clamp(self.times(a, 1 << exponent), -32768, 32767)

    def negative(self, a: Value) -> Value:
        """1 where a < 0, else 0."""
        return self.sub(0, self.asr(a, 31))

    def sign(self, a: Value) -> Value:
        """1 where a >= 0, else -1."""
        return self.add(self.times(self.asr(a, 31), 2), 1)

    def choose(self, bit: Value, when_one: Value | int, when_zero: Value) -> Value:
        """bit ? when_one : when_zero, for a 0/1 bit."""
        return self.add(when_zero, self.times(bit, self.sub(when_one, when_zero)))


def _const16(raw32: int) -> int:
    """gemmlowp's 16-bit constant from its 32-bit raw (as tflite._const16)."""
    return int(rounding_divide_by_pot(raw32, 16))


def _exp_quarter(f: _Int16, a: Value) -> Value:
    """exp on [-1/4, 0) in Q0.15: the Taylor expansion around -1/8, the last sum saturating."""
    constant, third = _const16(1895147668), _const16(715827883)
    x = f.wrap(f.add(a, 1 << 12))
    x2 = f.mul(x, x)
    x3 = f.mul(x2, x)
    x4_over_4 = f.divide_by_pot(f.mul(x2, x2), 2)
    poly = f.divide_by_pot(f.wrap(f.add(f.mul(f.wrap(f.add(x4_over_4, x3)), third), x2)), 1)
    return f.clamp(f.add(f.mul(f.k(constant), f.wrap(f.add(x, poly))), constant), -32768, 32767)


def _exp_on_negative_values(f: _Int16, a: Value, integer_bits: int) -> Value:
    """exp of Q`integer_bits` raws a <= 0 as Q0.15: exp of a modulo 1/4, times exp(-2**k) for each bit k set
    in the rest (gemmlowp's barrel shifter), zero below the underflow bound, One at 0."""
    fraction_bits = 15 - integer_bits
    quarter_bits = fraction_bits - 2
    low = f.sub(a, f.times(f.asr(a, quarter_bits), 1 << quarter_bits))  # a & (quarter - 1)
    mod_quarter = f.wrap(f.sub(low, 1 << quarter_bits))
    result = _exp_quarter(f, f.shl_saturated(mod_quarter, integer_bits))
    remainder = f.wrap(f.sub(mod_quarter, a))
    for k, multiplier in EXP_POWERS:
        if integer_bits > k:
            shift = fraction_bits + k
            bit = f.sub(f.asr(remainder, shift), f.times(f.asr(remainder, shift + 1), 2))
            result = f.choose(bit, f.mul(result, _const16(multiplier)), result)
    if integer_bits > 5:
        below = f.negative(f.sub(a, _const16(-(1 << (36 - integer_bits)))))
        result = f.choose(below, 0, result)
    zero = f.add(f.asr(a, 31), 1)  # a <= 0: 1 exactly at 0
    return f.choose(zero, _ONE, result)


def _one_over_one_plus_x(f: _Int16, a: Value, minus_one: bool) -> Value:
    """1 / (1 + a) (minus_one: (1 - a) / (1 + a)) of Q0.15 raws in [0, 1]: Newton-Raphson in Q2.13."""
    half_denominator = f.wrap(f.asr(f.add(a, _ONE + 1), 1))  # RoundingHalfSum(a, One), a + One > 0
    x = f.wrap(f.add(f.mul(half_denominator, _const16(-1010580540)), _const16(1515870810)))
    for _ in range(3):
        error = f.wrap(f.sub(1 << 13, f.mul(half_denominator, x)))
        x = f.wrap(f.add(x, f.shl_saturated(f.mul(x, error), 2)))
    if minus_one:
        return f.shl_saturated(f.wrap(f.sub(x, 1 << 13)), 2)
    return f.shl_saturated(x, 1)


def supported(integer_bits: int, tanh: bool) -> bool:
    """Whether the quarter interval has its two fraction bits (tanh's exp reads one more integer bit)."""
    return 0 <= integer_bits + tanh <= 13


def logistic_or_tanh16(ctx: LoweringContext, x: Value, integer_bits: int, tanh: bool) -> Value:
    """gemmlowp::logistic or gemmlowp::tanh of FixedPoint<int16, integer_bits> raws x (i16), as Q0.15 raws
    (i16). `supported(integer_bits, tanh)` must hold."""
    f = _Int16(ctx, x)
    a = rescale(ctx, x, 1.0, "i32", rounding="SINGLE_ROUND")
    minus_magnitude = f.sub(0, ctx.tosa.abs(a))  # -|a| (-32768 for -32768, as int16's negation wraps)
    nonzero, negative = f.negative(minus_magnitude), f.negative(a)
    positive = f.sub(nonzero, negative)
    if tanh:
        t = _one_over_one_plus_x(f, _exp_on_negative_values(f, minus_magnitude, integer_bits + 1), True)
        y = f.times(t, f.sub(positive, negative))  # 0 at a = 0
    else:
        p = _one_over_one_plus_x(f, _exp_on_negative_values(f, minus_magnitude, integer_bits), False)
        y = f.choose(positive, p, f.sub(_ONE, p))
        y = f.choose(f.sub(1, nonzero), 1 << 14, y)
    return rescale(ctx, y, 1.0, "i16", rounding="SINGLE_ROUND")
