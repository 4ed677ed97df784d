"""A parser for the part of the FlatBuffers schema language (.fbs) that our schemas use.

It turns schema text into a `Schema`: enums, unions, structs (with their byte layout) and tables
(with each field's vtable slot and default). The generic reader (`flatread`) and the verifier
(`verify`) are driven by this model, so a schema change is picked up without regenerating code.

Covered: `namespace`, `include`, `attribute "x";`, `file_identifier`, `file_extension`,
`root_type`, `enum` (incl. `bit_flags`), `union` (incl. aliased members `Alias: Table` and explicit
values), `struct` (incl. fixed arrays `[T:N]` and `force_align`), `table`, field defaults
(numbers, `true`/`false`, enum value names, `nan`/`inf`, `null`), metadata `(...)`, `//`, `///`
and `/* */` comments. Not covered (rejected with a SchemaError): `rpc_service`, JSON objects at
top level, vectors of vectors.

Layout rules follow the FlatBuffers format:
- Table field i (declaration order) uses vtable slot i, i.e. vtable byte offset 4 + 2*i, unless
  every field carries `(id: n)`. A union field `u` takes two slots: a hidden `u_type` field
  (the tag, a ubyte) in the slot before the value; `(id: n)` on a union names the value's slot.
  A `deprecated` field keeps its slot (it is just never written).
- Struct fields are laid out in declaration order, each aligned to its own alignment (a scalar's
  size, a struct's largest member alignment or its `force_align`); the struct's size is rounded
  up to its alignment.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

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
    "parse_schema",
]


class SchemaError(Exception):
    """The schema text is not valid (or uses a construct this parser does not cover)."""


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

# The sized spellings are synonyms; the model always uses the canonical names above.
_SCALAR_ALIASES = {
    "int8": "byte",
    "uint8": "ubyte",
    "int16": "short",
    "uint16": "ushort",
    "int32": "int",
    "uint32": "uint",
    "int64": "long",
    "uint64": "ulong",
    "float32": "float",
    "float64": "double",
}

# Attributes flatc knows without an `attribute "..."` declaration.
_BUILTIN_ATTRIBUTES = frozenset(
    {
        "id", "deprecated", "required", "key", "hash", "force_align", "bit_flags", "nested_flatbuffer",
        "flexbuffer", "original_order", "shared", "native_inline", "native_type", "native_default",
        "native_custom_alloc", "cpp_type", "cpp_ptr_type", "cpp_ptr_type_get", "cpp_str_type",
        "cpp_str_flex_ctor", "idempotent", "streaming", "private", "offset64", "vector64",
    }
)


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
        """The fields as declared (deprecated included, hidden union tags excluded)."""
        return [f for f in self.fields if not f.hidden]


@dataclass(eq=False)
class Schema:
    """Everything one .fbs file (plus its includes) declares."""

    namespace: str = ""
    file_identifier: str | None = None
    file_extension: str | None = None
    root_type: str | None = None
    enums: dict[str, EnumDef] = field(default_factory=dict)
    unions: dict[str, UnionDef] = field(default_factory=dict)
    structs: dict[str, StructDef] = field(default_factory=dict)
    tables: dict[str, TableDef] = field(default_factory=dict)
    attributes: set[str] = field(default_factory=set)  # user-declared with `attribute "..."`
    includes: list[str] = field(default_factory=list)

    def kind_of(self, name: str) -> str | None:
        """The kind of declared type `name`: "enum", "union", "struct", "table", or None."""
        for kind, table in (("enum", self.enums), ("union", self.unions), ("struct", self.structs), ("table", self.tables)):
            if name in table:
                return kind
        return None


# ---------------------------------------------------------------------------------------------
# Tokenizer


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\n\f\v]+)
  | (?P<doc>///[^\n]*)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[{}\[\]():;,=.+-])
    """,
    re.VERBOSE | re.DOTALL,
)


class _Tok(NamedTuple):  # a tuple, not a dataclass: a schema has thousands of tokens
    kind: str  # "string" | "number" | "ident" | "punct" | "eof"
    text: str
    line: int
    col: int
    doc: str  # the `///` lines right before this token


