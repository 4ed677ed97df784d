"""The IR text form: MLIR generic syntax through the real MLIR parser and printer."""
import numpy as np
import pytest

from nn2tosa.ir import Graph, Loc, Quant, TensorType, Value
from nn2tosa.ir.mlir_bridge import RawAttr
from nn2tosa.ir.text import ParseError, parse_graph, parse_ir, print_ir


def rich_graph() -> Graph:
    g = Graph("main", {"format": "test", "version": 3})
    x = g.add_input(TensorType((1, 4), "f32"), "image")
    q = g.add_input(TensorType((1, 4), "ui8", Quant((0.015678688883781433,), (128,))), "q")
    consts = [
        np.arange(100, dtype=np.float32).reshape(10, 10),  # large: a resource blob
        np.array([0x3F80, 0x7FC0, 0x0001], np.uint16),  # bf16 bits incl. NaN and a denormal
        np.array([True, False, True]),
        np.array([-(2**40), 2**40], np.int64),
        np.array(7, np.int32),  # rank 0
        np.arange(200, dtype=np.float16),
    ]
    dtypes = ["f32", "bf16", "i1", "i64", "i32", "f16"]
    vals = []
    for arr, dt in zip(consts, dtypes):
        vals.append(g.add_op("test.const", [], [TensorType(arr.shape, dt)], {"value": arr}))
    attrs = {
        "alpha": 0.1, "tiny": 1e-300, "neg": -2.5, "n": -3, "big": 2**62, "flag": False, "s": 'quote " and \\',
        "ints": [1, -2, 3], "floats": [0.5, 1e-5], "empty": [], "strs": ["NHWC", "a"], "mixed": [1, "x"],
        "t": TensorType((2,), "i8"), "d": {"k": 1, "nested": {"z": [1.5]}}, "raw": RawAttr("#test.thing<1>"),
    }
    a = g.add_op("test.op", [x, x, q], [TensorType((1, 4), "f32"), TensorType((2,), "i32")], attrs,
                 Loc("conv 1/weights", "layer 3"))
    g.add_output(Value(a, 1), "second")
    g.add_output(Value(a, 0), "first")
    for i, v in enumerate(vals):
        g.add_output(Value(v), f"c{i}")
    return g


def test_print_parse_print_is_identical():
    g = rich_graph()
    text = print_ir(g)
    again = print_ir(parse_graph(text))
    assert again == text


def test_parse_restores_values_exactly():
    g = rich_graph()
    h = parse_graph(print_ir(g))
    assert h.meta == g.meta
    assert [h.input_name(n) for n in h.inputs] == ["image", "q"]
    assert [o.name for o in h.outputs] == ["second", "first"] + [f"c{i}" for i in range(6)]
    for out_g, out_h in zip(g.outputs, h.outputs):
        assert g.type_of(out_g.value) == h.type_of(out_h.value)
    op_g = next(n for n in g.nodes() if g.op(n) == "test.op")
    op_h = next(n for n in h.nodes() if h.op(n) == "test.op")
    assert h.attrs(op_h) == g.attrs(op_g)
    assert h.loc(op_h) == Loc("conv 1/weights", "layer 3")
    consts_g = [g.attrs(n)["value"] for n in g.nodes() if g.op(n) == "test.const"]
    consts_h = [h.attrs(n)["value"] for n in h.nodes() if h.op(n) == "test.const"]
    for a, b in zip(consts_g, consts_h):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


def test_large_constants_print_as_resources_and_elide():
    text = print_ir(rich_graph())
    assert "dense_resource<cst0> : tensor<10x10xf32>" in text
    assert "dialect_resources" in text
    elided = print_ir(rich_graph(), elide_constants=True)
    assert "dense_resource<cst0>" in elided
    assert "0x04000000" not in elided and "{-#" not in elided  # no blob data
    with pytest.raises(ValueError, match="no data"):
        parse_graph(elided)


def test_several_graphs_in_one_module():
    a, b = rich_graph(), rich_graph()
    b.name = "other"
    graphs = parse_ir(print_ir([a, b]))
    assert [g.name for g in graphs] == ["main", "other"]


def test_parse_error_names_line_and_column():
    with pytest.raises(ParseError, match="line 2 col"):
        parse_graph('func.func @f() {\n  %x = "nn.neg"(%y) : (tensor<f32>) -> tensor<f32>\n}')
