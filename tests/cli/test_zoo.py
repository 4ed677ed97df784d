"""Many models in one run (`nn2tosa convert ... --out-dir DIR`, `nn2tosa.convert_many`): real corpus models of both
formats with a corrupt file and an unsupported one; outputs byte for byte what converting each alone writes, the
.tosa run on the TOSA reference model, the per-model lines, the summary JSON, the exit status (the worst class),
-j 2 against -j 1, name collisions, and a worker that crashes or hangs. The whole-zoo tests (zoo_run) run with the
local pool and on a Dask cluster (--scheduler; more of the cluster in tests/cli/test_zoo_cluster.py)."""
from __future__ import annotations

import faulthandler
import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

from conftest import CORPUS, corpus_manifest, requires_corpus, run_cli

pytestmark = requires_corpus

# (corpus file, the status converting it alone gives)
MODELS = {
    "armnn/litert_23.08/q8_mobilenet_like.armnn": "ok",  # a whole int8 network (TFLite -> Arm NN 23.08)
    "armnn/tflite_20.08/tflm_hello_world_float.armnn": "ok",  # Arm NN 20.08's layout
    "mps/models/cnn_fp32.mpsgraph": "ok",
    "mps/models/mlp_fp32.extract0.pte": "ok",  # an MPS payload inside an ExecuTorch .pte
    "armnn/perlayer_23.08/noexec/standin_2in_1out_f32.armnn": "unsupported",  # StandIn: no defined computation
}
CORRUPT = "corrupt.armnn"  # the first half of q8_mobilenet_like.armnn
STATUS_EXIT = {"ok": 0, "unsupported": 3, "invalid": 2}


