"""Quantized lowering, part 2: elementwise arithmetic of several tensors, comparisons, select,
softmax and batch normalization, in i32 fixed point (reductions: reductions.py).

CpuRef adds, compares, ... the float32 decodings of its operands. Here each operand x (carried,
zero point zp, scale s) becomes an i32 `F = round((x - zp) * s / unit)` on one common `unit`
(one RESCALE each), the TOSA op works on the F's, and one RESCALE by unit / s_out (plus the output
zero point) encodes the result. `unit` is s_out * 2**-p with p as large as the operands' ranges
allow (quant.fraction_bits), so the only rounding that matters is the last one:
- add / sub / maximum / minimum: on the F's (a common scale, as the TFLite-to-TOSA legalization
  does); maximum / minimum of operands quantized as the result on the stored integers;
  mul: (xa - zpa) * (xb - zpb) exactly, one RESCALE by sa * sb / s_out;
  squared_difference: sa**2 A*A - 2 sa sb A*B + sb**2 B*B from exact i32 products (CpuRef), or
  TFLite's int8 kernel under LiteRT semantics;
- comparisons: operands quantized alike compare their integers; otherwise the F's on a unit finer
  than both scales;
- softmax (i8 data): d = max - x is an integer in 0..255, exp(-beta * s * d) * 2**k comes from a
  256-entry GATHER table, and out = round(e / sum(e) / s_out) is one rounding integer division
  (CpuRef's; semantics "litert" lowers softmax, L2 normalization and division as TFLite's integer
  kernels compute them: quantized_litert.py);
- batch_norm with constant statistics: a per-channel affine map, RESCALE per channel + an i32 bias;
- prelu: both branches encoded, then SELECT, or under `--target ethos-u55|ethos-u65` the same choice
  through the sign bit (lowering/npu_target.py).

Under LiteRT semantics (lowering/semantics.py) add, sub and mul follow TFLite's integer kernels
instead: their multipliers (QuantizeMultiplier) and MultiplyByQuantizedMultiplier's two roundings
(RESCALE DOUBLE_ROUND); see `_tflite_add`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext, constant_value
from ..npu_target import choose
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import (fraction_bits, max_input_for, narrow, requantize_like_tflite, rescale,
                                   rescale_values, saturate_to, widen)
from ..fixed_point.tflite import multiply_by_quantized_multiplier, quantize_multiplier
from . import quantized_litert, rule
from .quantized import (float_fallback, q_in, q_out, require_per_tensor,
                        requantize_value, same_quantization)


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


def _operands(ctx: LoweringContext) -> tuple[list[Value], list[QInfo]]:
    ctx.check(operands_all_quantized)
    qs = [q_in(ctx, k) for k in range(len(ctx.operands))]
    require_per_tensor(ctx, *qs)
    return list(ctx.operands), [q for q in qs if q is not None]


def product_fits_i32(ctx: LoweringContext, qs: Sequence[QInfo]) -> str | None:
    """The product of two quantized operands' widest stored values fits i32."""
    if qs[0].span * qs[1].span >= 1 << 31:
        return f"quantized product does not fit i32 ({qs[0].span} * {qs[1].span})"
    return None


def statistics_finite(ctx: LoweringContext, a: np.ndarray, b: np.ndarray) -> str | None:
    """A quantized batch norm's folded statistics (scale and offset per channel) are finite."""
    if not (np.isfinite(a).all() and np.isfinite(b).all()):  # no fixed-point form (a damaged file's statistics)
        return "batch-norm statistics that are not finite (NaN or infinity once folded)"
    return None


ADDITIVE = {"nn.add": "tosa.add", "nn.sub": "tosa.sub", "nn.maximum": "tosa.maximum", "nn.minimum": "tosa.minimum"}


