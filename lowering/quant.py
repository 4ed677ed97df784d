"""Quantized arithmetic on TOSA 1.0: multipliers, RESCALE, fixed-point intermediates and TABLEs.

The quantized lowering rules (lowering/rules/quantized*.py) reproduce TFLite's integer kernels or,
with semantics "cpuref", Arm NN CpuRef, which decodes quantized tensors to float32, computes in
float32 and encodes the result:
    real = scale * (q - zero_point)           (float32 products)
    q    = clamp(round_half_away(real / scale) + zero_point)
TOSA computes on integers instead. This module holds what every quantized rule shares:

- how a quantized nn tensor is carried at TOSA level (`QInfo`, `qinfo`): TOSA 1.0 has no unsigned
  tensors, so an unsigned quantized tensor (QAsymmU8: ui8) travels as i8 holding `q - 128`, zero
  point `zp - 128` (the same real values). Only graph inputs and outputs keep the raw uint8 bits,
  converted next to the boundary by RESCALE input_unsigned / output_unsigned (lowering/lower.py).
- `multiplier_shift`: a real scale as RESCALE's (multiplier, shift), the rule FORMATS.md gives;
- `rescale`: one RESCALE op (per tensor or per channel, zero points, unsigned flags);
- `widen` / `narrow`: quantized tensor -> i32 holding `(q - zp) * factor`, and an i32 accumulator
  -> quantized result. Rules compute between them on i32 "fixed-point" values: an i32 `v` stands
  for the real value `v * unit`, with `unit` chosen (`fraction_bits`) so that rounding errors stay
  far below one output step while no intermediate overflows;
- TABLE contents: `table_i8` (256 entries: exact, every input is tabulated through the source
  semantics) and `table_i16` (513 entries TOSA interpolates, one table or a high/low pair), which
  reports how far it is from the source on all 65536 inputs (the rules use it only when exact).

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
from dataclasses import dataclass

import numpy as np

from nn2tosa.diagnostics import Unsupported
from nn2tosa.ir import Graph, Quant, TensorType, Type, Value
from nn2tosa.ir.graph import Output

from .context import LoweringContext, LoweringUnsupported


def rounding_mode(ctx: LoweringContext) -> str:
    """RESCALE's rounding for 32-bit multipliers: TFLite's (DOUBLE_ROUND) unless CpuRef's integers
    are asked for (lowering/semantics.py)."""
    return "SINGLE_ROUND" if ctx.semantics == "cpuref" else "DOUBLE_ROUND"


# integer element type -> (min, max) of its signed values at TOSA level
_RANGE = {"i8": (-128, 127), "i16": (-32768, 32767), "i32": (-(1 << 31), (1 << 31) - 1), "i48": (-(1 << 47), (1 << 47) - 1)}
# nn element type of a quantized tensor -> (TOSA element type, offset subtracted from stored values)
_CARRIER = {"i8": ("i8", 0), "ui8": ("i8", 128), "i16": ("i16", 0), "ui16": ("i16", 32768), "i32": ("i32", 0)}


# ------------------------------------------------------------------------------ carried quantization
@dataclass(frozen=True)
class QInfo:
    """A quantized nn tensor as TOSA carries it: `dtype` (i8/i16/i32) values v standing for the real
    values scale * (v - zero_point). `offset` is what was subtracted from the stored (unsigned)
    integers to make them signed: 128 for ui8, 0 for signed types."""

    dtype: str
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None
    offset: int = 0

    @property
    def scale(self) -> float:
        if self.axis is not None and len(set(self.scales)) > 1:
            raise ValueError("a per-axis quantization has no single scale")
        return self.scales[0]

    @property
    def zero_point(self) -> int:
        if self.axis is not None and len(set(self.zero_points)) > 1:
            raise ValueError("a per-axis quantization has no single zero point")
        return self.zero_points[0]

    @property
    def per_axis(self) -> bool:
        return self.axis is not None and (len(set(self.scales)) > 1 or len(set(self.zero_points)) > 1)

    @property
    def qmin(self) -> int:
        return _RANGE[self.dtype][0]

    @property
    def qmax(self) -> int:
        return _RANGE[self.dtype][1]

    @property
    def span(self) -> int:
        """The largest |v - zero_point| a value of this tensor can have."""
        zps = np.asarray(self.zero_points)
        return int(max(np.max(self.qmax - zps), np.max(zps - self.qmin)))


def qinfo(t: TensorType) -> QInfo:
    """The TOSA-level carrier of quantized nn type `t` (see the module doc)."""
    if t.quant is None:
        raise ValueError(f"{t} is not quantized")
    if t.dtype not in _CARRIER:
        raise ValueError(f"quantized {t.dtype} tensors are not supported")
    dtype, offset = _CARRIER[t.dtype]
    q = t.quant
    zero_points = tuple(map(int, q.zero_points)) if not offset else tuple(int(z) - offset for z in q.zero_points)
    return QInfo(dtype, tuple(map(float, q.scales)), zero_points, q.axis, offset)


def carried_type(t: TensorType) -> TensorType:
    """The nn type `t` as TOSA carries it: an unsigned quantized type becomes the signed type of
    the same width with its zero points moved by the offset (same real values)."""
    if t.quant is None or not unsigned_offset(t):
        return t
    q = qinfo(t)
    return TensorType(t.shape, q.dtype, Quant(q.scales, q.zero_points, q.axis, t.quant.expressed))


def carried_values(stored: np.ndarray, t: TensorType) -> np.ndarray:
    """Stored integers of quantized type `t` as TOSA carries them (ui8 data minus 128, as int8)."""
    q = qinfo(t)
    carrier = TensorType((), q.dtype).numpy_dtype
    stored = np.asarray(stored)
    if not q.offset and stored.dtype == carrier:  # signed data is carried as stored: no copy of the weights
        return stored
    return (stored.astype(np.int64) - q.offset).astype(carrier)


def unsigned_offset(t: TensorType) -> int:
    """128 (ui8) or 32768 (ui16) for an unsigned quantized type, else 0."""
    return _CARRIER.get(t.dtype, ("", 0))[1] if t.quant is not None else 0


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
    attrs = {"scale32": scale32, "rounding_mode": mode, "per_channel": per_channel,
             "input_unsigned": input_unsigned, "output_unsigned": output_unsigned}
    operands = [x, ctx.const(multipliers, "i32" if scale32 else "i16"), ctx.const(shifts, "i8"),
                _zp_const(ctx, t.dtype, in_zp, input_unsigned), _zp_const(ctx, out_dtype, out_zp, output_unsigned)]
    return ctx.op("tosa.rescale", operands, attrs, types=[TensorType(t.shape, out_dtype)])


def rescale_saturated(ctx: LoweringContext, values: np.ndarray, scale: float, out_dtype: str, *, out_zp: int = 0,
                      rounding: str | None = None) -> np.ndarray:
    """What `rescale` (per tensor, 32-bit multiplier, input zero point 0) computes on these integers:
    TOSA's apply_scale_32 with the multiplier, shift and rounding mode `rescale` would choose, the zero
    point added, saturated. For lowerings that check a cheaper form on every possible input."""
    multiplier, shift = multiplier_shift(float(scale))
    mode = (rounding or rounding_mode(ctx)) if shift > 31 else "SINGLE_ROUND"
    lo, hi = _RANGE[out_dtype]
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
        halves_away = ctx.semantics == "cpuref"
    if (not halves_away or max_abs is None or ctx.type_of(acc).dtype != "i32"
            or not ties_possible(factors, max_abs() if callable(max_abs) else max_abs)):
        return rescale(ctx, acc, factor, out.dtype, out_zp=out.zero_points[0], rounding=rounding)
    rank = ctx.type_of(acc).rank
    magnitude = rescale(ctx, ctx.op("tosa.abs", [acc]), factor, "i32")
    negative = ctx.binary("tosa.greater", ctx.scalar(0, "i32", rank), acc)
    signed = ctx.op("tosa.select", [negative, ctx.negate(magnitude), magnitude])
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
    lo, hi = _RANGE[dtype]
    low, high = max(low, lo), min(high, hi)
    if low <= lo and high >= hi:
        return x
    if dtype in ("i8", "i16"):
        return ctx.op("tosa.clamp", [x], {"min_val": low, "max_val": high})
    rank = ctx.type_of(x).rank
    if low > lo:
        x = ctx.binary("tosa.maximum", x, ctx.scalar(low, dtype, rank))
    if high < hi:
        x = ctx.binary("tosa.minimum", x, ctx.scalar(high, dtype, rank))
    return x


def saturate_to(ctx: LoweringContext, x: Value, out_dtype: str) -> Value:
    """An i32 tensor clamped to `out_dtype`'s range and converted (exact: no rounding happens)."""
    if ctx.type_of(x).dtype == out_dtype:
        return x
    lo, hi = _RANGE[out_dtype]
    return ctx.cast(clamp_int(ctx, x, lo, hi), out_dtype)


