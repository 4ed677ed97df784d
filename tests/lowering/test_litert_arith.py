"""Quantized ops under `semantics="litert"`: one op lowered to TOSA, run on the reference model and
compared with an independent numpy model of LiteRT's reference integer kernel (written here from the
kernels' arithmetic: QuantizeMultiplier, MultiplyByQuantizedMultiplier with gemmlowp's two roundings,
QuantizedMeanOrSum, integer AveragePool, ADD's 20/15-bit left shift, MUL, FULLY_CONNECTED's rounding
in double). The inputs are chosen to hit halves: equal scales, means of two or four elements, sums of
stored integers that are odd multiples of n / 2, every pair of int8 values. The same models matched
LiteRT 2.3.0 (BUILTIN_REF) on the corpus .tflite files when this was written."""
from __future__ import annotations

import math

import numpy as np
import pytest

from test_quant import boundary, one_op, qtype, run
from tflite_kernels import mbqm, quantize_multiplier, rdbpot, srdhm

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")


# ------------------------------------------------------------------------------ TFLite, independently
tfl_mbqm = np.vectorize(mbqm, otypes=[np.int64])  # MultiplyByQuantizedMultiplier over arrays


def tfl_mean_or_sum(x: np.ndarray, axes: tuple[int, ...], s_in: float, zp_in: int, s_out: float, zp_out: int,
                    lo: int, hi: int, mean: bool) -> np.ndarray:
    """reference_ops::QuantizedMeanOrSum for the data's own type (keep dims); a sum as LiteRT's builtin
    SUM kernel computes it, the exact sum * s_in / s_out rounded half away from zero (its reference
    kernel reads int8 data as uint8; the builtin one agreed with this on 1,800 of 1,800 elements of
    random q8_reduce_sum inputs)."""
    n = math.prod(x.shape[a] for a in axes)
    total = np.asarray(x, np.int64).sum(axis=axes, keepdims=True) - zp_in * n
    if not mean:
        exact = total * (float(s_in) / float(s_out))
        return np.clip(np.sign(exact) * np.floor(np.abs(exact) + 0.5) + zp_out, lo, hi).astype(np.int64)
    q, e = quantize_multiplier(s_in / s_out)
    if mean:
        k = min(int(math.floor(math.log2(n))), 32, 31 + e)
        q, e = (q << k) // n, e - k
    return np.clip(tfl_mbqm(total, q, e) + zp_out, lo, hi)


def tfl_average_pool(x: np.ndarray, kernel: tuple[int, int], stride: tuple[int, int], pad: tuple[int, int],
                     out_hw: tuple[int, int], lo: int, hi: int) -> np.ndarray:
    """reference_integer_ops::AveragePool (NHWC): stored integers summed over the window's input
    elements, (acc +- n / 2) / n truncated (C division), clamped."""
    n_, h, w, c = x.shape
    y = np.zeros((n_, *out_hw, c), np.int64)
    for oy in range(out_hw[0]):
        for ox in range(out_hw[1]):
            y0, x0 = oy * stride[0] - pad[0], ox * stride[1] - pad[1]
            window = x[:, max(y0, 0):min(y0 + kernel[0], h), max(x0, 0):min(x0 + kernel[1], w), :].astype(np.int64)
            acc, count = window.sum(axis=(1, 2)), window.shape[1] * window.shape[2]
            shifted = np.where(acc > 0, acc + count // 2, acc - count // 2)
            y[:, oy, ox, :] = np.sign(shifted) * (np.abs(shifted) // count)
    return np.clip(y, lo, hi)


def tfl_add(a: np.ndarray, b: np.ndarray, qa: tuple[float, int], qb: tuple[float, int], qy: tuple[float, int],
            lo: int, hi: int, left_shift: int, subtract: bool = False) -> np.ndarray:
    """reference ADD/SUB with general scales (multipliers in double from the float32 scales)."""
    twice_max = 2.0 * max(qa[0], qb[0])
    terms = []
    for v, (s, zp) in ((a, qa), (b, qb)):
        q, e = quantize_multiplier(s / twice_max)
        terms.append(tfl_mbqm((np.asarray(v, np.int64) - zp) * (1 << left_shift), q, e))
    q, e = quantize_multiplier(twice_max / ((1 << left_shift) * qy[0]))
    raw = terms[0] - terms[1] if subtract else terms[0] + terms[1]
    return np.clip(tfl_mbqm(raw, q, e) + qy[1], lo, hi)


def tfl_mul(a: np.ndarray, b: np.ndarray, qa: tuple[float, int], qb: tuple[float, int], qy: tuple[float, int],
            lo: int, hi: int) -> np.ndarray:
    """reference MUL: the multiplier s_a * s_b / s_y is computed in float32."""
    q, e = quantize_multiplier(float(np.float32(qa[0]) * np.float32(qb[0]) / np.float32(qy[0])))
    product = (np.asarray(a, np.int64) - qa[1]) * (np.asarray(b, np.int64) - qb[1])
    return np.clip(tfl_mbqm(product, q, e) + qy[1], lo, hi)


def tfl_fully_connected(x: np.ndarray, w: np.ndarray, qx: tuple[float, int], sw: float, qy: tuple[float, int],
                        lo: int, hi: int) -> np.ndarray:
    """LiteRT's reference FULLY_CONNECTED: round(acc * s_x * s_w / s_y) in double, halves away."""
    acc = (np.asarray(x, np.int64) - qx[1]) @ np.asarray(w, np.int64).T
    scaled = acc.astype(np.float64) * (qx[0] * sw / qy[0])
    return np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) + qy[1], lo, hi)


