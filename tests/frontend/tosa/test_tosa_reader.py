""".tosa in: the TOSA 1.x reader (nn2tosa.frontend.tosa) on files from three writers.

- our own writer (every graph of test_emit.py): reading and re-writing gives the same bytes;
- `tosa-opt --tosa-serialize` (tosa-tools' MLIR translator) of the same graphs, and
- tosa-tools' `tosa_serializer` (the serialization library's Python bindings), driven op by op from
  the same graphs by `via_tosa_serializer` below:
  re-writing what was read gives a .tosa whose reference-model outputs equal the original file's.
Then: constants (zero-copy views, i4/i48/bool/bf16/fp8 storage), names and order, regions as
graphs (control flow), variables, the CLI, and what is unsupported (1.1 draft content) or not a
layout at all (exit 2 with the version).
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import run_cli
from test_emit import CASES, TOSA_OPT, built, ml_dtypes, our_outputs, run_reference

from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.dialects.tosa import with_distinct_outputs
from nn2tosa.frontend import load
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Value, verify
from nn2tosa.lowering.flatbuffer_0100 import build_flatbuffer_0100
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
from nn2tosa.lowering.mlir_emitter import to_mlir, write_mlir
from nn2tosa.dialects.tosa_target import required_target
from nn2tosa.schemas import load_schema

ts = pytest.importorskip("tosa_serializer", reason="tosa_serializer comes with tosa-tools")
FLATC = Path(sysconfig.get_paths()["purelib"]) / "bin" / "flatc"
SCHEMAS = Path(__file__).resolve().parents[3] / "schemas"
TOSA_SCHEMA = load_schema("tosa")


# ------------------------------------------------------------------------------ other writers
def tosa_opt_serialize(mlir_text: str, tmp_path: Path) -> bytes:
    """tosa-opt's .tosa of a module (keeping input/output names)."""
    source, out = tmp_path / "in.mlir", tmp_path / "out.tosa"
    source.write_text(mlir_text)
    subprocess.run([str(TOSA_OPT), f"--tosa-serialize=tosa-flatbuffer-filename={out} retain-graph-input-output-names",
                    str(source), "-o", os.devnull], check=True, timeout=120, capture_output=True)
    return out.read_bytes()


def flatc_binary(json_text: str, schema: str, tmp_path: Path) -> bytes:
    """flatc's binary of a JSON document under schemas/<schema>.fbs (hand-made files, valid or not)."""
    if not FLATC.exists():
        pytest.skip("flatc comes with tosa-tools")
    source = tmp_path / "doc.json"
    source.write_text(json_text)
    subprocess.run([str(FLATC), "--binary", "-o", str(tmp_path), str(SCHEMAS / f"{schema}.fbs"), str(source)],
                   check=True, capture_output=True, timeout=60)
    return (tmp_path / "doc.tosa").read_bytes()  # both schemas declare file_extension "tosa"


_TS_DTYPES = {"i1": "BOOL", "i4": "INT4", "i8": "INT8", "i16": "INT16", "i32": "INT32", "i48": "INT48",
              "f16": "FP16", "bf16": "BF16", "f32": "FP32", "f8E4M3FN": "FP8E4M3", "f8E5M2": "FP8E5M2"}
_ML_DTYPES = {"bf16": "bfloat16", "f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2"}


def _ts_dtype(element_type: str) -> Any:
    return getattr(ts.DType, _TS_DTYPES[element_type])


def _ts_values(values: np.ndarray, element_type: str) -> np.ndarray:
    """IR storage -> what tosa_serializer takes (ml_dtypes arrays for bf16 and fp8)."""
    if element_type in _ML_DTYPES:
        return values.view(getattr(ml_dtypes, _ML_DTYPES[element_type]))
    return values