# ------------------------------------------------------------------------------ the source's encoding
def round_half_away(x: np.ndarray | float | np.floating) -> np.ndarray:
    """Round to nearest, halves away from zero (C's round, std::round, TfLiteRound; float64 result)."""
    x = np.asarray(x, dtype=np.float64)
    return np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5))


def encode(real: np.ndarray, q: QInfo) -> np.ndarray:
    """Arm NN's Quantize of float32 values into `q`'s carried integers: round_half_away(real / scale)
    (the division in float32) + zero point, clamped. NaN (sqrt or log of a negative value) stores 0:
    CpuRef's clamp lets NaN through and its float-to-integer conversion gives 0 on x86-64."""
    real = np.asarray(real, dtype=np.float32)
    with np.errstate(all="ignore"):
        scaled = real / np.float32(q.scale)
        stored = round_half_away(np.nan_to_num(scaled, nan=0.0, posinf=1e30, neginf=-1e30)) + q.zero_point + q.offset
    lo, hi = q.qmin + q.offset, q.qmax + q.offset
    stored = np.where(np.isnan(scaled), 0, np.clip(stored, lo, hi))
    return (stored - q.offset).astype(np.int64)


def decode(v: np.ndarray, q: QInfo) -> np.ndarray:
    """Arm NN's Dequantize of carried integers: (q - zero_point) * scale in float32."""
    return ((np.asarray(v, dtype=np.int64) - q.zero_point).astype(np.float32) * np.float32(q.scale)).astype(np.float32)


