"""Zoo tasks that misbehave on a cluster's workers, for tests/cli/test_zoo_cluster.py. Workers and their converter
processes import this module by name (the tests' folder is on their sys.path), so it imports nothing of pytest.

By model name: "crash" kills its converter process (SIGSEGV) and "hang" sleeps in it, both after starting an
output (the temporary write_atomic would leave); "lose" kills the worker process itself (SIGKILL), as a
machine going away would; every other model converts as usual."""
from __future__ import annotations

import faulthandler
import os
import signal
import time
from concurrent.futures import Executor, Future
from typing import Any

from nn2tosa.zoo_executor import ModelTask, TaskResult, convert_in_sandbox, run_task


def _start_an_output(task: ModelTask) -> None:
    if task.write:
        task.job.out_dir.mkdir(parents=True, exist_ok=True)
        (task.job.out_dir / f".{task.name}.tosa.abcd1234.tmp").write_bytes(b"half")


def _in_converter(task: ModelTask) -> TaskResult:
    if task.name in ("crash", "hang"):
        _start_an_output(task)
        if task.name == "crash":
            faulthandler.disable()
            os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(600)
    return convert_in_sandbox(task)


def misbehaving_task(task: ModelTask) -> TaskResult:
    if task.name == "lose":
        _start_an_output(task)
        os.kill(os.getpid(), signal.SIGKILL)
    return run_task(task, convert=_in_converter)


class Misbehaving(Executor):
    """An executor that runs misbehaving_task instead of the task it is given, on `inner`'s workers."""

    def __init__(self, inner: Executor):
        self.inner = inner
        self._client = getattr(inner, "_client", None)  # (how many it runs at once: nn2tosa.zoo_executor.parallelism)

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        return self.inner.submit(misbehaving_task, *args, **kwargs)