@rule(*ADDITIVE, quantized=True, checks=(operands_all_quantized,))
def additive(ctx: LoweringContext) -> Value | list[Value]:
    xs, qs = _operands(ctx)
    yq = q_out(ctx)
    if yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, yq)
    if ctx.semantics == "litert" and ctx.op_name in ("nn.add", "nn.sub"):
        return _tflite_add(ctx, xs, qs, yq)
    if ctx.op_name in ("nn.maximum", "nn.minimum") and all(same_quantization(q, yq) for q in qs):
        # one encoding for all three, and a monotonic one: the extremum of the stored integers (as TFLite's
        # kernel compares them), in i32 as TOSA has it: RESCALEs by 1, which Vela fuses into the op (the
        # common-unit RESCALEs below it does not: q8_minimum 1,728 cycles on Ethos-U55 against 192)
        a, b = (rescale(ctx, x, 1.0, "i32", rounding="SINGLE_ROUND") for x in xs)
        return rescale(ctx, ctx.binary(ADDITIVE[ctx.op_name], a, b), 1.0, yq.dtype, rounding="SINGLE_ROUND")
    p = common_unit_bits(qs, yq.scale, headroom=2)
    unit = yq.scale * 2.0 ** -p
    a, b = on_unit(ctx, xs, qs, unit)
    # exact halves of real values exist when every operand lands on the unit exactly (equal or
    # power-of-two related scales): round those away from zero as Arm NN does
    steps = [q.scale / unit for q in qs]
    exact = all(abs(r - round(r)) < 1e-9 for r in steps)
    bound = sum(int(q.span * r) + 1 for q, r in zip(qs, steps)) if exact else None
    return narrow(ctx, ctx.binary(ADDITIVE[ctx.op_name], a, b), 2.0 ** -p, yq, max_abs=bound)


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
    total = ctx.binary(ADDITIVE[ctx.op_name], first, second)
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


@rule("nn.mul", quantized=True, checks=(operands_all_quantized, product_fits_i32))
def mul(ctx: LoweringContext) -> Value | list[Value]:
    xs, qs = _operands(ctx)
    yq = q_out(ctx)
    if yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, yq)
    a, b = (widen(ctx, x, q) for x, q in zip(xs, qs))
    ctx.check(product_fits_i32, qs)
    if ctx.semantics == "litert":
        # TFLite computes s_a * s_b / s_out in float32 before QuantizeMultiplier
        ratio = float(np.float32(qs[0].scale) * np.float32(qs[1].scale) / np.float32(yq.scale))
        return requantize_like_tflite(ctx, ctx.mul(a, b), *quantize_multiplier(ratio), yq)
    return narrow(ctx, ctx.mul(a, b), qs[0].scale * qs[1].scale / yq.scale, yq, max_abs=qs[0].span * qs[1].span)


# Below this many fraction bits on the output step, squared_difference computes in f32 as CpuRef does.
SQUARE_FRACTION_BITS = 8


@rule("nn.squared_difference", quantized=True, checks=(operands_all_quantized,))
def squared_difference(ctx: LoweringContext) -> Value | list[Value]:
    xs, qs = _operands(ctx)
    yq = q_out(ctx)
    if yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, yq)
    if ctx.semantics == "litert" and all(q.dtype == "i8" and not q.offset for q in (*qs, yq)):
        return _squared_difference_tflite(ctx, xs, qs, yq)
    return _squared_difference_exact(ctx, xs, qs, yq)


def _squared_difference_exact(ctx: LoweringContext, xs: Sequence[Value], qs: Sequence[QInfo],
                              yq: QInfo) -> Value | list[Value]:
    """CpuRef's float32 (sa*A - sb*B)**2 / sy rounded (A, B: the inputs minus their zero points),
    from exact i32 terms: sa**2/sy * A*A - 2*sa*sb/sy * A*B + sb**2/sy * B*B, each RESCALEd to
    p fraction bits of an output step before they are added (an error below 1.5 * 2**-p of a step).
    Putting A and B on a common unit first and squaring the difference rounds the operands, an
    error the square multiplies by |A - B|: 3 to 5 LSB on int16 data. CpuRef's own float32
    arithmetic errs by up to ~2e-3 of a step on int16 data, so it rounds some squares within that
    of a half the other way."""
    (a, b), (aq, bq) = xs, qs
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
    acc = ctx.binary("tosa.sub", ctx.binary("tosa.add", aa, bb), ab)
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
    d = ctx.binary("tosa.sub", a, b)
    factor = twice_max * twice_max / ((1 << 2 * TFLITE_LEFT_SHIFT) * yq.scale)
    return rescale(ctx, ctx.mul(d, d), factor, yq.dtype, out_zp=yq.zero_point)


