"""A progress bar on stderr for conversions of large models, drawn only for a person watching.

It appears when stderr is a terminal, the model file is at least LARGE_MODEL_BYTES (override with
the environment variable NN2TOSA_PROGRESS_BYTES), and neither CI nor TERM=dumb says otherwise; so
pipes, logs and CI runs never see it. It shows the stage running (load, each pass, writing) and
the time since the start, and erases itself when done. `convert --out-dir` (nn2tosa/zoo.py) draws one
counting models, whatever their size, whenever stderr is `watched`.
"""
from __future__ import annotations

import os
import sys
import time
from typing import TextIO

LARGE_MODEL_BYTES = 16 << 20
WIDTH = 24


class ProgressBar:
    """progress(stage, index, total) redraws one line: `[#######.......] 3/6 lower-to-tosa  1.2s`."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.start = time.perf_counter()
        self.drawn = False

    def __call__(self, stage: str, index: int, total: int) -> None:
        done = WIDTH * index // max(total, 1)
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"\r\033[K[{'#' * done}{'.' * (WIDTH - done)}] {index + 1}/{total} {stage}  {elapsed:.1f}s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """Erase the bar (before the command prints anything else)."""
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False


def watched(stream: TextIO) -> bool:
    """Whether a person is watching `stream`: a terminal, and neither CI nor TERM=dumb says otherwise."""
    return stream.isatty() and not os.environ.get("CI") and os.environ.get("TERM") != "dumb"


def progress_for(path: str, stream: TextIO | None = None) -> ProgressBar | None:
    """A ProgressBar when converting `path` is worth watching on an interactive stderr, else None."""
    stream = stream or sys.stderr
    if not watched(stream):
        return None
    try:
        threshold = int(os.environ.get("NN2TOSA_PROGRESS_BYTES", LARGE_MODEL_BYTES))
        size = os.path.getsize(path)
    except (OSError, ValueError):
        return None
    return ProgressBar(stream) if size >= threshold else None
