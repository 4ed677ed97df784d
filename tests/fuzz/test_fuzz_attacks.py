"""Crafted hostile models: small, valid-looking files whose parameters make naive passes blow up.

Each file is written here as JSON and encoded by flatc with nn2tosa's own schemas: a 3000-deep chain
of reshapes, a 2000-way split, shapes of a gigabyte built from one value (expand, fill, pad, tile,
resize), huge pooling windows and paddings, huge strides and block sizes. The command line must
answer each with exit 0, 2 or 3 and at most one line on stderr, without a traceback, without
building the gigabyte (the child's peak RSS, as it reports it: CHILD) and without hanging (a generous
timeout: a hang, not a timing assertion). The output-index test counts reads of graph outputs to show
that lowering a split of N outputs does O(N) work, not O(N^2).
"""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from nn2tosa.schemas import schema_text

FLATC = Path(sysconfig.get_paths()["purelib"]) / "bin" / "flatc"
pytestmark = pytest.mark.skipif(not FLATC.exists(), reason=f"flatc not found at {FLATC} (pip install tosa-tools)")

GIB = 1 << 30
# None of these files may make the converter hold more than this much memory (its baseline with
# MLIR loaded is about 160 MB); each declares at least one tensor of a gigabyte or more.
MAX_RSS_BYTES = 700 << 20
HANG_SECONDS = 300


