"""Fuzz the command line with damaged real models of every input format, and count what goes wrong.

    python bench/fuzz_long.py                                  # 3000 cases per format -> ./fuzz-out
    python bench/fuzz_long.py --cases 500 --formats tosa --seed 7 --jobs 2 --out /tmp/fuzz

A case is one mutant of a real file: an Arm NN `.armnn` or an MPS payload / `.pte` from the corpus
(../shared/corpus, or --corpus), or a `.tosa` that nn2tosa itself wrote from corpus models (1.0 and
0.100-draft layouts). Mutations know the flatbuffer layout (the schemas say where every offset, vector
length, union tag, dimension and scalar field of the seed file is): bit flips, byte writes,
truncations, splices from another file, offset rewrites (into other tables: shared and cyclic
subtrees), vtable damage and fields dropped from vtables, vector lengths, union tags, enums (data types)
out of range, huge dimension claims, extreme scalars (strides, axes, split counts, pads, multiples,
sizes), extreme floats (quantization scales, alphas, epsilons: inf, nan, 1e30, 3.4e38), names pointed
at 70,000-character strings, and layers / nodes / operators reordered (reversed, rotated, shuffled).
One to three of them per case.

Besides the three formats, the kinds (--formats) cover what each command added since: `program` (the
corpus's whole ExecuTorch programs, mutated in their execution plan, operator arguments, EValues and
buffers; also through `inspect --json`, `convert --state io`, `check --steps 2` and `convert --partial`),
`npu` (quantized Arm NN models, and a sample of float Arm NN, Boolean and MPS models, through `convert
--target ethos-u55 --partial` and `--target ethos-u85`),
`tosa-external` (.tosa files with their large constants after the flatbuffer: offsets and sizes damaged),
`compare` (damaged models against their Arm NN debug dump and the float reference) and `compare-dump` (a
damaged Arm NN debug dump, mutated as JSON: keys dropped, values of the wrong kind, ragged or short data,
records dropped or repeated). KIND_COMMANDS lists the runs of each.

Each mutant of the three formats goes through `nn2tosa inspect`, `nn2tosa convert -o x.tosa -o x.mlir` and
`nn2tosa check` (the TOSA reference model on random inputs) in a child process
(forked from a parent that has imported nn2tosa once, so a case costs milliseconds, not a Python
start-up), with a timeout (SIGALRM), an address-space cap (RLIMIT_AS) and its peak RSS measured
(wait4). A run is good when: exit code 0, 2 or 3; stderr at most one line and no traceback; when it
fails, no output file and no temporary left behind; when it succeeds, both outputs exist. Children
run with `--max-tensor-bytes 64M --max-total-bytes 256M`, so that "bounded memory" is checkable on a
small machine: a run whose RSS grows by more than --memory-mb (default 768) is a memory blowup.

Seeds that already fail unmutated are left out and listed (they are conversion bugs the corpus tests
report; every mutant would only repeat them). Those verdicts are kept on disk by the seed's content and
nn2tosa's code (bench/fuzz_seed_cache.py, --seed-cache; --no-seed-cache runs every seed again): a later
run on the same code runs only the seeds it has not seen. Output: per format, cases, runs, the exit code
histogram, and the count of each failure kind (traceback, crash, hang, memory, multiline,
partial-output); the slowest run; OUT/summary.json. Every failure writes a
reproducer: OUT/failures/<format>/<kind>-<sha1>.<ext> (the mutant) and .txt (command, exit code,
stderr, the mutations that made it). Exit code 1 when any failure was found.

The sites and mutations live in bench/fuzz_mutate.py; this module runs and judges the mutants.
tests/fuzz/test_fuzz.py runs a short seeded run of the same engine as part of the test suite.
"""
from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import fuzz_mutate as mutation  # noqa: E402  (the sites and mutations; this module runs and judges them)
from fuzz_mutate import Mutant, Site, file_sites, mutate, mutate_json  # noqa: E402
from fuzz_seed_cache import DEFAULT_PATH as SEED_CACHE, SeedCache, code_key  # noqa: E402
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
# The kinds of input a campaign fuzzes: the three formats; whole ExecuTorch programs (the corpus's
# mps/programs .pte, whose execution plan, operator arguments, EValues and buffers are mutated: their MPS
# payloads are the "mps" kind's business); models under an Ethos-U target (NPU regions: the quantized
# Arm NN ones, and samples of the float, Boolean and MPS ones);
# .tosa files with their large constants after the flatbuffer (external data: offsets and sizes); and
# `compare`, with a damaged model ("compare") or a damaged Arm NN debug dump ("compare-dump").
FORMATS = ("armnn", "mps", "tosa", "program", "npu", "tosa-external", "compare", "compare-dump")
# how a kind's files are mutated, where that is another kind's format (fuzz_mutate.file_sites; "json":
# fuzz_mutate.mutate_json)
LAYOUT = {"program": "program", "npu": "armnn", "tosa-external": "tosa", "compare": "armnn", "compare-dump": "json"}
# Children run with these limits: low enough that a guard failing shows up as a memory blowup.
CHILD_LIMITS = ("--max-tensor-bytes", "64M", "--max-total-bytes", "256M")
# Children run with these limits: low enough that a guard failing shows up as a memory blowup.
# ====================================================================================== seeds
def corpus_seeds(corpus: Path, fmt: str) -> list[Path]:
    """The corpus files of kind `fmt` ("armnn", "mps" with the .pte, "program": the whole programs of
    mps/programs, "npu": see _npu_seeds, "compare" / "compare-dump": the debug_20.08
    models / their Arm NN dumps), sorted."""
    if fmt == "program":
        return sorted((corpus / "mps" / "programs").glob("*.pte"))
    manifest = json.loads((corpus / "manifest.json").read_text())["entries"]
    if fmt == "npu":
        return _npu_seeds(corpus, manifest)
    if fmt in ("compare", "compare-dump"):  # the models with Arm NN's own per-layer dumps, or the dumps
        dumps = sorted((corpus / "armnn" / "debug_20.08").glob("*.armnn_debug.json"))
        return dumps if fmt == "compare-dump" else [_dumped_model(d) for d in dumps]
    files = [corpus / e["file"] for e in manifest if e["format"] == fmt]
    if fmt == "mps":
        files += sorted(corpus.glob("mps/**/*.pte"))
    return sorted(set(files))


