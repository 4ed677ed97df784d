"""The TOSA 1.0 flatbuffer form of the tosa dialect: element types, and per op its Op enum value,
attribute table and fields (`OP_TABLE`), derived from the op's record in the op table
(nn2tosa/dialects/tosa_ops: its opcode and attributes) and the flatc-generated code. The writer (nn2tosa.lowering.flatbuffer_emitter) and the reader (nn2tosa.frontend.tosa.layout_1x)
both use it, so the two cannot disagree.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.dialects.tosa_ops import TosaOp, View
from nn2tosa.ir import TensorType
from nn2tosa.ir.types import bf16_bits
from nn2tosa.schemas import tosa_generated as fb

from .common import FlatBuilder, camel, hashable, utf8_vector

DTYPES = {
    "i1": fb.DType.BOOL, "i4": fb.DType.INT4, "i8": fb.DType.INT8, "i16": fb.DType.INT16, "i32": fb.DType.INT32,
    "i48": fb.DType.INT48, "f16": fb.DType.FP16, "bf16": fb.DType.BF16, "f32": fb.DType.FP32,
    "f8E4M3FN": fb.DType.FP8E4M3, "f8E5M2": fb.DType.FP8E5M2,
}


def _scalar_bytes(value: float | int, element_type: str) -> np.ndarray:
    """One value of `element_type` as its little-endian bytes (CLAMP's min_val/max_val)."""
    if element_type == "bf16":
        scalar = np.array(bf16_bits(float(value)), dtype="<u2")
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
Converter = Callable[["FlatBuilder", Any, str], int]


def _enum(enum_class: type, renamed: dict[str, str] | None = None) -> Converter:
    """An MLIR enum value name -> the schema's enum value (`renamed` where the spellings differ)."""
    names = renamed or {}
    return lambda builder, value, input_type: getattr(enum_class, str(names.get(value, value)))


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
    "utf8": lambda builder, value, input_type: builder.byte_vector(utf8_vector(value)),
}
# What the flatbuffer must say when the IR leaves an optional attribute out (the schema's own
# default, UNKNOWN, is not what MLIR's default means).
OPTIONAL_DEFAULTS = {"nan_mode": "PROPAGATE"}
# Attributes whose schema field has another type than the MLIR attribute: (op, attribute) -> the kind
# whose converter writes it, and whose decoder the reader (nn2tosa.frontend.tosa.layout_1x) reads it
# back with, in place of the attribute's own kind. "utf8": an IR string in a [ubyte] field.
FIELD_KINDS = {("custom", "implementation_attrs"): "utf8"}


def field_kind(op: str, name: str, attribute_kind: str) -> str:
    """The kind of the converter and decoder of attribute `name` of tosa.`op`."""
    return FIELD_KINDS.get((op, name), attribute_kind)


@dataclass(frozen=True)
class Field:
    name: str  # the attribute's name, in the IR and in the schema
    convert: Converter
    add: Callable[["FlatBuilder", Any], None]  # the generated <Table>Add<Field>


@dataclass(frozen=True)
class OpEntry:
    op: int  # tosa.Op enum value
    attribute_type: int  # tosa.Attribute union member
    table: str  # its table name, e.g. "Conv2dAttribute"
    fields: tuple[Field, ...]

    def build_attribute(self, builder: FlatBuilder, attrs: dict[str, Any], input_type: str) -> int:
        content = tuple((f.name, hashable(attrs.get(f.name))) for f in self.fields)
        return builder.once((self.table, input_type, content), lambda: self._write_attribute(builder, attrs, input_type))

    def _write_attribute(self, builder: FlatBuilder, attrs: dict[str, Any], input_type: str) -> int:
        values = []
        for f in self.fields:  # vectors and strings first: a table cannot be open while they are built
            value = attrs.get(f.name, OPTIONAL_DEFAULTS.get(f.name))
            values.append(None if value is None else f.convert(builder, value, input_type))
        getattr(fb, f"{self.table}Start")(builder)
        for f, value in zip(self.fields, values):
            if value is not None:
                f.add(builder, value)
        return getattr(fb, f"{self.table}End")(builder)


_UNION_NAMES = {v: k for k, v in vars(fb.Attribute).items() if isinstance(v, int) and not k.startswith("_")}
_ENTRIES: dict[str, tuple[TosaOp, OpEntry]] = {}


def op_entry(op: TosaOp) -> OpEntry:
    """The flatbuffer form of one op's record: its Op enum value (the record's opcode) and the
    attribute table the schema's Attribute union keeps at that value (the union is in Op enum
    order), with a field for each attribute the table has (MLIR-only attributes, such as
    variables' symbol names, have none). Made once per record."""
    cached = _ENTRIES.get(op.full_name)
    if cached is not None and cached[0] is op:
        return cached[1]
    op_value = getattr(fb.Op, op.op_name)
    attribute_table = _UNION_NAMES[op_value]
    fields = []
    for name, spec in op.attrs.items():
        add = getattr(fb, f"{attribute_table}Add{camel(name)}", None)
        if add is None:
            continue
        convert = CONVERTERS[field_kind(op.name, name, spec.kind)]
        fields.append(Field(name, convert, add))
    entry = OpEntry(op_value, op_value, attribute_table, tuple(fields))
    _ENTRIES[op.full_name] = (op, entry)
    return entry


# "tosa.<op>" -> OpEntry, for every op of the op table (computed when looked up)
OP_TABLE: Mapping[str, OpEntry] = View(op_entry)
