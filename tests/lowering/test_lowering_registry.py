"""The rule registry (lowering/registry.py): an op's forms tried by benefit, falling through when their
conditions do not hold or they return None, the semantics and the --target preset asked only when a form
needs them (and then reported), and the quantized prologue as one registered form."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from nn2tosa.ir import Quant, TensorType
from nn2tosa.lowering.context import LoweringContext
from nn2tosa.passes.context import PassContext, running_with
from nn2tosa.lowering.registry import Form, OpLowering
from nn2tosa.lowering.rules import QUANTIZED_RULES
from nn2tosa.lowering.rules.quantization import an_end_not_quantized, in_float

from lowering_harness import builder, nn_graph


@contextmanager
def _context(semantics: str | None = None, target: str | None = None) -> Iterator[LoweringContext]:
    """A lowering context of one relu, under a conversion with those options (the pass context)."""
    g, x = nn_graph({"x": ((4,), "f32")})
    y = builder(g).op("nn.relu", [x])
    g.add_output(y, "y")
    with running_with(PassContext(semantics=semantics or "litert", target=target)):
        yield LoweringContext(g, y.node, [g.tensor_type(x)])


def _recording(calls: list[str], name: str, result: object):
    def form(ctx: LoweringContext):
        calls.append(name)
        return result

    form.__qualname__ = name
    return form


def test_forms_are_tried_by_benefit_and_fall_through():
    calls: list[str] = []
    lowering = OpLowering("nn.relu", quantized=False)
    lowering.add(Form(_recording(calls, "last", "general")))
    lowering.add(Form(_recording(calls, "declines", None), benefit=20))
    lowering.add(Form(_recording(calls, "never", "wrong"), benefit=10, when=lambda ctx: False))
    with _context() as ctx:
        assert lowering(ctx) == "general"
        assert calls == ["declines", "last"]
        assert not ctx.semantics_consulted and ctx.npu_choices == []


@pytest.mark.parametrize("semantics,expected,consulted", [
    (None, "litert", True), ("cpuref", "general", True)])
def test_a_semantics_form_applies_under_its_semantics_only(semantics, expected, consulted):
    calls: list[str] = []
    lowering = OpLowering("nn.relu", quantized=True)
    lowering.add(Form(_recording(calls, "general", "general")))
    lowering.add(Form(_recording(calls, "litert", "litert"), benefit=10, semantics="litert"))
    with _context(semantics) as ctx:
        assert lowering(ctx) == expected
        assert ctx.semantics_consulted is consulted


def test_the_condition_on_the_op_is_asked_before_the_semantics():
    """A form whose `when` fails never asks the semantics: the report names only ops whose integers depend on it."""
    lowering = OpLowering("nn.relu", quantized=True)
    lowering.add(Form(lambda ctx: "general"))
    lowering.add(Form(lambda ctx: "litert", benefit=10, semantics="litert", when=lambda ctx: False))
    with _context() as ctx:
        assert lowering(ctx) == "general" and not ctx.semantics_consulted


@pytest.mark.parametrize("target,expected", [(None, "select"), ("ethos-u55", "sign_arithmetic")])
def test_a_choice_form_applies_when_the_preset_chooses_it(target, expected):
    lowering = OpLowering("nn.relu", quantized=True)
    lowering.add(Form(lambda ctx: "select"))
    lowering.add(Form(lambda ctx: "sign_arithmetic", benefit=10, choice=("prelu_branch", "sign_arithmetic")))
    with _context(target=target) as ctx:
        assert lowering(ctx) == expected
        assert [c.split(" (")[0] for c in ctx.npu_choices] == [f"prelu_branch -> {expected}"]


def test_two_unconditional_forms_at_one_benefit_are_refused():
    lowering = OpLowering("nn.relu", quantized=False)
    lowering.add(Form(lambda ctx: "a"))
    with pytest.raises(ValueError, match="two lowering rules for nn.relu"):
        lowering.add(Form(lambda ctx: "b"))


def test_an_end_not_quantized_takes_the_float_form_first():
    """The quantized prologue is one registered form, tried before the op's integer forms."""
    first = QUANTIZED_RULES["nn.softmax"].forms[0]
    assert first.fn is in_float
    g, x = nn_graph({"x": ((2, 4), "f32")})
    xq_type = TensorType((2, 4), "i8", Quant((1 / 32,), (0,)))
    b = builder(g)
    xq = b.op("nn.quantize", [x], types=[xq_type])
    attrs = {"axis": 1, "beta": 1.0}
    to_float = b.op("nn.softmax", [xq], attrs, types=[TensorType((2, 4), "f32")])
    to_int8 = b.op("nn.softmax", [xq], attrs, types=[TensorType((2, 4), "i8", Quant((1 / 256,), (-128,)))])
    assert first.applies(LoweringContext(g, to_float.node, [xq_type]))
    assert not first.applies(LoweringContext(g, to_int8.node, [xq_type]))
    assert an_end_not_quantized(0)(LoweringContext(g, to_float.node, [xq_type]))
