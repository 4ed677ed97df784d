"""TFLite's fixed-point building blocks, for the tables and constants the LiteRT lowerings compute at
lowering time (lowering/fixed_point/litert_kernels.py, litert_ops.py, lowering/rules/elementwise.py).

The arithmetic is gemmlowp's as TFLite's reference kernels use it, on Python integers or int64 numpy
arrays alike:
- `srdhm` (SaturatingRoundingDoublingHighMul): a * b / 2**31 rounded to nearest, halves up (TOSA MUL
  with shift 31 computes the same except for the saturating case a = b = -2**31);
- `rounding_divide_by_pot`: x / 2**e rounded half away from zero; `saturating_multiply_by_pot`;
- `quantize_multiplier`: a real multiplier as TFLite's (int32 q, exponent), |q| in [2**30, 2**31),
  and `multiply_by_quantized_multiplier`, which TOSA RESCALE with DOUBLE_ROUND reproduces;
- `exp_on_negative_values`: gemmlowp's Q0.31 exp of a negative Qm.(31-m) value;
- `lut_int16_entries` / `lut_lookup_int16`: the 513-entry int16 tables TFLite's int16 kernels
  interpolate (LUTPopulate, in float32 or double as the kernel instantiates it).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeAlias

import numpy as np

from .carrier import round_half_away
from .rescale import RescaleRangeError

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

# What the helpers below take: numbers, Python's or numpy's, or arrays of them (they compute on arrays).
Integers: TypeAlias = "np.ndarray | int | np.integer"
Reals: TypeAlias = "np.ndarray | float | np.floating"


def div_toward_zero(n: np.ndarray, d: int) -> np.ndarray:
    """C integer division (truncates toward zero)."""
    n = np.asarray(n, np.int64)
    return np.where(n >= 0, n // d, -((-n) // d))


def srdhm(a: Integers, b: Integers, bits: int = 31) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul for (bits + 1)-bit integers: a * b / 2**bits rounded
    to nearest, halves up (below zero the nudge is 1 - 2**(bits - 1) and the division truncates, so a
    negative half rounds toward zero); the one overflowing product (min * min) saturates to the max."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    low = -(1 << bits)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << (bits - 1), 1 - (1 << (bits - 1)))
    return np.where((a == low) & (b == low), (1 << bits) - 1, div_toward_zero(ab + nudge, 1 << bits))


def rounding_divide_by_pot(x: Integers, exponent: int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: x / 2**exponent rounded to nearest, halves away from zero."""
    x = np.asarray(x, np.int64)
    if exponent == 0:
        return x
    if exponent < 0:  # gemmlowp requires 0 <= exponent: a kernel handed a scale ratio it cannot shift
        raise RescaleRangeError(f"a rounding right shift by {exponent} bits: a scale ratio TFLite's kernel cannot "
                                "express (it shifts right only here)")
    mask = (1 << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def saturating_multiply_by_pot(x: Integers, exponent: int, bits: int = 32) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT: x * 2**exponent, saturated to the `bits`-bit range
    when shifting left, rounded (RoundingDivideByPOT) when shifting right."""
    if exponent <= 0:
        return rounding_divide_by_pot(x, -exponent)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.clip(np.asarray(x, np.int64) << exponent, lo, hi)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real ~ multiplier * 2**(exponent - 31), |multiplier| in [2**30, 2**31)
    rounded half away from zero (std::round); below 2**-32 the multiplier flushes to (0, 0). The
    LiteRT lowerings take TFLite's own multipliers from here, so that their RESCALEs multiply by
    exactly the integer the kernel does."""
    if not math.isfinite(real):
        raise RescaleRangeError(f"rescale factor {real} is not finite")
    if real == 0:
        return 0, 0
    mantissa, exponent = math.frexp(real)
    q = int(math.copysign(math.floor(abs(mantissa) * (1 << 31) + 0.5), mantissa))
    if abs(q) == 1 << 31:
        q //= 2
        exponent += 1
    if exponent < -31:
        return 0, 0
    return q, exponent


def multiply_by_quantized_multiplier(x: Integers, multiplier: int, shift: int) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier (double rounding): the left part of the shift first, the
    rounding doubling high multiply, then a rounding right shift. An exponent past 31 (a damaged file's
    extreme scales) is one no int32 kernel can apply: RescaleRangeError, the op unsupported."""
    if shift > 31:
        raise RescaleRangeError(f"a multiplier exponent of {shift}: the scales are beyond TFLite's integer kernels")
    x = np.asarray(x, np.int64) * (1 << max(shift, 0))
    return rounding_divide_by_pot(srdhm(x, multiplier), max(-shift, 0))


def _mul(a: int, b: int) -> int:
    return int(srdhm(a, b))


def _exp_quarter_interval(a: int) -> int:
    """exp of a Q0.31 value in [-1/4, 0): a Taylor expansion around -1/8 (gemmlowp)."""
    constant_term, one_third = 1895147668, 715827883  # exp(-1/8), 1/3 in Q0.31
    x = a + (1 << 28)
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    x4_over_4 = int(rounding_divide_by_pot(x4, 2))
    poly = int(rounding_divide_by_pot(_mul(x4_over_4 + x3, one_third) + x2, 1))
    return constant_term + _mul(constant_term, x + poly)


# exp(-2**k) in Q0.31 for the barrel shifter, k = -2 .. 4
EXP_POWERS = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
               (4, 242))


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    """gemmlowp exp_on_negative_values: exp of the Q`integer_bits` value a <= 0, as Q0.31."""
    fraction_bits = 31 - integer_bits
    quarter = 1 << (fraction_bits - 2)
    mod_quarter = (a & (quarter - 1)) - quarter
    result = _exp_quarter_interval(int(saturating_multiply_by_pot(mod_quarter, integer_bits)))
    remainder = mod_quarter - a
    for k, multiplier in EXP_POWERS:
        if integer_bits > k and remainder & (1 << (fraction_bits + k)):
            result = _mul(result, multiplier)
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):
        result = 0
    return INT32_MAX if a == 0 else result


def lut_int16_entries(transform: Callable[[np.ndarray], np.ndarray], float_type: type[np.floating],
                      input_scale: float, input_zero_point: int, output_scale: float,
                      output_zero_point: int) -> np.ndarray:
    """TFLite's LUTPopulate for int16, in `float_type` arithmetic (np.float32 for the elementwise
    kernels, np.float64 where the kernel instantiates it with double, e.g. int16 softmax): 512 samples
    of the transform over the input range scaled by 65536 / (the output range) and rounded, each less
    half its midpoint's interpolation error (rounded), and a last entry at the input maximum."""
    f = float_type
    in_min, in_max = f(input_scale) * f(-32768 - input_zero_point), f(input_scale) * f(32767 - input_zero_point)
    out_min, out_max = f(output_scale) * f(-32768 - output_zero_point), f(output_scale) * f(32767 - output_zero_point)
    step = (in_max - in_min) / f(512)
    inverse = f(65536) / (out_max - out_min)
    start = in_min + np.arange(512).astype(f) * step
    with np.errstate(all="ignore"):
        value, midpoint, following = [np.asarray(transform(v), f) for v in
                                      (start, start + step / f(2), in_min + np.arange(1, 513).astype(f) * step)]
        sample = f(1) * round_half_away(value * inverse).astype(f)
        error = round_half_away((following * inverse + sample) / f(2)).astype(f) - round_half_away(midpoint * inverse)
        entries = np.clip(sample - round_half_away(error.astype(f) / f(2)).astype(f), -32768, 32767)
        last = np.clip(round_half_away(np.asarray(transform(np.array([in_max], f)), f) * inverse), -32768, 32767)
    return np.append(entries, last).astype(np.int64)


