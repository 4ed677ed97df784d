"""A zoo run on any concurrent.futures.Executor: `nn2tosa.convert_many(..., executor=EX)`, and through it
`convert --out-dir DIR --scheduler ADDRESS` on a Dask cluster (nn2tosa/zoo_dask.py).

Each model is one task, `run_task(ModelTask)`, whose worker hands it to its thread's converter process
(nn2tosa/zoo_sandbox.py), so that a crash or a hang (`timeout`, counted from when the model starts converting
on its worker, not from when it was queued) is that model's result and the worker goes on. The task
converts exactly as `nn2tosa convert MODEL -o ...` does (zoo_jobs.Job.convert).

What goes where: by default the client reads each model and sends its bytes with the task (`path` still
names it in messages and reports), and the worker returns the outputs' bytes (fileio.captured_writes), which
the client writes into DIR all or nothing, as a local run does. `read_on_workers`: the workers open `path`
themselves (shared storage, the same path everywhere); `write_on_workers`: they write into DIR themselves
(DIR shared, the same path everywhere), atomically, and remove what a stopped model half-wrote.

One task per worker thread is in flight at once: the client holds few models' bytes, an interrupted run
(Ctrl-C) has little to cancel (what is queued is cancelled; outputs the client has not written never
appear), and a worker that dies takes no other model's task with it (Dask counts a worker's death against
every task assigned to it, and gives up on a task after `allowed-failures` such deaths). An executor's failure to run a task (Dask's KilledWorker after
its workers died running it, a broken process pool) makes the model `crashed`.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field
from pathlib import Path

from nn2tosa.zoo_jobs import CRASHED, STATUS, TIMEOUT, Job, ModelResult, remove_temporaries


@dataclass(frozen=True)
class ModelTask:
    """One model of a run, as sent to a worker (picklable)."""

    path: str  # as given: what messages and reports name
    name: str  # the stem of its outputs
    job: Job  # the options, DIR (the client's path), the kinds to write
    timeout: float | None
    data: bytes | None = None  # the model's bytes when sent from the client; None: the worker reads `path`
    write: bool = False  # the worker writes into DIR itself; else it returns the outputs' bytes
    longer: tuple[str, ...] = ()  # other models' names that start with "<name>.": their temporaries are not ours


@dataclass(frozen=True)
class TaskResult:
    """What a task answers: the model's result and, when the client writes, each output's bytes by path."""

    result: ModelResult
    files: dict[str, bytes] = field(default_factory=dict)


def convert_in_sandbox(task: ModelTask) -> TaskResult:
    """Runs in the converter process: convert the model, writing its outputs or keeping their bytes."""
    if task.write:
        task.job.out_dir.mkdir(parents=True, exist_ok=True)  # (shared storage the client may not have made)
        return TaskResult(task.job.convert(task.path, task.name, task.data))
    from nn2tosa.fileio import captured_writes

    with captured_writes() as files:
        result = task.job.convert(task.path, task.name, task.data)
    return TaskResult(result, files if result.exit_code == 0 else {})


def run_task(task: ModelTask, convert: Callable[[ModelTask], TaskResult] = convert_in_sandbox) -> TaskResult:
    """What a worker runs for one model: `convert(task)` in this thread's converter process, stopped at the
    timeout. A crash or a hang there is the model's result; the next task gets a fresh process."""
    from nn2tosa.zoo_sandbox import Stopped, for_this_thread

    sandbox = for_this_thread()
    try:
        return sandbox.call(convert, task, task.timeout)
    except Stopped as e:
        if task.write:
            remove_temporaries(task.job.out_dir, task.name, (task.name, *task.longer))
        seconds = time.perf_counter() - sandbox.started
        if e.why == TIMEOUT:
            return TaskResult(ModelResult(task.path, task.name, TIMEOUT, 2, seconds, None, None, (),
                                          f"{task.path}: still converting after --timeout {task.timeout:g} s: "
                                          "stopped"))
        return TaskResult(ModelResult(task.path, task.name, CRASHED, 1, seconds, None, None, (),
                                      f"{task.path}: internal error: the process converting it died ({e.how})"))


