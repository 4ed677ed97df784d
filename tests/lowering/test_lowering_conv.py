"""Lowering of nn.conv2d / depthwise_conv2d / conv3d / transpose_conv2d, checked end to end: the
numpy reference of the nn graph against the lowered .tosa on the TOSA reference model, and the
lowered MLIR through strict tosa-validate (tests/lowering_harness.py). Random cases (hypothesis) cover
the attribute space; named cases pin the decompositions' edges."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.ir import Graph, TensorType, Value

from lowering_harness import builder, check_lowering, lower, nn_graph, random_input

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = ("f32", "f16", "bf16")


def _weights(g: Graph, rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> Value:
    return builder(g, "weights").constant(random_input(rng, TensorType(shape, dtype), -1, 1), dtype)


def _window(size: int, kernel: int, stride: int, dilation: int, before: int, after: int) -> int:
    return (size + before + after - (kernel - 1) * dilation - 1) // stride + 1


def _check_conv_cases(op: str, cases, dtype: str, seed: int, bias_length=lambda w: w[0]) -> None:
    """One graph holding every drawn case of `op` (input, weights, optional bias), lowered and checked."""
    rng = np.random.default_rng(seed)
    g = Graph()
    for i, (x_shape, w_shape, attrs, with_bias) in enumerate(cases):
        x = g.add_input(TensorType(x_shape, dtype), f"x{i}")
        bias = [_weights(g, rng, (bias_length(w_shape),), dtype)] if with_bias else []
        g.add_output(builder(g).op(op, [x, _weights(g, rng, w_shape, dtype), *bias], attrs), f"y{i}")
    check_lowering(g, seed=seed)


@st.composite
def conv2d_cases(draw):
    """(input shape, weight shape, attrs, with bias) of a valid nn.conv2d."""
    groups_kind = draw(st.sampled_from(["one", "depthwise", "grouped"]))
    groups = 1 if groups_kind == "one" else draw(st.integers(2, 4))
    per_group = 1 if groups_kind == "depthwise" else draw(st.integers(1, 3))
    out_per_group = draw(st.integers(1, 3))
    kernel = [draw(st.integers(1, 4)) for _ in range(2)]
    stride = [draw(st.integers(1, 3)) for _ in range(2)]
    dilation = [draw(st.integers(1, 3)) for _ in range(2)]
    pad = [draw(st.integers(0, 4)) for _ in range(4)]
    size = [draw(st.integers(1, 9)) for _ in range(2)]
    for i in range(2):  # at least one output position
        size[i] = max(size[i], (kernel[i] - 1) * dilation[i] + 1 - pad[2 * i] - pad[2 * i + 1])
    x = (draw(st.integers(1, 2)), *size, groups * per_group)
    w = (groups * out_per_group, *kernel, per_group)
    return x, w, {"stride": stride, "dilation": dilation, "pad": pad, "groups": groups}, draw(st.booleans())


@given(cases=st.lists(conv2d_cases(), min_size=1, max_size=6), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 99))
@SETTINGS
def test_conv2d_random(cases, dtype, seed):
    _check_conv_cases("nn.conv2d", cases, dtype, seed)


@st.composite
def depthwise_cases(draw):
    kernel = [draw(st.integers(1, 4)) for _ in range(2)]
    stride = [draw(st.integers(1, 3)) for _ in range(2)]
    dilation = [draw(st.integers(1, 3)) for _ in range(2)]
    pad = [draw(st.integers(0, 3)) for _ in range(4)]
    size = [max(draw(st.integers(1, 8)), (k - 1) * d + 1 - pad[2 * i] - pad[2 * i + 1])
            for i, (k, d) in enumerate(zip(kernel, dilation))]
    channels, multiplier = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    return ((1, *size, channels), (*kernel, channels, multiplier),
            {"stride": stride, "dilation": dilation, "pad": pad}, draw(st.booleans()))


@given(cases=st.lists(depthwise_cases(), min_size=1, max_size=6), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 99))
@SETTINGS
def test_depthwise_conv2d_random(cases, dtype, seed):
    _check_conv_cases("nn.depthwise_conv2d", cases, dtype, seed, bias_length=lambda w: w[2] * w[3])


@st.composite
def conv3d_cases(draw):
    kernel = [draw(st.integers(1, 3)) for _ in range(3)]
    stride = [draw(st.integers(1, 2)) for _ in range(3)]
    dilation = [draw(st.integers(1, 2)) for _ in range(3)]
    pad = [draw(st.integers(0, 2)) for _ in range(6)]
    size = [max(draw(st.integers(1, 5)), (k - 1) * d + 1 - pad[2 * i] - pad[2 * i + 1])
            for i, (k, d) in enumerate(zip(kernel, dilation))]
    cin, cout = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return ((1, *size, cin), (cout, *kernel, cin), {"stride": stride, "dilation": dilation, "pad": pad},
            draw(st.booleans()))


@given(cases=st.lists(conv3d_cases(), min_size=1, max_size=4), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 99))
@SETTINGS
def test_conv3d_random(cases, dtype, seed):
    _check_conv_cases("nn.conv3d", cases, dtype, seed)


@st.composite
def transpose_conv_cases(draw):
    kernel = [draw(st.integers(1, 4)) for _ in range(2)]
    stride = [draw(st.integers(1, 3)) for _ in range(2)]
    size = [draw(st.integers(1, 5)) for _ in range(2)]
    out_pad = []
    for i in range(2):  # from deep crops (below -kernel, which TOSA cannot take) to growth
        full = (size[i] - 1) * stride[i] + kernel[i]
        before = draw(st.integers(-full + 1, 3))
        out_pad += [before, draw(st.integers(-full - before + 1, 3))]
    cin, cout = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return (1, *size, cin), (cout, *kernel, cin), {"stride": stride, "out_pad": out_pad}, draw(st.booleans())


@given(cases=st.lists(transpose_conv_cases(), min_size=1, max_size=6), dtype=st.sampled_from(FLOATS),
       seed=st.integers(0, 99))
@SETTINGS
def test_transpose_conv2d_random(cases, dtype, seed):
    _check_conv_cases("nn.transpose_conv2d", cases, dtype, seed)


# ------------------------------------------------------------------------------ named edges
def _conv2d_graph(x_shape, w_shape, attrs, dtype="f32", bias=True, seed=0) -> Graph:
    rng = np.random.default_rng(seed)
    g, x = nn_graph({"x": (x_shape, dtype)})
    operands = [x, _weights(g, rng, w_shape, dtype)] + ([_weights(g, rng, (w_shape[0],), dtype)] if bias else [])
    g.add_output(builder(g).op("nn.conv2d", operands, attrs), "y")
    return g


def test_grouped_conv_shapes():
    """groups == channels is a depthwise convolution (weights rearranged at conversion time, no
    transpose op); other group counts are one conv2d per group, concatenated."""
    attrs = {"stride": [1, 1], "dilation": [1, 1], "pad": [1, 1, 1, 1]}
    depthwise = _conv2d_graph((1, 5, 5, 3), (6, 3, 3, 1), {**attrs, "groups": 3})
    report = check_lowering(depthwise)
    assert report.tosa_ops.get("tosa.depthwise_conv2d") == 1 and "tosa.transpose" not in report.tosa_ops
    grouped = _conv2d_graph((1, 5, 5, 6), (4, 3, 3, 3), {**attrs, "groups": 2})
    report = check_lowering(grouped)
    assert report.tosa_ops["tosa.conv2d"] == 2 and report.tosa_ops["tosa.concat"] == 1


def test_more_groups_than_one_concat_takes():
    """Level 8K allows 64 operands per CONCAT: 70 groups concatenate in a tree."""
    g = _conv2d_graph((1, 3, 3, 140), (70, 1, 1, 2), {"stride": [1, 1], "dilation": [1, 1], "pad": [0, 0, 0, 0],
                                                     "groups": 70}, bias=False)
    report = check_lowering(g)
    assert report.tosa_ops["tosa.conv2d"] == 70 and report.tosa_ops["tosa.concat"] == 3


def test_inexact_output_size_crops_input_when_padding_is_short():
    """Rows past the last window: (9 + 0 - 3) % 4 = 2 with no trailing padding, and (9 + 1 - 3) % 4 = 3
    with one row of it: the input is sliced to 7 x 7 and the padding dropped."""
    g = _conv2d_graph((1, 9, 9, 2), (2, 3, 3, 2), {"stride": [4, 4], "dilation": [1, 1], "pad": [0, 0, 0, 1],
                                                   "groups": 1})
    low = lower(g)
    (conv,) = [n for n in low.nodes() if low.op(n) == "tosa.conv2d"]
    assert low.attrs(conv)["pad"] == [0, 0, 0, 0]
    assert low.type_of(low.operand(conv, 0)).shape == (1, 7, 7, 2)
    check_lowering(g)


def test_f16_accumulates_in_f32():
    """A long f16 dot product: f32 accumulation keeps it to one f16 rounding."""
    g = _conv2d_graph((1, 1, 1, 512), (4, 1, 1, 512), {"stride": [1, 1], "dilation": [1, 1], "pad": [0, 0, 0, 0],
                                                      "groups": 1}, dtype="f16")
    low = lower(g)
    (conv,) = [n for n in low.nodes() if low.op(n) == "tosa.conv2d"]
    assert low.attrs(conv)["acc_type"] == "f32" and low.types(conv)[0].dtype == "f16"
    report = check_lowering(g, tolerance={"f16": 1e-3})
    assert report.errors["y"] <= 1e-3


def test_weights_from_a_graph_input():
    g, x, w = nn_graph({"x": ((1, 4, 4, 4), "f32"), "w": ((8, 2, 2, 1), "f32")})
    g.add_output(builder(g).op("nn.conv2d", [x, w], {"stride": [1, 1], "dilation": [1, 1], "pad": [0, 1, 0, 1],
                                                     "groups": 4}), "y")
    report = check_lowering(g)
    assert report.tosa_ops["tosa.transpose"] == 1  # weights rearranged at run time


def test_transpose_conv_deep_crop_is_a_slice():
    rng = np.random.default_rng(0)
    g, x = nn_graph({"x": ((1, 4, 4, 2), "f32")})
    w = _weights(g, rng, (3, 2, 2, 2), "f32")
    g.add_output(builder(g).op("nn.transpose_conv2d", [x, w], {"stride": [2, 2], "out_pad": [-3, -2, 1, -5]}), "y")
    low = lower(g)
    (tc,) = [n for n in low.nodes() if low.op(n) == "tosa.transpose_conv2d"]
    assert low.attrs(tc)["out_pad"] == [-1, -1, 1, -1]
    assert "tosa.slice" in low.histogram()
    check_lowering(g)


def test_mixed_precision_operands_compute_in_f32():
    rng = np.random.default_rng(0)
    g, x = nn_graph({"x": ((1, 4, 4, 2), "f16")})
    w = _weights(g, rng, (3, 2, 2, 2), "f32")
    g.add_output(builder(g).op("nn.conv2d", [x, w], {"stride": [1, 1], "dilation": [1, 1], "pad": [0, 0, 0, 0],
                                                     "groups": 1}), "y")
    check_lowering(g)


@pytest.mark.parametrize("op", ["nn.conv2d", "nn.depthwise_conv2d", "nn.conv3d", "nn.transpose_conv2d"])
def test_integer_convolutions_are_reported(op):
    """Plain integer data has no TOSA convolution (quantized data has its own rules)."""
    shapes = {"nn.conv2d": ((1, 3, 3, 2), (2, 1, 1, 2)), "nn.depthwise_conv2d": ((1, 3, 3, 2), (1, 1, 2, 1)),
              "nn.conv3d": ((1, 2, 3, 3, 2), (2, 1, 1, 1, 2)), "nn.transpose_conv2d": ((1, 3, 3, 2), (2, 1, 1, 2))}
    attrs = {"nn.conv2d": {"stride": [1, 1], "dilation": [1, 1], "pad": [0] * 4, "groups": 1},
             "nn.depthwise_conv2d": {"stride": [1, 1], "dilation": [1, 1], "pad": [0] * 4},
             "nn.conv3d": {"stride": [1] * 3, "dilation": [1] * 3, "pad": [0] * 6},
             "nn.transpose_conv2d": {"stride": [1, 1], "out_pad": [0] * 4}}[op]
    x_shape, w_shape = shapes[op]
    g = Graph()
    x = g.add_input(TensorType(x_shape, "i32"), "x")
    b = builder(g, "layer")
    g.add_output(b.op(op, [x, b.constant(np.ones(w_shape, np.int32), "i32")], attrs), "y")
    with pytest.raises(UnsupportedError, match=r"layer .*on i32 tensors: TOSA computes it on floats"):
        lower(g)
