"""RESCALE and the i32 fixed-point values quantized rules compute on.

- `multiplier_shift`: a real scale as RESCALE's (multiplier, shift), the rule FORMATS.md gives;
- `rescale`: one RESCALE op (per tensor or per channel, zero points, unsigned flags);
- `widen` / `narrow`: quantized tensor -> i32 holding `(q - zp) * factor`, and an i32 accumulator
  -> quantized result. Rules compute between them on i32 "fixed-point" values: an i32 `v` stands
  for the real value `v * unit`, with `unit` chosen (`fraction_bits`) so that rounding errors stay
  far below one output step while no intermediate overflows;
- `clamp_int` / `saturate_to`: integer bounds.

Rounding: under TFLite's semantics (the default, lowering/semantics.py) a RESCALE whose shift exceeds 31
uses DOUBLE_ROUND, which is TFLite's requantization (a rounding doubling high multiply, then a rounding
right shift); at smaller shifts both modes are the same and SINGLE_ROUND is written. Under CpuRef's,
RESCALE uses SINGLE_ROUND (half up), and CpuRef rounds halves away from zero: where an exact half can
occur at all (`ties_possible`: the factor has few significant bits, e.g. 1/8 for an average of 8, 0.5
for a requantization), `narrow` rescales |acc| and puts the sign back, so negative halves round as
CpuRef rounds them. Elsewhere a half cannot be hit exactly.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext, LoweringUnsupported
from ..semantics import computes_litert, rounding_mode
from .carrier import INTEGER_RANGE, QInfo



# ------------------------------------------------------------------------------ multiplier and shift
class RescaleRangeError(LoweringUnsupported, ValueError):
    """A scale RESCALE cannot express (quantization scales of a damaged or extreme file): the lowering
    driver reports the op unsupported (exit 3) instead of failing with an internal error."""


def multiplier_shift(scale: float, scale32: bool = True) -> tuple[int, int]:
    """A non-negative real scale as RESCALE's (multiplier, shift): scale ~ multiplier * 2**-shift
    (one entry of multipliers_shifts, which says how)."""
    multipliers, shifts = multipliers_shifts(np.array([scale], dtype=np.float64), scale32)
    return int(multipliers[0]), int(shifts[0])


def multipliers_shifts(scales: Sequence[float] | np.ndarray, scale32: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative real scales as RESCALE's multipliers and shifts (int64 arrays, one pair per
    scale, computed for the whole array at once): scale ~ multiplier * 2**-shift.

    mantissa, exp = frexp(scale); multiplier = mantissa * 2**31 rounded half up (2**15 for a 16-bit
    multiplier), halved with exp + 1 when it rounds up to 2**31; shift = 31 - exp (15 - exp);
    shift is kept in TOSA's 2..62 (a tiny scale loses low multiplier bits, a zero scale is 0, 2).
    Float64 holds mantissa * 2**31 + 0.5 exactly, so this is the same integer arithmetic per scale.
    The first scale RESCALE cannot take raises RescaleRangeError."""
    multipliers, shifts, problem = _multipliers_shifts(scales, scale32)
    if problem is not None:
        raise RescaleRangeError(problem[1])
    return multipliers, shifts


def _multipliers_shifts(scales: Sequence[float] | np.ndarray,
                        scale32: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, str] | None]:
    """multipliers_shifts without raising: also (index, message) of the first scale RESCALE cannot
    take, or None (its entries are then meaningless)."""
    scales = np.asarray(scales, dtype=np.float64).reshape(-1)
    bits = 31 if scale32 else 15
    invalid = ~np.isfinite(scales) | (scales < 0)
    mantissa, exp = np.frexp(np.where(invalid, 0.0, scales))
    # halves away from zero, as TFLite's QuantizeMultiplier
    multipliers = np.floor(mantissa * float(1 << bits) + 0.5).astype(np.int64)
    carry = multipliers == 1 << bits
    multipliers[carry] >>= 1
    shifts = bits - (exp.astype(np.int64) + carry)
    excess = shifts - 62
    if np.any(excess > 0):  # a tiny scale: drop the multiplier's low bits (all of them past 63)
        drop = np.clip(excess, 0, 63)
        multipliers = np.where(drop >= 63, 0, multipliers >> np.minimum(drop, 62))
        shifts = np.minimum(shifts, 62)
    zero = scales == 0
    multipliers[zero], shifts[zero] = 0, 2
    bad = invalid | (~zero & (shifts < 2))
    if not np.any(bad):
        return multipliers, shifts, None
    first = int(np.argmax(bad))
    scale = float(scales[first])
    if invalid[first]:
        return multipliers, shifts, (first, f"rescale factor {scale} is not a finite non-negative number")
    return multipliers, shifts, (first, f"rescale factor {scale} is too large for RESCALE (shift {int(shifts[first])} < 2)")


