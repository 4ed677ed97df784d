"""The building blocks of the elementwise math rules (math.py, division.py, activations.py, cast.py,
and norm, reduce, shape): the `Arith` helper, which keeps each decomposition close to the formula it
implements, the element types, the support conditions the rules share, and the integer helpers
(operands as i32, results narrowed back).
"""
from __future__ import annotations

import math

from nn2tosa.ir import Value

from ..context import LoweringContext, float_rule_unquantized

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

    # arithmetic
    def add(self, x: Operand, y: Operand) -> Value:
        return self.ctx.tosa.add(self.v(x), self.v(y))

    def sub(self, x: Operand, y: Operand) -> Value:
        return self.ctx.tosa.sub(self.v(x), self.v(y))

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
        return self.mul(self.mul(x, s), self.reciprocal(self.mul(y, s)))

    def neg(self, x: Operand) -> Value:
        return self.ctx.negate(self.v(x))

    def maximum(self, x: Operand, y: Operand) -> Value:
        return self.ctx.tosa.maximum(self.v(x), self.v(y))

    def minimum(self, x: Operand, y: Operand) -> Value:
        return self.ctx.tosa.minimum(self.v(x), self.v(y))

    def reciprocal(self, x: Operand) -> Value:
        return self.ctx.tosa.reciprocal(self.v(x))

    def clamp(self, x: Value, lo: float, hi: float) -> Value:
        """Float clamp (TOSA CLAMP's bounds are attributes in the operand's type)."""
        return self.ctx.tosa.clamp(x, min_val=float(lo), max_val=float(hi))

    def abs(self, x: Operand) -> Value:
        return self.ctx.tosa.abs(self.v(x))

    def floor(self, x: Operand) -> Value:
        return self.ctx.tosa.floor(self.v(x))

    def ceiling(self, x: Operand) -> Value:
        return self.ctx.tosa.ceil(self.v(x))

    def truncate(self, x: Value) -> Value:
        """x rounded toward zero (a C float -> int conversion): x < 0 ? ceil(x) : floor(x)."""
        return self.select(self.lt(x, 0.0), self.ceiling(x), self.floor(x))

    def exp(self, x: Operand) -> Value:
        return self.ctx.tosa.exp(self.v(x))

    def log(self, x: Operand) -> Value:
        return self.ctx.tosa.log(self.v(x))

    def rsqrt(self, x: Operand) -> Value:
        return self.ctx.tosa.rsqrt(self.v(x))

    def sin(self, x: Operand) -> Value:
        return self.ctx.tosa.sin(self.v(x))

    def cos(self, x: Operand) -> Value:
        return self.ctx.tosa.cos(self.v(x))

    def tanh(self, x: Operand) -> Value:
        return self.ctx.tosa.tanh(self.v(x))

    def erf(self, x: Operand) -> Value:
        return self.ctx.tosa.erf(self.v(x))

    def sqrt(self, x: Operand) -> Value:
        """1 / rsqrt(x): exact at 0 (1/inf) and inf (1/0), NaN below 0."""
        return self.reciprocal(self.ctx.tosa.rsqrt(self.v(x)))

    # comparisons and choice
    def gt(self, x: Operand, y: Operand) -> Value:
        return self.ctx.tosa.greater(self.v(x), self.v(y))

    def ge(self, x: Operand, y: Operand) -> Value:
        return self.ctx.tosa.greater_equal(self.v(x), self.v(y))

    def lt(self, x: Operand, y: Operand) -> Value:
        return self.ctx.tosa.greater(self.v(y), self.v(x))

    def eq(self, x: Operand, y: Operand) -> Value:
        return self.ctx.tosa.equal(self.v(x), self.v(y))

    def same(self, p: Value, q: Value) -> Value:
        """p == q on booleans (TOSA EQUAL has no i1 form)."""
        return self.negation(self.ctx.tosa.logical_xor(p, q))

    def both(self, p: Value, q: Value) -> Value:
        return self.ctx.tosa.logical_and(p, q)

    def either(self, p: Value, q: Value) -> Value:
        return self.ctx.tosa.logical_or(p, q)

    def negation(self, p: Value) -> Value:
        return self.ctx.tosa.logical_not(p)

    def select(self, cond: Value, x: Operand, y: Operand) -> Value:
        c, a, b = self.ctx.same_rank(cond, self.v(x), self.v(y))
        return self.ctx.tosa.select(c, a, b)

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
        return self.either(self.lt(x, 0.0), self.lt(self.reciprocal(x), 0.0))

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
        core = self.ctx.tosa.pow(self.select(regular, ax, 1.0), self.select(regular, y, 1.0))
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
        t = self.select(far, self.neg(self.reciprocal(a)),
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


def check_unquantized(ctx: LoweringContext) -> None:
    ctx.check(float_rule_unquantized)


def floating_point_operands(ctx: LoweringContext, what: str) -> str | None:
    """The operand is floating point (the op is computed on floats only)."""
    if operand_dtype(ctx) not in FLOAT_TYPES:
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
    if operand_dtype(ctx) == "i1":
        return "clamp of booleans"
    return None


def operand_dtype(ctx: LoweringContext, k: int = 0) -> str:
    return ctx.type_of(ctx.operands[k]).dtype


def result_dtype(ctx: LoweringContext) -> str:
    return ctx.out_types[0].dtype


def float_arith(ctx: LoweringContext, what: str) -> Arith:
    """The f32 Arith of a float op (unsupported for other element types)."""
    check_unquantized(ctx)
    ctx.check(floating_point_operands, what)
    dtype = operand_dtype(ctx)
    return Arith(ctx, COMPUTE_TYPE[dtype], ctx.out_types[0].rank)


def in_compute_type(ctx: LoweringContext, a: Arith, *xs: Value) -> list[Value]:
    return [ctx.cast(x, a.dtype) for x in xs]


# ------------------------------------------------------------------------------ integer helpers
def nn_in_dtype(ctx: LoweringContext, k: int) -> str:
    return ctx.nn_in_types[k].dtype


def to_i32(ctx: LoweringContext, x: Value, nn_dtype: str) -> Value:
    """An integer operand as i32 holding its value: unsigned 8/16-bit data (stored as the same bits
    in i8/i16) is zero-extended, not sign-extended."""
    wide = ctx.cast(x, "i32")
    width = UNSIGNED_WIDTH.get(nn_dtype)
    if width in (8, 16):
        wide = ctx.tosa.bitwise_and(wide, ctx.scalar((1 << width) - 1, "i32", ctx.type_of(wide).rank))
    return wide


def int_operands(ctx: LoweringContext, what: str) -> list[Value]:
    """The operands as i32 values (see to_i32); unsigned 32/64-bit values do not fit i32 arithmetic."""
    check_unquantized(ctx)
    ctx.check(integers_fit_i32, what)
    xs = [to_i32(ctx, x, t.dtype) for x, t in zip(ctx.operands, ctx.nn_in_types)]
    return ctx.same_rank(*xs)


def from_i32(ctx: LoweringContext, x: Value) -> Value:
    """An i32 result narrowed (wrapping, as nn integer arithmetic does) to the op's result type."""
    return ctx.cast(x, result_dtype(ctx))


def two_product(a: Arith, x: Value, y: Value) -> tuple[Value, Value]:
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
