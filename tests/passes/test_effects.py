"""Declared side effects (nn2tosa.ir.effects) and the passes that must respect them.

The variables come from a .tosa that tosa-opt writes; after dce, cse and canonicalize the graph must
still run on the TOSA reference model with the outputs of tosa-opt's own file: a deleted write, or a
read merged across a write, changes them.
"""
from __future__ import annotations

import numpy as np
import pytest

from test_emit import run_reference
from test_tosa_reader import assert_same_outputs, read_one, tosa_opt_serialize

from nn2tosa.ir import Graph, TensorType, Value, define, verify
from nn2tosa.ir.effects import (READS_VARIABLE, UNKNOWN_EFFECTS, WRITES_VARIABLE, EffectKind, effects_of,
                                erasable_when_unused)
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
from nn2tosa.passes import PassManager
from nn2tosa.passes.rewrite import PatternSet, apply_patterns_greedily

# Reads the state before and after adding x to it. `before` and `again` read the same value and
# may merge; `after` reads what the write wrote. `dead` is read and never used.
STATE_MLIR = """
module {
"tosa.variable"() <{sym_name = "state", var_shape = dense<[2]> : tensor<1xindex>, type = f32,
                    initial_value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> ()
func.func @main(%x: tensor<2xf32> {tosa.tensor_name = "x"}) -> (tensor<2xf32> {tosa.tensor_name = "sum"},
    tensor<2xf32> {tosa.tensor_name = "again"}, tensor<2xf32> {tosa.tensor_name = "after"}) {
  %before = "tosa.variable_read"() <{name = "state"}> : () -> tensor<2xf32>
  %again = "tosa.variable_read"() <{name = "state"}> : () -> tensor<2xf32>
  %sum = "tosa.add"(%before, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "tosa.variable_write"(%sum) <{name = "state"}> : (tensor<2xf32>) -> ()
  %after = "tosa.variable_read"() <{name = "state"}> : () -> tensor<2xf32>
  %dead = "tosa.variable_read"() <{name = "state"}> : () -> tensor<2xf32>
  return %sum, %again, %after : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
}
"""
X = np.array([0.5, -4.0], np.float32)
EXPECTED = [np.array([1.5, -2.0], np.float32), np.array([1.0, 2.0], np.float32), np.array([1.5, -2.0], np.float32)]


def _state_graph(tmp_path) -> tuple[Graph, bytes]:
    theirs = tosa_opt_serialize(STATE_MLIR, tmp_path)
    return read_one(theirs), theirs


def _ops(g: Graph) -> list[str]:
    return [g.op(n) for n in g.topological() if not g.op(n).startswith("graph.")]


def test_the_state_model_computes_what_it_should(tmp_path):
    g, theirs = _state_graph(tmp_path)
    assert_same_outputs(run_reference(theirs, [X]), EXPECTED)
    assert _ops(g).count("tosa.variable_read") == 4


def test_dce_keeps_the_variable_and_its_write(tmp_path):
    g, theirs = _state_graph(tmp_path)
    PassManager.from_names("dce").run(g)
    ops = _ops(g)
    assert ops.count("tosa.variable") == 1 and ops.count("tosa.variable_write") == 1
    assert ops.count("tosa.variable_read") == 3  # the unused read goes: reading changes nothing
    assert_same_outputs(run_reference(bytes(build_flatbuffer(g)), [X]), EXPECTED)


def test_cse_merges_reads_only_when_no_write_lies_between(tmp_path):
    g, theirs = _state_graph(tmp_path)
    PassManager.from_names("cse,dce").run(g)
    assert _ops(g) == ["tosa.variable", "tosa.variable_read", "tosa.add", "tosa.variable_write",
                       "tosa.variable_read"]
    sum_, again, after = (o.value for o in g.outputs)
    assert g.operand(sum_.node, 0) == again  # `before` and `again` merged
    assert after != again
    assert_same_outputs(run_reference(bytes(build_flatbuffer(g)), [X]), EXPECTED)


def test_canonicalize_keeps_effects_and_their_order(tmp_path):
    g, theirs = _state_graph(tmp_path)
    PassManager.from_names("canonicalize,cse,dce").run(g)
    assert _ops(g).count("tosa.variable_write") == 1
    assert_same_outputs(run_reference(bytes(build_flatbuffer(g)), [X]), EXPECTED)


def test_ops_with_effects_keep_their_order_when_an_operand_is_created_later(tmp_path):
    """A pass replacing the write's operand with a newly created op must not move the write after
    the read that follows it, although both are ready before the new op and the read is older."""
    g, _ = _state_graph(tmp_path)
    [write] = [n for n in g.nodes() if g.op(n) == "tosa.variable_write"]
    value = g.operand(write, 0)
    neg = g.add_op("tosa.negate", [value, *_zero_points(g)], [g.type_of(value)])
    g.set_operand(write, 0, Value(neg))
    verify(g)
    order = g.topological()
    reads = [n for n in order if g.op(n) == "tosa.variable_read"]
    assert order.index(neg) < order.index(write) < order.index(reads[2])
    assert [order.index(n) for n in sorted(reads + [write])] == sorted(order.index(n) for n in reads + [write])


def _zero_points(g: Graph) -> list[Value]:
    return [Value(g.add_op("tosa.const", [], [TensorType((1,), "f32")], {"values": np.zeros(1, np.float32)}))
            for _ in range(2)]


def test_effects_resolve_to_the_variable_named():
    g = Graph()
    r = g.add_op("tosa.variable_read", [], [TensorType((2,), "f32")], {"name": "a"})
    w = g.add_op("tosa.variable_write", [Value(r)], [], {"name": "b"})
    c = g.add_op("tosa.custom", [Value(r)], [], {"operator_name": "f", "domain_name": "d", "implementation_attrs": ""})
    assert effects_of(g, r) == [(EffectKind.READ, "a")]
    assert effects_of(g, w) == [(EffectKind.WRITE, "b")]
    assert effects_of(g, c) == [(EffectKind.WRITE, None)]
    assert erasable_when_unused(g, r) and not erasable_when_unused(g, w) and not erasable_when_unused(g, c)


define("effects_test.read_then_write", operands=1, traits={READS_VARIABLE, WRITES_VARIABLE},
       attrs={}, open_attrs=True, doc="reads and writes the variable `name`, for this test")
define("effects_test.pure", operands=1, doc="no effects, for this test")


def test_the_rewriter_tries_generic_patterns_on_pure_ops_only():
    g = Graph()
    x = g.add_input(TensorType((2,), "f32"), "x")
    effect = g.add_op("effects_test.read_then_write", [x], [TensorType((2,), "f32")], {"name": "v"})
    pure = g.add_op("effects_test.pure", [x], [TensorType((2,), "f32")])
    g.add_output(Value(effect), "a")
    g.add_output(Value(pure), "b")
    tried: list[str] = []
    patterns = PatternSet("test")

    @patterns.pattern()
    def record(graph: Graph, node: int) -> bool:
        tried.append(graph.op(node))
        return False

    apply_patterns_greedily(g, patterns)
    assert "effects_test.pure" in tried and "effects_test.read_then_write" not in tried


def test_a_string_trait_no_pass_knows_is_refused():
    with pytest.raises(ValueError, match="unknown trait 'side_effect'"):
        define("effects_test.misspelled", traits={"side_effect"})
    define("effects_test.unknown", operands=1, traits={UNKNOWN_EFFECTS}, doc="for this test")
