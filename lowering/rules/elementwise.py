"""Constants, elementwise ops that map one to one, and the simplest data movement; the quantized
elementwise arithmetic of several tensors (add, sub, maximum, minimum, mul, squared_difference,
comparisons, select).

Quantized: CpuRef adds, compares, ... the float32 decodings of its operands. Here each operand x (carried,
zero point zp, scale s) becomes an i32 `F = round((x - zp) * s / unit)` on one common `unit`
(one RESCALE each), the TOSA op works on the F's, and one RESCALE by unit / s_out (plus the output
zero point) encodes the result. `unit` is s_out * 2**-p with p as large as the operands' ranges
allow (fixed_point.rescale.fraction_bits), so the only rounding that matters is the last one:
- add / sub / maximum / minimum: on the F's (a common scale, as the TFLite-to-TOSA legalization
  does); maximum / minimum of operands quantized as the result on the stored integers;
  mul: (xa - zpa) * (xb - zpb) exactly, one RESCALE by sa * sb / s_out;
  squared_difference: sa**2 A*A - 2 sa sb A*B + sb**2 B*B from exact i32 products (CpuRef), or
  TFLite's int8 kernel under LiteRT semantics;
- comparisons: operands quantized alike compare their integers; otherwise the F's on a unit finer
  than both scales.
Under LiteRT semantics (lowering/semantics.py) add, sub and mul follow TFLite's integer kernels
instead: their multipliers (QuantizeMultiplier) and MultiplyByQuantizedMultiplier's two roundings
(RESCALE DOUBLE_ROUND); see `_tflite_add`. Quantized division: division.py; prelu: activations.py;
softmax, L2 normalization and batch normalization: normalization.py.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import Value

from ..context import LoweringContext
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import (fraction_bits, max_input_for, narrow, requantize_like_tflite, rescale,
                                   rescale_values, widen)
from ..fixed_point.tflite import multiply_by_quantized_multiplier, quantize_multiplier
from ..registry import rule
from .quantization import (float_fallback, float_when_an_end_is_not_quantized, q_in, q_out, requantize_value,
                           require_per_tensor, same_quantization)

# a typed builder's method, unbound (TosaBuilder.add): `build(ctx.tosa, *operands)` makes its TOSA op
Build = Callable[..., Value]


# nn op -> the typed builder's method of its TOSA op, operands in the same order (the builder equalizes
# ranks for broadcasting)
DIRECT_BINARY: dict[str, Build] = {
    "nn.add": TosaBuilder.add, "nn.sub": TosaBuilder.sub, "nn.maximum": TosaBuilder.maximum,
    "nn.minimum": TosaBuilder.minimum, "nn.bitwise_and": TosaBuilder.bitwise_and, "nn.bitwise_or": TosaBuilder.bitwise_or,
    "nn.bitwise_xor": TosaBuilder.bitwise_xor, "nn.logical_and": TosaBuilder.logical_and,
    "nn.logical_or": TosaBuilder.logical_or, "nn.logical_xor": TosaBuilder.logical_xor, "nn.equal": TosaBuilder.equal,
    "nn.greater": TosaBuilder.greater, "nn.greater_equal": TosaBuilder.greater_equal,
}
# comparisons TOSA has only one direction of: swap the operands
SWAPPED_BINARY: dict[str, Build] = {"nn.less": TosaBuilder.greater, "nn.less_equal": TosaBuilder.greater_equal}
DIRECT_UNARY: dict[str, Build] = {
    "nn.abs": TosaBuilder.abs, "nn.exp": TosaBuilder.exp, "nn.log": TosaBuilder.log, "nn.floor": TosaBuilder.floor,
    "nn.ceil": TosaBuilder.ceil, "nn.sin": TosaBuilder.sin, "nn.cos": TosaBuilder.cos, "nn.rsqrt": TosaBuilder.rsqrt,
    "nn.reciprocal": TosaBuilder.reciprocal, "nn.sigmoid": TosaBuilder.sigmoid, "nn.tanh": TosaBuilder.tanh,
    "nn.erf": TosaBuilder.erf, "nn.logical_not": TosaBuilder.logical_not, "nn.bitwise_not": TosaBuilder.bitwise_not,
    "nn.identity": TosaBuilder.identity,
}


# TOSA ops whose integer form is i32 only: narrower integers (and booleans, for comparisons) are
# widened to i32, and an integer result is cast back (TOSA's narrowing CAST wraps, like nn's integers)
I32_ONLY: frozenset[Build] = frozenset({TosaBuilder.add, TosaBuilder.sub, TosaBuilder.maximum, TosaBuilder.minimum,
                                        TosaBuilder.abs, TosaBuilder.equal, TosaBuilder.greater,
                                        TosaBuilder.greater_equal, TosaBuilder.mul})
NARROW_INTEGERS = frozenset({"i1", "i8", "i16"})


def _apply(ctx: LoweringContext, build: Build, operands: list[Value]) -> Value:
    """The TOSA op `build` makes (a TosaBuilder method) on `operands`, through i32 where TOSA needs it."""
    narrow = build in I32_ONLY and ctx.type_of(operands[0]).dtype in NARROW_INTEGERS
    if narrow:
        operands = [ctx.cast(x, "i32") for x in operands]
    result = ctx.mul(*operands) if build is TosaBuilder.mul else build(ctx.tosa, *operands)
    return ctx.cast(result, ctx.out_types[0].dtype) if narrow else result


@rule(*DIRECT_BINARY)
def direct_binary(ctx: LoweringContext) -> Value:
    return _apply(ctx, DIRECT_BINARY[ctx.op_name], [ctx.operand("x"), ctx.operand("y")])


@rule(*SWAPPED_BINARY)
def swapped_binary(ctx: LoweringContext) -> Value:
    x, y = ctx.operand("x"), ctx.operand("y")
    return _apply(ctx, SWAPPED_BINARY[ctx.op_name], [y, x])


@rule("nn.not_equal")
def not_equal(ctx: LoweringContext) -> Value:
    return ctx.tosa.logical_not(_apply(ctx, TosaBuilder.equal, [ctx.operand("x"), ctx.operand("y")]))


@rule(*DIRECT_UNARY)
def direct_unary(ctx: LoweringContext) -> Value:
    return _apply(ctx, DIRECT_UNARY[ctx.op_name], [ctx.operand("x")])


@rule("nn.mul")
def mul(ctx: LoweringContext) -> Value:
    return _apply(ctx, TosaBuilder.mul, [ctx.operand("x"), ctx.operand("y")])


@rule("nn.neg")
def neg(ctx: LoweringContext) -> Value:
    return ctx.negate(ctx.operand("x"))


@rule("nn.constant")
def constant(ctx: LoweringContext) -> Value:
    t = ctx.out_types[0]
    value = ctx.attrs["value"]
    if value.dtype != t.numpy_dtype:  # narrowed at TOSA level (i64 -> i32, f64 -> f32)
        value = value.astype(t.numpy_dtype)
    return ctx.const(value, t.dtype)


@rule("nn.reshape")
def reshape(ctx: LoweringContext) -> Value:
    return ctx.reshape(ctx.operand("x"), ctx.attrs["shape"])


@rule("nn.transpose")
def transpose(ctx: LoweringContext) -> Value:
    return ctx.transpose(ctx.operand("x"), ctx.attrs["perm"])


# ------------------------------------------------------------------------------ common-unit operands
def common_unit_bits(qs: Sequence[QInfo], unit: float, headroom: int) -> int:
    """Fraction bits p for operands rescaled to `unit` * 2**-p: every |F| * 2**headroom < 2**30."""
    return min(fraction_bits(q.span, q.scale / unit, headroom=headroom, input_span=q.span) for q in qs)


def on_unit(ctx: LoweringContext, xs: Sequence[Value], qs: Sequence[QInfo], unit: float) -> list[Value]:
    """Each x as i32 (x - zp) * s / unit, rounded."""
    return [widen(ctx, x, q, q.scale / unit) for x, q in zip(xs, qs)]


def operands_all_quantized(ctx: LoweringContext) -> str | None:
    """The operands are all quantized (not quantized and float ones together)."""
    if any(q_in(ctx, k) is None for k in range(len(ctx.operands))):
        return f"{ctx.op_name} of quantized and float operands together"
    return None


def quantized_operands(ctx: LoweringContext) -> tuple[list[Value], list[QInfo]]:
    ctx.check(operands_all_quantized)
    qs = [q_in(ctx, k) for k in range(len(ctx.operands))]
    require_per_tensor(ctx, *qs)
    return list(ctx.operands), [q for q in qs if q is not None]


def product_fits_i32(ctx: LoweringContext, qs: Sequence[QInfo]) -> str | None:
    """The product of two quantized operands' widest stored values fits i32."""
    if qs[0].span * qs[1].span >= 1 << 31:
        return f"quantized product does not fit i32 ({qs[0].span} * {qs[1].span})"
    return None