# ------------------------------------------------------------------------------ TABLE
RealFunction = Callable[[np.ndarray], np.ndarray]


def table_i8(fn: RealFunction, x: QInfo, y: QInfo) -> np.ndarray:
    """The 256-entry TABLE computing y = encode(fn(decode(x))) for every i8 input (index v + 128)."""
    inputs = np.arange(-128, 128)
    with np.errstate(all="ignore"):
        real = np.asarray(fn(decode(inputs, x)), dtype=np.float32)
    return encode(real, y).astype(np.int8)


def _interpolate_i16(table: np.ndarray) -> np.ndarray:
    """TOSA TABLE on every i16 input: (table[i] << 7) + (table[i+1] - table[i]) * fraction, i32."""
    v = np.arange(65536, dtype=np.int64)
    index, fraction = v >> 7, v & 0x7F
    base = table[index].astype(np.int64)
    return (base << 7) + (table[index + 1].astype(np.int64) - base) * fraction


def _round_shift(values: np.ndarray, shift: int) -> np.ndarray:
    """RESCALE's SINGLE_ROUND by 2**-shift (round half up)."""
    return (values + (1 << (shift - 1))) >> shift


@dataclass(frozen=True)
class Table16:
    """TOSA TABLE(s) for an i16 input and how their i32 results become the output.

    One table: output = round(TABLE(x, entries[0]) * 2**-shift) + zero point. Two tables (a high and
    a low part of the function times 2**(shift - 7)): TOSA's interpolation is linear in the entries,
    so 256 * TABLE(x, high) + TABLE(x, low) interpolates the function with 8 more fraction bits
    than one i16 table can hold; output = round(that * 2**-shift) + zero point."""

    entries: tuple[np.ndarray, ...]  # one or two int16 [513] arrays (high part first)
    shift: int
    worst: int  # the largest |output - source result| over all 65536 inputs
    misses: int  # how many of the 65536 inputs differ from the source result

    def raw(self) -> np.ndarray:
        """The i32 value the tables give (before the output RESCALE) for every input."""
        values = [_interpolate_i16(e.astype(np.int64)) for e in self.entries]
        return values[0] if len(values) == 1 else values[0] * 256 + values[1]


