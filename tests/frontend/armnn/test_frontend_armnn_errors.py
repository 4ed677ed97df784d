"""Corrupt and inconsistent Arm NN files: one InvalidInputError naming the layer (exit 2 and one
line from the CLI), never another exception, whatever the damage."""
from __future__ import annotations

import copy
import json
import random
import subprocess
from pathlib import Path

import pytest

from conftest import CORPUS, flatc_module, run_cli
from nn2tosa.diagnostics import InvalidInputError, UnsupportedError
from nn2tosa.frontend import load
from nn2tosa.schemas.regenerate import find_flatc

gen = flatc_module("armnn")

SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "armnn.fbs"
FLATC = find_flatc()
needs_flatc = pytest.mark.skipif(FLATC is None, reason="flatc not found (it comes with tosa-tools)")
# Files of every generation and origin, small and large.
DAMAGED = [
    "armnn/tflite_23.08/mock_model.armnn",
    "armnn/tflite_20.08/mock_model.armnn",
    "armnn/pyarmnn_20.08/pad_depthwise_batchnorm_tanh_resize_stridedslice_mean_f32.armnn",
    "armnn/perlayer_23.08/lstm_projection_peephole_clip_f32.armnn",
    "armnn/perlayer_20.08/noexec/quantizedlstm_qu8.armnn",
    "armnn/perlayer_23.08/splitter_axis0_2views_f32.armnn",
]


def corpus_file(rel: str) -> Path:
    path = CORPUS / rel
    if not path.exists():
        pytest.skip(f"corpus file {path} not found")
    return path


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    err = proc.stderr.decode()
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("nn2tosa: error: ")
    return lines[0]


