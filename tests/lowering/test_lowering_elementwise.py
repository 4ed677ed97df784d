"""The direct elementwise rules, on every element type they accept: TOSA's i32-only integer ops
(ADD, SUB, MAXIMUM, MINIMUM, ABS, MUL, comparisons) get narrower integers and booleans through i32."""
import pytest

from lowering_harness import add_outputs, builder, check_lowering, nn_graph

BINARY = ["nn.add", "nn.sub", "nn.mul", "nn.maximum", "nn.minimum"]
COMPARISONS = ["nn.equal", "nn.not_equal", "nn.greater", "nn.greater_equal", "nn.less", "nn.less_equal"]


@pytest.mark.parametrize("dtype", ["f32", "f16", "i32", "i16", "i8"])
def test_arithmetic_and_comparisons(dtype):
    g, x, y = nn_graph({"x": ((2, 3, 4), dtype), "y": ((3, 1), dtype)})  # broadcasting across ranks
    b = builder(g)
    outputs = {op: b.op(op, [x, y]) for op in BINARY + COMPARISONS}
    outputs["nn.abs"] = b.op("nn.abs", [x])
    add_outputs(g, outputs)
    # integer values near the type's limits, so that narrow sums wrap as nn's integers do
    check_lowering(g, seed=3, input_range=(-100, 100) if dtype != "i32" else (-10**6, 10**6))


def test_boolean_comparisons():
    g, x, y = nn_graph({"x": ((5, 4), "i1"), "y": ((5, 4), "i1")})
    b = builder(g)
    add_outputs(g, {op: b.op(op, [x, y]) for op in COMPARISONS})
    check_lowering(g, seed=1)
