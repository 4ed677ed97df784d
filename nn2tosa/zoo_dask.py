"""`nn2tosa convert ... --out-dir DIR --scheduler ADDRESS`: a zoo run on a Dask distributed cluster
(`pip install 'nn2tosa[cluster]'`), through distributed's concurrent.futures executor and
nn2tosa/zoo_executor.py (what is sent where, crashes and hangs, Ctrl-C: see there and docs/zoo_cluster.md).

A worker lost while converting (killed, its machine gone) is the scheduler's to handle: it runs the task on
another worker until `distributed.scheduler.allowed-failures` workers died running it, then the task fails
with KilledWorker and the model is `crashed`. nn2tosa's clusters (local_cluster, and the scheduler start
line in docs/zoo_cluster.md) allow 1: one retry on another worker.
"""
from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from typing import Any

from nn2tosa.diagnostics import UsageError

ALLOWED_FAILURES = 1  # a model whose worker died is run once more elsewhere, then reported as crashed
WORKER_SECONDS = 60  # for a cluster without workers to get one


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise UsageError("--scheduler runs the zoo on a Dask cluster, which needs Dask distributed: "
                         "pip install 'nn2tosa[cluster]'") from None
    return distributed


@contextmanager
def cluster_executor(address: str) -> Iterator[tuple[Executor, int]]:
    """(an executor running tasks on the cluster whose scheduler is at `address`, its worker threads);
    the client is closed at the end, which releases whatever it still had queued."""
    distributed = _distributed()
    try:
        client = distributed.Client(address, set_as_default=False)  # (within distributed.comm.timeouts.connect)
    except (OSError, TimeoutError, ValueError) as e:
        raise UsageError(f"--scheduler {address}: cannot connect: {' '.join(str(e).split())}") from None
    try:
        try:
            client.wait_for_workers(1, timeout=WORKER_SECONDS)
        except TimeoutError:
            raise UsageError(f"--scheduler {address}: the cluster has no worker (waited {WORKER_SECONDS} s)") from None
        threads = sum(client.nthreads().values())
        yield client.get_executor(pure=False), threads  # (pure=False: a model given again is converted again)
    finally:
        client.close()


def local_cluster(workers: int = 2, threads_per_worker: int = 1, **options: Any) -> Any:
    """A distributed.LocalCluster on this machine for zoo runs: worker processes, loopback only, no dashboard,
    ALLOWED_FAILURES; `cluster.scheduler_address` is what --scheduler takes. Close it when done.

    It sets distributed.deploy.lost-worker-timeout for this process to 10 minutes: by default the cluster
    gives up on a worker (closes its nanny) that its nanny has not restarted within 15 s, and a worker
    killed on a loaded machine can take longer than that to start again."""
    distributed = _distributed()
    import dask

    dask.config.set({"distributed.deploy.lost-worker-timeout": "10 minutes"})  # (read when a worker is lost)
    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
        return distributed.LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=True,
                                        host="127.0.0.1", dashboard_address=None, **options)
