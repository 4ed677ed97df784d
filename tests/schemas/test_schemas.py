"""The schema model loaded from flatc's binary schemas (nn2tosa.schemas.bfbs), the packaged schemas and
the committed generated files (Python code and .bfbs).

The flatc-generated Python code for each schema is the independent oracle: enum values, union member values, vtable
slots (the `Offset(n)` each accessor reads), defaults and struct layouts must match what flatc computed.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
import types
from pathlib import Path

import flatbuffers
import pytest

from conftest import compile_schema, flatc_module
from nn2tosa.schemas import COMMITTED_CODE, SCHEMA_NAMES, SchemaError, load_schema, schema_text
from nn2tosa import schemas
from nn2tosa.schemas import regenerate
from nn2tosa.schemas.bfbs import load_bfbs
from nn2tosa.schemas.flatread import FlatBuffer

FLATC = regenerate.find_flatc()


def _flatc_ok() -> str | None:
    """Why flatc-based tests cannot run, or None when they can."""
    if FLATC is None:
        return "flatc not found (it comes with tosa-tools: site-packages/bin/flatc)"
    version = regenerate.flatc_version(FLATC)
    if version != regenerate.FLATC_VERSION:
        return f"flatc is {version}, the committed code comes from {regenerate.FLATC_VERSION}"
    return None


needs_flatc = pytest.mark.skipif(_flatc_ok() is not None, reason=str(_flatc_ok()))


def generated(name: str) -> types.ModuleType:
    return flatc_module(name)


def norm(name: str) -> str:
    """flatc's Python accessor for `layer_type` / `layerName` / `_major` is LayerType / LayerName /
    _Major: compare names without case and underscores."""
    return name.replace("_", "").lower()


def generated_classes(mod: types.ModuleType) -> dict[str, type]:
    return {n: c for n, c in vars(mod).items() if isinstance(c, type) and c.__module__ == mod.__name__}


def accessor_voffsets(cls: type) -> dict[str, int]:
    """{normalized field name: vtable offset} read from a generated table class's accessors."""
    out = {}
    for name, fn in vars(cls).items():
        if not inspect.isfunction(fn) or name in ("Init",) or re.search(r"(Length|AsNumpy|IsNone)$", name):
            continue
        m = re.search(r"self\._tab\.Offset\((\d+)\)", inspect.getsource(fn))
        if m:
            out[norm(name)] = int(m.group(1))
    return out


# ---------------------------------------------------------------------------------------------
# The packaged schemas


def test_load_schema_is_cached_and_named():
    for name in SCHEMA_NAMES:
        assert load_schema(name) is load_schema(name)
    with pytest.raises(ValueError, match="unknown schema"):
        load_schema("tflite")


def test_model_cache(tmp_path):
    """load_schema keeps the model it builds from a .bfbs pickled in __pycache__, as Python keeps
    bytecode: same model, not rebuilt while current, rebuilt when stale, built where it cannot be kept."""
    packaged = Path(schemas.__file__).parent
    path = tmp_path / "mps.bfbs"
    path.write_bytes((packaged / "mps.bfbs").read_bytes())
    cache = tmp_path / "__pycache__" / f"mps.bfbs.{sys.implementation.cache_tag}.pickle"
    built = schemas._load_cached(path)
    assert cache.is_file() and repr(built) == repr(load_bfbs(path.read_bytes()))
    again = schemas._load_cached(path)
    assert again is not built and repr(again) == repr(built)
    path.write_bytes((packaged / "tosa_0_100.bfbs").read_bytes())  # the cache is now stale
    assert schemas._load_cached(path).root_type == "TosaGraph"
    cache.write_bytes(b"garbage")
    assert schemas._load_cached(path).root_type == "TosaGraph"
    other = tmp_path / "sub" / "pte.bfbs"
    other.parent.mkdir()
    other.write_bytes((packaged / "pte.bfbs").read_bytes())
    (other.parent / "__pycache__").write_bytes(b"")  # a file where the folder would go: no cache
    assert schemas._load_cached(other).root_type == "Program"
    assert sorted(p.name for p in other.parent.iterdir()) == ["__pycache__", "pte.bfbs"]


