"""Functions of one quantized tensor under litert semantics: one-op graphs lowered to TOSA, run on the
reference model over every input, against numpy models of TFLite's reference integer kernels written
here in plain integer arithmetic, independently of lowering/fixed_point/litert_kernels.py (only TFLite's constant
sigmoid table is shared: it is data). The quantizations are the LiteRT corpus files' and others; each
case also checks that CpuRef's float tabulation differs, so a lowering that ignored the semantics fails."""
from __future__ import annotations

import math

import numpy as np
import pytest

from test_quant import one_op, qtype, run
from tflite_kernels import mbqm, quantize_multiplier
from tflite_kernels import rdbpot as divide_by_pot
from tflite_kernels import srdhm as high_mul

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

F32 = np.float32


# ------------------------------------------------------------------------------ TFLite, independently
def tfl_hard_swish(v: int, xs: float, xz: int, ys: float, yz: int) -> int:
    hires = F32(1 / 128) * F32(xs)

    def m16(real):
        q, e = quantize_multiplier(float(real))
        return min((q + 32768) >> 16, 32767), e

    om, oe = m16(hires / F32(ys))
    rm, re = m16(hires / (F32(3) / F32(32768)))
    h = (v - xz) * 128
    pre = high_mul(h, om, 15)
    r = h
    if re > 0:
        r = max(-32768, min(32767, r << (re - 1)))
        r = max(-32768, min(32767, high_mul(r, rm, 15) << 1))
    else:
        r = divide_by_pot(high_mul(r, rm, 15), -re)
    r = (r + 32768) >> 1
    p = r * pre
    out = divide_by_pot(int(math.copysign(abs(p) >> 15, p)) if p else 0, -oe)
    return max(-128, min(127, out + yz))


def tfl_leaky_relu(v: int, xs: float, xz: int, ys: float, yz: int, alpha: float) -> int:
    d = v - xz
    q, e = quantize_multiplier(float(F32(xs) / F32(ys)) if d >= 0 else float(F32(xs) * F32(alpha) / F32(ys)))
    return max(-128, min(127, mbqm(d, q, e) + yz))


def tfl_abs(v: int, xs: float, xz: int, ys: float, yz: int) -> int:
    """elementwise.cc AbsEvalQuantized: |x - zp| times the float32 ratio of the scales unless they are equal."""
    d = abs(v - xz)
    if F32(xs) != F32(ys):
        d = mbqm(d, *quantize_multiplier(float(F32(xs) / F32(ys))))  # float / float, then widened
    return max(-128, min(127, d + yz))


def tfl_sqrt(v: int, xs: float, xz: int, ys: float, yz: int) -> int:
    out = np.sqrt(F32(xs) * F32(v - xz)) / F32(ys)
    return max(-128, min(127, int(out) + yz))  # int() truncates as the C cast does


def tfl_inv_sqrt(n: int) -> tuple[int, int]:
    """1 / sqrt(n) as (Q0.31 multiplier, left shift): Newton-Raphson in Q3.28, as TFLite iterates it."""
    if n <= 1:
        return 2 ** 31 - 1, 0
    shift = 11
    while n >= 2 ** 29:
        n, shift = n // 4, shift + 1
    pairs = (32 - n.bit_length() - 1) // 2 - 1
    n, shift = n << 2 * pairs, shift - pairs

    def sat(x):
        return max(-2 ** 31, min(2 ** 31 - 1, x))

    half = divide_by_pot(n >> 1, 1)
    x = 1 << 28
    for _ in range(5):
        cube = sat(high_mul(high_mul(x, x), x) << 6)
        x = sat((high_mul(3 << 27, x) - high_mul(half, cube)) << 3)
    x = high_mul(x, 1518500250)
    return (x << -shift, 0) if shift < 0 else (x, -shift)


def tfl_rsqrt(v: int, xs: float, xz: int, ys: float, yz: int) -> int:
    if v == xz:
        return 127
    inv, shift = tfl_inv_sqrt(v - xz)
    q, e = quantize_multiplier(1.0 / float(F32(np.sqrt(F32(xs))) * F32(ys)))
    return max(-128, min(127, mbqm(mbqm(1, inv, shift + 20), q, e - 20) + yz))


def tfl_lut(v: int, xs: float, xz: int, ys: float, yz: int, fn) -> int:
    """LUTPopulate<int8_t>: float32 function times the float32 reciprocal of the scale, rounded away."""
    y = float(F32(fn(F32(xs) * F32(v - xz))) * (F32(1) / F32(ys)))
    return max(-128, min(127, int(math.copysign(math.floor(abs(y) + 0.5), y)) + yz))