# float Arm NN models and MPS models the npu kind takes besides the quantized Arm NN ones (a sample of
# each, by size: every one would cost a seed check of five runs)
NPU_OTHER_SEEDS = 60


def _npu_seeds(corpus: Path, manifest: list[dict]) -> list[Path]:
    """What an Ethos-U runs, the quantized Arm NN models; and what it refuses, whole or in part, which
    takes the NPU-region bisection down other paths: float and mixed Arm NN models and MPS models (a
    sample of each), and every Boolean model (graphs that lower to no TOSA operator at all)."""
    def files(keep: Callable[[dict], bool]) -> list[Path]:
        return sorted({corpus / e["file"] for e in manifest if keep(e)})

    quantized = files(lambda e: e["format"] == "armnn" and e["tolerance"] == "quantized")
    float_armnn = files(lambda e: e["format"] == "armnn" and e["tolerance"] != "quantized")
    mps = files(lambda e: e["format"] == "mps")
    boolean = files(lambda e: "bool" in Path(e["file"]).stem)
    return sorted({*quantized, *pick(float_armnn, NPU_OTHER_SEEDS), *pick(mps, NPU_OTHER_SEEDS), *boolean})


def pick(files: list[Path], count: int) -> list[Path]:
    """`count` files spread evenly over the list (by size, so that small and large ones both come)."""
    by_size = sorted(files, key=lambda p: (p.stat().st_size, str(p)))
    if len(by_size) <= count:
        return by_size
    step = len(by_size) / count
    return [by_size[int(i * step)] for i in range(count)]


