"""TOSA-level graph -> the seed's flatbuffer generation: TOSA 0.90 semantics, stamped 0.100.0 draft
(schemas/tosa_0_100.fbs), for `convert --tosa-version 0.100-draft`.

    data = build_flatbuffer_0100(graph)          # a memoryview of the finished buffer
    write_flatbuffer_0100(graph, "model.tosa")   # atomic write of the same bytes

The IR holds TOSA 1.0; this layout differs (docs/tosa_formats.md has the full table):
- ops and element types have other numbers; several ops share one attribute table (PoolAttribute,
  ConvAttribute, AxisAttribute);
- what TOSA 1.0 passes as constant operands is an attribute field: zero points, RESCALE
  multiplier/shift, MUL shift, TABLE contents, PAD's pad value, and the shape operands of
  RESHAPE, SLICE, TILE, PAD and RESIZE (int16 for RESIZE). Those constants are folded into the
  fields and written as tensors only if something else reads them too;
- unsigned data has types of its own: a value a RESCALE reads or writes unsigned is UINT8/UINT16
  (zero point as the unsigned number), which works only where nothing but RESCALEs touch it;
- CLAMP bounds are min_int/max_int or min_fp/max_fp (a little-endian float32, what the
  serializers of that generation wrote whatever the float type), PAD's float value likewise;
- convolutions have no accumulator attribute: 0.90 accumulates in the output type.
What 0.90 cannot express is refused (UnsupportedError, every item at once): COS, SIN, variables,
nan_mode IGNORE, INEXACT_ROUND, an accumulator other than the output type, shapes beyond int16 in
RESIZE, ... (each Field's `refusal` says it).

`LEGACY_OPS` is the one table of the mapping, per op a list of Fields, each knowing both
directions: `write` (IR op -> table fields) here, `read` (table fields -> IR attributes and
constant operands) used by nn2tosa.frontend.tosa.layout_0100, so the two cannot disagree.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.dialects.tosa import unsupported_for_emission, with_distinct_outputs
from nn2tosa.fileio import write_atomic
from nn2tosa.dialects.tosa_target import require_tosa_1_0
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Value, op_def
from nn2tosa.schemas import tosa_0_100_generated as fb0
from nn2tosa.tosa_flatbuffer import writer
from nn2tosa.tosa_flatbuffer.common import FlatBuilder, Names, camel, constant_bytes, hashable, storage_bytes
from nn2tosa.tosa_flatbuffer.layout_0100 import DTYPES, LEGACY_OPS, NOT_IN_0_90, SCHEMA, UNSIGNED_DTYPES, LegacyOp

VERSION = (0, 100, 0)
BLOCK_NAME = writer.BLOCK_NAME

# ------------------------------------------------------------------------------ writing
@dataclass
class _OpView:
    graph: Graph
    node: int
    attrs: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.attrs = self.graph.attrs(self.node)

    def operand_type(self, k: int) -> TensorType:
        return self.graph.type_of(self.graph.operand(self.node, k))  # type: ignore[return-value]

    def const(self, k: int) -> np.ndarray:
        return np.asarray(self.graph.attrs(self.graph.operand(self.node, k).node)["values"])

    def result_type(self) -> TensorType:
        return self.graph.types(self.node)[0]  # type: ignore[return-value]


def _where(graph: Graph, node: int) -> str:
    return f"{graph.name}: {graph.loc(node) or f'%{node}'}"


def _unsigned_values(graph: Graph, items: list[Unsupported]) -> set[Value]:
    """Values that RESCALEs read or write unsigned, which get UINT8/UINT16 types. Refused (in
    `items`) where 0.90 cannot type them so: something other than a RESCALE (unsigned), a graph
    input or output, or a constant produces or reads them."""
    unsigned: set[Value] = set()
    for node in graph.nodes():
        if graph.op(node) == "tosa.rescale":
            if graph.attrs(node).get("input_unsigned"):
                unsigned.add(graph.operand(node, 0))
            if graph.attrs(node).get("output_unsigned"):
                unsigned.add(Value(node, 0))
    for value in sorted(unsigned):
        producer = graph.op(value.node)
        if producer not in (INPUT_OP, "tosa.const") and not (
                producer == "tosa.rescale" and graph.attrs(value.node).get("output_unsigned")):
            items.append(Unsupported(producer, _where(graph, value.node), "its result is read unsigned by a RESCALE; "
                                     "0.90 types unsigned data UINT8/UINT16, which only RESCALE may produce"))
        signed_readers = {use.node for use in graph.users(value)
                          if not (graph.op(use.node) == "tosa.rescale" and use.operand == 0
                                  and graph.attrs(use.node).get("input_unsigned"))}
        items.extend(Unsupported(graph.op(node), _where(graph, node), "reads a value a RESCALE treats as unsigned; "
                                 "0.90 types it UINT8/UINT16, which only RESCALE may read")
                     for node in sorted(signed_readers))
    return unsigned


def _refusals(graph: Graph) -> list[Unsupported]:
    items = unsupported_for_emission([graph])
    for node in graph.topological():
        op = graph.op(node)
        d = op_def(op)
        if op in (INPUT_OP, "tosa.const_shape") or d is None or d.dialect != "tosa":
            continue
        if op in NOT_IN_0_90:
            items.append(Unsupported(op, _where(graph, node), NOT_IN_0_90[op]))
            continue
        row = LEGACY_OPS[op]
        view = _OpView(graph, node)
        items.extend(Unsupported(op, _where(graph, node), f"{why}: no TOSA 0.90 form")
                     for why in (f.refusal(view) for f in row.fields) if why)
    return items


def build_flatbuffer_0100(graph: Graph) -> memoryview:
    """The 0.100-draft flatbuffer of one TOSA-level graph, as a view of the finished buffer."""
    return _build(graph, defer_data=False).finished_view()


def write_flatbuffer_0100(graph: Graph, path: str | os.PathLike) -> None:
    """Write the graph's 0.100-draft flatbuffer to `path` atomically ("-" is stdout)."""
    write_atomic(path, _build(graph, defer_data=True).write_to)


