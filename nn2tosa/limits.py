"""Resource limits: one place for every bound on what a hostile input can make nn2tosa do.

Every quantity that grows with the input is bounded here, with a default generous enough for real
models (a 100 MB model stays far below each) and small enough that a crafted file cannot make a
conversion allocate gigabytes or run for hours:

| limit              | default    | what it bounds                                                       |
| ------------------ | ---------- | -------------------------------------------------------------------- |
| max_tensor_bytes   | 2 GiB      | one tensor: declared by the file, or an array a pass would build     |
| max_total_bytes    | 4 GiB      | all arrays the passes build during one run, together                 |
| max_ops            | 262,144    | operations in one graph at any stage (and all partitions together)  |
| max_rank           | 16         | dimensions of one tensor                                             |
| max_list_length    | 65,536     | elements of one list attribute (strides, split sizes, view origins)  |

Nesting depth is bounded where nesting happens (flatbuffer tables: nn2tosa.schemas.flatread's
DEFAULT_MAX_DEPTH); the work of a whole-buffer walk is bounded by the buffer size
(nn2tosa.schemas.verify). The command line sets these limits with `--max-tensor-bytes` and friends.

How code uses them:
- `Graph.add_op` refuses to grow a graph past max_ops (readers and passes alike);
- a reader's result goes through `check_graph` (nn2tosa/ir/limit_checks.py; frontend.load does it):
  declared types, list attributes, constants and structure are checked before any pass allocates anything;
- code that is about to build an array whose size derives from the input (a fold, an unpacking, a
  relayout, an index table) calls `reserve(shape, dtype, what)` first; code that may simply skip
  the work (an optional fold) asks `affordable(shape, dtype)` instead.
The limits in force are a context variable: `with using(Limits(max_tensor_bytes=...)):` scopes
them (and a fresh total budget) to one run; api.convert opens one per conversion, the command line
one per command. Outside any scope the defaults apply and the total is not accumulated.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, fields
from typing import Any

from nn2tosa.diagnostics import InvalidInputError

GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """The bounds in force (see the module doc); `flag` metadata is the command-line option."""

    max_tensor_bytes: int = field(default=2 * GiB, metadata={
        "flag": "--max-tensor-bytes", "help": "largest tensor, declared or built by a pass (bytes; K/M/G suffixes)"})
    max_total_bytes: int = field(default=4 * GiB, metadata={
        "flag": "--max-total-bytes", "help": "all arrays the passes build in one run, together (bytes)"})
    # about 0.25 ms and 1 KB per op: a quarter million ops is a minute and a few hundred MB
    max_ops: int = field(default=1 << 18, metadata={
        "flag": "--max-ops", "help": "operations in one graph at any stage (and in all partitions together)"})
    max_rank: int = field(default=16, metadata={"flag": "--max-rank", "help": "dimensions of one tensor"})
    max_list_length: int = field(default=1 << 16, metadata={
        "flag": "--max-list-length", "help": "elements of one list attribute"})

    def __post_init__(self) -> None:
        for f in fields(self):
            if getattr(self, f.name) < 0:
                raise ValueError(f"{f.metadata['flag']} must not be negative")


def flag(name: str) -> str:
    """The command-line option that sets limit `name` ("max_ops" -> "--max-ops")."""
    return next(f.metadata["flag"] for f in fields(Limits) if f.name == name)


class LimitExceededError(InvalidInputError):
    """The input asks for more than a limit allows (exit 2, like other invalid input: a file that
    claims a 100 GB tensor is hostile or corrupt far more often than it is real). The message names
    the option that raises the limit."""


@dataclass
class _State:
    limits: Limits
    spent: int = 0  # bytes reserve() granted in this scope


_DEFAULT = Limits()
# The scope `using` opened, if any. Outside every scope the defaults apply and nothing accumulates:
# a long-lived process converting many models must not exhaust a budget meant for one run.
_STATE: ContextVar[_State | None] = ContextVar("nn2tosa_limits", default=None)


def _state() -> _State:
    state = _STATE.get()
    return state if state is not None else _State(_DEFAULT)


def current() -> Limits:
    """The limits in force."""
    return _state().limits


@contextmanager
def using(limits: Limits) -> Iterator[Limits]:
    """Run the body under `limits`, with a fresh total budget."""
    token = _STATE.set(_State(limits))
    try:
        yield limits
    finally:
        _STATE.reset(token)


# ------------------------------------------------------------------------------ sizes
def nbytes(shape: Iterable[int] | int, dtype: Any) -> int:
    """Bytes of a tensor of `shape` (or an element count) and `dtype` (numpy dtype or an MLIR element
    type such as "f32"), as an exact Python int: no overflow, however large the claim. Dynamic (-1)
    dimensions count as 1."""
    count = shape if isinstance(shape, int) else math.prod(max(int(d), 1) for d in shape)
    return count * _itemsize(dtype)


_ITEMSIZES: dict[str, int] = {}  # element type name -> bytes (every constant a pass builds asks)


def _itemsize(dtype: Any) -> int:
    """Bytes per element; MLIR element type names win over numpy's ("i4" is int4 held in a byte)."""
    if isinstance(dtype, str) and dtype in _ITEMSIZES:
        return _ITEMSIZES[dtype]
    import numpy as np  # here: the command line builds its parser from this module without numpy

    from nn2tosa.ir.types import ELEMENT_TYPES, numpy_dtype  # (imports nothing of nn2tosa: no circle)

    if isinstance(dtype, str) and dtype in ELEMENT_TYPES:
        size = _ITEMSIZES[dtype] = numpy_dtype(dtype).itemsize
        return size
    return np.dtype(dtype).itemsize


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def check_tensor(shape: Iterable[int], dtype: Any, what: str, *, where: str | None = None) -> None:
    """Refuse a tensor declared larger than max_tensor_bytes or of rank above max_rank, or with a
    dimension below -1 (-1 is dynamic)."""
    shape = tuple(int(d) for d in shape)
    limits = current()
    if len(shape) > limits.max_rank:
        raise LimitExceededError(f"{what} has rank {len(shape)}, above the limit of {limits.max_rank} "
                                 f"({flag('max_rank')})", where=where)
    if any(d < -1 for d in shape):
        raise InvalidInputError(f"{what} has a negative dimension: {list(shape)}", where=where)
    size = nbytes(shape, dtype)
    if size > limits.max_tensor_bytes:
        raise LimitExceededError(
            f"{what} of shape {_shape_text(shape)} takes {_size_text(size)}, above the limit of "
            f"{_size_text(limits.max_tensor_bytes)} ({flag('max_tensor_bytes')})", where=where)


