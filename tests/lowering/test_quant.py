"""Quantized lowering (lowering/fixed_point/, lowering/rules/): multiplier/shift golden
values, TABLE contents against a direct numpy computation of Arm NN's semantics, and small
quantized graphs lowered to TOSA, run on the reference model and compared with an independent
numpy model of CpuRef (decode to float32, compute, encode rounding half away from zero)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from nn2tosa.ir import Builder, Graph, Loc, Quant, TensorType
from nn2tosa.lowering.fixed_point.carrier import QInfo, qinfo
from nn2tosa.lowering.fixed_point.rescale import multiplier_shift
from nn2tosa.lowering.fixed_point.tables import table_i8, table_i16
from nn2tosa.passes.context import PassContext

from lowering_harness import lower, run_reference_model

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")


# ------------------------------------------------------------------------------ Arm NN, independently
def armnn_decode(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """CpuRef's Dequantize: (q - zp) * scale in float32."""
    return (np.asarray(q, np.int64) - zero_point).astype(np.float32) * np.float32(scale)


def armnn_encode(real: np.ndarray, scale: float, zero_point: int, lo: int, hi: int) -> np.ndarray:
    """CpuRef's Quantize: C round() (halves away from zero) of real / scale in float32, + zp, clamped;
    NaN passes its clamp and converts to 0 (x86-64)."""
    with np.errstate(all="ignore"):
        v = (np.asarray(real, np.float32) / np.float32(scale)).astype(np.float64)
    rounded = np.sign(v) * np.floor(np.abs(v) + 0.5)
    return np.where(np.isnan(v), 0, np.clip(np.nan_to_num(rounded) + zero_point, lo, hi)).astype(np.int64)


RANGE = {"i8": (-128, 127), "ui8": (0, 255), "i16": (-32768, 32767)}


def qtype(shape: tuple[int, ...], dtype: str, scale: float, zero_point: int = 0) -> TensorType:
    return TensorType(shape, dtype, Quant((scale,), (zero_point,)))


def run(graph: Graph, inputs: list[np.ndarray], semantics: str = "cpuref",
        target: str | None = None) -> tuple[list[np.ndarray], Graph]:
    """Lower with `semantics` (this module's models are CpuRef's) for the NPU `target` (None: none), check
    strict tosa-validate for the reported target, run on the reference model."""
    from nn2tosa.dialects.tosa import with_distinct_outputs
    from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
    from nn2tosa.lowering.mlir_emitter import to_mlir, validate
    from nn2tosa.dialects.tosa_target import required_target

    low = lower(graph, PassContext(semantics, target))
    target = required_target(with_distinct_outputs(low))
    assert not target.problems, target.problems
    assert validate(to_mlir(low, target=target), target) == []
    return run_reference_model(bytes(build_flatbuffer(low)), inputs), low


def boundary(a: np.ndarray) -> np.ndarray:
    """What a TOSA graph input holds for uint8 data: the same bits as int8."""
    return a.view(np.int8) if a.dtype == np.uint8 else a


# ------------------------------------------------------------------------------ multiplier and shift
@pytest.mark.parametrize("scale,want", [
    (0.015678688883781433 * 0.1 / 0.078431375324726104, (1373724854, 36)),  # FORMATS.md golden values
    (0.015678688883781433 * 2.1 / 0.078431375324726104, (1803013871, 32)),
    (1.0, (1 << 30, 30)),
    (0.5, (1 << 30, 31)),
    (1 - 2.0 ** -40, (1 << 30, 30)),  # the mantissa rounds up to 2**31: halved, exponent + 1
    (0.0, (0, 2)),
    (0.5 + 2.0 ** -32, ((1 << 30) + 1, 31)),  # mantissa * 2**31 is 2**30 + 1/2: TFLite rounds it up, not to even
])
def test_multiplier_shift_golden_values(scale, want):
    assert multiplier_shift(scale) == want
    multiplier, shift = want
    if multiplier:
        assert abs(multiplier * 2.0 ** -shift / scale - 1) < 2.0 ** -30


def test_sixteen_bit_multiplier_and_limits():
    assert multiplier_shift(1.0, scale32=False) == (1 << 14, 14)
    m, s = multiplier_shift(0.1, scale32=False)
    assert m < 1 << 15 and abs(m * 2.0 ** -s / 0.1 - 1) < 2.0 ** -14
    assert multiplier_shift(2.0 ** -70)[1] == 62  # tiny scales keep TOSA's largest shift
    with pytest.raises(ValueError):
        multiplier_shift(2.0 ** 40)  # would need a shift below 2
    with pytest.raises(ValueError):
        multiplier_shift(-1.0)


def test_unsigned_tensors_are_carried_as_signed_minus_128():
    q = qinfo(qtype((2,), "ui8", 0.5, 130))
    assert (q.dtype, q.zero_point, q.offset, q.qmin, q.qmax) == ("i8", 2, 128, -128, 127)
    assert qinfo(qtype((2,), "i16", 0.5, 0)).offset == 0


# ------------------------------------------------------------------------------ TABLE contents
FUNCTIONS = {
    "sigmoid": lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)),
    "tanh": np.tanh,
    "elu": lambda x: np.where(x > 0, x, np.expm1(x)).astype(np.float32),
    "hard_swish": lambda x: x * np.clip(x + np.float32(3), 0, 6) / np.float32(6),
    "exp": np.exp,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype,scale,zp,out_scale,out_zp", [
    ("i8", 0.0313725, 0, 1 / 256, -128), ("ui8", 0.05, 128, 0.02, 100), ("i8", 0.1, -20, 0.07, 3)])
