"""Corrupt, truncated and hostile input to the reader (flatread) and the verifier (verify).

Truncations, byte flips (random and hypothesis), offsets rewritten to point outside the buffer or at
themselves, vtable damage, huge vector lengths, deep and shared (DAG) nesting: every access returns a
value or raises InvalidInputError, never another exception, and quickly. The oracle and API tests are
in test_flatread.py.
"""
from __future__ import annotations

import random
import struct
import time
from collections import Counter
from pathlib import Path

import flatbuffers
import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import compile_schema

from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.flatread import FlatBuffer, Table, TableVector
from nn2tosa.schemas.verify import verify_buffer

CORPUS = Path(__file__).parents[2].parent / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(not (CORPUS / "manifest.json").is_file(), reason=f"the corpus is not at {CORPUS}")

MPS_BASE = 24  # [u32 0]["MP00"][u64 constant offset][u64 constant size], then the flatbuffer



def small_samples() -> list[tuple[str, bytes, str, int]]:
    """A few real files with varied content (weights inline and as Constant layers, LSTM, MPS)."""
    picks = [
        ("armnn", "armnn/perlayer_20.08/conv2d_nchw_k2x3_s1x2_pad1120_bias_f32.armnn"),
        ("armnn", "armnn/perlayer_23.08/conv2d_nchw_k2x3_s1x2_pad1120_bias_f32.armnn"),
        ("armnn", "armnn/perlayer_20.08/splitter_axis1_2views_unequal_qu8.armnn"),
        ("mps", "mps/models/cnn_fp16.mpsgraph"),
    ]
    out = []
    for schema, rel in picks:
        path = CORPUS / rel
        if path.is_file():
            out.append((rel, path.read_bytes(), schema, MPS_BASE if schema == "mps" else 0))
    return out


SAMPLES = small_samples() if CORPUS.is_dir() else []


def walk_everything(root: Table, limit: int = 3000) -> None:
    """Use every reader entry point on everything reachable (up to `limit` tables), carrying on
    past InvalidInputError so that later fields get exercised too."""
    stack, seen = [root], 0
    while stack and seen < limit:
        t = stack.pop()
        seen += 1
        _ = t.path, t.type_name, t.fields()
        for f in t.definition.fields:
            try:
                t.has(f.name)
                v = t.get(f.name)
                kind = f.type.kind
                if kind in ("enum", "union_type"):
                    t.enum_name(f.name)
                elif kind == "union":
                    t.union_type(f.name)
                    if t.has(f.name):
                        stack.append(t.get_as(f.name, t.flatbuffer.schema.unions[f.type.name].members[0].name))
                elif kind == "vector" and f.type.element.kind in ("scalar", "enum", "struct"):
                    t.raw_vector(f.name)
                if isinstance(v, Table):
                    stack.append(v)
                elif isinstance(v, TableVector):
                    for i in range(len(v)):
                        try:
                            stack.append(v[i])
                        except InvalidInputError:
                            pass
                    v[-1] if len(v) else None
                elif isinstance(v, list):
                    stack.extend(x for x in v if isinstance(x, Table))
            except InvalidInputError:
                pass
    try:
        root.to_dict()
        root.to_dict(defaults=False, max_depth=2)
    except InvalidInputError:
        pass


def exercise(data: bytes, schema: str, base: int) -> str:
    """Verify and read `data` every way we can; return "ok" or "invalid". Any exception other
    than InvalidInputError fails the test, and so does taking too long."""
    t0 = time.perf_counter()
    outcome = "ok"
    try:
        fb = FlatBuffer(data, load_schema(schema), base)
        _ = fb.identifier
        try:
            verify_buffer(fb)
        except InvalidInputError as e:
            assert e.where and e.where.startswith("offset 0x"), e.where
            outcome = "invalid"
        walk_everything(fb.root())
    except InvalidInputError as e:
        assert e.where and e.where.startswith("offset 0x"), e.where
        outcome = "invalid"
    assert time.perf_counter() - t0 < 5, "reading a corrupt buffer took too long"
    return outcome