def make_tosa_seeds(corpus: Path, workdir: Path, count: int, external: bool = False) -> list[Path]:
    """Convert `count` corpus models to .tosa (both layouts) in `workdir`, in a forked child so that
    the parent stays free of MLIR state before it forks the fuzz children. `external`: the largest
    models, TOSA 1.0 with their large constants after the flatbuffer (offset/size)."""
    if external:
        largest = sorted(corpus_seeds(corpus, "armnn") + corpus_seeds(corpus, "mps"), key=lambda p: p.stat().st_size)
        sources = largest[-count:]
    else:
        sources = pick(corpus_seeds(corpus, "armnn"), count // 2) + pick(corpus_seeds(corpus, "mps"), count - count // 2)
    workdir.mkdir(parents=True, exist_ok=True)
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            from nn2tosa.api import convert
            from nn2tosa.frontend import load

            for k, src in enumerate(sources):
                try:
                    for i, g in enumerate(load(src)):
                        version = "0.100-draft" if k % 3 == 2 and not external else "1.0"
                        target = workdir / f"{src.stem}.{i}.{version}.tosa"
                        convert(g).write(str(target), "tosa", tosa_version=version, external_data=external or None)
                except Exception:  # noqa: BLE001 - a model nn2tosa cannot convert is simply no seed
                    continue
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    os.waitpid(pid, 0)
    return sorted(workdir.glob("*.tosa"))


# ====================================================================================== running
@dataclass
class Run:
    """One command on one mutant, as the child ended."""

    command: str  # a name in KIND_COMMANDS
    argv: list[str]
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    stderr: str
    seconds: float
    rss_growth_mb: float
    outputs_left: list[str]  # files in the output directory after the run
    failure: str | None = None  # the failure kind, None for a good run


# What a command imports only when it runs (check's reference model, compare, partial conversion, NPU regions
# and Vela, the zoo, program state, the .tosa layouts, numpy's random inputs, MLIR's dialect bindings).
# Imported once in the parent, a child starts with them: otherwise every run imported them again (from
# source, where bytecode is not written), which was most of a short run's time.
LAZY_IMPORTS = (
    "nn2tosa.check", "nn2tosa.comparison.command", "nn2tosa.comparison.dump", "nn2tosa.comparison.html",
    "nn2tosa.comparison.metrics", "nn2tosa.comparison.nn_numpy", "nn2tosa.comparison.points",
    "nn2tosa.comparison.references", "nn2tosa.comparison.run", "nn2tosa.comparison.table", "nn2tosa.fileio",
    "nn2tosa.frontend.tosa.blocks", "nn2tosa.frontend.tosa.layout_0100", "nn2tosa.frontend.tosa.layout_1x",
    "nn2tosa.lowering.npu_target", "nn2tosa.lowering.program", "nn2tosa.lowering.variables",
    "nn2tosa.mlir_pipeline", "nn2tosa.npu_regions", "nn2tosa.partial", "nn2tosa.progress", "nn2tosa.vela_support",
    "nn2tosa.zoo", "numpy.random", "mlir.dialects.builtin", "mlir.dialects.func", "mlir.dialects.tosa",
    "mlir.passmanager",
)
# optional extras: the reference model (tosa-tools) and Vela (ethos-u-vela); without them the commands say so
OPTIONAL_IMPORTS = ("tosa_reference_model", "ethosu.vela.vela")


def _warm_imports() -> None:
    """Import everything a run imports lazily, so that forked children share it (no MLIR context is made:
    the parent stays free of MLIR state), and build the CLI's parser once."""
    import importlib

    import nn2tosa.api  # noqa: F401
    import nn2tosa.cli as cli
    import nn2tosa.frontend.armnn  # noqa: F401
    import nn2tosa.frontend.mps  # noqa: F401
    import nn2tosa.frontend.mps.reader  # noqa: F401  (imported when an MPS file is read)
    import nn2tosa.frontend.tosa  # noqa: F401
    import nn2tosa.lowering.flatbuffer_0100  # noqa: F401
    import nn2tosa.lowering.flatbuffer_emitter  # noqa: F401
    import nn2tosa.lowering.mlir_emitter  # noqa: F401
    import nn2tosa.passes  # noqa: F401
    from nn2tosa.ir.registry import DIALECT_MODULES
    from nn2tosa.passes import available_passes

    available_passes()
    for name in (*LAZY_IMPORTS, *DIALECT_MODULES.values()):  # the dialects' ops load when first looked up
        importlib.import_module(name)
    for name in OPTIONAL_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    # The parser does not depend on argv: built once here (a third of an `inspect` run's time), each child
    # parses its own argv with its own copy of it.
    parser = cli.build_parser()
    cli.build_parser = lambda: parser  # type: ignore[assignment]


def _vm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) / 1024
    return 0.0