def _tokenize(text: str, filename: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos, line, line_start = 0, 1, 0
    doc: list[str] = []
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise SchemaError(f"{filename}:{line}:{pos - line_start + 1}: unexpected character {text[pos]!r}")
        kind = m.lastgroup
        value = m.group()
        if kind == "doc":
            doc.append(value[3:].strip())
        elif kind in ("string", "number", "ident", "punct"):
            toks.append(_Tok(kind, value, line, pos - line_start + 1, "\n".join(doc)))
            doc = []
        newlines = value.count("\n")
        if newlines:
            line += newlines
            line_start = pos + value.rindex("\n") + 1
        pos = m.end()
    toks.append(_Tok("eof", "", line, pos - line_start + 1, ""))
    return toks


# ---------------------------------------------------------------------------------------------
# Parser: builds raw declarations, then `_resolve` binds type names and computes layouts.


# a field's type as written: a name, ("vector", name) or ("array", name, length)
_RawType = str | tuple[str, str] | tuple[str, str, int]


@dataclass
class _RawField:
    name: str
    type: _RawType
    default: _Tok | None
    attributes: dict[str, object]
    doc: str
    tok: _Tok  # the field name
    type_tok: _Tok  # where its type starts (errors about the type point here)


class _Parser:
    def __init__(self, text: str, filename: str, schema: Schema, loader: Callable[[str], str] | None, seen: set[str]):
        self.toks = _tokenize(text, filename)
        self.i = 0
        self.filename = filename
        self.schema = schema
        self.loader = loader
        self.seen = seen
        self.namespace = ""
        self.raw_tables: dict[str, tuple[str, list[_RawField], _Tok]] = {}  # name -> (kind, fields, tok)

    # -- token helpers
    def _peek(self) -> _Tok:
        return self.toks[self.i]

    def _next(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def _error(self, tok: _Tok, message: str) -> SchemaError:
        return SchemaError(f"{self.filename}:{tok.line}:{tok.col}: {message}")

    def _accept(self, text: str) -> bool:
        if self._peek().text == text and self._peek().kind in ("punct", "ident"):
            self.i += 1
            return True
        return False

    def _expect(self, text: str) -> _Tok:
        tok = self._next()
        if tok.text != text or tok.kind not in ("punct", "ident"):
            raise self._error(tok, f"expected {text!r}, got {tok.text or 'end of file'!r}")
        return tok

    def _ident(self) -> _Tok:
        tok = self._next()
        if tok.kind != "ident":
            raise self._error(tok, f"expected a name, got {tok.text or 'end of file'!r}")
        return tok

    def _qualified(self) -> str:
        parts = [self._ident().text]
        while self._accept("."):
            parts.append(self._ident().text)
        return ".".join(parts)

    def _string(self) -> str:
        tok = self._next()
        if tok.kind != "string":
            raise self._error(tok, f"expected a string, got {tok.text or 'end of file'!r}")
        return _unquote(tok.text)

    # -- grammar
    def parse(self) -> None:
        while self._peek().kind != "eof":
            tok = self._peek()
            word = tok.text if tok.kind == "ident" else None
            if word in ("include", "native_include"):
                self._next()
                path = self._string()
                self._expect(";")
                if word == "include":
                    self._include(path, tok)
            elif word == "namespace":
                self._next()
                self.namespace = self._qualified()
                self._expect(";")
                if not self.schema.namespace:
                    self.schema.namespace = self.namespace
            elif word == "attribute":
                self._next()
                t = self._next()
                if t.kind not in ("string", "ident"):
                    raise self._error(t, "expected an attribute name")
                self.schema.attributes.add(_unquote(t.text) if t.kind == "string" else t.text)
                self._expect(";")
            elif word == "file_identifier":
                self._next()
                ident = self._string()
                if len(ident.encode("utf-8")) != 4:
                    raise self._error(tok, f"file_identifier must be exactly 4 bytes, got {ident!r}")
                self.schema.file_identifier = ident
                self._expect(";")
            elif word == "file_extension":
                self._next()
                self.schema.file_extension = self._string()
                self._expect(";")
            elif word == "root_type":
                self._next()
                self.schema.root_type = self._qualified().rsplit(".", 1)[-1]
                self._expect(";")
            elif word in ("table", "struct"):
                self._type_decl()
            elif word == "enum":
                self._enum_decl()
            elif word == "union":
                self._union_decl()
            elif word == "rpc_service":
                raise self._error(tok, "rpc_service declarations are not supported")
            else:
                raise self._error(tok, f"unexpected {tok.text or 'end of file'!r} at top level")

    def _include(self, path: str, tok: _Tok) -> None:
        if self.loader is None:
            raise self._error(tok, f"cannot include {path!r}: no include loader given")
        if path in self.seen:
            return  # flatc also includes each file once
        self.seen.add(path)
        sub = _Parser(self.loader(path), path, self.schema, self.loader, self.seen)
        # An included file's root_type/file_identifier belong to that file, not to ours.
        saved = (self.schema.root_type, self.schema.file_identifier, self.schema.file_extension, self.schema.namespace)
        sub.parse()
        self.schema.root_type, self.schema.file_identifier, self.schema.file_extension, self.schema.namespace = saved
        self.raw_tables.update(sub.raw_tables)
        self.schema.includes.append(path)

    def _metadata(self) -> dict[str, object]:
        attrs: dict[str, object] = {}
        if not self._accept("("):
            return attrs
        if self._accept(")"):
            return attrs
        while True:
            name_tok = self._ident()
            name = name_tok.text
            if name not in _BUILTIN_ATTRIBUTES and name not in self.schema.attributes:
                raise self._error(name_tok, f"unknown attribute {name!r} (declare it with attribute \"{name}\";)")
            value: object = True
            if self._accept(":"):
                v = self._next()
                if v.kind == "string":
                    value = _unquote(v.text)
                elif v.kind == "number":
                    value = _number(v.text)
                elif v.kind == "ident":
                    value = v.text
                else:
                    raise self._error(v, f"bad value for attribute {name!r}")
            attrs[name] = value
            if self._accept(")"):
                return attrs
            self._expect(",")

    def _declare(self, name_tok: _Tok) -> None:
        if self.schema.kind_of(name_tok.text) or name_tok.text in self.raw_tables:
            raise self._error(name_tok, f"{name_tok.text!r} is declared twice")

    def _type(self) -> _RawType:
        if self._accept("["):
            inner = self._type()
            if isinstance(inner, tuple):
                raise self._error(self._peek(), "vectors of vectors are not supported by FlatBuffers")
            if self._accept(":"):
                n = self._next()
                length = _integer(n)
                if length is None or length <= 0:
                    raise self._error(n, "array length must be a positive integer")
                self._expect("]")
                return ("array", inner, length)
            self._expect("]")
            return ("vector", inner)
        return self._qualified()

    def _type_decl(self) -> None:
        kind_tok = self._next()
        name_tok = self._ident()
        self._declare(name_tok)
        attrs = self._metadata()
        self._expect("{")
        fields: list[_RawField] = []
        while not self._accept("}"):
            ftok = self._ident()
            self._expect(":")
            type_tok = self._peek()
            ftype = self._type()
            default = None
            if self._accept("="):
                default = self._default_tokens()
            fattrs = self._metadata()
            self._expect(";")
            if any(f.name == ftok.text for f in fields):
                raise self._error(ftok, f"field {ftok.text!r} is declared twice in {name_tok.text}")
            fields.append(_RawField(ftok.text, ftype, default, fattrs, ftok.doc, ftok, type_tok))
        self.raw_tables[name_tok.text] = (kind_tok.text, fields, name_tok)
        doc = kind_tok.doc
        if kind_tok.text == "table":
            self.schema.tables[name_tok.text] = TableDef(name_tok.text, [], self.namespace, attrs, doc)
        else:
            self.schema.structs[name_tok.text] = StructDef(name_tok.text, [], 0, 1, self.namespace, attrs, doc)

    def _default_tokens(self) -> _Tok:
        tok = self._next()
        if tok.kind == "punct" and tok.text in "+-" and self._peek().kind == "ident":  # -inf, +inf
            nxt = self._next()
            return _Tok("ident", tok.text + nxt.text, tok.line, tok.col, "")
        if tok.kind not in ("number", "ident", "string"):
            raise self._error(tok, f"bad default value {tok.text!r}")
        return tok

    def _enum_decl(self) -> None:
        kind_tok = self._next()
        name_tok = self._ident()
        self._declare(name_tok)
        self._expect(":")
        utok = self._peek()
        uname = self._qualified()
        underlying = _SCALAR_ALIASES.get(uname, uname)
        if underlying not in SCALARS or SCALARS[underlying].kind != "int":
            raise self._error(utok, f"enum {name_tok.text} needs an integer underlying type, got {utok.text!r}")
        attrs = self._metadata()
        bit_flags = "bit_flags" in attrs
        values: dict[str, int] = {}
        self._expect("{")
        next_value = 0
        while not self._accept("}"):
            vtok = self._ident()
            if self._accept("="):
                n = self._next()
                number = _integer(n)
                if number is None:
                    raise self._error(n, "enum values must be integers")
                next_value = number
            self._metadata()
            value = (1 << next_value) if bit_flags else next_value
            lo, hi = _int_range(underlying)
            if not lo <= value <= hi:
                raise self._error(vtok, f"{name_tok.text}.{vtok.text} = {value} does not fit in {underlying}")
            if vtok.text in values:
                raise self._error(vtok, f"{name_tok.text}.{vtok.text} is declared twice")
            values[vtok.text] = value
            next_value += 1
            if not self._accept(","):
                self._expect("}")
                break
        names: dict[int, str] = {}
        for value_name, v in values.items():
            names.setdefault(v, value_name)
        self.schema.enums[name_tok.text] = EnumDef(
            name_tok.text, underlying, values, names, self.namespace, bit_flags, attrs, kind_tok.doc
        )

    def _union_decl(self) -> None:
        kind_tok = self._next()
        name_tok = self._ident()
        self._declare(name_tok)
        attrs = self._metadata()
        self._expect("{")
        members: list[UnionMember] = []
        next_value = 1  # 0 is the implicit NONE
        while not self._accept("}"):
            mtok = self._peek()
            member = self._qualified().rsplit(".", 1)[-1]
            table = member
            if self._accept(":"):
                table = self._qualified().rsplit(".", 1)[-1]
            if self._accept("="):
                n = self._next()
                number = _integer(n)
                if number is None:
                    raise self._error(n, "union values must be integers")
                next_value = number
            self._metadata()
            if member == "NONE" or any(m.name == member for m in members):
                raise self._error(mtok, f"union member {member!r} is declared twice in {name_tok.text}")
            if not 0 < next_value <= 255:
                raise self._error(mtok, f"union {name_tok.text} tag {next_value} does not fit in a ubyte")
            members.append(UnionMember(member, table, next_value))
            next_value += 1
            if not self._accept(","):
                self._expect("}")
                break
        self.schema.unions[name_tok.text] = UnionDef(
            name_tok.text,
            members,
            {m.value: m for m in members},
            {m.name: m for m in members},
            self.namespace,
            attrs,
            kind_tok.doc,
        )


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(m.group(1), m.group(1)), body)


def _number(text: str) -> int | float:
    t = text.lower()
    sign = -1 if t.startswith("-") else 1
    body = t.lstrip("+-")
    if body.startswith("0x"):
        return sign * int(body, 16)
    if any(c in body for c in ".e"):
        return float(text)
    return int(text)


def _integer(tok: _Tok) -> int | None:
    """The integer a number token spells; None for another token or a float."""
    if tok.kind != "number":
        return None
    value = _number(tok.text)
    return value if isinstance(value, int) else None


def _int_range(scalar: str) -> tuple[int, int]:
    bits = SCALARS[scalar].size * 8
    if scalar in ("ubyte", "ushort", "uint", "ulong"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


# ---------------------------------------------------------------------------------------------
# Resolution: bind names, assign slots, compute struct layouts, convert defaults.


def _resolve(schema: Schema, raw: dict[str, tuple[str, list[_RawField], _Tok]], filename: str) -> None:
    def err(tok: _Tok, message: str) -> SchemaError:
        return SchemaError(f"{filename}:{tok.line}:{tok.col}: {message}")

    def resolve_type(t: _RawType, tok: _Tok, in_struct: bool) -> TypeRef:
        if isinstance(t, tuple):
            element = resolve_type(t[1], tok, in_struct)
            if len(t) == 3:  # ("array", element, length)
                if not in_struct:
                    raise err(tok, "fixed-size arrays are only allowed in structs")
                if element.kind not in ("scalar", "enum", "struct"):
                    raise err(tok, f"arrays of {element} are not allowed")
                return TypeRef("array", element=element, length=t[2])
            if in_struct:
                raise err(tok, "structs cannot contain vectors")
            return TypeRef("vector", element=element)
        name = _SCALAR_ALIASES.get(t, t)
        if name in SCALARS:
            return TypeRef("scalar", name, name)
        short = name.rsplit(".", 1)[-1]
        if name == "string":
            if in_struct:
                raise err(tok, "structs cannot contain strings")
            return TypeRef("string")
        if short in schema.enums:
            return TypeRef("enum", short, schema.enums[short].underlying)
        if short in schema.structs:
            return TypeRef("struct", short)
        if short in schema.tables:
            if in_struct:
                raise err(tok, "structs cannot contain tables")
            return TypeRef("table", short)
        if short in schema.unions:
            if in_struct:
                raise err(tok, "structs cannot contain unions")
            return TypeRef("union", short)
        raise err(tok, f"unknown type {name!r}")

    for union in schema.unions.values():
        for m in union.members:
            if m.table not in schema.tables:
                raise SchemaError(f"{filename}: union {union.name} member {m.name!r} is not a table ({m.table!r})")

    # Tables: slots and defaults.
    for name, (kind, fields, _tok) in raw.items():
        if kind != "table":
            continue
        table = schema.tables[name]
        ids = [f for f in fields if "id" in f.attributes]
        if ids and len(ids) != len(fields):
            raise err(fields[0].tok, f"table {name}: either all fields or none must have an (id: n)")
        out: list[FieldDef] = []
        next_slot = 0
        for f in fields:
            ftype = resolve_type(f.type, f.type_tok, in_struct=False)
            is_union = ftype.kind == "union" or (ftype.kind == "vector" and ftype.element_type.kind == "union")
            if ids:
                slot = f.attributes["id"]
                if not isinstance(slot, int) or slot < (1 if is_union else 0):
                    raise err(f.tok, f"bad id {slot!r} for {name}.{f.name}")
            else:
                slot = next_slot + (1 if is_union else 0)
            next_slot = slot + 1
            deprecated = bool(f.attributes.get("deprecated", False))
            required = bool(f.attributes.get("required", False))
            if is_union:
                tag_type = (
                    TypeRef("union_type", ftype.name, "ubyte")
                    if ftype.kind == "union"
                    else TypeRef("vector", element=TypeRef("union_type", ftype.element_type.name, "ubyte"))
                )
                out.append(
                    FieldDef(
                        f.name + "_type",
                        tag_type,
                        slot - 1,
                        0 if ftype.kind == "union" else None,
                        deprecated,
                        required,
                        hidden=True,
                        union_field=f.name,
                    )
                )
            default = _default_value(schema, ftype, f, err)
            out.append(
                FieldDef(
                    f.name,
                    ftype,
                    slot,
                    default,
                    deprecated,
                    required,
                    type_field=f.name + "_type" if is_union else None,
                    attributes=f.attributes,
                    doc=f.doc,
                )
            )
        out.sort(key=lambda fd: fd.slot)
        by_name: dict[str, FieldDef] = {}
        slots: set[int] = set()
        for fd in out:
            if fd.slot in slots:
                raise err(raw[name][2], f"table {name}: two fields use vtable slot {fd.slot}")
            if fd.name in by_name:
                raise err(raw[name][2], f"table {name}: field name {fd.name!r} clashes with a union tag field")
            slots.add(fd.slot)
            by_name[fd.name] = fd
        table.fields = out
        table.by_name = by_name

    # Structs: layout (recursively, since a struct may use one declared later).
    state: dict[str, str] = {}

    def layout(sname: str) -> StructDef:
        sdef = schema.structs[sname]
        if state.get(sname) == "done":
            return sdef
        if state.get(sname) == "busy":
            raise SchemaError(f"{filename}: struct {sname} contains itself")
        state[sname] = "busy"
        offset, align = 0, 1
        fields: list[StructField] = []
        for f in raw[sname][1]:
            ftype = resolve_type(f.type, f.type_tok, in_struct=True)
            if f.default is not None:
                raise err(f.tok, "struct fields cannot have defaults")
            size, falign = _size_align(schema, ftype, layout)
            offset = (offset + falign - 1) // falign * falign
            fields.append(StructField(f.name, ftype, offset, size, f.attributes, f.doc))
            offset += size
            align = max(align, falign)
        if not fields:
            raise err(raw[sname][2], f"struct {sname} has no fields")
        forced = sdef.attributes.get("force_align")
        if forced is not None:
            if not isinstance(forced, int) or forced < align or forced & (forced - 1):
                raise err(raw[sname][2], f"struct {sname}: force_align must be a power of two >= {align}")
            align = forced
        sdef.fields = fields
        sdef.alignment = align
        sdef.size = (offset + align - 1) // align * align
        state[sname] = "done"
        return sdef

    for sname in schema.structs:
        layout(sname)

    if schema.root_type is not None and schema.root_type not in schema.tables:
        raise SchemaError(f"{filename}: root_type {schema.root_type!r} is not a table")


def _size_align(schema: Schema, t: TypeRef, layout: Callable[[str], StructDef]) -> tuple[int, int]:
    if t.kind in ("scalar", "enum"):
        size = SCALARS[t.scalar].size
        return size, size
    if t.kind == "struct":
        sdef = layout(t.name)
        return sdef.size, sdef.alignment
    if t.kind == "array":
        size, align = _size_align(schema, t.element_type, layout)
        return size * t.length, align
    raise SchemaError(f"{t} cannot be stored in a struct")


def _default_value(schema: Schema, t: TypeRef, f: _RawField,
                   err: Callable[[_Tok, str], SchemaError]) -> bool | int | float | None:
    """The value a reader returns for an absent field (None for non-scalars)."""
    tok = f.default
    if t.kind not in ("scalar", "enum"):
        if tok is not None and not (tok.kind == "ident" and tok.text == "null"):
            raise err(tok, f"{f.name}: only scalar and enum fields can have a default")
        return None
    kind = SCALARS[t.scalar].kind
    if tok is None:
        return False if kind == "bool" else (0.0 if kind == "float" else 0)
    text = tok.text
    if tok.kind == "ident":
        if text == "null":
            return None  # an optional scalar: absent reads as None
        if kind == "bool" and text in ("true", "false"):
            return text == "true"
        if kind == "float" and text.lstrip("+-") in ("nan", "inf", "infinity"):
            return float(text)
        if t.kind == "enum" and text in schema.enums[t.name].values:
            return schema.enums[t.name].values[text]
        raise err(tok, f"{f.name}: bad default {text!r} for type {t}")
    if tok.kind == "string":  # flatc accepts quoted scalars: "1.5"
        text = _unquote(text)
    try:
        value = _number(text)
    except ValueError:
        raise err(tok, f"{f.name}: bad default {text!r} for type {t}") from None
    if kind == "bool":
        if value not in (0, 1):
            raise err(tok, f"{f.name}: a bool default must be 0 or 1")
        return bool(value)
    if kind == "float":
        return float(value)
    if not isinstance(value, int):
        raise err(tok, f"{f.name}: integer field with a non-integer default {text!r}")
    lo, hi = _int_range(t.scalar)
    if not lo <= value <= hi:
        raise err(tok, f"{f.name}: default {value} does not fit in {t.scalar}")
    return value


def parse_schema(text: str, *, filename: str = "<fbs>", loader: Callable[[str], str] | None = None) -> Schema:
    """Parse .fbs text into a Schema. `loader(path)` returns the text of an `include`d file."""
    schema = Schema()
    parser = _Parser(text, filename, schema, loader, {filename})
    parser.parse()
    _resolve(schema, parser.raw_tables, filename)
    return schema