def test_packaged_schemas_name_their_source():
    for name in SCHEMA_NAMES:
        first = schema_text(name).splitlines()[0]
        assert first.startswith(("// Copied verbatim from ", "// Written for nn2tosa from ")), first


def test_schema_headers():
    armnn, mps, tosa, tosa_0_100, pte = (load_schema(n) for n in ("armnn", "mps", "tosa", "tosa_0_100", "pte"))
    assert (armnn.namespace, armnn.file_identifier, armnn.root_type) == ("armnnSerializer", "ARMN", "SerializedGraph")
    assert (mps.namespace, mps.file_identifier, mps.root_type) == ("mpsgraph", "MP00", "MPSGraph")
    assert (tosa.namespace, tosa.file_identifier, tosa.root_type) == ("tosa", "TOSA", "TosaGraph")
    assert (tosa_0_100.namespace, tosa_0_100.file_identifier, tosa_0_100.root_type) == ("tosa", "TOSA", "TosaGraph")
    assert (pte.namespace, pte.file_identifier, pte.root_type) == ("executorch_flatbuffer", "ET12", "Program")


def test_armnn_counts():
    s = load_schema("armnn")
    # Counted in ArmnnSchema_latest_reconstructed.fbs: ScatterNd (LayerType 72) is the last of each.
    layer = s.unions["Layer"]
    assert len(layer.members) == 73
    assert len(s.enums["LayerType"].values) == 73
    assert s.enums["LayerType"].underlying == "uint"
    assert layer.members[0].name == "ActivationLayer" and layer.members[0].value == 1
    assert layer.by_name["ScatterNdLayer"].value == 73
    assert s.enums["LayerType"].values["ScatterNd"] == 72
    # The union value is a position, not the LayerType: Convolution2d is LayerType 7, union value 6.
    assert s.enums["LayerType"].values["Convolution2d"] == 7 and layer.by_name["Convolution2dLayer"].value == 6
    assert [m.name for m in s.unions["ConstTensorData"].members] == ["ByteData", "ShortData", "IntData", "LongData"]
    assert s.enums["ActivationFunction"].values["Gelu"] == 12
    assert s.enums["BinaryOperation"].values["FloorDiv"] == 8


def test_armnn_tables_and_defaults():
    s = load_schema("armnn")
    conv = s.tables["Convolution2dDescriptor"]
    assert [f.name for f in conv.fields][:3] == ["padLeft", "padRight", "padTop"]
    assert conv.by_name["dilationX"].default == 1
    assert conv.by_name["dataLayout"].default == s.enums["DataLayout"].values["NCHW"] == 1
    assert s.tables["TensorInfo"].by_name["quantizationScale"].default == 1.0
    assert s.tables["L2NormalizationDescriptor"].by_name["eps"].default == 1e-12
    assert s.tables["FullyConnectedDescriptor"].by_name["constantWeights"].default is True
    any_layer = s.tables["AnyLayer"]
    assert [(f.name, f.slot, f.hidden) for f in any_layer.fields] == [("layer_type", 0, True), ("layer", 1, False)]
    assert s.tables["AbsLayer"].doc.startswith("@deprecated")
    assert s.structs["Connection"].size == 8


def test_mps_counts():
    s = load_schema("mps")
    union = s.unions["MPSNodeUnion"]
    assert len(union.members) == 90  # "87 of the 90 union members" (corpus README)
    relu = union.by_name["MPSReLU"]
    assert (relu.table, relu.value) == ("_MPSNode2x1", 2)  # an aliased member
    assert union.by_name["MPSDequantizePerChannelGroup"].value == 90
    assert len(s.enums["MPSDataType"].values) == 18 and s.enums["MPSDataType"].underlying == "short"
    assert s.enums["OpType"].values == {"mps_graph": 0, "metal_kernel": 1}
    assert s.tables["MPSTensor"].by_name["constant_buffer_size"].type.scalar == "ulong"


