"""TOSA-level graph -> TOSA 1.0 flatbuffer (`.tosa`), the file the TOSA reference model, Vela and
other TOSA consumers read.

    data = build_flatbuffer(graph)          # a memoryview of the finished buffer (no extra copy)
    write_flatbuffer(graph, "model.tosa")   # atomic write of the same bytes

Layout written: Version 1.0.0 (not draft); one region and one block, both "main"; one TosaTensor
per tensor value (graph inputs and outputs keep their names and order, other tensors are named
`layer_<k>` as tosa-opt names them); `tosa.const` -> a CONST operator whose output tensor holds
the data; `tosa.const_shape` -> a CONST_SHAPE operator and a TosaShape in the block's `shapes`,
its values as little-endian int64. Tensor data is the little-endian storage (bool one byte per
element, i4 packed two per byte low nibble first, i48 six bytes per element) padded with zeros to
a multiple of 8 bytes and 8-byte aligned, as the schema's force_align and tosa-opt's writer do.

Every op's attribute table is filled from one table, `OP_TABLE`, derived from the tosa dialect's
registry and the flatc-generated code: op -> (Op enum, Attribute union member, the fields it fills
and the converter for each field's attribute kind). The builder's buffer is allocated once at the
final size; constant data is copied into it with one slice assignment per tensor, or, when
writing a file, not copied at all but written from the numpy array into its reserved place. The
same graph always gives the same bytes.
"""
from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import flatbuffers
import numpy as np

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.dialects.tosa import unsupported_for_emission, with_distinct_outputs
from nn2tosa.fileio import populate, write_atomic
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Value, ops_of
from nn2tosa.schemas import tosa_generated as fb

from .target import require_tosa_1_0

VERSION = (1, 0, 0)
BLOCK_NAME = "main"
DATA_ALIGNMENT = 8  # TosaTensor.data / TosaShape.data / clamp bounds: (force_align: 8), padded to 8 bytes

DTYPES = {
    "i1": fb.DType.BOOL, "i4": fb.DType.INT4, "i8": fb.DType.INT8, "i16": fb.DType.INT16, "i32": fb.DType.INT32,
    "i48": fb.DType.INT48, "f16": fb.DType.FP16, "bf16": fb.DType.BF16, "f32": fb.DType.FP32,
    "f8E4M3FN": fb.DType.FP8E4M3, "f8E5M2": fb.DType.FP8E5M2,
}


# ------------------------------------------------------------------------------ raw data
def _storage_bytes(array: np.ndarray, element_type: str) -> np.ndarray:
    """The flatbuffer encoding of a constant, as a 1-D uint8 array: a view of `array` where the
    encoding is the numpy storage itself, else one vectorised conversion (i4, i48, bool)."""
    if element_type == "i4":  # two per byte, element 2i in the low nibble
        nibbles = np.ascontiguousarray(array).reshape(-1).view(np.uint8) & 0x0F
        if nibbles.size % 2:
            nibbles = np.append(nibbles, np.uint8(0))
        return nibbles[0::2] | (nibbles[1::2] << 4)
    if element_type == "i48":  # the low six bytes of each little-endian int64
        return np.ascontiguousarray(np.ascontiguousarray(array, dtype="<i8").view(np.uint8).reshape(-1, 8)[:, :6]).reshape(-1)
    if element_type == "i1":
        array = array.astype(np.uint8, copy=False)
    array = np.ascontiguousarray(array)
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return array.reshape(-1).view(np.uint8)


