"""The NPU-friendly shapes of quantized ops (issue 17: what Vela maps and fuses) give the same integers
as the forms they replace: each op lowered, run on the TOSA reference model on every input it can
have (or every pair), and compared with the independent numpy models of TFLite's kernels
(tests/tflite_kernels.py, test_litert_arith.py) or CpuRef's encode; and the form itself is asserted,
so a fallback to the old form fails here too."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from nn2tosa.ir import Builder, Graph, Loc, Quant, TensorType
from nn2tosa.lowering.npu_target import NPU_TARGETS
from nn2tosa.lowering.rules.transpose_convolution import phases_fit
from test_litert_arith import _all_pairs, f32, tfl_add, tfl_mean_or_sum
from test_quant import armnn_decode, armnn_encode, one_op, qtype, run
from tflite_kernels import mbqm, quantize_multiplier

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

V8 = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)


def ops_of(low: Graph) -> list[str]:
    return [low.op(n) for n in low.nodes() if low.op(n) not in ("tosa.const", "tosa.const_shape", "graph.input")]


# ------------------------------------------------------------------------------ relu with requantization
def tfl_relu_x(v: int, xs: float, xz: int, ys: float, yz: int, low: float, high: float) -> int:
    """QuantizedReluX: MultiplyByQuantizedMultiplier by the float32 ratio, + zp, clamped to the
    encoded bounds (zp + round(bound / scale) in float32)."""
    m, e = quantize_multiplier(float(np.float32(xs) / np.float32(ys)))
    lo = -128 if math.isinf(low) else max(-128, yz + int(np.round(np.float32(low) / np.float32(ys))))
    hi = 127 if math.isinf(high) else min(127, yz + int(np.round(np.float32(high) / np.float32(ys))))
    return min(max(yz + mbqm(v - xz, m, e), lo), hi)


RELU_CASES = [  # (low, high, x (scale, zp), y (scale, zp))
    (0.0, 6.0, (0.1, -3), (0.05, -128)),  # relu6 reaching its upper bound: a CLAMP
    (0.0, 6.0, (0.0235294, -128), (0.0235294 * 0.75, -128)),  # MobileNet-like
    (0.0, math.inf, (0.05, 7), (0.021, -128)),  # relu: the RESCALE's saturation is the bound
    (-1.0, 1.0, (0.02, 0), (0.009, 2)),  # relu_n1_to_1
]


@pytest.mark.parametrize("low,high,x,y", RELU_CASES)
def test_relu_with_requantization_is_a_rescale_and_a_clamp(low, high, x, y):
    x, y = (float(f32(x[0])), x[1]), (float(f32(y[0])), y[1])
    g = one_op("nn.clamp", {"x": qtype(V8.shape, "i8", *x)}, qtype(V8.shape, "i8", *y), {"min": low, "max": high})
    (got,), low_graph = run(g, [V8], semantics="litert")
    assert set(ops_of(low_graph)) <= {"tosa.rescale", "tosa.clamp"}, ops_of(low_graph)
    want = [tfl_relu_x(int(v), *x, *y, low, high) for v in V8.reshape(-1)]
    np.testing.assert_array_equal(got.reshape(-1).astype(np.int64), want)
    # CpuRef's integers (decode, clamp in float, encode) from the same form where it reproduces them
    g = one_op("nn.clamp", {"x": qtype(V8.shape, "i8", *x)}, qtype(V8.shape, "i8", *y), {"min": low, "max": high})
    (got,), _ = run(g, [V8], semantics="cpuref")
    want = armnn_encode(np.clip(armnn_decode(V8, *x), low, high), *y, -128, 127)
    np.testing.assert_array_equal(got.astype(np.int64), want)


# ------------------------------------------------------------------------------ add / sub terms
ADD_CASES = [  # (op, (s_a, zp_a), (s_b, zp_b), (s_y, zp_y), RESCALEs: 3 = one per term, 5 = TFLite's two)
    ("nn.add", (0.05441737547516823, -27), (0.04637063294649124, 1), (0.032852232456207275, -128), 3),  # ResNet-50
    ("nn.sub", (0.05441737547516823, -27), (0.04637063294649124, 1), (0.032852232456207275, -128), 3),
    ("nn.add", (0.082, 5), (0.083, -9), (0.056, 19), 5),  # one rounding per term misses 22 pairs: kept
]


@pytest.mark.parametrize("op,qa,qb,qy,rescales", ADD_CASES)
def test_add_terms_are_one_rescale_where_every_pair_agrees(op, qa, qb, qy, rescales):
    qa, qb, qy = ((f32(s), zp) for s, zp in (qa, qb, qy))
    a, b = _all_pairs("i8")
    g = one_op(op, {"a": qtype(a.shape, "i8", *qa), "b": qtype(b.shape, "i8", *qb)}, qtype(a.shape, "i8", *qy))
    (got,), low = run(g, [a, b], semantics="litert")
    assert ops_of(low).count("tosa.rescale") == rescales
    want = tfl_add(a, b, qa, qb, qy, -128, 127, 20, subtract=op == "nn.sub")
    np.testing.assert_array_equal(got.reshape(want.shape).astype(np.int64), want)


# ------------------------------------------------------------------------------ mean over H and W
MEAN_CASES = [  # (in (scale, zp), out (scale, zp), shape, the op summing, data type)
    ((0.045092139, -128), (0.0082259765, -128), (8, 7, 7, 16), "tosa.depthwise_conv2d", "i8"),  # ResNet-50's
    ((0.05, 7), (0.05, 7), (8, 4, 4, 16), "tosa.depthwise_conv2d", "i8"),  # equal scales, 16 elements
    ((0.05, -128), (0.05, -128), (64, 1, 3, 16), "tosa.avg_pool2d", "i8"),  # 3 elements: AVG_POOL2D is exact
    ((0.00041, 0), (0.00029, 0), (8, 8, 8, 4), "tosa.depthwise_conv2d", "i16"),  # q16_mean_hw's: i48 sum (U85)
]


@pytest.mark.parametrize("qx,qy,shape,summing,dtype", MEAN_CASES)
def test_mean_over_hw_is_a_window_op(qx, qy, shape, summing, dtype):
    qx, qy = (f32(qx[0]), qx[1]), (f32(qy[0]), qy[1])
    lo, hi = (-128, 127) if dtype == "i8" else (-32768, 32767)
    g = one_op("nn.reduce_mean", {"x": qtype(shape, dtype, *qx)}, qtype((shape[0], 1, 1, shape[3]), dtype, *qy),
               {"axes": [1, 2], "keep_dims": True})
    rng = np.random.default_rng(shape[1] * shape[2])
    # all over the range, and a band around the zero point where means land on halves often
    x = np.concatenate([rng.integers(lo, hi + 1, (shape[0] // 2, *shape[1:])),
                        np.clip(rng.integers(qx[1] - 3, qx[1] + 4, (shape[0] - shape[0] // 2, *shape[1:])), lo, hi)])
    x = x.astype(np.int8 if dtype == "i8" else np.int16)
    # int16's window op: for Ethos-U85 only
    (got,), low = run(g, [x], semantics="litert", target="ethos-u85" if dtype == "i16" else None)
    assert summing in ops_of(low) and "tosa.reduce_sum" not in ops_of(low)
    want = tfl_mean_or_sum(x, (1, 2), *qx, *qy, lo, hi, mean=True)
    np.testing.assert_array_equal(got.reshape(want.shape).astype(np.int64), want)


# ------------------------------------------------------------------------------ stride-2 convolution
@pytest.mark.parametrize("target", [None, "ethos-u55", "ethos-u85"])
def test_stride_two_convolutions_of_an_even_width(target):
    """ResNet-50's stride-2 1x1 convolutions, two reading one input (the block's main branch and its
    shortcut). Without a preset the column past the last window is a zero-point tap of a 1 x 2 kernel,
    not a slice of the input's width; under an Ethos-U preset one DEPTHWISE_CONV2D subsamples the
    input for both, and the convolutions are 1x1 of stride 1. TFLite's integers on random data."""
    rng = np.random.default_rng(7)
    qx, qy, sw = (f32(0.0454), -128), (f32(0.0212), -128), f32(0.0031)
    x = rng.integers(-128, 128, (2, 8, 8, 8)).astype(np.int8)
    g = Graph()
    b = Builder(g, Loc("conv"))
    xin = g.add_input(qtype(x.shape, "i8", *qx), "x")
    weights, biases = [], []
    for i, out in enumerate((6, 5)):
        w = rng.integers(-127, 128, (out, 1, 1, 8)).astype(np.int8)
        bias = rng.integers(-3000, 3000, out).astype(np.int32)
        weights.append(w)
        biases.append(bias)
        wc = b.constant(w, "i8", Quant((float(sw),), (0,)))
        bc = b.constant(bias, "i32", Quant((float(qx[0]) * float(sw),), (0,)))
        g.add_output(b.op("nn.conv2d", [xin, wc, bc], {"stride": [2, 2], "dilation": [1, 1], "pad": [0, 0, 0, 0],
                                                        "groups": 1}, types=[qtype((2, 4, 4, out), "i8", *qy)]), f"y{i}")
    got, low = run(g, [x], semantics="litert", target=target)
    convs = [n for n in low.nodes() if low.op(n) == "tosa.conv2d"]
    subsamples = [n for n in low.nodes() if low.op(n) == "tosa.depthwise_conv2d"]
    if target is None:
        assert not subsamples
        assert all(low.type_of(low.operand(c, 0)).shape[2] == 8 and low.type_of(low.operand(c, 1)).shape[2] == 2
                   for c in convs)
    else:
        assert len(subsamples) == 1 and low.type_of(low.operand(subsamples[0], 0)).shape[2] == 8
        assert all(low.attrs(c)["stride"] == [1, 1] and low.type_of(low.operand(c, 1)).shape[1:3] == (1, 1)
                   for c in convs)
    m, e = quantize_multiplier(float(qx[0]) * float(sw) / float(qy[0]))
    for y, w, bias in zip(got, weights, biases):
        # TFLite's ConvPerChannel: sum (x - zp) * w + bias, MultiplyByQuantizedMultiplier, + zp, clamped
        acc = np.einsum("nhwc,oc->nhwo", x[:, ::2, ::2, :].astype(np.int64) - qx[1],
                        w[:, 0, 0, :].astype(np.int64)) + bias
        want = np.clip(np.vectorize(lambda v: mbqm(int(v), m, e))(acc) + qy[1], -128, 127)
        np.testing.assert_array_equal(y.reshape(want.shape).astype(np.int64), want)