class ForkRunner:
    """Runs `nn2tosa.cli.main(argv)` in forked children, several at a time (`jobs`)."""

    def __init__(self, *, timeout: int = 30, memory_mb: int = 768, jobs: int = 1):
        _warm_imports()
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.jobs = max(1, jobs)
        self.base_rss_mb = self._idle_child_rss_mb()
        # the address-space cap: what the parent maps already, plus room for a blowup to show as one
        self.as_limit = int((_vm_mb() + 4 * memory_mb) * (1 << 20))

    @staticmethod
    def _idle_child_rss_mb() -> float:
        """The peak RSS of a child that does nothing: what a fork costs before the run starts (a
        child's RSS counts the parent's anonymous pages it inherits, not the file-backed ones)."""
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        return os.wait4(pid, 0)[2].ru_maxrss / 1024

    def _child(self, argv: list[str], stderr_path: str) -> None:
        code = 1
        try:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(self.timeout)
            resource.setrlimit(resource.RLIMIT_AS, (self.as_limit, self.as_limit))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(err, 2)
            from nn2tosa.cli import main

            code = main(argv)
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001 - anything escaping main() is a finding
            import traceback

            traceback.print_exc()
            sys.stderr.flush()
            code = 1
        os._exit(code if isinstance(code, int) else 1)

    def run_all(self, jobs: list[tuple[str, list[str], Path]]) -> list[Run]:
        """Run (command, argv, output directory) jobs; results in the same order."""
        results: list[Run | None] = [None] * len(jobs)
        running: dict[int, tuple[int, float, str]] = {}
        pending = list(enumerate(jobs))
        pending.reverse()
        sys.stdout.flush()
        sys.stderr.flush()
        while pending or running:
            while pending and len(running) < self.jobs:
                index, (command, argv, outdir) = pending.pop()
                stderr_path = str(outdir / f".stderr-{command}")
                pid = os.fork()
                if pid == 0:
                    self._child(argv, stderr_path)
                running[pid] = (index, time.perf_counter(), stderr_path)
            pid, status, usage = os.wait4(-1, 0)
            if pid not in running:
                continue
            index, started, stderr_path = running.pop(pid)
            command, argv, outdir = jobs[index]
            seconds = time.perf_counter() - started
            with open(stderr_path, errors="replace") as f:
                stderr = f.read()
            os.unlink(stderr_path)
            # what the run left (other runs' own folders inside this one are theirs, not its outputs)
            left = sorted(p.name for p in outdir.iterdir()
                          if not p.name.startswith(".stderr-") and (p.is_file() or p.name.startswith(".")))
            results[index] = Run(command, argv, os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                                 os.WTERMSIG(status) if os.WIFSIGNALED(status) else None, stderr, seconds,
                                 max(0.0, usage.ru_maxrss / 1024 - self.base_rss_mb), left)
        return results  # type: ignore[return-value]