def parallelism(executor: Executor) -> int:
    """How many tasks the executor runs at once: a Dask client's worker threads, a pool's workers, else the
    cores here."""
    client = getattr(executor, "_client", None)  # distributed's ClientExecutor
    if client is not None:
        return max(1, sum(client.nthreads().values()))
    workers = getattr(executor, "_max_workers", None)  # ProcessPoolExecutor, ThreadPoolExecutor
    return workers if isinstance(workers, int) and workers > 0 else os.cpu_count() or 1


def run_on_executor(executor: Executor, paths: Sequence[str], names: Sequence[str], job: Job, *,
                    timeout: float | None, read_on_workers: bool, write_on_workers: bool,
                    on_result: Callable[[ModelResult], None] | None) -> list[ModelResult]:
    """Every model as a task on `executor`; one ModelResult per path, in order (see the module doc)."""
    from nn2tosa.diagnostics import error_exit

    window = parallelism(executor)
    queue = deque(range(len(paths)))
    running: dict[Future[TaskResult], tuple[int, float]] = {}  # -> (index, when submitted)
    results: list[ModelResult | None] = [None] * len(paths)

    def finish(index: int, result: ModelResult) -> None:
        results[index] = result
        if on_result is not None:
            on_result(result)

    def failed(index: int, start: float, e: Exception) -> ModelResult:
        code, message = error_exit(e)
        return ModelResult(paths[index], names[index], STATUS[code], code, time.perf_counter() - start, None, None,
                           (), message)

    def longer_names(index: int) -> tuple[str, ...]:
        return tuple(n for n in names if n != names[index] and n.startswith(names[index] + "."))

    def submit(index: int) -> None:
        path, name = paths[index], names[index]
        start = time.perf_counter()
        data = None
        if not read_on_workers:
            try:
                data = _read(path)
            except Exception as e:  # (no such file: the model's result, as when a worker meets it)
                finish(index, failed(index, start, e))
                return
        task = ModelTask(path, name, job, timeout, data, write_on_workers, longer_names(index))
        running[executor.submit(run_task, task)] = (index, start)

    def collect(future: Future[TaskResult], index: int, start: float) -> ModelResult:
        try:
            answer = future.result()
        except Exception as e:  # the executor could not run it: its workers died (KilledWorker), a broken pool
            if write_on_workers:  # what a lost worker half-wrote, where the client sees DIR too
                remove_temporaries(job.out_dir, names[index], (names[index], *longer_names(index)))
            return ModelResult(paths[index], names[index], CRASHED, 1, time.perf_counter() - start, None, None, (),
                               f"{paths[index]}: internal error: the worker converting it was lost "
                               f"({type(e).__name__}: {' '.join(str(e).split())})")
        if not answer.files:
            return answer.result
        from nn2tosa.fileio import all_or_nothing, write_atomic

        try:
            with all_or_nothing():
                for out, data in answer.files.items():
                    write_atomic(out, data)
        except Exception as e:  # (an output that cannot be written here: exit 2, as converting it alone)
            return failed(index, start, e)
        return answer.result

    try:
        while queue or running:
            while queue and len(running) < window:
                submit(queue.popleft())
            if not running:
                continue
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                index, start = running.pop(future)
                with _interrupt_after():  # a model written here is a model reported
                    finish(index, collect(future, index, start))
    finally:
        for future in running:  # interrupted: what is queued is cancelled; its outputs are never written here
            future.cancel()
    return [r for r in results if r is not None]


@contextmanager
def _interrupt_after() -> Iterator[None]:
    """Hold a Ctrl-C that arrives inside the block until the block ends: writing a model's outputs here and
    printing its line are one step, so an interrupted run lists every model whose outputs it wrote."""
    if threading.current_thread() is not threading.main_thread():  # (only the main thread gets SIGINT)
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def _read(path: str) -> bytes:
    """The model's bytes, for a worker that may not see `path`; errors as the workers' own reading says them."""
    from nn2tosa.fileio import map_file

    view = map_file(path)
    try:
        return bytes(view)
    finally:
        view.release()
