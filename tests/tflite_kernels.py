"""Models of TFLite's reference kernels (gemmlowp's primitives and TFLite's multipliers, which every
tests/lowering/test_litert_*.py model uses, and quantized softmax and L2 normalization), element by element on
Python integers, written from the kernels' arithmetic (reference/softmax.h, integer_ops/l2normalization.h,
gemmlowp fixedpoint.h) independently of the lowering (lowering/fixed_point/tflite.py), so that tests can
judge the TOSA graphs against them. Slow and plain on purpose.

Checked against LiteRT 2.3 (BUILTIN_REF) on generated one-op models: see tests/lowering/test_litert_softmax_l2norm_div.py.
"""
from __future__ import annotations

import math

import numpy as np

I32_MIN, I32_MAX = -2 ** 31, 2 ** 31 - 1


def _trunc_div(a: int, b: int) -> int:
    """C's integer division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def srdhm(a: int, b: int, bits: int = 31) -> int:
    """SaturatingRoundingDoublingHighMul of (bits + 1)-bit integers."""
    if a == b == -(1 << bits):
        return (1 << bits) - 1
    ab = a * b
    nudge = (1 << (bits - 1)) if ab >= 0 else 1 - (1 << (bits - 1))
    return _trunc_div(ab + nudge, 1 << bits)


def rdbpot(x: int, e: int) -> int:
    """RoundingDivideByPOT: halves away from zero."""
    mask = (1 << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if remainder > threshold else 0)


def wrap32(v: int) -> int:
    return (v + 2 ** 31) % 2 ** 32 - 2 ** 31


def quantize_multiplier(d: float) -> tuple[int, int]:
    if d == 0:
        return 0, 0
    m, e = math.frexp(d)
    q = int(math.floor(m * 2 ** 31 + 0.5))
    if q == 2 ** 31:
        q, e = q // 2, e + 1
    if e < -31:
        return 0, 0
    return q, e


def mbqm(x: int, q: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier (int32 x)."""
    return rdbpot(srdhm(wrap32(x * (1 << max(shift, 0))), q), max(-shift, 0))


def clz32(x: int) -> int:
    x &= 0xFFFFFFFF
    return 32 - x.bit_length()


# ------------------------------------------------------------------------------ gemmlowp exp and 1/(1+x)
def _sat_shift_left(x: int, e: int) -> int:
    return max(I32_MIN, min(I32_MAX, x * 2 ** e))


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    fractional = 31 - integer_bits
    quarter = 1 << (fractional - 2)
    a_mod = (a & (quarter - 1)) - quarter
    # exp on [-1/4, 0) around -1/8
    x = _sat_shift_left(a_mod, integer_bits) + (1 << 28)
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_4 = rdbpot(x4, 2)
    poly = rdbpot(srdhm(x4_4 + x3, 715827883) + x2, 1)
    result = 1895147668 + srdhm(1895147668, x + poly)
    remainder = a_mod - a
    for exponent, mult in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
                           (3, 720401), (4, 242)):
        if integer_bits > exponent and remainder & (1 << (fractional + exponent)):
            result = srdhm(result, mult)
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):
        result = 0
    if a == 0:
        result = I32_MAX
    return result


def one_over_one_plus_x(a: int) -> int:
    total = a + I32_MAX
    half = _trunc_div(total + (1 if total >= 0 else -1), 2)
    x = 1515870810 + srdhm(half, -1010580540)
    for _ in range(3):
        t = (1 << 29) - srdhm(half, x)
        x = x + _sat_shift_left(srdhm(x, t), 2)
    return _sat_shift_left(x, 1)


