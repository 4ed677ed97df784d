"""Many models in one run: `nn2tosa convert A.armnn B.pte ... --out-dir DIR` and `nn2tosa.convert_many`.

Each model is converted exactly as `nn2tosa convert MODEL -o DIR/NAME.tosa ...` converts it alone
(nn2tosa.api.convert_file: the same options, limits and all-or-nothing outputs), in worker processes
forked from one process that imported what the conversions need once (nn2tosa/zoo_local.py), or as tasks on
any concurrent.futures.Executor, a Dask cluster's among them (nn2tosa/zoo_executor.py, zoo_dask.py). A model
that fails, crashes its worker or runs past the time limit is reported, what it had half-written is removed,
and the others go on.

The run's exit status is the worst class among its models, worst first:
1 (a bug: an internal error, a crashed worker), 2 (invalid input, an output that cannot be written, a
model stopped at --timeout), 3 (valid input with constructs nn2tosa cannot convert), 0 (all converted).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nn2tosa.diagnostics import UsageError
from nn2tosa.options import ConvertOptions
from nn2tosa.zoo_jobs import EMIT_SUFFIXES, SEVERITY, Job, ModelResult

if TYPE_CHECKING:
    from concurrent.futures import Executor

DEFAULT_EMIT = ("tosa",)

# The options of `convert` that name one file or pick one partition, and what --out-dir does instead.
SINGLE_MODEL_OPTIONS = {
    "output": ("-o", "each model's outputs are DIR/NAME.<kind>, the kinds given by --emit"),
    "report": ("--report", "--emit report writes each model's report as DIR/NAME.report.json"),
    "report_json": ("--report-json", "--emit report writes each model's report as DIR/NAME.report.json"),
    "sidecar": ("--sidecar", "with --partial each model's sidecar is DIR/NAME.partition.json"),
    "partition": ("--partition", "every partition of a .pte is converted, as DIR/NAME.partK.<kind>"),
}
ZOO_ONLY_OPTIONS = {"emit": "--emit", "jobs": "--jobs", "timeout": "--timeout", "summary_json": "--summary-json",
                    "scheduler": "--scheduler", "read_on_workers": "--read-on-workers",
                    "write_on_workers": "--write-on-workers"}


def worst_exit(codes: Sequence[int]) -> int:
    """The worst of these exit classes (SEVERITY), 0 for none."""
    return max(codes, key=SEVERITY.index, default=0)


# ------------------------------------------------------------------------------ the API
def convert_many(paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike, *,
                 emit: str | Sequence[str] = DEFAULT_EMIT, jobs: int | None = None, timeout: float | None = None,
                 on_result: Callable[[ModelResult], None] | None = None, executor: Executor | None = None,
                 read_on_workers: bool = False, write_on_workers: bool = False, **options: Any) -> list[ModelResult]:
    """Convert every model in `paths` into `out_dir` (created if missing) and return one ModelResult per
    path, in the order given. A model that fails is a result, not an exception; a bad request (an unknown
    emit kind or option, `out_dir` an existing file, a path given twice) raises UsageError before any work.

    emit: the kinds to write for each model, from EMIT_SUFFIXES ("tosa,mlirbc" or a list): DIR/NAME.tosa,
      .mlir (generic MLIR text), .mlirbc (MLIR bytecode), .report.json (the conversion report). NAME is the
      file's stem; inputs sharing a stem are told apart by their folders (output_names).
    jobs: worker processes (default: the cores available, at most one per model).
    timeout: seconds one model may take; past it its worker is stopped and the model is "timeout", exit 2.
    on_result: called with each ModelResult as it finishes (in completion order).
    executor: a concurrent.futures.Executor to run the models on instead of the forked local pool (a Dask
      cluster's `client.get_executor()`, a ProcessPoolExecutor, ...): nn2tosa/zoo_executor.py. With it, the
      client sends each model's bytes and writes the outputs the workers send back, unless
      read_on_workers (the workers open the paths: shared storage) / write_on_workers (they write into
      out_dir, the same path on every worker).
    options: the fields of nn2tosa.ConvertOptions (profile, semantics, target, partial, host, keep_int4,
      state, passes; tosa_version, external_data, elide_constants, mlir_pretty, validate, mlir_pipeline,
      vela_report), the resource limits one by one (max_tensor_bytes, max_total_bytes, max_ops, max_rank,
      max_list_length; default: nn2tosa.limits.Limits's) or as `limits`, and debug (a failing model's
      traceback on stderr).
    """
    debug = bool(options.pop("debug", False))
    settings = ConvertOptions.from_keywords(options, what="convert_many", limits_flat=True)
    if settings.limits is None:  # (each model converts under the default limits, as the command line's)
        from nn2tosa.limits import Limits

        settings = replace(settings, limits=Limits())
    if settings.mlir_pipeline is not None:
        from nn2tosa.mlir_pipeline import check_pipeline

        check_pipeline(settings.mlir_pipeline)
    return _convert_many([os.fspath(p) for p in paths], Job(settings, Path(out_dir), parse_emit(emit), debug), jobs,
                         timeout, on_result, Pool(executor, read_on_workers, write_on_workers))


def parse_emit(emit: str | Sequence[str]) -> tuple[str, ...]:
    """"tosa,mlirbc" (or a list) -> ("tosa", "mlirbc"): the kinds, each once, in the order given."""
    items = [emit] if isinstance(emit, str) else list(emit)
    kinds = [k.strip() for item in items for k in item.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in EMIT_SUFFIXES]
    if unknown or not kinds:
        raise UsageError(f"--emit {','.join(kinds) or '(empty)'}: name one or more of {', '.join(EMIT_SUFFIXES)}"
                         + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    return tuple(dict.fromkeys(kinds))


def output_names(paths: Sequence[str]) -> list[str]:
    """The stem of each input's outputs in the output directory: the file's stem; where several inputs
    share one, it is prefixed with as many of the file's folders as tell it apart from the others
    (litert_20.08_q8_add, litert_23.08_q8_add); names still equal (m.armnn and m.pte in one folder) are
    numbered from the second on (c_m, c_m-2). A file given twice is a UsageError."""
    resolved = [Path(p).resolve() for p in paths]
    first: dict[Path, str] = {}
    for path, r in zip(paths, resolved):
        if r in first:
            also = f" (also as {first[r]})" if first[r] != path else ""
            raise UsageError(f"{path}: given twice{also}")
        first[r] = path
    names = [r.stem for r in resolved]
    sharing: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        sharing.setdefault(name, []).append(i)
    for stem, members in sharing.items():
        if len(members) == 1:
            continue
        folders = {i: resolved[i].parent.parts[1:] for i in members}  # without the root
        for i in members:
            depth = 1  # as many trailing folders as no other input of this stem has
            while depth <= len(folders[i]) and any(folders[j][-depth:] == folders[i][-depth:] for j in members
                                                   if j != i):
                depth += 1
            if depth > len(folders[i]):  # another input of this stem is in the same folder
                depth = 1
            names[i] = "_".join([*folders[i][-depth:], stem])
    taken: set[str] = set()  # the same folders, or a made-up name that is another input's stem: number the later
    for i, name in enumerate(names):
        unique, k = name, 1
        while unique in taken:
            k += 1
            unique = f"{name}-{k}"
        taken.add(unique)
        names[i] = unique
    return names


def _default_jobs(models: int) -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, models))


# ------------------------------------------------------------------------------ one model, in a worker
@dataclass(frozen=True)
class Pool:
    """Where the models are converted: the forked local pool (executor None), or an executor's workers, and
    whether those read the inputs / write the outputs themselves (nn2tosa/zoo_executor.py)."""

    executor: Executor | None = None
    read_on_workers: bool = False
    write_on_workers: bool = False


def _convert_many(paths: list[str], job: Job, jobs: int | None, timeout: float | None,
                  on_result: Callable[[ModelResult], None] | None, pool: Pool = Pool()) -> list[ModelResult]:
    if pool.executor is None and (pool.read_on_workers or pool.write_on_workers):
        raise UsageError("read_on_workers and write_on_workers say what an executor's workers see: give executor=")
    if pool.executor is not None and jobs is not None:
        raise UsageError("jobs sizes the local pool: with an executor, its workers convert")
    if not paths:
        return []
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs {jobs}: at least 1")
    if timeout is not None and not timeout > 0:
        raise UsageError(f"--timeout {timeout}: a positive number of seconds")
    if job.out_dir.exists() and not job.out_dir.is_dir():
        raise UsageError(f"{job.out_dir}: exists and is not a directory (the outputs go into a directory)")
    names = output_names(paths)
    job.out_dir.mkdir(parents=True, exist_ok=True)
    if pool.executor is not None:
        from nn2tosa.zoo_executor import run_on_executor

        return run_on_executor(pool.executor, paths, names, job, timeout=timeout, read_on_workers=pool.read_on_workers,
                               write_on_workers=pool.write_on_workers, on_result=on_result)
    from nn2tosa.zoo_local import run_local_pool

    return run_local_pool(paths, names, job, jobs or _default_jobs(len(paths)), timeout, on_result)


# ------------------------------------------------------------------------------ the command line
def add_zoo_arguments(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("many models in one run (--out-dir)")
    group.add_argument("--out-dir", metavar="DIR",
                       help="convert every input into DIR (created if missing): DIR/NAME.<kind> per model, NAME "
                            "the file's stem; one line per model, a summary table, exit status the worst class")
    group.add_argument("--emit", metavar="KINDS",
                       help=f"with --out-dir: what to write per model, comma-separated: {', '.join(EMIT_SUFFIXES)} "
                            f"(default {','.join(DEFAULT_EMIT)})")
    group.add_argument("-j", "--jobs", type=_positive(int), metavar="N",
                       help="with --out-dir: worker processes (default: the cores available)")
    group.add_argument("--timeout", type=_positive(float), metavar="SECONDS",
                       help="with --out-dir: a model still converting after this long is stopped (exit class 2)")
    group.add_argument("--summary-json", metavar="FILE",
                       help="with --out-dir: write every model's result and the totals to FILE as JSON")
    group.add_argument("--scheduler", metavar="ADDRESS",
                       help="with --out-dir: convert on the Dask cluster whose scheduler is at ADDRESS (e.g. "
                            "tcp://10.0.0.5:8786; pip install 'nn2tosa[cluster]'); the client sends each model and "
                            "writes the outputs the workers send back (docs/zoo_cluster.md)")
    group.add_argument("--read-on-workers", action="store_true", default=None,
                       help="with --scheduler: the workers open the inputs themselves (the paths name shared "
                            "storage every worker sees) instead of receiving them from the client")
    group.add_argument("--write-on-workers", action="store_true", default=None,
                       help="with --scheduler: the workers write into DIR themselves (shared storage, the same "
                            "path on every worker) instead of sending the outputs back")


def _positive(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not positive")
        return value

    return parse


def refuse_zoo_options(args: argparse.Namespace) -> None:
    """Without --out-dir (one model, -o outputs), the options of a many-model run are a UsageError."""
    for dest, flag in ZOO_ONLY_OPTIONS.items():
        if getattr(args, dest) is not None:
            raise UsageError(f"{flag} goes with --out-dir DIR (with -o, each output's extension picks its kind)")


def cmd_convert_many(args: argparse.Namespace) -> int:
    """`nn2tosa convert MODEL... --out-dir DIR`: one line per model on stdout as it finishes (a progress
    bar on a terminal's stderr), then the summary table; the exit status is the worst class."""
    for dest, (flag, instead) in SINGLE_MODEL_OPTIONS.items():
        if getattr(args, dest) is not None and getattr(args, dest) is not False:  # (--partition 0 counts)
            raise UsageError(f"{flag} names one model's file or part: with --out-dir, {instead}")
    from nn2tosa.fileio import check_output_path, write_atomic
    from nn2tosa.progress import ProgressBar, watched

    if args.summary_json is not None and Path(args.summary_json).parent.resolve() != Path(args.out_dir).resolve():
        check_output_path(args.summary_json)  # (in DIR itself it can be written once DIR is made)
    if args.mlir_pipeline is not None:
        from nn2tosa.mlir_pipeline import check_pipeline

        check_pipeline(args.mlir_pipeline)
    emit = parse_emit(args.emit if args.emit is not None else DEFAULT_EMIT)
    job = Job(ConvertOptions.from_arguments(args), Path(args.out_dir), emit, args.debug)
    total = len(args.input)
    bar = ProgressBar(sys.stderr) if args.progress or (args.progress is None and watched(sys.stderr)) else None
    done = 0

    def show(result: ModelResult) -> None:
        nonlocal done
        done += 1
        if bar is not None:
            bar.close()
        print(f"[{done:>{len(str(total))}}/{total}] {model_line(result)}", flush=True)
        if bar is not None and done < total:
            bar("models", done, total)

    if args.scheduler is None and (args.read_on_workers or args.write_on_workers):
        flag = "--read-on-workers" if args.read_on_workers else "--write-on-workers"
        raise UsageError(f"{flag} goes with --scheduler ADDRESS (the local pool's workers see this machine's disk)")
    if args.scheduler is not None and args.jobs is not None:
        raise UsageError("--jobs sizes the local pool: with --scheduler, the cluster's worker threads convert")
    start = time.perf_counter()
    with _pool(args) as (pool, jobs):
        if bar is not None:
            bar("models", 0, total)
        try:
            results = _convert_many(args.input, job, args.jobs, args.timeout, show, pool)
        finally:
            if bar is not None:
                bar.close()
    wall = time.perf_counter() - start
    sys.stdout.write(summary_table(results, wall))
    if args.summary_json is not None:
        where = {} if args.scheduler is None else {"scheduler": args.scheduler}
        report = summary(results, out_dir=args.out_dir, emit=emit, jobs=jobs or _default_jobs(total), **where,
                         timeout=args.timeout, wall_seconds=wall)
        write_atomic(args.summary_json, (json.dumps(report, indent=1) + "\n").encode())
    return worst_exit([r.exit_code for r in results])


@contextmanager
def _pool(args: argparse.Namespace) -> Iterator[tuple[Pool, int | None]]:
    """(where the command's models are converted, how many at once when known)."""
    if args.scheduler is None:
        yield Pool(), args.jobs
        return
    from nn2tosa.zoo_dask import cluster_executor

    with cluster_executor(args.scheduler) as (executor, threads):
        yield Pool(executor, bool(args.read_on_workers), bool(args.write_on_workers)), threads


def model_line(r: ModelResult) -> str:
    """`ok          exit 0   0.05 s     12 ops  model.armnn` (and the error, when it failed)."""
    ops = "-" if r.ops is None else str(r.ops)
    what = r.input if not r.message else r.message if r.message.startswith(r.input) else f"{r.input}: {r.message}"
    return f"{r.status:<11} exit {r.exit_code}  {r.seconds:6.2f} s  {ops:>6} ops  {what}"


def summary_table(results: Sequence[ModelResult], wall_seconds: float) -> str:
    """Every model (in the order given) with its status, exit class, time, ops and outputs, then the totals."""
    rows = [("model", "status", "exit", "seconds", "ops", "outputs")]
    rows += [(r.input, r.status, str(r.exit_code), f"{r.seconds:.2f}", "-" if r.ops is None else str(r.ops),
              " ".join(Path(o).name for o in r.outputs) or "-") for r in results]
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]) - 1)]
    numbers = (2, 3, 4)  # exit, seconds, ops: right-aligned
    lines = ["  ".join([*(cell.rjust(w) if c in numbers else cell.ljust(w)
                          for c, (cell, w) in enumerate(zip(row, widths))), row[-1]]).rstrip() for row in rows]
    counts = _counts(results)
    worst = worst_exit([r.exit_code for r in results])
    lines.append(f"{len(results)} model{'s' if len(results) != 1 else ''}: "
                 + ", ".join(f"{n} {status}" for status, n in counts.items())
                 + f"; {wall_seconds:.2f} s; exit {worst}")
    return "\n".join(lines) + "\n"


def _counts(results: Sequence[ModelResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def summary(results: Sequence[ModelResult], **run: Any) -> dict[str, Any]:
    """What --summary-json writes: the run's settings (`run`), the worst exit class, counts per status, the
    CPU time of the conversions in the workers together (start-up not included), and every model's
    ModelResult in the order given."""
    return {
        **run,
        "exit_code": worst_exit([r.exit_code for r in results]),
        "models": len(results),
        "counts": _counts(results),
        "conversion_cpu_seconds": sum(r.cpu_seconds or 0.0 for r in results),
        "results": [r.as_dict() for r in results],
    }