# The quotient's truncation costs up to 1.5 * 2**-p of an output step: below this many bits, float.
DIVISION_FRACTION_BITS = 10


@rule("nn.div", quantized=True, checks=(operands_all_quantized,))
def div(ctx: LoweringContext) -> Value | list[Value]:
    """round(A * K / B) for A = a - zpa, B = b - zpb, K = sa / (sb * sy): the numerator A * K * 2**p
    (one RESCALE), INTDIV by B (truncating: an error below 2**-p of an output step), one RESCALE by
    2**-p. Division by zero gives what CpuRef's float division encodes: the saturated extreme of the
    numerator's sign (0 / 0, a NaN CpuRef refuses to encode, gives the zero point). When the
    numerator leaves fewer than DIVISION_FRACTION_BITS for the quotient (int16 data), it computes in
    f32 as CpuRef does. That is CpuRef's division; semantics "litert" takes TFLite's integer kernel
    (quantized_litert.div) wherever TFLite accepts the operands."""
    (a, b), (aq, bq) = _operands(ctx)
    yq = q_out(ctx)
    if yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, yq)
    if ctx.semantics == "litert":  # TFLite's integer kernel
        y = quantized_litert.div(ctx, a, b, aq, bq, yq)
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
    by_zero = ctx.binary("tosa.equal", denominator, zero)
    safe = ctx.op("tosa.select", [by_zero, one, denominator])
    quotient = narrow(ctx, ctx.binary("tosa.intdiv", numerator, safe), 2.0 ** -p, yq)
    dtype = yq.dtype
    rank_y = ctx.type_of(quotient).rank

    def extreme(value: int) -> Value:
        return ctx.const(np.full((1,) * rank_y, value), dtype)

    positive = ctx.binary("tosa.greater", numerator, zero)
    negative = ctx.binary("tosa.greater", zero, numerator)
    infinite = ctx.op("tosa.select", [positive, extreme(yq.qmax),
                                      ctx.op("tosa.select", [negative, extreme(yq.qmin), extreme(yq.zero_point)])])
    return ctx.op("tosa.select", [by_zero, infinite, quotient])


COMPARISONS = {"nn.equal": ("tosa.equal", False), "nn.not_equal": ("tosa.equal", False),
               "nn.greater": ("tosa.greater", False), "nn.greater_equal": ("tosa.greater_equal", False),
               "nn.less": ("tosa.greater", True), "nn.less_equal": ("tosa.greater_equal", True)}


@rule(*COMPARISONS, quantized=True, checks=(operands_all_quantized,))
def compare(ctx: LoweringContext) -> Value:
    xs, qs = _operands(ctx)
    if same_quantization(qs[0], qs[1]):
        a, b = (ctx.cast(x, "i32") for x in xs)
    else:
        unit = min(q.scale for q in qs)
        p = common_unit_bits(qs, unit, headroom=1)
        a, b = on_unit(ctx, xs, qs, unit * 2.0 ** -p)
    op, swapped = COMPARISONS[ctx.op_name]
    y = ctx.binary(op, b, a) if swapped else ctx.binary(op, a, b)
    return ctx.op("tosa.logical_not", [y]) if ctx.op_name == "nn.not_equal" else y