def test_i8_table_is_the_source_result_for_every_input(name, dtype, scale, zp, out_scale, out_zp):
    fn = FUNCTIONS[name]
    x = qinfo(qtype((1,), dtype, scale, zp))
    y = qinfo(qtype((1,), dtype, out_scale, out_zp))
    table = table_i8(fn, x, y)
    stored = np.arange(RANGE[dtype][0], RANGE[dtype][1] + 1)  # table index order: carried -128..127
    with np.errstate(all="ignore"):
        want = armnn_encode(fn(armnn_decode(stored, scale, zp)), out_scale, out_zp, *RANGE[dtype])
    offset = 128 if dtype == "ui8" else 0
    np.testing.assert_array_equal(table.astype(np.int64) + offset, want)


def tosa_table_i16(entries: np.ndarray, x: np.ndarray) -> np.ndarray:
    """TOSA TABLE on i16 data, from the specification's pseudo-code."""
    index = (x.astype(np.int64) + 32768) >> 7
    fraction = (x.astype(np.int64) + 32768) & 0x7F
    base = entries.astype(np.int64)[index]
    return base * 128 + (entries.astype(np.int64)[index + 1] - base) * fraction


V16 = np.arange(-32768, 32768)
I16_CASES = {
    # the identity: exact but for the last segment, whose end knot (32768) does not fit an int16 entry
    "identity": (lambda r: r, 1 / 32768, 1 / 32768, lambda miss: bool(np.all(V16[miss] >= 32640))),
    # exact halves: RESCALE rounds them up, Arm NN away from zero (the negative odd inputs)
    "half": (lambda r: r * np.float32(0.5), 1 / 32768, 1 / 32768,
             lambda miss: np.array_equal(V16[miss], V16[(V16 < 0) & (V16 % 2 == 1)])),
    # curvature between the knots: a unit off here and there
    "tanh": (np.tanh, 9.155552834272385e-05, 3.0518509447574615e-05, lambda miss: 0 < miss.sum() < 65536 // 4),
    # the infinite slope at 0: far off
    "sqrt": (np.sqrt, 1e-4, 1e-4, lambda miss: miss.sum() > 0),
}


@pytest.mark.parametrize("case", sorted(I16_CASES))
def test_i16_table_reports_how_far_it_is_from_the_source(case):
    fn, x_scale, y_scale, expected_misses = I16_CASES[case]
    table = table_i16(fn, qinfo(qtype((1,), "i16", x_scale)), qinfo(qtype((1,), "i16", y_scale)))
    raw = sum(tosa_table_i16(e, V16) * (256 if len(table.entries) == 2 and i == 0 else 1)
              for i, e in enumerate(table.entries))
    got = np.clip((raw + (1 << (table.shift - 1))) >> table.shift, -32768, 32767)
    with np.errstate(all="ignore"):
        want = armnn_encode(fn(armnn_decode(V16, x_scale, 0)), y_scale, 0, -32768, 32767)
    error = np.abs(got - want)
    assert (table.misses, table.worst) == (int((error != 0).sum()), int(error.max()))
    assert expected_misses(error != 0)
    assert (table.worst > 1) == (case == "sqrt")


# ------------------------------------------------------------------------------ lowered graphs
def one_op(op: str, inputs: dict[str, TensorType], out: TensorType, attrs: dict | None = None) -> Graph:
    g = Graph()
    values = [g.add_input(t, name) for name, t in inputs.items()]
    g.add_output(Builder(g, Loc(op)).op(op, values, attrs or {}, types=[out]), "y")
    return g


def test_add_of_uint8_tensors_with_different_scales():
    a_t, b_t, y_t = qtype((256, 16), "ui8", 0.0157, 120), qtype((1, 16), "ui8", 0.0402, 7), qtype((256, 16), "ui8", 0.05, 90)
    a = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 16, axis=1)
    b = np.linspace(0, 255, 16).astype(np.uint8)[None, :]
    (got,), low = run(one_op("nn.add", {"a": a_t, "b": b_t}, y_t), [boundary(a), boundary(b)])
    want = armnn_encode(armnn_decode(a, 0.0157, 120) + armnn_decode(b, 0.0402, 7), 0.05, 90, 0, 255)
    diff = np.abs(got.view(np.uint8).astype(np.int64).reshape(want.shape) - want)
    assert diff.max() <= 1 and (diff == 0).mean() > 0.99  # float32 sums near a half may round the other way
    # uint8 stays uint8 only at the boundary: RESCALE input_unsigned / output_unsigned there
    rescales = [low.attrs(n) for n in low.nodes() if low.op(n) == "tosa.rescale"]
    assert sum(r["input_unsigned"] for r in rescales) == 2 and sum(r["output_unsigned"] for r in rescales) == 1


def test_mul_and_comparison_of_int8():
    a_t, b_t = qtype((64, 8), "i8", 0.031, -5), qtype((64, 8), "i8", 0.027, 11)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (64, 8)).astype(np.int8)
    b = rng.integers(-128, 128, (64, 8)).astype(np.int8)
    (prod,), _ = run(one_op("nn.mul", {"a": a_t, "b": b_t}, qtype((64, 8), "i8", 0.02, 3)), [a, b])
    want = armnn_encode(armnn_decode(a, 0.031, -5) * armnn_decode(b, 0.027, 11), 0.02, 3, -128, 127)
    np.testing.assert_array_equal(prod.astype(np.int64).reshape(want.shape), want)
    (greater,), _ = run(one_op("nn.greater", {"a": a_t, "b": b_t}, TensorType((64, 8), "i1")), [a, b])
    np.testing.assert_array_equal(greater.reshape(a.shape), armnn_decode(a, 0.031, -5) > armnn_decode(b, 0.027, 11))