def judge(run: Run, memory_mb: float) -> str | None:
    """The failure kind of a run, or None when it behaved."""
    lines = run.stderr.splitlines()
    if run.signal == signal.SIGALRM:
        return "hang"
    if "MemoryError" in run.stderr or run.rss_growth_mb > memory_mb:
        return "memory"
    if run.signal is not None:
        return "crash"
    if "Traceback" in run.stderr or "internal error" in run.stderr:
        return "traceback"
    # check's exit 1 without a traceback: a run it judged failed; compare's: a damaged model or dump
    # that differs beyond tolerance, which is its verdict
    if run.exit_code not in (0, 2, 3) and not (run.argv[0] == "compare" and run.exit_code == 1):
        return "exit-1"
    if len(lines) > 1:
        return "multiline"
    if run.argv[0] == "convert":
        left = run.outputs_left
        if run.exit_code != 0 and left:
            return "partial-output"  # a failed run leaves nothing, not even a temporary
        kinds = {n.rsplit(".", 1)[-1] for n in left}
        if run.exit_code == 0 and any(n.startswith(".") for n in left):
            return "partial-output"  # a temporary left behind
        # a success leaves both kinds (x.tosa, or x.part<k>.tosa per partition); a partial conversion
        # its sidecar, and the MLIR (the TOSA functions: none when everything is left to the host)
        if run.exit_code == 0 and kinds != {"mlir", "tosa"} and \
                not ("--partial" in run.argv and kinds in ({"mlir", "tosa", "json"}, {"mlir", "json"})):
            return "partial-output"
    return None


def _outputs(outdir: Path) -> list[str]:
    return ["-o", str(outdir / "x.tosa"), "-o", str(outdir / "x.mlir")]


def _debug_dump(model: Path) -> Path:
    return model.with_name(model.name + "_debug.json")  # NAME.armnn -> NAME.armnn_debug.json


def _dumped_model(dump: Path) -> Path:
    return dump.with_name(dump.name[:-len("_debug.json")])


# (the mutant, an output folder of the run's own, the seed it was made from) -> the command's arguments
Argv = Callable[[Path, Path, Path], list[str]]
# inspect, convert to both output kinds, and check (convert, then run on the TOSA reference model with
# random inputs: the reference model must not crash nn2tosa)
BASE: dict[str, Argv] = {
    "inspect": lambda path, out, seed: ["inspect", str(path)],
    "convert": lambda path, out, seed: ["convert", str(path), *_outputs(out)],
    "check": lambda path, out, seed: ["check", str(path)],
}
# The runs each kind's mutants get, in this order.
KIND_COMMANDS: dict[str, dict[str, Argv]] = {
    "armnn": BASE, "mps": BASE, "tosa": BASE, "tosa-external": BASE,
    "program": {
        **BASE,
        "inspect-json": lambda path, out, seed: ["inspect", str(path), "--json"],
        "convert-state-io": lambda path, out, seed: ["convert", str(path), "--state", "io", *_outputs(out)],
        "check-steps": lambda path, out, seed: ["check", str(path), "--steps", "2"],
        "convert-partial": lambda path, out, seed: ["convert", str(path), "--partial", *_outputs(out)],
    },
    # NPU regions: what Vela (or the profile, without it) leaves to the host, and the regions' sidecar
    "npu": {
        **BASE,
        "convert-npu-partial": lambda path, out, seed: ["convert", str(path), "--target", "ethos-u55", "--partial",
                                                        *_outputs(out)],
        "convert-npu": lambda path, out, seed: ["convert", str(path), "--target", "ethos-u85", *_outputs(out)],
    },
    # a damaged model against its undamaged Arm NN dump, and against the float reference
    "compare": {
        "compare-dump": lambda path, out, seed: ["compare", str(path), "--reference", str(_debug_dump(seed))],
        "compare-float": lambda path, out, seed: ["compare", str(path), "--json", str(out / "x.json")],
    },
    # the undamaged model against a damaged dump
    "compare-dump": {
        "compare": lambda path, out, seed: ["compare", str(_dumped_model(seed)), "--reference", str(path)],
    },
}
COMMANDS = tuple(BASE)  # the runs of the three formats' mutants


