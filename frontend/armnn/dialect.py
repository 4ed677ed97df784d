"""The `armnn` dialect: one op per Arm NN layer type, generated from the schema's tables.

Each member `<Name>Layer` of the schema's `union Layer` (except Input and Output, which are graph
inputs and outputs) is an op `armnn.<Name>` whose attributes are its descriptor's fields
(descriptors.py gives the kinds) and whose operands are its connected input slots followed by the
ConstTensors its table held (catalogue.py). `armnn.Constant` holds its tensor in `value`; the LSTM
family also has `inputParams`, the names of its parameter operands. See the package docstring for
the conventions.
"""
from __future__ import annotations

from collections.abc import Iterable

from nn2tosa.ir import Dialect, Graph, attr, define, register_dialect
from nn2tosa.ir.effects import UNKNOWN_EFFECTS
from nn2tosa.ir.registry import Trait
from nn2tosa.ir.verify import constant_verifier
from nn2tosa.schemas import load_schema

from . import descriptors
from .catalogue import PARAMS_FIELD, LayerKind, layer_kinds

register_dialect(
    Dialect("armnn", "Arm NN serialized layers, one op per layer", constant_op="armnn.Constant", constant_attr="value")
)


def _verify_params(kind: LayerKind):
    """inputParams names the operands after the data inputs, in schema order, each once."""

    def verify(graph: Graph, node: int) -> Iterable[str]:
        names = graph.attrs(node)[PARAMS_FIELD]
        data_inputs = kind.input_slots if isinstance(kind.input_slots, int) else kind.input_slots[0]
        problems = []
        if len(names) != len(graph.operands(node)) - data_inputs:
            problems.append(f"{len(names)} inputParams for {len(graph.operands(node)) - data_inputs} parameter operands")
        order = [p for p in kind.params if p in names]
        if order != list(names):
            problems.append(f"inputParams {list(names)} are not distinct {kind.name} parameters in schema order")
        return problems

    return verify


def _verify_bias(kind: LayerKind):
    """A layer with biasEnabled has a bias operand exactly when it is true."""
    base = kind.operands if isinstance(kind.operands, int) else kind.operands[0]

    def verify(graph: Graph, node: int) -> Iterable[str]:
        expected = base + bool(graph.attrs(node)["biasEnabled"])
        n = len(graph.operands(node))
        return [] if n == expected else [f"biasEnabled is {graph.attrs(node)['biasEnabled']} but there are {n} operands"]

    return verify


def _verify_depthwise(graph: Graph, node: int) -> Iterable[str]:
    """Depthwise weights are [1, H, W, I*M] whatever the file's generation."""
    weights = graph.tensor_type(graph.operand(node, 1))
    out = graph.tensor_type(graph.results(node)[0])
    channels_dim = 1 if graph.attrs(node)["dataLayout"] == "NCHW" else 3
    if weights.rank != 4 or weights.shape[0] != 1 or (out.rank == 4 and weights.shape[3] != out.shape[channels_dim]):
        return [f"depthwise weights {list(weights.shape)} are not [1, H, W, I*M] for {out.shape[channels_dim]} outputs"]
    return []


def _chain(*verifiers):
    verifiers = [v for v in verifiers if v is not None]
    if not verifiers:
        return None

    def verify(graph: Graph, node: int) -> Iterable[str]:
        problems: list[str] = []
        for v in verifiers:
            problems.extend(v(graph, node))
            if problems:
                break
        return problems

    return verify


_TRAITS: dict[str, set[Trait]] = {
    "Constant": {"constant"},
    "StandIn": {UNKNOWN_EFFECTS},  # an operator Arm NN itself does not know: it may do anything
}


def _define(kind: LayerKind) -> None:
    schema = load_schema("armnn")
    attrs = descriptors.attr_specs(schema, kind.descriptor) if kind.descriptor else {}
    verifiers = []
    doc = f"The Arm NN {kind.name} layer ({kind.table})."
    if kind.name == "Constant":
        attrs["value"] = attr("tensor", "the tensor, a view into the file; quantized values as stored")
        verifiers.append(constant_verifier("value"))
        doc += " Also synthesized for ConstTensors other layers' tables hold (located at that layer)."
    if kind.params:
        attrs[PARAMS_FIELD] = attr("strs", f"the {kind.name} parameters the file holds, in operand order after the data inputs")
        verifiers.append(_verify_params(kind))
    if "biasEnabled" in attrs:
        verifiers.append(_verify_bias(kind))
    if kind.name == "DepthwiseConvolution2d":
        verifiers.append(_verify_depthwise)
    if kind.constants and kind.name != "Constant":
        doc += f" Operands: the input slots, then {', '.join(kind.constants)}."
    define(
        kind.op,
        operands=kind.operands,
        results=kind.results,
        attrs=attrs,
        doc=doc,
        verify=_chain(*verifiers),
        traits=_TRAITS.get(kind.name, ()),
    )


for _kind in layer_kinds().values():
    if not _kind.bindable:
        _define(_kind)