def table_i16(fn: RealFunction, x: QInfo, y: QInfo, want: np.ndarray | None = None) -> Table16:
    """TABLE entries for an i16 input, computed from the source semantics, and how well they do.

    TOSA interpolates 513 entries linearly between every 128th input. One table holds the exact
    results at those inputs, rounded (times 2**k when the outputs leave i16 headroom); when it does
    not give the target integers for every one of the 65536 inputs - `want` (the results of
    LiteRT's kernel, lowering/litert_kernels.py), by default encode(fn(decode(v))), the integers
    Arm NN computes - a high/low pair of tables (8 more fraction bits) is tried. Returned: the one
    with fewer misses, with its worst error and miss count over all inputs. Given `want`, a table of
    the target integers at the knots (which TFLite's own int16 LUTs reproduce exactly) is tried too."""
    inputs = np.arange(-32768, 32768)
    given = want is not None
    with np.errstate(all="ignore"):
        if want is None:
            want = encode(np.asarray(fn(decode(inputs, x)), dtype=np.float32), y)
        want = np.asarray(want, np.int64) - y.zero_point  # [65536]
        knots = np.arange(-32768, 32768 + 1, 128)
        real_knots = np.asarray(fn(decode(knots, x)), dtype=np.float64)
    lo, hi = y.qmin - y.zero_point, y.qmax - y.zero_point
    exact = np.clip(np.where(np.isfinite(real_knots), real_knots / y.scale, 0.0), lo, hi)
    reach = max(float(np.max(np.abs(exact))), float(np.max(np.abs(np.diff(exact)))), 1.0)

    def judged(entries: tuple[np.ndarray, ...], shift: int) -> Table16:
        table = Table16(tuple(e.astype(np.int16) for e in entries), shift, 0, 0)
        error = np.abs(np.clip(_round_shift(table.raw(), shift), lo, hi) - want)
        return Table16(table.entries, shift, int(error.max()), int((error != 0).sum()))

    k = 0
    while k < 8 and reach * 2 ** (k + 1) <= 32767:
        k += 1
    best = judged((np.round(exact * 2 ** k).astype(np.int64),), 7 + k)
    if best.misses == 0:
        return best
    if given:  # a kernel interpolating its own 513-entry table (TFLite's int16 LUTs) outputs its entries at the knots
        own = judged((np.append(want[::128], _last_knot(want)),), 7)
        if own.misses == 0:
            return own
    bits = 8  # entries of the pair: high = scaled >> 8 (|high| <= 32767), low = scaled & 255
    while bits < 16 and reach * 2 ** (bits + 1) < 1 << 23:
        bits += 1
    scaled = np.round(exact * 2 ** bits).astype(np.int64)
    pair = judged((scaled >> 8, scaled & 0xFF), 7 + bits)
    return pair if (pair.misses, pair.worst) < (best.misses, best.worst) else best