def tfl_int16_sigmoid_tanh(v: int, xs: float, tanh: bool) -> int:
    """reference_integer_ops Logistic / Tanh for int16 (output scale 2**-15)."""
    from nn2tosa.lowering.fixed_point.litert_kernels import _SIGMOID_TABLE as table

    log2 = F32(np.log(F32(xs))) * (F32(1) / F32(np.log(F32(2))))
    rounded = F32(math.copysign(math.floor(abs(float(log2)) + 0.5), float(log2)))
    left = 12 + int(rounded)
    if abs(log2 - rounded) < F32(1e-3) and left in ((0, 1) if tanh else (0,)):
        mult, shift = 3 << left, 0
    else:
        mult, shift = float(F32(xs)) * 4096.0 * 3.0, 0
        while mult <= 32767 / 2 and shift <= 30:
            mult, shift = mult * 2, shift + 1
        mult = int(mult)
    s = (v * mult + ((1 << (shift - 1)) if shift else 0)) >> shift
    a, bits = abs(s), (8 if tanh else 9)
    i = a >> bits
    if i >= 255:
        r = (0xFFFF << 8) if tanh else (0x7FFF << 10)
    else:
        r = (int(table[i]) << bits) + (a & ((1 << bits) - 1)) * (int(table[i + 1]) - int(table[i]))
    if tanh:
        r = (r - (1 << 23) + 128) if s >= 0 else (-r + (1 << 23) + 127)
        return r >> 8
    return ((r + 512) if s >= 0 else ((1 << 25) - r + 511)) >> 10


# ------------------------------------------------------------------------------ lowered, every input
V8 = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
V16 = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)


def lowered(op: str, x: tuple[float, int], y: tuple[float, int], semantics: str, attrs: dict | None = None,
            dtype: str = "i8") -> np.ndarray:
    v = V8 if dtype == "i8" else V16
    g = one_op(op, {"x": qtype(v.shape, dtype, *x)}, qtype(v.shape, dtype, *y), attrs)
    (got,), _ = run(g, [v], semantics=semantics)
    return got.astype(np.int64).reshape(-1)


def sigmoid(r):
    return F32(1) / (F32(1) + np.exp(-r))


# op, attrs, model, x (scale, zp), y (scale, zp), whether CpuRef's float table differs there (rsqrt's fixed point
# and the float32 LUTs' multiplication by the reciprocal rarely land elsewhere than CpuRef's rounding). The first
# case of each op is its LiteRT corpus file's quantization.
CASES_8 = [
    ("nn.hard_swish", None, tfl_hard_swish, (0.03136995807290077, -1), (0.01715676113963127, -106), True),
    ("nn.hard_swish", None, tfl_hard_swish, (0.1898325905331743, -65), (0.08581863689656999, -49), True),
    ("nn.leaky_relu", {"alpha": 0.2}, lambda v, *q: tfl_leaky_relu(v, *q, 0.2),
     (0.007842489518225193, -1), (0.004705732688307762, -86), True),
    ("nn.leaky_relu", {"alpha": 0.3}, lambda v, *q: tfl_leaky_relu(v, *q, 0.3), (0.10334068, 65), (0.0305436, 115),
     False),
    ("nn.abs", None, tfl_abs, (0.007842489518225193, -1), (0.003921543247997761, -128), False),
    ("nn.abs", None, tfl_abs, (0.0305436, 65), (0.05334068, -115), False),
    ("nn.abs", None, tfl_abs, (0.05, 3), (0.05, -20), False),
    ("nn.sqrt", None, tfl_sqrt, (0.015686223283410072, -128), (0.00784312468022108, -128), True),
    ("nn.sqrt", None, tfl_sqrt, (0.06728688, -13), (0.06203258, 73), True),
    ("nn.rsqrt", None, tfl_rsqrt, (0.01568622514605522, -128), (0.012381935492157936, -128), False),
    ("nn.rsqrt", None, tfl_rsqrt, (0.16588511, -63), (0.11081955, -24), False),
    ("nn.sigmoid", None, lambda v, *q: tfl_lut(v, *q, sigmoid), (0.03136995807290077, -1), (1 / 256, -128), False),
    ("nn.exp", None, lambda v, *q: tfl_lut(v, *q, np.exp), (0.09512170, -65), (0.04521601, -49), False),
]


@pytest.mark.parametrize("op,attrs,model,x,y,cpuref_differs", CASES_8,
                         ids=[f"{c[0]}-{c[3][0]:.3g}" for c in CASES_8])
