"""The schema-driven reader (nn2tosa.schemas.flatread) and verifier (nn2tosa.schemas.verify).

1. Oracle: every .armnn file and MPS payload in the corpus (and a .tosa written by tosa-opt) is walked
   completely with our reader and with flatc's generated accessors; every field value of every
   reachable table must agree. The whole corpus takes about 2 s, so nothing is sampled.
2. The API: zero-copy vectors, unaligned data, defaults, unions, helpers, the Python-Builder quirk.
Corrupt and hostile input is tested in test_flatread_corruption.py.
"""
from __future__ import annotations

import json
import mmap
import struct
import subprocess
import sysconfig
import time
from collections import Counter
from pathlib import Path

import flatbuffers
import numpy as np
import pytest

from conftest import compile_schema, flatc_module
from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.schemas import load_schema
from nn2tosa.schemas import tosa_generated
from nn2tosa.schemas.flatread import FlatBuffer, Table, TableVector
from nn2tosa.schemas.verify import verify_buffer

armnn_generated, mps_generated = flatc_module("armnn"), flatc_module("mps")

CORPUS = Path(__file__).parents[2].parent / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(not (CORPUS / "manifest.json").is_file(), reason=f"the corpus is not at {CORPUS}")

MPS_BASE = 24  # [u32 0]["MP00"][u64 constant offset][u64 constant size], then the flatbuffer


def corpus_files(pattern: str) -> list[Path]:
    return sorted(CORPUS.glob(pattern)) if CORPUS.is_dir() else []


ARMNN_FILES = corpus_files("armnn/**/*.armnn")
MPS_FILES = corpus_files("mps/**/*.mpsgraph")


def open_corpus(path: Path) -> FlatBuffer:
    data = path.read_bytes()
    if path.suffix == ".mpsgraph":
        return FlatBuffer(data, load_schema("mps"), MPS_BASE)
    return FlatBuffer(data, load_schema("armnn"))


# ---------------------------------------------------------------------------------------------
# 1. The oracle: flatc's generated accessors


def norm(name: str) -> str:
    return name.replace("_", "").lower()


_METHODS: dict[type, dict[str, str]] = {}


def method(obj: object, field: str) -> str:
    """The generated accessor for `field` (flatc spells layerName/input1_id/_major as
    LayerName/Input1Id/_Major)."""
    cls = type(obj)
    if cls not in _METHODS:
        _METHODS[cls] = {norm(n): n for n in vars(cls) if callable(getattr(cls, n)) and not n.startswith("__")}
    return _METHODS[cls][norm(field)]


def same_scalar(ours: object, theirs: object) -> bool:
    if isinstance(ours, float) and isinstance(theirs, float) and ours != ours:
        return theirs != theirs  # NaN
    return ours == theirs and type(ours) is type(theirs)


