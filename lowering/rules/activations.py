"""Activations and the functions of one tensor tabulated when quantized: the float clamp, relu,
leaky_relu and prelu (the other float functions: math.py), and the quantized forms of every op with
the "tabulated" trait (requantize, activations, exp, log, ...), registered with their conditions and
tried most specific first (the forms below).

Most are an exact lookup (quantization.lookup: TABLE or GATHER). i16 inputs use exact integer
arithmetic where the function is piecewise linear (requantize, relu/clamp, abs, neg, leaky_relu,
square: RESCALE, CLAMP, MUL, SELECT). An i8 -> i8 requantize or relu / clamp with requantization is
RESCALE + CLAMP instead of a TABLE where that reproduces the table on all 256 inputs
(`rescale_and_clamp`; abs as RESCALE, ABS, RESCALE): the forms Vela fuses into one NPU operator
(docs/vela.md). Under litert semantics the int16 piecewise-linear functions rescale by TFLite's
multipliers (`_litert_i16`), and its int16 logistic / tanh are computed step by step
(fixed_point.litert_ops.sigmoid_tanh_int16).

Float clamps and activations: clamp, relu (TOSA CLAMP, or i32 MAXIMUM/MINIMUM for wider or unsigned
integers), leaky_relu and prelu.
"""
from __future__ import annotations

from collections.abc import Callable
import math

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from ..fixed_point.carrier import QInfo, encode
from ..fixed_point.litert_kernels import sigmoid_fixed_point
from ..fixed_point.litert_ops import sigmoid_tanh_int16
from ..fixed_point.rescale import clamp_int, multiplier_shift, narrow, rescale, rescale_saturated, rescale_values, widen
from ..fixed_point.tables import source_results
from ..fixed_point.tflite import quantize_multiplier
from ..npu_target import choose
from ..registry import ops_with, rule
from .arith import (Arith, FLOAT_TYPES, INF, UNSIGNED_WIDTH, check_unquantized, clamp_not_boolean, float_arith,
                    floating_point_operands, from_i32, int_operands, integers_fit_i32, nn_in_dtype, operand_dtype)
from .elementwise import operands_all_quantized, quantized_operands
from .quantization import (float_fallback, kernel_results, lookup, q_in, q_out, requantize_value, require_per_tensor,
                           same_quantization, source_function)


# i16 piecewise-linear functions in exact integer arithmetic: (ctx, x, xq, yq) -> value
def _i16_abs_or_neg(negate: bool) -> Callable[[LoweringContext, Value, QInfo, QInfo], Value]:
    def lower(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo) -> Value:
        v = widen(ctx, x, xq)
        v = ctx.negate(v) if negate else ctx.tosa.abs(v)
        return narrow(ctx, v, xq.scale / yq.scale, yq, max_abs=xq.span)

    return lower


def _encoded_bound(value: float, yq: QInfo) -> int:
    """A real bound encoded in y's quantization (CpuRef clamps in float, then encodes: encoding is
    monotonic, so clamping the encoded value to the encoded bounds is the same)."""
    if not np.isfinite(value):
        return yq.qmin if value < 0 else yq.qmax
    return int(encode(np.array([value], np.float32), yq)[0])


def _clamp_encoded(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo) -> Value:
    lo, hi = (ctx.attrs["min"], ctx.attrs["max"]) if ctx.op_name == "nn.clamp" else (0.0, float("inf"))
    y = requantize_value(ctx, x, xq, yq)
    return clamp_int(ctx, y, _encoded_bound(min(lo, hi), yq), _encoded_bound(hi, yq))  # min > max: all max


def _i16_leaky_relu(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo) -> Value:
    alpha = float(ctx.attrs["alpha"])
    v = widen(ctx, x, xq)
    rank = ctx.type_of(v).rank
    positive = ctx.tosa.greater(v, ctx.scalar(0, "i32", rank))
    scaled_neg = ctx.negate(v) if alpha < 0 else v
    low = narrow(ctx, scaled_neg, abs(alpha) * xq.scale / yq.scale, yq, max_abs=xq.span)
    high = narrow(ctx, v, xq.scale / yq.scale, yq, max_abs=xq.span)
    return ctx.tosa.select(positive, high, low)


