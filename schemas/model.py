"""The schema model the flatbuffer reader (`flatread`) and the verifier (`verify`) are driven by.

`bfbs.load_bfbs` builds it from a binary schema (.bfbs) that flatc compiled from a .fbs file: enums,
unions, structs (with their byte layout) and tables (with each field's vtable slot and default), all
as flatc computed them. The model is shared and cached per process: treat it as read-only.

Layout facts the model records (flatc's, per the FlatBuffers format):
- Table field i uses vtable slot i (vtable byte offset 4 + 2*slot), or the slot its `(id: n)` names.
  A union field `u` takes two slots: a hidden `u_type` field (the tag, a ubyte) in the slot before
  the value. A `deprecated` field keeps its slot (it is just never written).
- Struct fields sit at the byte offsets flatc assigned (each aligned to its own alignment); the
  struct's size and alignment (`force_align` included) are flatc's too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "SCALARS",
    "Schema",
    "SchemaError",
    "TypeRef",
    "EnumDef",
    "UnionDef",
    "UnionMember",
    "StructDef",
    "StructField",
    "TableDef",
    "FieldDef",
]


class SchemaError(Exception):
    """A binary schema this model cannot represent (or that is not a binary schema)."""


@dataclass(frozen=True)
class ScalarInfo:
    """Storage facts for one scalar type: byte size, `struct` format char, numpy dtype, Python kind."""

    size: int
    fmt: str  # struct module format character (used with '<')
    dtype: str  # little-endian numpy dtype string
    kind: str  # "int" | "float" | "bool"


SCALARS: dict[str, ScalarInfo] = {
    "bool": ScalarInfo(1, "?", "|b1", "bool"),
    "byte": ScalarInfo(1, "b", "|i1", "int"),
    "ubyte": ScalarInfo(1, "B", "|u1", "int"),
    "short": ScalarInfo(2, "h", "<i2", "int"),
    "ushort": ScalarInfo(2, "H", "<u2", "int"),
    "int": ScalarInfo(4, "i", "<i4", "int"),
    "uint": ScalarInfo(4, "I", "<u4", "int"),
    "float": ScalarInfo(4, "f", "<f4", "float"),
    "long": ScalarInfo(8, "q", "<i8", "int"),
    "ulong": ScalarInfo(8, "Q", "<u8", "int"),
    "double": ScalarInfo(8, "d", "<f8", "float"),
}


@dataclass(frozen=True)
class TypeRef:
    """A field's type.

    kind: "scalar" | "enum" | "string" | "struct" | "table" | "union" | "union_type" | "vector" | "array".
    name: the scalar's canonical name, or the enum/struct/table/union name ("" for string/vector).
    scalar: the storage scalar for scalar, enum and union_type (the hidden union tag: "ubyte").
    element: the element type of a vector or a fixed-size struct array; length: the array's length.
    """

    kind: str
    name: str = ""
    scalar: str = ""
    element: "TypeRef | None" = None
    length: int = 0

    @property
    def element_type(self) -> TypeRef:
        """`element` of a vector or array, which always has one."""
        if self.element is None:
            raise ValueError(f"a {self.kind} type has no element type")
        return self.element

    def __str__(self) -> str:
        if self.kind == "vector":
            return f"[{self.element}]"
        if self.kind == "array":
            return f"[{self.element}:{self.length}]"
        if self.kind == "union_type":
            return f"{self.name}(type)"
        return self.name or self.kind


@dataclass(eq=False)
class EnumDef:
    """`enum Name : underlying { A = 0, B, ... }`. `names` maps a value to its first name."""

    name: str
    underlying: str
    values: dict[str, int]
    names: dict[int, str]
    namespace: str = ""
    bit_flags: bool = False
    attributes: dict[str, object] = field(default_factory=dict)
    doc: str = ""


@dataclass(frozen=True)
class UnionMember:
    """One union member. `name` is what the tag calls it; `table` the table type it holds
    (they differ for aliased members such as MPS's `MPSReLU: _MPSNode2x1`)."""

    name: str
    table: str
    value: int


@dataclass(eq=False)
class UnionDef:
    """`union Name { A, Alias: B, ... }`: tag value = position + 1 unless given; 0 means NONE."""

    name: str
    members: list[UnionMember]
    by_value: dict[int, UnionMember]
    by_name: dict[str, UnionMember]
    namespace: str = ""
    attributes: dict[str, object] = field(default_factory=dict)
    doc: str = ""


@dataclass(eq=False)
class StructField:
    """A struct member at byte `offset` from the struct's start, `size` bytes long."""

    name: str
    type: TypeRef
    offset: int = 0
    size: int = 0
    attributes: dict[str, object] = field(default_factory=dict)
    doc: str = ""


@dataclass(eq=False)
class StructDef:
    """A fixed-layout struct: stored inline (in a table field or a vector), never via an offset."""

    name: str
    fields: list[StructField]
    size: int = 0
    alignment: int = 1
    namespace: str = ""
    attributes: dict[str, object] = field(default_factory=dict)
    doc: str = ""

    @property
    def by_name(self) -> dict[str, StructField]:
        return {f.name: f for f in self.fields}


@dataclass(eq=False)
class FieldDef:
    """A table field. `slot` is its vtable index (vtable byte offset `voffset` = 4 + 2*slot).

    `hidden` marks the `<union>_type` tag field the schema language adds before a union field;
    `union_field` then names that union field (and the union field's `type_field` names the tag).
    `default` is the value a reader returns when the field is absent: int/float/bool for scalars
    and enums, None for everything else (and for optional scalars declared `= null`).
    """

    name: str
    type: TypeRef
    slot: int = 0
    default: bool | int | float | None = None
    deprecated: bool = False
    required: bool = False
    hidden: bool = False
    union_field: str | None = None
    type_field: str | None = None
    attributes: dict[str, object] = field(default_factory=dict)
    doc: str = ""

    @property
    def voffset(self) -> int:
        return 4 + 2 * self.slot


@dataclass(eq=False)
class TableDef:
    """A table: `fields` in slot order, hidden union tag fields included (see `FieldDef.hidden`)."""

    name: str
    fields: list[FieldDef]
    namespace: str = ""
    attributes: dict[str, object] = field(default_factory=dict)
    doc: str = ""
    by_name: dict[str, FieldDef] = field(default_factory=dict)

    def visible_fields(self) -> list[FieldDef]:
        """The fields in slot order (deprecated included, hidden union tags excluded)."""
        return [f for f in self.fields if not f.hidden]


@dataclass(eq=False)
class Schema:
    """Everything one schema (a .fbs file and its includes) declares, by unqualified name."""

    namespace: str = ""
    file_identifier: str | None = None
    file_extension: str | None = None
    root_type: str | None = None
    enums: dict[str, EnumDef] = field(default_factory=dict)
    unions: dict[str, UnionDef] = field(default_factory=dict)
    structs: dict[str, StructDef] = field(default_factory=dict)
    tables: dict[str, TableDef] = field(default_factory=dict)

    def kind_of(self, name: str) -> str | None:
        """The kind of declared type `name`: "enum", "union", "struct", "table", or None."""
        for kind, table in (("enum", self.enums), ("union", self.unions), ("struct", self.structs), ("table", self.tables)):
            if name in table:
                return kind
        return None


