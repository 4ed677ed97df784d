"""Build the schema model (`model.Schema`) from a binary schema (.bfbs) written by flatc.

flatc is the schema compiler: `flatc --binary --schema --bfbs-builtins --bfbs-comments X.fbs`
(`regenerate.py` runs it) writes everything it computed from X.fbs — vtable slots, defaults, struct
layouts, enum and union values, attributes, doc comments — as a flatbuffer of its own
`reflection.fbs` schema, which this module reads with flatc's Python code for that schema
(`reflection_generated.py`). Nothing is recomputed here; the model only renames what flatc says.

A .bfbs names types with their namespace ("armnnSerializer.TensorInfo"); the model uses the
unqualified names (each packaged schema has one namespace, and a clash is refused).

flatc's Python accessors are slow (each field read is several interpreted calls): building the Arm NN
model this way costs about twice what parsing its .fbs by hand did, so `nn2tosa.schemas.load_schema`
keeps the model it builds in a cache (see there).
"""
from __future__ import annotations

from . import reflection_generated as rf
from .model import SCALARS, EnumDef, FieldDef, Schema, SchemaError, StructDef, StructField, TableDef, TypeRef, UnionDef, UnionMember

__all__ = ["load_bfbs"]

_SCALAR_OF = {
    rf.BaseType.Bool: "bool",
    rf.BaseType.Byte: "byte",
    rf.BaseType.UByte: "ubyte",
    rf.BaseType.Short: "short",
    rf.BaseType.UShort: "ushort",
    rf.BaseType.Int: "int",
    rf.BaseType.UInt: "uint",
    rf.BaseType.Long: "long",
    rf.BaseType.ULong: "ulong",
    rf.BaseType.Float: "float",
    rf.BaseType.Double: "double",
}


def load_bfbs(data: bytes, filename: str = "<bfbs>") -> Schema:
    """The model of the binary schema `data` (flatc --binary --schema output).

    Raises SchemaError when `data` is not a binary schema or uses what the model cannot represent
    (64-bit vectors, a type name declared in two namespaces)."""
    if len(data) < 8 or not rf.Schema.SchemaBufferHasIdentifier(data, 0):
        raise SchemaError(f"{filename}: not a flatc binary schema (no BFBS file identifier)")
    return _Loader(rf.Schema.GetRootAs(data, 0), filename).schema


def _split(qualified: bytes) -> tuple[str, str]:
    """(namespace, name) of "ns.sub.Name"."""
    namespace, _, name = qualified.decode().rpartition(".")
    return namespace, name


def _doc(lines: int, line: object) -> str:
    """The `///` doc comment: its lines, each stripped, joined with newlines."""
    return "\n".join(line(i).decode().strip() for i in range(lines))  # type: ignore[operator]


# The attributes the schema language writes without a value (`(required)`): flatc stores "0" as their
# value; the model says True.
_FLAGS = frozenset({"deprecated", "required", "key", "bit_flags", "original_order", "shared", "flexbuffer",
                    "private", "offset64", "vector64", "native_inline", "cpp_str_flex_ctor", "idempotent"})


def _attributes(count: int, item: object) -> dict[str, object]:
    """The `(name: value, ...)` metadata, with numbers as ints and the flags above as True."""
    out: dict[str, object] = {}
    for i in range(count):
        kv = item(i)  # type: ignore[operator]
        key, raw = kv.Key().decode(), kv.Value()
        text = "" if raw is None else raw.decode()
        out[key] = True if key in _FLAGS or text == "" else int(text) if text.lstrip("-").isdigit() else text
    return out