# ------------------------------------------------------------------------------ softmax
def softmax_int8(x: np.ndarray, input_scale: float, beta: float) -> np.ndarray:
    """reference_ops::Softmax for int8 in and out (output scale 1/256, zero point -128), last axis."""
    real = min(beta * input_scale * 2 ** 26, 2 ** 31 - 1.0)
    q, left = quantize_multiplier(real)
    diff_min = -int(math.floor(31 * 2 ** 26 / 2 ** left))
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        top = int(row.max())
        exps = []
        for v in row:
            d = int(v) - top
            exps.append(exp_on_negative_values(srdhm(d * 2 ** left, q), 5) if d >= diff_min else None)
        total = sum(rdbpot(e, 12) for e in exps if e is not None)
        headroom = clz32(total)
        over_unit = 12 - headroom
        scale = one_over_one_plus_x(wrap32(((total << headroom) & 0xFFFFFFFF) - 2 ** 31))
        exponent = over_unit + 31 - 8
        for c, e in enumerate(exps):
            out[i, c] = -128 if e is None else max(-128, min(127, rdbpot_x86(srdhm(scale, e), exponent) - 128))
    return out.reshape(x.shape)


def lut_int16(fn, input_scale: float, input_zp: int, output_scale: float, output_zp: int) -> list[int]:
    lo, hi = input_scale * (-32768 - input_zp), input_scale * (32767 - input_zp)
    out_lo, out_hi = output_scale * (-32768 - output_zp), output_scale * (32767 - output_zp)
    step = (hi - lo) / 512
    inv = 65536.0 / (out_hi - out_lo)

    def rnd(v: float) -> float:
        return float(math.floor(v + 0.5)) if v >= 0 else -float(math.floor(-v + 0.5))

    table = []
    for i in range(512):
        val, mid, nxt = fn(lo + i * step), fn(lo + i * step + step / 2), fn(lo + (i + 1) * step)
        bias = rnd((rnd((nxt * inv + rnd(val * inv)) / 2) - rnd(mid * inv)) / 2)
        table.append(int(min(max(rnd(val * inv) - bias, -32768), 32767)))
    table.append(int(min(max(rnd(fn(hi) * inv), -32768), 32767)))
    return table


def lookup(v: int, table: list[int]) -> int:
    i = 256 + (v >> 7)
    return table[i] + (((table[i + 1] - table[i]) * (v & 127) + 64) >> 7)


def softmax_int16(x: np.ndarray, input_scale: float, beta: float) -> np.ndarray:
    """reference_ops::SoftmaxInt16 (output scale 1/32768, zero point 0), last axis."""
    exp_lut = lut_int16(math.exp, 10.0 / 65535, 32767, 2.0 / 65535, 0)
    recip_lut = lut_int16(lambda v: 1.0 / (1.0 + v), 1.0 / 65535, -32768, 2.0 / 65535, 0)
    q, shift = quantize_multiplier(float(np.float32(input_scale) * np.float32(beta)) / (10.0 / 65535.0))
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        top = int(row.max())
        exps = [lookup(max(-32768, min(32767, mbqm(int(v) - top, q, shift) + 32767)), exp_lut) for v in row]
        total = sum(exps)
        headroom = clz32(total)
        shifted = ((total << (headroom - 1)) + (1 << 13)) >> 14
        recip = lookup(max(-32768, min(32767, shifted - (1 << 15) - (1 << 16))), recip_lut)
        right = 31 - headroom
        for c, e in enumerate(exps):
            out[i, c] = max(0, min(32767, (e * recip + (1 << (right - 1))) >> right))
    return out.reshape(x.shape)


# ------------------------------------------------------------------------------ L2 normalization
def inv_sqrt_multiplier(acc: int) -> tuple[int, int]:
    """GetInvSqrtQuantizedMultiplierExp(acc, reverse_shift=-1): (multiplier, left shift)."""
    if acc <= 1:
        return I32_MAX, 0
    shift = 11
    while acc >= 1 << 29:
        acc //= 4
        shift += 1
    pairs = (clz32(acc) - 1) // 2 - 1
    shift -= pairs
    acc <<= 2 * pairs
    half_input = rdbpot(acc >> 1, 1)
    x = 1 << 28
    for _ in range(5):
        x3 = _sat_shift_left(srdhm(srdhm(x, x), x), 6)
        x = _sat_shift_left(srdhm((1 << 28) + (1 << 27), x) - srdhm(half_input, x3), 3)
    x = srdhm(x, 1518500250)
    if shift < 0:
        x <<= -shift
        shift = 0
    return x, -shift


