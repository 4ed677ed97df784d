"""Partial conversion: regions around unsupported layers, and a sidecar a runtime can stitch them with."""
from __future__ import annotations

import json
import random
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nn2tosa
from conftest import REPO, run_cli
from nn2tosa.diagnostics import UnsupportedError, UsageError
from nn2tosa.ir import Graph, TensorType, Value
from nn2tosa.partial import cut

FLATC = Path(sysconfig.get_paths()["purelib"]) / "bin" / "flatc"
SSD_JSON = REPO / "lit_tests" / "cli" / "Inputs" / "ssd_tail.json"


@pytest.fixture(scope="module")
def ssd_tail(tmp_path_factory) -> Path:
    """sigmoid(logits) -> DetectionPostProcess -> clip(boxes, 0, 1), an Arm NN file built by flatc."""
    if not FLATC.exists():
        pytest.skip(f"flatc not found at {FLATC} (tosa-tools)")
    out = tmp_path_factory.mktemp("ssd")
    subprocess.run([str(FLATC), "-b", "--no-warnings", "-o", str(out), str(REPO / "schemas" / "armnn.fbs"),
                    str(SSD_JSON)], check=True)
    return out / "ssd_tail.armnn"


def run_tosa(data: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import tosa_reference_model as trm

    outs, status = trm.run(data, inputs, tosa_level="EIGHTK")
    assert str(status).endswith("TOSA_VALID")
    return list(outs)


ON_HOST = ["DetectionPostProcess"]  # it converts; these tests ask for it on the host


def test_the_detector_converts_whole_unless_asked(ssd_tail):
    whole = nn2tosa.convert(ssd_tail)
    assert [g.name for g in whole.functions] == ["main"]
    partial = nn2tosa.convert(ssd_tail, partial=True)
    assert partial.partition["host"] == [] and partial.partition["steps"] == [{"function": "main"}]


def test_host_names_op_types_or_layers_and_needs_partial(ssd_tail):
    by_type = nn2tosa.convert(ssd_tail, partial=True, host=["armnn.DetectionPostProcess"]).partition
    by_name = nn2tosa.convert(ssd_tail, partial=True, host=["detection_post_process"]).partition
    assert [h["name"] for h in by_type["host"]] == [h["name"] for h in by_name["host"]] == ["detection_post_process"]
    assert by_type["host"][0]["why"] == ["left to the host as asked (--host, host=)"]
    with pytest.raises(UsageError, match="no op of that type or name"):
        nn2tosa.convert(ssd_tail, partial=True, host=["NoSuchLayer"])
    with pytest.raises(UsageError, match="partial"):
        nn2tosa.convert(ssd_tail, host=ON_HOST)


MIDDLE_STANDIN = """
func.func @main(%x: tensor<1x4xf32>) -> (tensor<1x4xf32>) {
  %s = "armnn.Activation"(%x) {a = 0.0 : f32, activationFunction = "Sigmoid", b = 0.0 : f32} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc(#sig)
  %c = "armnn.StandIn"(%s) {numInputs = 1 : i64, numOutputs = 1 : i64} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc(#custom)
  %r = "armnn.Activation"(%c) {a = 0.0 : f32, activationFunction = "ReLu", b = 0.0 : f32} : (tensor<1x4xf32>) -> tensor<1x4xf32> loc(#relu)
  return %r : tensor<1x4xf32>
}
#sig = loc("sig"("layer 1"))
#custom = loc("custom"("layer 2"))
#relu = loc("relu"("layer 3"))
"""


def test_an_unsupported_layer_goes_to_the_host_unasked_and_with_asked_ones():
    from nn2tosa.ir.text import parse_graph

    graph = parse_graph(MIDDLE_STANDIN)
    graph.meta["format"] = "armnn"
    with pytest.raises(UnsupportedError, match="StandIn"):
        nn2tosa.convert(graph)
    side = nn2tosa.convert(graph, partial=True).partition
    assert side["steps"] == [{"function": "region0"}, {"host": "custom", "where": "layer 2"}, {"function": "region1"}]
    assert "placeholder" in side["host"][0]["why"][0]
    side = nn2tosa.convert(graph, partial=True, host=["relu"]).partition
    assert [(h["name"], h["why"][0][:11]) for h in side["host"]] == [("custom", "a placehold"), ("relu", "left to the")]
    assert [f["name"] for f in side["functions"]] == ["region0"]


def test_a_runtime_can_stitch_the_regions_with_the_sidecar(ssd_tail):
    """Run the model the way a runtime would: follow `steps`, run each function on the reference model,
    stand in for the host layer, and route every tensor by the names the sidecar gives."""
    result = nn2tosa.convert(ssd_tail, partial=True, host=ON_HOST)
    side = json.loads(json.dumps(result.partition))  # what the JSON file holds
    assert [f["name"] for f in side["functions"]] == ["region0", "region1"]
    assert [h["op"] for h in side["host"]] == ["armnn.DetectionPostProcess"]
    flatbuffers = dict(zip((g.name for g in result.functions), result.tosa_flatbuffers()))

    rng = np.random.default_rng(1)
    tensors = {name: rng.uniform(-4, 4, side["tensors"][name]["shape"]).astype(np.float32) for name in side["inputs"]}
    host_inputs_seen = {}

    def host_layer(step: dict) -> None:  # a stand-in for Arm NN's DetectionPostProcess
        layer = next(h for h in side["host"] if h["name"] == step["host"])
        for name in layer["inputs"]:
            if side["tensors"][name]["source"].get("constant"):
                continue  # the anchors: the runtime has them from the model file
            host_inputs_seen[name] = tensors[name]
        for name in layer["outputs"]:
            tensors[name] = rng.uniform(-2, 2, side["tensors"][name]["shape"]).astype(np.float32)

    for step in side["steps"]:
        if "host" in step:
            host_layer(step)
            continue
        fn = next(f for f in side["functions"] if f["name"] == step["function"])
        outs = run_tosa(flatbuffers[fn["name"]], [tensors[i["name"]] for i in fn["inputs"]])
        for o, value in zip(fn["outputs"], outs):
            tensors[o["name"]] = value.reshape(side["tensors"][o["name"]]["shape"])

    logits = tensors["input1"]
    np.testing.assert_allclose(host_inputs_seen["scores:0"], 1 / (1 + np.exp(-logits)), rtol=1e-5)
    np.testing.assert_array_equal(host_inputs_seen["input0"], tensors["input0"])
    outputs = {o["name"]: tensors[o["tensor"]] for o in side["outputs"]}
    np.testing.assert_array_equal(outputs["output0"], np.clip(tensors["detection_post_process:0"], 0, 1))
    assert outputs["output3"] is tensors["output3"]  # the host's own output, passed through
    assert result.validate() == []


def test_report_marks_the_host_layers(ssd_tail):
    report = nn2tosa.convert(ssd_tail, partial=True, host=ON_HOST).report
    status = {(s.op, s.loc.name): s.status for s in report.source_ops}
    assert status[("armnn.DetectionPostProcess", "detection_post_process")] == "unsupported"
    assert status[("armnn.Activation", "scores")] == status[("armnn.Activation", "clip_boxes")] == "lowered"
    assert report.functions == ["region0", "region1"]
    assert "DetectionPostProcess" in report.unsupported[0]


def test_cli_writes_regions_and_sidecar(ssd_tail, tmp_path):
    proc = run_cli("convert", str(ssd_tail), "--partial", "--host", "DetectionPostProcess",
                   "-o", str(tmp_path / "m.tosa"), "--sidecar", str(tmp_path / "stitch.json"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.region0.tosa", "m.region1.tosa", "stitch.json"]
    side = json.loads((tmp_path / "stitch.json").read_text())
    assert side["files"]["tosa"] == [str(tmp_path / "m.region0.tosa"), str(tmp_path / "m.region1.tosa")]
    proc = run_cli("convert", str(ssd_tail), "--partial", "-o", "-")
    assert proc.returncode == 2 and b"--sidecar" in proc.stderr
    proc = run_cli("convert", str(ssd_tail), "--host", "DetectionPostProcess", "-o", str(tmp_path / "x.tosa"))
    assert proc.returncode == 2 and b"--partial" in proc.stderr and not (tmp_path / "x.tosa").exists()


def test_a_supported_model_is_one_function(tmp_path):
    example = REPO / "examples" / "cnn_f32.armnn"
    whole, partial = nn2tosa.convert(example), nn2tosa.convert(example, partial=True)
    assert [g.name for g in partial.functions] == ["main"]
    assert partial.graph.histogram() == whole.graph.histogram()
    assert partial.partition["host"] == [] and partial.partition["steps"] == [{"function": "main"}]
    assert partial.tosa_flatbuffer() == whole.tosa_flatbuffer()


# ------------------------------------------------------------------------------ the cut, on random graphs
def random_graph(seed: int, n: int) -> tuple[Graph, list[int]]:
    """A random DAG of n ops (each reading up to three earlier values) on two inputs."""
    rnd = random.Random(seed)
    g = Graph()
    t = TensorType((2,), "f32")
    values = [g.add_input(t, "a"), g.add_input(t, "b")]
    ops = []
    for _ in range(n):
        operands = rnd.sample(values, k=min(len(values), rnd.randint(1, 3)))
        node = g.add_op("x.op", operands, [t])
        ops.append(node)
        values.append(Value(node, 0))
    for v in rnd.sample(values[2:], k=min(3, n)):
        g.add_output(v, f"out{v.node}")
    return g, ops


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 40), share=st.floats(0, 0.5))
def test_regions_are_convex_and_steps_respect_every_dependency(seed, n, share):
    g, ops = random_graph(seed, n)
    host = {op for op in ops if random.Random(seed + op).random() < share}
    regions, stage = cut(g, host, set())
    owner = {node: k for k, r in enumerate(regions) for node in r.nodes}
    assert set(owner) == set(ops) - host  # every supported op in exactly one region
    assert sum(len(r.nodes) for r in regions) == len(owner)
    # convex: leaving a region and coming back would make it two calls
    for k, r in enumerate(regions):
        outside = [v for u in r.nodes for v in g.nx.successors(u) if owner.get(v) != k]
        seen, stack = set(), list(outside)
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            assert owner.get(node) != k, f"region {k} is not convex"
            stack.extend(g.nx.successors(node))
    # the sidecar's order: regions by stage, a host op after the stage of its operands
    order = {("region", k): (r.stage, 0) for k, r in enumerate(regions)}
    order.update({("host", h): (stage[h] - 1, 1) for h in host})
    def step(node):
        return ("region", owner[node]) if node in owner else ("host", node)
    for u, v in g.nx.edges():
        if u in g.inputs:
            continue
        if step(u) != step(v):
            assert order[step(u)] < order[step(v)] or (step(u)[0] == step(v)[0] == "host" and u < v)