def test_tosa_counts_and_op_attribute_order():
    s = load_schema("tosa")
    op = s.enums["Op"]
    attr = s.unions["Attribute"]
    assert len(op.values) == 101 and len(attr.members) == 100
    assert (op.values["CONST"], op.values["CONST_SHAPE"], op.values["MATMUL_T"]) == (67, 75, 100)
    # "Every op must have an attribute in union Attribute and order must match": the TOSA writer
    # relies on Op value == Attribute union value.
    for m in attr.members:
        assert norm(op.names[m.value]) == norm(m.name[: -len("Attribute")]), m
    assert s.tables["TosaGraph"].by_name["version"].required
    assert s.tables["Version"].by_name["_draft"].default is True
    assert s.tables["Version"].by_name["_major"].default == -1
    assert s.tables["TosaTensor"].by_name["data"].attributes == {"force_align": 8}


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_enums_and_unions_match_generated_code(name):
    s = load_schema(name)
    classes = generated_classes(generated(name))
    for e in s.enums.values():
        consts = {k: v for k, v in vars(classes[e.name]).items() if not k.startswith("_")}
        assert consts == e.values, e.name
    for u in s.unions.values():
        consts = {k: v for k, v in vars(classes[u.name]).items() if not k.startswith("_")}
        assert consts == {"NONE": 0, **{m.name: m.value for m in u.members}}, u.name


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_table_slots_match_generated_code(name):
    s = load_schema(name)
    classes = generated_classes(generated(name))
    checked = 0
    for t in s.tables.values():
        expected = {norm(f.name): f.voffset for f in t.fields}
        assert accessor_voffsets(classes[t.name]) == expected, t.name
        checked += len(expected)
    assert checked > (20 if name == "pte" else 80)  # tosa_0_100 has 88 fields, .pte's subset 25


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_defaults_match_generated_code(name):
    """An empty table reads every field's default, through flatc's code and through ours."""
    s = load_schema(name)
    classes = generated_classes(generated(name))
    for t in s.tables.values():
        b = flatbuffers.Builder(64)
        b.StartObject(0)
        b.Finish(b.EndObject())
        buf = bytes(b.Output())
        obj = classes[t.name].GetRootAs(buf, 0)
        ours = FlatBuffer(buf, s).root(t.name)
        for f in t.fields:
            if f.type.kind not in ("scalar", "enum", "union_type"):
                assert ours.get(f.name) is None
                continue
            theirs = getattr(obj, _method(classes[t.name], f.name))()
            assert ours.get(f.name) == theirs and type(ours.get(f.name)) is type(theirs), (t.name, f.name)


def _method(cls: type, field: str) -> str:
    for name in vars(cls):
        if norm(name) == norm(field):
            return name
    raise KeyError(field)


def test_struct_layout_matches_generated_code():
    s = load_schema("armnn")
    gen = generated("armnn").Connection
    conn = s.structs["Connection"]
    assert conn.size == gen.SizeOf() == 8
    assert [(f.name, f.offset) for f in conn.fields] == [("sourceLayerIndex", 0), ("outputSlotIndex", 4)]


@needs_flatc
@pytest.mark.parametrize(
    "make, name",
    [(regenerate.generate, n) for n in COMMITTED_CODE] + [(regenerate.compile_binary, n) for n in SCHEMA_NAMES],
)
def test_committed_flatc_output_is_current(make, name, tmp_path):
    """Each committed *_generated.py and *.bfbs is what flatc makes of its schema now."""
    made = make(FLATC, tmp_path, (name,))[name]
    committed = Path(regenerate.__file__).parent / made.name
    assert made.read_bytes() == committed.read_bytes(), "run python -m nn2tosa.schemas.regenerate"


