"""`--target ethos-u55|u65|u85 --partial`: regions the NPU runs whole (Vela's own verdict, by compiling) and
the rest on the host, each host op with why (nn2tosa/npu_regions.py).

The expectations come from the real tools: every region is compiled by Vela 5.2.0 (every operator on the
NPU), and the stitched run (the regions on the TOSA reference model, each host op by the reference model
too, as a function of nn2tosa's own conversion of that op, in the sidecar's order) equals the unpartitioned
conversion on the reference model bit for bit.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nn2tosa
from conftest import CORPUS, REPO, run_cli
from corpus_harness import run_reference, to_boundary

sys.path.insert(0, str(REPO / "bench"))
from synthetic.armnn import calibration_ranges, write_armnn  # noqa: E402
from synthetic.network import ssd_detector  # noqa: E402
from nn2tosa.vela_support import compile_tosa, vela_version  # noqa: E402

pytestmark = pytest.mark.skipif(vela_version() is None, reason="Vela is not installed (the test extra has "
                                                                "ethos-u-vela)")
TARGETS = ("ethos-u55", "ethos-u85")
DETECTORS = [CORPUS / "armnn" / v / "detectionpostprocess_fastnms_qu8.armnn" for v in ("perlayer_23.08", "perlayer_20.08")]
DIVISION = CORPUS / "armnn" / "perlayer_23.08" / "division_bcast_qu8.armnn"
# what may be left to the host of a quantized detector: its post-processing and the casts at its boundary
POST_PROCESSING = {"armnn.DetectionPostProcess", "armnn.Dequantize", "armnn.Quantize"}


@pytest.fixture(scope="module")
def ssd(tmp_path_factory) -> Path:
    """A quantized SSD-style detector (int8 conv backbone, box and class heads, DetectionPostProcess)."""
    net = ssd_detector()
    image = np.random.default_rng(0).uniform(-1, 1, (1, 32, 32, 3))
    path = tmp_path_factory.mktemp("ssd") / "ssd_detector.armnn"
    write_armnn(net, path, ranges=calibration_ranges(net, [image]))
    return path


def _inputs(model: Path | None, side: dict) -> dict[str, np.ndarray]:
    """The corpus file's inputs, or random int8 bits of the sidecar's shapes, by sidecar tensor name."""
    rng = np.random.default_rng(3)
    out = {}
    for k, name in enumerate(side["inputs"]):
        saved = model.with_suffix(f".input{k}.npy") if model is not None else None
        if saved is not None and saved.exists():
            out[name] = to_boundary(np.load(saved))
        else:
            t = side["tensors"][name]
            out[name] = rng.integers(-128, 128, t["shape"]).astype(np.int8)
    return out


def stitch(model: Any, result, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the model as a runtime would from the sidecar: regions on the reference model, each host op by
    the reference model too (nn2tosa's conversion of the model with every region op named host=, which
    leaves that op alone in a function of its own), tensors routed by the sidecar's names."""
    side = json.loads(json.dumps(result.partition))
    regions = dict(zip((g.name for g in result.functions), result.tosa_flatbuffers()))
    in_regions = sorted({op["name"] for f in side["functions"] for op in f["source_ops"]})
    host_side = nn2tosa.convert(model, partial=True, host=in_regions) if side["host"] else None
    tensors = dict(inputs)

    def run(fn: dict, data: bytes) -> None:
        outs, status = run_reference(data, [tensors[i["name"]] for i in fn["inputs"]])
        assert status == "TOSA_VALID", (fn["name"], status)
        for o, value in zip(fn["outputs"], outs):
            tensors[o["name"]] = value

    for step in side["steps"]:
        if "function" in step:
            run(next(f for f in side["functions"] if f["name"] == step["function"]), regions[step["function"]])
            continue
        assert host_side is not None
        hp = host_side.partition
        fn = next(f for f in hp["functions"] if step["host"] in {op["name"] for op in f["source_ops"]})
        run(fn, dict(zip((g.name for g in host_side.functions), host_side.tosa_flatbuffers()))[fn["name"]])
    return {o["name"]: tensors[o["tensor"]] for o in side["outputs"]}