ADDITIVE: dict[str, Build] = {"nn.add": TosaBuilder.add, "nn.sub": TosaBuilder.sub, "nn.maximum": TosaBuilder.maximum,
                              "nn.minimum": TosaBuilder.minimum}
MUL_CHECKS = (operands_all_quantized, product_fits_i32)


# ------------------------------------------------------------------------------ the quantized forms, per op most
# specific first: a result not quantized (benefit 20), LiteRT's kernel (10), the exact integer form (0)
@rule(*ADDITIVE, "nn.squared_difference", quantized=True, checks=(operands_all_quantized,), benefit=20,
      when=lambda ctx: q_out(ctx) is None)
@rule("nn.mul", quantized=True, checks=MUL_CHECKS, benefit=20, when=lambda ctx: q_out(ctx) is None)
def result_in_float(ctx: LoweringContext) -> Value | list[Value]:
    """Quantized operands, a result not quantized: CpuRef's float computation."""
    quantized_operands(ctx)
    return float_fallback(ctx)


def _operands_and_result(ctx: LoweringContext) -> tuple[list[Value], list[QInfo], QInfo]:
    """The operands, their quantizations and the result's (all quantized per tensor: the forms after
    `result_in_float`)."""
    xs, qs = quantized_operands(ctx)
    yq = q_out(ctx)
    assert yq is not None, "result_in_float takes an unquantized result"
    require_per_tensor(ctx, yq)
    return xs, qs, yq