def _inputs(folder: Path) -> list[str]:
    corrupt = folder / CORRUPT
    data = (CORPUS / "armnn/litert_23.08/q8_mobilenet_like.armnn").read_bytes()
    corrupt.write_bytes(data[: len(data) // 2])
    return [str(CORPUS / m) for m in MODELS] + [str(corrupt)]


def _expected_status(path: str) -> str:
    return "invalid" if path.endswith(CORRUPT) else MODELS[str(Path(path).relative_to(CORPUS))]


@pytest.fixture(scope="module")
def zoo_inputs(tmp_path_factory) -> list[str]:
    """The models of every whole-zoo run here, the corrupt one written once."""
    return _inputs(tmp_path_factory.mktemp("inputs"))


@pytest.fixture(scope="module", params=["local", "cluster"])
def zoo_run(request, zoo_inputs, tmp_path_factory):
    """One `convert --out-dir` over all the models, by two workers: the local pool's (-j 2), or a Dask cluster's
    (--scheduler: the LocalCluster of conftest's zoo_cluster, two one-thread workers). (inputs, out dir,
    process, summary JSON)."""
    where = ["-j", "2"]
    if request.param == "cluster":
        where = ["--scheduler", request.getfixturevalue("zoo_cluster").scheduler_address]
    root = tmp_path_factory.mktemp("zoo")
    inputs = zoo_inputs
    out = root / "out"
    proc = run_cli("convert", *inputs, "--out-dir", str(out), "--emit", "tosa,mlirbc", *where,
                   "--summary-json", str(root / "summary.json"), timeout=600)
    summary = json.loads((root / "summary.json").read_text())
    assert summary.get("scheduler") == (where[1] if request.param == "cluster" else None)
    return inputs, out, proc, summary


def test_the_exit_status_is_the_worst_class(zoo_run):
    _, _, proc, summary = zoo_run
    # 0 ok, 3 unsupported, 2 invalid: invalid input is worse than valid input nn2tosa cannot convert
    assert proc.returncode == 2, proc.stderr.decode()
    assert summary["exit_code"] == 2
    assert summary["counts"] == {"ok": 4, "unsupported": 1, "invalid": 1}


def test_one_line_per_model_then_the_summary_table(zoo_run):
    inputs, _, proc, _ = zoo_run
    lines = proc.stdout.decode().splitlines()
    per_model = [line for line in lines if re.match(r"\[\d/6\] ", line)]
    assert len(per_model) == 6
    seen = {}
    for line in per_model:
        m = re.match(r"\[(\d)/6\] (\w+) +exit (\d) +(\d+\.\d\d) s +(\d+|-) ops  (.*)$", line)
        assert m, line
        path = next(p for p in inputs if m.group(6).startswith(p))
        seen[path] = m.group(2)
        assert int(m.group(3)) == STATUS_EXIT[m.group(2)]
        assert (m.group(5) == "-") == (m.group(2) != "ok")
    assert seen == {p: _expected_status(p) for p in inputs}
    corrupt_line = next(line for line in per_model if CORRUPT in line)
    assert "nn2tosa: error" not in corrupt_line and ": " in corrupt_line.split(CORRUPT, 1)[1]  # the reason follows
    table = lines[len(per_model):]
    assert table[0].split() == ["model", "status", "exit", "seconds", "ops", "outputs"]
    assert [row.split()[0] for row in table[1:-1]] == inputs  # in the order given
    assert re.fullmatch(r"6 models: (\d \w+(, )?){3}; \d+\.\d\d s; exit 2", table[-1]), table[-1]
    assert "\033[" not in proc.stderr.decode()  # no progress bar when stderr is not a terminal


def test_summary_json_describes_every_model(zoo_run):
    inputs, out, _, summary = zoo_run
    assert summary["models"] == 6 and summary["emit"] == ["tosa", "mlirbc"] and summary["jobs"] == 2
    assert [r["input"] for r in summary["results"]] == inputs
    for r in summary["results"]:
        status = _expected_status(r["input"])
        assert (r["status"], r["exit_code"]) == (status, STATUS_EXIT[status])
        if status == "ok":
            stem = Path(r["input"]).stem
            assert r["name"] == stem and r["message"] == ""
            assert r["outputs"] == [str(out / f"{stem}.tosa"), str(out / f"{stem}.mlirbc")]
            assert r["ops"] > 0 and r["cpu_seconds"] > 0
        else:
            assert r["outputs"] == [] and r["ops"] is None
            assert r["message"].startswith(r["input"] + ": ")
    unsupported = next(r for r in summary["results"] if r["status"] == "unsupported")
    assert "StandIn" in unsupported["message"]


def test_ops_are_what_the_api_reports(zoo_run):
    import nn2tosa

    _, _, _, summary = zoo_run
    for r in summary["results"]:
        if r["status"] == "ok":
            assert r["ops"] == sum(nn2tosa.convert(r["input"]).report.tosa_ops.values()), r["input"]


@pytest.fixture(scope="module")
def converted_alone(zoo_inputs, tmp_path_factory) -> dict[str, tuple[bytes, bytes]]:
    """What `nn2tosa convert MODEL -o X.tosa -o X.mlirbc` writes for each model that converts, once for both pools."""
    tmp = tmp_path_factory.mktemp("alone")
    alone = {}
    for path in (p for p in zoo_inputs if _expected_status(p) == "ok"):
        proc = run_cli("convert", path, "-o", str(tmp / "alone.tosa"), "-o", str(tmp / "alone.mlirbc"))
        assert proc.returncode == 0, proc.stderr.decode()
        alone[path] = ((tmp / "alone.tosa").read_bytes(), (tmp / "alone.mlirbc").read_bytes())
    return alone


def test_outputs_are_what_converting_each_model_alone_writes(zoo_run, converted_alone):
    inputs, out, _, _ = zoo_run
    ok = [p for p in inputs if _expected_status(p) == "ok"]
    written = sorted(p.name for p in out.iterdir())
    # only the converted models' outputs: nothing of the failed ones, no temporaries
    assert written == sorted(f"{Path(p).stem}.{kind}" for p in ok for kind in ("tosa", "mlirbc"))
    assert sorted(converted_alone) == sorted(ok)
    for path, (tosa, mlirbc) in converted_alone.items():
        stem = Path(path).stem
        assert (out / f"{stem}.tosa").read_bytes() == tosa, path
        assert (out / f"{stem}.mlirbc").read_bytes() == mlirbc, path


def test_the_tosa_outputs_run_on_the_reference_model(zoo_run):
    from corpus_harness import judge, load_expected, load_inputs, run_reference

    inputs, out, _, _ = zoo_run
    entries = {e["file"]: e for e in corpus_manifest()}
    checked = 0
    for path in inputs:
        entry = entries.get(str(Path(path).relative_to(CORPUS))) if path.startswith(str(CORPUS)) else None
        if entry is None or _expected_status(path) != "ok" or not entry["expected_files"]:
            continue
        outputs, status = run_reference((out / f"{Path(path).stem}.tosa").read_bytes(), load_inputs(entry))
        assert status == "TOSA_VALID", (path, status)
        verdict = judge(load_expected(entry), outputs, entry["tolerance"])
        assert verdict.ok, (path, verdict.problems)
        checked += 1
    assert checked >= 3


@pytest.fixture(scope="module")
def one_job_run(zoo_inputs, tmp_path_factory):
    """The local pool with one worker over the same models, once for both pools: (out dir, process, summary)."""
    tmp = tmp_path_factory.mktemp("one")
    proc = run_cli("convert", *zoo_inputs, "--out-dir", str(tmp / "one"), "--emit", "tosa,mlirbc", "-j", "1",
                   "--summary-json", str(tmp / "one.json"), timeout=600)
    return tmp / "one", proc, json.loads((tmp / "one.json").read_text())


def test_two_workers_write_what_one_job_writes(zoo_run, one_job_run):
    inputs, out, proc, summary = zoo_run
    one, proc1, summary1 = one_job_run
    assert proc1.returncode == proc.returncode
    assert sorted(p.name for p in one.iterdir()) == sorted(p.name for p in out.iterdir())
    for p in out.iterdir():
        assert (one / p.name).read_bytes() == p.read_bytes(), p.name

    def timeless(s: dict) -> list[tuple]:
        return [(r["input"], r["name"], r["status"], r["exit_code"], r["ops"], [Path(o).name for o in r["outputs"]],
                 r["message"]) for r in s["results"]]

    assert timeless(summary1) == timeless(summary) and summary1["jobs"] == 1


def test_inputs_sharing_a_stem_get_their_folders_or_a_number(tmp_path):
    import nn2tosa

    model = CORPUS / "mps/models/cnn_fp32.mpsgraph"
    for folder in ("a/x", "b/x", "c"):
        (tmp_path / folder).mkdir(parents=True)
    for path in ("a/x/m.mpsgraph", "b/x/m.mpsgraph", "c/m.mpsgraph", "c/m.pte"):
        shutil.copy(model, tmp_path / path)
    shutil.copy(CORPUS / "mps/models/mlp_fp32.mpsgraph", tmp_path / "c" / "m-1.mpsgraph")  # a stem like a number
    paths = [str(tmp_path / p) for p in ("a/x/m.mpsgraph", "b/x/m.mpsgraph", "c/m.mpsgraph", "c/m.pte",
                                         "c/m-1.mpsgraph")]
    results = nn2tosa.convert_many(paths, tmp_path / "out", jobs=1)
    assert [r.name for r in results] == ["a_x_m", "b_x_m", "c_m", "c_m-2", "m-1"]
    assert all(r.status == "ok" for r in results)
    data = {r.name: (tmp_path / "out" / f"{r.name}.tosa").read_bytes() for r in results}
    assert data["a_x_m"] == data["b_x_m"] == data["c_m"] == data["c_m-2"] != data["m-1"]


def test_a_file_given_twice_is_a_usage_error(tmp_path):
    model = str(CORPUS / "mps/models/cnn_fp32.mpsgraph")
    proc = run_cli("convert", model, model, "--out-dir", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == f"nn2tosa: error: {model}: given twice"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, says", [
    (["--out-dir", "D", "-o", "x.tosa"], "-o names one model's file or part: with --out-dir"),
    (["--out-dir", "D", "--report-json", "r.json"], "--emit report"),
    (["--out-dir", "D", "--report"], "--emit report"),
    (["--out-dir", "D", "--partition", "0"], "every partition of a .pte is converted"),
    (["--out-dir", "D", "--emit", "tosa,png"], "--emit tosa,png: name one or more of tosa, mlir, mlirbc, report "
                                               "(unknown: png)"),
    (["--out-dir", "D", "-j", "0"], "argument -j/--jobs: '0' is not positive"),
    (["-o", "x.tosa", "--emit", "tosa"], "--emit goes with --out-dir DIR"),
    (["-o", "x.tosa", "--jobs", "2"], "--jobs goes with --out-dir DIR"),
    ([], "required: -o/--output (or --out-dir DIR for several models)"),
])
def test_options_of_the_wrong_mode_are_usage_errors(tmp_path, args, says):
    model = str(CORPUS / "mps/models/cnn_fp32.mpsgraph")
    args = [str(tmp_path / a) if a in ("D", "x.tosa", "r.json") else a for a in args]
    proc = run_cli("convert", model, *args)
    assert proc.returncode == 2
    err = proc.stderr.decode().strip()
    assert err.startswith("nn2tosa: error: ") and says in err and "\n" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_several_inputs_need_an_out_dir(tmp_path):
    model = str(CORPUS / "mps/models/cnn_fp32.mpsgraph")
    proc = run_cli("convert", model, model, "-o", str(tmp_path / "x.tosa"))
    assert proc.returncode == 2 and "several models go into a directory (--out-dir DIR)" in proc.stderr.decode()


def test_out_dir_that_is_a_file_is_a_usage_error(tmp_path):
    (tmp_path / "f").write_text("")
    proc = run_cli("convert", str(CORPUS / "mps/models/cnn_fp32.mpsgraph"), "--out-dir", str(tmp_path / "f"))
    assert proc.returncode == 2 and "exists and is not a directory" in proc.stderr.decode()


def test_per_model_options_apply_to_each_model(tmp_path):
    """--profile, --partial and --emit mlir,report reach every model, as they would converting it alone."""
    int8 = str(CORPUS / "armnn/litert_23.08/q8_add.armnn")
    fp32 = str(CORPUS / "mps/models/cnn_fp32.mpsgraph")
    out = tmp_path / "out"
    proc = run_cli("convert", int8, fp32, "--out-dir", str(out), "--profile", "pro_int+doubleround", "--partial",
                   "--emit", "mlir,report", "--summary-json", str(tmp_path / "s.json"))
    assert proc.returncode == 3, proc.stderr.decode()
    results = {Path(r["input"]).stem: r for r in json.loads((tmp_path / "s.json").read_text())["results"]}
    assert results["cnn_fp32"]["status"] == "unsupported" and "pro_fp" in results["cnn_fp32"]["message"]
    assert results["q8_add"]["status"] == "ok"
    assert sorted(p.name for p in out.iterdir()) == ["q8_add.mlir", "q8_add.partition.json", "q8_add.report.json"]
    alone = run_cli("convert", int8, "--profile", "pro_int+doubleround", "--partial", "-o", str(tmp_path / "a.mlir"))
    assert alone.returncode == 0
    assert (out / "q8_add.mlir").read_text() == (tmp_path / "a.mlir").read_text()
    sidecar = (tmp_path / "a.partition.json").read_text().replace(str(tmp_path / "a.mlir"), str(out / "q8_add.mlir"))
    assert (out / "q8_add.partition.json").read_text() == sidecar
    report = json.loads((out / "q8_add.report.json").read_text())
    assert report["model"] == int8 and report["target"]["profiles"] == ["pro_int"]


def test_more_jobs_than_models(tmp_path):
    """-j 2 for one model starts one worker: a second, never given a model, would outlive the command and hold
    its stdout open (a caller reading it to the end waited forever)."""
    proc = run_cli("convert", str(CORPUS / "mps/models/cnn_fp32.mpsgraph"), "--out-dir", str(tmp_path), "-j", "2",
                   timeout=120)
    assert proc.returncode == 0 and (tmp_path / "cnn_fp32.tosa").exists()


def test_a_progress_bar_when_asked(tmp_path):
    model = str(CORPUS / "mps/models/cnn_fp32.mpsgraph")
    proc = run_cli("convert", model, "--out-dir", str(tmp_path), "--progress")
    assert proc.returncode == 0
    assert "] 1/1 models" in proc.stderr.decode() and proc.stderr.decode().endswith("\r\033[K")


# ------------------------------------------------------------------------------ the API
def test_convert_many_returns_a_result_per_model_in_order(tmp_path):
    import nn2tosa
    from nn2tosa.zoo import ModelResult

    inputs = _inputs(tmp_path)
    finished: list[ModelResult] = []
    results = nn2tosa.convert_many(inputs, tmp_path / "out", emit=["tosa"], jobs=2, on_result=finished.append)
    assert all(isinstance(r, ModelResult) for r in results)
    assert [r.input for r in results] == inputs and sorted(finished, key=lambda r: inputs.index(r.input)) == results
    assert [r.status for r in results] == [_expected_status(p) for p in inputs]
    for r in results:
        assert r.outputs == ((str(tmp_path / "out" / f"{r.name}.tosa"),) if r.status == "ok" else ())
        assert all(Path(o).read_bytes() == nn2tosa.convert(r.input).tosa_flatbuffer() for o in r.outputs)


def test_convert_many_takes_what_convert_takes(tmp_path):
    import nn2tosa
    from nn2tosa.diagnostics import UsageError

    model = str(CORPUS / "armnn/litert_23.08/q8_add.armnn")
    [r] = nn2tosa.convert_many([model], tmp_path, semantics="cpuref", max_ops=3)
    assert r.status == "invalid" and "--max-ops" in r.message  # the limits apply to each model
    [r] = nn2tosa.convert_many([model], tmp_path, semantics="cpuref")
    assert Path(r.outputs[0]).read_bytes() == nn2tosa.convert(model, semantics="cpuref").tosa_flatbuffer()
    with pytest.raises(UsageError, match="unknown option"):
        nn2tosa.convert_many([model], tmp_path, sidecar="x.json")
    with pytest.raises(UsageError, match="profile pro_nothing"):
        nn2tosa.convert_many([model], tmp_path, profile="pro_nothing")


def test_exit_classes_order_worst_first():
    from nn2tosa.zoo import worst_exit

    assert worst_exit([0, 3]) == 3 and worst_exit([3, 2, 0]) == 2 and worst_exit([2, 1, 3]) == 1
    assert worst_exit([]) == 0


# ------------------------------------------------------------------------------ a worker that crashes or hangs
def _misbehaving(convert):
    """A Job.convert that crashes its worker on "crash" models and hangs on "hang" ones, after starting to write
    an output (the temporary write_atomic would leave), and converts the rest as usual. Workers are forked, so
    they run this."""

    def run(job, path, name):
        if name in ("crash", "hang"):
            (job.out_dir / f".{name}.tosa.abcd1234.tmp").write_bytes(b"half")
            if name == "crash":
                faulthandler.disable()  # (pytest's would print the worker's stack to the test log)
                os.kill(os.getpid(), signal.SIGSEGV)
            time.sleep(600)
        return convert(job, path, name)

    return run


def test_a_crash_or_a_hang_in_one_model_stops_only_that_model(tmp_path, monkeypatch):
    import nn2tosa
    from nn2tosa import zoo

    monkeypatch.setattr(zoo.Job, "convert", _misbehaving(zoo.Job.convert))
    model = CORPUS / "mps/models/cnn_fp32.mpsgraph"
    paths = []
    for name in ("before", "crash", "hang", "after", "last"):
        shutil.copy(model, tmp_path / f"{name}.mpsgraph")
        paths.append(str(tmp_path / f"{name}.mpsgraph"))
    out = tmp_path / "out"
    results = nn2tosa.convert_many(paths, out, jobs=2, timeout=10)  # (ample for the others on a busy machine)
    by_name = {r.name: r for r in results}
    assert by_name["crash"].status == "crashed" and by_name["crash"].exit_code == 1
    assert "SIGSEGV" in by_name["crash"].message
    assert by_name["hang"].status == "timeout" and by_name["hang"].exit_code == 2
    assert "--timeout 10 s" in by_name["hang"].message and by_name["hang"].seconds >= 10
    assert all(by_name[n].status == "ok" for n in ("before", "after", "last"))
    # nothing left of the two that died; the others' outputs all there
    assert sorted(p.name for p in out.iterdir()) == ["after.tosa", "before.tosa", "last.tosa"]
    assert zoo.worst_exit([r.exit_code for r in results]) == 1