def max_input_for(scale: float, scale32: bool = True) -> int:
    """The largest |input - input_zp| RESCALE accepts with this scale (apply_scale_32 REQUIREs the
    value to fit in shift - 1 bits)."""
    _, shift = multiplier_shift(scale, scale32)
    return (1 << (shift - 1)) - 1 if scale32 else (1 << 47) - 1


def fraction_bits(max_abs: float, ratio: float = 1.0, *, headroom: int = 1, cap: int = 24,
                  input_span: int | None = None) -> int:
    """Fraction bits p for an i32 fixed-point value v = real_ratio * x * 2**p with |x| <= max_abs:
    the largest p (up to `cap`) keeping |v| * 2**headroom below 2**30 and, when the values come from
    a RESCALE of inputs up to `input_span`, within RESCALE's input limit for that scale."""
    p = cap
    while p > -31:
        factor = ratio * 2.0 ** p
        fits = max_abs * factor * 2.0 ** headroom < 2.0 ** 30
        if fits and input_span is not None:
            fits = factor <= 0 or input_span <= max_input_for(factor)
        if fits:
            return p
        p -= 1
    raise RescaleRangeError(f"no fixed-point format holds {max_abs} * {ratio}")


# ------------------------------------------------------------------------------ RESCALE
def _zp_const(ctx: LoweringContext, dtype: str, value: int, unsigned: bool) -> Value:
    """A [1] zero-point operand; an unsigned zero point is stored as its bits in the signed type."""
    signed = TensorType((), dtype).numpy_dtype
    if unsigned:  # e.g. 128 -> -128: the same 8 bits
        value = int(np.array([value], dtype=np.int64).astype(signed.str.replace("i", "u")).view(signed)[0])
    return ctx.const(np.array([value]), dtype)


def rescale(ctx: LoweringContext, x: Value, scale: float | Sequence[float] | np.ndarray, out_dtype: str, *,
            in_zp: int = 0, out_zp: int = 0, input_unsigned: bool = False, output_unsigned: bool = False,
            fixed: tuple[int, int] | None = None, rounding: str | None = None) -> Value:
    """RESCALE x: ((x - in_zp) * scale rounded) + out_zp, saturated to `out_dtype`. A scale with
    several entries is per channel (the last axis). i48 inputs take 16-bit multipliers (TOSA).
    `fixed` = (multiplier, shift) gives RESCALE's integers directly (per tensor, 32-bit), for a
    kernel whose multiplier is not the rounded `scale` (TFLite's mean); `scale` is then ignored.
    `rounding` overrides the semantics' rounding mode (rounding_mode) of a 32-bit multiplier."""
    t = ctx.type_of(x)
    scales = np.atleast_1d(np.asarray(scale, dtype=np.float64))
    if np.all(scales == scales[0]):
        scales = scales[:1]  # one scale for every channel: per tensor
    per_channel = scales.size > 1
    if per_channel and scales.size != t.shape[-1]:
        raise ValueError(f"{scales.size} scales for {t.shape[-1]} channels")
    scale32 = t.dtype != "i48"
    if fixed is None:
        wide_multipliers, wide_shifts = multipliers_shifts(scales, scale32)
        multipliers = wide_multipliers.astype(np.int32 if scale32 else np.int16)
        shifts = wide_shifts.astype(np.int8)
    else:
        multipliers = np.array([fixed[0]], dtype=np.int32 if scale32 else np.int16)
        shifts = np.array([fixed[1]], dtype=np.int8)
    # DOUBLE_ROUND needs a 32-bit multiplier, and differs from SINGLE_ROUND only for shifts above 31
    mode = (rounding or rounding_mode(ctx)) if scale32 and shifts.max() > 31 else "SINGLE_ROUND"
    return ctx.tosa.rescale(x, ctx.const(multipliers, "i32" if scale32 else "i16"), ctx.const(shifts, "i8"),
                            _zp_const(ctx, t.dtype, in_zp, input_unsigned),
                            _zp_const(ctx, out_dtype, out_zp, output_unsigned),
                            scale32=scale32, rounding_mode=mode, per_channel=per_channel,
                            input_unsigned=input_unsigned, output_unsigned=output_unsigned,
                            types=[TensorType(t.shape, out_dtype)])