class _Loader:
    def __init__(self, s: rf.Schema, filename: str):
        self.filename = filename
        self.objects = [s.Objects(i) for i in range(s.ObjectsLength())]
        self.enums = [s.Enums(i) for i in range(s.EnumsLength())]
        self.object_names = [_split(o.Name())[1] for o in self.objects]
        self.enum_names = [_split(e.Name())[1] for e in self.enums]
        names = self.object_names + self.enum_names
        if len(set(names)) != len(names):
            twice = sorted({n for n in names if names.count(n) > 1})
            raise SchemaError(f"{filename}: {', '.join(twice)} declared in more than one namespace")
        root = s.RootTable()
        ident, ext = s.FileIdent(), s.FileExt()
        self.schema = Schema(
            namespace=_split(root.Name())[0] if root is not None else "",
            file_identifier=ident.decode() if ident else None,
            file_extension=ext.decode() if ext else None,
            root_type=_split(root.Name())[1] if root is not None else None,
        )
        for e, name in zip(self.enums, self.enum_names):
            self._enum(e, name)
        for o, name in zip(self.objects, self.object_names):
            if o.IsStruct():
                self._struct(o, name)
            else:
                self._table(o, name)

    def _type(self, base: int, index: int, t: rf.Type) -> TypeRef:
        """The model type of base type `base` (a field's, or a vector's or array's element)."""
        scalar = _SCALAR_OF.get(base)
        if scalar is not None:
            return TypeRef("enum", self.enum_names[index], scalar) if index >= 0 else TypeRef("scalar", scalar, scalar)
        if base == rf.BaseType.UType:
            return TypeRef("union_type", self.enum_names[index], "ubyte")
        if base == rf.BaseType.String:
            return TypeRef("string")
        if base == rf.BaseType.Obj:
            return TypeRef("struct" if self.objects[index].IsStruct() else "table", self.object_names[index])
        if base == rf.BaseType.Union:
            return TypeRef("union", self.enum_names[index])
        if base == rf.BaseType.Vector:
            return TypeRef("vector", element=self._type(t.Element(), index, t))
        if base == rf.BaseType.Array:
            return TypeRef("array", element=self._type(t.Element(), index, t), length=t.FixedLength())
        raise SchemaError(f"{self.filename}: base type {base} is not supported (64-bit vectors?)")

    def _field_type(self, f: rf.Field) -> TypeRef:
        t = f.Type()
        return self._type(t.BaseType(), t.Index(), t)

    def _enum(self, e: rf.Enum, name: str) -> None:
        namespace = _split(e.Name())[0]
        attrs = _attributes(e.AttributesLength(), e.Attributes)
        doc = _doc(e.DocumentationLength(), e.Documentation)
        values = [e.Values(i) for i in range(e.ValuesLength())]
        if e.IsUnion():
            members = [
                UnionMember(v.Name().decode(), self.object_names[v.UnionType().Index()], v.Value())
                for v in values
                if v.Value() != 0  # NONE
            ]
            self.schema.unions[name] = UnionDef(
                name, members, {m.value: m for m in members}, {m.name: m for m in members}, namespace, attrs, doc
            )
            return
        underlying = _SCALAR_OF[e.UnderlyingType().BaseType()]
        by_name = {v.Name().decode(): v.Value() for v in values}
        names: dict[int, str] = {}
        for value_name, value in by_name.items():
            names.setdefault(value, value_name)
        self.schema.enums[name] = EnumDef(name, underlying, by_name, names, namespace, "bit_flags" in attrs, attrs, doc)

    def _struct(self, o: rf.Object, name: str) -> None:
        fields = []
        for f in sorted((o.Fields(i) for i in range(o.FieldsLength())), key=lambda f: f.Id()):
            ftype = self._field_type(f)
            fields.append(StructField(f.Name().decode(), ftype, f.Offset(), self._inline_size(ftype),
                                      _attributes(f.AttributesLength(), f.Attributes),
                                      _doc(f.DocumentationLength(), f.Documentation)))
        self.schema.structs[name] = StructDef(
            name, fields, o.Bytesize(), o.Minalign(), _split(o.Name())[0],
            _attributes(o.AttributesLength(), o.Attributes), _doc(o.DocumentationLength(), o.Documentation),
        )

    def _inline_size(self, t: TypeRef) -> int:
        """The bytes a struct member of type `t` occupies."""
        if t.kind in ("scalar", "enum"):
            return SCALARS[t.scalar].size
        if t.kind == "struct":
            return self.objects[self.object_names.index(t.name)].Bytesize()
        return self._inline_size(t.element_type) * t.length  # a fixed-size array

    def _table(self, o: rf.Object, name: str) -> None:
        fields: list[FieldDef] = []
        for f in (o.Fields(i) for i in range(o.FieldsLength())):
            fname = f.Name().decode()
            ftype = self._field_type(f)
            tag = ftype.kind == "union_type" or (ftype.kind == "vector" and ftype.element_type.kind == "union_type")
            union = ftype.kind == "union" or (ftype.kind == "vector" and ftype.element_type.kind == "union")
            fields.append(FieldDef(
                fname,
                ftype,
                f.Id(),
                self._default(f, ftype),
                bool(f.Deprecated()),
                bool(f.Required()),
                hidden=tag,
                union_field=fname[: -len("_type")] if tag else None,
                type_field=fname + "_type" if union else None,
                attributes=_attributes(f.AttributesLength(), f.Attributes),
                doc=_doc(f.DocumentationLength(), f.Documentation),
            ))
        fields.sort(key=lambda fd: fd.slot)
        self.schema.tables[name] = TableDef(
            name, fields, _split(o.Name())[0], _attributes(o.AttributesLength(), o.Attributes),
            _doc(o.DocumentationLength(), o.Documentation), {fd.name: fd for fd in fields},
        )

    @staticmethod
    def _default(f: rf.Field, t: TypeRef) -> bool | int | float | None:
        """What a reader returns for the absent field: the scalar default, None for the rest (and
        for optional scalars, declared `= null`)."""
        if t.kind not in ("scalar", "enum", "union_type") or f.Optional():
            return None
        kind = SCALARS[t.scalar].kind
        if kind == "float":
            return float(f.DefaultReal())
        if kind == "bool":
            return bool(f.DefaultInteger())
        return int(f.DefaultInteger())