def l2_normalization(x: np.ndarray, zero_point: int, unsigned: bool, output_scale: float = 1 / 128) -> np.ndarray:
    """reference_integer_ops::L2Normalization (int8: output scale 1/128, zero point 0) or
    reference_ops::L2Normalization (uint8: scale 1/128, zero point 128), last axis; stored values.
    Another output scale (which TFLite refuses) is nn2tosa's extension: the row multiplier times the
    ratio 1 / (128 * scale) by one more SRDHM, the ratio's exponent added to the left shift."""
    ratio, ratio_exponent = quantize_multiplier(1.0 / (128.0 * output_scale))
    folded = output_scale != 1 / 128
    rows = x.reshape(-1, x.shape[-1]).astype(np.int64)
    out = np.empty_like(rows)
    for i, row in enumerate(rows):
        diffs = [int(v) - zero_point for v in row]
        multiplier, shift = inv_sqrt_multiplier(sum(d * d for d in diffs))
        extra = 0
        if folded:
            multiplier, extra = srdhm(multiplier, ratio), ratio_exponent
        for c, d in enumerate(diffs):
            if unsigned:
                out[i, c] = max(0, min(255, 128 + rdbpot(srdhm(d * 2 ** (7 + extra), multiplier), -shift)))
            else:
                out[i, c] = max(-128, min(127, mbqm(d, multiplier, shift + 7 + extra)))
    return out.reshape(x.shape)


# ------------------------------------------------------------------------------ division
def rdbpot_x86(x: int, e: int) -> int:
    """RoundingDivideByPOT as compiled for x86-64 when the exponent exceeds 31 (which gemmlowp only
    asserts against): the mask (2**e - 1) truncated to int32 is all ones, and the int32 shift takes
    the exponent modulo 32."""
    if e <= 31:
        return rdbpot(x, e)
    threshold = -1 + (1 if x < 0 else 0)
    return (x >> (e & 31)) + (1 if x > threshold else 0)


def _leading_sign_bits(x: int) -> int:
    return clz32(x) - 1 if x >= 0 else clz32(~x) - 1


def div(a: np.ndarray, b: np.ndarray, qa: tuple[float, int], qb: tuple[float, int], qy: tuple[float, int],
        lo: int, hi: int) -> np.ndarray:
    """reference_ops::DivElementwise (uint8, int8, int16) on broadcast operands; q* = (scale, zero
    point) of the stored values. A zero divisor (TFLite: a debug check, undefined) is divided as 1."""
    real = float(np.float32(qa[0]) / (np.float32(qb[0]) * np.float32(qy[0])))
    multiplier, shift = quantize_multiplier(real)
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    out = np.empty(a.shape, np.int64)
    for i in np.ndindex(a.shape):
        x, y = int(a[i]) - qa[1], int(b[i]) - qb[1]
        if y < 0:
            x, y = -x, -y
        y = max(y, 1)
        headroom_plus_one = clz32(y)
        reciprocal = one_over_one_plus_x(wrap32(((y << headroom_plus_one) & 0xFFFFFFFF) - 2 ** 31))
        reciprocal_shift = 31 - headroom_plus_one
        headroom = _leading_sign_bits(x)
        unscaled = srdhm(wrap32(x * 2 ** headroom), reciprocal)
        total_shift = shift - reciprocal_shift - headroom
        out[i] = max(lo, min(hi, qy[1] + rdbpot_x86(srdhm(unscaled, multiplier), -total_shift)))
    return out