def _last_knot(want: np.ndarray) -> int:
    """The end knot (input 32768, outside i16) that makes TOSA's interpolation of the last segment, rounded
    half up, give `want` on it: a slope s with floor((s * f + 64) / 128) == want[f] - want[0] for all f."""
    base, f = int(want[-128]), np.arange(1, 128)
    rise = np.asarray(want[-127:], np.int64) - base
    low = int(np.max(-((64 - 128 * rise) // f)))  # ceil((128 rise - 64) / f)
    high = int(np.min((128 * rise + 63) // f))
    slope = low if low <= high else int(round(float(rise[-1]) * 128 / 127))
    return int(np.clip(base + slope, -32768, 32767))


def source_results(fn: RealFunction, x: QInfo, y: QInfo) -> np.ndarray:
    """encode(fn(decode(v))) for every carried input v of x's type, in order (the exact table)."""
    lo, hi = x.qmin, x.qmax
    with np.errstate(all="ignore"):
        return encode(np.asarray(fn(decode(np.arange(lo, hi + 1), x)), np.float32), y)


# ------------------------------------------------------------------------------ the graph boundary
def unsigned_input_to_signed(graph: Graph, node: int, nn_type: Type) -> Value | None:
    """For a graph input of unsigned quantized type (raw uint8 bits in an i8 tensor): a RESCALE
    (input_unsigned) next to it making the carried signed values q - 128, which every use of the
    input reads instead. Returns that value, or None for other inputs."""
    if not isinstance(nn_type, TensorType) or not unsigned_offset(nn_type):
        return None
    raw = Value(node, 0)
    users = graph.users(raw)
    outputs = [o for o in graph.outputs if o.value == raw]
    ctx = LoweringContext(graph, node, [])
    offset = unsigned_offset(nn_type)
    signed = rescale(ctx, raw, 1.0, qinfo(nn_type).dtype, in_zp=offset, input_unsigned=True)
    for use in users:
        graph.set_operand(use.node, use.operand, signed)
    for o in outputs:
        o.value = signed
    return signed


def unsigned_output_from_signed(graph: Graph, out: Output, nn_type: Type) -> None:
    """A graph output of unsigned quantized type gets its raw bits back: RESCALE (output_unsigned)
    of the carried signed values adds the 128 (32768) the carrier took off."""
    if not isinstance(nn_type, TensorType) or not unsigned_offset(nn_type):
        return
    ctx = LoweringContext(graph, out.value.node, [])
    out.value = rescale(ctx, out.value, 1.0, qinfo(nn_type).dtype, out_zp=unsigned_offset(nn_type),
                        output_unsigned=True)


# ------------------------------------------------------------------------------ int4 weights (MPS)
# The source ops whose int4 weights legalization folds into float constants.
INT4_DEQUANTIZATIONS = {"mps.DequantizePerChannelGroup": "group-quantized int4 weights"}
KEEP_INT4_WHY = (
    "TOSA 1.0 keeps int4 weights only in CONV2D/CONV3D/DEPTHWISE_CONV2D/TRANSPOSE_CONV2D of int8 data with one "
    "scale per output channel (EXT-INT4); these multiply float activations with one scale per group of {group} "
    "reduction elements, which no TOSA 1.0 op takes, so keeping them would change the arithmetic (without "
    "--keep-int4 they become float weights)")


def int4_weights_kept_unsupported(graph: Graph) -> list[Unsupported]:
    """What `convert --keep-int4` cannot keep as int4 in TOSA 1.0, with the reason (empty: nothing)."""
    found = []
    for node in graph.nodes():
        op = graph.op(node)
        if op in INT4_DEQUANTIZATIONS:
            loc = graph.loc(node)
            group = graph.attrs(node).get("group_size", "?")
            found.append(Unsupported(INT4_DEQUANTIZATIONS[op], str(loc) if loc else f"%{node}",
                                     KEEP_INT4_WHY.format(group=group)))
    return found
