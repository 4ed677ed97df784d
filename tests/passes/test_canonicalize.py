"""canonicalize on whole networks: the numbers stay (checked with the independent numpy reference in
nn_reference.py), NCHW networks keep transposes only at their boundary, and the work grows
linearly with the graph. Pattern-by-pattern behaviour is in lit_tests/passes/canonicalize."""
from __future__ import annotations

import numpy as np
import pytest

from nn2tosa.ir import Builder, Graph, TensorType, Value, verify
from nn2tosa.passes import PassManager
from nn2tosa.passes.canonicalize import canonicalize_graph

from nn_reference import evaluate

TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]


class NchwNet:
    """Builds networks the way legalizing an NCHW source does: every NHWC-only op (conv, pool)
    wrapped in transposes, everything else (batch norm on axis 1, activations, adds, concats along
    channels, channel constants [C, 1, 1]) computed in NCHW."""

    def __init__(self, rng: np.random.Generator, shape=(1, 3, 8, 8), dtype: str = "f32"):
        self.rng = rng
        self.dtype = dtype
        self.np_dtype = TensorType((), dtype).numpy_dtype
        self.g = Graph()
        self.x = self.g.add_input(TensorType(shape, dtype), "x")
        self.b = Builder(self.g)

    def channels(self, v: Value) -> int:
        return self.g.type_of(v).shape[1]

    def const(self, array: np.ndarray) -> Value:
        return self.b.constant(np.asarray(array, self.np_dtype), dtype=self.dtype)

    def nhwc(self, v: Value, op: str, attrs: dict, *operands: Value) -> Value:
        t = self.b.op("nn.transpose", [v], {"perm": TO_NHWC})
        y = self.b.op(op, [t, *operands], attrs)
        return self.b.op("nn.transpose", [y], {"perm": TO_NCHW})

    def conv(self, v: Value, out: int, k: int = 3, stride: int = 1, bias: bool = True) -> Value:
        c = self.channels(v)
        w = self.const(self.rng.standard_normal((out, k, k, c)) / np.sqrt(k * k * c))
        operands = [w] + ([self.const(self.rng.standard_normal(out) * 0.1)] if bias else [])
        p = k // 2
        return self.nhwc(v, "nn.conv2d", {"stride": [stride, stride], "dilation": [1, 1], "pad": [p, p, p, p],
                                          "groups": 1}, *operands)

    def depthwise(self, v: Value, k: int = 3) -> Value:
        c = self.channels(v)
        w = self.const(self.rng.standard_normal((k, k, c, 1)) / k)
        p = k // 2
        return self.nhwc(v, "nn.depthwise_conv2d", {"stride": [1, 1], "dilation": [1, 1], "pad": [p, p, p, p]}, w)

    def batch_norm(self, v: Value) -> Value:
        c = self.channels(v)
        stats = [self.rng.standard_normal(c) * 0.1, self.rng.random(c) + 0.5, self.rng.random(c) + 0.5,
                 self.rng.standard_normal(c) * 0.1]
        return self.b.op("nn.batch_norm", [v, *map(self.const, stats)], {"epsilon": 1e-5, "axis": 1})

    def activation(self, v: Value, kind: str) -> Value:
        if kind == "relu":
            return self.b.op("nn.relu", [v])
        if kind == "relu6":  # as a source that has no relu6 writes it
            low = self.b.op("nn.maximum", [v, self.const(0.0)])
            return self.b.op("nn.minimum", [low, self.const(np.full((1, 1, 1, 1), 6.0))])
        if kind == "hard_swish":
            return self.b.op("nn.hard_swish", [v])
        if kind == "leaky":
            return self.b.op("nn.leaky_relu", [v], {"alpha": 0.1})
        return self.b.op("nn.sigmoid", [v])

    def channel_affine(self, v: Value) -> Value:
        c = self.channels(v)
        scaled = self.b.op("nn.mul", [v, self.const(self.rng.random((c, 1, 1)) + 0.5)])
        return self.b.op("nn.add", [scaled, self.const(self.rng.standard_normal((c, 1, 1)))])

    def pool(self, v: Value, kind: str) -> Value:
        attrs = {"kernel": [2, 2], "stride": [2, 2], "pad": [0, 0, 0, 0]}
        if kind == "max":
            return self.nhwc(v, "nn.max_pool2d", {**attrs, "dilation": [1, 1]})
        return self.nhwc(v, "nn.avg_pool2d", {**attrs, "count_pad": [0, 0, 0, 0], "divisor": 0})

    def head(self, v: Value, kind: str, classes: int = 5) -> Value:
        n, c, h, w = self.g.type_of(v).shape
        if kind == "mean":
            v = self.b.op("nn.reduce_mean", [v], {"axes": [2, 3], "keep_dims": False})
            features = c
        elif kind == "flatten":
            v = self.b.op("nn.reshape", [v], {"shape": [n, c * h * w]})
            features = c * h * w
        else:
            return v
        w = self.const(self.rng.standard_normal((classes, features)) / np.sqrt(features))
        y = self.b.op("nn.fully_connected", [v, w, self.const(np.zeros(classes))])
        return self.b.op("nn.softmax", [y], {"axis": 1, "beta": 1.0})