def commands(path: Path, outdir: Path, fmt: str = "armnn", seed: Path | None = None) -> list[tuple[str, list[str], Path]]:
    """The runs a mutant of kind `fmt` gets (KIND_COMMANDS), each but the first writing into a folder
    of its own; `seed` is the file the mutant was made from (the mutant itself when not given)."""
    runs = []
    for k, (name, argv) in enumerate(KIND_COMMANDS[fmt].items()):
        own = outdir if k == 0 else outdir / name
        own.mkdir(parents=True, exist_ok=True)
        runs.append((name, [*argv(path, own, seed or path), *CHILD_LIMITS], own))
    return runs


def runs_per_case(fmt: str) -> int:
    return len(KIND_COMMANDS[fmt])


# ====================================================================================== a campaign
@dataclass
class Report:
    fmt: str
    cases: int = 0
    runs: int = 0
    exit_codes: collections.Counter = field(default_factory=collections.Counter)
    failures: collections.Counter = field(default_factory=collections.Counter)
    slowest: tuple[float, str] = (0.0, "")
    max_rss_growth_mb: float = 0.0
    reproducers: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)  # one line per failure: kind, file, stderr's last line
    seeds_left_out: list[str] = field(default_factory=list)  # seeds that fail unmutated

    def line(self) -> str:
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(self.exit_codes.items(), key=lambda kv: str(kv[0])))
        kinds = ("traceback", "exit-1", "crash", "hang", "memory", "multiline", "partial-output")
        fails = ", ".join(f"{k} {self.failures.get(k, 0)}" for k in kinds)
        return (f"{self.fmt:6} cases {self.cases}, runs {self.runs}; exit codes {{{codes}}}; {fails}; "
                f"slowest {self.slowest[0]:.2f} s; max RSS growth {self.max_rss_growth_mb:.0f} MB")


def seed_files(path: Path, fmt: str) -> list[Path]:
    """The files a seed's runs read: the seed, and for compare kinds the dump or model it goes with."""
    if fmt == "compare":
        return [path, _debug_dump(path)]
    return [path, _dumped_model(path)] if fmt == "compare-dump" else [path]


def healthy(seeds: list[Path], runner: ForkRunner, workdir: Path, fmt: str = "armnn",
            cache: SeedCache | None = None) -> tuple[list[Path], list[str]]:
    """The seeds that behave unmutated (a seed nn2tosa already fails on is the corpus tests'
    business: every mutant of it would fail the same way), and one line per seed left out.
    With a `cache`, a seed whose verdict it holds is not run again (fuzz_seed_cache.py)."""
    verdicts: dict[int, str] = {}
    if cache is not None:
        for k, path in enumerate(seeds):
            known = cache.get(fmt, seed_files(path, fmt))
            if known is not None:
                verdicts[k] = known
    to_run = [k for k in range(len(seeds)) if k not in verdicts]
    jobs, dirs = [], []
    for k in to_run:
        outdir = workdir / "seed-check" / str(k)
        shutil.rmtree(outdir, ignore_errors=True)
        outdir.mkdir(parents=True)
        dirs.append(outdir)
        jobs += commands(seeds[k], outdir, fmt)
    runs = runner.run_all(jobs)
    per = runs_per_case(fmt)
    for i, k in enumerate(to_run):
        bad = [(run, v) for run in runs[per * i: per * (i + 1)] if (v := judge(run, runner.memory_mb))]
        if bad:
            run, verdict = bad[0]
            last = (run.stderr.strip().splitlines() or [""])[-1][:200]
            verdicts[k] = f"{verdict} ({run.command}): {last}"
        else:
            verdicts[k] = ""
        if cache is not None:
            cache.put(fmt, seed_files(seeds[k], fmt), verdicts[k])
        shutil.rmtree(dirs[i], ignore_errors=True)
    if cache is not None and to_run:
        cache.save()
    good = [path for k, path in enumerate(seeds) if not verdicts[k]]
    left_out = [f"{path}: {verdicts[k]}" for k, path in enumerate(seeds) if verdicts[k]]
    return good, left_out