@pytest.mark.parametrize("op,fn", [("nn.sigmoid", FUNCTIONS["sigmoid"]), ("nn.tanh", np.tanh)])
def test_int16_functions_are_exact_on_every_input(op, fn):
    x_t, y_t = qtype((256, 256), "i16", 9.155552834272385e-05), qtype((256, 256), "i16", 3.0518509447574615e-05)
    x = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)
    (got,), _ = run(one_op(op, {"x": x_t}, y_t), [x])
    want = armnn_encode(fn(armnn_decode(x, 9.155552834272385e-05, 0)), 3.0518509447574615e-05, 0, -32768, 32767)
    np.testing.assert_array_equal(got.astype(np.int64).reshape(want.shape), want)


def test_int16_requantization_rounds_halves_away_from_zero():
    """Halving int16 data gives an exact half for every odd input: Arm NN rounds it away from zero,
    TOSA's RESCALE up, so the lowering rescales |x| and puts the sign back."""
    x = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)
    g = one_op("nn.requantize", {"x": qtype(x.shape, "i16", 1 / 32768)}, qtype(x.shape, "i16", 2 / 32768))
    (got,), low = run(g, [x])
    assert "tosa.abs" in low.histogram()
    want = armnn_encode(armnn_decode(x, 1 / 32768, 0), 2 / 32768, 0, -32768, 32767)
    np.testing.assert_array_equal(got.astype(np.int64).reshape(want.shape), want)


def test_ties_are_detected_from_the_multiplier_bits():
    from nn2tosa.lowering.fixed_point.rescale import ties_possible

    assert ties_possible(0.5, 255) and ties_possible(1 / 8, 255) and ties_possible(0.75, 3)
    assert not ties_possible(1.0, 1 << 20)  # an integer factor never makes a half
    assert not ties_possible(0.0156862745, 1 << 20)  # a 24-bit mantissa needs huge values for an exact half
    assert not ties_possible(2.0 ** -20, 1000)  # halves need values of at least 2**19


def test_float_island_between_dequantize_and_quantize_is_one_table():
    """legalize-armnn's Linear activation: dequantize, a * x + b in f32, quantize."""
    g = Graph()
    x = g.add_input(qtype((16, 16), "i8", 0.05, 10), "x")
    b = Builder(g, Loc("linear"))
    real = b.op("nn.dequantize", [x], types=[TensorType((16, 16), "f32")])
    scaled = b.op("nn.mul", [real, b.constant(np.float32(1.7))], types=[TensorType((16, 16), "f32")])
    shifted = b.op("nn.add", [scaled, b.constant(np.float32(-0.3))], types=[TensorType((16, 16), "f32")])
    g.add_output(b.op("nn.quantize", [shifted], types=[qtype((16, 16), "i8", 0.08, -4)]), "y")
    v = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    (got,), low = run(g, [v])
    assert set(low.histogram()) <= {"tosa.const", "tosa.table"}
    want = armnn_encode(armnn_decode(v, 0.05, 10) * np.float32(1.7) + np.float32(-0.3), 0.08, -4, -128, 127)
    np.testing.assert_array_equal(got.astype(np.int64).reshape(want.shape), want)


# Arm NN Cast between quantized and integer types: stored value -> stored value
CAST_TYPES = {"qs8": ("i8", 0.05, 3), "qu8": ("ui8", 0.07, 130), "qsymms8": ("i8", 0.04, 0), "qs16": ("i16", 0.001, 0),
              "s32": ("i32", None, 0)}
STORED = {"i8": np.int8, "ui8": np.uint8, "i16": np.int16, "i32": np.int32}


def refcast(stored: np.ndarray, dst: str) -> np.ndarray:
    """CpuRef's Cast: it resets both tensors' quantization to scale 1, offset 0, so the stored value is
    read as a float32 and written back: a quantized result rounds it half away from zero and
    saturates (armnn::Quantize), a Signed32 one truncates it (static_cast<int32_t>)."""
    real = np.asarray(stored).astype(np.float32).astype(np.float64)
    if dst == "i32":
        return np.trunc(real).astype(np.int64)
    info = np.iinfo(STORED[dst])
    return np.clip(np.sign(real) * np.floor(np.abs(real) + 0.5), info.min, info.max).astype(np.int64)


def cast_input(dtype: str) -> np.ndarray:
    """Every stored value of an 8/16-bit type; Signed32: small values and extremes float32 cannot hold
    exactly (CpuRef reads them as float32 first)."""
    if dtype != "i32":
        info = np.iinfo(STORED[dtype])
        return np.arange(info.min, info.max + 1).astype(STORED[dtype])
    extremes = [2**31 - 1, -2**31, 2**24 + 1, -(2**24 + 1), 40000, -40000, 300, -300, 129, -129]
    return np.concatenate([np.arange(-1000, 1000), extremes]).astype(np.int32)