def random_net(seed: int, dtype: str = "f32") -> tuple[Graph, np.ndarray]:
    """A small random NCHW CNN: conv/bn/activation blocks, residual adds, concats, pools, a head."""
    rng = np.random.default_rng(seed)
    net = NchwNet(rng, dtype=dtype)
    v = net.activation(net.batch_norm(net.conv(net.x, 4, bias=False)), "relu")
    for _ in range(int(rng.integers(2, 5))):
        kind = rng.choice(["residual", "concat", "affine", "depthwise", "pool"])
        act = str(rng.choice(["relu", "relu6", "hard_swish", "leaky", "sigmoid"]))
        if kind == "residual":
            branch = net.batch_norm(net.conv(v, net.channels(v)))
            v = net.activation(net.b.op("nn.add", [v, branch]), act)
        elif kind == "concat":
            left = net.activation(net.conv(v, 2, k=1), act)
            right = net.activation(net.batch_norm(net.conv(v, 3)), "relu")
            v = net.b.op("nn.concat", [left, right], {"axis": 1})
        elif kind == "affine":
            v = net.activation(net.channel_affine(net.conv(v, net.channels(v))), act)
        elif kind == "depthwise":
            v = net.activation(net.batch_norm(net.depthwise(v)), act)
        elif net.g.type_of(v).shape[2] >= 4:
            v = net.pool(v, str(rng.choice(["max", "avg"])))
    net.g.add_output(net.head(v, ["mean", "flatten", "none"][seed % 3]), "y")
    x = rng.standard_normal(net.g.type_of(net.x).shape).astype(net.np_dtype)
    return net.g, x


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """Max abs error relative to max(1, max |want|) (the corpus' fp32 rule)."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want))))


def count(graph: Graph, op: str) -> int:
    return graph.histogram().get(op, 0)


@pytest.mark.parametrize("seed", range(12))
def test_random_nchw_net_keeps_its_numbers_and_loses_its_inner_transposes(seed):
    g, x = random_net(seed)
    verify(g)
    before = evaluate(g, [x])
    original = g.copy()
    PassManager.from_names("canonicalize").run(g)  # verifies the result
    after = evaluate(g, [x])
    assert relative_error(after[0], before[0]) <= 1e-5
    assert count(g, "nn.transpose") <= 2
    for gone in ("nn.batch_norm", "nn.relu", "nn.maximum", "nn.minimum", "nn.identity"):
        assert count(g, gone) == 0, gone
    # the graph it started from still computes the same: constants were not modified in place
    np.testing.assert_array_equal(evaluate(original, [x])[0], before[0])


def test_nchw_conv_net_has_one_transpose_at_each_boundary():
    """A ResNet-style stack (conv, bn, relu, residual add, pool) with a feature-map output."""
    rng = np.random.default_rng(7)
    net = NchwNet(rng, shape=(2, 3, 8, 8))
    v = net.activation(net.batch_norm(net.conv(net.x, 4)), "relu")
    for _ in range(3):
        branch = net.activation(net.batch_norm(net.conv(v, 4)), "relu")
        v = net.activation(net.b.op("nn.add", [v, net.batch_norm(net.conv(branch, 4))]), "relu")
    v = net.pool(v, "max")
    net.g.add_output(v, "features")
    g = net.g
    assert count(g, "nn.transpose") == 2 * 8
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    before = evaluate(g, [x])
    canonicalize_graph(g)
    verify(g)
    transposes = [n for n in g.nodes() if g.op(n) == "nn.transpose"]
    assert len(transposes) == 2
    perms = sorted(g.attrs(n)["perm"] for n in transposes)
    assert perms == [TO_NHWC, TO_NCHW]
    input_side = next(n for n in transposes if g.attrs(n)["perm"] == TO_NHWC)
    assert g.operands(input_side)[0] == g.input_values()[0]
    assert g.outputs[0].value.node in transposes
    assert count(g, "nn.conv2d") == 7 and count(g, "nn.batch_norm") == 0
    assert relative_error(evaluate(g, [x])[0], before[0]) <= 1e-5


def test_flatten_head_keeps_only_the_input_transpose():
    rng = np.random.default_rng(3)
    net = NchwNet(rng, shape=(2, 3, 8, 8))
    v = net.pool(net.activation(net.conv(net.x, 4), "relu"), "avg")
    net.g.add_output(net.head(v, "flatten"), "y")
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    before = evaluate(net.g, [x])
    canonicalize_graph(net.g)
    assert count(net.g, "nn.transpose") == 1
    assert relative_error(evaluate(net.g, [x])[0], before[0]) <= 1e-5


def test_fp16_net_folds_in_float64_and_stays_fp16():
    g, x = random_net(4, dtype="f16")
    before = evaluate(g, [x])
    canonicalize_graph(g)
    verify(g)
    assert all(g.types(n)[0].dtype in ("f16", "i1") for n in g.nodes() if g.types(n))
    assert count(g, "nn.batch_norm") == 0
    assert relative_error(evaluate(g, [x])[0], before[0]) <= 3e-2


def test_quantized_relu_keeps_real_bounds():
    """relu on a quantized tensor with its own output scale: clamp(0, inf) with the relu's type."""
    from nn2tosa.ir import Quant

    g = Graph()
    qin = TensorType((8,), "i8", Quant((0.5,), (3,)))
    qout = TensorType((8,), "i8", Quant((0.25,), (-10,)))
    x = g.add_input(qin, "x")
    y = g.add_op("nn.relu", [x], [qout])
    g.add_output(Value(y), "y")
    data = np.arange(-60, 100, 20, dtype=np.int8)
    before = evaluate(g, [data])
    canonicalize_graph(g)
    assert g.histogram() == {"nn.clamp": 1}
    clamp = next(n for n in g.nodes() if g.op(n) == "nn.clamp")
    assert g.attrs(clamp) == {"min": 0.0, "max": float("inf")} and g.types(clamp) == [qout]
    np.testing.assert_array_equal(evaluate(g, [data])[0], before[0])


