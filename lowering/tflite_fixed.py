"""TFLite's fixed-point building blocks on Python integers, for the tables and constants the LiteRT
lowerings (lowering/rules/quantized_litert.py) compute at lowering time.

The arithmetic is gemmlowp's as TFLite's reference kernels use it:
- `srdhm` (SaturatingRoundingDoublingHighMul): round(a * b / 2**31), halves up; TOSA MUL with
  shift 31 computes the same (floor((a * b + 2**30) / 2**31)) except for the saturating case
  a = b = -2**31, which the kernels never reach;
- `rounding_divide_by_pot`: x / 2**e rounded half away from zero;
- `quantize_multiplier`: a real multiplier as TFLite's (int32 q, exponent), q in [2**30, 2**31)
  (TOSA RESCALE with DOUBLE_ROUND applies it as MultiplyByQuantizedMultiplier does);
- `exp_on_negative_values`: gemmlowp's Q0.31 exp of a negative Qm.(31-m) value;
- `lut_int16`: the 513-entry int16 tables TFLite's int16 kernels interpolate (LUTPopulate).
"""
from __future__ import annotations

import math
from collections.abc import Callable

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def srdhm(a: int, b: int) -> int:
    """gemmlowp's SaturatingRoundingDoublingHighMul of two int32 values."""
    if a == b == INT32_MIN:
        return INT32_MAX
    # (a*b + nudge) / 2**31 truncated, nudge = +-2**30: both signs come out as half up
    return (a * b + (1 << 30)) >> 31


def rounding_divide_by_pot(x: int, exponent: int) -> int:
    """x / 2**exponent rounded to nearest, halves away from zero (gemmlowp RoundingDivideByPOT)."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def saturating_pot(x: int, exponent: int) -> int:
    """gemmlowp SaturatingRoundingMultiplyByPOT: a saturating left shift, or a rounding right shift."""
    if exponent <= 0:
        return rounding_divide_by_pot(x, -exponent)
    return max(INT32_MIN, min(INT32_MAX, x << exponent))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real ~ q * 2**(exponent - 31), q rounded half away from zero."""
    if real == 0.0:
        return 0, 0
    mantissa, exponent = math.frexp(real)
    q = math.floor(abs(mantissa) * (1 << 31) + 0.5)
    if q == 1 << 31:
        q //= 2
        exponent += 1
    if exponent < -31:
        return 0, 0
    return int(q), int(exponent)


def _exp_quarter_interval(a: int) -> int:
    """exp of a Q0.31 value in [-1/4, 0): a Taylor expansion around -1/8 (gemmlowp)."""
    constant_term, one_third = 1895147668, 715827883  # exp(-1/8), 1/3 in Q0.31
    x = a + (1 << 28)
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(srdhm(x4_over_4 + x3, one_third) + x2, 1)
    return constant_term + srdhm(constant_term, x + poly)


# exp(-2**k) in Q0.31 for the barrel shifter, k = -2 .. 4
_EXP_POWERS = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401),
               (4, 242))


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    """gemmlowp exp_on_negative_values: exp of the Q`integer_bits` value a <= 0, as Q0.31."""
    fraction_bits = 31 - integer_bits
    quarter = 1 << (fraction_bits - 2)
    mod_quarter = (a & (quarter - 1)) - quarter
    result = _exp_quarter_interval(saturating_pot(mod_quarter, integer_bits))
    remainder = mod_quarter - a
    for k, multiplier in _EXP_POWERS:
        if integer_bits > k and remainder & (1 << (fraction_bits + k)):
            result = srdhm(result, multiplier)
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):
        result = 0
    return INT32_MAX if a == 0 else result


def lut_int16(fn: Callable[[float], float], input_scale: float, input_zero_point: int, output_scale: float,
              output_zero_point: int) -> list[int]:
    """TFLite's LUTPopulate for int16 (double arithmetic): 512 samples of fn, each biased by half
    the interpolation error at its segment's midpoint, and a last entry for the slope."""
    input_min = input_scale * (-32768 - input_zero_point)
    input_max = input_scale * (32767 - input_zero_point)
    output_min = output_scale * (-32768 - output_zero_point)
    output_max = output_scale * (32767 - output_zero_point)
    steps = 512
    step = (input_max - input_min) / steps
    half_step = step / 2
    inverse = 65536.0 / (output_max - output_min)

    def c_round(v: float) -> float:  # std::round: halves away from zero
        return math.copysign(math.floor(abs(v) + 0.5), v)

    def clamp(v: float) -> int:
        return int(min(max(v, -32768.0), 32767.0))

    table = []
    for i in range(steps):
        value = fn(input_min + i * step)
        midpoint = fn(input_min + i * step + half_step)
        following = fn(input_min + (i + 1) * step)
        sample = c_round(value * inverse)
        interpolated = c_round((following * inverse + c_round(value * inverse)) / 2)
        bias = c_round((interpolated - c_round(midpoint * inverse)) / 2)
        table.append(clamp(sample - bias))
    table.append(clamp(c_round(fn(input_max) * inverse)))
    return table


def lut_lookup_int16(value: int, table: list[int]) -> int:
    """TFLite's interpolated lookup of an int16 value in a 513-entry table."""
    index = 256 + (value >> 7)
    offset = value & 0x7F
    base = table[index]
    return base + (((table[index + 1] - base) * offset + 64) >> 7)