@rule("nn.add", "nn.sub", quantized=True, checks=(operands_all_quantized,), benefit=10, semantics="litert")
def litert_add(ctx: LoweringContext) -> Value:
    """TFLite's integer ADD / SUB (`_tflite_add`)."""
    return _tflite_add(ctx, *_operands_and_result(ctx))


@rule(*ADDITIVE, quantized=True, checks=(operands_all_quantized,))
def additive(ctx: LoweringContext) -> Value | list[Value]:
    """On a common unit, one RESCALE to the result (halves away from zero where they occur, as CpuRef)."""
    xs, qs, yq = _operands_and_result(ctx)
    if ctx.op_name in ("nn.maximum", "nn.minimum") and all(same_quantization(q, yq) for q in qs):
        # one encoding for all three, and a monotonic one: the extremum of the stored integers (as TFLite's
        # kernel compares them), in i32 as TOSA has it: RESCALEs by 1, which Vela fuses into the op (the
        # common-unit RESCALEs below it does not: q8_minimum 1,728 cycles on Ethos-U55 against 192)
        a, b = (rescale(ctx, x, 1.0, "i32", rounding="SINGLE_ROUND") for x in xs)
        return rescale(ctx, ADDITIVE[ctx.op_name](ctx.tosa, a, b), 1.0, yq.dtype, rounding="SINGLE_ROUND")
    p = common_unit_bits(qs, yq.scale, headroom=2)
    unit = yq.scale * 2.0 ** -p
    a, b = on_unit(ctx, xs, qs, unit)
    # exact halves of real values exist when every operand lands on the unit exactly (equal or
    # power-of-two related scales): round those away from zero as Arm NN does
    steps = [q.scale / unit for q in qs]
    exact = all(abs(r - round(r)) < 1e-9 for r in steps)
    bound = sum(int(q.span * r) + 1 for q, r in zip(qs, steps)) if exact else None
    return narrow(ctx, ADDITIVE[ctx.op_name](ctx.tosa, a, b), 2.0 ** -p, yq, max_abs=bound)