@needs_corpus
@pytest.mark.parametrize("sample", range(4))
def test_truncation(sample):
    rel, data, schema, base = SAMPLES[sample]
    cuts = sorted(set(range(0, min(len(data), 300))) | set(range(0, len(data), max(1, len(data) // 200))))
    outcomes = Counter(exercise(data[:cut], schema, base) for cut in cuts)
    assert outcomes["invalid"] > len(cuts) // 2, outcomes
    assert exercise(data, schema, base) == "ok"


@needs_corpus
def test_random_mutations():
    """Deterministic bulk: 400 mutants per sample with 1 to 8 random bytes changed."""
    rng = random.Random(1234)
    outcomes: Counter = Counter()
    for rel, data, schema, base in SAMPLES:
        for _ in range(400):
            buf = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(base, len(buf))] = rng.randrange(256)
            outcomes[exercise(bytes(buf), schema, base)] += 1
    assert outcomes["invalid"] > 100, outcomes


@needs_corpus
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sample=st.integers(0, 3),
    edits=st.lists(st.tuples(st.integers(0, 1 << 30), st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]), st.integers(1, 4)), min_size=1, max_size=6),
)
def test_hypothesis_mutations(sample, edits):
    """Overwrite 1-4 bytes at a time with boundary values (where offsets and lengths go wrong)."""
    rel, data, schema, base = SAMPLES[sample]
    buf = bytearray(data)
    for pos, byte, width in edits:
        pos = base + pos % (len(buf) - base)
        buf[pos : pos + width] = bytes([byte]) * len(buf[pos : pos + width])
    exercise(bytes(buf), schema, base)


def offset_sites(fb: FlatBuffer) -> dict[str, list[int]]:
    """Where the structural words of a valid buffer are: uoffsets, table soffsets, vtable
    headers and entries, vector/string lengths."""
    sites: dict[str, set[int]] = {k: set() for k in ("uoffset", "soffset", "vtable", "vt_entry", "length", "nul")}
    stack = [fb.root()]
    while stack:
        t = stack.pop()
        sites["soffset"].add(t.offset)
        sites["vtable"].add(t._vt)
        for p in t._plans.values():
            pos = t._pos(p)
            if p.voffset < t._vtsize:
                sites["vt_entry"].add(t._vt + p.voffset)
            if pos == 0 or p.fdef.type.kind in ("scalar", "enum", "union_type", "struct"):
                continue  # absent, or stored inline: no offset to break
            sites["uoffset"].add(pos)
            target = t._deref(pos, p.name)
            sites["length"].add(target)
            v = t.get(p.name)
            if isinstance(v, str):
                sites["nul"].add(target + 4 + len(v.encode()))
            elif isinstance(v, Table):
                stack.append(v)
            elif isinstance(v, TableVector):
                start, n = t.vector_span(p.name)
                sites["uoffset"].update(start + 4 * i for i in range(n))
                stack.extend(v)
            elif isinstance(v, list) and v and isinstance(v[0], str):
                start, n = t.vector_span(p.name)
                sites["uoffset"].update(start + 4 * i for i in range(n))
    return {k: sorted(v) for k, v in sites.items()}


