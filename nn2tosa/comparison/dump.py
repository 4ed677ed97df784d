"""Every intermediate tensor of a reference-model run, read as the run writes it.

`tosa_reference_model.run(..., dump_intermediates=1, debug_filename=F)` writes, for each operator
as it is evaluated, a block of text to F:

    Node type: CONV2D ID: 4 Eval Count: 1 ...
        Input[0]  Name: x DType=INT8 ...
       Output[0]  Name: layer_4 DType=INT32 isValid=1 Rank=4 Shape=[1, 16, 16, 8, ]
    Name: layer_4 DType=INT32 isValid=1 Rank=4 Shape=[1, 16, 16, 8, ]
    [[[[ 10109  -6817 ... ]
    [ ... ]
    ]
    ...

(tosa-tools 2026.8.0). The values are nested like numpy's repr: one line per innermost row,
`[ a  b  c ]`. Floats are printed with `%.<fp_format>f` (we ask for 20 decimals: exact enough for
fp32 at any magnitude that matters). INT8 and BOOL values are printed as raw *characters*, and the
block stops at the first NUL (a zero): no values can be read from them (nn2tosa.comparison.run casts
the ones it needs to INT32 first). Such a block is skipped up to the next "Node type:" line.

F is a FIFO: the run happens in a forked child (nn2tosa.check.in_child) and the parent reads each
tensor as it is written, so no more than one tensor is held at a time, whatever the model's size.
"""
from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

FP_FORMAT = "0.20"
_HEADER = re.compile(rb"^Name: (.*) DType=(\w+) isValid=\d+ Rank=(\d+) Shape=\[([-\d, ]*)\]\s*$")
NUMERIC = {"FP32": np.float32, "FP16": np.float16, "BF16": np.float32, "FP64": np.float64, "INT16": np.int16,
           "INT32": np.int32, "INT48": np.int64, "INT64": np.int64, "SHAPE": np.int64}


@dataclass
class Tensor:
    """One intermediate tensor as the run wrote it: `values` None when the model could not print it (BOOL)."""

    name: str
    dtype: str  # the reference model's name: INT8, FP32, ...
    shape: tuple[int, ...]
    values: np.ndarray | None


def read_tensors(raw_stream: IO[bytes], wanted: Callable[[str], bool] = lambda _: True) -> Iterator[Tensor]:
    """The tensors of a dump, in the order written; the values of those `wanted` does not want are
    skipped without being converted (a Tensor with values None is still yielded for them)."""
    stream = _Lines(raw_stream)
    while True:
        line = stream.readline()
        if not line:
            return
        m = _HEADER.match(line)
        if m is None:
            continue
        name = m.group(1).decode(errors="replace")
        dtype = m.group(2).decode()
        shape = tuple(int(d) for d in m.group(4).decode().replace(" ", "").split(",") if d)
        if dtype not in NUMERIC:  # INT8, BOOL, INT4: printed as characters, cut at the first NUL
            _skip_to_next_node(stream)
            values = None
        elif wanted(name):
            values = _numbers(_numeric_block(stream, keep=True), dtype, shape)
        else:
            _numeric_block(stream, keep=False)
            values = None
        yield Tensor(name, dtype, shape, values)


def _numeric_block(stream: _Lines, keep: bool) -> bytes:
    """The printed rows of a numeric tensor (up to the blank line that ends them), or past them."""
    lines: list[bytes] = []
    while True:
        line = stream.readline()
        if not line or line == b"\n":
            return b"".join(lines)
        if keep:
            lines.append(line)


def _skip_to_next_node(stream: _Lines) -> None:
    """Past a block whose values cannot be read, to just before the next node's header."""
    while True:
        line = stream.readline()
        if not line:
            return
        if line.startswith(b"Node type: "):
            stream.unread(line)
            return


def _numbers(text: bytes, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    flat = text.replace(b"[", b" ").replace(b"]", b" ").split()
    kind = NUMERIC.get(dtype, np.int64)
    if np.dtype(kind).kind == "f":
        values = np.array(flat, dtype=np.float64)
    else:
        values = np.array(flat, dtype=np.int64)
    if values.size != int(np.prod(shape)):
        raise ValueError(f"a {dtype} tensor of shape {list(shape)} has {values.size} values in the dump")
    return values.reshape(shape)


def run_dumping(tosa: bytes, feed: list[np.ndarray], level: str, consume: Callable[[Iterator[Tensor]], Any],
                wanted: Callable[[str], bool] = lambda _: True) -> tuple[str, Any]:
    """Run `tosa` on the reference model with every intermediate dumped, feeding the dump's tensors
    to `consume` as they are written (the values of those `wanted` accepts): (the run's status name,
    what `consume` returned). The model runs
    in a forked child, as `check` runs it (a crash is its status, "CRASHED (SIGSEGV)")."""
    from nn2tosa.check import ChildCrashed, _captured_output, in_child, reference_model

    trm = reference_model()
    with tempfile.TemporaryDirectory(prefix="nn2tosa-compare-") as tmp:
        fifo = os.path.join(tmp, "dump")
        os.mkfifo(fifo)
        consumed: list[Any] = []

        def child() -> str:
            hold = os.open(fifo, os.O_WRONLY)  # first: the parent's open of the FIFO returns once this has
            try:
                _, status = trm.run(tosa, feed, tosa_level=level, dump_intermediates=1, debug_filename=fifo,
                                    fp_format=FP_FORMAT)
            except ValueError as e:
                return f"ERROR ({e})"
            finally:
                os.close(hold)
            return str(status).rsplit(".", 1)[-1]

        def parent() -> None:
            with open(fifo, "rb") as stream:
                consumed.append(consume(read_tensors(stream, wanted)))
                while stream.read(1 << 16):  # what `consume` left unread: the child must be able to finish
                    pass

        with _captured_output():
            try:
                status = in_child(child, while_running=parent)
            except ChildCrashed as e:
                status = f"CRASHED ({e})"
        return status, consumed[0] if consumed else None


class _Lines:
    """A byte stream read by lines or by counts, with one line of push-back (a FIFO cannot seek)."""

    def __init__(self, stream: IO[bytes]):
        self.stream = stream
        self.pushed = b""

    def readline(self) -> bytes:
        if self.pushed:
            line, self.pushed = self.pushed, b""
            return line
        return self.stream.readline()

    def read(self, n: int) -> bytes:
        head, self.pushed = self.pushed[:n], self.pushed[n:]
        return head + (self.stream.read(n - len(head)) if n > len(head) else b"")

    def unread(self, line: bytes) -> None:
        self.pushed = line + self.pushed


__all__ = ["Tensor", "read_tensors", "run_dumping", "FP_FORMAT"]
