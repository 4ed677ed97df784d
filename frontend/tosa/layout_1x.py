"""The TOSA 1.x layout (1.0, and the 1.1 draft that only appends to it) -> tosa.* ops.

Every operator maps to the tosa dialect op of the same name, its attribute table field by field to
the op's attributes: `READ_TABLE` is the flatbuffer emitter's `OP_TABLE` inverted, each field read
back by the decoder of its attribute kind (`DECODERS`, the inverse of the emitter's `CONVERTERS`),
so that what the writer writes and what the reader reads cannot drift apart. Operands are the
operator's inputs as they are: TOSA 1.0 keeps zero points, shifts and shapes as tensors already.

An optional attribute at the value its absence means (nan_mode PROPAGATE, local_bound false) is
left out, as the IR leaves it out; CONST data comes from the output tensor, CONST_SHAPE values
from the block's `shapes`. 1.1 draft operators and element types beyond TOSA 1.0 are unsupported,
as are explicit VARIABLE/VARIABLE_READ/VARIABLE_WRITE operators (tosa-opt writes variable access
as IDENTITY on variable tensors, which blocks.py reads).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from nn2tosa.dialects.tosa_ops import TOSA_OPS
from nn2tosa.ir import Graph, Loc, TensorType, Value
from nn2tosa.tosa_flatbuffer.common import utf8_text
from nn2tosa.tosa_flatbuffer.layout_1_0 import DTYPES, OP_TABLE, OPTIONAL_DEFAULTS, field_kind
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.flatread import FlatBuffer, Table

from .blocks import BlockReader, ElementType, Operator, check_external_data, const_op, read_blocks

SCHEMA = load_schema("tosa")

MISSING = object()  # a field the file leaves at "unknown" (or absent without a usable default)

# Decoder(table, field, input element type) -> the IR attribute value, or MISSING.
Decoder = Callable[[Table, str, str], Any]


def _ints(table: Table, field: str, input_type: str) -> Any:
    values = table[field]
    return MISSING if values is None else [int(v) for v in values]


def _enum(renamed: dict[str, str] | None = None) -> Decoder:
    """An enum field -> its value name (MLIR's spelling where it differs); UNKNOWN -> MISSING."""
    renamed = renamed or {}

    def decode(table: Table, field: str, input_type: str) -> Any:
        name = table.enum_name(field)
        return MISSING if name == "UNKNOWN" else renamed.get(name, name)

    return decode


ELEMENT_TYPES = {value: ElementType(mlir) for mlir, value in DTYPES.items()}


def _elemtype(table: Table, field: str, input_type: str) -> Any:
    element = ELEMENT_TYPES.get(table[field])
    return MISSING if element is None else element.mlir


class FieldError(Exception):
    """A field whose content does not fit the op (the reader turns it into InvalidInputError)."""


def _scalar_of_input_type(table: Table, field: str, input_type: str) -> Any:
    """CLAMP's min_val/max_val: the leading bytes of the vector hold one value of the input type."""
    raw = table[field]
    if raw is None:
        return MISSING
    if not input_type:
        raise FieldError(f"{field} takes its type from the input, and the operator has none")
    storage = TensorType((), input_type).numpy_dtype
    if raw.size < storage.itemsize:
        raise FieldError(f"{field} holds {raw.size} bytes, one {input_type} needs {storage.itemsize}")
    value = np.frombuffer(raw[:storage.itemsize].tobytes(), dtype=storage)[0]
    if input_type == "bf16":  # raw bits -> the float they stand for (exact in float32)
        return float(np.array([int(value) << 16], dtype="<u4").view("<f4")[0])
    if input_type.startswith("f8"):
        raise FieldError(f"no TOSA 1.0 {table.type_name} on {input_type}")
    return float(value) if input_type in ("f16", "f32") else int(value)


def _utf8(table: Table, field: str, input_type: str) -> Any:
    try:
        return utf8_text(table[field])
    except UnicodeDecodeError as e:
        raise FieldError(f"{field} is not UTF-8 text (the IR keeps it as a string)") from e


DECODERS: dict[str, Decoder] = {
    "ints": _ints,
    "i32s": _ints,
    "i32": lambda table, field, input_type: int(table[field]),
    "bool": lambda table, field, input_type: bool(table[field]),
    "str": lambda table, field, input_type: MISSING if table[field] is None else table[field],
    "elemtype": _elemtype,
    "scalar_like:0": _scalar_of_input_type,
    "enum:tosa.nan_mode": _enum(),
    "enum:tosa.rounding_mode": _enum(),
    "enum:tosa.resize_mode": _enum({"NEAREST": "NEAREST_NEIGHBOR"}),
    "utf8": _utf8,  # (the writer's field_kind: an IR string in a [ubyte] field)
}


@dataclass(frozen=True)
class ReadField:
    name: str
    decode: Decoder
    optional: bool


@dataclass(frozen=True)
class ReadEntry:
    ir_op: str
    table: str  # the attribute table the operator carries, e.g. "Conv2dAttribute"
    fields: tuple[ReadField, ...]

    def attributes(self, operator: Operator, input_type: str) -> dict[str, Any]:
        member = operator.table.union_type("attribute")
        if member is not None and member != self.table:
            raise FieldError(f"carries a {member}, expected a {self.table}")
        table = operator.table["attribute"]
        attrs = {}
        for f in self.fields:
            value = MISSING if table is None else f.decode(table, f.name, input_type)
            if value is MISSING or (f.optional and (value is False or value == OPTIONAL_DEFAULTS.get(f.name))):
                if not f.optional:
                    raise FieldError(f"{self.table}.{f.name} is missing or UNKNOWN")
                continue
            attrs[f.name] = value
        return attrs


def _build_read_table() -> dict[int, ReadEntry]:
    """Op enum value -> ReadEntry, for every op the emitter writes."""
    table = {}
    for ir_op, entry in OP_TABLE.items():
        short = ir_op.split(".", 1)[1]
        specs = TOSA_OPS[ir_op].attrs
        fields = tuple(ReadField(f.name, DECODERS[field_kind(short, f.name, specs[f.name].kind)],
                                 specs[f.name].optional) for f in entry.fields)
        table[entry.op] = ReadEntry(ir_op, entry.table, fields)
    return table


READ_TABLE = _build_read_table()
# Operators the IR has but whose flatbuffer form nn2tosa does not know (tosa-opt writes IDENTITY on
# variable tensors instead, which blocks.py reads).
_EXPLICIT_VARIABLE_OPS = {"VARIABLE", "VARIABLE_READ", "VARIABLE_WRITE"}


def _constant_operands(ir_op: str) -> frozenset[int]:
    """Operand positions TOSA 1.0 requires constant without the dynamic extension: the constant and
    shape operands of the op's record."""
    op = TOSA_OPS.get(ir_op)
    return frozenset(op.positions("const") + op.positions("shape")) if op is not None else frozenset()


class Layout1x:
    """The `Layout` of TOSA 1.x files (see blocks.Layout)."""

    element_types = ELEMENT_TYPES
    dtype_names = SCHEMA.enums["DType"].names
    op_names = SCHEMA.enums["Op"].names

    def unsupported(self, reader: BlockReader, operator: Operator) -> str | None:
        if operator.name == "UNKNOWN":
            reader.fail("op code UNKNOWN (0) is not an operator", operator)
        if operator.name in _EXPLICIT_VARIABLE_OPS:
            return "explicit variable operators are not read (tosa-opt's IDENTITY on variable tensors is)"
        entry = READ_TABLE.get(operator.table["op"])
        if entry is None:
            return "a TOSA 1.1 draft operator; nn2tosa's IR holds TOSA 1.0 operators"
        for k in sorted(_constant_operands(entry.ir_op)):
            source = reader.producer(operator.inputs[k]) if k < len(operator.inputs) else None
            if k < len(operator.inputs) and (source is None or source.name not in ("CONST", "CONST_SHAPE")):
                return (f"input {k} ({operator.inputs[k]!r}) is not a constant (TOSA's dynamic extension); "
                        "nn2tosa's TOSA-level IR keeps zero points, shifts, multipliers, tables, pad values and "
                        "shapes constant")
        return None

    def convert(self, reader: BlockReader, operator: Operator, operands: list[Value]) -> list[Value]:
        special = _SPECIAL.get(operator.name)
        if special is not None:
            return special(reader, operator, operands)
        entry = READ_TABLE[operator.table["op"]]
        first = reader.graph.type_of(operands[0]) if operands else None
        input_type = first.dtype if isinstance(first, TensorType) else ""
        try:
            attrs = entry.attributes(operator, input_type)
        except FieldError as e:
            reader.fail(str(e), operator)
        return reader.add(entry.ir_op, operands, reader.result_types(operator), attrs, operator)

    def location(self, operator: Operator) -> Loc | None:
        location = operator.table["location"]
        text = None if location is None else location["text"]
        if not text:  # tosa_serializer writes an empty text: no location
            return None
        # tosa-opt writes MLIR's printing of the location: loc("conv") -> conv, loc("f.mlir":7:10) -> f.mlir:7:10
        match = _MLIR_LOC.fullmatch(text)
        return Loc(match.group(1) + (match.group(2) or "") if match else text)


_MLIR_LOC = re.compile(r'loc\("([^"\\]*)"(:\d+:\d+)?\)')


def _const_shape(reader: BlockReader, operator: Operator, operands: list[Value]) -> list[Value]:
    if operands or len(operator.outputs) != 1:
        reader.fail("CONST_SHAPE has no inputs and one output", operator)
    name = operator.outputs[0]
    return reader.add("tosa.const_shape", (), reader.result_types(operator),
                      {"values": reader.shape_values(name, operator)}, operator)


_SPECIAL = {"CONST": const_op, "CONST_SHAPE": _const_shape}


def read_graphs(fb: FlatBuffer, file_data: memoryview) -> tuple[list[Graph], list]:
    """One graph per region (its first block; further blocks are graphs named after themselves),
    the region called "main" first, and everything unsupported in them."""
    layout = Layout1x()
    readers = []
    for r, region in enumerate(fb.root()["regions"] or ()):
        region_name = region["name"] or f"region{r}"
        for b, block in enumerate(region["blocks"] or ()):
            name = region_name if b == 0 else (block["name"] or f"{region_name}.block{b}")
            where = f"region {region_name!r} block {block['name'] or b!r}:"
            readers.append(BlockReader(layout, block, name, file_data, where))
    check_external_data(readers)
    return read_blocks(readers)