# ------------------------------------------------------------------------------ one PAD of the tensor's rank
def test_rank_four_pad_is_one_pad_and_validates():
    """One rank-4 PAD (padding !tosa.shape<8>): strict tosa-validate accepts it for the target (MLIR
    22's false alarm on the padding length is the only diagnostic left out), and it pads with the
    encoded fill."""
    x = np.arange(-128, 128, dtype=np.int8).reshape(4, 4, 4, 4)
    g = one_op("nn.pad", {"x": qtype(x.shape, "i8", 0.1, -3)}, qtype((4, 6, 5, 4), "i8", 0.1, -3),
               {"mode": "constant", "pads": [0, 0, 1, 1, 0, 1, 0, 0], "value": 0.5})
    (got,), low = run(g, [x], semantics="litert")  # run() asserts validate() == []
    assert ops_of(low) == ["tosa.pad"]
    np.testing.assert_array_equal(got, np.pad(x, [(0, 0), (1, 1), (0, 1), (0, 0)], constant_values=-3 + 5))


def test_validate_still_reports_other_level_problems():
    from nn2tosa.lowering.mlir_emitter import to_mlir, validate
    from nn2tosa.dialects.tosa_target import required_target
    from lowering_harness import lower

    shape = (1, 1, 1, 1, 1, 2, 3)  # rank 7 > MAX_RANK 6 of level 8K
    g = one_op("nn.pad", {"x": TensorType(shape, "f32")}, TensorType((1, 1, 1, 1, 1, 2, 5), "f32"),
               {"mode": "constant", "pads": [0] * 12 + [1, 1], "value": 0.0})
    low = lower(g)
    target = required_target(low)
    problems = validate(to_mlir(low), dataclasses.replace(target, level="8k"))
    assert any("MAX_RANK" in p or "rank" in p for p in problems), problems


