"""Float functions TOSA has no single operator for: logarithms, exponentials, (inverse) trigonometric
and hyperbolic functions, rounding, softplus, hard_swish, elu and gelu; and the model of TFLite's int8
kernel of those TFLite computes its own way (hard_swish), which their quantized forms tabulate.

Decompositions of transcendental functions run in f32 (f16/bf16 operands are cast in and out: the
graph's tensors keep their type, only the intermediate arithmetic is wider), and follow numpy's
results for the special values too (0, -0, inf, NaN), since the corpus compares with them. The
`Arith` helper (arith.py) keeps each decomposition close to the formula it implements.

Accuracy (measured by tests/lowering/test_lowering_math.py over each function's whole domain): every float
decomposition is within a few f32 ulps, except where noted next to the function.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from ..fixed_point.carrier import QInfo
from ..fixed_point.litert_kernels import F32, Kernel, clip_to, int8_kernel, int16_multiplier, wrap16
from ..fixed_point.tflite import div_toward_zero, rounding_divide_by_pot, srdhm
from ..registry import rule
from ..semantics import differs
from .arith import (INF, Arith, float_arith, floating_point_operands, gelu_approximation_known, in_compute_type,
                    result_dtype, two_product)


# ------------------------------------------------------------------------------ float functions of one operand
# nn op -> f(arith, x) computing in f32
FLOAT_UNARY: dict[str, Callable[[Arith, Value], Value]] = {
    "nn.sqrt": lambda a, x: a.sqrt(x),
    "nn.exp2": lambda a, x: _exp2(a, x),
    "nn.log2": lambda a, x: a.mul(a.log(x), 1 / math.log(2)),
    "nn.log10": lambda a, x: a.mul(a.log(x), 1 / math.log(10)),
    "nn.tan": lambda a, x: a.div(a.sin(x), a.cos(x)),
    "nn.atan": lambda a, x: a.atan(x),
    # asin(x) = atan(x / sqrt(1 - x^2)), with (1 - x)(1 + x) exact near |x| = 1; |x| > 1 gives NaN
    "nn.asin": lambda a, x: a.atan(a.mul(x, a.rsqrt(a.mul(a.sub(1.0, x), a.add(1.0, x))))),
    # acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near x = 1 (pi/2 - asin would have)
    "nn.acos": lambda a, x: a.mul(a.atan(a.mul(a.sqrt(a.sub(1.0, x)), a.rsqrt(a.add(1.0, x)))), 2.0),
    "nn.sinh": lambda a, x: _sinh(a, x),
    "nn.cosh": lambda a, x: _cosh(a, x),
    "nn.asinh": lambda a, x: _asinh(a, x),
    "nn.acosh": lambda a, x: _acosh(a, x),
    "nn.atanh": lambda a, x: _atanh(a, x),
    "nn.round": lambda a, x: a.round_half_even(x),
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, no lost small values
    "nn.softplus": lambda a, x: a.add(a.maximum(x, 0.0), a.log1p(a.exp(a.neg(a.abs(x))))),
    "nn.hard_swish": lambda a, x: a.mul(x, a.mul(a.clamp(a.add(x, 3.0), 0.0, 6.0), 1 / 6)),
}



# ------------------------------------------------------------------------------ LiteRT's int8 kernels of these
# (quantized, these functions are tabulated: the "tabulated" forms in activations.py tabulate TFLite's kernel)
differs("hard_swish", "int16 fixed point: gemmlowp rounding doubling high multiplies by 16-bit multipliers, a "
                      "truncating one for x * relu6(x + 3) / 6")


@int8_kernel("nn.hard_swish")
def hard_swish_int8(x: QInfo, y: QInfo, attrs: Mapping) -> Kernel:
    """reference_ops::HardSwish (quantized): 16-bit fixed point. The input, shifted left 7 bits, times
    an int16 output multiplier (rounding doubling high multiply) is x on the pre-shift output scale; the
    input rescaled so that 3.0 is 32768 (saturating shifts), mapped to [0, 1], is relu6(x + 3) / 6;
    their truncating doubling high product is rounded right by the output exponent. The multipliers
    come from float32 scale ratios (QuantizeMultiplier, then rounded to 16 bits)."""
    hires = F32(1.0 / 128.0) * F32(x.scale)
    out_m, out_e = int16_multiplier(float(hires / F32(y.scale)))
    relu_m, relu_e = int16_multiplier(float(hires / (F32(3.0) / F32(32768.0))))

    def run(v: np.ndarray) -> np.ndarray:
        hires_v = (np.asarray(v, np.int64) - x.zero_point) * 128
        preshift = srdhm(hires_v, out_m, 15)
        relu = hires_v
        if relu_e > 0:  # a saturating shift: past 31 bits every nonzero value saturates alike
            relu = np.clip(relu * (1 << min(relu_e - 1, 31)), -32768, 32767)
        relu = srdhm(relu, relu_m, 15)
        if relu_e > 0:
            relu = np.clip(relu * 2, -32768, 32767)
        elif relu_e < 0:
            relu = rounding_divide_by_pot(relu, -relu_e)
        relu = (relu + (1 << 15)) >> 1
        product = np.where((relu == -32768) & (preshift == -32768), 32767, div_toward_zero(relu * preshift, 1 << 15))
        out = rounding_divide_by_pot(product, -out_e)
        return clip_to(wrap16(out + y.zero_point), y)

    return run

LN2 = np.float32(math.log(2))
LN2_LOW = np.float32(math.log(2) - float(LN2))  # the part of ln 2 the f32 constant misses


def _exp2(a: Arith, x: Value) -> Value:
    """2^x = e^y (1 + e) with y + e = x ln 2 to double-f32 precision (the product's rounding error
    from an exact Dekker product, plus x times ln 2's own rounding error): the rounding of x ln 2
    alone would cost up to 88 ulps. TOSA POW is no better (measured: 3e-6 relative off). |x| > 64
    is first shifted by 64 (exactly) so e^y stays finite wherever 2^x is; |x| > 300 (0 or inf
    anyway) is clamped so that e stays small."""
    x = a.clamp(x, -300.0, 300.0)
    shift = a.select(a.gt(x, 64.0), 64.0, a.select(a.lt(x, -64.0), -64.0, 0.0))
    scale = a.select(a.gt(x, 64.0), 2.0 ** 64, a.select(a.lt(x, -64.0), 2.0 ** -64, 1.0))
    xr = a.sub(x, shift)
    y, error = two_product(a, xr, a.v(float(LN2)))
    e = a.add(error, a.mul(xr, float(LN2_LOW)))
    r = a.mul(a.mul(a.exp(y), a.add(e, 1.0)), scale)  # 1 + e rounds by half an ulp at most
    return a.select(a.is_finite(x), r, a.select(a.gt(x, 0.0), INF, a.select(a.lt(x, 0.0), 0.0, x)))


def _half_exp(a: Arith, x: Value) -> tuple[Value, Value]:
    """(h, 1/h) with h = e^(|x|/2): e^|x| / 2 = h * (h / 2) stays finite as long as sinh/cosh do."""
    h = a.exp(a.mul(a.abs(x), 0.5))
    return h, a.reciprocal(h)


def _sinh(a: Arith, x: Value) -> Value:
    """sinh: (e - 1/e) / 2 through expm1 for |x| < 1 (no cancellation), h*(h/2) - (1/h)(1/h)/2 above."""
    m = a.expm1(a.abs(x))
    small = a.mul(a.add(m, a.div(m, a.add(m, 1.0))), 0.5)
    h, rh = _half_exp(a, x)
    large = a.sub(a.mul(h, a.mul(h, 0.5)), a.mul(rh, a.mul(rh, 0.5)))
    return a.copy_sign(a.select(a.lt(a.abs(x), 1.0), small, large), a.lt(x, 0.0))


def _cosh(a: Arith, x: Value) -> Value:
    h, rh = _half_exp(a, x)
    return a.add(a.mul(h, a.mul(h, 0.5)), a.mul(rh, a.mul(rh, 0.5)))


def _asinh(a: Arith, x: Value) -> Value:
    """asinh|x| = log1p(|x| + x^2 / (1 + sqrt(1 + x^2))); past 2^12 (x^2 would lose 1, and
    overflows past 2^64), log|x| + log 2."""
    ax = a.abs(x)
    sq = a.mul(ax, ax)
    moderate = a.log1p(a.add(ax, a.div(sq, a.add(a.sqrt(a.add(sq, 1.0)), 1.0))))
    large = a.add(a.log(ax), math.log(2))
    return a.copy_sign(a.select(a.gt(ax, 2.0 ** 12), large, moderate), a.lt(x, 0.0))


def _acosh(a: Arith, x: Value) -> Value:
    """acosh(x) = log1p(t + sqrt(2t + t^2)), t = x - 1 (exact for x in [1, 2]); past 2^12,
    log x + log 2. Below 1: NaN."""
    t = a.sub(x, 1.0)
    moderate = a.log1p(a.add(t, a.sqrt(a.add(a.mul(t, 2.0), a.mul(t, t)))))
    large = a.add(a.log(x), math.log(2))
    return a.select(a.lt(x, 1.0), float("nan"), a.select(a.gt(x, 2.0 ** 12), large, moderate))


def _atanh(a: Arith, x: Value) -> Value:
    """atanh|x| = log1p(2|x| / (1 - |x|)) / 2: inf at 1, NaN past it."""
    ax = a.abs(x)
    r = a.mul(a.log1p(a.div(a.mul(ax, 2.0), a.sub(1.0, ax))), 0.5)
    r = a.select(a.gt(ax, 1.0), float("nan"), r)
    return a.copy_sign(r, a.lt(x, 0.0))


@rule(*FLOAT_UNARY, checks=(floating_point_operands,))
def float_unary(ctx: LoweringContext) -> Value:
    a = float_arith(ctx, ctx.op_name)
    (x,) = in_compute_type(ctx, a, ctx.operand("x"))
    return ctx.cast(FLOAT_UNARY[ctx.op_name](a, x), result_dtype(ctx))


@rule("nn.elu", checks=(floating_point_operands,))
def elu(ctx: LoweringContext) -> Value:
    a = float_arith(ctx, "elu")
    (x,) = in_compute_type(ctx, a, ctx.operand("x"))
    y = a.select(a.gt(x, 0.0), x, a.mul(a.expm1(a.minimum(x, 0.0)), float(ctx.attrs["alpha"])))
    return ctx.cast(y, result_dtype(ctx))


@rule("nn.gelu", constraints=(gelu_approximation_known,), checks=(floating_point_operands,))
def gelu(ctx: LoweringContext) -> Value:
    a = float_arith(ctx, "gelu")
    (x,) = in_compute_type(ctx, a, ctx.operand("x"))
    approximate = ctx.attrs["approximate"]
    if approximate == "none":  # x * Phi(x) = x/2 (1 + erf(x / sqrt 2))
        phi = a.add(a.erf(a.mul(x, 1 / math.sqrt(2))), 1.0)
    elif approximate == "tanh":
        cube = a.mul(a.mul(x, x), x)
        inner = a.mul(a.add(x, a.mul(cube, 0.044715)), math.sqrt(2 / math.pi))
        phi = a.add(a.tanh(inner), 1.0)
    else:
        raise AssertionError(approximate)  # gelu_approximation_known
    return ctx.cast(a.mul(a.mul(x, 0.5), phi), result_dtype(ctx))