def test_batch_norm_that_cannot_fold_becomes_mul_add_with_the_same_numbers():
    rng = np.random.default_rng(11)
    net = NchwNet(rng)
    v = net.batch_norm(net.x)  # on the input: nothing to fold into
    net.g.add_output(v, "y")
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    before = evaluate(net.g, [x])
    canonicalize_graph(net.g)
    assert net.g.histogram() == {"nn.add": 1, "nn.constant": 2, "nn.mul": 1}
    assert relative_error(evaluate(net.g, [x])[0], before[0]) <= 1e-6


def resnet_chain(blocks: int) -> Graph:
    rng = np.random.default_rng(blocks)
    net = NchwNet(rng, shape=(1, 4, 4, 4))
    v = net.x
    for _ in range(blocks):
        branch = net.activation(net.batch_norm(net.conv(v, 4, k=1)), "relu6")
        v = net.activation(net.b.op("nn.add", [v, net.channel_affine(net.conv(branch, 4, k=1))]), "relu")
    net.g.add_output(v, "y")
    return net.g


def test_canonicalize_work_grows_linearly():
    """10x the blocks -> about 10x the work (ops visited + patterns tried), not 100x."""
    small, large = resnet_chain(8), resnet_chain(80)
    ratio_ops = len(large) / len(small)
    small_work, large_work = canonicalize_graph(small).work, canonicalize_graph(large).work
    assert 0.8 * ratio_ops <= large_work / small_work <= 1.25 * ratio_ops
    assert count(large, "nn.transpose") == 2