def _padded(n: int) -> int:
    return -(-n // DATA_ALIGNMENT) * DATA_ALIGNMENT


class _Builder(flatbuffers.Builder):
    """A flatbuffers Builder whose buffer is an anonymous mmap of the final size, allocated once:
    no zero-filling pass, and pages never written cost no memory. With `defer_data`, large tensor
    data is not copied into the buffer at all: its place is reserved and `write_to` splices the
    numpy bytes in while writing the file (one copy, the kernel's)."""

    DEFER_BYTES = 1 << 16

    def __init__(self, size: int, defer_data: bool):
        super().__init__(0)
        self.Bytes = mmap.mmap(-1, max(size, 1))  # type: ignore[assignment]
        self.head = len(self.Bytes)
        self.deferred: list[tuple[int, np.ndarray]] | None = [] if defer_data else None
        self.written: dict[Any, int] = {}  # content -> offset of an identical object already written

    def once(self, key: Any, make: Callable[[], int]) -> int:
        """The offset of the object `make` writes, written only the first time `key` is asked for:
        names, shapes and attribute tables repeat across a model, and flatbuffers may share them."""
        offset = self.written.get(key)
        if offset is None:
            offset = self.written[key] = make()
        return offset

    def string(self, text: str) -> int:
        return self.once(("string", text), lambda: self.CreateString(text))

    def int32_vector(self, values: Iterable[int]) -> int:
        values = tuple(int(v) for v in values)
        if any(not -(1 << 31) <= v < 1 << 31 for v in values):  # MLIR's i64 attributes hold more than .tosa's int32
            raise UnsupportedError([Unsupported("attribute", "TOSA flatbuffer", f"{list(values)[:8]} does not fit int32")])
        return self.once(("int32s", values), lambda: self.CreateNumpyVector(np.asarray(values, dtype="<i4")))

    def offsets_vector(self, offsets: list[int]) -> int:
        """A vector of table/string offsets, written as one block (PrependUOffsetTRelative per
        element, as the library does, costs a dozen Python calls each)."""
        n = len(offsets)
        self.StartVector(4, n, 4)  # aligns for n uint32s; element j is then stored relative to its place
        base = self.Offset()
        relative = [base + 4 * (n - j) - off for j, off in enumerate(offsets)]
        self.head = self.head - 4 * n
        self.Bytes[self.head:self.head + 4 * n] = struct.pack(f"<{n}I", *relative)
        return self.EndVector()

    def data_vector(self, raw: np.ndarray) -> int:
        """A [ubyte] vector of `raw` (1-D uint8), 8-byte aligned and zero-padded to a multiple of 8,
        copied with ONE slice assignment (never element by element), or deferred to `write_to`."""
        n = raw.size
        padded = _padded(n)
        self.StartVector(1, padded, DATA_ALIGNMENT)
        self.head = self.head - padded
        start = self.head
        if self.deferred is not None and n >= self.DEFER_BYTES:
            self.deferred.append((len(self.Bytes) - start, raw))  # distance from the end survives growth
        else:
            self.Bytes[start:start + n] = memoryview(raw)
        self.Bytes[start + n:start + padded] = bytes(padded - n)
        return self.EndVector()

    def finished_view(self) -> memoryview:
        assert not self.deferred, "data was deferred: use write_to"
        return memoryview(self.Bytes)[self.Head():]

    def write_to(self, f: Any) -> None:
        view = memoryview(self.Bytes)
        pos = self.Head()
        for start, raw in sorted((len(self.Bytes) - rel, raw) for rel, raw in self.deferred or []):
            f.write(view[pos:start])
            f.write(memoryview(raw))
            pos = start + raw.size
        f.write(view[pos:])


def _bf16_bits(value: float) -> int:
    """float -> bf16 bits, rounding to nearest even (as MLIR's APFloat does for the MLIR form)."""
    bits = int(np.array(value, dtype=np.float32).view(np.uint32))
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _scalar_bytes(value: float | int, element_type: str) -> np.ndarray:
    """One value of `element_type` as its little-endian bytes (CLAMP's min_val/max_val)."""
    if element_type == "bf16":
        scalar = np.array(_bf16_bits(float(value)), dtype="<u2")
    elif element_type in ("f16", "f32"):
        scalar = np.array(value, dtype=TensorType((), element_type).numpy_dtype)
    elif element_type in ("i8", "i16", "i32"):
        scalar = np.array(int(value), dtype=TensorType((), element_type).numpy_dtype)
    else:
        raise UnsupportedError([Unsupported("tosa.clamp", element_type, "no TOSA 1.0 clamp on this element type")])
    return scalar.reshape(-1).view(np.uint8)


# ------------------------------------------------------------------------------ the op table
# A converter turns one attribute value into what the generated Add<Field> function takes (a
# scalar, or the offset of a vector/string created before the table starts).
Converter = Callable[["_Builder", Any, str], int]


def _enum(enum_class: type, renamed: dict[str, str] | None = None) -> Converter:
    """An MLIR enum value name -> the schema's enum value (`renamed` where the spellings differ)."""
    renamed = renamed or {}
    return lambda builder, value, input_type: getattr(enum_class, renamed.get(value, value))


CONVERTERS: dict[str, Converter] = {
    "ints": lambda builder, value, input_type: builder.int32_vector(value),
    "i32s": lambda builder, value, input_type: builder.int32_vector(value),
    "i32": lambda builder, value, input_type: int(value),
    "bool": lambda builder, value, input_type: bool(value),
    "str": lambda builder, value, input_type: builder.string(value),
    "elemtype": lambda builder, value, input_type: DTYPES[value],
    "scalar_like:0": lambda builder, value, input_type: builder.data_vector(_scalar_bytes(value, input_type)),
    "enum:tosa.nan_mode": _enum(fb.NanPropagationMode),
    "enum:tosa.rounding_mode": _enum(fb.RoundingMode),
    "enum:tosa.resize_mode": _enum(fb.ResizeMode, {"NEAREST_NEIGHBOR": "NEAREST"}),
}
# What the flatbuffer must say when the IR leaves an optional attribute out (the schema's own
# default, UNKNOWN, is not what MLIR's default means).
OPTIONAL_DEFAULTS = {"nan_mode": "PROPAGATE"}
# Attributes whose schema field has another type than the MLIR attribute.
FIELD_CONVERTERS: dict[tuple[str, str], Converter] = {
    ("custom", "implementation_attrs"): lambda builder, value, input_type: builder.data_vector(
        np.frombuffer(value.encode(), dtype=np.uint8)),
}


@dataclass(frozen=True)
class Field:
    name: str  # the attribute's name, in the IR and in the schema
    convert: Converter
    add: Callable[["_Builder", Any], None]  # the generated <Table>Add<Field>


@dataclass(frozen=True)
class OpEntry:
    op: int  # tosa.Op enum value
    attribute_type: int  # tosa.Attribute union member
    table: str  # its table name, e.g. "Conv2dAttribute"
    fields: tuple[Field, ...]

    def build_attribute(self, builder: _Builder, attrs: dict[str, Any], input_type: str) -> int:
        content = tuple((f.name, _hashable(attrs.get(f.name))) for f in self.fields)
        return builder.once((self.table, input_type, content), lambda: self._write_attribute(builder, attrs, input_type))

    def _write_attribute(self, builder: _Builder, attrs: dict[str, Any], input_type: str) -> int:
        values = []
        for f in self.fields:  # vectors and strings first: a table cannot be open while they are built
            value = attrs.get(f.name, OPTIONAL_DEFAULTS.get(f.name))
            values.append(None if value is None else f.convert(builder, value, input_type))
        getattr(fb, f"{self.table}Start")(builder)
        for f, value in zip(self.fields, values):
            if value is not None:
                f.add(builder, value)
        return getattr(fb, f"{self.table}End")(builder)


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, (list, tuple, np.ndarray)) else value


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _build_op_table() -> dict[str, OpEntry]:
    """tosa.<op> -> OpEntry, for every op of the tosa dialect. The schema keeps the Attribute union
    in Op enum order, so an op's attribute table is the union member with the op's value."""
    union_names = {v: k for k, v in vars(fb.Attribute).items() if isinstance(v, int) and not k.startswith("_")}
    table = {}
    for d in ops_of("tosa"):
        short = d.name.split(".", 1)[1]
        op_value = getattr(fb.Op, short.upper())
        attribute_table = union_names[op_value]
        fields = []
        for name, spec in d.attrs.items():
            add = getattr(fb, f"{attribute_table}Add{_camel(name)}", None)
            if add is None:  # MLIR-only attributes (variables' symbol names ...) have no field
                continue
            convert = FIELD_CONVERTERS.get((short, name)) or CONVERTERS[spec.kind]
            fields.append(Field(name, convert, add))
        table[d.name] = OpEntry(op_value, op_value, attribute_table, tuple(fields))
    return table