def _i16_square(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo) -> Value:
    v = widen(ctx, x, xq)
    return narrow(ctx, ctx.mul(v, v), xq.scale * xq.scale / yq.scale, yq, max_abs=xq.span * xq.span)


EXACT_I16 = {
    "nn.requantize": lambda ctx, x, xq, yq: requantize_value(ctx, x, xq, yq),
    "nn.identity": lambda ctx, x, xq, yq: requantize_value(ctx, x, xq, yq),
    "nn.abs": _i16_abs_or_neg(False),
    "nn.neg": _i16_abs_or_neg(True),
    "nn.clamp": _clamp_encoded,
    "nn.relu": _clamp_encoded,
    "nn.leaky_relu": _i16_leaky_relu,
    "nn.square": _i16_square,
}
def _litert_i16(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo) -> Value:
    """TFLite's int16 requantize, abs, relu / clamp and leaky_relu: x - zp times MultiplyByQuantizedMultiplier,
    which RESCALE with litert's DOUBLE_ROUND computes (negative halves round up, as TFLite's do: no
    CpuRef fix-up), by TFLite's multipliers (float32 ratios of the scales; a double one to requantize)."""
    op, f32 = ctx.op_name, np.float32
    if op in ("nn.requantize", "nn.identity"):
        if same_quantization(xq, yq):
            return x
        return rescale(ctx, x, xq.scale / yq.scale, yq.dtype, in_zp=xq.zero_point, out_zp=yq.zero_point)
    ratio = float(f32(xq.scale) / f32(yq.scale))
    v = widen(ctx, x, xq)
    if op == "nn.abs":
        return rescale(ctx, ctx.tosa.abs(v), ratio, yq.dtype, out_zp=yq.zero_point)
    if op in ("nn.clamp", "nn.relu"):
        lo, hi = (ctx.attrs["min"], ctx.attrs["max"]) if op == "nn.clamp" else (0.0, float("inf"))
        y = rescale(ctx, v, ratio, yq.dtype, out_zp=yq.zero_point)
        return clamp_int(ctx, y, _encoded_bound(min(lo, hi), yq), _encoded_bound(hi, yq))
    # leaky_relu: the alpha branch multiplies by |alpha ratio| and puts the sign back before the zero point
    alpha = float(f32(xq.scale) * f32(ctx.attrs["alpha"]) / f32(yq.scale))
    extremum = _leaky_relu_as_extremum(ctx, xq, yq, ratio, alpha)
    if extremum is not None:
        def branch(factor: float) -> Value:  # as below, in i32 (RESCALE has no int32 output zero point)
            if factor >= 0:
                return rescale(ctx, v, factor, "i32")
            return ctx.negate(rescale(ctx, v, -factor, "i32"))
        return rescale(ctx, extremum(branch(ratio), branch(alpha)), 1.0, yq.dtype, out_zp=yq.zero_point)
    if alpha < 0:
        low = rescale(ctx, ctx.negate(rescale(ctx, v, -alpha, "i32")), 1.0, yq.dtype, out_zp=yq.zero_point)
    else:
        low = rescale(ctx, v, alpha, yq.dtype, out_zp=yq.zero_point)
    high = rescale(ctx, v, ratio, yq.dtype, out_zp=yq.zero_point)
    positive = ctx.tosa.greater_equal(v, ctx.scalar(0, "i32", ctx.type_of(v).rank))
    return ctx.tosa.select(positive, high, low)


def _leaky_relu_as_extremum(ctx: LoweringContext, xq: QInfo, yq: QInfo, ratio: float,
                            alpha: float) -> Callable[..., Value] | None:
    """The builder of TOSA MAXIMUM or MINIMUM when that op of the two branches of TFLite's int16 leaky relu (x - zp
    rescaled by `ratio`, or by `alpha`) is the x >= zp choice between them for every input (checked
    here on all 65536, with RESCALE's own integers: usually MAXIMUM for alpha below 1, MINIMUM above),
    and the branches stay within what a RESCALE by 1 reads (|v| < 2**29); else None (SELECT, which
    Ethos-U55 and U65 lack)."""
    v = np.arange(xq.qmin, xq.qmax + 1, dtype=np.int64) - xq.zero_point

    def branch(factor: float, dtype: str, zp: int = 0) -> np.ndarray:
        if factor >= 0:
            return rescale_saturated(ctx, v, factor, dtype, out_zp=zp)
        return rescale_saturated(ctx, -rescale_saturated(ctx, v, -factor, "i32"), 1.0, dtype, out_zp=zp)

    if max(np.abs(branch(ratio, "i32")).max(), np.abs(branch(alpha, "i32")).max()) >= 1 << 29:
        return None
    high, low = branch(ratio, yq.dtype, yq.zero_point), branch(alpha, yq.dtype, yq.zero_point)
    chosen = np.where(v >= 0, high, low)
    for build, combine in ((ctx.tosa.maximum, np.maximum), (ctx.tosa.minimum, np.minimum)):
        if np.array_equal(chosen, combine(high, low)):
            return build
    return None