# a tensor of the block: name, type, 0.100 dtype, stored bytes (constants)
_TensorRow = tuple[str, TensorType, int, np.ndarray | None]


@dataclass
class _Operator:
    row: LegacyOp
    view: _OpView
    inputs: list[str]
    outputs: list[str]


def _build(graph: Graph, defer_data: bool) -> FlatBuilder:
    items = _refusals(graph)
    if not items:
        require_tosa_1_0(graph)
    graph = with_distinct_outputs(graph)
    unsigned = _unsigned_values(graph, items)
    if items:
        raise UnsupportedError(items)
    order = [n for n in graph.topological() if graph.op(n) != INPUT_OP]
    # A constant's value needs a tensor only if some use is not folded into an attribute field.
    needs_tensor = {o.value for o in graph.outputs}
    for node in order:
        op = graph.op(node)
        folded = LEGACY_OPS[op].folded if op in LEGACY_OPS else frozenset()
        needs_tensor.update(v for k, v in enumerate(graph.operands(node)) if k not in folded)

    names = Names()
    value_names: dict[Value, str] = {Value(n, 0): names.claim(graph.input_name(n)) for n in graph.inputs}
    input_names = [value_names[Value(n, 0)] for n in graph.inputs]
    for out in graph.outputs:
        value_names[out.value] = names.claim(out.name)
    output_names = [value_names[o.value] for o in graph.outputs]

    def dtype(value: Value, t: TensorType) -> int:
        return UNSIGNED_DTYPES[t.dtype] if value in unsigned else DTYPES[t.dtype]

    tensors: list[_TensorRow] = [(value_names[Value(n, 0)], graph.tensor_type(Value(n, 0)),
                                  dtype(Value(n, 0), graph.tensor_type(Value(n, 0))), None) for n in graph.inputs]
    operators = []
    for node in order:
        op = graph.op(node)
        if op in ("tosa.const", "tosa.const_shape") and Value(node, 0) not in needs_tensor:
            continue
        row = LEGACY_OPS[op]
        outputs = []
        for value in graph.results(node):  # (a shape needing a tensor was refused: _refusals)
            t = graph.tensor_type(value)
            if value not in value_names:
                value_names[value] = names.fresh()
            outputs.append(value_names[value])
            data = storage_bytes(graph.attrs(node)["values"], t.dtype) if op == "tosa.const" else None
            tensors.append((value_names[value], t, dtype(value, t), data))
        inputs = [value_names[v] for k, v in enumerate(graph.operands(node)) if k not in row.folded]
        operators.append(_Operator(row, _OpView(graph, node), inputs, outputs))

    strings = sum(len(n.encode()) for n in names.taken)
    attribute_bytes = sum(4 * sum(np.asarray(graph.attrs(graph.operand(o.view.node, k).node)["values"]).size
                                  for k in o.row.folded) for o in operators)
    size = (sum(constant_bytes(graph, n) for n in order) + 2 * strings + attribute_bytes
            + 256 * (len(tensors) + 2 * len(operators)) + 4096)
    builder = writer.new_builder(size, defer_data, graph.name, "over the 2 GB a flatbuffer can hold")
    _write_graph(builder, tensors, operators, input_names, output_names)
    return builder