@pytest.mark.parametrize("semantics", ["cpuref", "litert"])
@pytest.mark.parametrize("src,dst", [(a, b) for a in CAST_TYPES for b in CAST_TYPES if a != b])
def test_armnn_cast_between_integer_types_keeps_stored_values(src, dst, semantics):
    """QSymmS16 -> Signed32 among them (an exact CAST, not a refusal); LiteRT's CAST also converts
    stored values, so both semantics give the same integers."""
    from nn2tosa.passes import PassManager

    x = cast_input(CAST_TYPES[src][0])

    def t(key: str) -> TensorType:
        dtype, scale, zp = CAST_TYPES[key]
        return TensorType(x.shape, dtype) if scale is None else qtype(x.shape, dtype, scale, zp)

    g = Graph()
    v = g.add_input(t(src), "x")
    g.add_output(g.results(g.add_op("armnn.Cast", [v], [t(dst)], {}, Loc("cast")))[0], "y")
    PassManager.from_names("legalize-armnn,canonicalize").run(g)
    (got,), low = run(g, [boundary(x)], semantics=semantics)
    got = got.view(np.uint8) if dst == "qu8" else got
    np.testing.assert_array_equal(got.astype(np.int64).reshape(x.shape), refcast(x, CAST_TYPES[dst][0]))
    if (src, dst) == ("qs16", "s32"):
        assert set(low.histogram()) <= {"tosa.const", "tosa.cast"}  # the stored integers, widened


# Squared difference: CpuRef's float32 arithmetic, and TFLite's int8 kernel
def cpuref_squared_difference(a, b, qa, qb, qy, lo, hi):
    """RefElementwiseBinaryWorkload's SqDiff: float32 decodings subtracted, squared in float32, encoded."""
    d = (armnn_decode(a, *qa) - armnn_decode(b, *qb)).astype(np.float32)
    return armnn_encode((d * d).astype(np.float32), *qy, lo, hi)


def exact_squared_difference(a, b, qa, qb, qy):
    """(sa * A - sb * B)**2 / sy in float64 (exact to far below an output step), rounded half away."""
    sa, sb, sy = (float(np.float32(q[0])) for q in (qa, qb, qy))
    real = (sa * (np.asarray(a, np.float64) - qa[1]) - sb * (np.asarray(b, np.float64) - qb[1])) ** 2 / sy
    return real, np.floor(real + 0.5) + qy[1]


def test_squared_difference_of_broadcast_int16_rounds_the_exact_square():
    """int16 operands put on a common unit before the square lost up to 5 LSB against CpuRef (the
    operand's rounding times |a - b|); exact i32 products now give the correctly rounded square.
    CpuRef's own float32 arithmetic misses it where the square lies within its error of a half."""
    rng = np.random.default_rng(7)
    qa, qb, qy = (6.103701889514923e-05, 0), (4.577776417136192e-05, 0), (9.031726222019643e-05, 0)
    a = rng.integers(-32768, 32768, (64, 32, 3, 4)).astype(np.int16)
    b = rng.integers(-32768, 32768, (1, 1, 3, 1)).astype(np.int16)
    g = one_op("nn.squared_difference", {"a": qtype(a.shape, "i16", *qa), "b": qtype(b.shape, "i16", *qb)},
               qtype(a.shape, "i16", *qy))
    (got,), low = run(g, [a, b])
    got = got.astype(np.int64).reshape(a.shape)
    real, rounded = exact_squared_difference(a, b, qa, qb, qy)
    near_half = np.abs(real % 1 - 0.5) < 2e-3
    missed_exact = got != np.clip(rounded, -32768, 32767)
    missed_cpuref = got != cpuref_squared_difference(a, b, qa, qb, qy, -32768, 32767)
    assert not np.any(missed_exact & ~near_half) and not np.any(missed_cpuref & ~near_half)
    assert missed_exact.sum() <= 8 and missed_cpuref.sum() <= 16  # of 24576 (measured: 4 and 8)
    assert all(t.dtype != "f32" for n in low.nodes() for t in low.types(n))  # integers only (pro_int)


@pytest.mark.parametrize("dtype,qa,qb,qy", [
    ("i8", (0.01568627543747425, 0), (0.0117647061124444, 0), (0.03976413235068321, -128)),
    ("ui8", (0.01568627543747425, 128), (0.0117647061124444, 120), (0.03976413235068321, 0)),
    ("i8", (0.02, -7), (0.02, 5), (0.0125, -100)),
])
def test_squared_difference_of_8_bit_data_is_cpuref_on_every_pair(dtype, qa, qb, qy):
    lo, hi = RANGE[dtype]
    a = np.arange(lo, hi + 1).reshape(256, 1).astype(np.uint8 if dtype == "ui8" else np.int8)
    b = a.reshape(1, 256)
    g = one_op("nn.squared_difference", {"a": qtype(a.shape, dtype, *qa), "b": qtype(b.shape, dtype, *qb)},
               qtype((256, 256), dtype, *qy))
    (got,), _ = run(g, [boundary(a), boundary(b)])
    got = (got.view(np.uint8) if dtype == "ui8" else got).astype(np.int64).reshape(256, 256)
    np.testing.assert_array_equal(got, cpuref_squared_difference(a, b, qa, qb, qy, lo, hi))