class Oracle:
    """Walks one of our Tables and the generated object for the same table side by side."""

    def __init__(self, gen, buf):
        self.gen = gen
        self.buf_bytes = np.frombuffer(buf, np.uint8)
        self.stats: Counter = Counter()

    def table(self, t: Table, obj) -> None:
        self.stats["tables"] += 1
        assert t.offset == obj._tab.Pos, t.path
        schema = t.flatbuffer.schema
        for f in t.definition.fields:
            where = f"{t.path}.{f.name}"
            acc = method(obj, f.name)
            kind = f.type.kind
            ours = t.get(f.name)
            self.stats["fields"] += 1
            if kind in ("scalar", "enum", "union_type"):
                assert same_scalar(ours, getattr(obj, acc)()), where
            elif kind == "string":
                theirs = getattr(obj, acc)()
                assert ours == (None if theirs is None else theirs.decode("utf-8")), where
            elif kind == "table":
                theirs = getattr(obj, acc)()
                assert (ours is None) == (theirs is None), where
                if ours is not None:
                    self.table(ours, theirs)
            elif kind == "struct":
                theirs = getattr(obj, acc)()
                assert (ours is None) == (theirs is None), where
                if ours is not None:
                    self.struct(ours, theirs, schema.structs[f.type.name], where)
            elif kind == "union":
                self.union(t, f, obj, acc, where)
            elif kind == "vector":
                self.vector(t, f, obj, acc, ours, where)
            else:  # pragma: no cover
                raise AssertionError(kind)

    def union(self, t: Table, f, obj, acc: str, where: str) -> None:
        schema = t.flatbuffer.schema
        union = schema.unions[f.type.name]
        tag = getattr(obj, method(obj, f.name + "_type"))()
        payload = getattr(obj, acc)()  # flatc returns the payload whatever the tag
        ours = t.get(f.name)
        if tag == 0:
            assert ours is None and t.union_type(f.name) is None, where
            if payload is not None:
                # A NONE tag with a payload (Arm NN 20.08 int8 constants): get_as reads it.
                self.stats["none_tag_with_payload"] += 1
                member = union.members[0]
                gen_obj = getattr(self.gen, member.table)()
                gen_obj.Init(payload.Bytes, payload.Pos)
                self.table(t.get_as(f.name, member.name), gen_obj)
            return
        member = union.by_value[tag]
        assert t.union_type(f.name) == member.name, where
        assert (ours is None) == (payload is None), where
        if ours is not None:
            gen_obj = getattr(self.gen, member.table)()
            gen_obj.Init(payload.Bytes, payload.Pos)
            self.table(ours, gen_obj)

    def struct(self, ours: dict, theirs, sdef, where: str) -> None:
        for f in sdef.fields:
            assert f.type.kind in ("scalar", "enum"), "no nested structs in our schemas"
            assert same_scalar(ours[f.name], getattr(theirs, method(theirs, f.name))()), f"{where}.{f.name}"

    def vector(self, t: Table, f, obj, acc: str, ours, where: str) -> None:
        schema = t.flatbuffer.schema
        if getattr(obj, acc + "IsNone")():
            assert ours is None, where
            return
        n = getattr(obj, acc + "Length")()
        assert len(ours) == n, where
        e = f.type.element
        self.stats["vectors"] += 1
        if e.kind in ("scalar", "enum"):
            theirs = getattr(obj, acc + "AsNumpy")()
            assert isinstance(ours, np.ndarray) and ours.shape == (n,), where
            assert np.array_equal(ours, theirs, equal_nan=ours.dtype.kind == "f"), where
            if n:
                for j in {0, n - 1}:  # the element accessor is a separate code path in flatc
                    assert same_scalar(ours[j].item(), getattr(obj, acc)(j)), f"{where}[{j}]"
            if e.scalar != "bool" and n:
                assert np.shares_memory(ours, self.buf_bytes), where
                start = t.vector_span(f.name)[0]
                if start % ours.dtype.itemsize:
                    self.stats["unaligned_vectors"] += 1
        elif e.kind == "string":
            assert ours == [getattr(obj, acc)(j).decode("utf-8") for j in range(n)], where
        elif e.kind == "table":
            assert isinstance(ours, TableVector), where
            for j, (mine, theirs) in enumerate(zip(ours, (getattr(obj, acc)(j) for j in range(n)))):
                self.table(mine, theirs)
        elif e.kind == "struct":
            for j in range(n):
                self.struct(ours[j], getattr(obj, acc)(j), schema.structs[e.name], f"{where}[{j}]")
        else:  # pragma: no cover
            raise AssertionError(e.kind)


@needs_corpus
def test_oracle_armnn_corpus():
    """Every field of every table of every .armnn file, against flatc's generated code."""
    assert len(ARMNN_FILES) > 1000
    total: Counter = Counter()
    t0 = time.perf_counter()
    for path in ARMNN_FILES:
        fb = open_corpus(path)
        verify_buffer(fb)
        oracle = Oracle(armnn_generated, fb.buf)
        oracle.table(fb.root(), armnn_generated.SerializedGraph.GetRootAs(fb.buf, 0))
        total += oracle.stats
    assert total["tables"] > 30_000 and total["none_tag_with_payload"] > 0, total
    assert time.perf_counter() - t0 < 60


