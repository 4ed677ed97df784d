"""The benchmark runs as the README says, on a small generated model: every stage, the CLI run, the
numpy yardstick, the MLIR footprint and the start-up items are measured and judged against the
targets (the numbers themselves are the benchmark's business, not this test's: no timing asserts)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "benchmark.py"


def test_benchmark_measures_and_judges_a_small_model(tmp_path):
    done = subprocess.run([sys.executable, str(BENCH), "--only", "resnet_narrow_x1", "--runs", "1",
                           "--models", str(tmp_path / "models"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    row = results["models"]["resnet_narrow_x1"]
    assert set(row["stages"]) == {"import", "read", "legalize", "canonicalize", "lower", "report", "write .tosa",
                                  "MLIR module", "write .mlirbc", "write .mlir text"}
    assert all(v > 0 for v in row["stages"].values())
    assert row["tosa_ops"] > 200 and row["constant_mb"] > 1
    assert row["cli"]["rss_mb"] > row["file_mb"] and row["cli"]["wall"] > 0 and row["copy"]["process"] > 0
    assert 50 < results["footprint"]["mlir_footprint_mb"] < 500
    assert results["ir_roundtrip"]["ops"] == 10_000
    targets = {t["target"] for t in results["targets"]}
    assert {"resnet_narrow_x1: CLI peak RSS", "small corpus model CLI end to end", "nn2tosa --help"} <= targets
    table = (tmp_path / "out" / "results.md").read_text()
    assert "| resnet_narrow_x1 |" in table and "| target | measured | limit | met | note |" in table
    assert table in done.stdout
    # the generated model is kept for the next run
    assert (tmp_path / "models" / "scaling_resnet_x1.armnn").stat().st_size == row["file_mb"] * 1e6
