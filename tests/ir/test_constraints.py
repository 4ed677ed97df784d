"""Support stated as named constraints (nn2tosa/ir/constraints.py): the run-time reason and the
documented condition come from one function, every constraint a rule evaluates is one it declares,
and docs/supported_ops.md lists them without reading rule source."""
from __future__ import annotations

import inspect

import pytest

import nn2tosa.ir.constraints as constraints
from nn2tosa import docs
from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.ir import Graph, TensorType
from nn2tosa.ir.constraints import _DECLARED, Checks, declare, declared, describe
from nn2tosa.lowering.context import LoweringContext
from nn2tosa.lowering.rules import QUANTIZED_RULES, RULES
from nn2tosa.lowering.rules.shape import pad_mode_known
from nn2tosa.passes.legalize_armnn import RULES as ARMNN_RULES
from nn2tosa.passes.legalize_armnn.layer import Layer
from nn2tosa.passes.legalize_mps import RULES as MPS_RULES
from nn2tosa.passes.legalize_mps.core import Node

from lowering_harness import builder, lower

# functions shaped like constraints that refuse nothing: they choose between two lowerings
NOT_CONSTRAINTS = {"integer_cell_refusal"}  # LiteRT's integer LSTM cell or the float one (lstm_integer.py)
SUBJECTS = {"lowering": (LoweringContext, [RULES, QUANTIZED_RULES]), "armnn": (Layer, [ARMNN_RULES]),
            "mps": (Node, [MPS_RULES])}


def _pad_graph(mode: str) -> Graph:
    g = Graph()
    x = g.add_input(TensorType((1, 3), "f32"), "x")
    g.add_output(builder(g, "pad layer").op("nn.pad", [x], {"pads": [0, 0, 1, 1], "mode": mode, "value": 0.0}), "y")
    return g


def test_the_reason_and_the_documented_condition_come_from_one_function():
    with pytest.raises(UnsupportedError, match="pad layer.*pad mode 'wrap'") as err:
        lower(_pad_graph("wrap"))
    assert pad_mode_known in declared(RULES["nn.pad"]).before
    assert str(err.value).endswith(pad_mode_known(_ContextStub({"mode": "wrap"})))  # the function's own words
    row = next(line for line in docs.generate().splitlines() if line.startswith("| `nn.pad` |"))
    assert describe(pad_mode_known) in row


class _ContextStub:
    def __init__(self, attrs: dict):
        self.attrs = attrs


def test_a_constraint_a_rule_adds_is_enforced_and_documented(monkeypatch):
    """A throwaway constraint attached to the nn.pad rule: the driver evaluates it before the rule runs,
    and the generated documentation lists its docstring for nn.pad."""
    def two_dimensional(ctx: LoweringContext) -> str | None:
        """The padded tensor has two dimensions (a condition made up for this test)."""
        rank = ctx.type_of(ctx.operands[0]).rank
        return None if rank == 2 else f"a rank-{rank} pad"

    monkeypatch.setitem(_DECLARED, RULES["nn.pad"], declared(RULES["nn.pad"]))
    declare(RULES["nn.pad"], constraints=(two_dimensional,))
    lower(_pad_graph("constant"))  # met: converts
    g = Graph()
    x = g.add_input(TensorType((3,), "f32"), "x")
    g.add_output(builder(g, "pad layer").op("nn.pad", [x], {"pads": [1, 1], "mode": "constant", "value": 0.0}), "y")
    with pytest.raises(UnsupportedError, match="pad layer.*a rank-1 pad"):
        lower(g)
    docs._nn_lowering.cache_clear()
    row = next(line for line in docs.generate().splitlines() if line.startswith("| `nn.pad` |"))
    assert "The padded tensor has two dimensions" in row


def test_a_check_the_rule_does_not_declare_fails_in_the_tests():
    def undeclared(subject: Checks) -> str | None:
        """Never met."""
        return "refused"

    class Subject(Checks):
        refusal = ValueError

    def rule(subject: Subject) -> None:
        subject.check(undeclared)

    assert constraints.STRICT  # tests/conftest.py
    with pytest.raises(AssertionError, match="undeclared is evaluated by rule .*rule, which does not declare it"):
        Subject().apply(rule)
    declare(rule, checks=(undeclared,))
    with pytest.raises(ValueError, match="refused"):
        Subject().apply(rule)


def test_a_constraint_without_a_docstring_is_refused_at_registration():
    def silent(subject: Checks) -> str | None:
        return None

    with pytest.raises(ValueError, match="no docstring"):
        declare(lambda s: None, constraints=(silent,))


@pytest.mark.parametrize("kind", sorted(SUBJECTS))
def test_every_constraint_is_declared_and_documented(kind):
    """Every function of the rule modules that has a constraint's shape (a subject, returning the reason
    or None) is declared by a rule or is one of the subject's general checks; each has a docstring."""
    subject, tables = SUBJECTS[kind]
    rules = {fn for table in tables for fn in table.values()}
    used = set(subject.general).union(*(declared(fn).all for fn in rules))
    modules = {inspect.getmodule(fn) for fn in rules} | {inspect.getmodule(subject)}
    found = [fn for m in modules for name, fn in vars(m).items() if inspect.isfunction(fn)
             and fn.__module__ == m.__name__ and _is_constraint(fn, subject) and name not in NOT_CONSTRAINTS
             and not name.startswith("_")]  # (constraints are public names; a private helper so shaped is not one)
    assert found
    assert [fn.__qualname__ for fn in found if fn not in used] == []
    assert [fn.__qualname__ for fn in used if not describe(fn)] == []


def _is_constraint(fn, subject: type) -> bool:
    hints = fn.__annotations__
    params = list(inspect.signature(fn).parameters)
    return bool(params) and hints.get("return") == "str | None" and hints.get(params[0]) == subject.__name__


def test_the_document_lists_conditions_not_source_fragments():
    text = docs.generate()
    assert "<" + "ctx." not in text and "<what>" not in text
    assert "Converts when:" in text and "Refused (reported as unsupported) when" not in text