def seed_layout(fmt: str, path: Path) -> str:
    """How a seed of kind `fmt` is mutated (fuzz_mutate.file_sites): the kind's LAYOUT; the npu kind
    mixes Arm NN and MPS seeds and goes by the file."""
    if fmt == "npu":
        return "armnn" if path.suffix == ".armnn" else "mps"
    return LAYOUT.get(fmt, fmt)


def seeds_for(fmt: str, corpus: Path, workdir: Path, tosa_seeds: int) -> list[Path]:
    if fmt in ("tosa", "tosa-external"):
        return make_tosa_seeds(corpus, workdir / f"{fmt}-seeds", tosa_seeds, external=fmt == "tosa-external")
    return corpus_seeds(corpus, fmt)


def campaign(fmt: str, seeds: list[Path], cases: int, seed: int, runner: ForkRunner, workdir: Path,
             failures_dir: Path | None, batch: int = 16, progress_every: int = 0) -> Report:
    """Fuzz `cases` mutants of `seeds` (format `fmt`) through `runner`; with `progress_every`, print the
    report's line every that many cases (a long run that has to be stopped still says what it found)."""
    rng = random.Random(f"{fmt}:{seed}")
    report = Report(fmt)
    site_cache: dict[Path, list[Site]] = {}
    data_cache: dict[Path, bytes] = {}

    def load(path: Path) -> tuple[bytes, list[Site]]:
        if path not in data_cache:
            data_cache[path] = path.read_bytes()
            layout = seed_layout(fmt, path)
            site_cache[path] = [] if layout == "json" else file_sites(data_cache[path], layout)
        return data_cache[path], site_cache[path]

    done = 0
    while done < cases:
        n = min(batch, cases - done)
        mutants = []
        for k in range(n):
            path = rng.choice(seeds)
            data, sites = load(path)
            donors = [load(rng.choice(seeds))[0] for _ in range(1)]
            mutant = mutate_json(data, rng) if LAYOUT.get(fmt) == "json" else mutate(data, sites, rng, donors)
            casedir = workdir / "cases" / f"{fmt}-{done + k}"
            shutil.rmtree(casedir, ignore_errors=True)
            (casedir / "out").mkdir(parents=True)
            input_path = casedir / f"input{path.suffix}"  # the seed's own kind of file
            input_path.write_bytes(mutant.data)
            mutants.append((path, mutant, input_path, casedir))
        jobs = [job for seed_path, _, input_path, casedir in mutants
                for job in commands(input_path, casedir / "out", fmt, seed_path)]
        per = runs_per_case(fmt)
        runs = runner.run_all(jobs)
        for k, (path, mutant, input_path, casedir) in enumerate(mutants):
            report.cases += 1
            for run in runs[per * k: per * (k + 1)]:
                report.runs += 1
                report.exit_codes[run.exit_code if run.signal is None else f"signal {run.signal}"] += 1
                report.max_rss_growth_mb = max(report.max_rss_growth_mb, run.rss_growth_mb)
                if run.seconds > report.slowest[0]:
                    report.slowest = (run.seconds, f"{path.name} ({run.command})")
                run.failure = judge(run, runner.memory_mb)
                if run.failure:
                    report.failures[run.failure] += 1
                    last = (run.stderr.strip().splitlines() or [""])[-1][:200]
                    report.examples.append(f"{run.failure} {run.command} {path.name}: {last}")
                    if failures_dir is not None:
                        report.reproducers.append(str(save_reproducer(failures_dir, fmt, run, mutant, path,
                                                                      input_path.suffix)))
            shutil.rmtree(casedir, ignore_errors=True)
        done += n
        if progress_every and done % progress_every < n:
            print(f"  {report.line()}", flush=True)
    return report