def _shape_text(shape: tuple[int, ...]) -> str:
    text = "x".join("?" if d < 0 else str(d) for d in shape) or "scalar"
    return text if len(text) <= 80 else text[:77] + "..."


def affordable(shape: Iterable[int] | int, dtype: Any) -> bool:
    """Whether an array of `shape` and `dtype` fits max_tensor_bytes and what is left of the total
    budget (nothing is charged: for work that can be skipped, such as an optional fold)."""
    state = _state()
    size = nbytes(shape, dtype)
    return size <= state.limits.max_tensor_bytes and state.spent + size <= state.limits.max_total_bytes


def reserve(shape: Iterable[int] | int, dtype: Any, what: str, *, where: str | None = None) -> None:
    """Charge an array about to be built (from sizes the input chose) to the budget, or refuse it with
    a LimitExceededError before anything is allocated."""
    state = _state()
    size = nbytes(shape, dtype)
    shape_text = f"{shape} elements" if isinstance(shape, int) else f"shape {_shape_text(tuple(shape))}"
    if size > state.limits.max_tensor_bytes:
        raise LimitExceededError(
            f"{what} would build an array of {shape_text} ({_size_text(size)}), above the limit of "
            f"{_size_text(state.limits.max_tensor_bytes)} ({flag('max_tensor_bytes')})", where=where)
    if state.spent + size > state.limits.max_total_bytes:
        raise LimitExceededError(
            f"{what} would build an array of {_size_text(size)} after {_size_text(state.spent)} built already, "
            f"above the total limit of {_size_text(state.limits.max_total_bytes)} ({flag('max_total_bytes')})",
            where=where)
    state.spent += size


# ------------------------------------------------------------------------------ command line
_SUFFIXES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """A byte count from the command line: "1048576", "512M", "2G", "2GiB" (binary units)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a size (a number of bytes, optionally with K, M, G or T)")
    return int(m.group(1)) * _SUFFIXES[m.group(2).lower()]