def _tflite_add(ctx: LoweringContext, xs: Sequence[Value], qs: Sequence[QInfo], yq: QInfo) -> Value:
    """TFLite's integer ADD/SUB (general scales): each x - zp shifted left by 20 bits (8-bit data) or
    15 (16-bit), times its multiplier s / (2 * max s) with MultiplyByQuantizedMultiplier, the two
    added (subtracted), and the result times 2 * max s / (2**shift * s_out), each a RESCALE with
    DOUBLE_ROUND and TFLite's multipliers (computed in double from the float32 scales). For 8-bit
    data each term is one RESCALE when that gives TFLite's outputs for every pair of inputs
    (`_single_rescale_terms`): the form NPU compilers fuse into the ADD."""
    left_shift = 20 if all(q.dtype == "i8" for q in (*qs, yq)) else 15
    twice_max = 2.0 * max(q.scale for q in qs)
    multipliers = [quantize_multiplier(q.scale / twice_max) for q in qs]
    out_multiplier = quantize_multiplier(twice_max / ((1 << left_shift) * yq.scale))
    if left_shift == 20 and _single_rescale_terms(ctx.op_name, qs, yq, multipliers, out_multiplier):
        # (x - zp) * 2**20 * m / 2**(31 - e) in one rounding: shift 11 - e (e <= 0 here)
        terms = [rescale(ctx, x, 0.0, "i32", in_zp=q.zero_point, fixed=(m, 11 - e))
                 for x, q, (m, e) in zip(xs, qs, multipliers)]
    else:
        terms = [requantize_like_tflite(ctx, _shifted(ctx, x, q, left_shift), m, e, I32)
                 for x, q, (m, e) in zip(xs, qs, multipliers)]
    first, second = terms
    total = ADDITIVE[ctx.op_name](ctx.tosa, first, second)
    return requantize_like_tflite(ctx, total, *out_multiplier, yq)


def _shifted(ctx: LoweringContext, x: Value, q: QInfo, left_shift: int) -> Value:
    """(x - zp) * 2**left_shift as i32."""
    factor = float(1 << left_shift)
    if q.span <= max_input_for(factor):  # the shift is exact in one RESCALE
        return widen(ctx, x, q, factor)
    rank = ctx.type_of(x).rank
    return ctx.mul(widen(ctx, x, q), ctx.scalar(1 << left_shift, "i32", rank))


def _single_rescale_terms(op: str, qs: Sequence[QInfo], yq: QInfo, multipliers: Sequence[tuple[int, int]],
                          out_multiplier: tuple[int, int]) -> bool:
    """Whether rounding each 8-bit term once, (x - zp) * m / 2**(11 - e), instead of TFLite's twice
    (the rounding doubling high multiply of (x - zp) * 2**20, then the rounding shift by -e) gives
    TFLite's output for all 256 x 256 input pairs. The terms differ by one now and then; the output
    multiplier (about 2**-20) almost always absorbs that, which this checks rather than assumes."""
    if any(e > 0 or m <= 0 for m, e in multipliers):
        return False
    exact, single = [], []
    for q, (m, e) in zip(qs, multipliers):
        v = np.arange(q.qmin, q.qmax + 1, dtype=np.int64) - q.zero_point
        exact.append(multiply_by_quantized_multiplier(v << 20, m, e))
        single.append(rescale_values(v, m, 11 - e))

    def outputs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        total = a[:, None] + b[None, :] if op == "nn.add" else a[:, None] - b[None, :]
        return np.clip(multiply_by_quantized_multiplier(total, *out_multiplier) + yq.zero_point, yq.qmin, yq.qmax)

    return bool(np.array_equal(outputs(*exact), outputs(*single)))