@needs_corpus
def test_oracle_mps_corpus():
    """Every field of every table of every MPS payload, against flatc's generated code."""
    assert len(MPS_FILES) > 400
    total: Counter = Counter()
    for path in MPS_FILES:
        fb = open_corpus(path)
        assert fb.identifier == "MP00"
        verify_buffer(fb)
        oracle = Oracle(mps_generated, fb.buf)
        oracle.table(fb.root(), mps_generated.MPSGraph.GetRootAs(fb.buf, MPS_BASE))
        total += oracle.stats
    assert total["tables"] > 5_000, total


@needs_corpus
def test_corpus_manifest_agrees():
    """manifest.json was computed with flatc-generated readers: counts and histograms must match."""
    manifest = json.loads((CORPUS / "manifest.json").read_text())["entries"]
    for entry in manifest:
        fb = open_corpus(CORPUS / entry["file"])
        root = fb.root()
        if entry["format"] == "armnn":
            layers = root["layers"]
            assert len(layers) == entry["layers"], entry["file"]
            hist = Counter(layer.union_type("layer").removesuffix("Layer") for layer in layers)
            assert hist == Counter(entry["histogram"]), entry["file"]
            assert (fb.identifier == "ARMN") == entry["has_ARMN_identifier"], entry["file"]
        else:
            nodes, values = root["mps_nodes"], root["mps_values"]
            assert (len(nodes), len(values)) == (entry["nodes"], entry["values"]), entry["file"]
            assert Counter(n.union_type("mpsnode_union") for n in nodes) == Counter(entry["histogram"]), entry["file"]
            for io in entry["inputs"] + entry["outputs"]:
                value = values[io["value_id"]]
                assert value["dims"].tolist() == io["shape"] and value.enum_name("datatype") == io["dtype"]


# ---------------------------------------------------------------------------------------------
# 2. The API

SAMPLE_FILES = [
    ("armnn/perlayer_20.08/conv2d_nchw_k2x3_s1x2_pad1120_bias_f32.armnn", "armnn", 0),
    ("armnn/perlayer_23.08/conv2d_nchw_k2x3_s1x2_pad1120_bias_f32.armnn", "armnn", 0),
    ("mps/models/cnn_fp16.mpsgraph", "mps", MPS_BASE),
]


@needs_corpus
def test_constant_vectors_are_zero_copy_views(tmp_path):
    path = CORPUS / "armnn/perlayer_20.08/conv2d_nchw_k2x3_s1x2_pad1120_bias_f32.armnn"
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        view = memoryview(mm)
        fb = FlatBuffer(view, load_schema("armnn"))
        layer = next(layer["layer"] for layer in fb.root()["layers"] if layer.union_type("layer") == "Convolution2dLayer")
        weights = layer["weights"]
        data = weights["data"]["data"]
        assert weights.union_type("data") in ("IntData", "ByteData") and data.size > 0
        assert np.shares_memory(data, np.frombuffer(view, np.uint8))
        assert not data.flags.writeable and not data.flags.owndata
        start, n = weights["data"].vector_span("data")
        assert data.__array_interface__["data"][0] == np.frombuffer(view, np.uint8)[start:].__array_interface__["data"][0]
        raw = weights["data"].raw_vector("data")
        assert np.shares_memory(raw, data)
        del data, raw, layer, weights, fb, view  # release the exports before the mmap closes
    # bytes and bytearray buffers too
    buf = bytearray(path.read_bytes())
    fb = FlatBuffer(buf, load_schema("armnn"))
    layer = next(layer["layer"] for layer in fb.root()["layers"] if layer.union_type("layer") == "Convolution2dLayer")
    arr = layer["weights"]["data"]["data"]
    assert np.shares_memory(arr, np.frombuffer(buf, np.uint8))


@needs_corpus
def test_unaligned_base_reads_the_same():
    """The same flatbuffer placed at an odd offset: every vector is unaligned, values unchanged."""
    for rel, schema, base in SAMPLE_FILES:
        data = (CORPUS / rel).read_bytes()
        shifted = b"\x55" * 3 + data[base:]
        a = FlatBuffer(data, load_schema(schema), base).root().to_dict()
        b = FlatBuffer(shifted, load_schema(schema), 3).root().to_dict()
        assert repr(a) == repr(b)
        verify_buffer(FlatBuffer(shifted, load_schema(schema), 3))


