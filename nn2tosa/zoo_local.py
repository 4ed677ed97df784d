"""The forked local pool of a zoo run (`nn2tosa convert ... --out-dir DIR -j N`, nn2tosa/zoo.py): worker
processes forked from one process that imported what the conversions need once, each converting one model at a
time (zoo_jobs.Job.convert). A worker that dies or is still busy after the timeout is killed, what it was
writing removed, its model reported (crashed, timeout), and a fresh worker takes the next model."""
from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from nn2tosa.zoo_jobs import CRASHED, TIMEOUT, Job, ModelResult, remove_temporaries


def _serve(conn: Any, job: Job) -> None:
    """A worker's loop: receive (index, path, name), answer (index, ModelResult); None ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends the workers
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        index, path, name = task
        conn.send((index, job.convert(path, name)))


def _warm(paths: Sequence[str], job: Job) -> None:
    """Import, once, what converting these inputs needs (their formats' readers and passes, the emitters),
    so that every forked worker starts with it instead of importing it again."""
    from nn2tosa.api import tosa_pipeline
    from nn2tosa.fileio import map_file
    from nn2tosa.frontend import sniff
    from nn2tosa.passes import parse_pipeline

    formats = set()
    for path in paths:
        try:  # (a failure here is the model's: its worker meets it again and reports it; warming is a head start)
            fmt = sniff(map_file(path))
            if fmt is not None and fmt not in formats:
                formats.add(fmt)
                parse_pipeline(tosa_pipeline(fmt))  # imports the format's legalization
        except Exception:
            continue
    if "tosa" in job.emit:
        import nn2tosa.lowering.flatbuffer_emitter  # noqa: F401
    if {"mlir", "mlirbc"} & set(job.emit) or job.options.validate or job.options.mlir_pipeline or "tosa" in formats:
        import nn2tosa.lowering.mlir_emitter  # noqa: F401


# ------------------------------------------------------------------------------ the workers
class _Worker:
    """A forked process converting one model at a time (_serve)."""

    def __init__(self, context: Any, job: Job):
        self.conn, child_end = context.Pipe()
        self.process = context.Process(target=_serve, args=(child_end, job), daemon=True)
        self.process.start()
        child_end.close()
        self.task: tuple[int, str, str] | None = None
        self.started = 0.0

    def give(self, task: tuple[int, str, str]) -> None:
        self.task, self.started = task, time.perf_counter()
        try:
            self.conn.send(task)
        except OSError:  # it died idle: the parent's wait sees its sentinel and reports the model as crashed
            pass

    def current(self) -> tuple[int, str, str]:
        """The task of a busy worker: (index, path, name)."""
        if self.task is None:
            raise RuntimeError("the worker is idle")
        return self.task

    def answer(self) -> ModelResult | None:
        """The finished model's result, or None when the worker died without one."""
        try:
            if self.conn.poll():
                return self.conn.recv()[1]
        except (EOFError, OSError):
            pass
        return None

    def kill(self) -> str:
        """End the process now; how it ended."""
        self.process.kill()
        self.process.join()
        self.conn.close()
        code = self.process.exitcode
        return f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit status {code}"

    def close(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.kill()


def run_local_pool(paths: list[str], names: list[str], job: Job, jobs: int, timeout: float | None,
                   on_result: Callable[[ModelResult], None] | None) -> list[ModelResult]:
    """Every model by `jobs` forked workers; one ModelResult per path, in order."""
    out_dir = job.out_dir
    _warm(paths, job)
    import multiprocessing
    from multiprocessing.connection import wait

    # fork: the workers start with the parent's imports; where there is none, spawn (each imports again)
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    tasks = deque((i, path, name) for i, (path, name) in enumerate(zip(paths, names)))
    results: list[ModelResult | None] = [None] * len(paths)

    def finish(worker: _Worker, result: ModelResult) -> None:
        results[worker.current()[0]] = result
        worker.task = None
        if on_result is not None:
            on_result(result)

    def lost(worker: _Worker, status: str, why: str) -> _Worker | None:
        """Record the model of a worker that died or hung, clean up after it, and replace it if needed."""
        _, path, name = worker.current()
        elapsed = time.perf_counter() - worker.started
        how = worker.kill()
        remove_temporaries(out_dir, name, names)
        code = 1 if status == CRASHED else 2
        finish(worker, ModelResult(path, name, status, code, elapsed, None, None, (), why.format(how=how)))
        return _Worker(context, job) if tasks else None

    workers = [_Worker(context, job) for _ in range(min(jobs, len(paths)))]  # (one more would wait forever)
    try:
        while True:
            for w in workers:
                if w.task is None and tasks:
                    w.give(tasks.popleft())
            busy = [w for w in workers if w.task is not None]
            if not busy:
                break
            wait_for = None
            if timeout is not None:
                wait_for = max(0.0, min(w.started + timeout for w in busy) - time.perf_counter())
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=wait_for))
            for w in busy:
                replacement: _Worker | None = w
                if w.conn in ready or w.process.sentinel in ready:
                    result = w.answer()
                    if result is not None:
                        finish(w, result)
                        continue
                    replacement = lost(w, CRASHED, f"{w.current()[1]}: internal error: the worker converting it died "
                                                   "({how})")
                elif timeout is not None and time.perf_counter() - w.started >= timeout:
                    replacement = lost(w, TIMEOUT, f"{w.current()[1]}: still converting after --timeout {timeout:g} s: "
                                                   "stopped")
                workers = ([x for x in workers if x is not w] if replacement is None else
                           [replacement if x is w else x for x in workers])
    finally:
        for w in workers:
            if w.task is not None:  # interrupted: what it was writing goes too
                w.kill()
                remove_temporaries(out_dir, w.task[2], names)
            else:
                w.close()
    return [r for r in results if r is not None]