# ------------------------------------------------------------------------------ building files
def flatc_encode(obj: dict, schema: str) -> bytes:
    """The flatbuffer flatc writes for JSON `obj` with nn2tosa's packaged schema `schema`."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "schema.fbs").write_text(schema_text(schema))
        (d / "in.json").write_text(json.dumps(obj))
        subprocess.run([str(FLATC), "-b", "-o", str(d), str(d / "schema.fbs"), str(d / "in.json")], check=True,
                       capture_output=True)
        (out,) = [p for p in d.iterdir() if p.suffix not in (".fbs", ".json")]
        return out.read_bytes()


def mps_file(nodes: list[dict], values: list[dict], inputs: list[int], outputs: list[int],
             constants: dict[int, bytes] | None = None) -> bytes:
    """An MPS payload: the 24-byte header, the MPSGraph flatbuffer, the constant segment."""
    segment = b""
    for vid, data in (constants or {}).items():
        values[vid] = dict(values[vid], segment_offset=len(segment), constant_buffer_size=len(data))
        segment += data
    graph = {"version": "0", "mps_nodes": nodes, "mps_values": values, "input_ids": inputs, "output_ids": outputs,
             "constant_ids": sorted(constants or {}), "graph_type": "mps_graph"}
    fb = flatc_encode(graph, "mps")
    fb += b"\0" * (-len(fb) % 16)
    return struct.pack("<I4sQQ", 0, b"MP00", 24 + len(fb), len(segment)) + fb + segment


def mps_value(*dims: int, dtype: str = "mps_data_type_float32") -> dict:
    return {"datatype": dtype, "num_dims": len(dims), "dims": list(dims)}


def mps_node(member: str, **table) -> dict:
    return {"mpsnode_union_type": member, "mpsnode_union": table}


def tensor_info(dims: list[int], dtype: str = "Float32") -> dict:
    return {"dimensions": list(dims), "dataType": dtype, "quantizationScale": 0.0, "dimensionality": 1}


def armnn_file(member: str, layer_type: str, descriptor: dict | None, in_shapes: list[list[int]],
               out_shapes: list[list[int]], extra: dict | None = None) -> bytes:
    """An Arm NN network of one layer between Input and Output layers (23.08 feature flags)."""
    k = len(in_shapes)
    layers = [{"layer_type": "InputLayer", "layer": {"base": {"base": {
        "index": i, "layerName": f"in{i}", "layerType": "Input", "inputSlots": [],
        "outputSlots": [{"index": 0, "tensorInfo": tensor_info(s)}]}, "layerBindingId": i}}}
        for i, s in enumerate(in_shapes)]
    body: dict = {"base": {
        "index": k, "layerName": "attack", "layerType": layer_type,
        "inputSlots": [{"index": i, "connection": {"sourceLayerIndex": i, "outputSlotIndex": 0}} for i in range(k)],
        "outputSlots": [{"index": j, "tensorInfo": tensor_info(s)} for j, s in enumerate(out_shapes)]}}
    if descriptor is not None:
        body["descriptor"] = descriptor
    body.update(extra or {})
    layers.append({"layer_type": member, "layer": body})
    layers += [{"layer_type": "OutputLayer", "layer": {"base": {"base": {
        "index": k + 1 + j, "layerName": f"out{j}", "layerType": "Output",
        "inputSlots": [{"index": 0, "connection": {"sourceLayerIndex": k, "outputSlotIndex": j}}],
        "outputSlots": []}, "layerBindingId": j}}} for j in range(len(out_shapes))]
    return flatc_encode({"layers": layers, "inputIds": list(range(k)), "outputIds": list(range(len(out_shapes))),
                         "featureVersions": {"bindingIdsScheme": 1, "weightsLayoutScheme": 1,
                                             "constantTensorsAsInputs": 1}}, "armnn")


def reshape_chain(n: int) -> bytes:
    values, nodes = [mps_value(1, 4)], []
    for i in range(n):
        shape = [4, 1] if i % 2 == 0 else [1, 4]
        values.append(mps_value(*shape))
        nodes.append(mps_node("MPSView", input1_id=i, output_id=i + 1, num_dims=2, shape=shape))
    return mps_file(nodes, values, [0], [n])


def split(n: int) -> bytes:
    return mps_file([mps_node("MPSSplitWithSizes", input1_id=0, output_ids=list(range(1, n + 1)),
                              split_sizes=[1] * n, dim=0)],
                    [mps_value(n)] + [mps_value(1) for _ in range(n)], [0], list(range(1, n + 1)))


S = 1 << 14  # S x S float32 = 1 GiB
ONE = struct.pack("<f", 1.0)

ATTACKS = {
    # name: (file suffix, builder, exit codes allowed)
    "mps 3000-deep reshape chain": (".mpsgraph", lambda: reshape_chain(3000), {0}),
    "mps 2000-way split": (".mpsgraph", lambda: split(2000), {0}),
    "mps expand [1,1] to 1 GiB": (".mpsgraph", lambda: mps_file(
        [mps_node("MPSExpand", input1_id=0, output_id=1, num_dims=2, shape=[S, S])],
        [mps_value(1, 1), mps_value(S, S)], [0], [1]), {0}),
    "mps expand a constant to 1 GiB and add": (".mpsgraph", lambda: mps_file(
        [mps_node("MPSExpand", input1_id=0, output_id=1, num_dims=2, shape=[S, S]),
         mps_node("MPSAdd", input1_id=1, input2_id=2, output_id=3, alpha=1.0)],
        [mps_value(1, 1), mps_value(S, S), mps_value(S, S), mps_value(S, S)], [2], [3], {0: ONE}), {0}),
    "mps fill of 1 GiB": (".mpsgraph", lambda: mps_file(
        [mps_node("MPSFull", output_id=0, shape=[S, S], fill_value=1.5, dtype="mps_data_type_float32")],
        [mps_value(S, S)], [], [0]), {0}),
    "mps pad a constant to 1 GiB": (".mpsgraph", lambda: mps_file(
        [mps_node("MPSConstantPadND", input1_id=0, output_id=1, pad=[S - 1, 0, S - 1, 0], value=0.0),
         mps_node("MPSAdd", input1_id=1, input2_id=2, output_id=3, alpha=1.0)],
        [mps_value(1, 1), mps_value(S, S), mps_value(S, S), mps_value(S, S)], [2], [3], {0: ONE}), {0}),
    "mps arange of 2^28 elements": (".mpsgraph", lambda: mps_file(
        [mps_node("MPSArange", output_id=0, start=0.0, end=float(1 << 28), step=1.0, dtype="mps_data_type_float32")],
        [mps_value(1 << 28)], [], [0]), {3}),
    "armnn bilinear resize 3x3 to 8192x8192": (".armnn", lambda: armnn_file(
        "ResizeLayer", "Resize", {"targetHeight": 8192, "targetWidth": 8192, "method": "Bilinear",
                                  "dataLayout": "NHWC"}, [[1, 3, 3, 1]], [[1, 8192, 8192, 1]]), {0}),
    "armnn resize 3 to 2^20 wide, align corners": (".armnn", lambda: armnn_file(
        "ResizeLayer", "Resize", {"targetHeight": 1, "targetWidth": 1 << 20, "method": "Bilinear", "dataLayout": "NHWC",
                                  "alignCorners": True}, [[1, 1, 3, 1]], [[1, 1, 1 << 20, 1]]), {0}),
    "armnn nearest resize 7 to 2^20 wide, half pixel": (".armnn", lambda: armnn_file(
        "ResizeLayer", "Resize", {"targetHeight": 1, "targetWidth": 1 << 20, "method": "NearestNeighbor",
                                  "dataLayout": "NHWC", "halfPixelCenters": True}, [[1, 1, 7, 1]],
        [[1, 1, 1 << 20, 1]]), {0}),
    "armnn average pool with a 60000-wide window": (".armnn", lambda: armnn_file(
        "Pooling2dLayer", "Pooling2d", {"poolType": "Average", "poolWidth": 60000, "poolHeight": 1, "strideX": 1,
                                        "strideY": 1, "dataLayout": "NHWC", "paddingMethod": "Exclude"},
        [[1, 1, 60000, 1]], [[1, 1, 1, 1]]), {0}),
    "armnn pool with 100000 padding each side": (".armnn", lambda: armnn_file(
        "Pooling2dLayer", "Pooling2d", {"poolType": "Average", "poolWidth": 3, "poolHeight": 3, "strideX": 1,
                                        "strideY": 1, "padLeft": 100000, "padRight": 100000, "dataLayout": "NHWC",
                                        "paddingMethod": "IgnoreValue"}, [[1, 3, 3, 1]], [[1, 1, 200001, 1]]), {0}),
    "armnn symmetric pad of 2000 on 4096x4096": (".armnn", lambda: armnn_file(
        "PadLayer", "Pad", {"padList": [0, 0, 2000, 2000, 2000, 2000, 0, 0], "paddingMode": "Symmetric"},
        [[1, 4096, 4096, 1]], [[1, 8096, 8096, 1]]), {0}),
    "armnn tile [1,1] by 8192x8192": (".armnn", lambda: armnn_file(
        "TileLayer", "Tile", {"m_Multiples": [1 << 13, 1 << 13]}, [[1, 1]], [[1 << 13, 1 << 13]]), {0}),
    "armnn strided slice with a 2^29 stride": (".armnn", lambda: armnn_file(
        "StridedSliceLayer", "StridedSlice", {"begin": [0, 0], "end": [1, 1 << 30], "stride": [1, 1 << 29],
                                              "dataLayout": "NHWC"}, [[1, 1 << 20]], [[1, 1]]), {0}),
    "armnn depth to space with block 4096": (".armnn", lambda: armnn_file(
        "DepthToSpaceLayer", "DepthToSpace", {"blockSize": 1 << 12, "dataLayout": "NHWC"}, [[1, 1, 1, 1 << 24]],
        [[1, 1 << 12, 1 << 12, 1]]), {0}),
    "armnn 60000x60000 max pool input": (".armnn", lambda: armnn_file(
        "Pooling2dLayer", "Pooling2d", {"poolType": "Max", "poolWidth": 60000, "poolHeight": 60000, "strideX": 1,
                                        "strideY": 1, "dataLayout": "NHWC"}, [[1, 60000, 60000, 1]], [[1, 1, 1, 1]]),
        {2}),
}


# The child reports its own peak RSS (VmHWM: the high-water mark of the address space it got at exec) on
# the pipe PEAK_FD names, just before it exits, as `nn2tosa` does (cli.run: main, then os._exit). wait4's ru_maxrss
# cannot be used: Linux carries the parent's high-water mark into the child across fork (or vfork) and exec,
# so in a pytest worker that earlier ran the 2.23 GB external-data test every child would read 6 GB.
CHILD = """
import os, sys
from nn2tosa.cli import main
code = main(sys.argv[1:])
sys.stdout.flush(); sys.stderr.flush()
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
os.write(int(os.environ["PEAK_FD"]), peak.encode())
os._exit(code)
"""


def run_measured(args: list[str], stderr: object) -> tuple[int, int]:
    """(exit code, peak RSS in bytes) of `nn2tosa ARGS` in a child process; fails the test on a hang."""
    read, write = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, *args], stdout=subprocess.DEVNULL, stderr=stderr,
                                pass_fds=(write,), env={**os.environ, "PEAK_FD": str(write)})
    finally:
        os.close(write)
    try:
        proc.wait(timeout=HANG_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"{' '.join(args)}: no answer in {HANG_SECONDS} s")
    finally:
        with os.fdopen(read, "rb") as pipe:
            reported = pipe.read()
    return proc.returncode, int(reported or 0) << 10  # VmHWM is in kB; nothing reported (a crash): 0


@pytest.mark.parametrize("name", list(ATTACKS))
def test_hostile_parameters_are_answered_without_blowing_up(tmp_path, name):
    suffix, build, allowed = ATTACKS[name]
    model = tmp_path / f"attack{suffix}"
    model.write_bytes(build())
    outputs = [tmp_path / "x.tosa", tmp_path / "x.mlir"]
    args = ["convert", str(model), "-o", str(outputs[0]), "-o", str(outputs[1])]
    with tempfile.TemporaryFile() as err:
        returncode, peak_rss = run_measured(args, err)
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    assert returncode in allowed, f"{name}: exit {returncode}: {stderr}"
    assert len(stderr.splitlines()) <= 1 and "Traceback" not in stderr, stderr
    assert 0 < peak_rss < MAX_RSS_BYTES, f"{name}: peak RSS {peak_rss >> 20} MB"
    assert all(o.exists() for o in outputs) == (returncode == 0)
    assert any(o.exists() for o in outputs) == (returncode == 0)


def test_lowering_a_split_reads_each_output_a_bounded_number_of_times(monkeypatch):
    """Work on graph outputs is linear in their number: lowering an N-way split reads outputs O(N)
    times (each pass visits each output a few times), not O(N^2) (a scan of all outputs per op)."""
    from nn2tosa.api import convert
    from nn2tosa.frontend import load
    from nn2tosa.ir.graph import Output

    reads = [0]
    plain = Output.value

    def counted(self):
        reads[0] += 1
        return plain.fget(self)

    n = 1500
    graph = load(split(n))[0]
    monkeypatch.setattr(Output, "value", property(counted, plain.fset))
    convert(graph)
    assert 0 < reads[0] < 40 * n, f"{reads[0]} reads of graph outputs for a {n}-way split"


def pte_file(payload: bytes, delegates: int) -> bytes:
    """An ExecuTorch program whose one plan has `delegates` MPS delegates, all naming the same inline
    payload (ExecuTorch itself de-duplicates identical payloads this way)."""
    from nn2tosa.frontend.mps import pte

    doc = {"version": 0, "backend_delegate_data": [{"data": list(payload)}],
           "execution_plan": [{"name": "forward", "delegates": [
               {"id": "MPSBackend", "processed": {"location": "INLINE", "index": 0}} for _ in range(delegates)]}]}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "program.fbs").write_text(schema_text("pte"))
        (d / "in.json").write_text(json.dumps(doc))
        subprocess.run([str(FLATC), "-b", "-o", str(d), str(d / "program.fbs"), str(d / "in.json")], check=True,
                       capture_output=True)
        (out,) = [p for p in d.iterdir() if p.suffix not in (".fbs", ".json")]
        return out.read_bytes()


def test_a_pte_naming_one_payload_many_times_counts_every_partition(tmp_path):
    """A 90 KB .pte with 2000 delegates sharing one 200-op payload would be 400,000 ops (100 s and
    800 MB before): the partitions' ops count together against --max-ops."""
    model = tmp_path / "many.pte"
    model.write_bytes(pte_file(reshape_chain(200), 2000))
    r = subprocess.run([sys.executable, "-m", "nn2tosa", "inspect", str(model), "--max-ops", "20000"],
                       capture_output=True, text=True, timeout=HANG_SECONDS)
    assert r.returncode == 2, r.stderr
    assert "delegates hold 20" in r.stderr and "above the limit of 20000 (--max-ops)" in r.stderr
    assert len(r.stderr.splitlines()) == 1
    few = tmp_path / "few.pte"
    few.write_bytes(pte_file(reshape_chain(3), 3))  # shared payloads are fine: each is a partition
    r = subprocess.run([sys.executable, "-m", "nn2tosa", "inspect", "--json", str(few)], capture_output=True,
                       text=True, timeout=HANG_SECONDS)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert [p["name"] for p in info["partitions"]] == ["partition0", "partition1", "partition2"]


