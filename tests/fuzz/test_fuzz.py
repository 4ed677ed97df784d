"""A short seeded fuzz run over all three input formats, and every regression file the fuzzer found.

The engine is bench/fuzz_long.py (its docstring says what a case is and what counts as a failure);
this runs a few hundred mutants in well under a minute. Every run must exit 0, 2 or 3 with at most
one line on stderr and no traceback, within the hang timeout, without a memory blowup, and leave
both outputs or neither. A failure's message lists the reproducers it wrote under pytest's tmp_path.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, fuzz_engine, requires_corpus

REGRESSIONS = Path(__file__).resolve().parents[1] / "fuzz_regressions"

SEED = 20240607
# mutants per kind in the short run, and seed files per kind (spread over sizes)
CASES = {"armnn": 100, "mps": 100, "tosa": 60, "program": 30, "npu": 24, "tosa-external": 24, "compare": 12,
         "compare-dump": 40}
SEEDS = {"armnn": 30, "mps": 24, "tosa": 8, "program": 6, "npu": 12, "tosa-external": 4, "compare": 8,
         "compare-dump": 16}


engine = fuzz_engine()


@pytest.fixture(scope="module")
def runner():
    return engine.ForkRunner(timeout=60, memory_mb=768, jobs=2)


def _failure_report(report, tmp_path: Path) -> str:
    lines = [report.line(), *report.examples[:20]]
    lines += [f"reproducer: {p} (see the .txt beside it)" for p in report.reproducers[:20]]
    return "\n".join(lines) + f"\n(all under {tmp_path})"


@requires_corpus
@pytest.mark.parametrize("fmt", engine.FORMATS)
def test_short_fuzz_run(fmt, runner, tmp_path):
    if fmt in ("tosa", "tosa-external"):
        candidates = engine.make_tosa_seeds(CORPUS, tmp_path / "tosa-seeds", SEEDS[fmt], external=fmt == "tosa-external")
    else:
        candidates = engine.pick(engine.corpus_seeds(CORPUS, fmt), SEEDS[fmt])
    seeds, left_out = engine.healthy(candidates, runner, tmp_path, fmt)
    assert len(seeds) >= len(candidates) // 2, "most seeds fail unmutated:\n" + "\n".join(left_out)
    report = engine.campaign(fmt, seeds, CASES[fmt], SEED, runner, tmp_path, tmp_path / "failures")
    assert report.cases == CASES[fmt] and report.runs == engine.runs_per_case(fmt) * CASES[fmt]
    assert not report.failures, _failure_report(report, tmp_path)
    # the mutants reached both the error paths and full conversions (or comparisons)
    assert report.exit_codes[2] > 0 and report.exit_codes[0] > 0, report.line()


def test_mutations_are_deterministic_and_change_the_seed():
    import random

    seed = bytes(range(256)) * 4
    sites = [engine.Site("uoffset", 8, 4), engine.Site("vector_length", 40, 4), engine.Site("dim", 64, 4),
             engine.Site("union_tag", 80, 1), engine.Site("scalar", 96, 4, signed=True), engine.Site("soffset", 120, 4)]
    first = [engine.mutate(seed, sites, random.Random(7), [seed]) for _ in range(50)]
    again = [engine.mutate(seed, sites, random.Random(7), [seed]) for _ in range(50)]
    assert [m.data for m in first] == [m.data for m in again]
    assert all(m.data != seed and m.steps for m in first)


@requires_corpus
def test_site_maps_find_the_structure_of_real_files(tmp_path):
    """The mutators aim at real structure: every format's map has offsets, vector lengths, union tags
    and dimensions, at positions inside the file."""
    picks = {"armnn": CORPUS / "armnn/perlayer_23.08/conv2d_nhwc_k3s1_same_bias_f32.armnn",
             "mps": CORPUS / "mps/models/cnn_fp32.mpsgraph"}
    files = {fmt: path.read_bytes() for fmt, path in picks.items()}
    pte = sorted(CORPUS.glob("mps/**/*.pte"))
    tosa = engine.make_tosa_seeds(CORPUS, tmp_path, 2)
    assert tosa, "no .tosa seed could be written"
    for fmt, data in [*files.items(), ("tosa", tosa[0].read_bytes())] + [("mps", p.read_bytes()) for p in pte]:
        sites = engine.file_sites(data, fmt)
        kinds = {s.kind for s in sites}
        assert {"uoffset", "vector_length", "dim", "union_tag", "vtable_entry", "enum", "string",
                "table_vector"} <= kinds, (fmt, kinds)
        assert fmt == "tosa" or "float" in kinds, fmt  # (TOSA 1.0 keeps its float attributes as bytes)
        assert all(0 <= s.pos and s.pos + s.size <= len(data) for s in sites)


@requires_corpus
def test_the_structural_mutations_do_what_they_say():
    """Dropped fields, extreme floats, enums out of range, long strings and reordered vectors, on a real file."""
    import random
    import struct

    data = (CORPUS / "armnn/perlayer_23.08/conv2d_nhwc_k3s1_same_bias_f32.armnn").read_bytes()
    sites = engine.file_sites(data, "armnn")
    rng = random.Random(3)
    for _ in range(20):
        buf = bytearray(data)
        step = engine.mutation.m_drop_field(buf, sites, rng, [])
        pos = int(step.rsplit(" ", 1)[1])
        assert buf[pos:pos + 2] == b"\0\0" and "dropped" in step
        buf = bytearray(data)
        step = engine.mutation.m_float(buf, sites, rng, [])
        pos, value = int(step.split(" at ")[1].split(" ")[0]), float(step.rsplit("= ", 1)[1])
        assert buf[pos:pos + 4] == struct.pack("<f", value)  # (as float32: 1e-45 is the smallest denormal)
        buf = bytearray(data)
        assert engine.mutation.m_enum(buf, sites, rng, []).startswith("enum ") and buf != bytearray(data)
        buf = bytearray(data)
        step = engine.mutation.m_long_string(buf, sites, rng, [])
        at, length = int(step.rsplit(" at ", 1)[1]), int(step.split("-> ")[1].split(" ")[0])
        pos = int(step.split(" at ")[1].split(" ")[0])
        assert pos + int.from_bytes(buf[pos:pos + 4], "little") == at
        assert int.from_bytes(buf[at:at + 4], "little") == length == len(buf) - at - 5
        buf = bytearray(data)
        step = engine.mutation.m_shuffle(buf, sites, rng, [])
        vector = next(v for v in sites if v.kind == "table_vector" and step.startswith(v.name))
        def targets(b: bytes) -> list[int]:
            return [p + int.from_bytes(b[p:p + 4], "little") for p in range(vector.pos, vector.pos + vector.size, 4)]
        assert sorted(targets(buf)) == sorted(targets(data))  # the same tables, in another order


# ------------------------------------------------------------------------------ regressions
def _regressions() -> list[tuple[Path, dict]]:
    expected = json.loads((REGRESSIONS / "expected.json").read_text())
    files = sorted(p for p in REGRESSIONS.iterdir() if p.is_file() and p.suffix in (".armnn", ".mpsgraph", ".pte",
                                                                                     ".tosa"))
    assert sorted(p.name for p in files) == sorted(expected), "every regression file needs its expected exit codes"
    return [(p, expected[p.name]) for p in files]


# runs of other fuzz kinds a regression file can ask for by naming them in expected.json (those that need
# nothing but the file: not compare-dump, which needs the seed's Arm NN dump)
EXTRA_RUNS = {name: argv for kind in ("compare", "npu") for name, argv in engine.KIND_COMMANDS[kind].items()
              if name not in engine.COMMANDS and name != "compare-dump"}


def _regression_runs(path: Path, expected: dict, outdir: Path) -> list[tuple[str, list[str], Path]]:
    """inspect, convert and check, and each run of EXTRA_RUNS the file lists a code for (a finding of
    the compare or npu kind, whose damage only `compare --reference float` or `--target` reached)."""
    runs = engine.commands(path, outdir)
    for name in expected.keys() & EXTRA_RUNS.keys():
        own = outdir / name
        own.mkdir()
        runs.append((name, [*EXTRA_RUNS[name](path, own, path), *engine.CHILD_LIMITS], own))
    return runs


def test_regressions(tmp_path):
    # a longer hang timeout than the short run's: `check` of the million-row pooling file runs the
    # reference model on 6M elements (20 s on a loaded machine); an endless loop still shows as a hang
    runner = engine.ForkRunner(timeout=300, memory_mb=768, jobs=2)
    cases = _regressions()
    jobs = []
    owners = []  # the case each run belongs to
    for k, (path, expected) in enumerate(cases):
        outdir = tmp_path / str(k)
        outdir.mkdir()
        runs = _regression_runs(path, expected, outdir)
        jobs += runs
        owners += [k] * len(runs)
    runs = runner.run_all(jobs)
    problems = []
    for k, run in zip(owners, runs):
        path, expected = cases[k]
        verdict = engine.judge(run, runner.memory_mb)
        if verdict or run.exit_code != expected[run.command]:
            problems.append(f"{path.name} {run.command}: exit {run.exit_code} (expected {expected[run.command]}), "
                            f"{verdict or 'no failure kind'}: {run.stderr.strip()[:300]}")
    assert not problems, "\n".join(problems)


def test_a_regression_through_the_installed_entry_point(tmp_path):
    """The same answer from a fresh `python -m nn2tosa` as from the forked runner (default limits)."""
    path = REGRESSIONS / "armnn-layer-union-without-table-input.armnn"
    r = subprocess.run([sys.executable, "-m", "nn2tosa", "convert", str(path), "-o", str(tmp_path / "x.tosa"),
                        "-o", str(tmp_path / "x.mlir")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert r.stderr == f"nn2tosa: error: {path}: layer #0: the layer has type InputLayer but no table\n"
    assert list(tmp_path.iterdir()) == []
