"""Descriptor tables as IR attributes: one attribute per schema field, named as in the schema.

The attribute kind of a field (for the dialect) and the Python value read from a file (for the
reader) come from the same field type, here, so they cannot disagree:

    bool -> bool          integer -> int (i64)     float -> f32        double -> float (f64)
    enum -> str (the value's name)                 string -> str
    [bool] -> bools       [integer] -> ints        [float] -> f32s     [enum] -> strs
    table -> dict of its fields (same rules)       [table] -> list of dicts, except a table
    holding a single vector (UintVector) which reads as that vector: [[0, 0], [0, 2]]

An absent field reads as its schema default (an enum's default as its name), an absent vector
as [], an absent table as the dict of its defaults: every attribute is always present.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.ir import AttrSpec, attr
from nn2tosa.schemas import Schema
from nn2tosa.schemas.model import SCALARS, FieldDef, TableDef, TypeRef
from nn2tosa.schemas.flatread import Table

_SCALAR_KINDS = {"bool": "bool", "float": "f32", "double": "float"}  # every other scalar is an integer
_VECTOR_KINDS = {"bool": "bools", "float": "f32s", "double": "floats"}


def _scalar_kind(t: TypeRef) -> str:
    return _SCALAR_KINDS.get(t.scalar, "int")


def _wrapped_vector(schema: Schema, t: TypeRef) -> FieldDef | None:
    """The single vector field of a table used as a vector wrapper (UintVector), else None."""
    tdef = schema.tables.get(t.name) if t.kind == "table" else None
    if tdef is not None and len(tdef.visible_fields()) == 1 and tdef.visible_fields()[0].type.kind == "vector":
        return tdef.visible_fields()[0]
    return None


def attr_kind(schema: Schema, f: FieldDef) -> str:
    """The registry attribute kind that holds field `f`'s value."""
    t = f.type
    if t.kind == "scalar":
        return _scalar_kind(t)
    if t.kind in ("enum", "string"):
        return "str"
    if t.kind == "table":
        return "dict"
    if t.kind == "vector":
        e = t.element_type
        if e.kind == "scalar":
            return _VECTOR_KINDS.get(e.scalar, "ints")
        if e.kind == "enum":
            return "strs"
        if e.kind == "string":
            return "strs"
        return "any"  # vectors of tables: nested lists / lists of dicts
    raise TypeError(f"descriptor field {f.name} of type {t} has no attribute form")


def attr_specs(schema: Schema, descriptor: str) -> dict[str, AttrSpec]:
    """Attribute specs of a descriptor table: one per field, documented with the schema type."""
    tdef = schema.tables[descriptor]
    specs = {}
    for f in tdef.visible_fields():
        default = "" if f.default is None else f", default {_default(schema, f)!r}"
        doc = (f.doc + " " if f.doc else "") + f"({descriptor}.{f.name}: {f.type}{default})"
        specs[f.name] = attr(attr_kind(schema, f), doc)
    return specs


def _default(schema: Schema, f: FieldDef) -> Any:
    t = f.type
    if t.kind == "enum":
        enum = schema.enums[t.name]
        number = int(f.default or 0)  # (an enum's default is an integer)
        name = enum.names.get(number)
        return name if name is not None else number
    if t.kind == "scalar":
        value = f.default if f.default is not None else 0
        if t.scalar == "bool":
            return bool(value)
        if t.scalar == "float":  # what a reader of the 32-bit field gets (1e-12 is not a float32)
            return float(np.float32(value))
        return float(value) if SCALARS[t.scalar].kind == "float" else int(value)
    if t.kind == "string":
        return ""
    if t.kind == "table":
        return defaults(schema, schema.tables[t.name])
    return []  # vectors


def defaults(schema: Schema, tdef: TableDef) -> dict[str, Any]:
    """The attributes of a descriptor the file does not contain: every field at its default."""
    return {f.name: _default(schema, f) for f in tdef.visible_fields()}


def read(schema: Schema, table: Table | None, tdef: TableDef) -> dict[str, Any]:
    """The attributes of descriptor `table` (None: absent, all defaults)."""
    if table is None:
        return defaults(schema, tdef)
    return {f.name: _value(schema, table, f) for f in tdef.visible_fields()}


def _value(schema: Schema, table: Table, f: FieldDef) -> Any:
    t = f.type
    if not table.has(f.name):
        return _default(schema, f)
    if t.kind == "enum":
        return table.enum_name(f.name)
    if t.kind == "scalar":
        return table.get(f.name)
    if t.kind == "string":
        return table.get(f.name)
    if t.kind == "table":
        return read(schema, table.get(f.name), schema.tables[t.name])
    e = t.element_type
    if e.kind in ("scalar", "string"):
        value = table.get(f.name)
        return value.tolist() if hasattr(value, "tolist") else list(value)
    if e.kind == "enum":
        names = schema.enums[e.name].names
        out = []
        for v in table.get(f.name).tolist():
            if v not in names:
                raise InvalidInputError(f"{f.name} holds {v}, not a value of enum {e.name}", where=f"offset 0x{table.offset:x}")
            out.append(names[v])
        return out
    if e.kind == "table":
        inner = schema.tables[e.name]
        wrapped = _wrapped_vector(schema, e)
        items = table.get(f.name)
        if wrapped is not None:
            return [_value(schema, item, wrapped) for item in items]
        return [read(schema, item, inner) for item in items]
    raise TypeError(f"descriptor field {f.name} of type {t} has no attribute form")