def exact_rescale(ctx: LoweringContext, u: np.ndarray, xq: QInfo, yq: QInfo
                  ) -> tuple[int, int, str, int | None, int | None] | None:
    """(multiplier, shift, rounding, low, high) of one RESCALE of the integers `u` (x - zp, or a
    function of it, for every i8 input in order) by the ratio of the scales, then a CLAMP to
    [low, high] (None: no CLAMP needed on that side), that gives the op's integers (TFLite's kernel,
    or CpuRef's encode of the float function) for all 256 inputs, trying the multipliers the kernels
    use (TFLite's QuantizeMultiplier of the float32 or the double ratio, with DOUBLE_ROUND; RESCALE's
    own with half-up rounding); None when none does."""
    kernel = kernel_results(ctx, xq, yq)
    want = kernel if kernel is not None else source_results(source_function(ctx), xq, yq)
    want = np.asarray(want, np.int64)
    low, high = int(want.min()), int(want.max())
    ratio = xq.scale / yq.scale
    candidates = []
    for real in (float(np.float32(xq.scale) / np.float32(yq.scale)), ratio):
        m, e = quantize_multiplier(real)
        candidates += [(m, 31 - e, "DOUBLE_ROUND"), (m, 31 - e, "SINGLE_ROUND")]
    candidates.append((*multiplier_shift(ratio), "SINGLE_ROUND"))
    for multiplier, shift, rounding in candidates:
        if multiplier <= 0 or not 2 <= shift <= 62:
            continue
        got = np.clip(rescale_values(u, multiplier, shift, rounding) + yq.zero_point, yq.qmin, yq.qmax)
        if np.array_equal(np.clip(got, low, high), want):
            # a CLAMP only where the RESCALE reaches past the results (relu's lower bound, relu6's upper)
            return multiplier, shift, rounding, low if got.min() < low else None, high if got.max() > high else None
    return None


def rescale_and_clamp(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo) -> Value | None:
    """The op's integers for i8 -> i8 as one RESCALE by the ratio of the scales plus a CLAMP to the
    results' range, where that is exact on all 256 inputs (`exact_rescale`); for abs of |x - zp| (RESCALE
    to i32, ABS first: TFLite's kernel). Else None (a TABLE then). The forms NPU compilers fuse into one
    operator (TFLite's relu6 with requantize into its producer; Vela's ABS)."""
    v = np.arange(xq.qmin, xq.qmax + 1, dtype=np.int64) - xq.zero_point
    of_abs = ctx.op_name == "nn.abs"
    found = exact_rescale(ctx, np.abs(v) if of_abs else v, xq, yq)
    if found is None:
        return None
    multiplier, shift, rounding, low, high = found
    in_zp = xq.zero_point
    if of_abs:
        x, in_zp = ctx.tosa.abs(rescale(ctx, x, 1.0, "i32", in_zp=in_zp, rounding="SINGLE_ROUND")), 0
    y = rescale(ctx, x, 0.0, yq.dtype, in_zp=in_zp, out_zp=yq.zero_point, fixed=(multiplier, shift), rounding=rounding)
    return clamp_int(ctx, y, yq.qmin if low is None else low, yq.qmax if high is None else high)


# ------------------------------------------------------------------------------ the forms, most specific first
TABULATED = ops_with("tabulated")


