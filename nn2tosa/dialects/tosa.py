"""The `tosa` dialect: every TOSA 1.0 operator, as the lowering produces and the emitters consume it.

Operand order, attribute names and attribute kinds follow MLIR's tosa dialect (LLVM 22), so that
`nn2tosa.ir.mlir_bridge.to_module` builds ops MLIR's verifier accepts, and the flatbuffer emitter
maps each op to its TOSA 1.0 operator and attribute table. Conventions of TOSA-level graphs:

- Operand forms are TOSA 1.0's exactly: zero points, RESCALE multiplier/shift, MUL shift, TABLE
  contents and PAD pad_const are `tosa.const` operands (attribute `values`); shape parameters
  (RESHAPE, SLICE, TILE, PAD padding, RESIZE scale/offset/border) are `tosa.const_shape` values of
  type `ShapeType(rank)` (`!tosa.shape<rank>`) whose `values` is a 1-D int64 array.
- Element types are TOSA's: i1, i4, i8, i16, i32, i48, f16, bf16, f32, f8E4M3FN, f8E5M2. Tensor
  types carry no quantization (it has been lowered into zero points and RESCALE) and are signless:
  unsigned 8/16-bit data exists only at a RESCALE with input_unsigned/output_unsigned.
- Constants hold their storage: bf16 and fp8 as raw bits, i4 unpacked one per int8, i48 in int64.
- COND_IF and WHILE_LOOP name their branch graphs (other graphs of the same module) in string
  attributes, since the IR has no regions; VARIABLE ops mirror MLIR's attributes. The IR can hold
  them, but neither emitter writes them yet (they raise UnsupportedError).

Every op is one record of the op table, nn2tosa/dialects/tosa_ops (operands and their kinds,
attributes, inference, traits, profiles and extensions per type combination, flatbuffer opcodes,
the 0.100-draft form, doc); importing this module registers them. What is left here are the two
facts about whole TOSA-level graphs that both emitters ask.
"""
from __future__ import annotations

from collections.abc import Iterable

from nn2tosa.diagnostics import Unsupported
from nn2tosa.ir import INPUT_OP, Graph, Value, op_def

from .tosa_ops import TOSA_ELEMENT_TYPES, TOSA_OPS

__all__ = ["TOSA_ELEMENT_TYPES", "TOSA_OPS", "unsupported_for_emission", "with_distinct_outputs"]


def unsupported_for_emission(graphs: Iterable[Graph]) -> list[Unsupported]:
    """What the emitters cannot write, all of it: ops of other dialects (not lowered)."""
    items = []
    for g in graphs:
        for node in g.nodes():
            op = g.op(node)
            if op == INPUT_OP:
                continue
            d = op_def(op)
            where = f"{g.name}: {g.loc(node) or f'%{node}'}"
            if d is None or d.dialect != "tosa":
                items.append(Unsupported(op, where, "not lowered to TOSA"))
    return items


def with_distinct_outputs(graph: Graph) -> Graph:
    """`graph`, or a copy of it in which every output has a tensor of its own: an output that
    returns a graph input or a value an earlier output returns reads a new tosa.identity of it.
    Both emitters write this form, so every input and output name reaches the .tosa (tosa-opt
    would otherwise name such an output after the input, or repeat the earlier output's name)."""
    seen = set(graph.input_values())
    needs_copy = []
    for i, out in enumerate(graph.outputs):
        if out.value in seen:
            needs_copy.append(i)
        seen.add(out.value)
    if not needs_copy:
        return graph
    g = graph.copy()
    for i in needs_copy:
        out = g.outputs[i]
        node = g.add_op("tosa.identity", [out.value], [g.type_of(out.value)], {})
        out.value = Value(node, 0)
    return g