OP_TABLE = _build_op_table()


# ------------------------------------------------------------------------------ tensor names
def unique_io_names(graph: Graph) -> tuple[list[str], list[str]]:
    """The tensor names of a graph's inputs and outputs as both emitters write them: each keeps its
    name, a repeated one gets a suffix (_1, _2, ...), inputs first."""
    names = _Names()
    return [names.claim(graph.input_name(n)) for n in graph.inputs], [names.claim(o.name) for o in graph.outputs]


class _Names:
    """Unique tensor names: graph inputs and outputs keep theirs (a repeated name gets a suffix),
    every other tensor is layer_<k>, skipping names already taken."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.counter = 0
        self.next_suffix: dict[str, int] = {}  # so that 50,000 outputs of one name take linear time

    def claim(self, wanted: str) -> str:
        name, k = wanted, self.next_suffix.get(wanted, 1)
        while name in self.taken:
            name, k = f"{wanted}_{k}", k + 1
        self.next_suffix[wanted] = k
        self.taken.add(name)
        return name

    def fresh(self) -> str:
        while f"layer_{self.counter}" in self.taken:
            self.counter += 1
        return self.claim(f"layer_{self.counter}")


# ------------------------------------------------------------------------------ the writer
@dataclass
class _Operator:
    entry: OpEntry
    attrs: dict[str, Any]
    input_type: str
    inputs: list[str]
    outputs: list[str]
    location: str | None


def _check(graph: Graph) -> None:
    items = unsupported_for_emission([graph])
    for node in graph.nodes():
        for t in graph.types(node):
            if isinstance(t, TensorType) and any(d < 0 for d in t.shape):
                items.append(Unsupported(graph.op(node), f"{graph.name}: {graph.loc(node) or f'%{node}'}",
                                         f"dynamic shape {t} (TOSA 1.0 flatbuffers need static shapes)"))
                break
    if items:
        raise UnsupportedError(items)


def _constant_bytes(graph: Graph, node: int) -> int:
    """Bytes the node's constant data takes in the flatbuffer (0 for other ops)."""
    op = graph.op(node)
    if op == "tosa.const":
        count = graph.attrs(node)["values"].size
        dtype = graph.types(node)[0].dtype
        per_element = {"i4": 0.5, "i48": 6, "i1": 1}.get(dtype, graph.types(node)[0].numpy_dtype.itemsize)
        return _padded(int(np.ceil(count * per_element)))
    if op == "tosa.const_shape":
        return _padded(graph.attrs(node)["values"].size * 8)
    return 0