def _ends(ctx: LoweringContext) -> tuple[Value, QInfo, QInfo]:
    """The operand and the quantizations of a form's op (both ends quantized, per tensor)."""
    xq, yq = q_in(ctx), q_out(ctx)
    assert xq is not None and yq is not None, "the float form takes an end that is not quantized"
    require_per_tensor(ctx, xq, yq)
    return ctx.operand("x"), xq, yq


def _dtypes(ctx: LoweringContext) -> tuple[str | None, str | None]:
    xq, yq = q_in(ctx), q_out(ctx)
    return (xq.dtype if xq else None), (yq.dtype if yq else None)


@rule(*TABULATED, quantized=True, benefit=70, when=lambda ctx: q_in(ctx) is None or q_out(ctx) is None)
def unary_in_float(ctx: LoweringContext) -> Value | list[Value]:
    """An end not quantized: CpuRef's float computation."""
    return float_fallback(ctx)


def _clamp_in_one_quantization(ctx: LoweringContext) -> bool:
    xq, yq = q_in(ctx), q_out(ctx)
    return ctx.op_name in ("nn.clamp", "nn.relu") and xq is not None and yq is not None and same_quantization(xq, yq)


@rule("nn.clamp", "nn.relu", quantized=True, benefit=60, when=_clamp_in_one_quantization)
def clamp_encoded(ctx: LoweringContext) -> Value:
    """CLAMP to the encoded bounds (i8 too)."""
    return _clamp_encoded(ctx, *_ends(ctx))


@rule(*ops_with("rescale_clamp"), quantized=True, benefit=50, when=lambda ctx: _dtypes(ctx) == ("i8", "i8"))
def unary_rescale_and_clamp(ctx: LoweringContext) -> Value | None:
    """i8 -> i8 as RESCALE + CLAMP where exact on all 256 inputs; else falls through (a TABLE)."""
    return rescale_and_clamp(ctx, *_ends(ctx))


@rule(*ops_with("litert_int16_rescale"), quantized=True, benefit=40, semantics="litert",
      when=lambda ctx: _dtypes(ctx)[0] == "i16")
def litert_int16(ctx: LoweringContext) -> Value:
    """TFLite's int16 kernel: RESCALEs by its multipliers."""
    return _litert_i16(ctx, *_ends(ctx))


@rule("nn.requantize", "nn.identity", quantized=True, benefit=30, when=lambda ctx: _dtypes(ctx) == ("i8", "i16"))
def requantize_to_int16(ctx: LoweringContext) -> Value:
    return requantize_value(ctx, *_ends(ctx))


def _sigmoid_tanh_fixed_point(ctx: LoweringContext) -> bool:
    xq, yq = q_in(ctx), q_out(ctx)
    return xq is not None and yq is not None and sigmoid_fixed_point(ctx.op_name, xq, yq) is not None


@rule("nn.sigmoid", "nn.tanh", quantized=True, benefit=20, semantics="litert", when=_sigmoid_tanh_fixed_point)
def litert_sigmoid_tanh_int16(ctx: LoweringContext) -> Value:
    """TFLite's int16 logistic / tanh: no TOSA TABLE interpolates as it does."""
    x, xq, yq = _ends(ctx)
    fixed_point = sigmoid_fixed_point(ctx.op_name, xq, yq)
    assert fixed_point is not None
    return sigmoid_tanh_int16(ctx, x, fixed_point)


@rule(*EXACT_I16, quantized=True, benefit=10, when=lambda ctx: _dtypes(ctx)[0] == "i16")
def exact_int16(ctx: LoweringContext) -> Value:
    """Piecewise-linear functions of i16 in exact integer arithmetic."""
    x, xq, yq = _ends(ctx)
    return EXACT_I16[ctx.op_name](ctx, x, xq, yq)


@rule(*TABULATED, quantized=True)
def tabulated(ctx: LoweringContext) -> Value:
    """The exact lookup of the target integers (TABLE or GATHER)."""
    x, xq, yq = _ends(ctx)
    return lookup(ctx, x, source_function(ctx), xq, yq)


# ------------------------------------------------------------------------------ activations and clamps
def _integer_bounds(nn_dtype: str) -> tuple[int, int]:
    if nn_dtype in UNSIGNED_WIDTH:
        return 0, (1 << UNSIGNED_WIDTH[nn_dtype]) - 1
    info = np.iinfo(TensorType((), nn_dtype).numpy_dtype)
    return int(info.min), int(info.max)