@needs_corpus
def test_mps_end_bound():
    """`end` bounds reads: an MPS flatbuffer ends where its constant data begins."""
    data = (CORPUS / "mps/models/cnn_fp16.mpsgraph").read_bytes()
    const_offset = struct.unpack_from("<Q", data, 8)[0]
    verify_buffer(FlatBuffer(data, load_schema("mps"), MPS_BASE, end=const_offset))
    with pytest.raises(InvalidInputError):
        verify_buffer(FlatBuffer(data, load_schema("mps"), MPS_BASE, end=MPS_BASE + 64))


@needs_corpus
def test_table_api():
    data = (CORPUS / SAMPLE_FILES[0][0]).read_bytes()
    fb = FlatBuffer(data, load_schema("armnn"))
    assert fb.identifier is None  # Arm NN writes no "ARMN"
    root = fb.root()
    assert root.type_name == "SerializedGraph" and root.path == "SerializedGraph"
    assert root.fields() == ["layers", "inputIds", "outputIds", "featureVersions"]
    layers = root["layers"]
    assert isinstance(layers, TableVector) and len(layers) >= 3
    assert layers[-1].offset == layers[len(layers) - 1].offset
    assert [t.offset for t in layers[1:3]] == [layers[1].offset, layers[2].offset]
    with pytest.raises(IndexError):
        layers[len(layers)]
    with pytest.raises(InvalidInputError, match="out of range"):
        layers[-len(layers) - 1]
    any_layer = layers[0]
    assert any_layer.fields() == ["layer"] and any_layer.has("layer_type") and "layer" in any_layer
    layer = any_layer["layer"]
    assert layer.path == f"SerializedGraph.layers[0].layer<{any_layer.union_type('layer')}>"
    base_layer = layer["base"]["base"] if layer.type_name in ("InputLayer", "OutputLayer") else layer["base"]
    assert base_layer.enum_name("layerType") == any_layer.union_type("layer").removesuffix("Layer")
    slot = base_layer["outputSlots"][0]
    info = slot["tensorInfo"]
    assert info["dimensions"].dtype == np.dtype("<u4")
    assert info.enum_name("dataType") == "Float32"
    assert not info.has("dimensionSpecificity") and info["dimensionSpecificity"] is None
    assert info["dimensionality"] == 1 and not info.has("dimensionality")  # the schema default
    with pytest.raises(KeyError):
        info["nope"]
    with pytest.raises(TypeError):
        info.enum_name("dimensions")
    full, sparse = info.to_dict(), info.to_dict(defaults=False)
    assert set(sparse) < set(full) and full["dimensionality"] == 1 and "dimensionality" not in sparse
    shallow = root.to_dict(max_depth=1)
    assert isinstance(shallow["layers"][0]["layer"]["value"], Table)
    deep = root.to_dict()
    assert deep["layers"][0]["layer"]["type"] == any_layer.union_type("layer")
    assert deep["featureVersions"] == root["featureVersions"].to_dict()
    # input slots carry the struct `connection`
    conn_layer = layers[1]["layer"]["base"]
    conn = conn_layer["inputSlots"][0]["connection"]
    assert set(conn) == {"sourceLayerIndex", "outputSlotIndex"}
    # forcing another root type reads the same bytes differently, still checked
    assert fb.root("FeatureCompatibilityVersions").type_name == "FeatureCompatibilityVersions"
    with pytest.raises(ValueError):
        fb.root("NoSuchTable")


@needs_corpus
def test_none_tagged_constant_is_reachable_with_get_as():
    """Arm NN 20.08 writes QAsymmS8 constants with the ConstTensorData tag NONE: get() says None,
    get_as() reads the payload."""
    found = 0
    for path in ARMNN_FILES:
        if "20.08" not in str(path) or "qs8" not in path.name:
            continue
        fb = open_corpus(path)
        for any_layer in fb.root()["layers"]:
            layer = any_layer["layer"]
            if any_layer.union_type("layer") != "ConstantLayer":
                continue
            tensor = layer["input"]
            if tensor.has("data") and tensor.union_type("data") is None:
                assert tensor["data"] is None
                payload = tensor.get_as("data", "ByteData")
                assert payload.path.endswith(".input.data<ByteData>") and payload["data"].dtype == np.int8
                found += 1
        if found >= 3:
            break
    assert found >= 1


