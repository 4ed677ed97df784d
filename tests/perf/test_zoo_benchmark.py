"""bench/zoo.py runs as docs/performance.md says, on two corpus pairs: the peer per model, one nn2tosa run, the
totals and the ratio judged against the target (the numbers are the benchmark's business: no timing asserts).
It needs the peer from the `bench` extra (`pip install -e '.[test,bench]'`)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, requires_corpus

PEER = Path(sys.executable).parent / "tosa-converter-for-tflite"


@requires_corpus
@pytest.mark.skipif(not PEER.exists() and shutil.which("tosa-converter-for-tflite") is None,
                    reason="the peer is not installed: pip install -e '.[test,bench]'")
def test_zoo_benchmark_measures_both_sides(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "bench" / "zoo.py"), "--runs", "1", "--jobs", "1",
                           "--only", "q8_relu", "q8_abs", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "zoo.json").read_text())
    # q8_relu from both Arm NN generations; q8_abs is one the peer cannot convert: left out on both sides
    assert [Path(t).parent.name for t, _ in results["pairs"]] == ["litert_20.08", "litert_23.08"]
    assert [Path(f).name for f in results["peer_failures"]] == ["q8_abs.tflite"]
    assert results["models"] == 2 and set(results["peer"]["models"]) == {t for t, _ in results["pairs"]}
    ours = results["nn2tosa"]["-j 1"]
    assert set(ours["models"]) == {a for _, a in results["pairs"]}
    assert ours["cpu"] > sum(m["cpu"] for m in ours["models"].values()) > 0 and results["peer"]["cpu"] > 0
    [target] = results["targets"]
    assert target["measured"] == pytest.approx(ours["cpu"] / results["peer"]["cpu"])
    assert "| peer: `tosa-converter-for-tflite`" in (tmp_path / "zoo.md").read_text()
