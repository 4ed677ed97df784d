"""`nn2tosa compare`: layer-by-layer comparison with Arm NN's own per-layer dumps (corpus
armnn/debug_20.08, written by Arm NN 20.08's CpuRef with OptimizerOptions m_Debug), with .npy
directories, with the float reference; a corrupted constant is found as the first divergence; the
table, JSON and HTML forms (the HTML rendered by headless Chromium where it is installed)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn2tosa.check import compare as compare_output
from nn2tosa.comparison import compare

pytest.importorskip("tosa_reference_model", reason="tosa-tools is not installed")

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
DEBUG = CORPUS / "armnn" / "debug_20.08"
LITERT = CORPUS / "armnn" / "litert_23.08"
MPS = CORPUS / "mps" / "models"
needs_corpus = pytest.mark.skipif(not DEBUG.is_dir(), reason=f"the corpus is not at {CORPUS}")
DUMPED = sorted(p.name[:-len(".armnn")] for p in DEBUG.glob("*.armnn")) if DEBUG.is_dir() else []


def _run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nn2tosa", "compare", *args], capture_output=True, text=True,
                          timeout=600)


def _records(name: str) -> list[dict]:
    return [json.loads(line) for line in open(DEBUG / f"{name}.armnn_debug.json") if line.strip()]


# ------------------------------------------------------------------------------ against Arm NN's own dumps
@needs_corpus
@pytest.mark.parametrize("name", DUMPED)
def test_every_layer_agrees_with_the_armnn_debug_dump(name: str) -> None:
    """Float models within fp32 tolerance at every compared layer; quantized ones (cpuref, the integers
    Arm NN's CpuRef computes) within the LSB count `check` finds at their outputs."""
    result = compare(str(DEBUG / f"{name}.armnn"), reference=str(DEBUG / f"{name}.armnn_debug.json"),
                     semantics="cpuref")
    assert result.status == "TOSA_VALID"
    # the LSB counts check gives for the outputs (the model's expected outputs are Arm NN's)
    from nn2tosa.check import prepare, run

    model = prepare(str(DEBUG / f"{name}.armnn"), semantics="cpuref")
    inputs = [np.load(DEBUG / f"{name}.input{i}.npy") for i in range(len(model.inputs))]
    outputs, _, _ = run(model, inputs)
    output_lsb = max(compare_output(np.load(DEBUG / f"{name}.output{i}.npy"), o, "quantized").max_error
                     for i, o in enumerate(outputs) if o.dtype.kind in "iu") if any(
        o.dtype.kind in "iu" for o in outputs) else 0
    compared = result.compared
    assert compared, "no layer compared"
    for row in compared:
        m = row.metrics
        assert m is not None
        if m.lsb is not None:
            assert m.lsb <= max(output_lsb, 0), (row.point.key, m.lsb)
        else:
            assert m.relative <= 1e-4 and m.off == 0, (row.point.key, m.relative)
    assert result.ok
    # every record of a layer in the file is compared, or the table says why not (fused away)
    keys = {r.point.layer for r in compared}
    file_layers = {r.point.layer for r in result.rows}
    for record in _records(name):
        layer = record["layerName"]
        if layer not in file_layers:  # an Input layer, or slice_f16's conversion layers (not in the file)
            continue
        rows = [r for r in result.rows if r.point.layer == layer and r.point.slot == record["outputSlot"]]
        assert layer in keys or all(r.reason.startswith("not visible") for r in rows), (layer, [r.reason for r in rows])


@needs_corpus
def test_a_debug_to_file_directory_is_a_reference(tmp_path: Path) -> None:
    """Newer Arm NN writes the same records one per file (m_DebugToFile: LAYER.numpy): such a directory
    is read as the dump it splits."""
    name = "cnn_conv_relu_maxpool_fc_softmax_f32"
    for line in open(DEBUG / f"{name}.armnn_debug.json"):
        (tmp_path / f"{json.loads(line)['layerName']}.numpy").write_text(line)
    result = compare(str(DEBUG / f"{name}.armnn"), reference=str(tmp_path))
    assert result.reference == f"Arm NN's debug dump {tmp_path}"
    assert result.ok and len(result.compared) == 6


@needs_corpus
def test_a_corrupted_constant_is_the_first_divergence(monkeypatch: pytest.MonkeyPatch) -> None:
    """The converted graph with one layer's weights negated (a copy: the model file is untouched) is
    found diverging at that layer first, and what feeds it is named."""
    import nn2tosa.check as check

    prepare = check.prepare

    def corrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        model = prepare(*args, **kwargs)
        graph = model.result.graph
        const = next(n for n in graph.topological() if graph.op(n) == "tosa.const" and graph.loc(n)
                     and graph.loc(n).name == "fc1" and graph.types(n)[0].shape == (10, 1, 1, 512))
        graph.attrs(const)["values"] = -np.asarray(graph.attrs(const)["values"])
        return model

    monkeypatch.setattr(check, "prepare", corrupted)
    name = "cnn_conv_relu_maxpool_fc_softmax_f32"
    result = compare(str(DEBUG / f"{name}.armnn"), reference=str(DEBUG / f"{name}.armnn_debug.json"))
    first = result.first_divergence
    assert first is not None and first.point.key == "fc1:0"
    assert [r.point.key for r in result.feeds_of(first)] == ["flatten:0"]
    assert all(r.metrics and r.metrics.ok for r in result.rows[:first.point.order - 1] if r.metrics)
    assert not result.ok


@needs_corpus
def test_npy_directory_reference_and_tensor_names(tmp_path: Path) -> None:
    """A directory of .npy files named as --list-tensors prints them (written here from Arm NN's dump,
    uint8 stored integers) is a reference; a wrong array in it is found."""
    name = "cnn_quant_qasymmu8"
    listed = _run_cli(str(DEBUG / f"{name}.armnn"), "--list-tensors")
    assert listed.returncode == 0, listed.stderr
    files = [line.split("\t")[0] for line in listed.stdout.splitlines()]
    assert files[0] == "input_u8:0.npy" and "conv_u8:0.npy" in files
    for record in _records(name):
        file = f"{record['layerName']}:{record['outputSlot']}.npy"
        assert file in files
        np.save(tmp_path / file, np.asarray(record["data"], dtype=np.uint8).reshape(record["shape"]))
    ok = _run_cli(str(DEBUG / f"{name}.armnn"), "--reference", str(tmp_path), "--semantics", "cpuref")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "on the inputs" in ok.stdout  # taken from the directory's input_u8:0.npy
    wrong = np.load(tmp_path / "avgpool_u8:0.npy")
    wrong[0, 0, 0, 0] ^= 8
    np.save(tmp_path / "avgpool_u8:0.npy", wrong)
    bad = _run_cli(str(DEBUG / f"{name}.armnn"), "--reference", str(tmp_path), "--semantics", "cpuref")
    assert bad.returncode == 1
    assert re.search(r"^>>\s+3\s+avgpool_u8:0 ", bad.stdout, re.M), bad.stdout
    assert "first divergence: avgpool_u8:0 Pooling2d (layer 3); fed by relu6_u8:0 (within, 0 LSB)" in bad.stdout


@needs_corpus
def test_partial_conversion_region_by_region() -> None:
    """A layer left to the host splits the model into two regions; the second is fed the dump's value of
    the host layer's output, and every converted layer agrees with Arm NN's dump."""
    name = "cnn_quant_qasymmu8"
    result = compare(str(DEBUG / f"{name}.armnn"), reference=str(DEBUG / f"{name}.armnn_debug.json"),
                     semantics="cpuref", partial=True, host=["avgpool_u8"])
    by_key = {r.point.key: r for r in result.rows}
    assert by_key["avgpool_u8:0"].metrics is None
    assert by_key["avgpool_u8:0"].reason == "left to the host by the partial conversion"
    assert by_key["fc_u8:0"].metrics is not None and by_key["fc_u8:0"].metrics.lsb == 0  # in the second region
    assert result.ok and len(result.compared) == 4


@pytest.mark.parametrize("cond,n", [(True, 5), (False, 0)])
def test_control_flow_tensors_compared_from_the_dump(tmp_path: Path, cond: bool, n: int) -> None:
    """A .tosa whose COND_IF runs a WHILE_LOOP (y = n * x, else |x|): the COND_IF's result, computed
    here in numpy, is compared from the reference model's dump of the branch that ran."""
    sys.path.insert(0, str(REPO / "tests"))
    from test_control_flow_emit import tosa_opt_file

    model = tmp_path / "nested.tosa"
    model.write_bytes(tosa_opt_file("nested"))
    listed = _run_cli(str(model), "--list-tensors")
    assert listed.returncode == 0, listed.stderr
    cond_if = next(line.split("\t")[0] for line in listed.stdout.splitlines() if line.endswith("tosa.cond_if"))
    ref = tmp_path / "ref"
    ref.mkdir()
    x = np.array([1.5, -2.0, 0.25], np.float32)
    np.save(ref / "cond:0.npy", np.array(cond))
    np.save(ref / "x:0.npy", x)
    np.save(ref / "n:0.npy", np.array(n, np.int32))
    np.save(ref / cond_if, n * x if cond else np.abs(x))
    result = compare(str(model), reference=str(ref))
    rows = [r for r in result.rows if r.point.op == "tosa.cond_if"]
    assert len(rows) == 1 and rows[0].metrics is not None and rows[0].metrics.max_abs == 0
    assert result.ok and result.inputs == "the inputs the reference holds"
    np.save(ref / cond_if, n * x + 1 if cond else np.abs(x) + 1)
    assert not compare(str(model), reference=str(ref)).ok


# ------------------------------------------------------------------------------ the float reference
@needs_corpus
@pytest.mark.parametrize("name", ["q8_mobilenet_like", "q8_resnet_like", "q8_transformer_like"])
def test_float_reference_profiles_quantization_error(name: str) -> None:
    """Every visible layer of the LiteRT networks has a float reference; quantization adds a few
    LSB at most and the signal stays far above the noise."""
    result = compare(str(LITERT / f"{name}.armnn"), [str(LITERT / f"{name}.input0.npy")], "float")
    assert result.status == "TOSA_VALID" and not result.missing_reference
    assert all(r.metrics is not None or r.point.value is None for r in result.rows), \
        [(r.point.key, r.reason) for r in result.rows if r.metrics is None and r.point.value is not None]
    worst = result.worst()
    assert worst is not None and worst.metrics is not None
    for row in result.compared:
        assert row.metrics is not None and row.metrics.lsb is not None
        assert row.metrics.lsb < 16 and row.metrics.sqnr_db > 15, (row.point.key, row.metrics)


@needs_corpus
@pytest.mark.parametrize("name", ["cnn_fp16", "mlp_fp16"])
def test_float_reference_on_mps_fp16(name: str) -> None:
    """MPS fp16 graphs (NCHW, computed NHWC) agree with the float64 reference within fp16 tolerance at
    every visible node: the layout of each compared tensor is found."""
    result = compare(str(MPS / f"{name}.mpsgraph"), [str(MPS / f"{name}.input0.npy")], "float")
    assert result.tolerance == "fp16"
    assert result.compared and result.ok, [(r.point.key, r.metrics) for r in result.compared]


# ------------------------------------------------------------------------------ the forms
@needs_corpus
def test_table_json_and_exit_codes(tmp_path: Path) -> None:
    model = str(LITERT / "q8_resnet_like.armnn")
    out = _run_cli(model, "--inputs", str(LITERT / "q8_resnet_like.input0.npy"), "--sort",
                   "--json", str(tmp_path / "c.json"))
    assert out.returncode == 1  # quantization error beyond 1 LSB somewhere
    lines = out.stdout.splitlines()
    assert lines[1].split() == ["#", "tensor", "type", "status", "shape", "dtype", "max", "abs", "err", "rel", "mean",
                                "SQNR", "dB", "cos", "off"]
    data = json.loads((tmp_path / "c.json").read_text())
    compared = [r for r in data["rows"] if r["compared"]]
    scores = [r["metrics"]["lsb"] for r in compared]
    table_order = [(cells[2] if cells[0] in (">>", "!") else cells[1])
                   for cells in (line.split() for line in lines[2:2 + len(compared)])]
    assert table_order == [r["tensor"] for r in sorted(compared, key=lambda r: -r["metrics"]["lsb"])]
    assert max(scores) > 1 and data["first_divergence"]["tensor"] in table_order
    missing = _run_cli(model, "--reference", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr
    wrong = _run_cli(model, "--inputs", str(DEBUG / "fp32_model.input0.npy"))
    assert wrong.returncode == 2 and "input 0 'x' must be 1x16x16x8 i8" in wrong.stderr, wrong.stderr
    not_a_dump = tmp_path / "x.json"
    not_a_dump.write_text("{}\n")
    assert _run_cli(model, "--reference", str(not_a_dump)).returncode == 2


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    if not DEBUG.is_dir():
        pytest.skip(f"the corpus is not at {CORPUS}")
    out = tmp_path_factory.mktemp("html")
    proc = _run_cli(str(LITERT / "q8_mobilenet_like.armnn"), "--inputs", str(LITERT / "q8_mobilenet_like.input0.npy"),
                    "--html", str(out / "c.html"), "--json", str(out / "c.json"))
    assert proc.returncode in (0, 1), proc.stderr
    return out / "c.html", json.loads((out / "c.json").read_text())


def test_html_holds_every_compared_layer(page: tuple[Path, dict]) -> None:
    path, data = page
    text = path.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)  # self-contained
    for row in data["rows"]:
        assert f'data-tensor="{row["tensor"]}"' in text
    embedded = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
                          .group(1).replace("<\\/", "</"))
    assert [r["tensor"] for r in embedded["rows"] if r["compared"]] == \
        [r["tensor"] for r in data["rows"] if r["compared"]]


def test_html_renders_a_point_per_layer_in_chromium(page: tuple[Path, dict]) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)")
    path, data = page
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.as_uri()],
                          capture_output=True, text=True, timeout=300)
    dom = proc.stdout
    compared = [r for r in data["rows"] if r["compared"]]
    assert len(re.findall(r'<circle class="pt"', dom)) == len(compared), proc.stderr[-2000:]
    assert f'data-drawn="{len(compared)}"' in dom
    assert len(re.findall(r'<g class="node"', dom)) == len(data["rows"])