def rescale_saturated(ctx: LoweringContext, values: np.ndarray, scale: float, out_dtype: str, *, out_zp: int = 0,
                      rounding: str | None = None) -> np.ndarray:
    """What `rescale` (per tensor, 32-bit multiplier, input zero point 0) computes on these integers:
    TOSA's apply_scale_32 with the multiplier, shift and rounding mode `rescale` would choose, the zero
    point added, saturated. For lowerings that check a cheaper form on every possible input."""
    multiplier, shift = multiplier_shift(float(scale))
    mode = (rounding or rounding_mode(ctx)) if shift > 31 else "SINGLE_ROUND"
    lo, hi = INTEGER_RANGE[out_dtype]
    return np.clip(rescale_values(values, multiplier, shift, mode) + out_zp, lo, hi)


def widen(ctx: LoweringContext, x: Value, q: QInfo, factor: float | np.ndarray = 1.0) -> Value:
    """x (carried quantized, `q`) as i32 values (x - zero_point) * factor, rounded (per-axis tensors
    must share one zero point: Arm NN's are symmetric)."""
    if q.per_axis and len(set(q.zero_points)) > 1:
        raise ValueError("per-axis zero points are not supported")
    if q.dtype == "i32" and np.all(np.asarray(factor) == 1.0) and q.zero_points[0] == 0:
        return x
    return rescale(ctx, x, factor, "i32", in_zp=q.zero_points[0])


def narrow(ctx: LoweringContext, acc: Value, factor: float | np.ndarray, out: QInfo,
           max_abs: int | Callable[[], int] | None = None, rounding: str | None = None,
           halves_away: bool | None = None) -> Value:
    """An i32 (or i48) accumulator times `factor`, rounded, plus the output zero point, saturated to
    the output's carried type. Given the accumulator's bound `max_abs`, halves round away from zero
    as Arm NN's Quantize does wherever an exact half can occur (ties_possible): RESCALE of |acc|
    (half up is half away for non-negative values), the sign put back, then a RESCALE by 1 adding the
    zero point; elsewhere one RESCALE. Under LiteRT semantics one RESCALE unless `halves_away` asks
    for that rounding: TFLite's kernels round halves by their own rule (`rounding`, default the
    semantics' mode), not CpuRef's. `max_abs` may be a function computing the bound, called only
    when the rounding needs it (a convolution's bound reads every weight)."""
    factors = np.atleast_1d(np.asarray(factor, dtype=np.float64))
    if halves_away is None:
        halves_away = not computes_litert(ctx)
    if (not halves_away or max_abs is None or ctx.type_of(acc).dtype != "i32"
            or not ties_possible(factors, max_abs() if callable(max_abs) else max_abs)):
        return rescale(ctx, acc, factor, out.dtype, out_zp=out.zero_points[0], rounding=rounding)
    rank = ctx.type_of(acc).rank
    magnitude = rescale(ctx, ctx.tosa.abs(acc), factor, "i32")
    negative = ctx.tosa.greater(ctx.scalar(0, "i32", rank), acc)
    signed = ctx.tosa.select(negative, ctx.negate(magnitude), magnitude)
    return rescale(ctx, signed, 1.0, out.dtype, out_zp=out.zero_points[0])