# An i32 result of a TFLite-style requantization (zero point 0).
I32 = QInfo("i32", (1.0,), (0,), None)


def _mul_terms(ctx: LoweringContext) -> tuple[Value, Value, list[QInfo], QInfo]:
    """(a - zpa), (b - zpb) in i32, the operands' and the result's quantizations."""
    xs, qs, yq = _operands_and_result(ctx)
    a, b = (widen(ctx, x, q) for x, q in zip(xs, qs))
    ctx.check(product_fits_i32, qs)
    return a, b, qs, yq


@rule("nn.mul", quantized=True, checks=MUL_CHECKS, benefit=10, semantics="litert")
def litert_mul(ctx: LoweringContext) -> Value:
    """TFLite's kernel: s_a * s_b / s_out computed in float32 before QuantizeMultiplier."""
    a, b, qs, yq = _mul_terms(ctx)
    ratio = float(np.float32(qs[0].scale) * np.float32(qs[1].scale) / np.float32(yq.scale))
    return requantize_like_tflite(ctx, ctx.mul(a, b), *quantize_multiplier(ratio), yq)


@rule("nn.mul", quantized=True, checks=MUL_CHECKS)
def quantized_mul(ctx: LoweringContext) -> Value:
    """The exact product, one RESCALE by sa * sb / s_out (halves away from zero as CpuRef)."""
    a, b, qs, yq = _mul_terms(ctx)
    return narrow(ctx, ctx.mul(a, b), qs[0].scale * qs[1].scale / yq.scale, yq, max_abs=qs[0].span * qs[1].span)


# Below this many fraction bits on the output step, squared_difference computes in f32 as CpuRef does.
SQUARE_FRACTION_BITS = 8


def _all_int8(ctx: LoweringContext) -> bool:
    """Operands and result int8 (TFLite has a squared_difference kernel for int8 only)."""
    qs = [q_in(ctx, k) for k in range(len(ctx.operands))] + [q_out(ctx)]
    return all(q is not None and q.dtype == "i8" and not q.offset for q in qs)


@rule("nn.squared_difference", quantized=True, checks=(operands_all_quantized,), benefit=10, semantics="litert",
      when=_all_int8)
def litert_squared_difference(ctx: LoweringContext) -> Value:
    """TFLite's int8 kernel (`_squared_difference_tflite`); its uint8 and int16 data take the exact form."""
    return _squared_difference_tflite(ctx, *_operands_and_result(ctx))


@rule("nn.squared_difference", quantized=True, checks=(operands_all_quantized,))
def squared_difference(ctx: LoweringContext) -> Value | list[Value]:
    """CpuRef's float32 (sa*A - sb*B)**2 / sy rounded (A, B: the inputs minus their zero points),
    from exact i32 terms: sa**2/sy * A*A - 2*sa*sb/sy * A*B + sb**2/sy * B*B, each RESCALEd to
    p fraction bits of an output step before they are added (an error below 1.5 * 2**-p of a step).
    Putting A and B on a common unit first and squaring the difference rounds the operands, an
    error the square multiplies by |A - B|: 3 to 5 LSB on int16 data. CpuRef's own float32
    arithmetic errs by up to ~2e-3 of a step on int16 data, so it rounds some squares within that
    of a half the other way."""
    (a, b), (aq, bq), yq = _operands_and_result(ctx)
    sa, sb, sy = aq.scale, bq.scale, yq.scale
    terms = [(aq.span * aq.span, sa * sa / sy), (aq.span * bq.span, 2 * sa * sb / sy), (bq.span * bq.span, sb * sb / sy)]
    total = sum(m * r for m, r in terms)
    if max(m for m, _ in terms) >= 1 << 31:
        return float_fallback(ctx)
    # every partial sum is at most `total` (times 2**p); each product within RESCALE's input limit
    p = min(fraction_bits(total, headroom=0), *(fraction_bits(m, r, headroom=0, input_span=m) for m, r in terms))
    if p < SQUARE_FRACTION_BITS:  # the terms cancel on too coarse a grid: CpuRef's own f32 arithmetic
        return float_fallback(ctx)
    wa, wb = widen(ctx, a, aq), widen(ctx, b, bq)
    aa, ab, bb = (rescale(ctx, ctx.mul(u, v), r * 2.0 ** p, "i32") for (u, v), (_, r) in
                  zip(((wa, wa), (wa, wb), (wb, wb)), terms))
    acc = ctx.tosa.sub(ctx.tosa.add(aa, bb), ab)
    # acc >= 0 up to the terms' rounding: RESCALE's half-up rounding is Arm NN's half away from zero
    return narrow(ctx, acc, 2.0 ** -p, yq)