def build_flatbuffer(graph: Graph) -> memoryview:
    """The TOSA 1.0 flatbuffer of one TOSA-level graph, as a view of the finished buffer."""
    return _build(graph, defer_data=False).finished_view()


def write_flatbuffer(graph: Graph, path: str | os.PathLike) -> None:
    """Write the graph's TOSA 1.0 flatbuffer to `path` atomically ("-" is stdout). Large tensor
    data goes from its numpy array straight to the file."""
    write_atomic(path, _build(graph, defer_data=True).write_to)


def _build(graph: Graph, defer_data: bool) -> _Builder:
    _check(graph)
    require_tosa_1_0(graph)
    graph = with_distinct_outputs(graph)
    order = [n for n in graph.topological() if graph.op(n) != INPUT_OP]
    names = _Names()
    value_names: dict[Value, str] = {}
    input_names = []
    for node in graph.inputs:
        name = names.claim(graph.input_name(node))
        value_names[Value(node, 0)] = name
        input_names.append(name)
    output_names = []
    for out in graph.outputs:  # distinct values (with_distinct_outputs), each takes the output's name
        value_names[out.value] = names.claim(out.name)
        output_names.append(value_names[out.value])

    tensors: list[tuple[str, TensorType, np.ndarray | None]] = [
        (value_names[Value(n, 0)], graph.types(n)[0], None) for n in graph.inputs]
    shapes: list[tuple[str, int, np.ndarray]] = []
    operators: list[_Operator] = []
    for node in order:
        op = graph.op(node)
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
            for name, t in zip(outputs, types):
                data = _storage_bytes(attrs["values"], t.dtype) if op == "tosa.const" else None
                tensors.append((name, t, data))
        operands = graph.operands(node)
        input_type = graph.type_of(operands[0]).dtype if operands and isinstance(graph.type_of(operands[0]), TensorType) else ""
        loc = graph.loc(node)
        operators.append(_Operator(OP_TABLE[op], attrs, input_type, [value_names[v] for v in operands], outputs,
                                   str(loc) if loc else None))
    populate(data for _, _, data in tensors if data is not None)  # the input's pages, in one call
    # one allocation big enough for everything: constants, strings, and an allowance per table
    strings = sum(len(n.encode()) for n in names.taken) + sum(len(o.location.encode()) for o in operators if o.location)
    size = (sum(_constant_bytes(graph, n) for n in order) + 2 * strings
            + 256 * (len(tensors) + 2 * len(operators) + len(shapes)) + 4096)
    if size >= flatbuffers.Builder.MAX_BUFFER_SIZE:
        raise UnsupportedError([Unsupported("flatbuffer", graph.name, f"about {size} bytes: TOSA flatbuffers over "
                                            "2 GB need external tensor data, which is not written yet")])
    builder = _Builder(size, defer_data)
    _write_graph(builder, tensors, shapes, operators, input_names, output_names)
    return builder


