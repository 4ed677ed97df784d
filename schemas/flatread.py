"""A schema-driven, bounds-checked flatbuffer reader.

The Python `flatbuffers` package has no verifier: on a corrupt buffer its generated accessors raise
IndexError/struct.error or return garbage. This reader checks every read against the buffer and the
schema, and the only exception corrupt input can cause is `InvalidInputError`, whose `where` names the
byte offset and the path to the value, e.g.
    offset 0x1a4 (SerializedGraph.layers[3].layer<Convolution2dLayer>.descriptor.strideX)

    fb = FlatBuffer(buf, load_schema("armnn"))        # buf: bytes | bytearray | memoryview | mmap
    root = fb.root()                                  # a Table of the schema's root_type
    root["layers"][3]["layer"]["descriptor"]["strideX"]

What `Table.get(name)` returns (the schema default when the field is absent):
    scalar -> int | float | bool; enum -> int (`enum_name(name)` -> its name);
    string -> str | None;  table -> Table | None;  struct -> dict | None;
    union -> Table | None (the member the `<name>_type` tag names; `union_type(name)` -> member name);
    vector of numbers or enums -> numpy array viewing the buffer (zero copy, little-endian, possibly
        unaligned; read-only when the buffer is). Exception: a vector of bool is returned as a fresh
        bool array (`!= 0`), because numpy's bool is only defined for bytes 0 and 1;
    vector of tables -> TableVector (lazy, checked per element); vector of strings -> list[str];
    vector of structs -> list[dict] (`raw_vector(name)` gives a zero-copy numpy structured view);
    vector of unions -> list[Table | None].

Checks: the root offset, each table's vtable (inside the buffer, size even and >= 4, the table's
declared size inside the buffer), each field inside its table's declared size (or only inside the
buffer, with `strict_table_size=False`: see FlatBuffer), every offset non-zero and
pointing inside the buffer, each vector's/string's length times element size inside the buffer, strings
NUL-terminated and UTF-8, union tags known, nesting depth bounded (default 64). Alignment is NOT required:
a flatbuffer may sit at any offset inside a larger file (MPS payloads inside a .pte). Offsets are relative to `base` only for the root; every other
offset is relative to where it is stored, so positions reported are absolute positions in `buf`.
"""
from __future__ import annotations

import struct
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Union

import numpy as np

from nn2tosa.diagnostics import InvalidInputError

from .model import SCALARS, FieldDef, Schema, StructDef, TableDef, TypeRef

__all__ = ["FlatBuffer", "Table", "TableVector", "Buffer", "DEFAULT_MAX_DEPTH"]

Buffer = Union[bytes, bytearray, memoryview, Any]  # Any: mmap.mmap and other buffer-protocol objects

DEFAULT_MAX_DEPTH = 64

_U8 = struct.Struct("<B").unpack_from
_U16 = struct.Struct("<H").unpack_from
_U16x2 = struct.Struct("<HH").unpack_from
_I32 = struct.Struct("<i").unpack_from
_U32 = struct.Struct("<I").unpack_from
_UNPACK = {name: struct.Struct("<" + info.fmt).unpack_from for name, info in SCALARS.items()}


class _IndexError(InvalidInputError, IndexError):
    """An index past the end of a vector: invalid input to the CLI, an IndexError to Python."""


# ---------------------------------------------------------------------------------------------
# Per-field read plans, computed once per table definition (kept beside the shared schema model).

# Field kinds as small ints: dispatching on them is cheaper than on TypeRef strings.
_SCALAR, _STRING, _TABLE, _STRUCT, _UNION, _VEC_NUM, _VEC_BOOL, _VEC_TABLE, _VEC_STRING, _VEC_STRUCT, _VEC_UNION = range(11)