def requantize_like_tflite(ctx: LoweringContext, acc: Value, multiplier: int, exponent: int, out: QInfo,
                           rounding: str | None = None) -> Value:
    """TFLite's MultiplyByQuantizedMultiplier(acc, multiplier, exponent) plus the output zero point,
    saturated to the output's carried type: one RESCALE with DOUBLE_ROUND (gemmlowp's rounding
    doubling high multiply, then a rounding right shift by -exponent) and shift 31 - exponent.
    `rounding` as rescale's (default: the semantics' mode; "DOUBLE_ROUND" for kernels whose integers
    do not depend on it)."""
    if multiplier == 0:
        return rescale(ctx, acc, 0.0, out.dtype, out_zp=out.zero_points[0])
    shift = 31 - exponent
    if not 2 <= shift <= 62:
        raise RescaleRangeError(f"TFLite multiplier exponent {exponent} is outside RESCALE's shifts")
    return rescale(ctx, acc, 0.0, out.dtype, out_zp=out.zero_points[0], fixed=(multiplier, shift), rounding=rounding)


def rescale_values(v: np.ndarray, multiplier: int, shift: int, rounding: str = "SINGLE_ROUND") -> np.ndarray:
    """What RESCALE computes from integers v - in_zp (TOSA 1.0 apply_scale_32, before the output zero
    point and saturation): (v * multiplier + round) >> shift, round = 2**(shift - 1) (halves up), and
    for DOUBLE_ROUND past a shift of 31 another 2**30 away from zero. Lowerings that pick a cheaper
    RESCALE form check it against the kernel they reproduce with this, on every input."""
    v = np.asarray(v, np.int64)
    offset: np.ndarray = np.full(v.shape, 1 << (shift - 1), np.int64)
    if rounding == "DOUBLE_ROUND" and shift > 31:
        offset = np.where(v >= 0, offset + (1 << 30), offset - (1 << 30))
    return (v * np.int64(multiplier) + offset) >> np.int64(shift)


def ties_possible(factor: float | Sequence[float] | np.ndarray, max_abs: int) -> bool:
    """Whether some integer |v| <= max_abs times `factor` (as RESCALE represents it; with several
    factors, any of them, judged in order: a factor RESCALE cannot take raises unless an earlier
    one already answers yes) is exactly an odd multiple of 1/2, where RESCALE's half-up rounding and
    Arm NN's half-away one differ for v < 0."""
    multipliers, shifts, problem = _multipliers_shifts(np.atleast_1d(np.asarray(factor, dtype=np.float64)), True)
    # v * multiplier / 2**shift is an odd multiple of 1/2 only for v an odd multiple of
    # 2**(shift - 1 - trailing zeros of the multiplier); an integer factor (or 0) never gives one
    lowest_bit = (multipliers & -multipliers).astype(np.float64)  # a power of two, exact in float64
    trailing = np.frexp(lowest_bit)[1].astype(np.int64) - 1
    room = shifts - 1 - trailing
    smallest_v = np.left_shift(np.int64(1), np.clip(room, 0, 62))
    limit = min(max(int(max_abs), 1), 1 << 62)  # smallest_v < 2**62: a larger bound changes nothing
    ties = (multipliers != 0) & (room >= 0) & (smallest_v <= limit)
    if problem is not None:
        if np.any(ties[:problem[0]]):
            return True
        raise RescaleRangeError(problem[1])
    return bool(np.any(ties))


def clamp_int(ctx: LoweringContext, x: Value, low: int, high: int) -> Value:
    """x limited to [low, high] (bounds clipped to its type): CLAMP for i8/i16, MAXIMUM/MINIMUM
    for i32 (TOSA 1.0 has no i32 CLAMP)."""
    dtype = ctx.type_of(x).dtype
    lo, hi = INTEGER_RANGE[dtype]
    low, high = max(low, lo), min(high, hi)
    if low <= lo and high >= hi:
        return x
    if dtype in ("i8", "i16"):
        return ctx.tosa.clamp(x, min_val=low, max_val=high)
    rank = ctx.type_of(x).rank
    if low > lo:
        x = ctx.tosa.maximum(x, ctx.scalar(low, dtype, rank))
    if high < hi:
        x = ctx.tosa.minimum(x, ctx.scalar(high, dtype, rank))
    return x


def saturate_to(ctx: LoweringContext, x: Value, out_dtype: str) -> Value:
    """An i32 tensor clamped to `out_dtype`'s range and converted (exact: no rounding happens)."""
    if ctx.type_of(x).dtype == out_dtype:
        return x
    lo, hi = INTEGER_RANGE[out_dtype]
    return ctx.cast(clamp_int(ctx, x, lo, hi), out_dtype)