def test_vector_of_unions_and_fixed_arrays():
    """Constructs our three schemas do not use, built by hand."""
    schema = compile_schema(
        """
        struct P { a: byte; b: [short:3]; }
        table A { x: int = 5; }
        table B { s: string; }
        union U { A, Other: B }
        table R { us: [U]; ps: [P]; flags: [bool]; p: P; }
        root_type R;
        """
    )
    b = flatbuffers.Builder(0)
    s = b.CreateString("hi")
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, s, 0)
    tb = b.EndObject()
    b.StartObject(1)
    b.PrependInt32Slot(0, 9, 5)
    ta = b.EndObject()
    b.StartVector(4, 2, 4)
    b.PrependUOffsetTRelative(tb)
    b.PrependUOffsetTRelative(ta)
    values = b.EndVector()
    types = b.CreateByteVector(bytes([1, 2]))
    flags = b.CreateByteVector(bytes([0, 1, 2]))
    b.StartVector(8, 2, 2)
    for a, arr in ((2, (4, 5, 6)), (1, (1, 2, 3))):
        b.Prep(2, 8)
        for v in reversed(arr):
            b.PrependInt16(v)
        b.Pad(1)
        b.PrependInt8(a)
    ps = b.EndVector()
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(0, types, 0)
    b.PrependUOffsetTRelativeSlot(1, values, 0)
    b.PrependUOffsetTRelativeSlot(2, ps, 0)
    b.PrependUOffsetTRelativeSlot(3, flags, 0)
    b.Prep(2, 8)
    for v in (9, 8, 7):
        b.PrependInt16(v)
    b.Pad(1)
    b.PrependInt8(-1)
    b.Slot(4)
    b.Finish(b.EndObject())
    fb = FlatBuffer(bytes(b.Output()), schema)
    verify_buffer(fb)
    r = fb.root()
    us = r["us"]
    assert [u.type_name for u in us] == ["A", "B"] and us[0]["x"] == 9 and us[1]["s"] == "hi"
    assert us[1].path == "R.us[1]<Other>"
    assert r.to_dict()["us"][1] == {"type": "Other", "value": {"s": "hi"}}
    assert r["ps"] == [{"a": 1, "b": [1, 2, 3]}, {"a": 2, "b": [4, 5, 6]}]
    assert r["p"] == {"a": -1, "b": [7, 8, 9]}
    structured = r.raw_vector("ps")
    assert structured["b"].tolist() == [[1, 2, 3], [4, 5, 6]] and structured.dtype.itemsize == 8
    assert r["flags"].tolist() == [False, True, True] and r.raw_vector("flags").tolist() == [0, 1, 2]


