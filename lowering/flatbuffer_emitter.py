"""TOSA-level graph -> TOSA 1.0 flatbuffer (`.tosa`), the file the TOSA reference model, Vela and
other TOSA consumers read.

    data = build_flatbuffer(graph)          # a memoryview of the finished buffer (no extra copy)
    write_flatbuffer(graph, "model.tosa")   # atomic write of the same bytes
    functions, branches = program.split_program(graphs)  # a .tosa's graphs: with control flow,
    data = build_flatbuffer(functions[0], branches)  # each function takes the branches it runs

Layout written: Version 1.0.0 (not draft); the function's region and block, both "main", then one
region (and block) per branch graph its COND_IF / WHILE_LOOP run, named after the graph
(`lowering/program.py` tells functions from branches); one TosaTensor per tensor value, names unique across
the file (graph inputs and outputs keep their names and order, other tensors are named
`layer_<k>` as tosa-opt names them); a `tosa.variable` -> a tensor marked `variable` holding its
initial value, read and written by IDENTITY operators as tosa-opt writes them (`VARIABLE_ACCESS`);
`tosa.const` -> a CONST operator whose output tensor holds the data; `tosa.const_shape` -> a
CONST_SHAPE operator and a TosaShape in the block's `shapes`, its values as little-endian int64. Tensor data is the little-endian storage (bool one byte per
element, i4 packed two per byte low nibble first, i48 six bytes per element) padded with zeros to
a multiple of 8 bytes and 8-byte aligned, as the schema's force_align and tosa-opt's writer do. A file
that would pass the 2 GB a flatbuffer addresses (or any, with `external_data=True`) keeps tensor data of
64 KiB or more after the flatbuffer instead, each at a 64-byte aligned file `offset` with its `size`
(docs/tosa_formats.md, "Files past 2 GB").

Every op's attribute table is filled from one table, `OP_TABLE`, derived from the tosa dialect's
registry and the flatc-generated code: op -> (Op enum, Attribute union member, the fields it fills
and the converter for each field's attribute kind). The builder's buffer is allocated once at the
final size; constant data is copied into it with one slice assignment per tensor, or, when
writing a file, not copied at all but written from the numpy array into its reserved place. The
same graph always gives the same bytes.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.dialects.tosa import unsupported_for_emission, with_distinct_outputs
from nn2tosa.fileio import populate, write_atomic
from nn2tosa.dialects.tosa_target import require_tosa_1_0
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Value
from nn2tosa.schemas import tosa_generated as fb
from nn2tosa.tosa_flatbuffer import writer
from nn2tosa.tosa_flatbuffer.common import FlatBuilder, Names, constant_bytes, padded_size, storage_bytes
from nn2tosa.tosa_flatbuffer.layout_1_0 import DTYPES, OP_TABLE, OpEntry

from .program import reachable_branches, unknown_branches

VERSION = (1, 0, 0)
BLOCK_NAME = writer.BLOCK_NAME

# ------------------------------------------------------------------------------ the writer
@dataclass
class _Operator:
    entry: OpEntry
    attrs: dict[str, Any]
    input_type: str
    inputs: list[str]
    outputs: list[str]
    location: str | None


@dataclass
class _Tensor:
    name: str
    type: TensorType
    data: np.ndarray | None = None  # storage bytes of a constant or a variable's initial value
    variable: str | None = None  # the variable's name (sym_name), for a variable tensor


@dataclass
class _Block:
    """One basic block, planned: what `_write_graph` writes, in the order it writes it."""

    region: str
    tensors: list[_Tensor]
    shapes: list[tuple[str, int, np.ndarray]]
    operators: list[_Operator]
    input_names: list[str]
    output_names: list[str]
    value_names: dict[Value, str]  # the tensor name of each value of the graph


# tosa-opt writes variable access as an IDENTITY from/to the variable tensor carrying the
# VARIABLE_READ/_WRITE attribute table (the reader reads exactly that; the reference model runs it).
VARIABLE_ACCESS = {op: OpEntry(fb.Op.IDENTITY, OP_TABLE[op].attribute_type, OP_TABLE[op].table, ())
                   for op in ("tosa.variable_read", "tosa.variable_write")}


def _problems(graph: Graph) -> list[Unsupported]:
    items = unsupported_for_emission([graph])
    for node in graph.nodes():
        for t in graph.types(node):
            if isinstance(t, TensorType) and any(d < 0 for d in t.shape):
                items.append(Unsupported(graph.op(node), f"{graph.name}: {graph.loc(node) or f'%{node}'}",
                                         f"dynamic shape {t} (TOSA 1.0 flatbuffers need static shapes)"))
                break
    return items


def build_flatbuffer(graph: Graph, branches: Mapping[str, Graph] | None = None,
                     names: dict[tuple[str, Value], str] | None = None, external_data: bool | None = None) -> memoryview:
    """The TOSA 1.0 flatbuffer of one TOSA-level graph (with the branch graphs its control flow
    names, from `branches`, as further regions), as a view of the finished buffer. `names`, when
    given, receives each value's tensor name, keyed by (graph name, value). `external_data`: keep
    large tensor data after the flatbuffer (None: only when the file would pass 2 GB)."""
    return _build(graph, branches or {}, defer_data=False, external_data=external_data, names=names).finished_view()


def write_flatbuffer(graph: Graph, path: str | os.PathLike, branches: Mapping[str, Graph] | None = None,
                     external_data: bool | None = None) -> None:
    """Write the graph's TOSA 1.0 flatbuffer to `path` atomically ("-" is stdout). Large tensor
    data goes from its numpy array straight to the file, after the flatbuffer when `external_data`
    (None: when the file would pass 2 GB)."""
    write_atomic(path, _build(graph, branches or {}, defer_data=True, external_data=external_data).write_to)


def _build(graph: Graph, branches: Mapping[str, Graph], defer_data: bool, external_data: bool | None,
           names: dict[tuple[str, Value], str] | None = None) -> FlatBuilder:
    graphs = [graph] + reachable_branches(graph, branches)
    items = [item for g in graphs for item in _problems(g)] + unknown_branches(graphs, branches)
    if items:
        raise UnsupportedError(items)
    require_tosa_1_0(graphs)
    taken = Names()  # tensor names are unique across the file, as tosa-opt writes them
    variables: dict[str, str] = {}  # sym_name -> its tensor's name
    # a branch's outputs need no tensor of their own (their names are internal): a loop body
    # passing a value through unchanged gets no IDENTITY, as tosa-opt writes it
    blocks = [_plan_block(with_distinct_outputs(g) if i == 0 else g, BLOCK_NAME if i == 0 else g.name, taken,
                          variables)
              for i, g in enumerate(graphs)]
    if names is not None:
        for g, block in zip(graphs, blocks):
            names.update(((g.name, v), n) for v, n in block.value_names.items())
    populate(t.data for b in blocks for t in b.tensors if t.data is not None)  # the input's pages, in one call
    # one allocation big enough for everything: constants, strings, and an allowance per table
    strings = sum(len(n.encode()) for n in taken.taken) + sum(
        len(b.region.encode()) + sum(len(o.location.encode()) for o in b.operators if o.location) for b in blocks)
    size = (sum(constant_bytes(g, n) for g in graphs for n in g.nodes()) + 2 * strings + 4096
            + sum(256 * (len(b.tensors) + 2 * len(b.operators) + len(b.shapes) + 2) for b in blocks))
    external = not writer.fits(size) if external_data is None else external_data
    if external:  # what stays in the flatbuffer: small tensor data (FlatBuilder.keeps_outside)
        size -= sum(padded_size(t.data.size) for b in blocks for t in b.tensors
                    if t.data is not None and t.data.size >= FlatBuilder.DEFER_BYTES)
    builder = writer.new_builder(size, defer_data, graph.name, "past the 2 GB a flatbuffer addresses even with "
                                 "large tensor data kept after it (too many small constants)", external)
    _write_graph(builder, blocks)
    return builder


def _plan_block(graph: Graph, region: str, names: Names, variables: dict[str, str]) -> _Block:
    """Name every tensor of `graph` and list its tensors, shapes and operators."""
    value_names: dict[Value, str] = {}
    input_names = []
    for node in graph.inputs:
        name = names.claim(graph.input_name(node))
        value_names[Value(node, 0)] = name
        input_names.append(name)
    output_names = []
    for out in graph.outputs:  # a function's are distinct values (with_distinct_outputs) named after the outputs
        if out.value not in value_names:
            value_names[out.value] = names.claim(out.name)
        output_names.append(value_names[out.value])

    tensors = [_Tensor(value_names[Value(n, 0)], graph.tensor_type(Value(n, 0))) for n in graph.inputs]
    for node in graph.nodes():  # declared before any access, whatever the order of the graph
        if graph.op(node) == "tosa.variable":
            attrs = graph.attrs(node)
            variable_type = TensorType(tuple(attrs["var_shape"]), attrs["type"])
            initial = attrs.get("initial_value")
            # one tensor name per variable in every block declaring it, as tosa-opt writes it (the
            # reference model takes a branch's variable tensor of that name for the function's)
            if attrs["sym_name"] not in variables:
                variables[attrs["sym_name"]] = names.claim(attrs["sym_name"])
            name = variables[attrs["sym_name"]]
            tensors.append(_Tensor(name, variable_type, None if initial is None else
                                   storage_bytes(initial, variable_type.dtype), attrs["sym_name"]))
    shapes: list[tuple[str, int, np.ndarray]] = []
    operators: list[_Operator] = []
    for node in graph.topological():
        op = graph.op(node)
        if op in (INPUT_OP, "tosa.variable"):
            continue
        outputs = []
        for value in graph.results(node):
            if value not in value_names:
                value_names[value] = names.fresh()
            outputs.append(value_names[value])
        types = graph.types(node)
        attrs = graph.attrs(node)
        if op == "tosa.const_shape":
            shapes.append((outputs[0], types[0].rank, np.asarray(attrs["values"], dtype="<i8")))
        else:
            for name, value in zip(outputs, graph.results(node)):
                t = graph.tensor_type(value)  # (shapes: tosa.const_shape's only)
                data = storage_bytes(attrs["values"], t.dtype) if op == "tosa.const" else None
                tensors.append(_Tensor(name, t, data))
        operands = graph.operands(node)
        inputs = [value_names[v] for v in operands]
        entry = VARIABLE_ACCESS.get(op, OP_TABLE[op])
        if op == "tosa.variable_read":
            inputs = [variables[attrs["name"]]]
        elif op == "tosa.variable_write":
            outputs = [variables[attrs["name"]]]
        first = graph.type_of(operands[0]) if operands else None
        input_type = first.dtype if isinstance(first, TensorType) else ""
        loc = graph.loc(node)
        operators.append(_Operator(entry, attrs, input_type, inputs, outputs, str(loc) if loc else None))
    return _Block(region, tensors, shapes, operators, input_names, output_names, value_names)


def _write_block(builder: FlatBuilder, block: _Block) -> int:
    tensors = [writer.tensor(builder, fb, t.name, t.type.shape, DTYPES[t.type.dtype], t.data, t.variable)
               for t in block.tensors]
    shapes = []
    for name, rank, values in block.shapes:
        data_offset = builder.data_vector(values.view(np.uint8))
        name_offset = builder.string(name)
        fb.TosaShapeStart(builder)
        fb.TosaShapeAddName(builder, name_offset)
        fb.TosaShapeAddRank(builder, rank)
        fb.TosaShapeAddData(builder, data_offset)
        shapes.append(fb.TosaShapeEnd(builder))
    operators = []
    for o in block.operators:
        attribute = o.entry.build_attribute(builder, o.attrs, o.input_type)
        operators.append(writer.operator(builder, fb, o.entry.op, o.inputs, o.outputs,
                                         (o.entry.attribute_type, attribute), o.location))
    return writer.basic_block(builder, fb, block.region, operators, tensors, block.input_names, block.output_names,
                              shapes)


def _write_graph(builder: FlatBuilder, blocks: list[_Block]) -> None:
    """The TosaGraph: one region per block, named after it, each holding that one block."""
    regions = [writer.region(builder, fb, block.region, _write_block(builder, block)) for block in blocks]
    writer.finish(builder, fb, regions, VERSION, draft=False)


__all__ = ["build_flatbuffer", "write_flatbuffer", "VERSION"]