@rule("nn.prelu", quantized=True, checks=(operands_all_quantized,))
def prelu(ctx: LoweringContext) -> Value:
    """x >= 0 ? x : alpha * x: both branches encoded in the output type, then SELECT (or, under
    `--target ethos-u55|ethos-u65`, the same choice through x - zp's sign bit)."""
    (x, alpha), (xq, aq) = _operands(ctx)
    yq = q_out(ctx)
    assert yq is not None, "a quantized prelu with an unquantized result is not lowered"
    require_per_tensor(ctx, yq)
    xv, av = widen(ctx, x, xq), widen(ctx, alpha, aq)
    negative = narrow(ctx, ctx.mul(xv, av), xq.scale * aq.scale / yq.scale, yq, max_abs=xq.span * aq.span)
    positive = narrow(ctx, xv, xq.scale / yq.scale, yq, max_abs=xq.span)
    rank = ctx.type_of(xv).rank
    if choose(ctx, "prelu_branch") == "sign_arithmetic":
        # the same choice in arithmetic (npu_target.py): sign = -1 where x - zp < 0, else 0, and
        # y = positive - sign * (negative - positive), on the encoded branches widened to i32 (exact)
        sign = ctx.binary("tosa.arithmetic_right_shift", xv, ctx.scalar(31, "i32", rank), {"round": False})
        p32, n32 = (rescale(ctx, v, 1.0, "i32", rounding="SINGLE_ROUND") for v in (positive, negative))
        y = ctx.binary("tosa.sub", p32, ctx.mul(sign, ctx.binary("tosa.sub", n32, p32)))
        return rescale(ctx, y, 1.0, yq.dtype, rounding="SINGLE_ROUND")
    keep = ctx.binary("tosa.greater_equal", xv, ctx.scalar(0, "i32", rank))
    return ctx.op("tosa.select", ctx.same_rank(keep, positive, negative))


@rule("nn.select", quantized=True)
def select(ctx: LoweringContext) -> Value | list[Value]:
    cond, x, y = ctx.operands
    yq = q_out(ctx)
    xq, zq = q_in(ctx, 1), q_in(ctx, 2)
    if yq is None or xq is None or zq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, xq, zq, yq)
    x, y = requantize_value(ctx, x, xq, yq), requantize_value(ctx, y, zq, yq)
    return ctx.op("tosa.select", ctx.same_rank(cond, x, y))


# ------------------------------------------------------------------------------ softmax
def _softmax_exp_bits(count: int, inverse_scale: float) -> int:
    """k for exp values e <= 2**k: 2 * e / s_out + sum(e) (at most count * 2**k) stays in i32."""
    return int(math.floor(30 - math.log2(2 * inverse_scale + count)))


@rule("nn.softmax", quantized=True)
def softmax(ctx: LoweringContext) -> Value | list[Value]:
    xq, yq = q_in(ctx), q_out(ctx)
    if xq is None or yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, xq, yq)
    x = ctx.operands[0]
    t = ctx.type_of(x)
    axis, beta = int(ctx.attrs["axis"]) % t.rank, float(ctx.attrs["beta"])
    if ctx.semantics == "litert":  # TFLite's integer kernel where TFLite accepts the quantization
        kernel = quantized_litert.softmax_int16 if xq.dtype == "i16" else quantized_litert.softmax_int8
        y = kernel(ctx, x, xq, yq, axis, beta)
        if y is not None:
            return y
    if xq.dtype != "i8" or yq.dtype != "i8":
        return float_fallback(ctx)
    count = t.shape[axis]
    k = _softmax_exp_bits(count, 1.0 / yq.scale)
    k = min(k, int(math.floor(math.log2(max_input_for(2.0 / yq.scale) + 1))) - 1)  # RESCALE's input limit
    if k < 16:
        return float_fallback(ctx)
    v = ctx.cast(x, "i32")
    distance = ctx.binary("tosa.sub", ctx.op("tosa.reduce_max", [v], {"axis": axis}), v)  # 0..255
    # exp(-beta * s * d) as CpuRef computes it in float32, scaled by 2**k
    d = np.arange(256, dtype=np.float32)
    real = np.exp(-(d * np.float32(xq.scale)) * np.float32(beta)).astype(np.float64)
    table = np.floor(real * 2.0 ** k + 0.5).astype(np.int32)
    n = t.num_elements
    e = ctx.op("tosa.gather", [ctx.const(table.reshape(1, 256, 1), "i32"), ctx.reshape(distance, (1, n))],
               types=[TensorType((1, n, 1), "i32")])
    e = ctx.reshape(e, t.shape)
    total = ctx.op("tosa.reduce_sum", [e], {"axis": axis})
    # round(e / total / s_out) = floor((2 e / s_out + total) / (2 total)), every term non-negative
    numerator = rescale(ctx, e, 2.0 / yq.scale, "i32")
    quotient = ctx.binary("tosa.intdiv", ctx.binary("tosa.add", numerator, total),
                          ctx.binary("tosa.add", total, total))
    if yq.zero_point:
        quotient = ctx.binary("tosa.add", quotient, ctx.scalar(yq.zero_point, "i32", t.rank))
    return saturate_to(ctx, quotient, yq.dtype)