def tflite_multiply(x: np.ndarray, real: float) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp(x, QuantizeMultiplierSmallerThanOneExp(real)):
    a rounding doubling high multiply by a Q31 multiplier, then a rounding (half away) right shift."""
    fraction, exponent = math.frexp(real)
    multiplier = int(math.floor(fraction * 2**31 + 0.5))
    if multiplier == 2**31:
        multiplier, exponent = multiplier // 2, exponent + 1
    assert exponent <= 0
    product = np.asarray(x, np.int64) * multiplier
    nudged = product + np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))  # C++ division truncates
    mask = (1 << -exponent) - 1
    threshold = (mask >> 1) + (high < 0)
    return (high >> -exponent) + ((high & mask) > threshold)


def tflite_squared_difference(a, b, qa, qb, qy):
    """tensorflow/lite/kernels/squared_difference.cc, int8: operands scaled up by 2**7, to a common
    unit, the difference squared, rescaled to the output (all in int32)."""
    twice_max = 2.0 * float(max(np.float32(qa[0]), np.float32(qb[0])))
    sa, sb = (tflite_multiply((np.asarray(x, np.int64) - q[1]) * 128, float(np.float32(q[0])) / twice_max)
              for x, q in ((a, qa), (b, qb)))
    raw = tflite_multiply((sa - sb) ** 2, twice_max * twice_max / (16384 * float(np.float32(qy[0])))) + qy[1]
    return np.clip(raw, -128, 127)


@pytest.mark.parametrize("qa,qb,qy", [
    ((0.01568627543747425, 0), (0.0117647061124444, 0), (0.03976413235068321, -128)),
    ((0.02, -7), (0.031, 5), (0.0125, -100)),
    ((0.05, 3), (0.05, 3), (0.2, -128)),
])
def test_squared_difference_of_int8_under_litert_is_tflites_kernel(qa, qb, qy):
    a = np.arange(-128, 128).reshape(256, 1).astype(np.int8)
    b = a.reshape(1, 256)
    g = one_op("nn.squared_difference", {"a": qtype(a.shape, "i8", *qa), "b": qtype(b.shape, "i8", *qb)},
               qtype((256, 256), "i8", *qy))
    (got,), low = run(g, [a, b], semantics="litert")
    want = tflite_squared_difference(a, b, qa, qb, qy)
    np.testing.assert_array_equal(got.astype(np.int64).reshape(256, 256), want)
    # TFLite's MultiplyByQuantizedMultiplier is DOUBLE_ROUND (written where the shift exceeds 31: below, the modes agree)
    assert "DOUBLE_ROUND" in {low.attrs(n)["rounding_mode"] for n in low.nodes() if low.op(n) == "tosa.rescale"}


@pytest.mark.parametrize("op,x_t", [
    ("nn.reduce_mean", qtype((3, 4, 5), "i8", 0.5, 3)),
    ("nn.reduce_sum", qtype((3, 4, 5), "i8", 0.25, -7)),
    ("nn.reduce_mean", qtype((3, 4, 5), "i32", 1e30)),  # beyond i32: saturated
])
def test_quantized_operand_into_an_unquantized_integer_result_truncates(op, x_t):
    """A reduction of quantized data into a plain integer (found by the fuzzer: the result came out
    f32, changing the function's signature): CpuRef computes in float and its Int32 encoder stores
    static_cast<int32_t>(value), truncated toward zero. The scales make every sum and mean exact in
    float32, so truncation (2.75 -> 2, -2.75 -> -2) is what the integers show, not rounding."""
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, x_t.shape).astype(x_t.numpy_dtype)
    x[0, 0] = 0  # an exact zero keeps its sign through the 1e30 scale
    (got,), low = run(one_op(op, {"x": x_t}, TensorType((3, 1, 5), "i32"), {"axes": [1], "keep_dims": True}), [x])
    real = armnn_decode(x, x_t.quant.scales[0], x_t.quant.zero_points[0]).astype(np.float64)
    value = real.sum(axis=1, keepdims=True) / (4 if op == "nn.reduce_mean" else 1)
    want = np.clip(np.trunc(value), -2 ** 31, 2 ** 31 - 1).astype(np.int64)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.astype(np.int64).reshape(want.shape), want)
    assert (np.abs(value - np.trunc(value)) >= 0.5).any() or x_t.dtype == "i32"  # a case rounding would get wrong


def test_float_island_whose_dequantize_other_ops_read_too():
    """The island's root is also read outside it (CSE merges the dequantizes QLstm's legalization
    writes per use): the island reads a private copy, the other reader the lowered root."""
    g = Graph()
    x = g.add_input(qtype((16, 16), "i8", 0.05, 10), "x")
    k = g.add_input(TensorType((16, 16), "f32"), "k")
    b = Builder(g, Loc("shared"))
    real = b.op("nn.dequantize", [x], types=[TensorType((16, 16), "f32")])
    g.add_output(b.op("nn.quantize", [b.op("nn.sigmoid", [real], types=[TensorType((16, 16), "f32")])],
                      types=[qtype((16, 16), "i8", 1 / 256, -128)]), "y")
    g.add_output(b.op("nn.mul", [real, k], types=[TensorType((16, 16), "f32")]), "product")
    v = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    kv = np.linspace(-2, 2, 256, dtype=np.float32).reshape(16, 16)
    (y, product), low = run(g, [v, kv])
    assert "tosa.table" in low.histogram()
    real_v = armnn_decode(v, 0.05, 10)
    np.testing.assert_array_equal(y.astype(np.int64).reshape(v.shape),
                                  armnn_encode(FUNCTIONS["sigmoid"](real_v), 1 / 256, -128, -128, 127))
    np.testing.assert_array_equal(product.reshape(v.shape), real_v * kv)


def conv_reference(x, w, bias, xq, wq, bq, yq, lo, hi):
    """CpuRef's convolution (stride 1, 'same' 3x3 padding, NHWC / OHWI) in float32 sums."""
    xr = np.pad(armnn_decode(x, *xq), ((0, 0), (1, 1), (1, 1), (0, 0)))
    wr = armnn_decode(w, *wq)
    n, h, wd, _ = x.shape
    out = np.zeros((n, h, wd, w.shape[0]), np.float32)
    for i in range(h):
        for j in range(wd):
            patch = xr[:, i:i + 3, j:j + 3, :]
            out[:, i, j, :] = np.einsum("nhwc,ohwc->no", patch, wr, dtype=np.float32)
    out += armnn_decode(bias, *bq)
    return armnn_encode(out, *yq, lo, hi)