def lut_lookup_int16(value: np.ndarray | int, table: np.ndarray) -> np.ndarray:
    """TFLite's interpolated lookup of int16 values in a 513-entry table (the product rounded half up)."""
    value = np.asarray(value, np.int64)
    index = 256 + (value >> 7)
    base = table[index]
    return base + (((table[index + 1] - base) * (value & 0x7F) + 64) >> 7)


# ------------------------------------------------------------------------------ gemmlowp's int16 fixed point
# gemmlowp::FixedPoint<int16_t, k> arithmetic as TFLite's integer LSTM kernels use it (ApplySigmoid,
# ApplyTanh: portable_tensor_utils): Q(k).(15 - k) raws, products by the 16-bit SRDHM, + and - wrapping
# as int16 does, constants given as Q0.31 raws rounded to 16 bits. Vectorized over int64 arrays, so a
# lowering tabulates a function for all 65536 inputs at once.
def _wrap16(x: np.ndarray) -> np.ndarray:
    return ((np.asarray(x, np.int64) + 32768) & 0xFFFF) - 32768


def _const16(raw32: int) -> int:
    """GEMMLOWP_CHECKED_FIXEDPOINT_CONSTANT for int16: the int32 raw rounded to its high 16 bits."""
    return int(rounding_divide_by_pot(raw32, 16))