def test_int8_function_is_tflites_kernel_on_every_input(op, attrs, model, x, y, cpuref_differs):
    x, y = (float(F32(x[0])), x[1]), (float(F32(y[0])), y[1])
    inputs = V8.reshape(-1).astype(np.int64)
    valid = inputs >= x[1] if op in ("nn.sqrt", "nn.rsqrt") else np.ones(inputs.shape, bool)  # TFLite rejects x < zp
    want = np.array([model(int(v), *x, *y) if ok else 0 for v, ok in zip(inputs, valid)])
    got = lowered(op, x, y, "litert", attrs)
    np.testing.assert_array_equal(got[valid], want[valid])
    assert (lowered(op, x, y, "cpuref", attrs)[valid] != want[valid]).any() == cpuref_differs


@pytest.mark.parametrize("op,scale", [("nn.sigmoid", 0.00012207325198687613), ("nn.tanh", 9.15549389901571e-05),
                                      ("nn.sigmoid", 2.0 ** -12), ("nn.tanh", 2.0 ** -11)])
def test_int16_sigmoid_and_tanh_are_tflites_fixed_point_on_every_input(op, scale):
    x, y = (float(F32(scale)), 0), (2.0 ** -15, 0)
    want = np.array([tfl_int16_sigmoid_tanh(int(v), x[0], op == "nn.tanh") for v in V16.reshape(-1)])
    got = lowered(op, x, y, "litert", dtype="i16")
    np.testing.assert_array_equal(got, want)
    assert (lowered(op, x, y, "cpuref", dtype="i16") != want).any()


def tfl_lut16(fn, xs: float, ys: float) -> np.ndarray:
    """LUTPopulate<int16_t> (zero points 0) then LUTLookup for every int16 input, in float32 scalars."""
    lo, hi = F32(xs) * F32(-32768), F32(xs) * F32(32767)
    out_range = F32(ys) * F32(32767) - F32(ys) * F32(-32768)
    step, inv = (hi - lo) / F32(512), F32(65536) / out_range

    def rnd(t):
        return F32(math.copysign(math.floor(abs(float(t)) + 0.5), float(t)))

    lut = []
    for i in range(512):
        a, m, b = (F32(fn(F32(t))) for t in (lo + F32(i) * step, lo + F32(i) * step + step / F32(2),
                                              lo + F32(i + 1) * step))
        sample = rnd(a * inv)
        err = rnd((b * inv + sample) / F32(2)) - rnd(m * inv)
        lut.append(int(min(max(sample - rnd(err / F32(2)), -32768), 32767)))
    lut.append(int(min(max(rnd(F32(fn(hi)) * inv), -32768), 32767)))
    out = []
    for v in range(-32768, 32768):
        i, f = 256 + (v >> 7), v & 0x7F
        out.append(lut[i] + (((lut[i + 1] - lut[i]) * f + 64) >> 7))
    return np.array(out)


@pytest.mark.parametrize("op,fn,xs,ys", [
    ("nn.exp", np.exp, 1e-4, 1e-3),
    ("nn.log", lambda t: np.log(t) if t > 0 else F32(-32768) * F32(3.0517578125e-4), 2.0 ** -11, 3.0517578125e-4),
    ("nn.rsqrt", lambda t: F32(1) / np.sqrt(t) if t > 0 else F32(32767) * F32(2.0 ** -10), 3.0518e-05, 2.0 ** -10),
])
def test_int16_lut_functions_are_one_tflite_table(op, fn, xs, ys):
    """TFLite's int16 exp, log, rsqrt interpolate a 513-entry table exactly as TOSA's TABLE does."""
    x, y = (float(F32(xs)), 0), (float(F32(ys)), 0)
    with np.errstate(all="ignore"):
        want = tfl_lut16(fn, *[float(F32(s)) for s in (xs, ys)])
    g = one_op(op, {"x": qtype(V16.shape, "i16", *x)}, qtype(V16.shape, "i16", *y))
    (got,), low = run(g, [V16], semantics="litert")
    valid = V16.reshape(-1) >= 0 if op == "nn.rsqrt" else np.ones(want.shape, bool)  # TFLite rejects x < 0
    np.testing.assert_array_equal(got.astype(np.int64).reshape(-1)[valid], want[valid])
    assert "tosa.table" in low.histogram() and "tosa.gather" not in low.histogram()
    (cpuref,), _ = run(one_op(op, {"x": qtype(V16.shape, "i16", *x)}, qtype(V16.shape, "i16", *y)), [V16])
    assert (cpuref.astype(np.int64).reshape(-1)[valid] != want[valid]).any()


def tfl_int16_linear(op: str, v: int, xs: float, ys: float, alpha: float = 0.0) -> int:
    """TFLite's int16 requantize, abs, relu, leaky_relu (zero points 0): MultiplyByQuantizedMultiplier."""
    ratio = float(F32(xs) / F32(ys))
    if op == "nn.requantize":
        out = mbqm(v, *quantize_multiplier(xs / ys))
    elif op == "nn.abs":
        out = abs(v) if F32(xs) == F32(ys) else mbqm(abs(v), *quantize_multiplier(ratio))
    elif op == "nn.relu":
        out = max(0, mbqm(v, *quantize_multiplier(ratio)))
    else:
        a = float(F32(xs) * F32(alpha) / F32(ys))
        out = mbqm(v, *quantize_multiplier(ratio)) if v >= 0 else int(math.copysign(1, a)) * mbqm(
            v, *quantize_multiplier(abs(a)))
    return max(-32768, min(32767, out))


