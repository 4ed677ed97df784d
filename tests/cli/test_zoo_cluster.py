"""A zoo run on a Dask cluster (`convert --out-dir DIR --scheduler ADDRESS`, `convert_many(executor=...)`): the
LocalCluster of conftest's zoo_cluster (two worker processes, loopback). tests/cli/test_zoo.py runs its whole-zoo
tests against it too (zoo_run's "cluster" parameter); here: a crash, a hang and a lost worker being their
models' results only (the workers' outputs returned or written by the workers), a worker that cannot see
the client's directory, an interrupted run, any concurrent.futures executor, and the cluster options'
usage errors."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import CORPUS, REPO, requires_corpus, run_cli

pytestmark = requires_corpus
MODEL = CORPUS / "mps/models/cnn_fp32.mpsgraph"
BIG = CORPUS / "armnn/litert_23.08/q8_mobilenet_like.armnn"


@pytest.fixture(scope="module")
def client(zoo_cluster):
    from distributed import Client

    with Client(zoo_cluster.scheduler_address, set_as_default=False) as c:
        yield c


def _copies(folder: Path, names: list[str], model: Path = MODEL) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(model, folder / f"{name}{model.suffix}")
    return [str(folder / f"{name}{model.suffix}") for name in names]


@pytest.mark.parametrize("write_on_workers", [False, True], ids=["client-writes", "workers-write"])
def test_a_crash_a_hang_or_a_lost_worker_stops_only_that_model(client, tmp_path, write_on_workers):
    import nn2tosa
    from nn2tosa import zoo
    from zoo_misbehaving import Misbehaving

    paths = _copies(tmp_path, ["before", "crash", "hang", "lose", "after", "last"])
    out = tmp_path / "out"
    results = nn2tosa.convert_many(paths, out, executor=Misbehaving(client.get_executor(pure=False)), timeout=10,
                                   write_on_workers=write_on_workers)
    by_name = {r.name: r for r in results}
    assert [r.input for r in results] == paths
    # the converter process died: the model's result, the worker goes on (no retry: the worker is fine)
    assert (by_name["crash"].status, by_name["crash"].exit_code) == ("crashed", 1)
    assert "the process converting it died (signal SIGSEGV)" in by_name["crash"].message
    assert (by_name["hang"].status, by_name["hang"].exit_code) == ("timeout", 2)
    assert "--timeout 10 s" in by_name["hang"].message and by_name["hang"].seconds >= 10
    # the worker itself died, and the one that took the model over: Dask gave up after one retry
    assert (by_name["lose"].status, by_name["lose"].exit_code) == ("crashed", 1)
    assert "KilledWorker" in by_name["lose"].message and "on 2 different workers" in by_name["lose"].message
    assert all(by_name[n].status == "ok" for n in ("before", "after", "last"))
    # nothing of the three that failed, not even a temporary; the others' outputs whole
    assert sorted(p.name for p in out.iterdir()) == ["after.tosa", "before.tosa", "last.tosa"]
    expected = nn2tosa.convert(MODEL).tosa_flatbuffer()
    assert all((out / f"{n}.tosa").read_bytes() == expected for n in ("before", "after", "last"))
    assert zoo.worst_exit([r.exit_code for r in results]) == 1
    client.wait_for_workers(2, timeout=120)  # (the nannies restart the two killed workers)


def test_a_worker_that_cannot_see_the_clients_directory(zoo_cluster, client, tmp_path, monkeypatch):
    """The workers' working directory is not the client's: relative input paths name nothing there. Sent from
    the client (the default), the models convert and their outputs come back into the client's DIR."""
    import nn2tosa
    import nn2tosa.zoo_sandbox

    here, there = tmp_path / "client", tmp_path / "worker"
    there.mkdir()
    _copies(here / "models", ["m"])
    monkeypatch.chdir(here)
    before = client.run(os.getcwd)
    client.run(nn2tosa.zoo_sandbox.close_all)  # (the converter processes start again, in the new directory)
    client.run(os.chdir, str(there))
    try:
        proc = run_cli("convert", "models/m.mpsgraph", "--out-dir", "out", "--emit", "tosa,mlirbc",
                       "--scheduler", zoo_cluster.scheduler_address)
        assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
        result = nn2tosa.convert("models/m.mpsgraph")
        assert (here / "out/m.tosa").read_bytes() == result.tosa_flatbuffer()
        assert (here / "out/m.mlirbc").read_bytes() == result.mlir_bytecode()
        # the workers opening the path themselves find nothing: the file is the client's alone
        proc = run_cli("convert", "models/m.mpsgraph", "--out-dir", "out2", "--scheduler", zoo_cluster.scheduler_address,
                       "--read-on-workers")
        assert proc.returncode == 2 and "models/m.mpsgraph: no such file" in proc.stdout.decode()
        assert list(there.iterdir()) == []  # the workers wrote nothing where they are
    finally:
        client.run(nn2tosa.zoo_sandbox.close_all)
        for address, cwd in before.items():
            client.run(os.chdir, cwd, workers=[address])