@pytest.mark.parametrize("op", ["nn.conv3d", "nn.transpose_conv2d", "nn.depthwise_conv2d", "nn.fully_connected"])
def test_batch_norm_folds_into_every_conv_kind_with_the_same_numbers(op):
    rng = np.random.default_rng(2)
    shapes = {  # input, weights, attributes
        "nn.conv3d": ((1, 3, 4, 4, 2), (3, 2, 2, 2, 2),
                      {"stride": [1, 1, 1], "dilation": [1, 1, 1], "pad": [0, 1, 1, 0, 0, 1]}),
        "nn.transpose_conv2d": ((1, 3, 3, 2), (3, 2, 2, 2), {"stride": [2, 2], "out_pad": [0, -1, 1, 0]}),
        "nn.depthwise_conv2d": ((1, 4, 4, 2), (3, 3, 2, 2), {"stride": [1, 1], "dilation": [1, 1],
                                                             "pad": [1, 1, 1, 1]}),
        "nn.fully_connected": ((2, 5, 4), (3, 4), {}),
    }
    in_shape, w_shape, attrs = shapes[op]
    g = Graph()
    b = Builder(g)
    x = g.add_input(TensorType(in_shape, "f32"), "x")
    y = b.op(op, [x, b.constant(rng.standard_normal(w_shape).astype(np.float32))], attrs)
    channels = g.type_of(y).shape[-1]
    stats = [rng.standard_normal(channels), rng.random(channels) + 0.1, rng.standard_normal(channels),
             rng.standard_normal(channels)]
    y = b.op("nn.batch_norm", [y, *(b.constant(s.astype(np.float32)) for s in stats)],
             {"epsilon": 1e-3, "axis": g.type_of(y).rank - 1})
    g.add_output(y, "y")
    data = [rng.standard_normal(in_shape).astype(np.float32)]
    before = evaluate(g, data)
    canonicalize_graph(g)
    verify(g)
    assert set(g.histogram()) == {op, "nn.constant"}
    conv = next(n for n in g.nodes() if g.op(n) == op)
    assert len(g.operands(conv)) == 3  # a bias was created
    assert relative_error(evaluate(g, data)[0], before[0]) <= 1e-5


@pytest.mark.parametrize("in_hw, kernel, stride, out_pad", [
    ((9, 5), (3, 3), (2, 2), [-1, -9, -1, -1]),     # the bottom rows' scatter is cropped away
    ((9, 5), (3, 2), (2, 3), [-7, -1, 0, -6]),      # the top rows', and the left columns'
    ((40, 4), (3, 3), (2, 2), [-1, -70, -1, -2]),   # a sliver of a tall input (the fuzz finding's shape)
    ((3, 3), (4, 4), (1, 1), [-2, -2, 2, 1]),       # every row reaches a kept row
])
def test_a_cropped_transpose_conv_reads_only_the_rows_that_reach_its_result(in_hw, kernel, stride, out_pad):
    rng = np.random.default_rng(5)
    g = Graph()
    b = Builder(g)
    x = g.add_input(TensorType((1, *in_hw, 3), "f32"), "x")
    w = b.constant(rng.standard_normal((2, *kernel, 3)).astype(np.float32))
    y = b.op("nn.transpose_conv2d", [x, w, b.constant(rng.standard_normal(2).astype(np.float32))],
             {"stride": list(stride), "out_pad": out_pad})
    g.add_output(y, "y")
    data = [rng.standard_normal((1, *in_hw, 3)).astype(np.float32)]
    before = evaluate(g, data)[0]
    canonicalize_graph(g)
    verify(g)
    assert evaluate(g, data)[0].shape == before.shape
    np.testing.assert_allclose(evaluate(g, data)[0], before, rtol=1e-6, atol=1e-6)
    conv = next(n for n in g.nodes() if g.op(n) == "nn.transpose_conv2d")
    kept = g.type_of(g.operand(conv, 0)).shape
    trims = kept != (1, *in_hw, 3)
    assert trims == (in_hw != (3, 3)), kept
    if trims:
        assert "nn.slice" in g.histogram()
        assert min(g.attrs(conv)["out_pad"]) > -max(kernel)  # a crop no deeper than the kernel is left
