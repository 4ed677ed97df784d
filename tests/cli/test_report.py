"""The conversion report: per source op what it became, checked against the emitted MLIR's locations."""
from __future__ import annotations

import json
import re
from collections import Counter

from mlir import ir

import nn2tosa
from conftest import CORPUS, REPO, requires_corpus, run_cli

EXAMPLE = REPO / "examples" / "cnn_f32.armnn"


def ops_by_location(mlir_text: str) -> Counter:
    """(location name, op name) -> count, read from MLIR text by MLIR itself (not from nn2tosa's graph)."""
    counts: Counter = Counter()
    with ir.Context():
        module = ir.Module.parse(mlir_text)
        for fn in module.body.operations:
            for op in fn.regions[0].blocks[0].operations:
                match = re.match(r'loc\("([^"]*)"', str(op.location))
                if op.name != "func.return":
                    counts[(match.group(1) if match else None, op.name)] += 1
    return counts


def check_against_mlir(result) -> None:
    from_mlir = ops_by_location(result.mlir_text())
    from_report = Counter()
    for s in result.report.source_ops:
        for op, n in s.tosa.items():
            from_report[(s.loc.name, op)] = n  # layers sharing a location share their ops
    assert from_report == Counter({k: v for k, v in from_mlir.items() if k[0] in {s.loc.name for s in
                                                                                   result.report.source_ops}})
    assert sum(result.report.tosa_ops.values()) == sum(from_mlir.values())


def test_each_layers_ops_are_the_ops_at_its_location():
    result = nn2tosa.convert(EXAMPLE)
    check_against_mlir(result)
    status = {s.loc.name: s.status for s in result.report.source_ops}
    assert status["conv1"] == status["softmax"] == "lowered" and status["conv1/weights"] == "constant"
    report = result.report.as_dict()
    assert report["target"]["profiles"] == ["pro_fp"] and report["target"]["level"] == "8k"
    assert report["constants"]["bytes"] >= (8 * 3 * 3 * 3 + 8) * 4  # conv1's weights and bias at least
    assert list(report["timings"])[:6] == ["load", "legalize-armnn", "canonicalize", "lower-to-tosa", "cse", "dce"]


@requires_corpus
def test_folded_and_fused_layers():
    path = CORPUS / "armnn/pyarmnn_23.08/pad_depthwise_batchnorm_tanh_resize_stridedslice_mean_f32.armnn"
    result = nn2tosa.convert(path)
    status = {s.loc.name: s.status for s in result.report.source_ops}
    assert status["batchnorm"] == "fused" and status["depthwise"] == "lowered"
    assert result.report.rewrites["fold-batch-norm-into-conv"] == 1
    check_against_mlir(result)


@requires_corpus
def test_boundary_changes_of_a_uint8_model():
    result = nn2tosa.convert(CORPUS / "armnn/pyarmnn_23.08/cnn_quant_qasymmu8.armnn")
    assert result.report.boundary_changes == ["input input_u8: ui8 as i8", "output logits_u8: ui8 as i8"]
    assert result.report.target["profiles"] == ["pro_int"]
    check_against_mlir(result)


@requires_corpus
def test_mps_nodes_are_reported_by_node():
    result = nn2tosa.convert(CORPUS / "mps/models/cnn_fp16.mpsgraph")
    by_type = {s.loc.detail: s.status for s in result.report.source_ops if s.op != "mps.constant"}
    assert by_type["MPSBatchNorm"] == "fused" and by_type["MPSConv2D"] == "lowered"
    check_against_mlir(result)


def test_cli_report_and_json(tmp_path):
    out = tmp_path / "r.json"
    proc = run_cli("convert", str(EXAMPLE), "-o", str(tmp_path / "m.tosa"), "--report", "--report-json", str(out))
    assert proc.returncode == 0, proc.stderr
    text = proc.stderr.decode()
    # (the flatten's reshape and the fully connected layer's reshape to NHWC are one RESHAPE: fc1's)
    assert "source ops: 5 lowered, 4 constant, 1 removed" in text and "conv1 (layer 5) Convolution2d" in text
    report = json.loads(out.read_text())
    layers = {entry["name"]: entry for entry in report["layers"]}
    assert layers["relu1"]["tosa"] == {"tosa.clamp": 1}
    assert "emit-tosa" in report["timings"] and report["rewrites"] == {"relu-to-clamp": 1}
    assert report["functions"] == ["main"] and report["model"] == str(EXAMPLE)


@requires_corpus
def test_semantics_and_the_layers_depending_on_it(tmp_path):
    """The report names the quantized semantics and the layers whose integers depend on it; the MLIR
    shows the difference (TFLite's requantization is DOUBLE_ROUND, CpuRef's SINGLE_ROUND)."""
    model = CORPUS / "armnn/litert_23.08/q8_resnet_like.armnn"
    litert, cpuref = nn2tosa.convert(model), nn2tosa.convert(model, semantics="cpuref")
    assert (litert.report.semantics, cpuref.report.semantics) == ("litert", "cpuref")
    convolutions = {str(s.loc) for s in litert.report.source_ops if s.op == "armnn.Convolution2d"}
    assert convolutions and convolutions <= set(litert.report.semantics_dependent)
    assert "DOUBLE_ROUND" in litert.mlir_text() and "DOUBLE_ROUND" not in cpuref.mlir_text()
    assert "doubleround" in litert.target.extensions and "doubleround" not in cpuref.target.extensions
    proc = run_cli("convert", str(model), "-o", str(tmp_path / "m.tosa"), "--semantics", "cpuref", "--report-json",
                   str(tmp_path / "r.json"))
    assert proc.returncode == 0, proc.stderr
    semantics = json.loads((tmp_path / "r.json").read_text())["semantics"]
    assert semantics["name"] == "cpuref" and len(semantics["dependent_layers"]) == len(cpuref.report.semantics_dependent)
    assert run_cli("convert", str(model), "-o", str(tmp_path / "n.tosa"), "--semantics", "tflm").returncode == 2


def test_a_float_model_has_no_layer_depending_on_the_semantics():
    assert nn2tosa.convert(EXAMPLE).report.semantics_dependent == []