TFLITE_LEFT_SHIFT = 7  # TFLite's squared_difference scales int8 operands up by 2**7 before rescaling them


def _squared_difference_tflite(ctx: LoweringContext, xs: Sequence[Value], qs: Sequence[QInfo], yq: QInfo) -> Value:
    """TFLite's int8 SQUARED_DIFFERENCE: each operand (x - zp) * 2**7, rescaled (DOUBLE_ROUND, as its
    MultiplyByQuantizedMultiplierSmallerThanOneExp rounds) by s / (2 * max(sa, sb)); the i32
    difference squared; one RESCALE by (2 * max(sa, sb))**2 / (2**14 * sy) plus the output zero point,
    saturated to int8."""
    twice_max = 2.0 * max(q.scale for q in qs)
    scaled = [rescale(ctx, widen(ctx, x, q, float(1 << TFLITE_LEFT_SHIFT)), q.scale / twice_max, "i32")
              for x, q in zip(xs, qs)]
    a, b = scaled
    d = ctx.tosa.sub(a, b)
    factor = twice_max * twice_max / ((1 << 2 * TFLITE_LEFT_SHIFT) * yq.scale)
    return rescale(ctx, ctx.mul(d, d), factor, yq.dtype, out_zp=yq.zero_point)


# The quotient's truncation costs up to 1.5 * 2**-p of an output step: below this many bits, float.


# nn op -> the TOSA comparison's builder method, and whether it takes the operands swapped
COMPARISONS: dict[str, tuple[Build, bool]] = {
    "nn.equal": (TosaBuilder.equal, False), "nn.not_equal": (TosaBuilder.equal, False),
    "nn.greater": (TosaBuilder.greater, False), "nn.greater_equal": (TosaBuilder.greater_equal, False),
    "nn.less": (TosaBuilder.greater, True), "nn.less_equal": (TosaBuilder.greater_equal, True)}


@rule(*COMPARISONS, quantized=True, checks=(operands_all_quantized,))
def compare(ctx: LoweringContext) -> Value:
    xs, qs = quantized_operands(ctx)
    if same_quantization(qs[0], qs[1]):
        a, b = (ctx.cast(x, "i32") for x in xs)
    else:
        unit = min(q.scale for q in qs)
        p = common_unit_bits(qs, unit, headroom=1)
        a, b = on_unit(ctx, xs, qs, unit * 2.0 ** -p)
    build, swapped = COMPARISONS[ctx.op_name]
    y = build(ctx.tosa, b, a) if swapped else build(ctx.tosa, a, b)
    return ctx.tosa.logical_not(y) if ctx.op_name == "nn.not_equal" else y


float_when_an_end_is_not_quantized("nn.select", operands=(1, 2))


@rule("nn.select", quantized=True)
def select(ctx: LoweringContext) -> Value:
    """Both choices re-encoded in the result's quantization, then SELECT."""
    cond, x, y = ctx.operand("cond"), ctx.operand("x"), ctx.operand("y")
    yq = q_out(ctx)
    xq, zq = q_in(ctx, "x"), q_in(ctx, "y")
    assert yq is not None and xq is not None and zq is not None, "in_float takes the ends not quantized"
    require_per_tensor(ctx, xq, zq, yq)
    x, y = requantize_value(ctx, x, xq, yq), requantize_value(ctx, y, zq, yq)
    return ctx.tosa.select(cond, x, y)