def test_int16_convolution_with_int16_weights_splits_them_exactly():
    rng = np.random.default_rng(3)
    x = rng.integers(-32768, 32768, (1, 5, 6, 3)).astype(np.int16)
    w = rng.integers(-32768, 32768, (4, 3, 3, 3)).astype(np.int16)
    bias = rng.integers(-50000, 50000, 4).astype(np.int32)
    xq, wq, yq = (4.5777764171361923e-05, 0), (1.831110603234265e-05, 0), (1.043028460117057e-4, 0)
    bq = (xq[0] * wq[0], 0)
    g = Graph()
    xv = g.add_input(qtype(x.shape, "i16", *xq), "x")
    b = Builder(g, Loc("conv"))
    wv = b.constant(w, "i16", Quant((wq[0],), (0,)))
    bv = b.constant(bias, "i32", Quant((bq[0],), (0,)))
    attrs = {"stride": [1, 1], "dilation": [1, 1], "pad": [1, 1, 1, 1], "groups": 1}
    g.add_output(b.op("nn.conv2d", [xv, wv, bv], attrs, types=[qtype((1, 5, 6, 4), "i16", *yq)]), "y")
    (got,), low = run(g, [x])
    assert low.histogram()["tosa.conv2d"] == 2  # high and low weight bytes
    want = conv_reference(x, w, bias, xq, wq, bq, yq, -32768, 32767)
    diff = np.abs(got.astype(np.int64).reshape(want.shape) - want)
    assert diff.max() <= 1 and (diff == 0).mean() > 0.95  # float32 sums may land on the other side of a half


def test_int8_softmax():
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (6, 10)).astype(np.int8)
    g = one_op("nn.softmax", {"x": qtype(x.shape, "i8", 0.0235)}, qtype(x.shape, "i8", 1 / 256, -128),
               {"axis": 1, "beta": 1.0})
    (got,), low = run(g, [x])
    assert not any(op.startswith("tosa.") and op in ("tosa.exp", "tosa.reciprocal") for op in low.histogram())
    real = armnn_decode(x, 0.0235, 0)
    e = np.exp(real - real.max(axis=1, keepdims=True))
    want = armnn_encode(e / e.sum(axis=1, keepdims=True, dtype=np.float32), 1 / 256, -128, -128, 127)
    diff = np.abs(got.astype(np.int64).reshape(want.shape) - want)
    assert diff.max() <= 1 and (diff == 0).mean() > 0.95


def test_quantize_rounds_half_away_from_zero():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997, 1e9, -1e9], np.float32)
    (got,), _ = run(one_op("nn.quantize", {"x": TensorType(x.shape, "f32")}, qtype(x.shape, "i8", 1.0, 0)), [x])
    np.testing.assert_array_equal(got.reshape(-1), [-3, -2, -1, 1, 2, 3, 0, 0, 127, -128])


def test_fraction_bits_keep_intermediates_in_range():
    from nn2tosa.lowering.fixed_point.rescale import fraction_bits, max_input_for

    for span, ratio in ((255, 1.0), (255, 37.0), (65535, 1.0), (65535, 0.001)):
        p = fraction_bits(span, ratio, headroom=2, input_span=span)
        assert span * ratio * 2.0 ** p * 4 < 2 ** 30
        assert span <= max_input_for(ratio * 2.0 ** p)
        assert span * ratio * 2.0 ** (p + 1) * 4 >= 2 ** 30 or p == 24 or span > max_input_for(ratio * 2.0 ** (p + 1))


def test_per_axis_scales_are_per_output_channel():
    """A conv2d with per-channel weight scales rescales each output channel by its own scale."""
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 128, (1, 4, 4, 2)).astype(np.int8)
    w = rng.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)
    scales = (0.002, 0.011, 0.0007)
    g = Graph()
    xv = g.add_input(qtype(x.shape, "i8", 0.03, -7), "x")
    b = Builder(g, Loc("conv"))
    wv = b.constant(w, "i8", Quant(scales, (0, 0, 0), axis=0))
    bias = np.array([100, -2000, 30], np.int32)
    bv = b.constant(bias, "i32", Quant(tuple(0.03 * s for s in scales), (0, 0, 0), axis=0))
    attrs = {"stride": [1, 1], "dilation": [1, 1], "pad": [1, 1, 1, 1], "groups": 1}
    g.add_output(b.op("nn.conv2d", [xv, wv, bv], attrs, types=[qtype((1, 4, 4, 3), "i8", 0.05, 2)]), "y")
    (got,), low = run(g, [x])
    rescale = next(low.attrs(n) for n in low.nodes() if low.op(n) == "tosa.rescale")
    assert rescale["per_channel"]
    want = np.concatenate([conv_reference(x, w[c:c + 1], bias[c:c + 1], (0.03, -7), (scales[c], 0),
                                          (0.03 * scales[c], 0), (0.05, 2), -128, 127) for c in range(3)], axis=-1)
    diff = np.abs(got.astype(np.int64).reshape(want.shape) - want)
    assert diff.max() <= 1 and (diff == 0).mean() > 0.9


def test_qinfo_of_per_axis_type_has_no_single_scale():
    q = qinfo(TensorType((2, 3), "i8", Quant((0.1, 0.2), (0, 0), axis=0)))
    assert q.per_axis and math.isclose(q.scales[1], 0.2)
    with pytest.raises(ValueError):
        _ = q.scale
    assert isinstance(q, QInfo)


