"""cse: which ops merge (numpy-aware attribute equality) and which do not."""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import Graph, TensorType, Value, define, verify
from nn2tosa.ir.effects import UNKNOWN_EFFECTS
from nn2tosa.passes.cse import attrs_equal, eliminate_common_subexpressions

define("cse_test.effect", operands=1, traits={UNKNOWN_EFFECTS}, doc="an op with a side effect, for this test")


def constants_graph(*arrays: np.ndarray) -> Graph:
    g = Graph()
    for i, a in enumerate(arrays):
        n = g.add_op("nn.constant", [], [TensorType(a.shape, "f32")], {"value": a})
        g.add_output(Value(n), f"c{i}")
    return g


def test_large_equal_constants_merge_and_a_difference_the_fingerprint_skips_does_not():
    a = np.arange(1000, dtype=np.float32)
    b = a.copy()  # equal bytes, another array
    c = a.copy()
    c[1] += 0.5  # index 1 is not among the sampled elements (every 62nd)
    g = constants_graph(a, b, c)
    assert eliminate_common_subexpressions(g) == 1
    assert g.outputs[0].value == g.outputs[1].value != g.outputs[2].value
    verify(g)


def test_attribute_equality_is_by_dtype_shape_and_bytes():
    assert attrs_equal(np.array([np.nan], np.float32), np.array([np.nan], np.float32))
    assert not attrs_equal(np.array([0.0], np.float32), np.array([-0.0], np.float32))
    assert not attrs_equal(np.array([1, 2], np.int32), np.array([1, 2], np.int64))
    assert not attrs_equal(np.zeros((2, 1)), np.zeros((1, 2)))
    assert attrs_equal({"perm": [1, 0], "x": 1.5}, {"x": 1.5, "perm": (1, 0)})
    assert not attrs_equal(True, 1)
    assert attrs_equal(np.int64(3), 3)


def test_side_effects_and_results_in_use_stay():
    g = Graph()
    x = g.add_input(TensorType((2,), "f32"), "x")
    e1 = g.add_op("cse_test.effect", [x], [TensorType((2,), "f32")])
    e2 = g.add_op("cse_test.effect", [x], [TensorType((2,), "f32")])
    n1 = g.add_op("nn.neg", [x], [TensorType((2,), "f32")])
    n2 = g.add_op("nn.neg", [x], [TensorType((2,), "f32")])
    for i, n in enumerate((e1, e2, n1, n2)):
        g.add_output(Value(n), f"o{i}")
    assert eliminate_common_subexpressions(g) == 1
    assert [o.value.node for o in g.outputs] == [e1, e2, n1, n1]