# ------------------------------------------------------------------------------ damaged corpus files
def damaged_copies(data: bytes, rng: random.Random, n: int) -> list[bytes]:
    """Truncations, and 4-byte words overwritten with random values, zero or a flipped bit:
    offsets, lengths, union tags and vtable entries all live in such words."""
    copies = [data[: rng.randrange(len(data))] for _ in range(n // 4)]
    for _ in range(n - len(copies)):
        b = bytearray(data)
        pos = rng.randrange(len(b) - 4) & ~3
        kind = rng.randrange(3)
        if kind == 0:
            b[pos : pos + 4] = rng.randrange(2**32).to_bytes(4, "little")
        elif kind == 1:
            b[pos : pos + 4] = bytes(4)
        else:
            b[pos + rng.randrange(4)] ^= 1 << rng.randrange(8)
        copies.append(bytes(b))
    return copies


@pytest.mark.parametrize("rel", DAMAGED)
def test_damaged_files_fail_only_with_input_errors(rel):
    data = corpus_file(rel).read_bytes()
    rng = random.Random(rel)
    failures = 0
    for copy_ in damaged_copies(data, rng, 120):
        try:
            load(copy_, name="damaged.armnn")
        except (InvalidInputError, UnsupportedError) as e:
            assert str(e).startswith("damaged.armnn: ") and "\n" not in str(e)
            failures += 1
    assert failures > 30  # most damage is detected (a changed weight or unused byte is not)


@pytest.mark.parametrize("cut", [0.05, 0.5, 0.999])
def test_truncated_file_is_exit_2_naming_the_file_and_layer(tmp_path, cut):
    data = corpus_file("armnn/tflite_20.08/mock_model.armnn").read_bytes()
    path = tmp_path / "truncated.armnn"
    path.write_bytes(data[: int(len(data) * cut)])
    proc = run_cli("inspect", str(path))
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert str(path) in line and ("outside the buffer" in line or "past the end" in line)


def test_offset_pointing_outside_is_exit_2(tmp_path):
    """The offset of the last layer's table, made to point past the end of the file."""
    data = bytearray(corpus_file("armnn/tflite_23.08/mock_model.armnn").read_bytes())
    root = gen.SerializedGraph.GetRootAs(bytes(data), 0)
    n = root.LayersLength()
    slot = root._tab.Vector(root._tab.Offset(4)) + 4 * (n - 1)  # the uoffset of layers[n-1]
    data[slot : slot + 4] = (len(data) + 64 - slot).to_bytes(4, "little")
    path = tmp_path / "flipped.armnn"
    path.write_bytes(bytes(data))
    proc = run_cli("inspect", "--json", str(path))
    assert proc.returncode == 2 and proc.stdout == b""
    line = one_error_line(proc)
    # the whole-buffer verification that runs first names the layer by its position
    assert f"SerializedGraph.layers[{n - 1}]" in line and "points outside the buffer" in line


# ------------------------------------------------------------------------------ inconsistent files
def io_layer(kind: str, index: int, name: str, binding: int, **slots) -> dict:
    return {"layer_type": f"{kind}Layer", "layer": {"base": {"base": {
        "index": index, "layerName": name, "layerType": kind, **slots}, "layerBindingId": binding}}}


def tensor(dims: list[int], dtype: str = "Float32") -> dict:
    return {"dimensions": dims, "dataType": dtype}


def connection(layer: int, slot: int = 0, index: int = 0) -> dict:
    return {"index": index, "connection": {"sourceLayerIndex": layer, "outputSlotIndex": slot}}


def network() -> dict:
    """input (0) -> relu (1) -> Constant (2) added by add (3) -> output (4)."""
    return {
        "layers": [
            io_layer("Input", 0, "input", 0, outputSlots=[{"index": 0, "tensorInfo": tensor([2])}]),
            {"layer_type": "ActivationLayer", "layer": {
                "base": {"index": 1, "layerName": "relu", "layerType": "Activation", "inputSlots": [connection(0)],
                         "outputSlots": [{"index": 0, "tensorInfo": tensor([2])}]},
                "descriptor": {"activationFunction": "ReLu"}}},
            {"layer_type": "ConstantLayer", "layer": {
                "base": {"index": 2, "layerName": "two", "layerType": "Constant",
                         "outputSlots": [{"index": 0, "tensorInfo": tensor([2])}]},
                "input": {"info": tensor([2]), "data_type": "IntData", "data": {"data": [1073741824, 1073741824]}}}},
            {"layer_type": "ElementwiseBinaryLayer", "layer": {
                "base": {"index": 3, "layerName": "add", "layerType": "ElementwiseBinary",
                         "inputSlots": [connection(1), connection(2, index=1)],
                         "outputSlots": [{"index": 0, "tensorInfo": tensor([2])}]},
                "descriptor": {"operation": "Add"}}},
            io_layer("Output", 4, "output", 0, inputSlots=[connection(3)]),
        ],
        "inputIds": [0],
        "outputIds": [0],
        "featureVersions": {"bindingIdsScheme": 1, "weightsLayoutScheme": 1, "constantTensorsAsInputs": 1},
    }


def build(doc: dict, tmp: Path, name: str = "net") -> bytes:
    src = tmp / f"{name}.json"
    src.write_text(json.dumps(doc))
    proc = subprocess.run([FLATC, "--no-warnings", "-b", "-o", str(tmp), str(SCHEMA), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return (tmp / f"{name}.armnn").read_bytes()


def load_error(data: bytes) -> str:
    with pytest.raises(InvalidInputError) as e:
        load(data, name="net.armnn")
    return str(e.value)


def layer(doc: dict, index: int) -> dict:
    return doc["layers"][index]["layer"]


def base(doc: dict, index: int) -> dict:
    b = layer(doc, index)["base"]
    return b.get("base", b)


@needs_flatc
def test_the_network_the_edits_start_from_is_valid(tmp_path):
    (g,) = load(build(network(), tmp_path))
    assert [g.op(n) for n in g.topological()] == ["graph.input", "armnn.Activation", "armnn.Constant", "armnn.ElementwiseBinary"]


def edit_connection_to_missing_layer(doc):
    base(doc, 3)["inputSlots"][1]["connection"]["sourceLayerIndex"] = 9


def edit_connection_to_missing_slot(doc):
    base(doc, 3)["inputSlots"][0]["connection"]["outputSlotIndex"] = 1


def edit_cycle(doc):
    base(doc, 1)["inputSlots"][0]["connection"]["sourceLayerIndex"] = 3


def edit_data_size(doc):
    layer(doc, 2)["input"]["data"]["data"] = [1073741824]


def edit_duplicate_index(doc):
    base(doc, 2)["index"] = 1


def edit_too_many_inputs(doc):
    base(doc, 1)["inputSlots"].append(connection(2, index=1))


def edit_unconnected_output(doc):
    del base(doc, 4)["inputSlots"]


def edit_output_ids(doc):
    doc["outputIds"] = [5]


def edit_slot_numbering(doc):
    base(doc, 3)["inputSlots"][1]["index"] = 0


INCONSISTENT = {
    edit_connection_to_missing_layer: ("layer 3 'add'", "connected to layer 9, which does not exist"),
    edit_connection_to_missing_slot: ("layer 3 'add'", "output slot 1 of layer 1 'relu', which has 1 output slot"),
    edit_cycle: ("form a cycle", "layer 1 'relu'"),
    edit_data_size: ("layer 2 'two'", "the constant has 4 bytes of data but shape [2] of f32 needs 8"),
    edit_duplicate_index: ("layer 1 'two'", "same index as layer #1 'relu'"),
    edit_too_many_inputs: ("layer 1 'relu'", "expects 1 operands, has 2"),
    edit_unconnected_output: ("layer 4 'output'", "an Output layer has 0 input slots"),
    edit_output_ids: ("graph", "outputIds lists binding id 5, which no Output layer has"),
    edit_slot_numbering: ("layer 3 'add'", "input slot indices are not 0..1"),
}


@needs_flatc
@pytest.mark.parametrize("edit", INCONSISTENT, ids=lambda f: f.__name__.removeprefix("edit_"))
def test_inconsistent_file_names_the_layer_and_the_problem(tmp_path, edit):
    doc = copy.deepcopy(network())
    edit(doc)
    message = load_error(build(doc, tmp_path))
    for part in INCONSISTENT[edit]:
        assert part in message
    assert message.startswith("net.armnn: ")


@needs_flatc
def test_unknown_layer_type_is_named(tmp_path):
    data = bytearray(build(network(), tmp_path))
    any_layer = gen.SerializedGraph.GetRootAs(bytes(data), 0).Layers(1)
    tag_at = any_layer._tab.Pos + any_layer._tab.Offset(4)  # AnyLayer.layer_type, a ubyte
    data[tag_at] = 200
    # caught by the whole-buffer verification, which names the layer by its position
    assert "SerializedGraph.layers[1].layer_type): unknown Layer union type 200" in load_error(bytes(data))


@needs_flatc
def test_ambiguous_and_missing_weights_are_errors(tmp_path):
    doc = network()
    conv = {"layer_type": "Convolution2dLayer", "layer": {
        "base": {"index": 3, "layerName": "conv", "layerType": "Convolution2d",
                 "inputSlots": [connection(1), connection(2, index=1)],
                 "outputSlots": [{"index": 0, "tensorInfo": tensor([1, 1, 1, 2])}]},
        "descriptor": {"biasEnabled": False, "dataLayout": "NHWC", "strideX": 1, "strideY": 1},
        "weights": {"info": tensor([2, 1, 1, 1]), "data_type": "IntData", "data": {"data": [0, 0]}}}}
    doc["layers"][3] = conv
    assert "holds weights in its table and has 2 connected input slots as well" in load_error(build(doc, tmp_path, "both"))
    conv["layer"]["base"]["inputSlots"].pop()
    conv["layer"]["descriptor"]["biasEnabled"] = True
    message = load_error(build(doc, tmp_path, "nobias"))
    assert "layer 3 'conv'" in message and "biasEnabled is True but there are 2 operands" in message


@needs_flatc
def test_inconsistent_file_from_the_command_line_is_one_line(tmp_path):
    doc = network()
    edit_cycle(doc)
    build(doc, tmp_path)
    proc = run_cli("inspect", str(tmp_path / "net.armnn"))
    assert proc.returncode == 2
    assert "the connections form a cycle" in one_error_line(proc)


@needs_flatc
def test_a_70000_character_layer_name_is_cut_in_the_one_line_error(tmp_path):
    doc = network()
    base(doc, 3)["layerName"] = "L" * 70000
    edit_connection_to_missing_layer(doc)
    build(doc, tmp_path)
    proc = run_cli("inspect", str(tmp_path / "net.armnn"))
    line = one_error_line(proc)
    assert proc.returncode == 2 and len(line) < 2000 and "...[7000" in line and "does not exist" in line, line[:300]


# ------------------------------------------------------------------------------ per-axis records Arm NN accepts
def decoded(rel: str, tmp: Path) -> dict:
    """A corpus file as flatc's JSON (the edits below change one record and build it again)."""
    path = corpus_file(rel)
    proc = subprocess.run([FLATC, "--no-warnings", "--json", "--strict-json", "--raw-binary", "-o", str(tmp),
                           str(SCHEMA), "--", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads((tmp / f"{path.stem}.json").read_text())


def per_axis_constants(doc: dict) -> list[dict]:
    """The TensorInfo of every Constant layer quantized per axis."""
    infos = [layer(doc, i)["input"]["info"] for i, l in enumerate(doc["layers"]) if l["layer_type"] == "ConstantLayer"]
    return [info for info in infos if len(info.get("quantizationScales", [])) > 1]


@needs_flatc
def test_depthwise_bias_carrying_its_weights_axis_reads_as_arm_nn_reads_it(tmp_path):
    """23.08 files from TFLite Micro models give a depthwise convolution's rank-1 bias the weights'
    quantization dimension 3; Arm NN reads it (its only axis holds the scales), and so do we."""
    doc = decoded("armnn/litert_23.08/q8_depthwise_m2_stride2.armnn", tmp_path)
    (bias,) = [info for info in per_axis_constants(doc) if len(info["dimensions"]) == 1]
    bias["quantizationDim"] = 3
    (graph,) = load(build(doc, tmp_path), name="net.armnn")
    quants = [t.quant for n in graph.nodes() for t in graph.types(n) if t.rank == 1 and t.quant is not None]
    assert [q.axis for q in quants] == [0] and len(quants[0].scales) == 8


@needs_flatc
def test_per_axis_scales_that_fit_no_axis_are_refused_as_arm_nn_refuses_them(tmp_path):
    doc = decoded("armnn/litert_23.08/q8_depthwise_m2_stride2.armnn", tmp_path)
    (weights,) = [info for info in per_axis_constants(doc) if len(info["dimensions"]) == 4]
    weights["quantizationScales"] = weights["quantizationScales"][:5]
    assert "5 quantization scales for axis 3 of size 8" in load_error(build(doc, tmp_path))