# ------------------------------------------------------------------------------ Arm NN QLstm
def cpuref_qlstm(x, h, c, params: dict, types: dict, attrs: dict) -> list[np.ndarray]:
    """RefQLstmWorkload in numpy, for the options the corpus files leave out (no CIFG, peephole and
    layer norm of the input gate, clipping): float32 arithmetic between int16/int8 buffers, every
    buffer write encoded (armnn_encode) and read back decoded."""
    f32 = np.float32
    (sx, _), (sh, zh), (sc, _) = types["input"], types["state"], types["cell"]
    (so, zo), units = types["output"], c.shape[1]

    def w(name, scale=None):
        stored, s = params[name]
        return armnn_decode(stored, s if scale is None else scale, 0)

    def write(v, scale, zp=0, lo=-32768, hi=32767):
        return armnn_decode(armnn_encode(np.asarray(v, f32), scale, zp, lo, hi), scale, zp)

    X, H, C = armnn_decode(x, sx, 0), armnn_decode(h, sh, zh), armnn_decode(c, sc, 0)

    def gate(name, inter, peep, fn, bias):
        acc = np.zeros(c.shape, f32)
        for m, v in ((w(f"inputTo{name}Weights"), X), (w(f"recurrentTo{name}Weights"), H)):
            for col in range(m.shape[1]):
                acc = write(acc + m[:, col][None, :] * v[:, col:col + 1], inter)
        if peep is not None:
            acc = write(acc + w(f"cellTo{name}Weights")[None, :] * peep, inter)
        ln = f"{name[0].lower()}{name[1:]}LayerNormWeights"
        ln_scale = f32(params[ln][1])
        s_ln = f32(f32(sx) * ln_scale) * f32(1024)
        total, squares = np.zeros(c.shape[0], f32), np.zeros(c.shape[0], f32)
        for col in range(units):
            total, squares = total + acc[:, col], squares + acc[:, col] * acc[:, col]
        mean = total / f32(units)
        variance = squares / f32(units) - mean * mean
        inverse = np.where(variance == 0, f32(1) / np.sqrt(f32(1e-8)), f32(1) / np.sqrt(variance)).astype(f32)
        acc = write((acc - mean[:, None]) * inverse[:, None], s_ln)
        acc = write(w(ln)[None, :] * acc, s_ln)
        acc = write(acc + w(bias, ln_scale / f32(1024))[None, :], 1 / 4096)
        return write(fn(acc), sc)

    sigmoid = lambda v: (f32(1) / (f32(1) + np.exp(-v))).astype(f32)  # noqa: E731
    i = gate("Input", attrs["inputIntermediateScale"], C, sigmoid, "inputGateBias")
    f = gate("Forget", attrs["forgetIntermediateScale"], C, sigmoid, "forgetGateBias")
    g = gate("Cell", attrs["cellIntermediateScale"], None, np.tanh, "cellBias")
    c_new = write(f * C, sc)
    c_new = write(c_new + g * i, sc)
    c_new = write(np.clip(c_new, -f32(attrs["cellClip"]), f32(attrs["cellClip"])), sc)
    o = gate("Output", attrs["outputIntermediateScale"], c_new, sigmoid, "outputGateBias")
    hidden = write(o * write(np.tanh(c_new), sc), attrs["hiddenStateScale"], attrs["hiddenStateZeroPoint"], -128, 127)
    pw = w("projectionWeights")
    if "projectionBias" in params:
        out16 = write(np.broadcast_to(w("projectionBias")[None, :], (c.shape[0], pw.shape[0])), so, zo)
    else:  # the zero-filled int16 buffer, decoded with the output's zero point
        out16 = np.broadcast_to(armnn_decode(np.zeros(pw.shape[0]), so, zo), (c.shape[0], pw.shape[0]))
    for col in range(pw.shape[1]):
        out16 = write(out16 + pw[:, col][None, :] * hidden[:, col:col + 1], so, zo)
    out = write(write(out16, so, zo, -128, 127), so, zo, -128, 127)
    out = np.clip(out, -f32(attrs["projectionClip"]), f32(attrs["projectionClip"]))
    state = armnn_encode(out, so, zo, -128, 127)
    return [state, armnn_encode(c_new, sc, 0, -32768, 32767), state]


