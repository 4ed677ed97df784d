"""A converter process that a zoo task on any executor's worker hands its model to, so that a model that
crashes or hangs takes that process down, never the worker: `python -m nn2tosa.zoo_sandbox`.

A Dask worker (or a ProcessPoolExecutor's) runs several threads and must go on serving other tasks; a model
converted in it could kill it (a segfault, os._exit) or hold it forever (a hang no thread can interrupt). So
each worker thread keeps one Sandbox: a child Python process started at its first model (imports paid once
per thread, not per model) that runs one call at a time. The thread waits for the answer with the model's
timeout; past it, or when the child dies, the child is killed, the call raises Stopped, and the next call
starts a fresh child. The child is a new interpreter (subprocess, not fork): forking a threaded worker can
deadlock the child, and a Dask worker is a daemon process that multiprocessing forbids to have children.
The child ends when its parent does (the pipe closes, or a watchdog sees the parent gone while it converts).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any


class Stopped(Exception):
    """The call did not answer: `why` is "timeout" (stopped after the time limit) or "crashed" (the child
    died); `how` says how the child ended (signal SIGSEGV, exit status 3)."""

    def __init__(self, why: str, how: str):
        super().__init__(why, how)
        self.why, self.how = why, how


class Sandbox:
    """One child process calling functions sent to it, one at a time."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.started = 0.0  # when the last call was sent (time.perf_counter)

    def call(self, function: Callable[[Any], Any], argument: Any, timeout: float | None) -> Any:
        """function(argument) in the child (both pickled: a module-level function); its exception is raised
        here; Stopped when it runs past `timeout` seconds or the child dies."""
        try:
            if self.process is None or self.process.poll() is not None:
                self._start()
            assert self.conn is not None
            self.started = time.perf_counter()  # (after the start-up: the call's own time)
            self.conn.send((function, argument))
            if not self.conn.poll(timeout):
                raise Stopped("timeout", self.stop())
            ok, value = self.conn.recv()
        except (EOFError, OSError):
            raise Stopped("crashed", self.stop()) from None
        if not ok:
            raise value
        return value

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # what its worker imports
        with theirs:
            self.process = subprocess.Popen([sys.executable, "-m", "nn2tosa.zoo_sandbox", str(theirs.fileno())],
                                            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env)
        self.conn = Connection(ours.detach())
        self.conn.recv()  # it is ready: its imports are not the first model's time (nor counted in its timeout)

    def stop(self) -> str:
        """Kill the child (if alive) and say how it ended."""
        if self.process is None:
            return "not started"
        self.process.kill()
        code = self.process.wait()
        if self.conn is not None:
            self.conn.close()
        self.process, self.conn = None, None
        return f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


_sandboxes: dict[int, Sandbox] = {}  # one per thread of this process
_lock = threading.Lock()


def for_this_thread() -> Sandbox:
    with _lock:
        return _sandboxes.setdefault(threading.get_ident(), Sandbox())


def close_all() -> int:
    """End every sandbox of this process (e.g. `client.run(nn2tosa.zoo_sandbox.close_all)` to free the workers'
    converter processes); a model converting in one is stopped. How many were running."""
    with _lock:
        boxes, running = list(_sandboxes.values()), 0
        _sandboxes.clear()
    for box in boxes:
        if box.process is not None:
            running += 1
            box.stop()
    return running


# ------------------------------------------------------------------------------ the child
def _warm() -> None:
    """Import what converting any model needs, once, before the first call."""
    from nn2tosa.api import tosa_pipeline  # (and with it the conversion and writing code)
    from nn2tosa.frontend import FORMAT_MODULES
    from nn2tosa.passes import parse_pipeline

    for fmt in FORMAT_MODULES:
        parse_pipeline(tosa_pipeline(fmt))
    import nn2tosa.lowering.flatbuffer_emitter  # noqa: F401
    import nn2tosa.lowering.mlir_emitter  # noqa: F401


def _watch_parent(parent: int) -> None:
    """End this process when its parent is gone, even while a call holds the main thread."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


def _serve(fd: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the process that started the run
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    conn = Connection(fd)
    _warm()
    conn.send("ready")
    while True:
        try:
            function, argument = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: tuple[bool, Any] = (True, function(argument))
        except Exception as e:
            reply = (False, e)
        try:
            conn.send(reply)
        except Exception as e:  # (an answer that does not pickle)
            conn.send((False, RuntimeError(f"the answer of {function.__name__} cannot be sent back: {e}")))


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
    os._exit(0)  # (as the command line: no teardown of the conversions' objects)