def test_python_builder_understated_table_size():
    """flatbuffers' Python Builder de-duplicates vtables without comparing the table size: here the
    InputSlot (a struct at offset 4, 12 bytes) reuses the OutputSlot's vtable (8 bytes). Strict mode
    rejects it with a hint; strict_table_size=False reads what flatc's code reads."""
    G = armnn_generated

    b = flatbuffers.Builder(0)
    info_dims = b.CreateNumpyVector(np.array([1, 2], np.uint32))
    G.TensorInfoStart(b)
    G.TensorInfoAddDimensions(b, info_dims)
    info = G.TensorInfoEnd(b)
    G.OutputSlotStart(b)
    G.OutputSlotAddTensorInfo(b, info)
    out_slot = G.OutputSlotEnd(b)
    G.InputSlotStart(b)
    G.InputSlotAddConnection(b, G.CreateConnection(b, 7, 9))
    in_slot = G.InputSlotEnd(b)
    G.LayerBaseStartInputSlotsVector(b, 1)
    b.PrependUOffsetTRelative(in_slot)
    ins = b.EndVector()
    G.LayerBaseStartOutputSlotsVector(b, 1)
    b.PrependUOffsetTRelative(out_slot)
    outs = b.EndVector()
    G.LayerBaseStart(b)
    G.LayerBaseAddInputSlots(b, ins)
    G.LayerBaseAddOutputSlots(b, outs)
    b.Finish(G.LayerBaseEnd(b))
    data = bytes(b.Output())

    strict = FlatBuffer(data, load_schema("armnn")).root("LayerBase")
    with pytest.raises(InvalidInputError, match="strict_table_size=False"):
        strict["inputSlots"][0]["connection"]
    lenient = FlatBuffer(data, load_schema("armnn"), strict_table_size=False)
    verify_buffer(lenient, "LayerBase")
    slot = lenient.root("LayerBase")["inputSlots"][0]
    assert slot._tsize < 4 + 8 and slot["connection"] == {"sourceLayerIndex": 7, "outputSlotIndex": 9}
    theirs = G.LayerBase.GetRootAs(data, 0).InputSlots(0).Connection()
    assert (theirs.SourceLayerIndex(), theirs.OutputSlotIndex()) == (7, 9)
    # Lenient mode still refuses a field past the end of the buffer.
    buf = bytearray(data)
    struct.pack_into("<H", buf, slot._vt + slot._plans["connection"].voffset, len(data))
    bad = FlatBuffer(bytes(buf), load_schema("armnn"), strict_table_size=False)
    with pytest.raises(InvalidInputError, match="outside the table and the buffer"):
        bad.root("LayerBase")["inputSlots"][0]["connection"]


TOSA_MLIR = """
module {
  func.func @main(%arg0: tensor<1x8x8x3xf32>) -> tensor<1x8x8x4xf32> {
    %w = "tosa.const"() <{values = dense<0.5> : tensor<4x3x3x3xf32>}> : () -> tensor<4x3x3x3xf32>
    %b = "tosa.const"() <{values = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>}> : () -> tensor<4xf32>
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %0 = tosa.conv2d %arg0, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x8x4xf32>
    %1 = tosa.clamp %0 {min_val = 0.0 : f32, max_val = 6.0 : f32} : (tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
    %s = tosa.const_shape {values = dense<[1, 256]> : tensor<2xindex>} : () -> !tosa.shape<2>
    %2 = tosa.reshape %1, %s : (tensor<1x8x8x4xf32>, !tosa.shape<2>) -> tensor<1x256xf32>
    %s2 = tosa.const_shape {values = dense<[1, 8, 8, 4]> : tensor<4xindex>} : () -> !tosa.shape<4>
    %3 = tosa.reshape %2, %s2 : (tensor<1x256xf32>, !tosa.shape<4>) -> tensor<1x8x8x4xf32>
    return %3 : tensor<1x8x8x4xf32>
  }
}
"""


def _tosa_tool(name: str) -> Path | None:
    path = Path(sysconfig.get_paths()["purelib"]) / "bin" / name
    return path if path.exists() else None


@pytest.mark.skipif(_tosa_tool("tosa-opt") is None, reason="tosa-opt (from tosa-tools) is not installed")
def test_oracle_tosa_file_from_tosa_opt(tmp_path):
    """A .tosa written by tosa-opt, read by us and by flatc's generated code."""
    (tmp_path / "g.mlir").write_text(TOSA_MLIR)
    out = tmp_path / "g.tosa"
    subprocess.run(
        [str(_tosa_tool("tosa-opt")), f"--tosa-serialize=tosa-flatbuffer-filename={out}", str(tmp_path / "g.mlir"), "-o", "/dev/null"],
        check=True,
        capture_output=True,
    )
    fb = FlatBuffer(out.read_bytes(), load_schema("tosa"))
    assert fb.identifier == "TOSA"
    verify_buffer(fb)
    oracle = Oracle(tosa_generated, fb.buf)
    oracle.table(fb.root(), tosa_generated.TosaGraph.GetRootAs(fb.buf, 0))
    ops = [op.enum_name("op") for op in fb.root()["regions"][0]["blocks"][0]["operators"]]
    assert ops.count("CONV2D") == 1 and ops.count("CONST_SHAPE") == 2
    assert oracle.stats["tables"] > 20


