"""The Arm NN frontend against the corpus: its manifest, Arm NN CpuRef's outputs, and flatc's
generated code (tests/conftest.py flatc_module) as an independent reader of the same bytes."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import CORPUS, corpus_manifest, flatc_module, requires_corpus
from nn2tosa.frontend import load
from nn2tosa.frontend.armnn import layer_histogram
from nn2tosa.frontend.armnn.catalogue import layer_kinds
from nn2tosa.ir import INPUT_OP, Graph, verify
from nn2tosa.ir.registry import ops_of
from nn2tosa.ir.text import parse_ir, print_ir
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.regenerate import find_flatc

gen = flatc_module("armnn")

ARMNN = [e for e in corpus_manifest() if e["format"] == "armnn"]
ELEMENT_TYPES = {
    "Float32": "f32", "Float16": "f16", "QAsymmU8": "ui8", "QAsymmS8": "i8", "QSymmS8": "i8",
    "QSymmS16": "i16", "Signed32": "i32", "Signed64": "i64", "Boolean": "i1",
}
SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "armnn.fbs"
FLATC = find_flatc()
needs_flatc = pytest.mark.skipif(FLATC is None, reason="flatc not found (it comes with tosa-tools)")


def corpus_files(pattern: str) -> list[Path]:
    return sorted(CORPUS.glob(pattern)) if CORPUS.is_dir() else []


def ops(g: Graph, name: str) -> list[int]:
    return [n for n in g.nodes() if g.op(n) == f"armnn.{name}"]


def constant(g: Graph, node: int, operand: int) -> np.ndarray:
    producer = g.operand(node, operand).node
    assert g.op(producer) == "armnn.Constant"
    return g.attrs(producer)["value"]


def io_spec(name: str, t) -> dict:
    spec = {"name": name, "shape": list(t.shape), "dtype": t.dtype}
    if t.quant is not None:
        spec["quant"] = {"scale": t.quant.scale, "zero_point": t.quant.zero_point}
    return spec


def manifest_spec(t: dict) -> dict:
    spec = {"name": t["name"], "shape": t["shape"], "dtype": ELEMENT_TYPES[t["dtype"]]}
    if "quant" in t:
        spec["quant"] = t["quant"]
    return spec


# ------------------------------------------------------------------------------ the manifest
@requires_corpus
@pytest.mark.parametrize("entry", ARMNN, ids=[e["file"] for e in ARMNN])
def test_corpus_file_reads_as_the_manifest_says(entry):
    (g,) = load(CORPUS / entry["file"])
    verify(g)
    assert layer_histogram(g) == dict(sorted(entry["histogram"].items()))
    assert [io_spec(g.input_name(n), g.types(n)[0]) for n in g.inputs] == [manifest_spec(t) for t in entry["inputs"]]
    assert [io_spec(o.name, g.type_of(o.value)) for o in g.outputs] == [manifest_spec(t) for t in entry["outputs"]]
    assert [g.attrs(n)["binding_id"] for n in g.inputs] == [t["binding_id"] for t in entry["inputs"]]
    assert g.meta["outputBindingIds"] == [t["binding_id"] for t in entry["outputs"]]


@requires_corpus
def test_corpus_covers_most_layer_types_and_the_rest_have_lit_tests():
    """66 of the 73 layer types occur in the corpus; the 7 legacy ones only in lit tests."""
    seen = {name for e in ARMNN for name in e["histogram"]}
    legacy = {"Abs", "Equal", "Greater", "Merger", "ResizeBilinear", "Rsqrt", "ScatterNd"}
    assert seen | legacy == {k.name for k in layer_kinds().values()}
    lit = Path(__file__).resolve().parents[3] / "lit_tests" / "frontend" / "armnn"
    text = "\n".join(p.read_text() for p in lit.glob("*.json"))
    assert all(f'"{name}Layer"' in text for name in legacy)


# ------------------------------------------------------------------------------ weights
def depthwise_reference(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, a: dict) -> np.ndarray:
    """Depthwise convolution with weights [1, H, W, I*M], output channel c reading input c // M."""
    nchw = a["dataLayout"] == "NCHW"
    x = x.transpose(0, 2, 3, 1) if nchw else x
    n, h, wd, c_in = x.shape
    _, kh, kw, c_out = w.shape
    m = c_out // c_in
    xp = np.pad(x.astype(np.float64), ((0, 0), (a["padTop"], a["padBottom"]), (a["padLeft"], a["padRight"]), (0, 0)))
    sy, sx, dy, dx = a["strideY"], a["strideX"], a["dilationY"], a["dilationX"]
    oh = (xp.shape[1] - dy * (kh - 1) - 1) // sy + 1
    ow = (xp.shape[2] - dx * (kw - 1) - 1) // sx + 1
    out = np.zeros((n, oh, ow, c_out))
    for c in range(c_out):
        for i in range(kh):
            for j in range(kw):
                window = xp[:, i * dy : i * dy + sy * (oh - 1) + 1 : sy, j * dx : j * dx + sx * (ow - 1) + 1 : sx, c // m]
                out[..., c] += w[0, i, j, c] * window
    if b is not None:
        out += b
    return out.transpose(0, 3, 1, 2) if nchw else out


@requires_corpus
@pytest.mark.parametrize("path", corpus_files("armnn/perlayer_*/depthwise*_f32.armnn"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_depthwise_weights_are_1hwim_and_compute_cpurefs_output(path):
    """20.08 files store [M, I, H, W]; both generations must read as [1, H, W, I*M] weights that,
    convolved by the definition, give what Arm NN CpuRef computed from the file."""
    (g,) = load(path)
    (node,) = ops(g, "DepthwiseConvolution2d")
    w = constant(g, node, 1)
    bias = constant(g, node, 2) if len(g.operands(node)) == 3 else None
    x = np.load(str(path).replace(".armnn", ".input0.npy"))
    expected = np.load(str(path).replace(".armnn", ".output0.npy"))
    assert w.shape[0] == 1
    got = depthwise_reference(x, w, bias, g.attrs(node))
    assert np.abs(got - expected).max() <= 1e-5 * max(1.0, np.abs(expected).max())
    assert g.meta["depthwiseLayout"] == ("[M,I,H,W]" if "20.08" in path.parent.name else "[1,H,W,I*M]")


def same_network_pairs() -> list[tuple[Path, Path]]:
    pairs = []
    for old in corpus_files("armnn/perlayer_20.08/**/*.armnn"):
        new = CORPUS / "armnn" / "perlayer_23.08" / old.relative_to(CORPUS / "armnn" / "perlayer_20.08")
        if new.exists():
            pairs.append((old, new))
    return pairs


WEIGHTED = ("Convolution2d", "FullyConnected", "TransposeConvolution2d", "BatchNormalization", "Lstm", "QLstm")


@requires_corpus
def test_both_generations_give_the_same_operands():
    """The generator wrote the same tensors into its 20.08 files (weights in the layer table) and
    23.08 files (weights as Constant layers): the IR must not tell them apart."""
    compared = 0
    for old, new in same_network_pairs():
        (g20,), (g23,) = load(old), load(new)
        assert g20.meta["weights"] in ("inline", "none") and g23.meta["weights"] in ("inputs", "none")
        for name in WEIGHTED:
            for a, b in zip(ops(g20, name), ops(g23, name)):
                assert len(g20.operands(a)) == len(g23.operands(b)), old.name
                assert g20.attrs(a) == g23.attrs(b), old.name
                for k, v in enumerate(g20.operands(a)):
                    if g20.op(v.node) == INPUT_OP:
                        continue
                    va, vb = constant(g20, a, k), constant(g23, b, k)
                    assert g20.type_of(g20.operand(a, k)) == g23.type_of(g23.operand(b, k))
                    np.testing.assert_array_equal(va, vb)
                    compared += 1
    assert compared >= 150


@requires_corpus
def test_lstm_parameters_are_named_constant_operands():
    (g,) = load(CORPUS / "armnn/perlayer_20.08/lstm_peephole_layernorm_f32.armnn")
    (node,) = ops(g, "Lstm")
    names = g.attrs(node)["inputParams"]
    assert len(g.operands(node)) == 3 + len(names)
    assert "cellToForgetWeights" in names and "inputLayerNormWeights" in names and "projectionWeights" not in names
    for k, name in enumerate(names, start=3):
        assert constant(g, node, k).shape == g.type_of(g.operand(node, k)).shape


# ------------------------------------------------------------------------------ flatc's reader as oracle
def accessor(name: str) -> str:
    """flatc's Python accessor for a schema field: padLeft -> PadLeft, m_Multiples -> MMultiples."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def oracle_value(obj, field, schema):
    """A descriptor field read through the generated code, in the IR's attribute form."""
    t = field.type
    get = getattr(obj, accessor(field.name))
    if t.kind == "enum":
        return schema.enums[t.name].names[get()]
    if t.kind == "scalar":
        v = get()
        return float(np.float32(v)) if t.scalar == "float" else v
    if t.kind == "table":
        sub = get()
        tdef = schema.tables[t.name]
        if sub is None:
            return None
        return {f.name: oracle_value(sub, f, schema) for f in tdef.visible_fields()}
    e = t.element
    n = getattr(obj, accessor(field.name) + "Length")()
    if e.kind == "table":
        items = [get(i) for i in range(n)]
        inner = schema.tables[e.name].visible_fields()
        return [oracle_value(item, inner[0], schema) for item in items]
    values = [get(i) for i in range(n)]
    return [bool(v) for v in values] if e.scalar == "bool" else [float(np.float32(v)) if e.scalar == "float" else v for v in values]


def oracle_layers(data: bytes):
    """(union member name, generated layer object) per layer, through flatc's code."""
    graph = gen.SerializedGraph.GetRootAs(data, 0)
    for i in range(graph.LayersLength()):
        any_layer = graph.Layers(i)
        member = {v: k for k, v in vars(gen.Layer).items() if not k.startswith("_")}[any_layer.LayerType()]
        table = any_layer.Layer()
        obj = getattr(gen, member)()
        obj.Init(table.Bytes, table.Pos)
        yield member, obj


def layer_nodes(g: Graph) -> dict[int, int]:
    """LayerBase index -> the op standing for that layer (not the Constants synthesized for it)."""
    out: dict[int, int] = {}
    for n in g.nodes():
        if g.op(n) != INPUT_OP and (g.op(n) != "armnn.Constant" or int(g.loc(n).detail.split()[1]) not in out):
            out[int(g.loc(n).detail.split()[1])] = n
    return out


@requires_corpus
def test_descriptor_attributes_equal_what_flatcs_code_reads():
    schema = load_schema("armnn")
    kinds = {k.table: k for k in layer_kinds().values()}
    checked = 0
    for entry in ARMNN[::3]:  # a third of the corpus holds every layer type and enum value many times
        data = (CORPUS / entry["file"]).read_bytes()
        (g,) = load(data)
        nodes = layer_nodes(g)
        for index, (member, obj) in enumerate(oracle_layers(data)):
            kind = kinds[member]
            if kind.bindable or kind.descriptor is None or obj.Descriptor() is None:
                continue
            attrs = g.attrs(nodes[index])
            for f in schema.tables[kind.descriptor].visible_fields():
                expected = oracle_value(obj.Descriptor(), f, schema)
                if expected is not None:  # an absent nested table reads as its defaults here
                    assert attrs[f.name] == expected, (entry["file"], member, f.name)
            checked += 1
    assert checked > 300


def oracle_payload(data: bytes, tensor) -> bytes:
    """The raw bytes of a ConstTensor's data vector through flatc's code (tag NONE: as ByteData)."""
    payload = tensor.Data()
    raw = gen.ByteData()
    raw.Init(payload.Bytes, payload.Pos)
    element_size = {gen.ConstTensorData.ShortData: 2, gen.ConstTensorData.IntData: 4, gen.ConstTensorData.LongData: 8}
    start = raw._tab.Vector(raw._tab.Offset(4))
    return bytes(data[start : start + raw.DataLength() * element_size.get(tensor.DataType(), 1)])


@requires_corpus
def test_constants_hold_the_files_bytes_whatever_the_union_tag():
    """Every Constant layer and every ConstTensor in a layer table (but [M, I, H, W] depthwise
    weights, converted) reads as exactly the bytes flatc's code finds, including 20.08's int8
    constants whose ConstTensorData tag is NONE."""
    kinds = {k.table: k for k in layer_kinds().values()}
    untagged = compared = 0
    for entry in ARMNN:
        data = (CORPUS / entry["file"]).read_bytes()
        (g,) = load(data)
        nodes = layer_nodes(g)
        for index, (member, obj) in enumerate(oracle_layers(data)):
            kind = kinds[member]
            if kind.bindable:
                continue
            if member == "ConstantLayer":
                tensors = {0: obj.Input()}
                values = {0: g.attrs(nodes[index])["value"]}
            else:
                fields = [c for c in kind.constants if getattr(obj, accessor(c))() is not None]
                first = len(g.operands(nodes[index])) - len(fields)
                tensors = {first + k: getattr(obj, accessor(c))() for k, c in enumerate(fields)}
                values = {k: constant(g, nodes[index], k) for k in tensors}
                if member == "DepthwiseConvolution2dLayer" and "weights" in fields:
                    del tensors[first + fields.index("weights")]
            for k, tensor in tensors.items():
                assert values[k].tobytes() == oracle_payload(data, tensor), (entry["file"], member, k)
                untagged += tensor.DataType() == gen.ConstTensorData.NONE
                compared += 1
    assert compared >= 400 and untagged >= 8  # 10 untagged in the corpus, 2 of them depthwise weights


@requires_corpus
def test_constants_are_read_only_views_of_the_input():
    path = next(iter(corpus_files("armnn/tflite_23.08/tflm_dtln_noise_suppression.armnn")), None)
    if path is None:
        pytest.skip(f"corpus not found at {CORPUS}")
    data = bytearray(path.read_bytes())
    (g,) = load(memoryview(data))
    buffer = np.frombuffer(data, np.uint8)
    values = [g.attrs(n)["value"] for n in ops(g, "Constant")]
    assert values and all(np.shares_memory(v, buffer) for v in values)
    (g,) = load(path)  # memory-mapped: read-only
    assert not any(g.attrs(n)["value"].flags.writeable for n in ops(g, "Constant"))


# ------------------------------------------------------------------------------ generations and binding ids
def flatc(*args: str, cwd: Path) -> None:
    proc = subprocess.run([FLATC, "--no-warnings", *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def rewrite(path: Path, tmp: Path, edit) -> Path:
    """`path` decoded to JSON by flatc, changed by `edit(json)`, encoded again (with the "ARMN" identifier)."""
    flatc("--json", "--strict-json", "--raw-binary", "-o", str(tmp), str(SCHEMA), "--", str(path), cwd=tmp)
    doc = json.loads((tmp / path.with_suffix(".json").name).read_text())
    edit(doc)
    src = tmp / "edited.json"
    src.write_text(json.dumps(doc))
    flatc("-b", "-o", str(tmp), str(SCHEMA), str(src), cwd=tmp)
    return tmp / "edited.armnn"


@requires_corpus
@needs_flatc
def test_files_without_feature_versions_bind_by_layer_index(tmp_path):
    """Before featureVersions, inputIds/outputIds held layer indices; their order is the graph's."""
    path = next(p for p in corpus_files("armnn/perlayer_23.08/*.armnn") if len(load(p)[0].inputs) == 2)
    (original,) = load(path)

    def to_legacy(doc):
        del doc["featureVersions"]
        index = {l["layer"]["base"]["base"]["layerName"]: l["layer"]["base"]["base"].get("index", 0)
                 for l in doc["layers"] if l["layer_type"] in ("InputLayer", "OutputLayer")}
        names = [original.input_name(n) for n in original.inputs]
        doc["inputIds"] = [index[n] for n in reversed(names)]
        doc["outputIds"] = [index[o.name] for o in original.outputs]

    (g,) = load(rewrite(path, tmp_path, to_legacy))
    verify(g)
    assert g.meta["generation"] == "pre-20.08" and g.meta["featureVersions"] is False
    assert [g.input_name(n) for n in g.inputs] == [original.input_name(n) for n in reversed(original.inputs)]
    assert layer_histogram(g) == layer_histogram(original)


@requires_corpus
@needs_flatc
def test_flags_that_disagree_with_the_content_are_overruled(tmp_path):
    """A 20.08 file (inline [M, I, H, W] weights) claiming the 23.08 flags still reads as 20.08 content."""
    path = CORPUS / "armnn/perlayer_20.08/depthwiseconv2d_nhwc_k3s2_asympad_m2_bias_f32.armnn"
    (original,) = load(path)

    def claim_2308(doc):
        doc["featureVersions"] = {"bindingIdsScheme": 1, "weightsLayoutScheme": 1, "constantTensorsAsInputs": 1}

    (g,) = load(rewrite(path, tmp_path, claim_2308))
    assert g.meta["generation"] == "23.08" and g.meta["weights"] == "inline"
    assert g.meta["depthwiseLayout"] == "[M,I,H,W]" and g.meta["flagsMatchContent"] is False
    (a,), (b,) = ops(original, "DepthwiseConvolution2d"), ops(g, "DepthwiseConvolution2d")
    np.testing.assert_array_equal(constant(original, a, 1), constant(g, b, 1))


@needs_flatc
def test_old_layout_weights_on_an_input_slot_are_converted_too(tmp_path):
    """A Constant layer holding [M, I, H, W] weights on a depthwise layer's input slot 1 (the flags
    say 23.08, the shape says otherwise): its tensor is converted and it stays a layer of its own."""
    def tensor(dims, **more):
        return {"dimensions": dims, "dataType": "Float32", **more}

    one, two, three, four = 1065353216, 1073741824, 1077936128, 1082130432  # float32 bits
    doc = {
        "layers": [
            {"layer_type": "InputLayer", "layer": {"base": {"base": {
                "index": 0, "layerName": "x", "outputSlots": [{"index": 0, "tensorInfo": tensor([1, 1, 1, 2])}]}}}},
            {"layer_type": "ConstantLayer", "layer": {
                "base": {"index": 1, "layerName": "w", "outputSlots": [{"index": 0, "tensorInfo": tensor([2, 2, 1, 1])}]},
                "input": {"info": tensor([2, 2, 1, 1]), "data_type": "IntData", "data": {"data": [one, two, three, four]}}}},
            {"layer_type": "DepthwiseConvolution2dLayer", "layer": {
                "base": {"index": 2, "layerName": "dw",
                         "inputSlots": [{"index": 0, "connection": {"sourceLayerIndex": 0, "outputSlotIndex": 0}},
                                        {"index": 1, "connection": {"sourceLayerIndex": 1, "outputSlotIndex": 0}}],
                         "outputSlots": [{"index": 0, "tensorInfo": tensor([1, 1, 1, 4])}]},
                "descriptor": {"strideX": 1, "strideY": 1, "dataLayout": "NHWC"}}},
            {"layer_type": "OutputLayer", "layer": {"base": {"base": {
                "index": 3, "layerName": "y", "inputSlots": [{"index": 0, "connection": {"sourceLayerIndex": 2, "outputSlotIndex": 0}}]}}}},
        ],
        "inputIds": [0], "outputIds": [0],
        "featureVersions": {"bindingIdsScheme": 1, "weightsLayoutScheme": 1, "constantTensorsAsInputs": 1},
    }
    (tmp_path / "dw.json").write_text(json.dumps(doc))
    flatc("-b", "-o", str(tmp_path), str(SCHEMA), str(tmp_path / "dw.json"), cwd=tmp_path)
    (g,) = load(tmp_path / "dw.armnn")
    verify(g)
    (node,) = ops(g, "DepthwiseConvolution2d")
    np.testing.assert_array_equal(constant(g, node, 1), np.array([1, 3, 2, 4], np.float32).reshape(1, 1, 1, 4))
    assert g.loc(g.operand(node, 1).node).name == "w"
    assert layer_histogram(g) == {"Constant": 1, "DepthwiseConvolution2d": 1, "Input": 1, "Output": 1}
    assert g.meta["depthwiseLayout"] == "[M,I,H,W]" and g.meta["flagsMatchContent"] is False


@requires_corpus
def test_meta_reports_the_generation():
    (g20,) = load(CORPUS / "armnn/tflite_20.08/mock_model.armnn")
    (g23,) = load(CORPUS / "armnn/tflite_23.08/mock_model.armnn")
    assert (g20.meta["generation"], g20.meta["weights"], g20.meta["weightsLayoutScheme"]) == ("20.08", "inline", 0)
    assert (g23.meta["generation"], g23.meta["weights"], g23.meta["constantTensorsAsInputs"]) == ("23.08", "inputs", 1)
    assert g20.meta["flagsMatchContent"] and g23.meta["flagsMatchContent"]


@requires_corpus
def test_the_ir_survives_its_text_form():
    """print_ir -> parse_ir gives back every op, type, location and attribute (input binding ids
    live on in meta)."""
    for entry in ARMNN[::7]:
        (g,) = load(CORPUS / entry["file"])
        (h,) = parse_ir(print_ir(g))
        assert h.meta["inputBindingIds"] == g.meta["inputBindingIds"]
        for a, b in zip(g.topological(), h.topological(), strict=True):
            assert (g.op(a), g.types(a)) == (h.op(b), h.types(b)), entry["file"]
            if g.op(a) != INPUT_OP:  # the text form has no locations for function arguments
                assert g.loc(a) == h.loc(b)
            attrs_a = {k: v for k, v in g.attrs(a).items() if k != "binding_id"}
            attrs_b = h.attrs(b)
            assert attrs_a.keys() == attrs_b.keys()
            for k, v in attrs_a.items():
                if isinstance(v, np.ndarray):
                    assert v.dtype == attrs_b[k].dtype and np.array_equal(v, attrs_b[k]), (entry["file"], k)
                else:
                    assert v == attrs_b[k], (entry["file"], k)


# ------------------------------------------------------------------------------ the dialect
def test_every_layer_type_but_input_and_output_is_an_op_with_its_descriptor_fields():
    schema = load_schema("armnn")
    defs = {d.name: d for d in ops_of("armnn")}
    kinds = layer_kinds().values()
    assert len(kinds) == 73 and {f"armnn.{k.name}" for k in kinds if not k.bindable} == set(defs)
    for k in kinds:
        if k.descriptor:
            fields = {f.name for f in schema.tables[k.descriptor].visible_fields()}
            assert fields <= set(defs[k.op].attrs), k.name
    assert defs["armnn.Convolution2d"].attrs["dataLayout"].kind == "str"
    assert defs["armnn.Convolution2d"].attrs["strideX"].kind == "int"
    assert defs["armnn.Pad"].attrs["padValue"].kind == "f32"
    assert defs["armnn.Convolution2d"].operands == (2, 3) and defs["armnn.Lstm"].operands == (3, 24)
    assert defs["armnn.Splitter"].results == (1, None)
