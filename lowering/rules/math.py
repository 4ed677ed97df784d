"""Elementwise math TOSA has no single operator for: divisions, powers, logarithms and inverse
trigonometry, rounding, activations, select and cast.

Decompositions of transcendental functions run in f32 (f16/bf16 operands are cast in and out: the
graph's tensors keep their type, only the intermediate arithmetic is wider), and follow numpy's
results for the special values too (0, -0, inf, NaN), since the corpus compares with them. The
`Arith` helper keeps each decomposition close to the formula it implements.

Accuracy (measured by tests/test_lowering_math.py over each function's whole domain): every float
decomposition is within a few f32 ulps, except where noted next to the function.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import TOSA_ELEMENT_OF, LoweringContext, constant_value, float_rule_unquantized
from . import rule

FLOAT_TYPES = ("f32", "f16", "bf16")
INT_TYPES = ("i8", "i16", "i32")
UNSIGNED_WIDTH = {"ui8": 8, "ui16": 16, "ui32": 32, "ui64": 64}
# the type decompositions compute in, per TOSA element type
COMPUTE_TYPE = {"f32": "f32", "f16": "f32", "bf16": "f32"}
INF = float("inf")


# ------------------------------------------------------------------------------ building blocks
Operand = Value | float | int


class Arith:
    """TOSA arithmetic on values of one element type and one rank; Python numbers become [1]*rank
    constants, comparisons give i1 values, and operands of different ranks are equalized."""

    def __init__(self, ctx: LoweringContext, dtype: str, rank: int):
        self.ctx, self.dtype, self.rank = ctx, dtype, rank

    def v(self, x: Operand) -> Value:
        if isinstance(x, Value):
            return x
        return self.ctx.scalar(x, self.dtype, self.rank)

    def _binary(self, op: str, x: Operand, y: Operand) -> Value:
        return self.ctx.binary(op, self.v(x), self.v(y))

    # arithmetic
    def add(self, x: Operand, y: Operand) -> Value:
        return self._binary("tosa.add", x, y)

    def sub(self, x: Operand, y: Operand) -> Value:
        return self._binary("tosa.sub", x, y)

    def mul(self, x: Operand, y: Operand) -> Value:
        return self.ctx.mul(self.v(x), self.v(y))

    def div(self, x: Operand, y: Operand) -> Value:
        """x * (1 / y): at most one ulp from the correctly rounded quotient (TOSA has no float
        divide). Where 1/y would leave the normal range (|y| < 2^-100: 1/y overflows for subnormal
        y; |y| > 2^100: 1/y is subnormal and loses bits) both are first scaled by 2^64 or 2^-64,
        exactly; x * s overflows or underflows only where x / y does too."""
        y = self.v(y)
        ay = self.abs(y)
        s = self.select(self.lt(ay, 2.0 ** -100), 2.0 ** 64, self.select(self.gt(ay, 2.0 ** 100), 2.0 ** -64, 1.0))
        return self.mul(self.mul(x, s), self.unary("tosa.reciprocal", self.mul(y, s)))

    def neg(self, x: Operand) -> Value:
        return self.ctx.negate(self.v(x))

    def maximum(self, x: Operand, y: Operand) -> Value:
        return self._binary("tosa.maximum", x, y)

    def minimum(self, x: Operand, y: Operand) -> Value:
        return self._binary("tosa.minimum", x, y)

    def unary(self, op: str, x: Operand) -> Value:
        return self.ctx.op(op, [self.v(x)])

    def clamp(self, x: Value, lo: float, hi: float) -> Value:
        """Float clamp (TOSA CLAMP's bounds are attributes in the operand's type)."""
        return self.ctx.op("tosa.clamp", [x], {"min_val": float(lo), "max_val": float(hi)})

    def abs(self, x: Operand) -> Value:
        return self.unary("tosa.abs", x)

    def floor(self, x: Operand) -> Value:
        return self.unary("tosa.floor", x)

    def exp(self, x: Operand) -> Value:
        return self.unary("tosa.exp", x)

    def log(self, x: Operand) -> Value:
        return self.unary("tosa.log", x)

    def sqrt(self, x: Operand) -> Value:
        """1 / rsqrt(x): exact at 0 (1/inf) and inf (1/0), NaN below 0."""
        return self.unary("tosa.reciprocal", self.unary("tosa.rsqrt", x))

    # comparisons and choice
    def gt(self, x: Operand, y: Operand) -> Value:
        return self._binary("tosa.greater", x, y)

    def ge(self, x: Operand, y: Operand) -> Value:
        return self._binary("tosa.greater_equal", x, y)

    def lt(self, x: Operand, y: Operand) -> Value:
        return self._binary("tosa.greater", y, x)

    def eq(self, x: Operand, y: Operand) -> Value:
        return self._binary("tosa.equal", x, y)

    def same(self, p: Value, q: Value) -> Value:
        """p == q on booleans (TOSA EQUAL has no i1 form)."""
        return self.negation(self.ctx.binary("tosa.logical_xor", p, q))

    def both(self, p: Value, q: Value) -> Value:
        return self.ctx.binary("tosa.logical_and", p, q)

    def either(self, p: Value, q: Value) -> Value:
        return self.ctx.binary("tosa.logical_or", p, q)

    def negation(self, p: Value) -> Value:
        return self.ctx.op("tosa.logical_not", [p])

    def select(self, cond: Value, x: Operand, y: Operand) -> Value:
        c, a, b = self.ctx.same_rank(cond, self.v(x), self.v(y))
        return self.ctx.op("tosa.select", [c, a, b])

    # special values
    def is_nan(self, x: Value) -> Value:
        return self.negation(self.eq(x, x))

    def is_finite(self, x: Value) -> Value:
        """x - x == 0 holds for every finite x and fails for inf and NaN."""
        return self.eq(self.sub(x, x), 0.0)

    def is_inf(self, x: Value) -> Value:
        return self.eq(self.abs(x), INF)

    def is_negative(self, x: Value) -> Value:
        """x < 0 or x is -0 (1/-0 = -inf)."""
        return self.either(self.lt(x, 0.0), self.lt(self.unary("tosa.reciprocal", x), 0.0))

    def copy_sign(self, magnitude: Value, negative: Value) -> Value:
        return self.select(negative, self.neg(magnitude), magnitude)

    # functions several decompositions share
    def log1p(self, t: Value) -> Value:
        """log(1 + t) accurate for small t: log(u) * t / (u - 1) with u = fl(1 + t) corrects the
        rounding of 1 + t (exact when u == 1); past 2**24, 1 + t == t and log(u) is right."""
        u = self.add(t, 1.0)
        w = self.sub(u, 1.0)
        corrected = self.mul(self.log(u), self.div(t, w))
        return self.select(self.eq(w, 0.0), t, self.select(self.gt(t, 2.0 ** 24), self.log(u), corrected))

    def expm1(self, x: Value) -> Value:
        """e^x - 1 accurate for small x: (u - 1) * x / log(u) with u = fl(e^x); past |x| > 20,
        u - 1 is already right (and the ratio would be inf/inf or 0 * inf)."""
        u = self.exp(x)
        w = self.sub(u, 1.0)
        corrected = self.mul(w, self.div(x, self.log(u)))
        return self.select(self.gt(self.abs(x), 20.0), w, self.select(self.eq(w, 0.0), x, corrected))

    def pow(self, x: Value, y: Value) -> Value:
        """numpy's x ** y for every x, y. TOSA POW is defined only for finite x > 0 (the reference
        model stops on anything else), so it sees |x| and y where both are finite and |x| > 0, and
        the rest follows IEEE 754 pow: signs for odd integer y, 0/inf at the edges, NaN for a
        negative base with a non-integer exponent, 1 for y == 0 and x == 1."""
        ax = self.abs(x)
        regular = self.both(self.both(self.gt(ax, 0.0), self.is_finite(ax)), self.is_finite(y))
        core = self.ctx.binary("tosa.pow", self.select(regular, ax, 1.0), self.select(regular, y, 1.0))
        # |x| in {0, inf} or |y| == inf: 0 or inf by whether y > 0 agrees with |x| > 1
        edge = self.select(self.same(self.gt(y, 0.0), self.gt(ax, 1.0)), INF, 0.0)
        magnitude = self.select(regular, core, edge)
        y_integer = self.eq(self.floor(y), y)  # inf counts as an even integer, as in IEEE pow
        y_odd = self.both(y_integer, self.negation(self.eq(self.mul(self.floor(self.mul(y, 0.5)), 2.0), y)))
        result = self.copy_sign(magnitude, self.both(self.is_negative(x), y_odd))
        negative_finite_base = self.both(self.lt(x, 0.0), self.is_finite(x))
        nan = self.either(self.either(self.is_nan(x), self.is_nan(y)),
                          self.both(negative_finite_base, self.both(self.is_finite(y), self.negation(y_integer))))
        result = self.select(nan, float("nan"), result)
        one = self.either(self.either(self.eq(y, 0.0), self.eq(x, 1.0)), self.both(self.eq(x, -1.0), self.is_inf(y)))
        return self.select(one, 1.0, result)

    def atan(self, x: Value) -> Value:
        """Range reduction to |t| <= tan(pi/8) (atan(a) = pi/4 + atan((a-1)/(a+1)) and
        pi/2 + atan(-1/a)), then t + t^3 P(t^2) with P fitted to arctan by least squares on
        Chebyshev nodes in float64 (max relative error 6.2e-8 in f32 arithmetic)."""
        a = self.abs(x)
        middle, far = self.gt(a, math.tan(math.pi / 8)), self.gt(a, math.tan(3 * math.pi / 8))
        t = self.select(far, self.neg(self.unary("tosa.reciprocal", a)),
                        self.select(middle, self.div(self.sub(a, 1.0), self.add(a, 1.0)), a))
        offset = self.select(far, math.pi / 2, self.select(middle, math.pi / 4, 0.0))
        z = self.mul(t, t)
        p = self.v(ATAN_COEFFICIENTS[-1])
        for c in reversed(ATAN_COEFFICIENTS[:-1]):
            p = self.add(self.mul(p, z), c)
        r = self.add(offset, self.add(t, self.mul(self.mul(t, z), p)))
        return self.copy_sign(r, self.lt(x, 0.0))

    def round_half_even(self, x: Value) -> Value:
        """(|x| + 2^23) - 2^23 rounds to an integer half to even (the f32 addition rounds so);
        |x| >= 2^23 is an integer already (and inf/NaN stay)."""
        magic = 2.0 ** 23
        a = self.abs(x)
        rounded = self.sub(self.add(a, magic), magic)
        return self.select(self.ge(a, magic), x, self.copy_sign(rounded, self.lt(x, 0.0)))


# atan(t) = t + t^3 * P(t^2), |t| <= tan(pi/8): P's coefficients, lowest degree first
ATAN_COEFFICIENTS = (-0.33333316445350647, 0.1999853104352951, -0.14244486391544342, 0.1060001328587532,
                     -0.06092337146401405)


def _check_unquantized(ctx: LoweringContext) -> None:
    ctx.check(float_rule_unquantized)


def floating_point_operands(ctx: LoweringContext, what: str) -> str | None:
    """The operand is floating point (the op is computed on floats only)."""
    if _element(ctx) not in FLOAT_TYPES:
        return f"{what} of {ctx.nn_in_types[0].dtype} tensors (floating point only)"
    return None


def integers_fit_i32(ctx: LoweringContext, what: str) -> str | None:
    """Integer operands are not ui32 or ui64: TOSA's widest integer is i32, signed."""
    for t in ctx.nn_in_types:
        if t.dtype in ("ui32", "ui64"):
            return f"{what} of {t.dtype} tensors (TOSA's widest integer is i32, signed)"
    return None