@needs_corpus
@pytest.mark.parametrize("sample", range(4))
def test_structural_rewrites(sample):
    """Each offset pointed outside, at itself, just past the end, backwards; each soffset and vtable
    header and entry broken; each length made huge; each string's NUL removed."""
    rel, data, schema, base = SAMPLES[sample]
    sites = offset_sites(FlatBuffer(data, load_schema(schema), base))
    size = len(data)

    def mutate(pos: int, fmt: str, value: int) -> str:
        buf = bytearray(data)
        struct.pack_into(fmt, buf, pos, value)
        return exercise(bytes(buf), schema, base)

    outcomes: Counter = Counter()
    for pos in sites["uoffset"]:
        for value in (0, 0xFFFFFFFF, 0x7FFFFFFF, size - pos, size - pos - 2, (size - pos) & ~3, (-4) & 0xFFFFFFFF):
            outcomes[mutate(pos, "<I", value & 0xFFFFFFFF)] += 1
    for pos in sites["soffset"]:
        for value in (0, pos + 1, pos - size, -(size - pos), 0x7FFFFFFF, -0x80000000, 2, -2):
            outcomes[mutate(pos, "<i", max(-0x80000000, min(0x7FFFFFFF, value)))] += 1
    for pos in sites["vtable"]:
        for value in (0, 1, 2, 3, 5, 0xFFFF):
            outcomes[mutate(pos, "<H", value)] += 1  # vtable size
            outcomes[mutate(pos + 2, "<H", value)] += 1  # table size
    for pos in sites["vt_entry"]:
        for value in (1, 2, 3, 0xFFFF, 0xFFFE):
            outcomes[mutate(pos, "<H", value)] += 1
    for pos in sites["length"]:
        for value in (0xFFFFFFFF, 0x40000000, (size - pos) // 4 + 1, size - pos):
            outcomes[mutate(pos, "<I", value & 0xFFFFFFFF)] += 1
    for pos in sites["nul"]:
        outcomes[mutate(pos, "<B", 0x41)] += 1
    assert outcomes["invalid"] > sum(outcomes.values()) // 2, outcomes


@needs_corpus
def test_bad_utf8_and_unknown_union_tag():
    rel, data, schema, base = SAMPLES[0]
    fb = FlatBuffer(data, load_schema(schema))
    layer = fb.root()["layers"][1]
    name = layer["layer"]["base"]["layerName"]
    buf = bytearray(data)
    at = bytes(buf).index(name.encode() + b"\0")
    buf[at] = 0xFF
    fb2 = FlatBuffer(bytes(buf), load_schema(schema))
    with pytest.raises(InvalidInputError, match="not valid UTF-8") as e:
        fb2.root()["layers"][1]["layer"]["base"]["layerName"]
    assert e.value.where == f"offset 0x{at:x} (SerializedGraph.layers[1].layer<{layer.union_type('layer')}>.base.layerName)"
    with pytest.raises(InvalidInputError, match="not valid UTF-8"):
        verify_buffer(fb2)
    # An unknown union tag: 200 is past the 73 Layer members.
    tag_pos = layer._pos(layer._plans["layer_type"])
    buf = bytearray(data)
    buf[tag_pos] = 200
    fb3 = FlatBuffer(bytes(buf), load_schema(schema))
    bad = fb3.root()["layers"][1]
    for read in (lambda: bad["layer"], lambda: bad.union_type("layer"), lambda: bad.enum_name("layer_type"), lambda: verify_buffer(fb3)):
        with pytest.raises(InvalidInputError, match="200"):
            read()
    assert bad["layer_type"] == 200  # the raw tag is still readable


@needs_corpus
def test_error_location_names_the_path():
    """The brief's example: a descriptor field of a convolution layer, located by offset and path."""
    path = CORPUS / "armnn/perlayer_20.08/conv2d_nchw_k2x3_s1x2_pad1120_bias_f32.armnn"
    data = path.read_bytes()
    fb = FlatBuffer(data, load_schema("armnn"))
    layers = fb.root()["layers"]
    index = next(i for i, layer in enumerate(layers) if layer.union_type("layer") == "Convolution2dLayer")
    desc = layers[index]["layer"]["descriptor"]
    entry = desc._vt + desc._plans["strideX"].voffset
    buf = bytearray(data)
    struct.pack_into("<H", buf, entry, 0xFFF0)  # the field now lies far outside the table
    bad = FlatBuffer(bytes(buf), load_schema("armnn")).root()["layers"][index]["layer"]["descriptor"]
    with pytest.raises(InvalidInputError) as e:
        bad["strideX"]
    assert e.value.where == f"offset 0x{entry:x} (SerializedGraph.layers[{index}].layer<Convolution2dLayer>.descriptor.strideX)"
    assert "outside the table" in e.value.message
    assert bad["strideY"] == desc["strideY"]  # other fields still read


# Synthetic recursive schema: real schemas are not recursive, so depth and sharing are built here.
NODE = compile_schema("table Node { next: Node; kids: [Node]; name: string; } root_type Node;")


def chain(n: int) -> bytes:
    b = flatbuffers.Builder(0)
    prev = None
    for i in range(n):
        name = b.CreateString(f"n{i}")
        b.StartObject(3)
        if prev is not None:
            b.PrependUOffsetTRelativeSlot(0, prev, 0)
        b.PrependUOffsetTRelativeSlot(2, name, 0)
        prev = b.EndObject()
    b.Finish(prev)
    return bytes(b.Output())


def dag(levels: int, fanout: int = 2) -> bytes:
    """Each level's `kids` vector holds the same child `fanout` times: fanout**levels paths."""
    b = flatbuffers.Builder(0)
    child = None
    for _ in range(levels):
        vec = None
        if child is not None:
            b.StartVector(4, fanout, 4)
            for _ in range(fanout):
                b.PrependUOffsetTRelative(child)
            vec = b.EndVector()
        b.StartObject(3)
        if vec is not None:
            b.PrependUOffsetTRelativeSlot(1, vec, 0)
        child = b.EndObject()
    b.Finish(child)
    return bytes(b.Output())


def test_depth_is_bounded():
    fb = FlatBuffer(chain(100), NODE)
    with pytest.raises(InvalidInputError, match="deeper than 64"):
        verify_buffer(fb)
    t = fb.root()
    with pytest.raises(InvalidInputError, match="deeper than 64") as e:
        for _ in range(100):
            t = t["next"]
    assert e.value.where.endswith(".next" * 65 + ")")
    verify_buffer(FlatBuffer(chain(60), NODE))
    assert FlatBuffer(chain(60), NODE).root()["name"] == "n59"
    with pytest.raises(InvalidInputError, match="deeper than 10"):
        verify_buffer(FlatBuffer(chain(60), NODE), max_depth=10)
    with pytest.raises(InvalidInputError, match="deeper than"):
        FlatBuffer(chain(100), NODE).root().to_dict()


def test_shared_subtrees_are_bounded():
    """2**40 paths through a few hundred bytes: the verifier and to_dict stop early, with an error."""
    data = dag(40)
    assert len(data) < 2000
    t0 = time.perf_counter()
    with pytest.raises(InvalidInputError, match="more than .* offsets"):
        verify_buffer(FlatBuffer(data, NODE))
    with pytest.raises(InvalidInputError, match="too many tables"):
        FlatBuffer(data, NODE).root().to_dict()
    assert time.perf_counter() - t0 < 1
    verify_buffer(FlatBuffer(dag(3), NODE))  # a little sharing is fine
    with pytest.raises(InvalidInputError, match="more than 5 offsets"):
        verify_buffer(FlatBuffer(dag(3), NODE), max_tables=5)


def test_self_pointing_offset():
    data = bytearray(chain(3))
    fb = FlatBuffer(bytes(data), NODE)
    pos = fb.root()._pos(fb.root()._plans["next"])
    struct.pack_into("<I", data, pos, 0)
    bad = FlatBuffer(bytes(data), NODE).root()
    with pytest.raises(InvalidInputError, match="points at itself"):
        bad["next"]



def test_buffer_bounds():
    schema = NODE
    for bad in (b"", b"\x00\x00", b"\x00\x00\x00\x00", b"\xff\xff\xff\xff\x00\x00\x00\x00"):
        with pytest.raises(InvalidInputError):
            FlatBuffer(bad, schema).root()
    with pytest.raises(InvalidInputError, match="should start at byte 10"):
        FlatBuffer(b"\x00" * 4, schema, 10)
    with pytest.raises(InvalidInputError):
        FlatBuffer(b"\x00" * 4, schema, 0, end=8)
    data = chain(2)
    assert FlatBuffer(data, schema).identifier is None  # no identifier written
    assert FlatBuffer(memoryview(data).cast("I"), schema).root()["name"] == "n1"  # any memoryview format



@needs_corpus
def test_each_check_has_its_error():
    """One structural break of each kind, with the message that names it."""
    rel, data, schema, base = SAMPLES[0]
    fb = FlatBuffer(data, load_schema(schema))
    layer = fb.root()["layers"][1]["layer"]
    base_layer = layer["base"]
    name_plan = base_layer._plans["layerName"]
    name_pos = base_layer._pos(name_plan)
    name_target = base_layer._deref(name_pos, "layerName")
    name_len = struct.unpack_from("<I", data, name_target)[0]
    dims_holder = base_layer["outputSlots"][0]["tensorInfo"]
    dims_target = dims_holder._deref(dims_holder._pos(dims_holder._plans["dimensions"]), "dimensions")

    def broken(pos: int, fmt: str, value: int):
        buf = bytearray(data)
        struct.pack_into(fmt, buf, pos, value)
        fb = FlatBuffer(bytes(buf), load_schema(schema))
        return fb, lambda: fb.root()["layers"][1]["layer"]["base"]

    cases = [
        (name_target + 4 + name_len, "<B", 0x41, lambda b: b["layerName"], "not NUL-terminated"),
        (name_target, "<I", len(data), lambda b: b["layerName"], "runs past the end"),
        (name_pos, "<I", len(data), lambda b: b["layerName"], "points outside the buffer"),
        (dims_target, "<I", 0x40000000, lambda b: b["outputSlots"][0]["tensorInfo"]["dimensions"], "runs past the end"),
        (base_layer._vt, "<H", 7, lambda b: b, "bad size 7"),
        (base_layer._vt, "<H", 2, lambda b: b, "bad size 2"),
        (base_layer._vt + 2, "<H", 0xFFFF, lambda b: b, "table size 65535 runs past"),
        (base_layer.offset, "<i", -len(data), lambda b: b, "vtable offset"),
        (base_layer.offset, "<i", base_layer.offset + 1, lambda b: b, "vtable offset"),
    ]
    for pos, fmt, value, read, message in cases:
        fb2, get_base = broken(pos, fmt, value)
        with pytest.raises(InvalidInputError, match=message) as e:
            read(get_base())
        assert "SerializedGraph.layers[1].layer<" in e.value.where, e.value.where
        with pytest.raises(InvalidInputError, match=message):
            verify_buffer(fb2)


@settings(max_examples=300, deadline=None)
@given(schema=st.sampled_from(["armnn", "mps", "tosa"]), data=st.binary(max_size=400))
def test_hypothesis_random_bytes(schema, data):
    """Arbitrary bytes as any of the three formats."""
    exercise(data, schema, 0)



def test_lenient_table_size_overstated():
    """With strict_table_size=False a declared size past the end of the buffer is not trusted either."""
    data = bytearray(chain(2))
    root = FlatBuffer(bytes(data), NODE).root()
    struct.pack_into("<H", data, root._vt + 2, 0xFFFF)
    with pytest.raises(InvalidInputError, match="table size 65535"):
        FlatBuffer(bytes(data), NODE).root()
    lenient = FlatBuffer(bytes(data), NODE, strict_table_size=False)
    verify_buffer(lenient)
    assert lenient.root()["next"]["name"] == "n0"