def whole(model: Any, inputs: list[np.ndarray]) -> list[np.ndarray]:
    outs, status = run_reference(nn2tosa.convert(model).tosa_flatbuffer(), inputs)
    assert status == "TOSA_VALID"
    return outs


def check_detector(model: Path, target: str) -> dict:
    result = nn2tosa.convert(model, target=target, partial=True)
    side = result.partition
    assert side["npu"]["rule"] == f"vela {vela_version()}" and side["npu"]["target"] == target
    for g, data in zip(result.functions, result.tosa_flatbuffers()):
        outcome = compile_tosa(data, side["npu"]["accelerator"])
        assert outcome.all_on_npu and outcome.npu_ops > 0, (g.name, outcome.message)
    assert side["host"] and {h["op"] for h in side["host"]} <= POST_PROCESSING, side["host"]
    assert all(h["why"] for h in side["host"])
    inputs = _inputs(model, side)
    stitched = stitch(model, result, inputs)
    expected = whole(model, [inputs[name] for name in side["inputs"]])
    assert len(stitched) == len(expected)
    for (name, got), want in zip(stitched.items(), expected):
        np.testing.assert_array_equal(got, want, err_msg=name)
    return side


@pytest.mark.parametrize("target", (*TARGETS, "ethos-u65"))
def test_the_ssd_backbone_and_heads_run_on_the_npu(ssd, target):
    side = check_detector(ssd, target)
    assert [h["op"] for h in side["host"]] == ["armnn.DetectionPostProcess"]
    assert "needs pro_fp" in side["host"][0]["why"][0]
    assert len(side["functions"]) == 1
    assert {op["name"] for op in side["functions"][0]["source_ops"]} >= {"backbone0/conv", "class_head/logistic"}
    # the boundary is the heads' int8 tensors, as the region computes them
    assert {i["name"]: i["tosa_dtype"] for i in side["functions"][0]["outputs"]} == \
        {"box_head/reshape:0": "i8", "class_head/logistic:0": "i8"}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", DETECTORS, ids=lambda p: p.parent.name)
def test_the_corpus_quantized_detectors(model, target):
    if not model.exists():
        pytest.skip(f"no corpus file {model}")
    side = check_detector(model, target)
    assert side["functions"] == [] and side["steps"] == [{"host": "detection_post_process", "where": "layer 2"}]


def test_target_alone_refuses_what_vela_refuses(tmp_path):
    """The uint8 division (LiteRT's integer kernel: a BITWISE_XOR among its operators, which U55 lacks)."""
    if not DIVISION.exists():
        pytest.skip(f"no corpus file {DIVISION}")
    proc = run_cli("convert", str(DIVISION), "--target", "ethos-u55", "-o", str(tmp_path / "d.tosa"))
    assert proc.returncode == 3 and not (tmp_path / "d.tosa").exists()
    assert b"'division'" in proc.stderr and b"Xor" in proc.stderr and b"--partial" in proc.stderr
    assert b"BITWISE_XOR(tensor<1x2x3x4xi32>, tensor<1x2x3x4xi32>)" in proc.stderr  # the values Vela judged
    side = nn2tosa.convert(DIVISION, target="ethos-u55", partial=True).partition
    assert [h["name"] for h in side["host"]] == ["division"] and "Xor" in side["host"][0]["why"][0]
    proc = run_cli("convert", str(REPO / "examples" / "cnn_f32.armnn"), "--target", "ethos-u55", "-o",
                   str(tmp_path / "f.tosa"))  # beyond the profile: the same hint
    assert proc.returncode == 3 and b"needs pro_fp" in proc.stderr and b"--partial" in proc.stderr
    u85 = nn2tosa.convert(DIVISION, target="ethos-u85", partial=True)
    assert [g.name for g in u85.functions] == ["main"] and u85.partition["host"] == []
    assert u85.tosa_flatbuffer() == nn2tosa.convert(DIVISION, target="ethos-u85").tosa_flatbuffer()