def gelu_approximation_known(ctx: LoweringContext) -> str | None:
    """gelu's approximation is 'none' or 'tanh'."""
    approximate = ctx.attrs["approximate"]
    if approximate not in ("none", "tanh"):
        return f"gelu approximation {approximate!r} (known: 'none', 'tanh')"
    return None


def clamp_not_boolean(ctx: LoweringContext) -> str | None:
    """A clamp's operand is not boolean."""
    if _element(ctx) == "i1":
        return "clamp of booleans"
    return None


def _element(ctx: LoweringContext, k: int = 0) -> str:
    return ctx.type_of(ctx.operands[k]).dtype


def _out_dtype(ctx: LoweringContext) -> str:
    return ctx.out_types[0].dtype


def _float_arith(ctx: LoweringContext, what: str) -> Arith:
    """The f32 Arith of a float op (unsupported for other element types)."""
    _check_unquantized(ctx)
    ctx.check(floating_point_operands, what)
    dtype = _element(ctx)
    return Arith(ctx, COMPUTE_TYPE[dtype], ctx.out_types[0].rank)


def _in_compute_type(ctx: LoweringContext, a: Arith, *xs: Value) -> list[Value]:
    return [ctx.cast(x, a.dtype) for x in xs]


# ------------------------------------------------------------------------------ float functions of one operand
# nn op -> f(arith, x) computing in f32
FLOAT_UNARY: dict[str, Callable[[Arith, Value], Value]] = {
    "nn.sqrt": lambda a, x: a.sqrt(x),
    "nn.exp2": lambda a, x: _exp2(a, x),
    "nn.log2": lambda a, x: a.mul(a.log(x), 1 / math.log(2)),
    "nn.log10": lambda a, x: a.mul(a.log(x), 1 / math.log(10)),
    "nn.tan": lambda a, x: a.div(a.unary("tosa.sin", x), a.unary("tosa.cos", x)),
    "nn.atan": lambda a, x: a.atan(x),
    # asin(x) = atan(x / sqrt(1 - x^2)), with (1 - x)(1 + x) exact near |x| = 1; |x| > 1 gives NaN
    "nn.asin": lambda a, x: a.atan(a.mul(x, a.unary("tosa.rsqrt", a.mul(a.sub(1.0, x), a.add(1.0, x))))),
    # acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near x = 1 (pi/2 - asin would have)
    "nn.acos": lambda a, x: a.mul(a.atan(a.mul(a.sqrt(a.sub(1.0, x)), a.unary("tosa.rsqrt", a.add(1.0, x)))), 2.0),
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
    y, error = _two_product(a, xr, a.v(float(LN2)))
    e = a.add(error, a.mul(xr, float(LN2_LOW)))
    r = a.mul(a.mul(a.exp(y), a.add(e, 1.0)), scale)  # 1 + e rounds by half an ulp at most
    return a.select(a.is_finite(x), r, a.select(a.gt(x, 0.0), INF, a.select(a.lt(x, 0.0), 0.0, x)))


def _half_exp(a: Arith, x: Value) -> tuple[Value, Value]:
    """(h, 1/h) with h = e^(|x|/2): e^|x| / 2 = h * (h / 2) stays finite as long as sinh/cosh do."""
    h = a.exp(a.mul(a.abs(x), 0.5))
    return h, a.unary("tosa.reciprocal", h)


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
    a = _float_arith(ctx, ctx.op_name)
    (x,) = _in_compute_type(ctx, a, ctx.operands[0])
    return ctx.cast(FLOAT_UNARY[ctx.op_name](a, x), _out_dtype(ctx))


@rule("nn.elu", checks=(floating_point_operands,))
def elu(ctx: LoweringContext) -> Value:
    a = _float_arith(ctx, "elu")
    (x,) = _in_compute_type(ctx, a, ctx.operands[0])
    y = a.select(a.gt(x, 0.0), x, a.mul(a.expm1(a.minimum(x, 0.0)), float(ctx.attrs["alpha"])))
    return ctx.cast(y, _out_dtype(ctx))


@rule("nn.gelu", constraints=(gelu_approximation_known,), checks=(floating_point_operands,))
def gelu(ctx: LoweringContext) -> Value:
    a = _float_arith(ctx, "gelu")
    (x,) = _in_compute_type(ctx, a, ctx.operands[0])
    approximate = ctx.attrs["approximate"]
    if approximate == "none":  # x * Phi(x) = x/2 (1 + erf(x / sqrt 2))
        phi = a.add(a.unary("tosa.erf", a.mul(x, 1 / math.sqrt(2))), 1.0)
    elif approximate == "tanh":
        cube = a.mul(a.mul(x, x), x)
        inner = a.mul(a.add(x, a.mul(cube, 0.044715)), math.sqrt(2 / math.pi))
        phi = a.add(a.unary("tosa.tanh", inner), 1.0)
    else:
        raise AssertionError(approximate)  # gelu_approximation_known
    return ctx.cast(a.mul(a.mul(x, 0.5), phi), _out_dtype(ctx))


# ------------------------------------------------------------------------------ integer helpers
def _nn_dtype(ctx: LoweringContext, k: int) -> str:
    return ctx.nn_in_types[k].dtype


def to_i32(ctx: LoweringContext, x: Value, nn_dtype: str) -> Value:
    """An integer operand as i32 holding its value: unsigned 8/16-bit data (stored as the same bits
    in i8/i16) is zero-extended, not sign-extended."""
    wide = ctx.cast(x, "i32")
    width = UNSIGNED_WIDTH.get(nn_dtype)
    if width in (8, 16):
        wide = ctx.binary("tosa.bitwise_and", wide, ctx.scalar((1 << width) - 1, "i32", ctx.type_of(wide).rank))
    return wide


def _int_operands(ctx: LoweringContext, what: str) -> list[Value]:
    """The operands as i32 values (see to_i32); unsigned 32/64-bit values do not fit i32 arithmetic."""
    _check_unquantized(ctx)
    ctx.check(integers_fit_i32, what)
    xs = [to_i32(ctx, x, t.dtype) for x, t in zip(ctx.operands, ctx.nn_in_types)]
    return ctx.same_rank(*xs)


def _from_i32(ctx: LoweringContext, x: Value) -> Value:
    """An i32 result narrowed (wrapping, as nn integer arithmetic does) to the op's result type."""
    return ctx.cast(x, _out_dtype(ctx))


# ------------------------------------------------------------------------------ divisions
def _two_product(a: Arith, x: Value, y: Value) -> tuple[Value, Value]:
    """p + e == x * y exactly (Dekker): p = fl(x * y), e its rounding error, from Veltkamp splits
    into 12-bit halves. Operands are pre-scaled by 2^-64 when large so the split cannot overflow."""
    def split(v: Value) -> tuple[Value, Value]:
        big = a.gt(a.abs(v), 2.0 ** 100)
        s = a.select(big, 2.0 ** -64, 1.0)
        vs = a.mul(v, s)
        c = a.mul(vs, 4097.0)
        hi_s = a.sub(c, a.sub(c, vs))
        unscale = a.select(big, 2.0 ** 64, 1.0)
        hi = a.mul(hi_s, unscale)
        return hi, a.sub(v, hi)

    p = a.mul(x, y)
    xh, xl = split(x)
    yh, yl = split(y)
    e = a.add(a.add(a.add(a.sub(a.mul(xh, yh), p), a.mul(xh, yl)), a.mul(xl, yh)), a.mul(xl, yl))
    return p, e


def _float_divmod(a: Arith, x: Value, y: Value, floor: bool, sign_of: Value | None = None) -> tuple[Value, Value]:
    """(q, r) with q = floor(x / y) (or trunc) and r = x - q*y, r exact while |x / y| < 2^23 (the
    remainder is then representable and computed from an exact product). The quotient estimate
    fl(x * fl(1/y)) can sit one off an integer boundary; the exact remainder's sign moves it back.
    A truncated remainder takes the sign of `sign_of` (default x)."""
    q0 = a.div(x, y)
    if floor:
        q = a.floor(q0)
    else:
        q = a.select(a.lt(q0, 0.0), a.unary("tosa.ceil", q0), a.floor(q0))
    p, e = _two_product(a, q, y)
    t = a.sub(x, p)
    r = a.sub(t, e)
    # whether x - p or t - e rounded (Fast2Sum error terms; both are exact when the remainder is
    # representable, so this only fires for a tiny x against a y of the other sign)
    rounded = a.either(a.negation(a.eq(a.sub(x, a.add(t, p)), 0.0)), a.negation(a.eq(a.sub(a.sub(t, r), e), 0.0)))
    # floor: r must have y's sign (or be 0), trunc: x's; and |r| < |y|. Either way, one step of q
    # toward r / y's sign (r -= step * y) brings r back into range. |r| == |y| after rounding is a
    # remainder just short of y (mod of a tiny x by a y of the other sign): it stays, as in numpy.
    wanted_negative = a.lt(y, 0.0) if floor else a.lt(x if sign_of is None else sign_of, 0.0)
    wrong_sign = a.both(a.negation(a.eq(r, 0.0)), a.negation(a.same(a.lt(r, 0.0), wanted_negative)))
    too_large = a.either(a.gt(a.abs(r), a.abs(y)), a.both(a.eq(a.abs(r), a.abs(y)), a.negation(rounded)))
    off = a.either(wrong_sign, too_large)
    toward = a.select(a.same(a.lt(r, 0.0), a.lt(y, 0.0)), 1.0, -1.0)
    step = a.select(off, toward, 0.0)
    q = a.add(q, step)
    r = a.sub(r, a.mul(step, y))
    return q, r


def _int_divmod(ctx: LoweringContext, x: Value, y: Value, floor: bool) -> tuple[Value, Value]:
    """i32 (q, r): TOSA INTDIV truncates; floor division moves q down when r and y differ in sign."""
    q = ctx.binary("tosa.intdiv", x, y)
    r = ctx.binary("tosa.sub", x, ctx.mul(q, y))
    if floor:
        a = Arith(ctx, "i32", ctx.type_of(q).rank)
        adjust = a.both(a.negation(a.eq(r, 0)), a.negation(a.same(a.lt(r, 0), a.lt(y, 0))))
        q = a.select(adjust, a.sub(q, 1), q)
        r = a.select(adjust, a.add(r, y), r)
    return q, r


# nn op -> (floor rounding?, result: 0 quotient / 1 remainder)
DIVISIONS = {"nn.floor_div": (True, 0), "nn.mod": (True, 1), "nn.fmod": (False, 1)}


@rule("nn.div", checks=(floating_point_operands, integers_fit_i32))
def div(ctx: LoweringContext) -> Value:
    if _element(ctx) in FLOAT_TYPES:
        a = _float_arith(ctx, "div")
        x, y = _in_compute_type(ctx, a, *ctx.operands)
        return ctx.cast(a.div(x, y), _out_dtype(ctx))
    x, y = _int_operands(ctx, "integer division")
    return _from_i32(ctx, ctx.binary("tosa.intdiv", x, y))


@rule(*DIVISIONS, checks=(floating_point_operands, integers_fit_i32))
def division(ctx: LoweringContext) -> Value:
    floor, which = DIVISIONS[ctx.op_name]
    if _element(ctx) in FLOAT_TYPES:
        a = _float_arith(ctx, ctx.op_name)
        x, y = ctx.same_rank(*_in_compute_type(ctx, a, *ctx.operands))
        q, r = _float_divmod(a, x, y, floor)
        if which == 0:
            # past 2^23 every float is an integer: the rounded quotient is the answer; so it is for
            # the special values (x/0, inf/y, x/inf: the remainder is NaN there)
            q0 = a.div(x, y)
            result = a.select(a.both(a.lt(a.abs(q0), 2.0 ** 23), a.is_finite(r)), q, a.floor(q0))
        else:
            steps = _reduction_steps(_element(ctx), constant_value(ctx, ctx.operands[1]))
            result = _remainder_specials(a, x, y, _large_quotient_remainder(a, x, y, r, floor, steps), floor)
        return ctx.cast(result, _out_dtype(ctx))
    x, y = _int_operands(ctx, ctx.op_name)
    return _from_i32(ctx, _int_divmod(ctx, x, y, floor)[which])


def _large_quotient_remainder(a: Arith, x: Value, y: Value, r: Value, floor: bool, steps: int) -> Value:
    """The remainder where |x / y| >= 2^23: reduce x exactly by y * (12-bit multiples) until the
    quotient is small, then finish with the exact step. Each step removes 11 bits of quotient; the
    `steps` must cover the range of x / y (see _reduction_steps)."""
    q0 = a.abs(a.div(x, y))
    large = a.ge(q0, 2.0 ** 22)
    rem = x
    # multiples of y (2^100 y, 2^200 y): reducing by them first keeps every quotient below 2^120;
    # 2^200 y is only used when |x / y| > 2^220, where |y| < 2^-92 and it cannot overflow
    y_far = a.mul(y, 2.0 ** 100)
    y_farther = a.mul(y_far, 2.0 ** 100)
    for _ in range(steps):
        overflow = a.gt(a.abs(a.div(rem, y)), 2.0 ** 120)
        overflow_far = a.gt(a.abs(a.div(rem, y_far)), 2.0 ** 120)
        d = a.select(overflow_far, y_farther, a.select(overflow, y_far, y))
        q = a.div(rem, d)
        q = a.select(a.lt(q, 0.0), a.unary("tosa.ceil", q), a.floor(q))  # trunc
        c = a.mul(q, 4097.0 * 2.0 ** -64)  # 12 leading bits of q, scaled so that q*4097 cannot overflow
        q_hi = a.mul(a.sub(c, a.sub(c, a.mul(q, 2.0 ** -64))), 2.0 ** 64)
        q_hi = a.select(a.lt(a.abs(q), 2.0 ** 12), q, q_hi)
        p, e = _two_product(a, q_hi, d)
        rem = a.sub(a.sub(rem, p), e)
    _, final = _float_divmod(a, rem, y, floor, sign_of=x)
    # trunc remainder keeps x's sign; a zero remainder after reduction must too
    if not floor:
        final = a.select(a.eq(final, 0.0), a.mul(x, 0.0), final)
    nonfinite = a.negation(a.both(a.is_finite(x), a.is_finite(y)))
    return a.select(a.both(large, a.negation(nonfinite)), final, r)


# log2 of the largest |x / y| per operand type: the largest finite value over the smallest subnormal
LOG2_QUOTIENT_RANGE = {"f32": 128 + 149, "bf16": 128 + 133, "f16": 16 + 24}


def _reduction_steps(dtype: str, divisor: np.ndarray | None) -> int:
    """Reduction steps for quotients up to the operand type's range (or, for a constant divisor, up
    to the largest finite x over its smallest magnitude): each step removes 11 bits, the exact final
    step takes the last 22."""
    log2_range = LOG2_QUOTIENT_RANGE[dtype]
    if divisor is not None and divisor.dtype.kind == "f" and np.all(np.isfinite(divisor)) and np.any(divisor):
        smallest = float(np.min(np.abs(divisor[divisor != 0]).astype(np.float64)))
        log2_range = min(log2_range, {"f32": 128, "bf16": 128, "f16": 16}[dtype] - math.floor(math.log2(smallest)))
    return max(1, math.ceil((log2_range - 22) / 11) + 1)


def _remainder_specials(a: Arith, x: Value, y: Value, r: Value, floor: bool) -> Value:
    """numpy's remainders at the special values: NaN for x = inf, y = 0 or a NaN operand; for
    y = inf, x itself (mod: y when x is non-zero and of the other sign)."""
    if floor:
        other_sign = a.both(a.negation(a.eq(x, 0.0)), a.negation(a.same(a.lt(x, 0.0), a.lt(y, 0.0))))
        by_inf = a.select(other_sign, y, x)
    else:
        by_inf = x
    r = a.select(a.both(a.is_inf(y), a.is_finite(x)), by_inf, r)
    nan = a.either(a.either(a.is_nan(y), a.negation(a.is_finite(x))), a.eq(y, 0.0))
    return a.select(nan, float("nan"), r)


@rule("nn.squared_difference", checks=(integers_fit_i32,))
def squared_difference(ctx: LoweringContext) -> Value:
    if _element(ctx) in FLOAT_TYPES:
        _check_unquantized(ctx)
        d = ctx.binary("tosa.sub", *ctx.operands)
        return ctx.mul(d, d)
    x, y = _int_operands(ctx, "squared_difference")
    d = ctx.binary("tosa.sub", x, y)
    return _from_i32(ctx, ctx.mul(d, d))


@rule("nn.pow", checks=(floating_point_operands, integers_fit_i32))
def pow_(ctx: LoweringContext) -> Value:
    if _element(ctx) not in FLOAT_TYPES:
        return _integer_pow(ctx)
    a = _float_arith(ctx, "pow")
    x, y = _in_compute_type(ctx, a, *ctx.operands)
    x, y = ctx.same_rank(x, y)
    return ctx.cast(a.pow(x, y), _out_dtype(ctx))


def _integer_pow(ctx: LoweringContext) -> Value:
    """x ** y on integers by repeated squaring in i32 (products wrap as nn's integers do); a
    negative exponent gives the truncated real power: 1 for x = 1, +-1 for x = -1, else 0. One
    squaring step per bit of the largest exponent (31, or fewer for a constant exponent)."""
    x, y = _int_operands(ctx, "pow")
    a = Arith(ctx, "i32", ctx.type_of(x).rank)
    known = constant_value(ctx, ctx.operands[1])
    bits = 31 if known is None else max(1, int(np.max(np.abs(known.astype(np.int64)))).bit_length())
    result, base = a.v(1), x
    for bit in range(bits):
        if bit:
            base = ctx.mul(base, base)
        on = a.eq(ctx.binary("tosa.bitwise_and", ctx.binary("tosa.arithmetic_right_shift", y, a.v(bit),
                                                                  {"round": False}), a.v(1)), 1)
        result = a.select(on, ctx.mul(result, base), result)
    odd = a.eq(ctx.binary("tosa.bitwise_and", y, a.v(1)), 1)
    negative_power = a.select(a.eq(x, 1), 1, a.select(a.eq(x, -1), a.select(odd, -1, 1), 0))
    return _from_i32(ctx, a.select(a.lt(y, 0), negative_power, result))


@rule("nn.square", checks=(integers_fit_i32,))
def square(ctx: LoweringContext) -> Value:
    x = ctx.operands[0]
    if _element(ctx) in FLOAT_TYPES:
        _check_unquantized(ctx)
        return ctx.mul(x, x)
    (wide,) = _int_operands(ctx, "square")
    return _from_i32(ctx, ctx.mul(wide, wide))


# ------------------------------------------------------------------------------ shifts
@rule("nn.shift_left")
def shift_left(ctx: LoweringContext) -> Value:
    _check_unquantized(ctx)
    return ctx.binary("tosa.logical_left_shift", *ctx.operands)


@rule("nn.shift_right")
def shift_right(ctx: LoweringContext) -> Value:
    """Arithmetic for signed types, logical for unsigned ones (their bits are the same)."""
    _check_unquantized(ctx)
    if _nn_dtype(ctx, 0) in UNSIGNED_WIDTH:
        return ctx.binary("tosa.logical_right_shift", *ctx.operands)
    return ctx.binary("tosa.arithmetic_right_shift", *ctx.operands, attrs={"round": False})


# ------------------------------------------------------------------------------ sign and classification
@rule("nn.sign", checks=(integers_fit_i32,))
def sign(ctx: LoweringContext) -> Value:
    _check_unquantized(ctx)
    x = ctx.operands[0]
    dtype = _element(ctx)
    if dtype in FLOAT_TYPES:
        a = Arith(ctx, dtype, ctx.out_types[0].rank)
        return a.select(a.gt(x, 0.0), 1.0, a.select(a.lt(x, 0.0), -1.0, x))  # keeps 0, -0 and NaN
    (wide,) = _int_operands(ctx, "sign")
    a = Arith(ctx, "i32", ctx.out_types[0].rank)
    return _from_i32(ctx, a.select(a.gt(wide, 0), 1, a.select(a.lt(wide, 0), -1, 0)))


@rule("nn.isnan", "nn.isinf")
def classify(ctx: LoweringContext) -> Value:
    _check_unquantized(ctx)
    x = ctx.operands[0]
    t = ctx.type_of(x)
    if t.dtype not in FLOAT_TYPES:  # integers are never NaN or infinite
        return ctx.const(np.zeros(t.shape, bool), "i1")
    a = Arith(ctx, t.dtype, t.rank)
    return a.is_nan(x) if ctx.op_name == "nn.isnan" else a.is_inf(x)


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
    _check_unquantized(ctx)
    x = ctx.operands[0]
    dtype, nn_dtype = _element(ctx), _nn_dtype(ctx, 0)
    lo = min(lo, hi)  # a lower bound above the upper one: everything becomes hi (nn.clamp, numpy.clip)
    if dtype in FLOAT_TYPES:
        return ctx.op("tosa.clamp", [x], {"min_val": float(lo), "max_val": float(hi)})
    ctx.check(clamp_not_boolean)
    tmin, tmax = _integer_bounds(nn_dtype)
    ilo = tmin if lo == -INF else min(max(math.ceil(lo), tmin), tmax)
    ihi = tmax if hi == INF else max(min(math.floor(hi), tmax), tmin)
    ilo = min(ilo, ihi)  # no integer between two bounds in one unit interval
    if nn_dtype == "i8":
        return ctx.op("tosa.clamp", [x], {"min_val": ilo, "max_val": ihi})
    (wide,) = _int_operands(ctx, "clamp")
    a = Arith(ctx, "i32", ctx.type_of(wide).rank)
    return _from_i32(ctx, a.minimum(a.maximum(wide, max(ilo, -(1 << 31))), min(ihi, (1 << 31) - 1)))


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
    a = _float_arith(ctx, "leaky_relu")
    x = ctx.operands[0]
    return _negative_slope(ctx, x, ctx.scalar(float(ctx.attrs["alpha"]), _element(ctx), a.rank), strict=False)


@rule("nn.prelu", checks=(floating_point_operands,))
def prelu(ctx: LoweringContext) -> Value:
    _float_arith(ctx, "prelu")
    x, alpha = ctx.same_rank(*ctx.operands)
    return _negative_slope(ctx, x, alpha, strict=False)


@rule("nn.select")
def select(ctx: LoweringContext) -> Value:
    cond, x, y = ctx.same_rank(*ctx.operands)
    return ctx.op("tosa.select", [cond, x, y])


# ------------------------------------------------------------------------------ cast
@rule("nn.cast")
def cast(ctx: LoweringContext) -> Value:
    """nn.cast between any two non-quantized types TOSA can hold (see convert)."""
    _check_unquantized(ctx)
    return convert(ctx, ctx.operands[0], _nn_dtype(ctx, 0), ctx.nn_out_types[0].dtype)


def convert(ctx: LoweringContext, x: Value, src: str, dst: str) -> Value:
    """Convert x (TOSA-level storage of nn type `src`) to nn type `dst`, with nn.cast's semantics:
    float -> int rounds half to even and saturates to dst's range (unsigned ranges included);
    to bool is x != 0; unsigned sources are zero-extended; integer narrowing wraps."""
    t = ctx.type_of(x)
    low_dst = TOSA_ELEMENT_OF.get(dst, dst)
    a = Arith(ctx, t.dtype, t.rank)
    if t.dtype == low_dst:
        return x  # the same storage: i32 -> i64, ui8 -> i8 (bits kept), f64 -> f32, ...
    if low_dst == "i1":
        if t.dtype in FLOAT_TYPES:
            return a.negation(a.eq(x, 0.0))
        return ctx.cast(x, "i1")
    if t.dtype == "i1":
        if low_dst in FLOAT_TYPES:
            return Arith(ctx, low_dst, t.rank).select(x, 1.0, 0.0)
        return ctx.cast(x, low_dst)
    if t.dtype in FLOAT_TYPES and low_dst in FLOAT_TYPES:
        if {t.dtype, low_dst} == {"f16", "bf16"}:
            x = ctx.cast(x, "f32")
        return ctx.cast(x, low_dst)
    if t.dtype in FLOAT_TYPES:  # float -> integer
        if dst in UNSIGNED_WIDTH:  # clamp in f32: 16-bit floats cannot hold the bound 65535
            x = ctx.cast(x, "f32")
            a = Arith(ctx, "f32", t.rank)
            hi = float((1 << UNSIGNED_WIDTH[dst]) - 1) if UNSIGNED_WIDTH[dst] < 32 else 4294967040.0
            x = ctx.op("tosa.clamp", [x], {"min_val": 0.0, "max_val": hi})
            if UNSIGNED_WIDTH[dst] >= 32:  # the upper half lands on negative i32 bits
                x = a.select(a.ge(x, 2.0 ** 31), a.sub(x, 2.0 ** 32), x)
            return ctx.cast(ctx.cast(x, "i32"), low_dst)
        return ctx.cast(x, low_dst)
    # integer source
    if src in ("ui32", "ui64") and low_dst in FLOAT_TYPES:
        f = ctx.cast(x, "f32")
        fa = Arith(ctx, "f32", t.rank)
        return ctx.cast(fa.select(fa.lt(f, 0.0), fa.add(f, 2.0 ** 32), f), low_dst)
    wide = to_i32(ctx, x, src)
    return ctx.cast(wide, low_dst)