class _Plan:
    """How to read one field: its vtable offset, kind, inline size and what it refers to."""

    __slots__ = ("name", "fdef", "voffset", "kind", "size", "unpack", "default", "dtype", "ref", "esize", "tag")

    def __init__(self, schema: Schema, tdef: TableDef, f: FieldDef):
        self.name = f.name
        self.fdef = f
        self.voffset = f.voffset
        self.default = f.default
        self.unpack: Callable[[Any, int], tuple[Any, ...]] = _not_a_scalar  # a scalar's struct unpack_from
        self.dtype = None
        self.ref: Any = None  # TableDef / StructDef / UnionDef the field refers to
        self.esize = 0
        self.tag: _Plan | None = None  # for unions: the plan of the hidden tag field
        t = f.type
        self.size = 4  # offsets (string, table, vector, union value) are 4-byte uoffsets
        if t.kind in ("scalar", "enum", "union_type"):
            self.kind = _SCALAR
            self.size = SCALARS[t.scalar].size
            self.unpack = _UNPACK[t.scalar]
        elif t.kind == "string":
            self.kind = _STRING
        elif t.kind == "table":
            self.kind, self.ref = _TABLE, schema.tables[t.name]
        elif t.kind == "struct":
            self.kind, self.ref = _STRUCT, schema.structs[t.name]
            self.size = self.ref.size
        elif t.kind == "union":
            self.kind, self.ref = _UNION, schema.unions[t.name]
        elif t.kind == "vector":
            e = t.element_type
            if e.kind in ("scalar", "enum", "union_type"):
                self.kind = _VEC_BOOL if e.scalar == "bool" else _VEC_NUM
                self.dtype = np.dtype(SCALARS[e.scalar].dtype)
                self.esize = SCALARS[e.scalar].size
            elif e.kind == "string":
                self.kind, self.esize = _VEC_STRING, 4
            elif e.kind == "table":
                self.kind, self.ref, self.esize = _VEC_TABLE, schema.tables[e.name], 4
            elif e.kind == "struct":
                self.kind, self.ref = _VEC_STRUCT, schema.structs[e.name]
                self.esize = self.ref.size
                self.dtype = _struct_dtype(schema, self.ref)
            elif e.kind == "union":
                self.kind, self.ref, self.esize = _VEC_UNION, schema.unions[e.name], 4
            else:  # pragma: no cover - the parser rejects anything else
                raise TypeError(f"unsupported vector element {e}")
        else:  # pragma: no cover
            raise TypeError(f"unsupported field type {t}")

    def tag_plan(self) -> _Plan:
        """The plan of a union field's hidden tag field."""
        if self.tag is None:
            raise TypeError(f"{self.name} is not a union field")
        return self.tag


def _not_a_scalar(buf: Any, pos: int) -> tuple[Any, ...]:
    raise TypeError("not a scalar field")  # (only a scalar's plan is unpacked: its kind says which it is)


_PLANS: "weakref.WeakKeyDictionary[TableDef, dict[str, _Plan]]" = weakref.WeakKeyDictionary()


def _plans(schema: Schema, tdef: TableDef) -> dict[str, _Plan]:
    plans = _PLANS.get(tdef)
    if plans is None:
        plans = {f.name: _Plan(schema, tdef, f) for f in tdef.fields}
        for p in plans.values():
            if p.fdef.type_field is not None:
                p.tag = plans[p.fdef.type_field]
        _PLANS[tdef] = plans
    return plans


def _struct_dtype(schema: Schema, sdef: StructDef) -> np.dtype:
    """A numpy structured dtype with the struct's exact field offsets and padded size."""
    names, formats, offsets = [], [], []
    for f in sdef.fields:
        names.append(f.name)
        offsets.append(f.offset)
        formats.append(_member_dtype(schema, f.type))
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": sdef.size})


def _member_dtype(schema: Schema, t: TypeRef) -> Any:
    if t.kind in ("scalar", "enum"):
        return np.dtype(SCALARS[t.scalar].dtype)
    if t.kind == "struct":
        return _struct_dtype(schema, schema.structs[t.name])
    return (_member_dtype(schema, t.element_type), (t.length,))


# ---------------------------------------------------------------------------------------------


