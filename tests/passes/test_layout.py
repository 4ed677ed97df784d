"""The layout pass: permutation algebra, random chains of layout-agnostic ops around transposes
(same numbers before and after, checked with the numpy reference), and linear work."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from nn2tosa.ir import Builder, Graph, Quant, TensorType, Value, verify
from nn2tosa.passes import PassManager
from nn2tosa.passes.layout import compose, drop_axes, inverse, per_dim, sink_transposes, transposed_type

from nn_reference import evaluate


# ------------------------------------------------------------------------------ permutation algebra
PERMS = list(itertools.permutations(range(4)))


@pytest.mark.parametrize("p", PERMS[::5])
def test_compose_and_inverse_agree_with_numpy(p):
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    for q in PERMS[::7]:
        np.testing.assert_array_equal(x.transpose(p).transpose(q), x.transpose(compose(p, q)))
    np.testing.assert_array_equal(x.transpose(p).transpose(inverse(p)), x)


def test_per_dim_and_drop_axes_follow_the_physical_tensor():
    phys = np.zeros((2, 3, 4, 5))
    P = (0, 3, 1, 2)  # logical = phys.transpose(P): logical shape (2, 5, 3, 4)
    logical_shape = phys.transpose(P).shape
    assert per_dim(list(logical_shape), P) == list(phys.shape)
    # summing logical axes {2, 3} = physical axes {P[2], P[3]} = {1, 2}: the rest keep order (0, 3)
    remaining = phys.sum(axis=(1, 2))
    assert remaining.transpose(drop_axes(P, {2, 3})).shape == phys.transpose(P).sum(axis=(2, 3)).shape


def test_transposed_type_moves_the_quantization_axis():
    t = TensorType((2, 3, 4), "i8", Quant((0.1, 0.2, 0.3), (0, 0, 0), axis=1))
    moved = transposed_type(t, (2, 0, 1))
    assert moved.shape == (4, 2, 3) and moved.quant.axis == 2


# ------------------------------------------------------------------------------ random chains
AGNOSTIC = ["unary", "binary_const", "binary_low_rank", "binary_input", "pad", "slice", "strided_slice", "concat",
            "reduce", "softmax", "reverse", "tile", "split", "batch_norm", "argmax", "unsqueeze_squeeze", "cast",
            "select", "l2_normalize", "transpose", "broadcast_to", "diamond", "barrier"]


class Chain:
    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.g = Graph()
        self.b = Builder(self.g)
        self.inputs: list[np.ndarray] = []

    def input(self, shape) -> Value:
        self.inputs.append(self.rng.standard_normal(shape).astype(np.float32))
        return self.g.add_input(TensorType(tuple(shape), "f32"), f"in{len(self.inputs)}")

    def shape(self, v: Value) -> tuple[int, ...]:
        return self.g.type_of(v).shape

    def const(self, shape) -> Value:
        return self.b.constant(self.rng.standard_normal(shape).astype(np.float32))

    def transpose(self, v: Value) -> Value:
        perm = [int(p) for p in self.rng.permutation(len(self.shape(v)))]
        return self.b.op("nn.transpose", [v], {"perm": perm})

    def step(self, v: Value, kind: str) -> Value:
        b, rng, shape = self.b, self.rng, self.shape(v)
        rank = len(shape)
        axis = int(rng.integers(rank))
        if kind == "unary":
            return b.op(str(rng.choice(["nn.neg", "nn.abs", "nn.tanh", "nn.relu", "nn.identity"])), [v])
        if kind == "binary_const":
            c_shape = [d if rng.random() < 0.5 else 1 for d in shape]
            return b.op(str(rng.choice(["nn.add", "nn.mul", "nn.sub", "nn.maximum"])), [v, self.const(c_shape)])
        if kind == "binary_low_rank":  # numpy broadcasting of a lower-rank operand
            return b.op("nn.add", [self.const(shape[-2:]), v])
        if kind == "binary_input":  # another value arriving through its own transpose
            perm = [int(p) for p in rng.permutation(rank)]
            other = self.input([shape[i] for i in inverse(perm)])  # transpose(other, perm) has v's shape
            return b.op("nn.mul", [v, b.op("nn.transpose", [other], {"perm": perm})])
        if kind == "pad":
            pads = [int(p) for p in rng.integers(0, 2, 2 * rank)]
            mode = str(rng.choice(["constant", "reflect", "edge"]))
            return b.op("nn.pad", [v], {"pads": pads, "mode": mode, "value": 0.5})
        if kind == "slice":
            begin = [int(rng.integers(d)) for d in shape]
            size = [int(rng.integers(1, d - s + 1)) for d, s in zip(shape, begin)]
            return b.op("nn.slice", [v], {"begin": begin, "size": size})
        if kind == "strided_slice":
            strides = [int(rng.choice([1, 2, -1])) for _ in shape]
            begin = [d - 1 if s < 0 else 0 for d, s in zip(shape, strides)]
            end = [-d - 1 if s < 0 else d for d, s in zip(shape, strides)]
            return b.op("nn.strided_slice", [v], {"begin": begin, "end": end, "strides": strides})
        if kind == "concat":
            other_shape = list(shape)
            other_shape[axis] = 2
            return b.op("nn.concat", [v, self.const(other_shape), v], {"axis": axis})
        if kind == "reduce":
            axes = sorted({axis, int(rng.integers(rank))})
            op = str(rng.choice(["nn.reduce_sum", "nn.reduce_max", "nn.reduce_mean"]))
            return b.op(op, [v], {"axes": axes, "keep_dims": bool(rank <= 2 or rng.random() < 0.5)})
        if kind == "softmax":
            return b.op(str(rng.choice(["nn.softmax", "nn.log_softmax"])), [v], {"axis": axis, "beta": 0.7})
        if kind == "reverse":
            return b.op("nn.reverse", [v], {"axes": sorted({axis, int(rng.integers(rank))})})
        if kind == "tile":
            return b.op("nn.tile", [v], {"multiples": [int(m) for m in rng.integers(1, 3, rank)]})
        if kind == "split" and shape[axis] >= 2:
            parts = b.op_results("nn.split", [v], {"axis": axis, "sizes": [1, shape[axis] - 1]})
            self.g.add_output(parts[0], f"piece{len(self.g.outputs)}")
            return parts[1]
        if kind == "batch_norm":
            c = shape[axis]
            stats = [self.b.constant(a.astype(np.float32)) for a in (rng.standard_normal(c), rng.random(c) + 0.5,
                                                                     rng.standard_normal(c), rng.standard_normal(c))]
            return b.op("nn.batch_norm", [v, *stats], {"epsilon": 1e-3, "axis": axis})
        if kind == "argmax":
            keep = bool(rng.random() < 0.5)
            index = b.op("nn.argmax", [v], {"axis": axis, "keep_dims": keep, "output_type": "i32"})
            self.g.add_output(index, f"argmax{len(self.g.outputs)}")
            return v
        if kind == "unsqueeze_squeeze":
            grown = b.op("nn.reshape", [v], {"shape": list(shape[:axis]) + [1] + list(shape[axis:])})
            units = [i for i, d in enumerate(self.shape(grown)) if d == 1]
            drop = int(rng.choice(units))
            return b.op("nn.reshape", [grown], {"shape": [d for i, d in enumerate(self.shape(grown)) if i != drop]})
        if kind == "cast":
            half = b.op("nn.cast", [v], types=[self.g.type_of(v).with_dtype("f16")])
            return b.op("nn.cast", [half], types=[self.g.type_of(v)])
        if kind == "select":
            positive = b.op("nn.greater", [v, self.b.constant(np.float32(0))])
            return b.op("nn.select", [positive, v, self.const([1] * rank)])
        if kind == "l2_normalize":
            return b.op("nn.l2_normalize", [v], {"axes": [axis], "epsilon": 1e-6})
        if kind == "transpose":
            return self.transpose(v)
        if kind == "diamond":  # two paths from v that meet again
            return b.op("nn.add", [b.op("nn.neg", [v]), b.op("nn.exp", [b.op("nn.neg", [v])])])
        if kind == "barrier":  # gather has no transfer rule: the pending transpose is materialized here
            indices = self.b.constant(np.array([0, shape[0] - 1], np.int32))
            return b.op("nn.gather", [v, indices], {"axis": 0})
        if kind == "broadcast_to" and 1 in shape:
            return b.op("nn.broadcast_to", [v], {"shape": [3 if d == 1 else d for d in shape]})
        return v


def random_chain(seed: int) -> tuple[Graph, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    chain = Chain(rng)
    v = chain.transpose(chain.input([2, 3, 4, 5]))
    for _ in range(8):
        v = chain.step(v, str(rng.choice(AGNOSTIC)))
        if len(chain.shape(v)) < 2 or chain.g.type_of(v).num_elements > 4000:
            break
    chain.g.add_output(v, "out")
    return chain.g, chain.inputs


@pytest.mark.parametrize("seed", range(60))
def test_random_chain_computes_the_same(seed):
    g, inputs = random_chain(seed)
    verify(g)
    before = evaluate(g, inputs)
    transposes = g.histogram().get("nn.transpose", 0)
    PassManager.from_names("layout").run(g)  # verifies
    after = evaluate(g, inputs)
    for a, b in zip(after, before):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert g.histogram().get("nn.transpose", 0) <= transposes


def test_a_transpose_meets_its_inverse_through_every_kind_of_op():
    """NHWC -> NCHW, every layout-agnostic kind once, back to NHWC: nothing left to transpose."""
    rng = np.random.default_rng(0)
    chain = Chain(rng)
    x = chain.input([2, 5, 4, 3])
    v = chain.b.op("nn.transpose", [x], {"perm": [0, 3, 1, 2]})
    for kind in ["unary", "binary_const", "binary_low_rank", "pad", "slice", "concat", "softmax", "reverse",
                 "batch_norm", "cast", "select", "l2_normalize", "unsqueeze_squeeze", "tile"]:
        v = chain.step(v, kind)
        assert len(chain.shape(v)) == 4, kind
    v = chain.b.op("nn.transpose", [v], {"perm": [0, 2, 3, 1]})
    chain.g.add_output(v, "out")
    before = evaluate(chain.g, chain.inputs)
    stats = sink_transposes(chain.g)
    assert chain.g.histogram().get("nn.transpose", 0) == 0
    assert stats.transposes == 0 and stats.moved >= 14
    np.testing.assert_allclose(evaluate(chain.g, chain.inputs)[0], before[0], rtol=1e-6, atol=1e-6)


def test_layout_visits_each_op_once():
    for blocks in (10, 100):
        rng = np.random.default_rng(blocks)
        chain = Chain(rng)
        v = chain.input([1, 4, 4, 3])
        for _ in range(blocks):
            v = chain.b.op("nn.transpose", [v], {"perm": [0, 3, 1, 2]})
            v = chain.step(v, "binary_const")
            v = chain.b.op("nn.transpose", [v], {"perm": [0, 2, 3, 1]})
            v = chain.b.op("nn.max_pool2d", [v], {"kernel": [1, 1], "stride": [1, 1], "pad": [0, 0, 0, 0],
                                                    "dilation": [1, 1]})
        chain.g.add_output(v, "out")
        ops = len(chain.g)
        stats = sink_transposes(chain.g)
        assert stats.visited == ops
        assert chain.g.histogram().get("nn.transpose", 0) == 0


def test_per_axis_quantization_follows_its_channel():
    """quantize to per-channel scales along NCHW axis 1 between transposes: after the pass the scales
    apply along NHWC axis 3, and the numbers are unchanged."""
    rng = np.random.default_rng(5)
    g = Graph()
    x = g.add_input(TensorType((1, 2, 2, 3), "f32"), "x")  # NHWC
    b = Builder(g)
    nchw = b.op("nn.transpose", [x], {"perm": [0, 3, 1, 2]})
    q_type = TensorType((1, 3, 2, 2), "i8", Quant((0.1, 0.02, 0.5), (0, 3, -2), axis=1))
    q = b.op("nn.quantize", [nchw], types=[q_type])
    d = b.op("nn.dequantize", [q], types=[TensorType((1, 3, 2, 2), "f32")])
    g.add_output(b.op("nn.transpose", [d], {"perm": [0, 2, 3, 1]}), "y")
    data = [rng.standard_normal((1, 2, 2, 3)).astype(np.float32)]
    before = evaluate(g, data)
    sink_transposes(g)
    verify(g)
    assert "nn.transpose" not in g.histogram()
    quantize = next(n for n in g.nodes() if g.op(n) == "nn.quantize")
    assert g.types(quantize)[0].quant.axis == 3 and g.types(quantize)[0].shape == (1, 2, 2, 3)
    np.testing.assert_array_equal(evaluate(g, data)[0], before[0])