def test_workers_write_into_shared_storage(zoo_cluster, client, tmp_path):
    """--read-on-workers --write-on-workers: DIR and the inputs are on storage the workers see (here: the
    same disk); nothing goes through the client but the results."""
    import nn2tosa

    paths = _copies(tmp_path / "models", ["a", "b"])
    proc = run_cli("convert", *paths, "--out-dir", str(tmp_path / "out"), "--scheduler", zoo_cluster.scheduler_address,
                   "--read-on-workers", "--write-on-workers")
    assert proc.returncode == 0, proc.stdout.decode() + proc.stderr.decode()
    expected = nn2tosa.convert(MODEL).tosa_flatbuffer()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.tosa", "b.tosa"]
    assert all((tmp_path / "out" / n).read_bytes() == expected for n in ("a.tosa", "b.tosa"))


def test_ctrl_c_cancels_what_is_queued_and_leaves_no_half_written_output(zoo_cluster, client, tmp_path):
    import nn2tosa

    paths = _copies(tmp_path / "models", [f"m{k:02}" for k in range(24)], model=BIG)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "nn2tosa", "convert", *paths, "--out-dir", str(out), "--emit",
                             "tosa,mlirbc", "--scheduler", zoo_cluster.scheduler_address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                            # (a shell's background job starts with SIGINT ignored, and a child inherits that:
                            # its Ctrl-C would then be ignored. The run starts as from a terminal.)
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    first = proc.stdout.readline().decode()  # a model has finished: the run is under way
    assert first.startswith("[ 1/24] ok"), first
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and err.decode().strip().endswith("nn2tosa: interrupted"), err.decode()
    done = 1 + sum(1 for line in rest.decode().splitlines() if line.startswith("["))
    assert done < 24  # the rest were cancelled
    time.sleep(3)  # (what was running on the workers finishes there, and is never written here)
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 2 * done and not any(n.endswith(".tmp") for n in written), written
    result = nn2tosa.convert(BIG)
    for name in written:
        expected = result.tosa_flatbuffer() if name.endswith(".tosa") else result.mlir_bytecode()
        assert (out / name).read_bytes() == expected, name


def test_any_executor_runs_a_zoo(tmp_path):
    """A ThreadPoolExecutor on this machine: the same results and outputs as the local pool."""
    import nn2tosa

    corrupt = tmp_path / "corrupt.armnn"
    corrupt.write_bytes(BIG.read_bytes()[:1000])
    paths = [str(MODEL), str(corrupt), str(tmp_path / "missing.armnn")]
    with ThreadPoolExecutor(2) as executor:
        results = nn2tosa.convert_many(paths, tmp_path / "out", executor=executor, emit="tosa,report")
    local = nn2tosa.convert_many(paths, tmp_path / "local", jobs=2, emit="tosa,report")
    assert [(r.status, r.exit_code, r.ops, r.message) for r in results] == \
           [(r.status, r.exit_code, r.ops, r.message) for r in local]
    assert [r.status for r in results] == ["ok", "invalid", "invalid"]
    for name in ("cnn_fp32.tosa", "cnn_fp32.report.json"):
        ours, theirs = (tmp_path / "out" / name).read_bytes(), (tmp_path / "local" / name).read_bytes()
        if name.endswith(".json"):  # (the report's timings differ from run to run)
            import json

            ours, theirs = (json.loads(d) for d in (ours, theirs))
            for report in (ours, theirs):
                report.pop("timings")
        assert ours == theirs, name


@pytest.mark.parametrize("args, says", [
    (["--read-on-workers"], "--read-on-workers goes with --scheduler ADDRESS"),
    (["--write-on-workers"], "--write-on-workers goes with --scheduler ADDRESS"),
    (["--scheduler", "tcp://127.0.0.1:9", "-j", "2"], "--jobs sizes the local pool"),
    (["--scheduler", "tcp://127.0.0.1:9"], "--scheduler tcp://127.0.0.1:9: cannot connect"),
])
def test_cluster_options_out_of_place_are_usage_errors(tmp_path, args, says):
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install -e '.[test]')")
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s")  # (Dask's own setting; default 30 s)
    proc = subprocess.run([sys.executable, "-m", "nn2tosa", "convert", str(MODEL), "--out-dir", str(tmp_path / "out"),
                           *args], capture_output=True, env=env, timeout=120)
    assert proc.returncode == 2
    err = proc.stderr.decode().strip()
    assert err.startswith("nn2tosa: error: ") and says in err and "\n" not in err, err