# ------------------------------------------------------------------------------ transposed convolution
TRANSPOSE_CASES = [  # (input [n, h, w, c], kernel [o, kh, kw], stride, out_pad)
    ((1, 8, 8, 4), (5, 3, 3), [2, 2], [0, -1, 0, -1]),  # q8_transpose_conv: TFLite's SAME, 8 -> 16
    ((2, 5, 4, 3), (2, 4, 2), [3, 2], [1, 0, -1, 2]),  # padding past the scatter: the bias alone
    ((1, 3, 6, 2), (3, 2, 5), [1, 2], [-1, -1, -4, -3]),  # crops up to K - 1, stride 1 rows (no spreading)
    ((1, 4, 4, 2), (2, 3, 3), [2, 2], [-3, -2, 1, -5]),  # deeper than K - 1: the rule's slice crops the rest
]


@pytest.mark.parametrize("form", ["upsample_then_conv2d", "phase_conv2d"])
@pytest.mark.parametrize("case", TRANSPOSE_CASES)
def test_transpose_conv_npu_forms_are_the_same(case, form, monkeypatch):
    """Under an Ethos-U preset a transposed convolution of int8 data is stride-1 CONV2Ds (Vela fuses
    its requantization there): of the input spread by the stride, or of the input itself once per row
    phase (where every phase's padding is 0 or more: else the spread form). Both give the same
    integers as the TRANSPOSE_CONV2D form on random data, per-channel weight scales, non-zero zero
    points."""
    preset = NPU_TARGETS["ethos-u55"]
    monkeypatch.setitem(NPU_TARGETS, "ethos-u55", dataclasses.replace(
        preset, forms={**preset.forms, "transpose_conv": form}))
    (n, h, w, c), (o, kh, kw), stride, out_pad = case
    rng = np.random.default_rng(11)
    oh = (h - 1) * stride[0] + kh + out_pad[0] + out_pad[1]
    ow = (w - 1) * stride[1] + kw + out_pad[2] + out_pad[3]
    qx, qy = (f32(0.031), 9), (f32(0.047), -7)
    sw = tuple(float(f32(s)) for s in rng.uniform(0.002, 0.006, o))
    x = rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)
    weights = rng.integers(-127, 128, (o, kh, kw, c)).astype(np.int8)
    bias = rng.integers(-2000, 2000, o).astype(np.int32)
    outputs, forms = [], []
    for target in (None, "ethos-u55"):
        g = Graph()
        b = Builder(g, Loc("tconv"))
        xin = g.add_input(qtype(x.shape, "i8", *qx), "x")
        wc = b.constant(weights, "i8", Quant(sw, (0,) * o, 0))
        bc = b.constant(bias, "i32", Quant(tuple(float(qx[0]) * s for s in sw), (0,) * o, 0))
        g.add_output(b.op("nn.transpose_conv2d", [xin, wc, bc], {"stride": stride, "out_pad": out_pad},
                          types=[qtype((n, oh, ow, o), "i8", *qy)]), "y")
        (y,), low = run(g, [x], semantics="litert", target=target)
        outputs.append(y)
        forms.append(ops_of(low))
    assert "tosa.conv2d" not in forms[0]
    assert "tosa.conv2d" in forms[1]
    tosa_pad = [max(p, 1 - k) for p, k in zip(out_pad, (kh, kh, kw, kw))]
    phases = form == "phase_conv2d" and phases_fit((n, h, w, c), (kh, kw), stride, tosa_pad)
    assert phases or not (form == "phase_conv2d" and case == TRANSPOSE_CASES[0])  # the corpus file's: 8 -> 16
    assert forms[1].count("tosa.transpose_conv2d") == (stride != [1, 1] and not phases)
    assert forms[1].count("tosa.conv2d") == (stride[0] if phases else 1)
    np.testing.assert_array_equal(outputs[1], outputs[0])
    assert len(np.unique(outputs[0])) > 20  # not saturated: the data exercise the sums