def tfl_reduce_prod(x: np.ndarray, s_in: float, zp_in: int, s_out: float, zp_out: int, lo: int, hi: int) -> np.ndarray:
    """reference_ops::QuantizedReduceProd over the last axis: p = x0 - zp, then for each next element
    p = MultiplyByQuantizedMultiplier(int64 p * (x - zp)), finally that of p alone + zp_out; the
    multiplier is QuantizeMultiplier(s_in / s_out**(1/n)) and the int64 form uses its top 16 bits."""
    n = x.shape[-1]
    q, e = quantize_multiplier(s_in / math.pow(s_out, 1.0 / n))
    q16 = (q + (1 << 15)) >> 16 if q < 0x7FFF0000 else 0x7FFF

    def scale(v: np.ndarray) -> np.ndarray:
        return (v * q16 + (1 << (14 - e))) >> (15 - e)

    p = x[..., 0].astype(np.int64) - zp_in
    for i in range(1, n):
        p = scale(p * (x[..., i].astype(np.int64) - zp_in))
    return np.clip(scale(p) + zp_out, lo, hi)


def f32(x: float) -> float:
    """A scale as TFLite stores it (float32)."""
    return float(np.float32(x))


# ------------------------------------------------------------------------------ the model itself
def test_model_rounds_like_gemmlowp():
    # 2**30 / 2**31 = 0.5 rounds up in the high multiply; -0.5 also rounds up (toward +inf) there,
    # while the right shift rounds -0.5 away from zero
    assert [srdhm(1, 1 << 30), srdhm(-1, 1 << 30)] == [1, 0]
    assert [rdbpot(v, 2) for v in (2, -2, 6, -6)] == [1, -1, 2, -2]
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(1.0) == (1 << 30, 1)


# ------------------------------------------------------------------------------ sum and mean
MEAN_CASES = [  # (op, in scale, in zp, out scale, out zp, dtype, shape, axes)
    ("nn.reduce_mean", 0.05, -3, 0.05, -3, "i8", (64, 2, 3), (1,)),  # mean of two, same scale: halves
    ("nn.reduce_mean", 0.05, 7, 0.05, 7, "i8", (64, 4, 4), (1,)),
    ("nn.reduce_mean", 0.0078431, -1, 0.0031, 5, "i8", (16, 5, 6, 3), (1, 2)),
    ("nn.reduce_mean", 0.02, 100, 0.03, 120, "ui8", (32, 3, 8), (2,)),
    ("nn.reduce_mean", 1 / 32768, 0, 1 / 65536, 0, "i16", (32, 4, 6), (1, 2)),
    ("nn.reduce_sum", 0.0078423, -1, 0.0561196, 5, "i8", (64, 6, 16), (2,)),  # q8_reduce_sum's scales
    ("nn.reduce_sum", 0.05, 3, 0.1, -2, "i8", (64, 6, 4), (2,)),  # a sum of halves
]