def synthetic_armnn(n_layers: int, weight_bytes: int) -> bytes:
    """An Arm NN graph of `n_layers` convolutions with `weight_bytes` of IntData weights each,
    written with flatc's generated builder (so with the Python Builder's vtable quirk)."""
    G = armnn_generated
    b = flatbuffers.Builder(1 << 20)
    weights = np.arange(weight_bytes // 4, dtype=np.int32)
    layers = []
    for i in range(n_layers):
        data = b.CreateNumpyVector(weights)
        G.IntDataStart(b)
        G.IntDataAddData(b, data)
        int_data = G.IntDataEnd(b)
        dims = b.CreateNumpyVector(np.array([weights.size, 1, 1, 1], np.uint32))
        G.TensorInfoStart(b)
        G.TensorInfoAddDimensions(b, dims)
        G.TensorInfoAddDataType(b, G.DataType.Float32)
        info = G.TensorInfoEnd(b)
        G.ConstTensorStart(b)
        G.ConstTensorAddInfo(b, info)
        G.ConstTensorAddDataType(b, G.ConstTensorData.IntData)
        G.ConstTensorAddData(b, int_data)
        tensor = G.ConstTensorEnd(b)
        G.Convolution2dDescriptorStart(b)
        G.Convolution2dDescriptorAddStrideX(b, i % 3 + 1)
        desc = G.Convolution2dDescriptorEnd(b)
        name = b.CreateString(f"conv{i}")
        G.InputSlotStart(b)
        G.InputSlotAddConnection(b, G.CreateConnection(b, max(i - 1, 0), 0))
        slot = G.InputSlotEnd(b)
        G.LayerBaseStartInputSlotsVector(b, 1)
        b.PrependUOffsetTRelative(slot)
        slots = b.EndVector()
        G.LayerBaseStart(b)
        G.LayerBaseAddIndex(b, i)
        G.LayerBaseAddLayerName(b, name)
        G.LayerBaseAddLayerType(b, G.LayerType.Convolution2d)
        G.LayerBaseAddInputSlots(b, slots)
        base = G.LayerBaseEnd(b)
        G.Convolution2dLayerStart(b)
        G.Convolution2dLayerAddBase(b, base)
        G.Convolution2dLayerAddDescriptor(b, desc)
        G.Convolution2dLayerAddWeights(b, tensor)
        conv = G.Convolution2dLayerEnd(b)
        G.AnyLayerStart(b)
        G.AnyLayerAddLayerType(b, G.Layer.Convolution2dLayer)
        G.AnyLayerAddLayer(b, conv)
        layers.append(G.AnyLayerEnd(b))
    G.SerializedGraphStartLayersVector(b, len(layers))
    for layer in reversed(layers):
        b.PrependUOffsetTRelative(layer)
    vec = b.EndVector()
    G.SerializedGraphStart(b)
    G.SerializedGraphAddLayers(b, vec)
    b.Finish(G.SerializedGraphEnd(b))
    return bytes(b.Output())


def test_large_synthetic_file_is_read_quickly_and_without_copies():
    """20 MB, 1,000 layers, 8,001 tables: verification and a full read stay well under a second
    (about 35 ms and 50 ms here; 100 MB / 50,000 tables take 0.17 s and 0.23 s)."""
    data = synthetic_armnn(1000, 20_000)
    assert len(data) > 20_000_000
    fb = FlatBuffer(data, load_schema("armnn"), strict_table_size=False)
    t0 = time.perf_counter()
    verify_buffer(fb)
    layers = fb.root()["layers"]
    total = 0
    for i, any_layer in enumerate(layers):
        conv = any_layer["layer"]
        assert conv["descriptor"]["strideX"] == i % 3 + 1 and conv["base"]["layerName"] == f"conv{i}"
        weights = conv["weights"]["data"]["data"]
        assert np.shares_memory(weights, np.frombuffer(data, np.uint8))
        total += weights.nbytes
    assert time.perf_counter() - t0 < 3
    assert total == 1000 * 20_000