def _field_value(builder: FlatBuilder, field: Any, value: Any) -> Any:
    """A Python field value -> what the generated Add<Field> takes, by the schema's field type."""
    kind = field.type
    if kind.kind == "vector":
        element = kind.element.scalar
        if element == "ubyte":
            raw = np.frombuffer(bytes(value), dtype=np.uint8)
            # data (force_align: 8) is padded to the alignment; a text field such as CUSTOM's
            # implementation_attrs keeps its length, or a reader gets trailing zero bytes
            return builder.data_vector(raw) if "force_align" in field.attributes else builder.byte_vector(raw)
        dtype = {"int": "<i4", "short": "<i2"}[element]
        values = tuple(int(v) for v in value)
        return builder.once((dtype, values), lambda: builder.CreateNumpyVector(np.asarray(values, dtype=dtype)))
    if kind.kind == "string":
        return builder.string(value)
    if kind.kind == "enum" and isinstance(value, str):
        return SCHEMA.enums[kind.name].values[value]
    return value


def _attribute(builder: FlatBuilder, o: _Operator) -> tuple[int, int] | None:
    """The operator's attribute: (its Attribute union type, the table's offset), None for none."""
    table = o.row.table
    if table is None:
        return None
    values: dict[str, Any] = {}
    for f in o.row.fields:
        values.update(f.write(o.view))
    key = (table, tuple(sorted((k, hashable(v)) for k, v in values.items())))

    def make() -> int:
        fields = [(f.name, _field_value(builder, f, values[f.name]))
                  for f in SCHEMA.tables[table].fields if f.name in values]  # vectors before the table starts
        getattr(fb0, f"{table}Start")(builder)
        for name, value in fields:
            getattr(fb0, f"{table}Add{camel(name)}")(builder, value)
        return getattr(fb0, f"{table}End")(builder)

    return getattr(fb0.Attribute, table), builder.once(key, make)


def _write_graph(builder: FlatBuilder, tensors: list[_TensorRow], operators: list[_Operator], input_names: list[str],
                 output_names: list[str]) -> None:
    tensor_offsets = [writer.tensor(builder, fb0, name, t.shape, dtype, data) for name, t, dtype, data in tensors]
    operator_offsets = []
    for o in operators:
        operator_offsets.append(writer.operator(
            builder, fb0, getattr(fb0.Op, o.row.op), o.inputs, o.outputs, _attribute(builder, o)))
    block = writer.basic_block(builder, fb0, BLOCK_NAME, operator_offsets, tensor_offsets, input_names, output_names)
    writer.finish(builder, fb0, [writer.region(builder, fb0, BLOCK_NAME, block)], VERSION, draft=True)


__all__ = ["build_flatbuffer_0100", "write_flatbuffer_0100", "VERSION"]
