"""Write a flatbuffer from a nested dict shaped like flatc's JSON, driven by a parsed .fbs schema.

    data = encode(load_schema("armnn"), {"layers": [...], "inputIds": [0], ...})

The dict uses flatc's JSON conventions, so a generator can be checked against `flatc --json` of a
real file: tables are dicts, a union field `u` comes with `"u_type": "MemberName"`, enums may be
names or numbers, structs are dicts, vectors are lists or numpy arrays. A numpy array for a vector
of scalars is written in one bulk copy, reinterpreted as the vector's element type when the
dtypes differ (Arm NN keeps float32 weights in an `[int]` vector: the bytes are what matter).

Every table gets a vtable of its own. The Python Builder shares a vtable between two tables when
their field offsets match without comparing the tables' sizes, so a shared vtable can declare a
smaller size than the table occupies, which strict readers (ours by default) reject; a few bytes
per table is the price of never writing that.
"""
from __future__ import annotations

import struct
from typing import Any

import flatbuffers
import numpy as np
from flatbuffers import number_types as N

from nn2tosa.schemas.model import SCALARS, FieldDef, Schema, StructDef, TableDef, TypeRef

_FLAGS = {
    "bool": N.BoolFlags, "byte": N.Int8Flags, "ubyte": N.Uint8Flags, "short": N.Int16Flags,
    "ushort": N.Uint16Flags, "int": N.Int32Flags, "uint": N.Uint32Flags, "long": N.Int64Flags,
    "ulong": N.Uint64Flags, "float": N.Float32Flags, "double": N.Float64Flags,
}


class _NeverShared(dict):
    """The Builder's vtable cache that never finds a match (see the module docstring)."""

    def get(self, key: Any, default: Any = None) -> Any:
        return None


class _Writer:
    def __init__(self, schema: Schema, size_hint: int):
        self.schema = schema
        self.b = flatbuffers.Builder(max(size_hint, 1024))
        self.b.vtables = _NeverShared()

    # ---- values that live behind an offset: written before the table that points at them
    def table(self, tdef: TableDef, doc: dict[str, Any]) -> int:
        unknown = set(doc) - set(tdef.by_name)
        if unknown:
            raise KeyError(f"{tdef.name} has no field(s) {sorted(unknown)}")
        offsets = {f.name: self.child(f, doc) for f in tdef.fields
                   if f.name in doc and f.type.kind in ("string", "table", "union", "vector")}
        b = self.b
        b.StartObject(len(tdef.fields))
        for f in tdef.fields:
            if f.name not in doc:
                continue
            kind = f.type.kind
            if f.name in offsets:
                b.PrependUOffsetTRelativeSlot(f.slot, offsets[f.name], 0)
            elif kind == "struct":
                self.struct(self.schema.structs[f.type.name], doc[f.name])
                b.PrependStructSlot(f.slot, b.Offset(), 0)
            elif kind == "union_type":
                member = self.schema.unions[f.type.name].by_name[doc[f.name]]
                b.PrependSlot(N.Uint8Flags, f.slot, member.value, 0)
            else:
                value = self.scalar(f.type, doc[f.name])
                b.PrependSlot(_FLAGS[f.type.scalar], f.slot, value, None)
        return b.EndObject()

    def child(self, f: FieldDef, doc: dict[str, Any]) -> int:
        value, t = doc[f.name], f.type
        if t.kind == "string":
            return self.b.CreateString(value)
        if t.kind == "table":
            return self.table(self.schema.tables[t.name], value)
        if t.kind == "union":
            member = self.schema.unions[t.name].by_name[doc[f.type_field]]
            return self.table(self.schema.tables[member.table], value)
        return self.vector(t.element, value, int(f.attributes.get("force_align", 1)))

    def vector(self, element: TypeRef, items: Any, force_align: int) -> int:
        b = self.b
        if element.kind in ("scalar", "enum"):
            dtype = np.dtype(SCALARS[element.scalar].dtype)
            if isinstance(items, np.ndarray):
                array = np.ascontiguousarray(items).reshape(-1).view(np.uint8).view(dtype)
            else:
                array = np.asarray([self.scalar(element, v) for v in items], dtype=dtype)
            b.StartVector(dtype.itemsize, array.size, max(dtype.itemsize, force_align))
            raw = memoryview(array.view(np.uint8))
            b.head = b.head - raw.nbytes
            b.Bytes[b.head:b.head + raw.nbytes] = raw
            return b.EndVector()
        if element.kind == "struct":
            sdef = self.schema.structs[element.name]
            b.StartVector(sdef.size, len(items), sdef.alignment)
            for item in reversed(items):
                self.struct(sdef, item)
            return b.EndVector()
        if element.kind == "string":
            offsets = [b.CreateString(s) for s in items]
        else:
            tdef = self.schema.tables[element.name]
            offsets = [self.table(tdef, item) for item in items]
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    # ---- values stored inline
    def struct(self, sdef: StructDef, doc: dict[str, Any]) -> None:
        raw = bytearray(sdef.size)
        for f in sdef.fields:
            if f.name in doc:
                struct.pack_into("<" + SCALARS[f.type.scalar].fmt, raw, f.offset, self.scalar(f.type, doc[f.name]))
        b = self.b
        b.Prep(sdef.alignment, sdef.size)
        b.head = b.head - sdef.size
        b.Bytes[b.head:b.head + sdef.size] = raw

    def scalar(self, t: TypeRef, value: Any) -> Any:
        if t.kind == "enum" and isinstance(value, str):
            return self.schema.enums[t.name].values[value]
        kind = SCALARS[t.scalar].kind
        return bool(value) if kind == "bool" else float(value) if kind == "float" else int(value)


def encode(schema: Schema, doc: dict[str, Any], *, file_identifier: bytes | None = None,
           size_hint: int = 1 << 20) -> bytearray:
    """The flatbuffer of `doc` (a root_type table as flatc's JSON shapes it). `size_hint`: the
    expected size, so the Builder does not grow (and copy) its buffer on the way."""
    writer = _Writer(schema, size_hint)
    root = writer.table(schema.tables[schema.root_type], doc)
    writer.b.Finish(root, file_identifier=file_identifier)
    return writer.b.Output()
