"""The greedy pattern driver (passes/rewrite.py): worklist revisits, dead-op erasure, the rewrite
budget against ping-pong, pattern discipline, and work proportional to the graph."""
from __future__ import annotations

import numpy as np
import pytest

from nn2tosa.ir import Builder, Graph, TensorType, Value, verify
from nn2tosa.passes.canonicalize import CANONICAL
from nn2tosa.passes.rewrite import PatternSet, apply_patterns_greedily, replace

F = TensorType((4,), "f32")


def chain(ops: list[str]) -> Graph:
    g = Graph()
    v = g.add_input(F, "x")
    for op in ops:
        v = Value(g.add_op(op, [v], [F]))
    g.add_output(v, "y")
    return g


def test_a_consumer_pattern_fires_again_when_its_producer_changes():
    """neg(identity(neg(x))): the outer neg is visited before the identity goes; removing the
    identity rewires it, so it is revisited and the double negation cancels."""
    g = chain(["nn.neg", "nn.identity", "nn.neg"])
    stats = apply_patterns_greedily(g, CANONICAL)
    assert g.histogram() == {}
    assert g.outputs[0].value == g.input_values()[0]
    assert stats.rewrites == {"remove-noop": 1, "double-involution": 1} and stats.converged


def test_dead_ops_are_erased_and_the_listener_is_restored():
    g = chain(["nn.neg"])
    x = g.input_values()[0]
    dead = g.add_op("nn.exp", [x], [F])
    g.add_op("nn.abs", [Value(dead)], [F])
    stats = apply_patterns_greedily(g, PatternSet("empty"))
    assert g.histogram() == {"nn.neg": 1} and stats.erased == 2
    assert g.listener is None


def test_ping_pong_stops_at_the_budget_with_valid_ir():
    swap = PatternSet("ping-pong")

    @swap.pattern("nn.sin", "nn.cos")
    def flip(graph: Graph, node: int) -> bool:
        other = "nn.cos" if graph.op(node) == "nn.sin" else "nn.sin"
        new = graph.add_op(other, graph.operands(node), graph.types(node))
        return replace(graph, node, Value(new))

    g = chain(["nn.sin"])
    stats = apply_patterns_greedily(g, swap, max_rewrites=50)
    assert not stats.converged
    assert stats.rewrites["flip"] == 51
    verify(g)


def test_a_pattern_that_edits_but_reports_no_change_is_a_bug():
    sloppy = PatternSet("sloppy")

    @sloppy.pattern("nn.neg")
    def edits_anyway(graph: Graph, node: int) -> bool:
        graph.add_op("nn.constant", [], [F], {"value": np.zeros(4, np.float32)})
        return False

    with pytest.raises(RuntimeError, match="edits-anyway edited the IR"):
        apply_patterns_greedily(chain(["nn.neg"]), sloppy)


def test_patterns_for_every_op_and_registration_errors():
    seen: list[str] = []
    every = PatternSet("every")

    @every.pattern()
    def record(graph: Graph, node: int) -> bool:
        seen.append(graph.op(node))
        return False

    apply_patterns_greedily(chain(["nn.neg", "nn.abs"]), every)
    assert seen == ["graph.input", "nn.neg", "nn.abs"]
    with pytest.raises(ValueError, match="registered twice"):
        every.pattern(name="record")(record)
    assert [p.name for p in CANONICAL.without("relu-to-clamp")] == [p.name for p in CANONICAL
                                                                     if p.name != "relu-to-clamp"]


def clamp_ladder(n: int) -> Graph:
    """n times: relu, maximum with a constant, minimum with a constant, a dead side branch."""
    g = Graph()
    b = Builder(g)
    v = g.add_input(F, "x")
    for i in range(n):
        v = b.op("nn.relu", [v])
        v = b.op("nn.maximum", [v, b.constant(np.float32(-1 - i))])
        b.op("nn.exp", [v])
        v = b.op("nn.minimum", [b.constant(np.full(4, 100.0 + i, np.float32)), v])
        v = b.op("nn.neg", [b.op("nn.neg", [v])])
    g.add_output(v, "y")
    return g


def test_driver_work_grows_linearly():
    small, large = clamp_ladder(20), clamp_ladder(200)
    ratio = len(large) / len(small)
    s, l = apply_patterns_greedily(small, CANONICAL), apply_patterns_greedily(large, CANONICAL)
    assert large.histogram() == {"nn.clamp": 1}  # every step merged into one clamp(0, 100)
    assert s.converged and l.converged
    assert 0.8 * ratio <= l.work / s.work <= 1.25 * ratio
    assert 0.8 * ratio <= l.applied / s.applied <= 1.25 * ratio


def test_the_graph_listener_reports_every_op_an_edit_touches():
    g = chain(["nn.neg", "nn.abs"])
    x, neg, ab = g.input_values()[0].node, 1, 2
    touched: list[int] = []
    g.listener = touched.append
    new = g.add_op("nn.exp", [Value(x)], [F])
    assert set(touched) == {x, new}  # created, and its operand's producer gained a use
    touched.clear()
    g.replace_all_uses(Value(neg), Value(new))  # abs now reads exp
    assert set(touched) == {neg, new, ab}
    touched.clear()
    g.erase(neg)  # x lost a use
    assert touched == [x]
    g.listener = None