@pytest.mark.parametrize("op,alpha,xs,ys,cpuref_differs", [
    ("nn.requantize", 0.0, 2.0 ** -15, 2.0 ** -14, True),  # halving: negative halves round up, not away from zero
    ("nn.abs", 0.0, 2.0 ** -15, 2.0 ** -14, False),
    ("nn.relu", 0.0, 3e-4, 2e-4, False),
    ("nn.leaky_relu", 0.2, 3.0518e-05, 2.1e-05, True),  # float32 multipliers (not double ones)
    ("nn.leaky_relu", -0.3, 2.0 ** -15, 2.0 ** -15, True),
])
def test_int16_piecewise_linear_functions_are_tflites_rescales(op, alpha, xs, ys, cpuref_differs):
    x, y = (float(F32(xs)), 0), (float(F32(ys)), 0)
    want = np.array([tfl_int16_linear(op, int(v), x[0], y[0], alpha) for v in V16.reshape(-1)])
    attrs = {"alpha": alpha} if op == "nn.leaky_relu" else None
    got = lowered(op, x, y, "litert", attrs, dtype="i16")
    np.testing.assert_array_equal(got, want)
    assert (lowered(op, x, y, "cpuref", attrs, dtype="i16") != want).any() == cpuref_differs


@pytest.mark.parametrize("x,y", [((2.5e-4, 3), (1e-4, 0)), ((0.0235, 5), (3.1e-5, 0)), ((0.01, -128), (0.02, 0))])
def test_int8_to_int16_requantize_is_tflites_rescale(x, y):
    """TFLite's Requantize (QUANTIZE of int8 data to int16): MultiplyByQuantizedMultiplier of x - zp by the
    double ratio of the scales, one RESCALE (not a 256-entry GATHER, which Ethos-U55 cannot run)."""
    g = one_op("nn.requantize", {"x": qtype(V8.shape, "i8", *x)}, qtype(V8.shape, "i16", *y))
    (got,), low = run(g, [V8], semantics="litert")
    multiplier, shift = quantize_multiplier(x[0] / y[0])
    want = [max(-32768, min(32767, mbqm(int(v) - x[1], multiplier, shift) + y[1])) for v in V8.reshape(-1)]
    np.testing.assert_array_equal(got.astype(np.int64).reshape(-1), want)
    assert "tosa.gather" not in low.histogram() and "tosa.rescale" in low.histogram()


@pytest.mark.parametrize("alpha,xs,ys,extremum", [(0.2, 3.0518e-05, 2.1e-05, "tosa.maximum"),
                                                  (-0.3, 2.0 ** -15, 2.0 ** -15, "tosa.maximum"),
                                                  (1.5, 3e-4, 5e-4, "tosa.minimum")])
def test_int16_leaky_relu_picks_its_branch_without_select(alpha, xs, ys, extremum):
    """TFLite's int16 leaky relu chooses between its two rescaled branches by the sign of x - zp; where
    MAXIMUM (alpha below 1) or MINIMUM (above) of them is that choice on every input, no SELECT."""
    x, y = (float(F32(xs)), 0), (float(F32(ys)), 0)
    want = np.array([tfl_int16_linear("nn.leaky_relu", int(v), x[0], y[0], alpha) for v in V16.reshape(-1)])
    g = one_op("nn.leaky_relu", {"x": qtype(V16.shape, "i16", *x)}, qtype(V16.shape, "i16", *y), {"alpha": alpha})
    (got,), low = run(g, [V16], semantics="litert")
    np.testing.assert_array_equal(got.astype(np.int64).reshape(-1), want)
    ops = low.histogram()
    assert extremum in ops and "tosa.select" not in ops and "tosa.greater_equal" not in ops


def test_every_int8_kernel_says_how_the_semantics_differ():
    """An op with a model of its own TFLite kernel declares its DIFFERENCES row beside it (semantics.differs)."""
    import nn2tosa.lowering.rules  # noqa: F401  (registers the kernels and their rows)
    from nn2tosa.lowering.fixed_point.litert_kernels import INT8_KERNELS
    from nn2tosa.lowering.semantics import DIFFERENCES

    if not INT8_KERNELS:
        pytest.skip("no op has a model of its own TFLite int8 kernel")
    assert [op for op in INT8_KERNELS if op.removeprefix("nn.") not in DIFFERENCES] == []