@pytest.mark.parametrize("projection_bias", [True, False])
def test_qlstm_without_cifg_with_peephole_layer_norm_projection_and_clips_is_cpuref(projection_bias):
    """The paths the corpus' two QLstm files leave out: the input gate (its peephole and layer norm),
    cell and projection clipping, a hidden state and output with zero points, a projection without
    bias (CpuRef's accumulator then starts at the output zero point's real value, not 0)."""
    from nn2tosa.passes import PassManager

    rng = np.random.default_rng(11)
    batch, size, units, out_size = 2, 5, 4, 3
    types = {"input": (0.015625, 0), "state": (0.0078125, 2), "cell": (2.0 ** -11, 0), "output": (0.0078125, 2)}
    attrs = {"cellClip": 0.5, "projectionClip": 0.1, "cifgEnabled": False, "peepholeEnabled": True,
             "projectionEnabled": True, "layerNormEnabled": True, "inputIntermediateScale": 0.007,
             "forgetIntermediateScale": 0.0061, "cellIntermediateScale": 0.007, "outputIntermediateScale": 0.0055,
             "hiddenStateZeroPoint": 3, "hiddenStateScale": 0.0078125}
    attrs = {k: (float(np.float32(v)) if isinstance(v, float) else v) for k, v in attrs.items()}
    params: dict[str, tuple[np.ndarray, float]] = {}
    for gate in ("Input", "Forget", "Cell", "Output"):
        params[f"inputTo{gate}Weights"] = (rng.integers(-127, 128, (units, size)).astype(np.int8), 0.00315)
        params[f"recurrentTo{gate}Weights"] = (rng.integers(-127, 128, (units, out_size)).astype(np.int8), 0.00315)
        params[f"{gate[0].lower()}{gate[1:]}LayerNormWeights"] = (rng.integers(9000, 24000, units).astype(np.int16),
                                                                 2.0 ** -14)
        bias = {"Cell": "cellBias"}.get(gate, f"{gate[0].lower()}{gate[1:]}GateBias")
        params[bias] = (rng.integers(-4_000_000, 4_000_000, units).astype(np.int32), 1e-7)
        if gate != "Cell":
            params[f"cellTo{gate}Weights"] = (rng.integers(-6000, 6000, units).astype(np.int16), 2.0 ** -14)
    params["projectionWeights"] = (rng.integers(-127, 128, (out_size, units)).astype(np.int8), 0.00315)
    if projection_bias:
        params["projectionBias"] = (rng.integers(-300, 300, out_size).astype(np.int32), 0.001)
    params = {k: (v, float(np.float32(s))) for k, (v, s) in params.items()}

    def qt(shape, dtype, scale, zp=0):
        return TensorType(shape, dtype, Quant((float(np.float32(scale)),), (zp,)))

    g = Graph()
    inputs = [g.add_input(qt((batch, size), "i8", *types["input"]), "x"),
              g.add_input(qt((batch, out_size), "i8", *types["state"]), "h"),
              g.add_input(qt((batch, units), "i16", *types["cell"]), "c")]
    consts = []
    for name, (stored, scale) in params.items():
        t = qt(stored.shape, {"int8": "i8", "int16": "i16", "int32": "i32"}[str(stored.dtype)], scale)
        consts.append(g.results(g.add_op("armnn.Constant", [], [t], {"value": stored}, Loc(name)))[0])
    result_types = [qt((batch, out_size), "i8", *types["output"]), qt((batch, units), "i16", *types["cell"]),
                    qt((batch, out_size), "i8", *types["output"])]
    node = g.add_op("armnn.QLstm", inputs + consts, result_types, {**attrs, "inputParams": list(params)}, Loc("qlstm"))
    for name, v in zip(("state", "cell", "output"), g.results(node)):
        g.add_output(v, name)
    # CpuRef's arithmetic (under litert a QLstm is LiteRT's kernel: test_lstm_integer.py)
    PassManager.from_names("legalize-armnn,canonicalize", context=PassContext("cpuref")).run(g)
    x = rng.integers(-128, 128, (batch, size)).astype(np.int8)
    h = rng.integers(-128, 128, (batch, out_size)).astype(np.int8)
    c = rng.integers(-3000, 3000, (batch, units)).astype(np.int16)
    got, _ = run(g, [x, h, c])
    want = cpuref_qlstm(x, h, c, params, types, attrs)
    for have, expected in zip(got, want):
        np.testing.assert_array_equal(have.astype(np.int64).reshape(expected.shape), expected)


def _quantize_multiplier(scale: float, bits: int = 31) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier on one double, in Python integers (the reference for the array form)."""
    import math

    if scale == 0:
        return 0, 2
    mantissa, exp = math.frexp(scale)
    multiplier = math.floor(mantissa * (1 << bits) + 0.5)
    if multiplier == 1 << bits:
        multiplier, exp = multiplier // 2, exp + 1
    shift = bits - exp
    if shift > 62:
        multiplier, shift = multiplier >> (shift - 62), 62
    return multiplier, shift


def test_multipliers_and_shifts_of_a_whole_axis_are_the_per_scale_integers():
    from nn2tosa.lowering.fixed_point.rescale import multipliers_shifts

    rng = np.random.default_rng(7)
    scales = np.concatenate([rng.random(3000) * 10.0 ** rng.integers(-40, 4, 3000),
                             rng.random(500).astype(np.float32).astype(np.float64),  # per-channel f32 scales
                             [0.0, 1.0, 0.5, 1 - 2.0 ** -40, 2.0 ** -70, 5e-324, 2.0 ** 12]])
    for bits, scale32 in ((31, True), (15, False)):
        multipliers, shifts = multipliers_shifts(scales, scale32)
        want = [_quantize_multiplier(float(s), bits) for s in scales]
        assert list(zip(multipliers.tolist(), shifts.tolist())) == want


def test_multipliers_shifts_name_the_first_scale_rescale_cannot_take():
    from nn2tosa.lowering.fixed_point.rescale import RescaleRangeError, multipliers_shifts

    with pytest.raises(RescaleRangeError, match=r"rescale factor 1e\+30 is too large"):
        multipliers_shifts([0.5, 1e30, float("nan")])
    with pytest.raises(RescaleRangeError, match="rescale factor nan is not a finite"):
        multipliers_shifts([0.5, float("nan"), 1e30])


@pytest.mark.parametrize("max_abs", [1, 3, 17, 255, 1000])
def test_ties_possible_over_an_axis_is_any_exact_half_by_brute_force(max_abs):
    from nn2tosa.lowering.fixed_point.rescale import ties_possible

    rng = np.random.default_rng(max_abs)
    factors = [0.5, 0.25, 0.75, 1.0, 3.0, 1 / 3, 2.0 ** -9, 0.1] + list(rng.integers(1, 64, 8) / 64.0)
    for f in factors:
        m, s = _quantize_multiplier(f)
        exact_half = any((v * m) % (1 << s) == 1 << (s - 1) for v in range(1, max_abs + 1))
        assert ties_possible(f, max_abs) == exact_half, f
    assert ties_possible(np.array(factors), max_abs) == any(ties_possible(f, max_abs) for f in factors)