def _location(builder: _Builder, text: str) -> int:
    text_offset = builder.string(text)
    fb.OpLocationStart(builder)
    fb.OpLocationAddText(builder, text_offset)
    return fb.OpLocationEnd(builder)


def _write_graph(
    builder: _Builder,
    tensors: list[tuple[str, TensorType, np.ndarray | None]],
    shapes: list[tuple[str, int, np.ndarray]],
    operators: list[_Operator],
    input_names: list[str],
    output_names: list[str],
) -> None:
    string = builder.string
    tensor_offsets = []
    for name, t, data in tensors:
        data_offset = builder.data_vector(data) if data is not None else None
        shape_offset = builder.int32_vector(t.shape)
        name_offset = string(name)
        fb.TosaTensorStart(builder)
        fb.TosaTensorAddName(builder, name_offset)
        fb.TosaTensorAddShape(builder, shape_offset)
        fb.TosaTensorAddType(builder, DTYPES[t.dtype])
        if data_offset is not None:
            fb.TosaTensorAddData(builder, data_offset)
        tensor_offsets.append(fb.TosaTensorEnd(builder))

    shape_offsets = []
    for name, rank, values in shapes:
        data_offset = builder.data_vector(values.view(np.uint8))
        name_offset = string(name)
        fb.TosaShapeStart(builder)
        fb.TosaShapeAddName(builder, name_offset)
        fb.TosaShapeAddRank(builder, rank)
        fb.TosaShapeAddData(builder, data_offset)
        shape_offsets.append(fb.TosaShapeEnd(builder))

    operator_offsets = []
    for o in operators:
        attribute = o.entry.build_attribute(builder, o.attrs, o.input_type)
        inputs = builder.offsets_vector([string(s) for s in o.inputs])
        outputs = builder.offsets_vector([string(s) for s in o.outputs])
        location = None if o.location is None else builder.once(("location", o.location),
                                                                    lambda: _location(builder, o.location))
        fb.TosaOperatorStart(builder)
        fb.TosaOperatorAddOp(builder, o.entry.op)
        fb.TosaOperatorAddAttributeType(builder, o.entry.attribute_type)
        fb.TosaOperatorAddAttribute(builder, attribute)
        fb.TosaOperatorAddInputs(builder, inputs)
        fb.TosaOperatorAddOutputs(builder, outputs)
        if location is not None:
            fb.TosaOperatorAddLocation(builder, location)
        operator_offsets.append(fb.TosaOperatorEnd(builder))

    block_name = string(BLOCK_NAME)
    operators_vec = builder.offsets_vector(operator_offsets)
    tensors_vec = builder.offsets_vector(tensor_offsets)
    inputs_vec = builder.offsets_vector([string(s) for s in input_names])
    outputs_vec = builder.offsets_vector([string(s) for s in output_names])
    shapes_vec = builder.offsets_vector(shape_offsets)
    fb.TosaBasicBlockStart(builder)
    fb.TosaBasicBlockAddName(builder, block_name)
    fb.TosaBasicBlockAddOperators(builder, operators_vec)
    fb.TosaBasicBlockAddTensors(builder, tensors_vec)
    fb.TosaBasicBlockAddInputs(builder, inputs_vec)
    fb.TosaBasicBlockAddOutputs(builder, outputs_vec)
    fb.TosaBasicBlockAddShapes(builder, shapes_vec)
    block = fb.TosaBasicBlockEnd(builder)

    blocks_vec = builder.offsets_vector([block])
    fb.TosaRegionStart(builder)
    fb.TosaRegionAddName(builder, block_name)
    fb.TosaRegionAddBlocks(builder, blocks_vec)
    region = fb.TosaRegionEnd(builder)
    regions_vec = builder.offsets_vector([region])

    fb.VersionStart(builder)
    fb.VersionAdd_Major(builder, VERSION[0])
    fb.VersionAdd_Minor(builder, VERSION[1])
    fb.VersionAdd_Patch(builder, VERSION[2])
    fb.VersionAdd_Draft(builder, False)
    version = fb.VersionEnd(builder)
    fb.TosaGraphStart(builder)
    fb.TosaGraphAddVersion(builder, version)
    fb.TosaGraphAddRegions(builder, regions_vec)
    root = fb.TosaGraphEnd(builder)
    builder.Finish(root, file_identifier=b"TOSA")


__all__ = ["build_flatbuffer", "write_flatbuffer", "OP_TABLE", "DTYPES", "VERSION"]