def _mul16(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    return srdhm(a, b, 15)


def _shl_sat16(x: np.ndarray, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT<exponent> of int16 raws (a saturating left shift for exponent > 0)."""
    return saturating_multiply_by_pot(x, exponent, 16)


_ONE_Q0_15 = 32767  # FixedPoint<int16, 0>::One(): the largest raw


def _one_over_one_plus_x16(a: np.ndarray, minus_one: bool) -> np.ndarray:
    """gemmlowp's one_over_one_plus_x_for_x_in_0_1 (minus_one False) or one_minus_x_over_one_plus_x
    (True) of Q0.15 raws in [0, 1]: Newton-Raphson in Q2.13 from 48/17 - 32/17 * d, three steps."""
    s = np.asarray(a, np.int64) + _ONE_Q0_15
    half_denominator = _wrap16(div_toward_zero(s + np.where(s >= 0, 1, -1), 2))  # RoundingHalfSum
    x = _wrap16(_const16(1515870810) + _mul16(half_denominator, _const16(-1010580540)))
    one_q2 = 1 << 13
    for _ in range(3):
        error = _wrap16(one_q2 - _mul16(half_denominator, x))
        x = _wrap16(x + _shl_sat16(_mul16(x, error), 2))  # a Q4 product rescaled to Q2
    if minus_one:
        return _shl_sat16(_wrap16(x - one_q2), 2)  # Q2 -> Q0
    return _shl_sat16(x, 1)  # x / 2 in Q1 read as Q0


def _exp_quarter_interval16(a: np.ndarray) -> np.ndarray:
    """exp of a Q0.15 value in [-1/4, 0): gemmlowp's Taylor expansion around -1/8, the last sum saturating."""
    constant_term, one_third = _const16(1895147668), _const16(715827883)
    x = _wrap16(a + (1 << 12))
    x2 = _mul16(x, x)
    x3 = _mul16(x2, x)
    x4 = _mul16(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(_wrap16(_mul16(_wrap16(x4_over_4 + x3), one_third) + x2), 1)
    return np.clip(constant_term + _mul16(constant_term, _wrap16(x + poly)), -32768, 32767)


def exp_on_negative_values16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp's exp_on_negative_values of Q`integer_bits` int16 raws a <= 0, as Q0.15 raws."""
    a = np.asarray(a, np.int64)
    fraction_bits = 15 - integer_bits
    quarter = 1 << (fraction_bits - 2)
    mod_quarter = _wrap16((a & (quarter - 1)) - quarter)
    result = _exp_quarter_interval16(_shl_sat16(mod_quarter, integer_bits))
    remainder = _wrap16(mod_quarter - a)
    for k, multiplier in EXP_POWERS:
        if integer_bits > k:
            bit = (remainder & (1 << (fraction_bits + k))) != 0
            result = np.where(bit, _mul16(result, _const16(multiplier)), result)
    if integer_bits > 5:
        result = np.where(a < _const16(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, _ONE_Q0_15, result)


def gemmlowp_logistic16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp::logistic of FixedPoint<int16, integer_bits> raws, as Q0.15 raws (TFLite's ApplySigmoid
    with integer_bits 3)."""
    a = np.asarray(a, np.int64)
    magnitude = np.where(a > 0, a, _wrap16(-a))
    positive = _one_over_one_plus_x16(exp_on_negative_values16(_wrap16(-magnitude), integer_bits), False)
    return np.where(a == 0, _const16(1 << 30), np.where(a > 0, positive, _wrap16(_ONE_Q0_15 - positive)))


def gemmlowp_tanh16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """gemmlowp::tanh of FixedPoint<int16, integer_bits> raws, as Q0.15 raws (TFLite's ApplyTanh)."""
    a = np.asarray(a, np.int64)
    negative_part = np.where(a < 0, a, _wrap16(-a))
    # neg_tanh_on_negative_values: exp of 2n (the same raws read with one more integer bit)
    t = _one_over_one_plus_x16(exp_on_negative_values16(negative_part, integer_bits + 1), True)
    return np.where(a == 0, 0, np.where(a < 0, _wrap16(-t), t))