def test_repeated_output_names_become_the_same_unique_tensor_names_in_both_outputs(tmp_path):
    """Arm NN output layers may share a name (and a .tosa block may list one output twice); TOSA tensor
    names must be unique, and tosa-opt serializes our MLIR's names: both outputs suffix the same way.
    5000 outputs of one name: the suffixing is linear (it was a rescan from _1 for every output)."""
    import re

    from nn2tosa.api import convert
    from nn2tosa.frontend import load
    from nn2tosa.ir import Graph, TensorType

    g = Graph(meta={"format": "tosa"})
    x = g.add_input(TensorType((2,), "f32"), "y")
    node = g.add_op("tosa.abs", [x], [TensorType((2,), "f32")])
    for _ in range(5000):
        g.add_output((node, 0), "y")
    g.add_output((node, 0), "y_1")
    result = convert(g)
    mlir_names = re.findall(r'tosa.tensor_name = "([^"]*)"', result.mlir_text())
    result.write(str(tmp_path / "o.tosa"), "tosa")
    back = load(tmp_path / "o.tosa")[0]
    tosa_names = [back.input_name(back.inputs[0])] + [o.name for o in back.outputs]
    assert mlir_names == tosa_names
    assert len(set(tosa_names)) == 5002 and tosa_names[:3] == ["y", "y_1", "y_2"] and tosa_names[-1] == "y_1_1"