@rule("nn.l2_normalize", quantized=True)
def l2_normalize(ctx: LoweringContext) -> Value | list[Value]:
    """TFLite's integer kernel under semantics "litert" (int8 / uint8 data); CpuRef's float32 otherwise."""
    xq, yq = q_in(ctx), q_out(ctx)
    if ctx.semantics == "litert" and xq is not None and yq is not None and not (xq.per_axis or yq.per_axis):
        rank = ctx.type_of(ctx.operands[0]).rank
        y = quantized_litert.l2_normalize(ctx, ctx.operands[0], xq, yq, [int(a) % rank for a in ctx.attrs["axes"]])
        if y is not None:
            return y
    return float_fallback(ctx)


# ------------------------------------------------------------------------------ batch normalization
@rule("nn.batch_norm", quantized=True, checks=(statistics_finite,))
def batch_norm(ctx: LoweringContext) -> Value | list[Value]:
    """y = a_c * x + b_c per channel (a_c = gamma / sqrt(var + eps), b_c = beta - mean * a_c, from
    constant statistics): RESCALE per channel of +-(x - zp) to 2**p output units, plus round(b_c /
    s_out * 2**p), then one RESCALE by 2**-p."""
    x = ctx.operands[0]
    xq, yq = q_in(ctx), q_out(ctx)
    rank = ctx.type_of(x).rank
    axis = int(ctx.attrs["axis"])
    if xq is None or yq is None:
        return float_fallback(ctx)
    stats = []
    for k in range(1, 5):
        array = constant_value(ctx, ctx.operands[k])
        if array is None:
            return float_fallback(ctx)
        q = q_in(ctx, k)
        stats.append(array.astype(np.float64) if q is None else
                     dequantize_constant(array, q))
    require_per_tensor(ctx, xq, yq)
    mean, var, gamma, beta = stats
    a = gamma / np.sqrt(var + float(ctx.attrs["epsilon"]))
    b = beta - mean * a
    ctx.check(statistics_finite, a, b)
    ratio = np.abs(a) * xq.scale / yq.scale
    offset = b / yq.scale
    channels = ctx.type_of(x).shape[axis]
    ratio, offset = np.broadcast_to(ratio, (channels,)), np.broadcast_to(offset, (channels,))
    peak = float(np.max(ratio * xq.span + np.abs(offset)))
    p = fraction_bits(max(peak, 1e-30), 1.0, headroom=1)
    p = min(p, min(fraction_bits(xq.span, float(r), headroom=1, input_span=xq.span) for r in ratio if r > 0)
            if np.any(ratio > 0) else p)
    bias = np.floor(offset * 2.0 ** p + 0.5).astype(np.int64)
    if np.any(np.abs(bias) >= 1 << 30):
        return float_fallback(ctx)
    # RESCALE works per channel of the last axis: move the normalized axis there and back
    to_last = [d for d in range(rank) if d != axis] + [axis]
    along_last = (1,) * (rank - 1) + (channels,)
    v = widen(ctx, ctx.transpose(x, to_last), xq)
    signs = np.where(np.broadcast_to(a, (channels,)) < 0, -1, 1).astype(np.int32)
    if np.any(signs < 0):  # RESCALE multipliers are non-negative: negative slopes negate first
        v = ctx.mul(v, ctx.const(signs.reshape(along_last), "i32"))
    scaled = rescale(ctx, v, ratio * 2.0 ** p, "i32")
    acc = ctx.binary("tosa.add", scaled, ctx.const(bias.astype(np.int32).reshape(along_last), "i32"))
    y = narrow(ctx, acc, 2.0 ** -p, yq)
    return ctx.transpose(y, [to_last.index(d) for d in range(rank)])


def dequantize_constant(array: np.ndarray, q: QInfo) -> np.ndarray:
    """Stored (carried) integers of a constant as CpuRef's float32 decoding, widened to float64."""
    return ((array.astype(np.int64) - np.asarray(q.zero_points)).astype(np.float32) *
            np.asarray(q.scales, np.float32)).astype(np.float64)


