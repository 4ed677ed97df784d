"""The networkx IR: building, editing, ordering, verification."""
import numpy as np
import pytest

from nn2tosa.ir import Graph, Loc, Quant, TensorType, Value, VerificationError, parse_type, verify

F = TensorType((2,), "f32")


def small_graph():
    g = Graph()
    x = g.add_input(F, "x")
    c = g.add_op("nn.constant", [], [F], {"value": np.ones(2, np.float32)})
    a = g.add_op("nn.add", [x, Value(c)], [F])
    n = g.add_op("nn.neg", [Value(a)], [F], loc=Loc("neg1", "layer 2"))
    g.add_output(Value(n), "y")
    return g, x, c, a, n


def test_operands_users_and_order():
    g, x, c, a, n = small_graph()
    assert g.operands(a) == [x, Value(c)]
    assert g.users(x) == [(a, 0)]
    assert g.topological() == [0, 1, 2, 3]
    assert g.histogram() == {"nn.add": 1, "nn.constant": 1, "nn.neg": 1}
    verify(g)


def test_same_value_used_twice_keeps_both_operands():
    g = Graph()
    x = g.add_input(F, "x")
    m = g.add_op("nn.mul", [x, x], [F])
    assert g.operands(m) == [x, x]
    assert sorted(g.users(x)) == [(m, 0), (m, 1)]


def test_replace_all_uses_reaches_outputs_and_erase():
    g, x, c, a, n = small_graph()
    g.replace_all_uses(Value(n), Value(a))
    assert g.outputs[0].value == Value(a)
    g.erase(n)
    assert n not in g
    with pytest.raises(ValueError):
        g.erase(a)  # still an output
    verify(g)


def test_topological_order_follows_dependencies_not_creation():
    g = Graph()
    x = g.add_input(F, "x")
    late = g.add_op("nn.neg", [x], [F])
    early_user = g.add_op("nn.neg", [Value(late)], [F])
    g.set_operand(late, 0, x)
    # an op created before the value it reads (re-wired later) still comes after it
    first = g.add_op("nn.neg", [x], [F])
    g.set_operand(late, 0, Value(first))
    order = g.topological()
    assert order.index(first) < order.index(late) < order.index(early_user)


def test_verifier_reports_every_problem():
    g = Graph()
    x = g.add_input(F, "x")
    a = g.add_op("nn.add", [x], [F])  # one operand short
    g.add_op("nn.constant", [], [F])  # missing its value
    g.add_op("nn.nonexistent", [x], [F])
    g.add_output(Value(a), "y")
    with pytest.raises(VerificationError) as e:
        verify(g)
    text = "\n".join(e.value.problems)
    assert "expects 2 operands, has 1" in text
    assert "missing attribute 'value'" in text
    assert "defines no op 'nn.nonexistent'" in text


def test_verifier_finds_cycles():
    g = Graph()
    x = g.add_input(F, "x")
    a = g.add_op("nn.add", [x, x], [F])
    b = g.add_op("nn.neg", [Value(a)], [F])
    g.set_operand(a, 1, Value(b))
    with pytest.raises(VerificationError, match="cycle"):
        verify(g)


def test_constant_value_must_match_type():
    g = Graph()
    g.add_op("nn.constant", [], [F], {"value": np.ones(3, np.float32)})
    with pytest.raises(VerificationError, match="value shape"):
        verify(g)


def test_copy_shares_constants_but_not_structure():
    g, x, c, a, n = small_graph()
    h = g.copy()
    h.erase(h.outputs[0].value.node) if False else None
    h.replace_all_uses(Value(n), Value(a))
    assert g.outputs[0].value == Value(n)
    assert h.attrs(c)["value"] is g.attrs(c)["value"]


@pytest.mark.parametrize(
    "t",
    [
        TensorType((1, 3, 224, 224), "f32"),
        TensorType((), "i1"),
        TensorType((-1, 4), "bf16"),
        TensorType((2, 3), "ui8", Quant((0.0078125,), (128,))),
        TensorType((8, 3, 3, 3), "i8", Quant((0.1, 0.015678688883781433, 2.5e-07), (0, 0, -1), 0)),
    ],
)
def test_type_text_round_trip(t):
    assert parse_type(str(t)) == t


def test_quantized_type_reads_mlir_spelling_with_implicit_zero_point():
    # MLIR prints a zero point of 0 by omitting it
    t = parse_type("tensor<2x!quant.uniform<i8:f32:1, {1.000000e-01,2.000000e-01:3}>>")
    assert t.quant == Quant((0.1, 0.2), (0, 3), 1)