# Graphs whose outputs are their inputs or constants: after lowering no TOSA operator is left for the NPU,
# and Vela refuses the graph as a whole (there is no source op to bisect to or leave to the host).
NO_OPERATOR = ["armnn/perlayer_20.08/io_passthrough_f32.armnn", "mps/perop/op_ones_fp32.mpsgraph",
               "armnn/perlayer_23.08/noexec/constant_only_bool.armnn"]


@pytest.mark.parametrize("name", NO_OPERATOR)
@pytest.mark.parametrize("partial", [False, True], ids=["target", "partial"])
def test_a_graph_without_operators_is_refused_whole(name, partial, tmp_path):
    model = CORPUS / name
    if not model.exists():
        pytest.skip(f"no corpus file {model}")
    out = tmp_path / "m.tosa"
    proc = run_cli("convert", str(model), "--target", "ethos-u55", *(["--partial"] if partial else []),
                   "-o", str(out))
    assert proc.returncode == 3, proc.stderr
    assert b"Vela refuses it" in proc.stderr and b"no operator for the NPU to run" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and not out.exists() and list(tmp_path.iterdir()) == []


U8 = "tensor<1x2x3x4x!quant.uniform<u8:f32, 0.015686275437474251:128>>"
DIVISION_BETWEEN = f"""
func.func @main(%x: {U8}, %y: {U8}) -> ({U8}) {{
  %a = "armnn.Activation"(%x) {{a = 0.0 : f32, activationFunction = "ReLu", b = 0.0 : f32}} : ({U8}) -> {U8} loc(#before)
  %d = "armnn.Division"(%a, %y) : ({U8}, {U8}) -> {U8} loc(#division)
  %r = "armnn.Activation"(%d) {{a = 0.0 : f32, activationFunction = "BoundedReLu", b = 0.0 : f32}} : ({U8}) -> {U8} loc(#after)
  return %r : {U8}
}}
#before = loc("before"("layer 1"))
#division = loc("division"("layer 2"))
#after = loc("after"("layer 3"))
"""


def test_the_op_vela_refuses_is_found_between_ops_it_runs():
    """Vela names no location: the refused op is found by bisecting prefixes of the region, and the ops
    around it stay on the NPU, one region each side."""
    from nn2tosa.ir.text import parse_graph

    graph = parse_graph(DIVISION_BETWEEN)
    graph.meta["format"] = "armnn"
    result = nn2tosa.convert(graph, target="ethos-u55", partial=True)
    side = result.partition
    assert side["steps"] == [{"function": "region0"}, {"host": "division", "where": "layer 2"},
                             {"function": "region1"}]
    assert "Xor" in side["host"][0]["why"][0]
    assert side["npu"]["vela_compiles"] <= 2 + 3  # the whole, a bisection of 3 source ops, the two regions
    for data in result.tosa_flatbuffers():
        assert compile_tosa(data, "ethos-u55-256").all_on_npu
    inputs = _inputs(None, side)
    [stitched] = stitch(graph, result, inputs).values()
    np.testing.assert_array_equal(stitched, whole(graph, [inputs[n] for n in side["inputs"]])[0])