def clamp_values(ctx: LoweringContext, lo: float, hi: float) -> Value:
    """min(max(x, lo), hi) on the op's operand 0 in its own type: TOSA CLAMP for floats and i8,
    i32 MAXIMUM/MINIMUM for wider or unsigned integers (CLAMP has no i32 form, and its i16 form
    would need EXT-INT16)."""
    check_unquantized(ctx)
    x = ctx.operand("x")
    dtype, nn_dtype = operand_dtype(ctx), nn_in_dtype(ctx, 0)
    lo = min(lo, hi)  # a lower bound above the upper one: everything becomes hi (nn.clamp, numpy.clip)
    if dtype in FLOAT_TYPES:
        return ctx.tosa.clamp(x, min_val=float(lo), max_val=float(hi))
    ctx.check(clamp_not_boolean)
    tmin, tmax = _integer_bounds(nn_dtype)
    ilo = tmin if lo == -INF else min(max(math.ceil(lo), tmin), tmax)
    ihi = tmax if hi == INF else max(min(math.floor(hi), tmax), tmin)
    ilo = min(ilo, ihi)  # no integer between two bounds in one unit interval
    if nn_dtype == "i8":
        return ctx.tosa.clamp(x, min_val=ilo, max_val=ihi)
    (wide,) = int_operands(ctx, "clamp")
    a = Arith(ctx, "i32", ctx.type_of(wide).rank)
    return from_i32(ctx, a.minimum(a.maximum(wide, max(ilo, -(1 << 31))), min(ihi, (1 << 31) - 1)))


@rule("nn.clamp", checks=(clamp_not_boolean, integers_fit_i32))
def clamp(ctx: LoweringContext) -> Value:
    return clamp_values(ctx, float(ctx.attrs["min"]), float(ctx.attrs["max"]))


@rule("nn.relu", checks=(clamp_not_boolean, integers_fit_i32))
def relu(ctx: LoweringContext) -> Value:
    return clamp_values(ctx, 0.0, INF)


def _negative_slope(ctx: LoweringContext, x: Value, slope: Value, strict: bool) -> Value:
    """x where x >= 0 (x > 0 when strict), slope * x elsewhere (NaN stays NaN)."""
    a = Arith(ctx, ctx.type_of(x).dtype, ctx.out_types[0].rank)
    keep = a.gt(x, 0.0) if strict else a.ge(x, 0.0)
    return a.select(keep, x, a.mul(slope, x))


@rule("nn.leaky_relu", checks=(floating_point_operands,))
def leaky_relu(ctx: LoweringContext) -> Value:
    a = float_arith(ctx, "leaky_relu")
    x = ctx.operand("x")
    return _negative_slope(ctx, x, ctx.scalar(float(ctx.attrs["alpha"]), operand_dtype(ctx), a.rank), strict=False)


@rule("nn.prelu", checks=(floating_point_operands,))
def prelu(ctx: LoweringContext) -> Value:
    float_arith(ctx, "prelu")
    x, alpha = ctx.same_rank(ctx.operand("x"), ctx.operand("alpha"))
    return _negative_slope(ctx, x, alpha, strict=False)


@rule("nn.prelu", quantized=True, checks=(operands_all_quantized,))
def quantized_prelu(ctx: LoweringContext) -> Value:
    """x >= 0 ? x : alpha * x: both branches encoded in the output type, then SELECT (or, under
    `--target ethos-u55|ethos-u65`, the same choice through x - zp's sign bit)."""
    (x, alpha), (xq, aq) = quantized_operands(ctx)
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
        sign = ctx.tosa.arithmetic_right_shift(xv, ctx.scalar(31, "i32", rank), round=False)
        p32, n32 = (rescale(ctx, v, 1.0, "i32", rounding="SINGLE_ROUND") for v in (positive, negative))
        y = ctx.tosa.sub(p32, ctx.mul(sign, ctx.tosa.sub(n32, p32)))
        return rescale(ctx, y, 1.0, yq.dtype, rounding="SINGLE_ROUND")
    keep = ctx.tosa.greater_equal(xv, ctx.scalar(0, "i32", rank))
    return ctx.tosa.select(*ctx.same_rank(keep, positive, negative))
