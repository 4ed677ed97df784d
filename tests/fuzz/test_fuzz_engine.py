"""The fuzzing engine's own costs (bench/fuzz_long.py), counted, never timed: a forked child imports nothing
the parent has not imported, and the seeds' unmutated verdicts are reused by content and code
(bench/fuzz_seed_cache.py), with the same verdicts as running them."""
from __future__ import annotations

import sys
from pathlib import Path

from conftest import CORPUS, fuzz_engine, requires_corpus

engine = fuzz_engine()


def _one_seed_per_kind(tmp_path: Path) -> list[tuple[str, Path]]:
    seeds = []
    for fmt in engine.FORMATS:
        if fmt in ("tosa", "tosa-external"):
            found = engine.make_tosa_seeds(CORPUS, tmp_path / fmt, 2, external=fmt == "tosa-external")
        else:
            found = engine.corpus_seeds(CORPUS, fmt)
        assert found, fmt
        seeds.append((fmt, min(found, key=lambda p: p.stat().st_size)))
    return seeds


@requires_corpus
def test_children_import_nothing_the_parent_has_not(tmp_path, monkeypatch):
    """Every run is a fork of a parent that imported what the commands import lazily (LAZY_IMPORTS): a
    module a command imports itself is imported again, from source where no bytecode is written, in each
    of a campaign's tens of thousands of children. Counted, not timed: one seed of each kind, every command."""
    import os

    runner = engine.ForkRunner(timeout=300, memory_mb=768, jobs=2)
    report = tmp_path / "imported"
    report.mkdir()
    child = engine.ForkRunner._child

    def recording_child(self, argv, stderr_path):
        before, exit_now = set(sys.modules), os._exit

        def record_then_exit(code):
            (report / str(os.getpid())).write_text(f"{argv[0]}: " + " ".join(sorted(set(sys.modules) - before)))
            exit_now(code)

        os._exit = record_then_exit  # (this forked child's own os module: the parent's is untouched)
        child(self, argv, stderr_path)

    monkeypatch.setattr(engine.ForkRunner, "_child", recording_child)
    jobs = []
    for k, (fmt, seed) in enumerate(_one_seed_per_kind(tmp_path)):
        jobs += engine.commands(seed, tmp_path / "runs" / str(k), fmt)
    runs = runner.run_all(jobs)
    assert not [run for run in runs if engine.judge(run, runner.memory_mb)]
    lines = [p.read_text() for p in report.iterdir()]
    assert len(lines) >= len(jobs)  # (check runs the reference model in a child of its own: recorded too)
    assert all(line.endswith(": ") for line in lines), "\n".join(line for line in lines if not line.endswith(": "))


@requires_corpus
def test_seed_checks_are_remembered_by_content_and_code(tmp_path):
    """A seed whose verdict the cache holds (for this code key) is not run again, with the same verdicts
    and left-out lines as running it; a changed byte, or another code key, runs it again."""
    from fuzz_seed_cache import SeedCache

    seeds = engine.pick(engine.corpus_seeds(CORPUS, "armnn"), 3)
    copies = []
    for k, seed in enumerate(seeds):
        copies.append(tmp_path / f"seed{k}.armnn")
        copies[-1].write_bytes(seed.read_bytes())

    class Counting(engine.ForkRunner):
        jobs_run = 0

        def run_all(self, jobs):
            Counting.jobs_run += len(jobs)
            return super().run_all(jobs)

    # memory_mb=-1: every run is judged a memory blowup, so the seeds are left out, with a reason to remember
    for memory_mb in (768, -1):
        runner = Counting(timeout=300, memory_mb=memory_mb, jobs=2)
        path = tmp_path / f"cache-{memory_mb}.json"
        Counting.jobs_run = 0
        first = engine.healthy(copies, runner, tmp_path, "armnn", SeedCache(path, "key"))
        assert Counting.jobs_run == 3 * len(copies)
        assert first == engine.healthy(copies, runner, tmp_path, "armnn")  # (no cache: every seed runs)
        Counting.jobs_run = 0
        assert engine.healthy(copies, runner, tmp_path, "armnn", SeedCache(path, "key")) == first
        assert Counting.jobs_run == 0
        copies[0].write_bytes(copies[0].read_bytes() + b"\0")
        engine.healthy(copies, runner, tmp_path, "armnn", SeedCache(path, "key"))
        assert Counting.jobs_run == 3
        engine.healthy(copies, runner, tmp_path, "armnn", SeedCache(path, "another code"))
        assert Counting.jobs_run == 3 + 3 * len(copies)
        copies[0].write_bytes(seeds[0].read_bytes())
    assert first[0] == [] and len(first[1]) == len(copies) and all(": memory (inspect): " in line for line in first[1])