Q8 = "tensor<1x2x3x8x!quant.uniform<i8:f32, 0.05:-3>>"
F32 = "tensor<1x2x3x8xf32>"
FLOAT_ISLAND = f"""
func.func @main(%x: {Q8}) -> ({Q8}) {{
  %a = "armnn.Activation"(%x) {{a = 0.0 : f32, activationFunction = "ReLu", b = 0.0 : f32}} : ({Q8}) -> {Q8} loc(#before)
  %d = "armnn.Dequantize"(%a) : ({Q8}) -> {F32} loc(#dequantize)
  %s = "armnn.Softmax"(%d) {{axis = -1 : i64, beta = 1.0 : f32}} : ({F32}) -> {F32} loc(#softmax)
  %q = "armnn.Quantize"(%s) : ({F32}) -> {Q8} loc(#quantize)
  %r = "armnn.Activation"(%q) {{a = 0.0 : f32, activationFunction = "ReLu", b = 0.0 : f32}} : ({Q8}) -> {Q8} loc(#after)
  return %r : {Q8}
}}
#before = loc("before"("layer 1"))
#dequantize = loc("dequantize"("layer 2"))
#softmax = loc("softmax"("layer 3"))
#quantize = loc("quantize"("layer 4"))
#after = loc("after"("layer 5"))
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_float_island_keeps_its_casts_on_the_host(target):
    """Between two quantized regions, the float island goes to the host with its Dequantize and Quantize: the
    NPU regions read and write int8."""
    from nn2tosa.ir.text import parse_graph

    graph = parse_graph(FLOAT_ISLAND)
    graph.meta["format"] = "armnn"
    result = nn2tosa.convert(graph, target=target, partial=True)
    side = result.partition
    assert [s.get("function") or s["host"] for s in side["steps"]] == ["region0", "dequantize", "softmax",
                                                                       "quantize", "region1"]
    assert all("needs pro_fp" in h["why"][0] for h in side["host"])
    crossing = [t for f in side["functions"] for t in f["inputs"] + f["outputs"]]
    assert {t["tosa_dtype"] for t in crossing} == {"i8"}
    for data in result.tosa_flatbuffers():
        assert compile_tosa(data, side["npu"]["accelerator"]).all_on_npu
    inputs = _inputs(None, side)
    [stitched] = stitch(graph, result, inputs).values()
    np.testing.assert_array_equal(stitched, whole(graph, [inputs[n] for n in side["inputs"]])[0])


def test_without_vela_the_profile_rule_decides(ssd, monkeypatch):
    import nn2tosa.vela_support as vela_support

    monkeypatch.setattr(vela_support, "vela_version", lambda: None)
    side = nn2tosa.convert(ssd, target="ethos-u55", partial=True).partition
    assert side["npu"]["rule"] == "profile" and "not installed" in side["npu"]["note"]
    report = nn2tosa.convert(ssd, target="ethos-u55", partial=True).report
    assert report.npu_rule == "profile" and "Vela is not installed" in report.format_text()
    assert [h["op"] for h in side["host"]] == ["armnn.DetectionPostProcess"]


def test_cli_vela_report(ssd, tmp_path):
    proc = run_cli("convert", str(ssd), "--target", "ethos-u85", "--partial", "--vela-report",
                   "-o", str(tmp_path / "m.tosa"))
    assert proc.returncode == 0, proc.stderr
    side = json.loads((tmp_path / "m.partition.json").read_text())
    report = side["vela_report"]
    assert report["accelerator"] == "ethos-u85-256" and len(report["regions"]) == 1
    region = report["regions"][0]
    assert region["compiled"] and region["cycles"] > 0 and region["sram_kib"] > 0 and region["cpu_ops"] == 0
    assert any(p.startswith("NPU: Conv2D") for p in region["placed"])
    assert [h["op"] for h in report["host"]] == ["armnn.DetectionPostProcess"]
    text = proc.stderr.decode()
    assert f"region0: {region['cycles']:,} cycles" in text and "host: armnn.DetectionPostProcess" in text
    assert "placed: NPU: Conv2D x" in text
    proc = run_cli("convert", str(ssd), "--vela-report", "-o", str(tmp_path / "x.tosa"))
    assert proc.returncode == 2 and b"--target" in proc.stderr


def test_zoo_runs_pass_the_options_through(ssd, tmp_path):
    [result] = nn2tosa.convert_many([ssd], tmp_path / "out", emit="tosa", jobs=1, target="ethos-u55", partial=True,
                                    vela_report=True)
    assert result.status == "ok", result.message
    side = json.loads((tmp_path / "out" / "ssd_detector.partition.json").read_text())
    assert side["npu"]["target"] == "ethos-u55" and side["vela_report"]["regions"][0]["compiled"]
    assert (tmp_path / "out" / "ssd_detector.tosa").exists()  # (one function: the usual name)