# ------------------------------------------------------------------------------ strided slice
@pytest.mark.parametrize("target", [None, "ethos-u55", "ethos-u85"])
@pytest.mark.parametrize("begin, end, strides", [
    ([0, 1, 0, 0], [1, 6, 8, 4], [1, 2, 2, 1]),  # q8_strided_slice_pad's: rows 1, 3, 5, every other column
    ([0, 0, 1, 1], [2, 9, 7, 5], [1, 3, 1, 2]),  # rows by 3, channels by 2 (the reshape form for those)
    ([1, 8, 6, 0], [-3, -10, -9, 5], [-1, -2, -3, 1]),  # reversed: batch, rows by 2, columns by 3
    ([0, 2, 0, 0], [2, 3, 8, 5], [1, 4, 5, 1]),  # one row, columns 0 and 5
])
def test_strided_slice_of_int8_rows_and_columns(begin, end, strides, target):
    """Strides of int8 rows and columns: under the Ethos-U55 preset one DEPTHWISE_CONV2D of weight 1
    with those strides (and a RESCALE by 1) after one SLICE, under the Ethos-U85 preset one MAX_POOL2D
    of 1x1 windows with those strides, otherwise reshapes and slices; numpy's slicing every way."""
    x = np.random.default_rng(5).integers(-128, 128, (2, 9, 8, 5)).astype(np.int8)
    want = x[tuple(slice(b, None if e < -len_ else e, s) for b, e, s, len_ in zip(begin, end, strides, x.shape))]
    g = Graph()
    xin = g.add_input(TensorType(x.shape, "i8"), "x")
    g.add_output(Builder(g, Loc("ss")).op("nn.strided_slice", [xin], {"begin": begin, "end": end, "strides": strides},
                                          types=[TensorType(want.shape, "i8")]), "y")
    (got,), low = run(g, [x], semantics="litert", target=target)
    np.testing.assert_array_equal(got, want)
    strided = any(abs(s) > 1 and n > 1 for s, n in zip(strides[1:3], want.shape[1:3]))
    assert ops_of(low).count("tosa.depthwise_conv2d") == (target == "ethos-u55" and strided)
    assert ops_of(low).count("tosa.max_pool2d") == (target == "ethos-u85" and strided)