@pytest.mark.parametrize("op,s_in,zp_in,s_out,zp_out,dtype,shape,axes", MEAN_CASES)
def test_sum_and_mean_are_tflites(op, s_in, zp_in, s_out, zp_out, dtype, shape, axes):
    s_in, s_out = f32(s_in), f32(s_out)
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    g = one_op(op, {"x": qtype(shape, dtype, s_in, zp_in)}, qtype(out_shape, dtype, s_out, zp_out),
               {"axes": list(axes), "keep_dims": True})
    info = np.iinfo({"i8": np.int8, "ui8": np.uint8, "i16": np.int16}[dtype])
    rng = np.random.default_rng(len(shape) * 31 + zp_in)
    # all over the range, and a narrow band around the zero point where sums land on halves often
    x = np.concatenate([rng.integers(info.min, int(info.max) + 1, (shape[0] // 2, *shape[1:])),
                        np.clip(rng.integers(zp_in - 3, zp_in + 4, (shape[0] - shape[0] // 2, *shape[1:])),
                                info.min, info.max)]).astype(info.dtype)
    (got,), _ = run(g, [boundary(x)], semantics="litert")
    got = got.view(info.dtype) if dtype == "ui8" else got
    want = tfl_mean_or_sum(x, axes, s_in, zp_in, s_out, zp_out, int(info.min), int(info.max), op == "nn.reduce_mean")
    np.testing.assert_array_equal(got.reshape(want.shape).astype(np.int64), want)


def test_mean_multiplier_is_not_the_rounded_ratio():
    """The truncated (q << k) / n of TFLite differs from rounding s_in / (n * s_out) for these scales:
    the lowering must take TFLite's integer, which the test above checks end to end."""
    from nn2tosa.lowering.fixed_point.rescale import multiplier_shift
    from nn2tosa.lowering.rules.reductions import tflite_mean_multiplier

    ratio, n = f32(0.0078431) / f32(0.0031), 30
    q, e = tflite_mean_multiplier(ratio, n)
    assert (q, 31 - e) != multiplier_shift(ratio / n)
    assert tflite_mean_multiplier(ratio, 1) == quantize_multiplier(ratio)


def test_cpuref_mean_keeps_halves_away_from_zero():
    """cpuref: the mean of two equal-scale values -1.5 steps is -2 (CpuRef), LiteRT gives -1."""
    g = one_op("nn.reduce_mean", {"x": qtype((1, 2), "i8", 0.05)}, qtype((1, 1), "i8", 0.05),
               {"axes": [1], "keep_dims": True})
    x = np.array([[-1, -2]], np.int8)
    (cpuref,), _ = run(g, [x], semantics="cpuref")
    g = one_op("nn.reduce_mean", {"x": qtype((1, 2), "i8", 0.05)}, qtype((1, 1), "i8", 0.05),
               {"axes": [1], "keep_dims": True})
    (litert,), _ = run(g, [x], semantics="litert")
    assert (int(cpuref.flat[0]), int(litert.flat[0])) == (-2, -1)


# ------------------------------------------------------------------------------ average pooling
POOL_CASES = [  # (dtype, zp, shape, kernel, stride, pad [t, b, l, r])
    ("i8", -128, (4, 8, 8, 3), (2, 2), (2, 2), (0, 0, 0, 0)),  # q8_resnet_like's pool: negative halves
    ("i8", 5, (4, 7, 9, 2), (3, 3), (2, 2), (1, 1, 1, 1)),  # SAME: counts 4, 6, 9
    ("i8", 0, (2, 6, 6, 2), (4, 2), (1, 2), (2, 1, 0, 1)),
    ("ui8", 128, (4, 6, 6, 2), (2, 2), (2, 2), (0, 0, 0, 0)),
    ("i16", 0, (2, 6, 6, 2), (2, 2), (1, 1), (0, 1, 0, 1)),
]


@pytest.mark.parametrize("dtype,zp,shape,kernel,stride,pad", POOL_CASES + [
    ("i16", 0, (2, 128, 130, 1), (128, 128), (1, 1), (0, 0, 0, 0)),  # 16384 elements: past AVG_POOL2D's exact range
])
def test_average_pool_is_tflites(dtype, zp, shape, kernel, stride, pad):
    info = np.iinfo({"i8": np.int8, "ui8": np.uint8, "i16": np.int16}[dtype])
    oh, ow = ((size + pad[2 * i] + pad[2 * i + 1] - k) // s + 1
              for i, (size, k, s) in enumerate(zip(shape[1:3], kernel, stride)))
    t = qtype(shape, dtype, 0.0196, zp)
    g = one_op("nn.avg_pool2d", {"x": t}, qtype((shape[0], oh, ow, shape[3]), dtype, 0.0196, zp),
               {"kernel": list(kernel), "stride": list(stride), "pad": list(pad), "count_pad": [0, 0, 0, 0],
                "divisor": 0})
    rng = np.random.default_rng(sum(shape))
    x = np.concatenate([rng.integers(info.min, int(info.max) + 1, (shape[0] // 2, *shape[1:])),
                        rng.integers(info.min, info.min + 4, (shape[0] - shape[0] // 2, *shape[1:]))]).astype(info.dtype)
    (got,), low = run(g, [boundary(x)], semantics="litert")
    got = got.view(info.dtype) if dtype == "ui8" else got
    want = tfl_average_pool(x, kernel, stride, (pad[0], pad[2]), (oh, ow), int(info.min), int(info.max))
    np.testing.assert_array_equal(got.reshape(want.shape).astype(np.int64), want)
    ops = {low.op(n) for n in low.nodes()}
    # one AVG_POOL2D (what every Ethos-U maps) wherever its reciprocal multiplier rounds as TFLite does
    if math.prod(kernel) < 16384:
        assert "tosa.avg_pool2d" in ops and "tosa.intdiv" not in ops
    else:
        assert "tosa.avg_pool2d" not in ops and "tosa.intdiv" in ops


def test_cpuref_average_pool_is_unchanged():
    g = one_op("nn.avg_pool2d", {"x": qtype((1, 2, 2, 1), "i8", 0.1, -128)}, qtype((1, 1, 1, 1), "i8", 0.1, -128),
               {"kernel": [2, 2], "stride": [2, 2], "pad": [0, 0, 0, 0], "count_pad": [0, 0, 0, 0], "divisor": 0})
    _, low = run(g, [np.array([-128, -128, -127, -128], np.int8).reshape(1, 2, 2, 1)], semantics="cpuref")
    assert "tosa.avg_pool2d" in {low.op(n) for n in low.nodes()}


# ------------------------------------------------------------------------------ add, sub, mul
def _all_pairs(dtype: str, count: int = 65536, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of int8 values (65536); for int16, random pairs plus small values around 0."""
    if dtype == "i8":
        a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))
        return a.reshape(256, 256).astype(np.int8), b.reshape(256, 256).astype(np.int8)
    rng = np.random.default_rng(seed)
    a = np.concatenate([rng.integers(-32768, 32768, count // 2), rng.integers(-300, 300, count // 2)])
    b = np.concatenate([rng.integers(-32768, 32768, count // 2), rng.integers(-300, 300, count // 2)])
    return a.reshape(256, -1).astype(np.int16), b.reshape(256, -1).astype(np.int16)


ARITH_CASES = [  # (op, dtype, (s_a, zp_a), (s_b, zp_b), (s_y, zp_y))
    ("nn.add", "i8", (0.0078431, -1), (0.0121, 3), (0.0193, -5)),
    ("nn.add", "i8", (0.05, 0), (0.05, 0), (0.1, 0)),  # equal scales: halves everywhere
    ("nn.sub", "i8", (0.031, -7), (0.027, 11), (0.04, 2)),
    ("nn.add", "i16", (3.05e-5, 0), (6.1e-5, 0), (9.2e-5, 0)),
    ("nn.mul", "i8", (0.031, -5), (0.027, 11), (0.02, 3)),
    ("nn.mul", "i8", (0.25, 0), (0.25, 0), (0.5, 0)),  # a power-of-two ratio: exact halves
    ("nn.mul", "i16", (1 / 32768, 0), (3.0e-5, 0), (2.5e-5, 0)),
]


@pytest.mark.parametrize("op,dtype,qa,qb,qy", ARITH_CASES)
def test_add_sub_mul_are_tflites(op, dtype, qa, qb, qy):
    qa, qb, qy = ((f32(s), zp) for s, zp in (qa, qb, qy))
    a, b = _all_pairs(dtype)
    g = one_op(op, {"a": qtype(a.shape, dtype, *qa), "b": qtype(b.shape, dtype, *qb)}, qtype(a.shape, dtype, *qy))
    (got,), _ = run(g, [a, b], semantics="litert")
    lo, hi = int(np.iinfo(a.dtype).min), int(np.iinfo(a.dtype).max)
    if op == "nn.mul":
        want = tfl_mul(a, b, qa, qb, qy, lo, hi)
    else:
        want = tfl_add(a, b, qa, qb, qy, lo, hi, 20 if dtype == "i8" else 15, subtract=op == "nn.sub")
    np.testing.assert_array_equal(got.reshape(want.shape).astype(np.int64), want)


# ------------------------------------------------------------------------------ fully connected
def test_fully_connected_rounds_once():
    """LiteRT's reference FULLY_CONNECTED rounds acc * scale once (in double): DOUBLE_ROUND, the
    convolutions' MultiplyByQuantizedMultiplier, would differ from it by one near halves."""
    from nn2tosa.ir import Builder, Graph, Loc, Quant

    rng = np.random.default_rng(3)
    qx, sw, qy = (f32(0.0078423), -1), f32(0.00236139), (f32(0.0119246), -7)
    w = rng.integers(-127, 128, (16, 16)).astype(np.int8)
    x = rng.integers(-128, 128, (512, 16)).astype(np.int8)
    g = Graph()
    b = Builder(g, Loc("fc"))
    xin = g.add_input(qtype(x.shape, "i8", *qx), "x")
    wv = b.constant(w, "i8", Quant((sw,), (0,)))
    g.add_output(b.op("nn.fully_connected", [xin, wv], {}, types=[qtype((512, 16), "i8", *qy)]), "y")
    (got,), _ = run(g, [x], semantics="litert")
    want = tfl_fully_connected(x, w, qx, sw, qy, -128, 127)
    np.testing.assert_array_equal(got.reshape(want.shape).astype(np.int64), want)


# ------------------------------------------------------------------------------ product
@pytest.mark.parametrize("dtype,s_in,zp_in,s_out,zp_out,n", [
    ("i8", 0.0078425, -1, 0.001, -1, 4),
    ("i8", 0.0078425, 3, 0.01, 5, 7),
    ("i16", 1 / 32768, 0, 1 / 16384, 0, 3),
])
def test_reduce_prod_is_tflites(dtype, s_in, zp_in, s_out, zp_out, n):
    s_in, s_out = f32(s_in), f32(s_out)
    info = np.iinfo({"i8": np.int8, "i16": np.int16}[dtype])
    rng = np.random.default_rng(n)
    x = np.concatenate([rng.integers(info.min, int(info.max) + 1, (512, n)),
                        rng.integers(-40, 41, (512, n))]).astype(info.dtype)
    g = one_op("nn.reduce_prod", {"x": qtype((2, 512, n), dtype, s_in, zp_in)}, qtype((2, 512), dtype, s_out, zp_out),
               {"axes": [2], "keep_dims": False})
    (got,), _ = run(g, [x.reshape(2, 512, n)], semantics="litert")
    want = tfl_reduce_prod(x, s_in, zp_in, s_out, zp_out, int(info.min), int(info.max))
    np.testing.assert_array_equal(got.reshape(want.shape).astype(np.int64), want)