@needs_flatc
def test_regenerate_check_cli():
    r = subprocess.run([sys.executable, "-m", "nn2tosa.schemas.regenerate", "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


# ---------------------------------------------------------------------------------------------
# The loader on synthetic schemas (compiled by flatc)


LAYOUT_SCHEMA = """
// Layout cases: padding before a wider member, nested structs, trailing padding, force_align, arrays.
namespace t;
struct A { a: byte; b: int; c: short; }
struct B { x: A; y: double; z: byte; }
struct C (force_align: 16) { p: ubyte; q: B; }
struct D { arr: [short:3]; e: long; f: [A:2]; g: bool; }
struct F { h: ubyte; i: ushort; j: ubyte; }
table T { a: A; b: B; c: C; d: D; f: F; }
root_type T;
"""

EXPECTED_LAYOUT = {
    "A": (12, 4, {"a": 0, "b": 4, "c": 8}),
    "B": (32, 8, {"x": 0, "y": 16, "z": 24}),
    "C": (48, 16, {"p": 0, "q": 8}),
    "D": (48, 8, {"arr": 0, "e": 8, "f": 16, "g": 40}),
    "F": (6, 2, {"h": 0, "i": 2, "j": 4}),
}


def test_struct_layout_rules():
    s = compile_schema(LAYOUT_SCHEMA)
    for name, (size, align, offsets) in EXPECTED_LAYOUT.items():
        sd = s.structs[name]
        assert (sd.size, sd.alignment, {f.name: f.offset for f in sd.fields}) == (size, align, offsets), name


@needs_flatc
def test_struct_layout_matches_flatc(tmp_path):
    """flatc's own layout of the same structs: SizeOf() and the offset each accessor adds."""
    (tmp_path / "layout.fbs").write_text(LAYOUT_SCHEMA)
    subprocess.run([FLATC, "--python", "--gen-onefile", "-o", str(tmp_path), str(tmp_path / "layout.fbs")], check=True)
    spec = importlib.util.spec_from_file_location("layout_generated", tmp_path / "layout_generated.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    s = compile_schema(LAYOUT_SCHEMA)
    for name in EXPECTED_LAYOUT:
        cls = getattr(mod, name)
        assert cls.SizeOf() == s.structs[name].size, name
        for f in s.structs[name].fields:
            src = inspect.getsource(getattr(cls, _method(cls, f.name)))
            m = re.search(r"py_type\((\d+)|Pos \+ (\d+)", src)
            assert int(m.group(1) or m.group(2)) == f.offset, (name, f.name)


FEATURES_SCHEMA = """
/* A block comment
   spanning lines */
include "other.fbs";
native_include "unused.h";
attribute "priority";
attribute "my_attr";
namespace Deep.Name.Space;

/// An enum with implicit, explicit and negative values.
enum E : int16 { X = -1, Y, Z = 10, W }  // trailing comment
enum Flags : ubyte (bit_flags) { A, B, C = 7 }
union U { T1, Alias: T2, T3 = 9 }

table T1 { a: int = 0x10; }
table T2 { s: string (required); }
/// Doc for T3.
table T3 {
  /// Field docs.
  x: float = -inf;
  y: double = nan;
  old: uint (deprecated);
  z: E = Z (priority: 3, my_attr: "x");
  u: U;
  e: Deep.Name.Space.E = Y;
  v: [U];
  o: int = null;
  b: bool = true;
  n: [Other.Ns.Other];
  f: float32 = 2;
}
table WithIds { c: int (id: 3); u: U (id: 2); a: string (id: 0); }
root_type Deep.Name.Space.T3;
file_identifier "FEAT";
file_extension "feat";
"""

OTHER_SCHEMA = """
namespace Other.Ns;
table Other { k: long = -5; }
root_type Other;
file_identifier "OTHR";
"""


def test_loader_features():
    s = compile_schema(FEATURES_SCHEMA, (("other.fbs", OTHER_SCHEMA),))
    assert (s.namespace, s.root_type, s.file_identifier, s.file_extension) == ("Deep.Name.Space", "T3", "FEAT", "feat")
    assert s.tables["Other"].by_name["k"].default == -5 and s.tables["Other"].namespace == "Other.Ns"
    assert s.enums["E"].values == {"X": -1, "Y": 0, "Z": 10, "W": 11} and s.enums["E"].underlying == "short"
    assert s.enums["E"].doc == "An enum with implicit, explicit and negative values."
    assert s.enums["Flags"].values == {"A": 1, "B": 2, "C": 128}
    assert [(m.name, m.table, m.value) for m in s.unions["U"].members] == [("T1", "T1", 1), ("Alias", "T2", 2), ("T3", "T3", 9)]
    assert s.tables["T1"].by_name["a"].default == 16
    assert s.tables["T2"].by_name["s"].required
    t3 = s.tables["T3"]
    assert t3.doc == "Doc for T3." and t3.by_name["x"].doc == "Field docs."
    layout = [(f.name, f.slot, str(f.type), f.hidden) for f in t3.fields]
    assert layout == [
        ("x", 0, "float", False),
        ("y", 1, "double", False),
        ("old", 2, "uint", False),  # deprecated fields keep their slot
        ("z", 3, "E", False),
        ("u_type", 4, "U(type)", True),  # a union takes the slot before its value for its tag
        ("u", 5, "U", False),
        ("e", 6, "E", False),
        ("v_type", 7, "[U(type)]", True),
        ("v", 8, "[U]", False),
        ("o", 9, "int", False),
        ("b", 10, "bool", False),
        ("n", 11, "[Other]", False),
        ("f", 12, "float", False),
    ]
    assert t3.by_name["old"].deprecated
    assert t3.by_name["x"].default == float("-inf") and t3.by_name["y"].default != t3.by_name["y"].default
    assert t3.by_name["z"].default == 10 and t3.by_name["z"].attributes == {"priority": 3, "my_attr": "x"}
    assert t3.by_name["e"].default == 0 and t3.by_name["o"].default is None and t3.by_name["b"].default is True
    assert t3.by_name["f"].default == 2.0 and isinstance(t3.by_name["f"].default, float)
    assert [f.name for f in t3.visible_fields()][:5] == ["x", "y", "old", "z", "u"]
    with_ids = s.tables["WithIds"]
    assert [(f.name, f.slot) for f in with_ids.fields] == [("a", 0), ("u_type", 1), ("u", 2), ("c", 3)]


def test_loader_refuses_what_is_not_a_binary_schema():
    with pytest.raises(SchemaError, match=r"^x\.bfbs: not a flatc binary schema"):
        load_bfbs(b"\x00" * 16, "x.bfbs")
    with pytest.raises(SchemaError, match="not a flatc binary schema"):
        load_bfbs(schema_text("armnn").encode())


@needs_flatc
def test_loader_refuses_what_the_model_cannot_hold():
    with pytest.raises(SchemaError, match="T declared in more than one namespace"):
        compile_schema("namespace a; table T { x: int; } namespace b; table T { y: a.T; } root_type T;")
    with pytest.raises(SchemaError, match="64-bit vectors"):
        compile_schema("table T { v: [ubyte] (vector64); } root_type T;")


def test_generated_modules_import_under_the_package():
    for name in COMMITTED_CODE:
        mod = importlib.import_module(f"nn2tosa.schemas.{name}_generated")
        root = load_schema(name).root_type if name in SCHEMA_NAMES else "Schema"  # reflection.fbs's root
        assert hasattr(getattr(mod, root), "GetRootAs")
    for name in set(SCHEMA_NAMES) - set(COMMITTED_CODE):  # made for the tests only, never shipped
        assert not (Path(regenerate.__file__).parent / f"{name}_generated.py").exists(), name
        assert hasattr(getattr(generated(name), load_schema(name).root_type), "GetRootAs")


def test_tosa_schema_is_the_installed_one():
    """schemas/tosa.fbs (after its provenance line) is the schema the installed tosa-tools wheel ships."""
    import sysconfig

    installed = Path(sysconfig.get_paths()["purelib"]) / "bin" / "tosa.fbs"
    if not installed.is_file():
        pytest.skip("tosa-tools is not installed (it ships site-packages/bin/tosa.fbs)")
    assert schema_text("tosa").split("\n", 1)[1] == installed.read_text()
