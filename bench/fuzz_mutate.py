"""The mutation half of bench/fuzz_long.py: where a seed file is worth damaging, and how.

`file_sites(data, fmt)` walks a seed with its format's flatbuffer schema and returns its sites: every
offset, vtable entry, vector length, union tag, dimension, scalar, float and string the schema knows of.
`mutate(seed, sites, rng, donors)` applies one to three of the mutations in `MUTATORS` (weighted by
`WEIGHTS`), each of which records in words what it changed, so a reproducer says how it was made.
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any
from dataclasses import dataclass, field

# ====================================================================================== sites
@dataclass(frozen=True)
class Site:
    """A place in a seed file worth mutating: `kind` says what the bytes at `pos` (`size` long) are."""

    kind: str  # uoffset | soffset | vtable_entry | vtable_size | vector_length | union_tag | dim | scalar | element
    pos: int
    size: int
    signed: bool = False
    name: str = ""


# Vector fields holding tensor dimensions, per schema.
DIM_FIELDS = frozenset({"dimensions", "dims", "shape", "new_shape", "multiples", "size", "sizes", "output_size",
                        "viewSizes", "targetShape", "blockShape"})
MAX_SITES_TABLES = 4000


def flatbuffer_sites(buf: bytes, schema_name: str | object, base: int = 0, end: int | None = None,
                     strict: bool = True) -> list[Site]:
    """Every offset, vtable, vector length, union tag and scalar of the flatbuffer at `base` (walks at
    most MAX_SITES_TABLES tables; a seed that is itself damaged gives what could be walked)."""
    from nn2tosa.diagnostics import InvalidInputError
    from nn2tosa.schemas import load_schema
    from nn2tosa.schemas import flatread as fr

    schema = load_schema(schema_name) if isinstance(schema_name, str) else schema_name
    fb = fr.FlatBuffer(buf, schema, base, end=end, strict_table_size=strict)
    sites = [Site("uoffset", base, 4, name="root")]
    try:
        stack = [fb.root()]
    except InvalidInputError:
        return sites
    seen: set[int] = set()
    while stack and len(seen) < MAX_SITES_TABLES:
        t = stack.pop()
        if t.offset in seen:
            continue
        seen.add(t.offset)
        try:
            _table_sites(t, fr, sites, stack)
        except InvalidInputError:
            continue
    return sites


def _table_sites(t, fr, sites: list[Site], stack: list) -> None:
    from nn2tosa.schemas.model import SCALARS

    sites.append(Site("soffset", t.offset, 4, signed=True, name=t.type_name))
    sites.append(Site("vtable_size", t._vt, 2, name=t.type_name))
    sites.append(Site("vtable_size", t._vt + 2, 2, name=t.type_name))
    for p in t._plans.values():
        if p.voffset < t._vtsize:
            sites.append(Site("vtable_entry", t._vt + p.voffset, 2, name=p.name))
        pos = t._pos(p)
        if pos == 0:
            continue
        kind = p.kind
        if kind == fr._SCALAR:
            ftype = p.fdef.type
            if ftype.kind == "union_type":
                sites.append(Site("union_tag", pos, 1, name=p.name))
            elif ftype.kind == "enum":  # data types, layouts, modes: values past the enum's last
                sites.append(Site("enum", pos, p.size, name=f"{t.type_name}.{p.name}"))
            elif SCALARS[ftype.scalar].kind == "int":
                signed = ftype.scalar.startswith(("int", "long", "short", "byte"))
                sites.append(Site("scalar", pos, p.size, signed=signed, name=p.name))
            elif SCALARS[ftype.scalar].kind == "float" and p.size in (4, 8):  # scales, alphas, epsilons
                sites.append(Site("float", pos, p.size, name=f"{t.type_name}.{p.name}"))
            continue
        if kind == fr._STRUCT:
            continue
        sites.append(Site("string" if kind == fr._STRING else "uoffset", pos, 4, name=f"{t.type_name}.{p.name}"))
        if kind in (fr._TABLE, fr._UNION):
            child = t.get(p.name)
            if child is not None:
                stack.append(child)
            continue
        if kind in (fr._VEC_NUM, fr._VEC_BOOL, fr._VEC_TABLE, fr._VEC_STRING, fr._VEC_STRUCT, fr._VEC_UNION):
            start, n = t._vector(pos, max(p.esize, 1), p.name)
            sites.append(Site("vector_length", start - 4, 4, name=p.name))
            if kind == fr._VEC_NUM and p.dtype.kind in "iu":
                site_kind = "dim" if p.name in DIM_FIELDS else "element"
                for i in range(min(n, 16)):
                    sites.append(Site(site_kind, start + i * p.esize, p.esize, signed=p.dtype.kind == "i", name=p.name))
            elif kind == fr._VEC_NUM and p.dtype.kind == "f" and p.esize in (4, 8):  # per-axis scales
                sites.extend(Site("float", start + i * p.esize, p.esize, name=p.name) for i in range(min(n, 16)))
            if kind == fr._VEC_TABLE and n >= 2:  # layers, nodes, operators: their order can be shuffled
                sites.append(Site("table_vector", start, 4 * n, name=f"{t.type_name}.{p.name}"))
            if kind == fr._VEC_TABLE:
                for i in range(n):
                    sites.append(Site("uoffset", start + 4 * i, 4, name=f"{p.name}[]"))
                stack.extend(t.get(p.name))
            elif kind == fr._VEC_UNION:
                stack.extend(x for x in t.get(p.name) if x is not None)


def file_sites(data: bytes, fmt: str) -> list[Site]:
    """The sites of a seed file of format `fmt` (a .pte: its program and every MPS payload in it; the
    "program" kind: the program's own flatbuffer, not its payloads)."""
    from nn2tosa.diagnostics import InvalidInputError

    try:
        if fmt == "armnn":
            return flatbuffer_sites(data, "armnn")
        if fmt == "tosa":
            from nn2tosa.frontend.tosa import file_version

            layout = "tosa_0_100" if file_version(memoryview(data))[:2] == (0, 100) else "tosa"
            return flatbuffer_sites(data, layout, strict=False)
        from nn2tosa.frontend.mps import pte

        if fmt == "program":  # a whole program: its plan, operator arguments, EValues and buffers only
            return flatbuffer_sites(data, pte.program_schema())
        if pte.sniff(memoryview(data)):
            sites = flatbuffer_sites(data, pte.program_schema())
            for d in pte.find_delegates(memoryview(data)):
                sites += _payload_sites(data, d.start, d.start + d.size)
            return sites
        return _payload_sites(data, 0, len(data))
    except InvalidInputError:
        return []


def _payload_sites(data: bytes, start: int, end: int) -> list[Site]:
    from nn2tosa.frontend.mps import payload

    p = payload.parse(memoryview(data)[start:end])
    header = [Site("scalar", start + 8, 8, name="constant_data_offset"),
              Site("scalar", start + 16, 8, name="constant_data_size")] if p.has_header else []
    return header + flatbuffer_sites(data, "mps", start + p.flatbuffer_start, start + p.flatbuffer_end)


# ====================================================================================== mutations
INTERESTING_32 = (0, 1, 2, 3, 4, 7, 8, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
                  0xFFFFFFFF, 0xFFFFFFFE, 0x40000000)
HUGE_DIMS = (0, 1, 2, 3, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFE, 1 << 16, 1 << 20, 1 << 24, 1 << 30, 46341, 65537,
             1000003)


@dataclass
class Mutant:
    data: bytes
    steps: list[str] = field(default_factory=list)


def _write_int(buf: bytearray, pos: int, size: int, value: int) -> None:
    if pos < 0 or pos + size > len(buf):
        return
    buf[pos:pos + size] = (value % (1 << (8 * size))).to_bytes(size, "little")


def _sites_of(sites: list[Site], *kinds: str) -> list[Site]:
    return [s for s in sites if s.kind in kinds]


def m_bit_flips(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    flips = [rng.randrange(len(buf) * 8) for _ in range(rng.choice((1, 1, 2, 4, 8)))]
    for bit in flips:
        buf[bit // 8] ^= 1 << (bit % 8)
    return f"bit flips at {', '.join(f'{b // 8}.{b % 8}' for b in flips)}"


def m_byte_writes(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    done = []
    for _ in range(rng.choice((1, 2, 4))):
        pos, value = rng.randrange(len(buf)), rng.choice((0, 0xFF, 0x7F, 0x80, 1, rng.randrange(256)))
        buf[pos] = value
        done.append(f"{pos}={value}")
    return "bytes " + ", ".join(done)


def m_truncate(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    if not buf:  # an earlier truncation of this mutant left nothing
        return "nothing left to truncate"
    cut = rng.choice((rng.randrange(len(buf)), len(buf) - rng.randrange(1, 64), rng.randrange(64)))
    cut = max(0, min(len(buf) - 1, cut))
    del buf[cut:]
    return f"truncated to {cut} bytes"


def m_splice(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    donor = rng.choice(donors) if donors else bytes(buf)
    size = rng.choice((4, 16, 64, 256, 1024))
    src = rng.randrange(max(1, len(donor) - size))
    dst = rng.randrange(max(1, len(buf) - size))
    chunk = donor[src:src + size]
    buf[dst:dst + len(chunk)] = chunk
    return f"spliced {len(chunk)} bytes from donor offset {src} to {dst}"


def m_offset(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    """Rewrite a uoffset: a little off, onto another table (shared or cyclic subtrees), or far away."""
    candidates = _sites_of(sites, "uoffset")
    if not candidates:
        return m_bit_flips(buf, sites, rng, donors)
    s = rng.choice(candidates)
    tables = _sites_of(sites, "soffset")
    choice = rng.randrange(4)
    old = int.from_bytes(buf[s.pos:s.pos + 4], "little")
    if choice == 0:
        value = old + rng.choice((-8, -4, -2, -1, 1, 2, 4, 8))
    elif choice == 1 and tables:
        value = rng.choice(tables).pos - s.pos  # onto some table: earlier ones make cycles
    elif choice == 2:
        value = rng.choice(INTERESTING_32)
    else:
        value = rng.randrange(len(buf) + 64)
    _write_int(buf, s.pos, 4, value)
    return f"offset {s.name} at {s.pos}: {old} -> {value % (1 << 32)}"


def m_vtable(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    candidates = _sites_of(sites, "vtable_entry", "vtable_size", "soffset")
    if not candidates:
        return m_bit_flips(buf, sites, rng, donors)
    s = rng.choice(candidates)
    value = rng.choice((0, 1, 2, 3, 4, 6, 8, 0xFFFF, 0x8000, rng.randrange(1 << (8 * s.size))))
    _write_int(buf, s.pos, s.size, value)
    return f"{s.kind} {s.name} at {s.pos} = {value}"


def m_vector_length(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    candidates = _sites_of(sites, "vector_length")
    if not candidates:
        return m_bit_flips(buf, sites, rng, donors)
    s = rng.choice(candidates)
    old = int.from_bytes(buf[s.pos:s.pos + 4], "little")
    value = rng.choice((0, 1, old + 1, max(old - 1, 0), 2 * old, old + 1000, 0x7FFFFFFF, 0xFFFFFFFF,
                        0x40000000, rng.randrange(1 << 20)))
    _write_int(buf, s.pos, 4, value)
    return f"vector {s.name} length at {s.pos}: {old} -> {value}"


def m_union_tag(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    candidates = _sites_of(sites, "union_tag")
    if not candidates:
        return m_bit_flips(buf, sites, rng, donors)
    s = rng.choice(candidates)
    old = buf[s.pos]
    value = rng.choice((0, old + 1, max(old - 1, 0), rng.randrange(256), rng.randrange(1, 100)))
    buf[s.pos] = value % 256
    return f"union tag {s.name} at {s.pos}: {old} -> {value % 256}"


def m_huge_dim(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    candidates = _sites_of(sites, "dim") or _sites_of(sites, "element")
    if not candidates:
        return m_bit_flips(buf, sites, rng, donors)
    s = rng.choice(candidates)
    value = rng.choice(HUGE_DIMS + (-1, -2, -(1 << 31)))
    _write_int(buf, s.pos, s.size, value)
    return f"{s.kind} {s.name} at {s.pos} = {value}"


def m_scalar(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    """An extreme value in an integer field or list element: strides, axes, counts, pads, ids."""
    candidates = _sites_of(sites, "scalar", "element")
    if not candidates:
        return m_bit_flips(buf, sites, rng, donors)
    s = rng.choice(candidates)
    bits = 8 * s.size
    value = rng.choice((0, 1, -1, 2, 255, 256, 1000, 65535, 65536, 1 << 20, (1 << (bits - 1)) - 1,
                        -(1 << (bits - 1)), (1 << bits) - 1, rng.randrange(-64, 64)))
    _write_int(buf, s.pos, s.size, value)
    return f"{s.kind} {s.name} at {s.pos} = {value}"


def m_drop_field(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    """A vtable entry set to 0: the field reads as absent (a union's tag kept while its value goes,
    a TensorInfo without its dataType)."""
    candidates = _sites_of(sites, "vtable_entry")
    if not candidates:
        return m_bit_flips(buf, sites, rng, donors)
    s = rng.choice(candidates)
    _write_int(buf, s.pos, 2, 0)
    return f"field {s.name} dropped from its vtable at {s.pos}"


EXTREME_FLOATS = (float("inf"), float("-inf"), float("nan"), 1e30, -1e30, 3.4e38, 1e-30, 1e-45, 0.0, -0.0, -1.0, 1e10)


def m_float(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    """An extreme float in a quantization scale or an attribute (alpha, epsilon, beta)."""
    candidates = _sites_of(sites, "float")
    if not candidates:
        return m_scalar(buf, sites, rng, donors)
    s = rng.choice(candidates)
    value = rng.choice(EXTREME_FLOATS)
    import struct

    buf[s.pos:s.pos + s.size] = struct.pack("<f" if s.size == 4 else "<d", value)
    return f"float {s.name} at {s.pos} = {value}"


def m_enum(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    """An enum field (a data type above all) moved to a neighbouring value or out of range."""
    candidates = _sites_of(sites, "enum")
    if not candidates:
        return m_union_tag(buf, sites, rng, donors)
    s = rng.choice(candidates)
    old = int.from_bytes(buf[s.pos:s.pos + s.size], "little")
    value = rng.choice((old + 1, max(old - 1, 0), rng.randrange(16), 64, 127, 255, (1 << (8 * s.size)) - 1))
    _write_int(buf, s.pos, s.size, value)
    return f"enum {s.name} at {s.pos}: {old} -> {value}"


def m_long_string(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    """A name (tensor, region, layer, location) pointed at a 70,000-character string appended to the file."""
    candidates = _sites_of(sites, "string")
    if not candidates:
        return m_bit_flips(buf, sites, rng, donors)
    s = rng.choice(candidates)
    length = rng.choice((70000, 4096, 0))
    buf.extend(b"\0" * (-len(buf) % 4))
    at = len(buf)
    buf.extend(length.to_bytes(4, "little") + bytes([rng.choice(b"ax%")]) * length + b"\0")
    _write_int(buf, s.pos, 4, at - s.pos)
    return f"string {s.name} at {s.pos} -> {length} characters at {at}"


def m_shuffle(buf: bytearray, sites: list[Site], rng: random.Random, donors: list[bytes]) -> str:
    """The elements of a vector of tables (layers, nodes, operators) reversed, rotated or shuffled:
    each uoffset is relative to its own position, so the targets are moved, not the bytes."""
    candidates = _sites_of(sites, "table_vector")
    if not candidates:
        return m_offset(buf, sites, rng, donors)
    s = rng.choice(candidates)
    slots = list(range(s.pos, s.pos + s.size, 4))
    if slots[-1] + 4 > len(buf):
        return "vector past the end (truncated)"
    targets = [p + int.from_bytes(buf[p:p + 4], "little") for p in slots]
    how = rng.choice(("reversed", "rotated", "shuffled"))
    if how == "reversed":
        targets.reverse()
    elif how == "rotated":
        targets = targets[1:] + targets[:1]
    else:
        rng.shuffle(targets)
    for p, target in zip(slots, targets):
        _write_int(buf, p, 4, target - p)
    return f"{s.name} ({len(slots)} tables) {how}"


MUTATORS: dict[str, Callable[[bytearray, list[Site], random.Random, list[bytes]], str]] = {
    "bit_flips": m_bit_flips,
    "byte_writes": m_byte_writes,
    "truncate": m_truncate,
    "splice": m_splice,
    "offset": m_offset,
    "vtable": m_vtable,
    "vector_length": m_vector_length,
    "union_tag": m_union_tag,
    "huge_dim": m_huge_dim,
    "scalar": m_scalar,
    "drop_field": m_drop_field,
    "float": m_float,
    "enum": m_enum,
    "long_string": m_long_string,
    "shuffle": m_shuffle,
}
# Structure-aware mutations get more weight: random flips mostly hit weights, which is dull.
WEIGHTS = {"bit_flips": 2, "byte_writes": 1, "truncate": 1, "splice": 1, "offset": 3, "vtable": 2,
           "vector_length": 2, "union_tag": 2, "huge_dim": 4, "scalar": 5, "drop_field": 2, "float": 3, "enum": 3,
           "long_string": 1, "shuffle": 2}
LAST = ("long_string", "truncate")  # changes the length: applied after the others, whose sites assume the seed's layout


def mutate(seed: bytes, sites: list[Site], rng: random.Random, donors: list[bytes]) -> Mutant:
    """One to three mutations of `seed` (never the seed itself)."""
    names = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=rng.choice((1, 1, 1, 2, 3)))
    names.sort(key=lambda n: n in LAST)
    buf = bytearray(seed)
    steps = [f"{n}: {MUTATORS[n](buf, sites, rng, donors)}" for n in names]
    if bytes(buf) == seed:
        buf[rng.randrange(len(buf))] ^= 0xFF
        steps.append("byte inverted (the mutations left the seed unchanged)")
    return Mutant(bytes(buf), steps)


# ====================================================================================== JSON (debug dumps)
def _json_objects(text: str) -> list[tuple[int, int, Any]]:
    """The top-level JSON values of `text` (Arm NN's debug output is one object per layer output, one
    after another) as (start, end, value)."""
    decoder = json.JSONDecoder()
    found, pos = [], 0
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        found.append((pos, end, value))
        pos = end
    return found


def _damaged_value(rng: random.Random, value: Any) -> Any:
    """A value of the wrong kind, size or range for where `value` stood."""
    return rng.choice([None, -1, 0, 2 ** 31, 2 ** 63, -(2 ** 63), 1e308, "nan", "x" * 70000, [], {}, [[1, 2], [3]],
                       [2 ** 40, 2 ** 40], [0], [-4, 3], float("nan") if isinstance(value, float) else True])


def _nested_lists(value: Any, path: tuple = ()) -> list[tuple]:
    """Paths to every list inside `value` (the data array's rows)."""
    if not isinstance(value, list):
        return []
    return [path] + [p for i, v in enumerate(value[:8]) for p in _nested_lists(v, path + (i,))]


def mutate_json(seed: bytes, rng: random.Random) -> Mutant:
    """One to three structure-aware changes to a stream of JSON objects (an Arm NN debug dump): a key
    dropped, a value of the wrong kind or range (shape, slot, name, min/max), the data array made
    ragged, shortened or holding a non-number, an object dropped or repeated; or plain byte damage
    (truncation, bit flips) when the text holds no JSON."""
    text = seed.decode("utf-8", errors="replace")
    steps = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        objects = [o for o in _json_objects(text) if isinstance(o[2], dict)]
        if not objects or rng.random() < 0.1:
            cut = rng.randrange(len(text) or 1)
            text = text[:cut]
            steps.append(f"truncated at {cut}")
            continue
        start, end, obj = rng.choice(objects)
        choice = rng.randrange(6)
        if choice == 0 and obj:
            key = rng.choice(sorted(obj))
            del obj[key]
            steps.append(f"key {key!r} dropped from the object at {start}")
        elif choice == 1 and obj:
            key = rng.choice(sorted(obj))
            obj[key] = _damaged_value(rng, obj[key])
            steps.append(f"{key!r} of the object at {start} set to {str(obj[key])[:40]}")
        elif choice == 2 and isinstance(obj.get("data"), list):
            paths = _nested_lists(obj["data"])
            path = rng.choice(paths)
            target = obj["data"]
            for i in path:
                target = target[i]
            if target and rng.random() < 0.5:
                del target[rng.randrange(len(target)):]
                steps.append(f"data{list(path)} shortened")
            else:
                target.append(rng.choice(["nan", None, 1e308, [1], -(2 ** 70)]))
                steps.append(f"data{list(path)} given an extra element")
        elif choice == 3:
            text = text[:start] + text[end:]
            steps.append(f"object at {start} dropped")
            continue
        elif choice == 4:
            text = text[:end] + "\n" + text[start:end] + text[end:]
            steps.append(f"object at {start} repeated")
            continue
        else:
            obj["shape"] = rng.choice([[], [0], [2 ** 31], [1] * 20, [-1, 4], [10 ** 12, 10 ** 12]])
            steps.append(f"shape of the object at {start} set to {obj['shape']}")
        text = text[:start] + json.dumps(obj) + text[end:]
    data = text.encode()
    if data == seed:
        data = data[: len(data) // 2]
        steps.append("halved (the changes left the seed unchanged)")
    return Mutant(data, steps)