class FlatBuffer:
    """A flatbuffer inside `buf`, starting at `base`, read through `schema`.

    `end` (default: the end of `buf`) bounds every read; pass it when the flatbuffer is followed by
    other data whose extent you know. `max_depth` bounds table nesting (cyclic or hostile offsets).

    `strict_table_size` (default True) requires every field to lie inside its table's declared size
    (the vtable's second word). Pass False for buffers written by the Python `flatbuffers` Builder
    (e.g. a Python TOSA serializer): its vtable de-duplication ignores the table size, so a table can
    share the vtable of a smaller table of another type and understate its own size. Fields must
    then still lie inside the buffer, which is what flatbuffers' own C++ verifier checks.
    """

    __slots__ = ("buf", "schema", "base", "end", "max_depth", "strict_table_size")

    def __init__(
        self,
        buf: Buffer,
        schema: Schema,
        base: int = 0,
        *,
        end: int | None = None,
        max_depth: int = DEFAULT_MAX_DEPTH,
        strict_table_size: bool = True,
    ):
        if isinstance(buf, memoryview) and (buf.format != "B" or buf.ndim != 1):
            buf = buf.cast("B")  # byte-addressed, so that offsets are byte offsets
        size = len(buf)
        self.buf = buf
        self.schema = schema
        self.base = base
        self.end = size if end is None else end
        self.max_depth = max_depth
        self.strict_table_size = strict_table_size
        if not 0 <= base <= self.end <= size:
            raise InvalidInputError(
                f"the flatbuffer should start at byte {base} and end by byte {self.end}, but the data has {size} bytes",
                where=f"offset 0x{base:x}",
            )

    @property
    def identifier(self) -> str | None:
        """The 4-byte file identifier after the root offset, if it is printable ASCII, else None."""
        if self.end - self.base < 8:
            return None
        raw = bytes(self.buf[self.base + 4 : self.base + 8])
        return raw.decode("ascii") if all(0x20 <= b < 0x7F for b in raw) else None

    def root(self, type_name: str | None = None) -> "Table":
        """The root table, read as the schema's root_type or as `type_name`."""
        name = type_name or self.schema.root_type
        if name is None:
            raise ValueError("the schema declares no root_type: pass a table name")
        tdef = self.schema.tables.get(name)
        if tdef is None:
            raise ValueError(f"no table {name!r} in the schema")
        if self.end - self.base < 4:
            raise InvalidInputError(
                f"{self.end - self.base} bytes is too short for a flatbuffer (no root offset)",
                where=f"offset 0x{self.base:x} ({name})",
            )
        off = _U32(self.buf, self.base)[0]
        if off < 4 or self.base + off + 4 > self.end:
            raise InvalidInputError(
                f"root table offset {off} points outside the buffer ({self.end - self.base} bytes)",
                where=f"offset 0x{self.base:x} ({name})",
            )
        return Table(self, tdef, self.base + off, None, name, 0)

    def __repr__(self) -> str:
        return f"<FlatBuffer {self.schema.root_type} base=0x{self.base:x} end=0x{self.end:x}>"