def _ts_scalar_bytes(value: float, element_type: str) -> list[int]:
    dtype = getattr(ml_dtypes, _ML_DTYPES[element_type]) if element_type in _ML_DTYPES else \
        {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i16": np.int16, "i32": np.int32}[element_type]
    return list(np.array([value], dtype=dtype).tobytes())


def _ts_attribute(g: Graph, node: int) -> Any:
    """The op's attribute table, built with tosa_serializer's own attribute constructors (arguments
    by the schema's field names)."""
    short = g.op(node).split(".", 1)[1]
    table = "".join(p.capitalize() for p in short.split("_")) + "Attribute"
    table = {"ArgmaxAttribute": "ArgMaxAttribute", "MatmulAttribute": "MatMulAttribute",
             "Fft2dAttribute": "FFT2dAttribute", "Rfft2dAttribute": "RFFT2dAttribute",
             "IntdivAttribute": "IntDivAttribute"}.get(table, table)
    attrs = g.attrs(node)
    input_type = g.type_of(g.operands(node)[0]).dtype if g.operands(node) else ""
    args: dict[str, Any] = {}
    for f in TOSA_SCHEMA.tables[table].fields:
        value = attrs.get(f.name)
        if f.name == "nan_mode":
            value = ts.NanPropagationMode.__members__[value or "PROPAGATE"]
        elif f.name == "local_bound":
            value = bool(value)
        elif f.name == "acc_type":
            value = _ts_dtype(value)
        elif f.name == "rounding_mode":
            value = ts.RoundingMode.__members__[value]
        elif f.name == "mode":
            value = ts.ResizeMode.__members__[{"NEAREST_NEIGHBOR": "NEAREST"}.get(value, value)]
        elif f.name in ("min_val", "max_val"):
            value = _ts_scalar_bytes(value, input_type)
        elif f.name == "implementation_attrs":
            value = list(value.encode())
        args[f.name] = value
    attribute = ts.TosaSerializerAttribute()
    getattr(attribute, table)(**args)
    return attribute


def via_tosa_serializer(graph: Graph) -> bytes:
    """The graph written by tosa-tools' tosa_serializer, an independent writer (its own tensor
    names, no locations, shapes as TosaShapes, unpadded data)."""
    g = with_distinct_outputs(graph)
    ser = ts.TosaSerializer("")
    tensors: dict[Value, Any] = {}
    for n in g.inputs:
        t = g.types(n)[0]
        tensor = ts.TosaSerializerTensor(g.input_name(n), list(t.shape), _ts_dtype(t.dtype))
        ser.addInputTensor(tensor)
        tensors[Value(n, 0)] = tensor
    for node in g.topological():
        op = g.op(node)
        if op == INPUT_OP:
            continue
        values = g.attrs(node).get("values")
        if op == "tosa.const":
            t = g.types(node)[0]
            tensors[Value(node, 0)] = ser.addConst(list(t.shape), _ts_dtype(t.dtype), _ts_values(values, t.dtype),
                                                   name=f"const{node}")
        elif op == "tosa.const_shape":
            tensors[Value(node, 0)] = ser.addConst([values.size], ts.DType.SHAPE, values, name=f"shape{node}")
        else:
            outputs = [ser.addIntermediate(list(t.shape), _ts_dtype(t.dtype)) for t in g.types(node)]
            tensors.update(zip(g.results(node), outputs))
            ser.addOperator(getattr(ts.Op, op.split(".", 1)[1].upper()), [tensors[v].name for v in g.operands(node)],
                            [t.name for t in outputs], _ts_attribute(g, node))
    for out in g.outputs:
        ser.addOutputTensor(tensors[out.value])
    return bytes(ser.serialize())


def read_one(data: bytes) -> Graph:
    graphs = load(data)
    assert len(graphs) == 1
    verify(graphs[0])
    return graphs[0]


def assert_same_outputs(a: list[np.ndarray], b: list[np.ndarray]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        assert x.tobytes() == y.tobytes()  # bit for bit, NaNs included


# ------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("name", CASES)
def test_our_files_read_and_rewrite_byte_identical(name):
    c, data = built(name)
    g = read_one(data)
    assert bytes(build_flatbuffer(g)) == data
    assert g.meta["format"] == "tosa" and g.meta["version"] == "1.0.0" and g.meta["layout"] == "1.x"
    assert [g.input_name(n) for n in g.inputs] == [c.g.input_name(n) for n in c.g.inputs]
    assert [o.name for o in g.outputs] == [o.name for o in c.g.outputs]


@pytest.mark.parametrize("name", CASES)
def test_tosa_opt_files_rewrite_with_equal_outputs(name, tmp_path):
    c, _ = built(name)
    mlir = tmp_path / "g.mlir"
    write_mlir(to_mlir(c.g), mlir)
    theirs = tosa_opt_serialize(mlir.read_text(), tmp_path)
    g = read_one(theirs)
    # tosa-opt stamps the module's tosa.target_env version (1.0) when it has one, else 1.1.0 draft; our
    # MLIR leaves out a target_env with an empty extension list (MLIR cannot parse `[]` back)
    assert g.meta["version"] == ("1.0.0" if required_target(c.g).extensions else "1.1.0 draft")
    assert [o.name for o in g.outputs] == [o.name for o in c.g.outputs]
    ours = bytes(build_flatbuffer(g))
    assert_same_outputs(run_reference(theirs, c.feeds), run_reference(ours, c.feeds))
    assert_same_outputs(list(our_outputs(name)), run_reference(ours, c.feeds))


@pytest.mark.parametrize("name", CASES)
def test_tosa_serializer_files_rewrite_with_equal_outputs(name):
    c, _ = built(name)
    theirs = via_tosa_serializer(c.g)
    g = read_one(theirs)
    assert g.histogram() == with_distinct_outputs(c.g).histogram()
    ours = bytes(build_flatbuffer(g))
    assert_same_outputs(run_reference(theirs, c.feeds), run_reference(ours, c.feeds))
    assert bytes(build_flatbuffer(read_one(ours))) == ours


def test_python_serializer_file_with_understated_table_sizes():
    """The deprecated pure-Python serializer (flatbuffers' Python Builder: shared vtables may
    understate table sizes, schemas/README.md) writes files the reader takes too."""
    ps = pytest.importorskip("serializer.tosa_serializer")
    ser = ps.TosaSerializer("")
    x = ps.TosaSerializerTensor("x", [1, 4, 4, 2], ps.DType.INT8)
    ser.addInputTensor(x)
    w = ser.addConst([3, 1, 1, 2], ps.DType.INT8, np.arange(6, dtype=np.int8).reshape(3, 1, 1, 2), "w")
    b = ser.addConst([3], ps.DType.INT32, np.array([5, -5, 100], np.int32), "b")
    izp = ser.addConst([1], ps.DType.INT8, np.array([-2], np.int8), "izp")
    wzp = ser.addConst([1], ps.DType.INT8, np.array([1], np.int8), "wzp")
    y = ser.addOutput([1, 4, 4, 3], ps.DType.INT32)
    attr = ps.TosaSerializerAttribute()
    attr.Conv2dAttribute([0, 0, 0, 0], [1, 1], [1, 1], False, ps.DType.INT32)
    ser.addOperator(ps.Op.CONV2D, ["x", w.name, b.name, izp.name, wzp.name], [y.name], attr)
    theirs = bytes(ser.serialize())
    g = read_one(theirs)
    assert g.histogram() == {"tosa.const": 4, "tosa.conv2d": 1}
    feed = np.random.default_rng(0).integers(-128, 127, (1, 4, 4, 2), dtype=np.int8)
    expected = ((feed.astype(np.int32) + 2) @ (np.arange(6).reshape(3, 2).T - 1)) + np.array([5, -5, 100])
    ours = bytes(build_flatbuffer(g))
    [out] = run_reference(ours, [feed])
    np.testing.assert_array_equal(out, expected.astype(np.int32))
    assert_same_outputs(run_reference(theirs, [feed]), [out])


# ------------------------------------------------------------------------------ constants
@functools.lru_cache(maxsize=None)
def _storage_case() -> tuple[bytes, dict[str, np.ndarray]]:
    """Constants of every storage kind, written by tosa_serializer, with the IR values they must read as."""
    values = {
        "i4": np.array([-7, 7, -1, 0, 3], np.int8),  # tosa_serializer fails on -8 (see the next test)
        "i48": np.array([(1 << 47) - 1, -(1 << 47), -5, 0], np.int64),
        "i1": np.array([True, False, True]),
        "bf16": np.array([1.5, -2.25, 3e38], dtype=ml_dtypes.bfloat16).view(np.uint16),
        "f8E4M3FN": np.array([448, -0.5, 0.001953125], dtype=ml_dtypes.float8_e4m3fn).view(np.uint8),
        "f8E5M2": np.array([57344, -0.75], dtype=ml_dtypes.float8_e5m2).view(np.uint8),
        "f16": np.array([65504, -1e-3], np.float16),
        "i16": np.array([-32768, 32767], np.int16),
    }
    ser = ts.TosaSerializer("")
    x = ts.TosaSerializerTensor("x", [1], ts.DType.INT32)
    ser.addInputTensor(x)
    y = ser.addIntermediate([1], ts.DType.INT32)
    attr = ts.TosaSerializerAttribute()
    attr.IdentityAttribute()
    ser.addOperator(ts.Op.IDENTITY, ["x"], [y.name], attr)
    ser.addOutputTensor(y)
    for element_type, v in values.items():
        out = ser.addConst([v.size], _ts_dtype(element_type), _ts_values(v, element_type), name=element_type)
        ser.addOutputTensor(out)
    return bytes(ser.serialize()), values


def test_constant_storage_of_every_kind():
    data, values = _storage_case()
    g = read_one(data)
    consts = {g.attrs(o.value.node)["values"].tobytes(): o.name for o in g.outputs[1:]}
    for o in g.outputs[1:]:
        got = g.attrs(o.value.node)["values"]
        want = values[o.name]
        assert g.type_of(o.value).dtype == o.name
        assert got.dtype == want.dtype and got.tolist() == want.tolist(), o.name
    assert len(consts) == len(values)


def test_packed_int4_and_int48_bytes_decode_sign_extended():
    """Hand-packed bytes: i4 element 2i in the low nibble (0x8 = -8), i48 six little-endian bytes."""
    from nn2tosa.frontend.tosa.blocks import decode_data
    from nn2tosa.ir import TensorType

    i4 = decode_data(bytes([0x78, 0xF0, 0x09]), 0, TensorType((5,), "i4"))
    assert i4.tolist() == [-8, 7, 0, -1, -7] and i4.dtype == np.int8
    i48 = decode_data(bytes([0xFF] * 6 + [1, 0, 0, 0, 0, 0x80] + [0xFF] * 5 + [0x7F]), 0, TensorType((3,), "i48"))
    assert i48.tolist() == [-1, -(1 << 47) + 1, (1 << 47) - 1] and i48.dtype == np.int64


def test_bool_bytes_other_than_0_and_1_read_as_true():
    data, _ = _storage_case()
    raw = bytearray(data)
    at = raw.index(bytes([1, 0, 1]))  # the i1 constant's data (no other constant holds these bytes)
    raw[at] = 7
    g = read_one(bytes(raw))
    [bools] = [g.attrs(o.value.node)["values"] for o in g.outputs if o.name == "i1"]
    assert bools.tolist() == [True, False, True] and bools.dtype == np.bool_


def test_constants_are_read_only_views_into_the_input(tmp_path):
    _, data = built("conv2d_f32")
    path = tmp_path / "conv.tosa"
    path.write_bytes(data)

    def biggest_constant(g: Graph) -> np.ndarray:
        return max((g.attrs(n)["values"] for n in g.nodes() if g.op(n) == "tosa.const"), key=lambda a: a.size)

    mapped = biggest_constant(load(path)[0])  # the file is memory-mapped read-only
    assert mapped.size == 4 * 3 * 2 * 3 and not mapped.flags.writeable and not mapped.flags.owndata
    buffer = bytearray(data)
    in_place = biggest_constant(load(memoryview(buffer))[0])
    assert np.shares_memory(in_place, np.frombuffer(buffer, np.uint8))


# ------------------------------------------------------------------------------ graphs, names, control flow
CONTROL_FLOW_MLIR = """
module {
func.func @main(%c: tensor<i1> {tosa.tensor_name = "cond"}, %x: tensor<2xf32> {tosa.tensor_name = "x"},
                %n: tensor<i32> {tosa.tensor_name = "n"}) -> (tensor<2xf32> {tosa.tensor_name = "y"},
                tensor<i32> {tosa.tensor_name = "count"}) {
  %0 = "tosa.cond_if"(%c, %x) ({
  ^bb0(%a: tensor<2xf32>):
    %1 = "tosa.add"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "tosa.yield"(%1) : (tensor<2xf32>) -> ()
  }, {
  ^bb0(%a: tensor<2xf32>):
    %1 = "tosa.sub"(%a, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "tosa.yield"(%1) : (tensor<2xf32>) -> ()
  }) : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32>
  %2 = "tosa.while_loop"(%n) ({
  ^bb0(%i: tensor<i32>):
    %z = "tosa.const"() <{values = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %g = "tosa.greater"(%i, %z) : (tensor<i32>, tensor<i32>) -> tensor<i1>
    "tosa.yield"(%g) : (tensor<i1>) -> ()
  }, {
  ^bb0(%i: tensor<i32>):
    %one = "tosa.const"() <{values = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %d = "tosa.sub"(%i, %one) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    "tosa.yield"(%d) : (tensor<i32>) -> ()
  }) : (tensor<i32>) -> tensor<i32>
  return %0, %2 : tensor<2xf32>, tensor<i32>
}
}
"""


@functools.lru_cache(maxsize=None)
def _control_flow_file() -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return tosa_opt_serialize(CONTROL_FLOW_MLIR, Path(tmp))


def test_regions_become_graphs_named_by_the_control_flow_ops():
    graphs = load(_control_flow_file())
    main = graphs[0]
    assert main.name == "main" and len(graphs) == 5
    by_name = {g.name: g for g in graphs}
    [cond_if] = [n for n in main.nodes() if main.op(n) == "tosa.cond_if"]
    [loop] = [n for n in main.nodes() if main.op(n) == "tosa.while_loop"]
    then_graph = by_name[main.attrs(cond_if)["then_graph"]]
    else_graph = by_name[main.attrs(cond_if)["else_graph"]]
    assert then_graph.histogram() == {"tosa.add": 1} and else_graph.histogram() == {"tosa.sub": 1}
    assert by_name[main.attrs(loop)["cond_graph"]].histogram() == {"tosa.const": 1, "tosa.greater": 1}
    assert by_name[main.attrs(loop)["body_graph"]].histogram() == {"tosa.const": 1, "tosa.sub": 1}
    assert [main.input_name(n) for n in main.inputs] == ["cond", "x", "n"]
    assert [o.name for o in main.outputs] == ["y", "count"]
    for g in graphs:
        verify(g)


def test_control_flow_converts_to_every_output(tmp_path):
    """(The reference-model, nesting and round-trip checks are in test_control_flow_emit.py.)"""
    path = tmp_path / "cf.tosa"
    path.write_bytes(_control_flow_file())
    r = run_cli("inspect", "--json", str(path))
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["ops"]["tosa.cond_if"] == 1
    # the file's inputs and outputs are main's; the branch graphs' block arguments are not among them
    assert [t["name"] for t in info["inputs"]] == ["cond", "x", "n"]
    assert [t["name"] for t in info["outputs"]] == ["y", "count"]
    assert [p.get("branch", False) for p in info["partitions"]] == [False, True, True, True, True]
    outputs = [tmp_path / name for name in ("out.mlir", "out.mlirbc", "out.tosa")]
    r = run_cli("convert", str(path), *[a for out in outputs for a in ("-o", str(out))])
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cf.tosa", "out.mlir", "out.mlirbc", "out.tosa"]
    text = outputs[0].read_text()
    assert text.count('"func.func"') == 1 and text.count('"tosa.yield"') == 4
    assert [g.histogram() for g in load(outputs[2].read_bytes())] == [g.histogram() for g in load(path.read_bytes())]


VARIABLES_MLIR = """
module {
"tosa.variable"() <{sym_name = "state", var_shape = dense<[2]> : tensor<1xindex>, type = f32,
                    initial_value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> ()
func.func @main(%x: tensor<2xf32> {tosa.tensor_name = "x"}) -> (tensor<2xf32> {tosa.tensor_name = "y"}) {
  %0 = "tosa.variable_read"() <{name = "state"}> : () -> tensor<2xf32>
  %1 = "tosa.add"(%0, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "tosa.variable_write"(%1) <{name = "state"}> : (tensor<2xf32>) -> ()
  return %1 : tensor<2xf32>
}
}
"""


def test_variables_as_tosa_opt_writes_them(tmp_path):
    theirs = tosa_opt_serialize(VARIABLES_MLIR, tmp_path)
    g = read_one(theirs)
    assert g.histogram() == {"tosa.add": 1, "tosa.variable": 1, "tosa.variable_read": 1, "tosa.variable_write": 1}
    [decl] = [n for n in g.nodes() if g.op(n) == "tosa.variable"]
    assert g.attrs(decl)["sym_name"] == "state" and g.attrs(decl)["var_shape"] == [2]
    assert g.attrs(decl)["initial_value"].tolist() == [1.0, 2.0]
    ours = bytes(build_flatbuffer(g))
    x = np.array([0.5, -4.0], np.float32)
    [y] = run_reference(ours, [x])
    np.testing.assert_array_equal(y, np.array([1.0, 2.0], np.float32) + x)
    assert_same_outputs(run_reference(theirs, [x]), [y])
    again = read_one(ours)
    assert again.histogram() == g.histogram()
    assert bytes(build_flatbuffer(again)) == ours


# ------------------------------------------------------------------------------ the command line
def test_convert_and_inspect_a_tosa_file(tmp_path):
    c, data = built("rescale_modes")
    source = tmp_path / "in.tosa"
    source.write_bytes(data)
    r = run_cli("convert", str(source), "-o", str(tmp_path / "out.mlir"), "-o", str(tmp_path / "out.mlirbc"),
                "-o", str(tmp_path / "out.tosa"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.tosa").read_bytes() == data
    text = (tmp_path / "out.mlir").read_text()
    assert text.count('"tosa.rescale"') == 4 and 'tosa.tensor_name = "from_u8"' in text
    assert (tmp_path / "out.mlirbc").read_bytes()[:4] == b"ML\xefR"
    r = run_cli("inspect", "--json", str(source))
    info = json.loads(r.stdout)
    assert (info["format"], info["version"], info["layout"]) == ("tosa", "1.0.0", "1.x")
    assert [t["name"] for t in info["inputs"]] == ["acc", "q", "u8"]
    assert info["ops"] == {"tosa.const": 16, "tosa.rescale": 4}


def test_a_version_no_layout_matches_is_exit_2_with_the_version(tmp_path):
    data = flatc_binary('{"version": {"_major": 0, "_minor": 80, "_patch": 1, "_draft": false}, "regions": []}',
                        "tosa", tmp_path)
    path = tmp_path / "old.tosa"
    path.write_bytes(data)
    r = run_cli("inspect", str(path))
    assert r.returncode == 2
    assert "version 0.80.1 matches no layout" in r.stderr.decode()


def test_tosa_1_1_content_is_unsupported_all_at_once(tmp_path):
    doc = {
        "version": {"_major": 1, "_minor": 1, "_patch": 0, "_draft": True},
        "regions": [{"name": "main", "blocks": [{
            "name": "main", "inputs": ["a", "b"], "outputs": ["d", "m"],
            "tensors": [{"name": "a", "shape": [2], "type": "INT64"}, {"name": "b", "shape": [2], "type": "INT64"},
                        {"name": "d", "shape": [2], "type": "INT64"},
                        {"name": "x", "shape": [1, 2, 32], "type": "FP32"},
                        {"name": "m", "shape": [1, 2, 2], "type": "FP32"}],
            "operators": [
                {"op": "ADD", "attribute_type": "AddAttribute", "attribute": {}, "inputs": ["a", "b"], "outputs": ["d"]},
                {"op": "MATMUL_T", "attribute_type": "MatMulTAttribute", "attribute": {}, "inputs": ["x", "x"],
                 "outputs": ["m"]}]}]}],
    }
    with pytest.raises(UnsupportedError) as e:
        load(flatc_binary(json.dumps(doc), "tosa", tmp_path))
    what = [(i.what, i.where.rsplit(" ", 1)[-1]) for i in e.value.items]
    assert what == [("INT64 tensor", "'a'"), ("INT64 tensor", "'b'"), ("INT64 tensor", "'d'"), ("MATMUL_T", "1")]


def test_dynamic_zero_points_are_unsupported(tmp_path):
    """TOSA's dynamic extension feeds zero points as graph inputs; the IR keeps them constant."""
    doc = {
        "version": {"_major": 1, "_minor": 0, "_patch": 0, "_draft": False},
        "regions": [{"name": "main", "blocks": [{
            "name": "main", "inputs": ["x", "zp"], "outputs": ["y"],
            "tensors": [{"name": "x", "shape": [4], "type": "INT8"}, {"name": "zp", "shape": [1], "type": "INT8"},
                        {"name": "y", "shape": [4], "type": "INT8"}],
            "operators": [{"op": "NEGATE", "attribute_type": "NegateAttribute", "attribute": {},
                           "inputs": ["x", "zp", "zp"], "outputs": ["y"]}]}]}],
    }
    with pytest.raises(UnsupportedError, match="input 1 \\('zp'\\) is not a constant"):
        load(flatc_binary(json.dumps(doc), "tosa", tmp_path))


def test_operators_listed_after_their_users_are_created_producers_first(tmp_path):
    """A file need not list operators in dependency order: a 300-op chain listed backwards reads
    (without recursion) and computes what the chain computes."""
    n = 300
    tensors = [{"name": f"t{i}", "shape": [3], "type": "FP32"} for i in range(n + 1)]
    tensors.append({"name": "one", "shape": [3], "type": "FP32", "data": list(np.ones(3, "<f4").view(np.uint8))})
    chain = [{"op": "ADD", "attribute_type": "AddAttribute", "attribute": {}, "inputs": [f"t{i}", "one"],
              "outputs": [f"t{i + 1}"]} for i in range(n)]
    operators = chain[::-1] + [{"op": "CONST", "attribute_type": "ConstAttribute", "attribute": {}, "inputs": [],
                                "outputs": ["one"]}]
    doc = {"version": {"_major": 1, "_minor": 0, "_patch": 0, "_draft": False},
           "regions": [{"name": "main", "blocks": [{"name": "main", "tensors": tensors, "operators": operators,
                                                    "inputs": ["t0"], "outputs": [f"t{n}"]}]}]}
    g = read_one(flatc_binary(json.dumps(doc, default=int), "tosa", tmp_path))
    x = np.array([0.5, -1.0, 2.0], np.float32)
    [y] = run_reference(bytes(build_flatbuffer(g)), [x])
    np.testing.assert_array_equal(y, x + n)


@pytest.mark.parametrize("element_type, values", [
    ("i48", np.array([1 << 47, 0], np.int64)),
    ("i48", np.array([np.iinfo(np.int64).min], np.int64)),
    ("i4", np.array([8], np.int8)),
])
def test_writer_refuses_values_beyond_narrow_types(element_type, values):
    """Writing a value i48 or i4 cannot hold would keep its low bits only: another value in the file."""
    from nn2tosa.tosa_flatbuffer.common import storage_bytes

    with pytest.raises(ValueError, match=f"beyond {element_type}"):
        storage_bytes(values, element_type)
    edge = np.array([-(1 << 47), (1 << 47) - 1], np.int64) if element_type == "i48" else np.array([-8, 7], np.int8)
    assert storage_bytes(edge, element_type).size == (12 if element_type == "i48" else 1)


@pytest.mark.parametrize("write", [build_flatbuffer, build_flatbuffer_0100], ids=["1.0", "0.100"])
def test_custom_implementation_attrs_round_trip_to_the_byte(write):
    """CUSTOM's implementation_attrs is text, not tensor data: written with its own length (data vectors
    are padded to 8 bytes), it reads back without trailing zero bytes, non-ASCII included."""
    text = "héllo ✓"  # 10 UTF-8 bytes: a padded vector would read back with six zeros
    g = Graph()
    x = g.add_input(TensorType((2,), "f32"), "x")
    c = g.add_op("tosa.custom", [x], [TensorType((2,), "f32")],
                 {"operator_name": "f", "domain_name": "d", "implementation_attrs": text})
    g.add_output(Value(c), "y")
    (read,) = load(bytes(write(g)))
    (custom,) = [n for n in read.nodes() if read.op(n) == "tosa.custom"]
    assert read.attrs(custom)["implementation_attrs"] == text