def flatc_decode(binary: bytes, schema: str) -> dict:
    """flatc's JSON of a flatbuffer, with defaults written out (to edit and encode again)."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "schema.fbs").write_text(schema_text(schema))
        (d / "in.bin").write_bytes(binary)
        subprocess.run([str(FLATC), "--json", "--strict-json", "--raw-binary", "--defaults-json", "-o", str(d),
                        str(d / "schema.fbs"), "--", str(d / "in.bin")], check=True, capture_output=True)
        return json.loads((d / "in.json").read_text())


LSTM = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "armnn" / "perlayer_23.08" / \
    "unidirectionalsequencelstm_timemajor_basic_f32.armnn"


@pytest.mark.skipif(not LSTM.is_file(), reason=f"corpus file {LSTM} not found")
def test_an_lstm_of_65536_steps_stops_at_the_op_limit(tmp_path):
    """A sequence LSTM unrolls into ~30 ops per step: 65,536 steps (a 2 MB output) would be two million
    ops. The graph stops growing at --max-ops, whichever pass grows it."""
    doc = flatc_decode(LSTM.read_bytes(), "armnn")
    for layer in doc["layers"]:
        for slot in layer["layer"].get("base", {}).get("base", layer["layer"].get("base", {})).get("outputSlots", []):
            dims = slot["tensorInfo"]["dimensions"]
            if len(dims) == 3:
                dims[0] = 65536  # time major: the sequence in and the output out
    lstm = next(layer["layer"] for layer in doc["layers"] if layer["layer_type"] == "UnidirectionalSequenceLstmLayer")
    for slot in lstm["base"]["inputSlots"] + doc["layers"][-1]["layer"]["base"]["base"]["inputSlots"]:
        slot.pop("overriddenTensorInfo", None)
    model = tmp_path / "long.armnn"
    model.write_bytes(flatc_encode(doc, "armnn"))
    r = subprocess.run([sys.executable, "-m", "nn2tosa", "convert", str(model), "-o", str(tmp_path / "x.tosa"),
                        "--max-ops", "20000"], capture_output=True, text=True, timeout=HANG_SECONDS)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().endswith("graph 'main' would have more than 20000 operations, the limit (--max-ops)")
    assert not (tmp_path / "x.tosa").exists()