class Table:
    """One table in a FlatBuffer. Construction checks its vtable; field reads check the rest."""

    __slots__ = ("_fb", "_def", "_plans", "offset", "_vt", "_vtsize", "_tsize", "_parent", "_step", "_depth", "_path")

    def __init__(self, fb: FlatBuffer, tdef: TableDef, pos: int, parent: "Table | None", step: str, depth: int):
        self._fb = fb
        self._def = tdef
        self.offset = pos
        self._parent = parent
        self._step = step  # appended to the parent's path: ".layers[3]", ".layer<ActivationLayer>"
        self._depth = depth
        self._path: str | None = None
        if depth > fb.max_depth:
            self._fail(f"tables nest deeper than {fb.max_depth} levels (cyclic or hostile offsets?)", pos)
        buf, base, end = fb.buf, fb.base, fb.end
        if pos < base or pos + 4 > end:
            self._fail(f"table offset 0x{pos:x} is outside the buffer", pos)
        vt = pos - _I32(buf, pos)[0]
        if vt < base or vt + 4 > end:
            self._fail(f"vtable offset 0x{vt:x} is outside the buffer", pos)
        vtsize, tsize = _U16x2(buf, vt)
        if vtsize < 4 or vtsize & 1 or vt + vtsize > end:
            self._fail(f"vtable at 0x{vt:x} has a bad size {vtsize}", vt)
        if tsize < 4 or pos + tsize > end:
            if tsize < 4 or fb.strict_table_size:
                self._fail(f"table size {tsize} runs past the end of the buffer", vt + 2)
            tsize = end - pos  # a shared vtable may overstate it too; fields are checked against the buffer
        self._vt = vt
        self._vtsize = vtsize
        self._tsize = tsize
        self._plans = _plans(fb.schema, tdef)

    # -- identity and errors
    @property
    def type_name(self) -> str:
        return self._def.name

    @property
    def definition(self) -> TableDef:
        return self._def

    @property
    def flatbuffer(self) -> FlatBuffer:
        return self._fb

    @property
    def path(self) -> str:
        """Where this table is, from the root: "SerializedGraph.layers[3].layer<ActivationLayer>"."""
        if self._path is None:
            self._path = self._step if self._parent is None else self._parent.path + self._step
        return self._path

    def _fail(self, message: str, offset: int, field: str | None = None, cls: type = InvalidInputError) -> None:
        path = self.path + (f".{field}" if field else "")
        raise cls(message, where=f"offset 0x{offset:x} ({path})")

    def __repr__(self) -> str:
        return f"<Table {self._def.name} at 0x{self.offset:x}>"

    # -- field access
    def _plan(self, name: str) -> _Plan:
        plan = self._plans.get(name)
        if plan is None:
            raise KeyError(f"table {self._def.name} has no field {name!r}")
        return plan

    def _pos(self, p: _Plan) -> int:
        """The absolute position of field `p`, or 0 when the vtable says it is absent."""
        vo = p.voffset
        if vo >= self._vtsize:
            return 0
        fo = _U16(self._fb.buf, self._vt + vo)[0]
        if fo == 0:
            return 0
        if fo < 4 or fo + p.size > self._tsize:
            if fo < 4 or self.offset + fo + p.size > self._fb.end:
                self._fail(f"field at table offset {fo} (+{p.size} bytes) lies outside the table and the buffer", self._vt + vo, p.name)
            if self._fb.strict_table_size:
                self._fail(
                    f"field at table offset {fo} (+{p.size} bytes) lies outside the table's {self._tsize} bytes "
                    "(if the Python flatbuffers Builder wrote this buffer, read it with strict_table_size=False)",
                    self._vt + vo,
                    p.name,
                )
        return self.offset + fo

    def _deref(self, pos: int, name: str) -> int:
        """Follow the uoffset stored at `pos`; the target must leave room for a 4-byte header."""
        off = _U32(self._fb.buf, pos)[0]
        target = pos + off
        if target + 4 > self._fb.end:
            self._fail(f"offset {off} points outside the buffer (to 0x{target:x}, end 0x{self._fb.end:x})", pos, name)
        if off == 0:  # offsets are unsigned and never 0, so the data can only lie further on
            self._fail("offset 0 points at itself", pos, name)
        return target

    def _vector(self, pos: int, esize: int, name: str) -> tuple[int, int]:
        """(position of the first element, element count) of the vector referenced at `pos`."""
        target = self._deref(pos, name)
        n = _U32(self._fb.buf, target)[0]
        if n * esize > self._fb.end - target - 4:
            self._fail(f"vector of {n} elements of {esize} bytes runs past the end of the buffer", target, name)
        return target + 4, n

    def _string_at(self, target: int, name: str) -> str:
        buf = self._fb.buf
        n = _U32(buf, target)[0]
        start = target + 4
        if n >= self._fb.end - start:
            self._fail(f"string of {n} bytes runs past the end of the buffer", target, name)
        if buf[start + n] != 0:
            self._fail("string is not NUL-terminated", start + n, name)
        try:
            return str(buf[start : start + n], "utf-8")
        except UnicodeDecodeError as e:
            self._fail(f"string is not valid UTF-8 ({e.reason} at byte {e.start})", start + e.start, name)
            raise  # unreachable: _fail raises

    def _child(self, tdef: TableDef, pos: int, step: str) -> "Table":
        return Table(self._fb, tdef, pos, self, step, self._depth + 1)

    def has(self, name: str) -> bool:
        """True when the field is present in the vtable (written), whatever its value."""
        return self._pos(self._plan(name)) != 0

    def get(self, name: str) -> Any:
        """The field's value, or the schema default when absent (see the module doc for types)."""
        p = self._plan(name)
        pos = self._pos(p)
        kind = p.kind
        if kind == _SCALAR:
            return p.default if pos == 0 else p.unpack(self._fb.buf, pos)[0]
        if pos == 0:
            return p.default  # None for every non-scalar
        if kind == _TABLE:
            return self._child(p.ref, self._deref(pos, name), "." + name)
        if kind == _VEC_NUM:
            start, n = self._vector(pos, p.esize, name)
            return np.frombuffer(self._fb.buf, dtype=p.dtype, count=n, offset=start)
        if kind == _STRING:
            return self._string_at(self._deref(pos, name), name)
        if kind == _UNION:
            member = self._union_member(p)
            if member is None:
                return None
            return self._child(self._fb.schema.tables[member.table], self._deref(pos, name), f".{name}<{member.name}>")
        if kind == _VEC_TABLE:
            start, n = self._vector(pos, 4, name)
            return TableVector(self, p.ref, name, start, n)
        if kind == _STRUCT:
            return _read_struct(self._fb, p.ref, pos)
        if kind == _VEC_STRING:
            start, n = self._vector(pos, 4, name)
            return [self._string_at(self._deref(start + 4 * i, f"{name}[{i}]"), f"{name}[{i}]") for i in range(n)]
        if kind == _VEC_BOOL:
            start, n = self._vector(pos, 1, name)
            return np.frombuffer(self._fb.buf, dtype=np.uint8, count=n, offset=start) != 0
        if kind == _VEC_STRUCT:
            start, n = self._vector(pos, p.esize, name)
            return [_read_struct(self._fb, p.ref, start + i * p.esize) for i in range(n)]
        if kind == _VEC_UNION:
            return [t for _, t in self._union_vector(p, pos)]
        raise AssertionError(kind)  # pragma: no cover

    __getitem__ = get

    def __contains__(self, name: str) -> bool:
        return name in self._plans and self.has(name)

    def fields(self) -> list[str]:
        """Field names in declaration order (deprecated included, hidden union `_type` tags excluded)."""
        return [f.name for f in self._def.fields if not f.hidden]

    def _union_member(self, p: _Plan):
        """The union member the tag of union field `p` names (None for NONE); unknown tags fail."""
        tag_plan = p.tag_plan()
        tag_pos = self._pos(tag_plan)
        tag = 0 if tag_pos == 0 else _U8(self._fb.buf, tag_pos)[0]
        if tag == 0:
            return None
        member = p.ref.by_value.get(tag)
        if member is None:
            self._fail(f"unknown {p.ref.name} union type {tag}", tag_pos, tag_plan.name)
        return member

    def union_type(self, name: str) -> str | None:
        """The member name the tag of union field `name` gives, or None for NONE."""
        p = self._plan(name)
        if p.kind != _UNION:
            raise TypeError(f"{self._def.name}.{name} is not a union field")
        member = self._union_member(p)
        return None if member is None else member.name

    def get_as(self, name: str, table_type: str) -> "Table | None":
        """Read union or table field `name` as table `table_type` (or union member name), whatever
        the tag says. For files whose writer got the tag wrong: Arm NN 20.08 writes some
        ConstTensor.data unions with tag NONE although the payload is there."""
        p = self._plan(name)
        if p.kind not in (_UNION, _TABLE):
            raise TypeError(f"{self._def.name}.{name} is not a table or union field")
        schema = self._fb.schema
        if p.kind == _UNION and table_type in p.ref.by_name:
            label, tdef = table_type, schema.tables[p.ref.by_name[table_type].table]
        elif table_type in schema.tables:
            label, tdef = table_type, schema.tables[table_type]
        else:
            raise KeyError(f"no table or union member {table_type!r}")
        pos = self._pos(p)
        if pos == 0:
            return None
        return self._child(tdef, self._deref(pos, name), f".{name}<{label}>")

    def enum_name(self, name: str) -> str:
        """The enum value name of enum field `name` (or the member name of a union `_type` tag).
        A value the enum does not declare raises InvalidInputError."""
        p = self._plan(name)
        t = p.fdef.type
        if t.kind == "enum":
            names = self._fb.schema.enums[t.name].names
        elif t.kind == "union_type":
            names = {m.value: m.name for m in self._fb.schema.unions[t.name].members}
            names[0] = "NONE"
        else:
            raise TypeError(f"{self._def.name}.{name} is not an enum field")
        value = self.get(name)
        label = names.get(value)
        if label is None:
            pos = self._pos(p)
            self._fail(f"{value} is not a value of enum {t.name}", pos or self.offset, name)
        return label  # type: ignore[return-value]

    def raw_vector(self, name: str) -> np.ndarray | None:
        """A zero-copy numpy view of a vector of scalars, enums (raw bytes, also for bool) or structs
        (a structured dtype with the schema's field offsets); None when absent."""
        p = self._plan(name)
        if p.kind not in (_VEC_NUM, _VEC_BOOL, _VEC_STRUCT):
            raise TypeError(f"{self._def.name}.{name} is not a vector of scalars or structs")
        pos = self._pos(p)
        if pos == 0:
            return None
        start, n = self._vector(pos, p.esize, name)
        dtype = np.dtype(np.uint8) if p.kind == _VEC_BOOL else p.dtype
        return np.frombuffer(self._fb.buf, dtype=dtype, count=n, offset=start)

    def vector_span(self, name: str) -> tuple[int, int] | None:
        """(absolute position of the first element, element count) of vector field `name`, checked;
        None when absent. For callers that need the raw bytes (e.g. to hash or copy them in bulk)."""
        p = self._plan(name)
        if p.kind < _VEC_NUM:
            raise TypeError(f"{self._def.name}.{name} is not a vector field")
        pos = self._pos(p)
        return None if pos == 0 else self._vector(pos, p.esize, name)

    def _union_vector(self, p: _Plan, pos: int) -> list[tuple[str | None, "Table | None"]]:
        """(member name, table) per element of a vector of unions."""
        name, tag_plan = p.name, p.tag_plan()
        tpos = self._pos(tag_plan)
        start, n = self._vector(pos, 4, name)
        if tpos == 0:
            self._fail("vector of unions has no type vector", pos, name)
        tstart, tn = self._vector(tpos, 1, tag_plan.name)
        if tn != n:
            self._fail(f"union vector has {n} values but {tn} types", pos, name)
        out: list[tuple[str | None, Table | None]] = []
        for i in range(n):
            tag = _U8(self._fb.buf, tstart + i)[0]
            if tag == 0:
                out.append((None, None))
                continue
            member = p.ref.by_value.get(tag)
            if member is None:
                self._fail(f"unknown {p.ref.name} union type {tag}", tstart + i, f"{tag_plan.name}[{i}]")
            target = self._deref(start + 4 * i, f"{name}[{i}]")
            out.append((member.name, self._child(self._fb.schema.tables[member.table], target, f".{name}[{i}]<{member.name}>")))
        return out

    # -- whole-table conversion
    def to_dict(self, defaults: bool = True, max_depth: int | None = None) -> dict[str, Any]:
        """{field: value} with nested tables as dicts, unions as {"type": member, "value": {...}},
        vectors of numbers as numpy arrays (zero copy). Absent fields are included with their
        defaults unless `defaults` is False. Tables deeper than `max_depth` levels below this one
        are left as Table objects (None: no limit beyond the buffer's own nesting bound).

        Work is bounded like `verify_buffer`'s: converting more tables than one per 4 bytes of
        buffer (only possible when offsets share subtrees) raises InvalidInputError."""
        budget = [(self._fb.end - self._fb.base) // 4 + 16]
        return self._to_dict(defaults, max_depth, budget)

    def _to_dict(self, defaults: bool, max_depth: int | None, budget: list[int]) -> dict[str, Any]:
        budget[0] -= 1
        if budget[0] < 0:
            self._fail("too many tables to convert for the buffer size (offsets share subtrees many times over)", self.offset)
        out: dict[str, Any] = {}
        for f in self._def.fields:
            if f.hidden:
                continue
            p = self._plans[f.name]
            if not defaults and self._pos(p) == 0:
                continue
            out[f.name] = self._convert(p, self.get(f.name), defaults, max_depth, budget)
        return out

    def _convert(self, p: _Plan, value: Any, defaults: bool, max_depth: int | None, budget: list[int]) -> Any:
        if value is None:
            return None
        deeper = None if max_depth is None else max_depth - 1

        def table(t: Table) -> Any:
            return t if max_depth is not None and max_depth <= 0 else t._to_dict(defaults, deeper, budget)

        if p.kind == _TABLE:
            return table(value)
        if p.kind == _UNION:
            return {"type": self.union_type(p.name), "value": table(value)}
        if p.kind == _VEC_TABLE:
            return [table(t) for t in value]
        if p.kind == _VEC_UNION:
            pairs = self._union_vector(p, self._pos(p))
            return [None if t is None else {"type": m, "value": table(t)} for m, t in pairs]
        return value


class TableVector(Sequence):
    """A vector of tables, read lazily: indexing checks the element's offset and vtable."""

    __slots__ = ("_owner", "_def", "_name", "_start", "_n")

    def __init__(self, owner: Table, tdef: TableDef, name: str, start: int, n: int):
        self._owner = owner
        self._def = tdef
        self._name = name
        self._start = start
        self._n = n

    def __len__(self) -> int:
        return self._n

    def _at(self, i: int) -> Table:
        owner = self._owner
        step = f"{self._name}[{i}]"
        return owner._child(self._def, owner._deref(self._start + 4 * i, step), "." + step)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(self._n))]
        i = index + self._n if index < 0 else index
        if not 0 <= i < self._n:
            self._owner._fail(f"index {index} is out of range for a vector of {self._n}", self._start - 4, self._name, _IndexError)
        return self._at(i)

    def __iter__(self) -> Iterator[Table]:
        for i in range(self._n):
            yield self._at(i)

    def __repr__(self) -> str:
        return f"<TableVector of {self._n} {self._def.name}>"


def _read_struct(fb: FlatBuffer, sdef: StructDef, pos: int) -> dict[str, Any]:
    """A struct's fields as a dict. The caller has checked that its `sdef.size` bytes are inside."""
    out: dict[str, Any] = {}
    for f in sdef.fields:
        out[f.name] = _read_struct_member(fb, f.type, pos + f.offset)
    return out


def _read_struct_member(fb: FlatBuffer, t: TypeRef, pos: int) -> Any:
    if t.kind in ("scalar", "enum"):
        return _UNPACK[t.scalar](fb.buf, pos)[0]
    if t.kind == "struct":
        return _read_struct(fb, fb.schema.structs[t.name], pos)
    # fixed-size array
    e = t.element_type
    esize = SCALARS[e.scalar].size if e.kind in ("scalar", "enum") else fb.schema.structs[e.name].size
    return [_read_struct_member(fb, e, pos + i * esize) for i in range(t.length)]