def save_reproducer(failures_dir: Path, fmt: str, run: Run, mutant: Mutant, seed_path: Path, ext: str) -> Path:
    digest = hashlib.sha1(mutant.data).hexdigest()[:12]
    folder = failures_dir / fmt
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{run.failure}-{digest}{ext}"
    target.write_bytes(mutant.data)
    argv = [a if not a.endswith(ext) else str(target) for a in run.argv]
    status = f"exit code {run.exit_code}" if run.signal is None else f"signal {run.signal}"
    target.with_suffix(".txt").write_text(
        f"seed: {seed_path}\nmutations:\n" + "".join(f"  {s}\n" for s in mutant.steps)
        + f"command: nn2tosa {' '.join(argv)}\n{status} after {run.seconds:.2f} s, RSS growth "
        f"{run.rss_growth_mb:.0f} MB\nstderr:\n{run.stderr}")
    return target


# ====================================================================================== main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=3000, help="mutants per format (default 3000)")
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated: " + ",".join(FORMATS))
    parser.add_argument("--seed", type=int, default=1, help="random seed (a run is reproducible)")
    parser.add_argument("--jobs", type=int, default=2, help="children at a time (default 2)")
    parser.add_argument("--timeout", type=int, default=30, help="seconds before a run counts as a hang")
    parser.add_argument("--memory-mb", type=int, default=768, help="RSS growth that counts as a blowup")
    parser.add_argument("--tosa-seeds", type=int, default=60, help="corpus models converted to .tosa seeds")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help=f"default {DEFAULT_CORPUS}")
    parser.add_argument("--progress-every", type=int, default=1000, help="print the counts every N cases (0: never)")
    parser.add_argument("--out", type=Path, default=Path("fuzz-out"), help="reproducers and summary go here")
    parser.add_argument("--seed-cache", type=Path, default=SEED_CACHE,
                        help=f"the seeds' unmutated verdicts, by content and code (default {SEED_CACHE})")
    parser.add_argument("--no-seed-cache", dest="seed_cache", action="store_const", const=None,
                        help="run every seed unmutated again")
    args = parser.parse_args(argv)
    if not (args.corpus / "manifest.json").is_file():
        print(f"fuzz_long: no corpus at {args.corpus} (pass --corpus)", file=sys.stderr)
        return 2
    formats = [f for f in args.formats.split(",") if f]
    unknown = set(formats) - set(FORMATS)
    if unknown:
        parser.error(f"unknown formats {sorted(unknown)}")
    args.out.mkdir(parents=True, exist_ok=True)
    runner = ForkRunner(timeout=args.timeout, memory_mb=args.memory_mb, jobs=args.jobs)
    cache = None
    if args.seed_cache is not None:
        engine = [Path(__file__), Path(mutation.__file__)]
        cache = SeedCache(args.seed_cache, code_key(engine, f"{args.timeout} {args.memory_mb} {CHILD_LIMITS}"))
    reports = []
    with tempfile.TemporaryDirectory(prefix="nn2tosa-fuzz-") as tmp:
        for fmt in formats:
            start = time.perf_counter()
            seeds, left_out = healthy(seeds_for(fmt, args.corpus, Path(tmp), args.tosa_seeds), runner, Path(tmp), fmt,
                                     cache)
            if left_out:
                print(f"{fmt}: {len(left_out)} seed(s) fail unmutated, left out (for the corpus tests' owners):")
                for line in left_out:
                    print(f"    {line}")
            report = campaign(fmt, seeds, args.cases, args.seed, runner, Path(tmp), args.out / "failures",
                              progress_every=args.progress_every)
            reports.append(report)
            report.seeds_left_out = left_out
            print(f"{report.line()}; {len(seeds)} seeds; {time.perf_counter() - start:.0f} s", flush=True)
            for example in report.examples[:20]:
                print(f"    {example}")
    summary = {r.fmt: {"cases": r.cases, "runs": r.runs, "exit_codes": {str(k): v for k, v in r.exit_codes.items()},
                       "failures": dict(r.failures), "slowest_seconds": round(r.slowest[0], 3),
                       "slowest": r.slowest[1], "max_rss_growth_mb": round(r.max_rss_growth_mb, 1),
                       "reproducers": r.reproducers, "seeds_left_out": r.seeds_left_out} for r in reports}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"summary: {args.out / 'summary.json'}")
    return 1 if any(r.failures for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
