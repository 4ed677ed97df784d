"""Reading inputs without copies and writing outputs atomically."""
from __future__ import annotations

import io
import mmap
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .diagnostics import InvalidInputError, UsageError


def map_file(path: str | os.PathLike) -> memoryview:
    """The file's bytes, memory-mapped read-only (an empty file gives an empty view)."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return memoryview(b"")
            return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except FileNotFoundError:
        raise InvalidInputError("no such file", file=str(path)) from None
    except IsADirectoryError:
        raise InvalidInputError("is a directory, not a model file", file=str(path)) from None
    except PermissionError:
        raise InvalidInputError("permission denied", file=str(path)) from None


# Linux 5.14's madvise(MADV_POPULATE_READ): map every page of a mapping in one system call
MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)


def mapping_of(array: object) -> mmap.mmap | None:
    """The mmap that a numpy array (or memoryview) is a view of, following `.base` and `.obj`."""
    seen = 0
    while array is not None and not isinstance(array, mmap.mmap) and seen < 64:
        array = array.obj if isinstance(array, memoryview) else getattr(array, "base", None)
        seen += 1
    return array if isinstance(array, mmap.mmap) else None


def populate(arrays: Iterable[object]) -> None:
    """Make resident exactly the pages of mapped files that these arrays view, and release the rest.

    Writers call this before streaming constants out: touching a mapping page by page costs a
    fault per few pages (about 0.2 s per 340 MB here), populating it costs about 0.01 s. Pages the
    graph no longer refers to (weights a fold replaced, the flatbuffer tables already read) are
    dropped from the process: the mapping is read-only and file-backed, so a page that is read again
    later just faults back in from the page cache. That keeps peak RSS at what the outputs need
    (about 100 MB less for a 100 MB model whose batch norms were folded into its convolutions).
    Where the kernel lacks the calls, nothing changes."""
    spans: dict[int, tuple[mmap.mmap, int, list[tuple[int, int]]]] = {}
    for array in arrays:
        mapping = mapping_of(array)
        if mapping is None or not isinstance(array, np.ndarray) or array.size == 0:
            continue
        if id(mapping) not in spans:  # (the mapping, its address, the byte ranges the arrays view)
            spans[id(mapping)] = (mapping, np.frombuffer(mapping, dtype=np.uint8).ctypes.data, [])
        _, base, ranges = spans[id(mapping)]
        low, high = np.lib.array_utils.byte_bounds(array)
        ranges.append((low - base, high - base))
    spare = _free_memory()
    for mapping, _, ranges in spans.values():
        try:
            mapping.madvise(mmap.MADV_DONTNEED)
            for start, end in _page_runs(ranges, len(mapping)):
                # more than half the free memory would evict its own first pages: let the writer stream it
                if spare is None or end - start <= spare // 2:
                    mapping.madvise(MADV_POPULATE_READ, start, end - start)
        except (OSError, ValueError):  # older kernel, or a closed mapping: pages fault in as they are read
            pass


def _page_runs(ranges: list[tuple[int, int]], size: int, gap: int = 1 << 16) -> list[tuple[int, int]]:
    """Byte ranges widened to whole pages, sorted, and merged where less than `gap` apart."""
    runs: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        start -= start % mmap.PAGESIZE
        if runs and start <= runs[-1][1] + gap:
            runs[-1] = (runs[-1][0], max(runs[-1][1], end))
        else:
            runs.append((start, end))
    return [(start, min(end, size)) for start, end in runs]


def _free_memory() -> int | None:
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_output_path(path: str, *, directory: bool = False) -> None:
    """Refuse, before any work, an output path the user gave that cannot be written as asked: a file
    output naming a directory ("out.tosa/" or an existing directory), one in a directory that does
    not exist, a directory output that is an existing file. UsageError (exit 2) naming `path`."""
    if path == "-":
        return
    target = Path(path)
    if directory:
        if target.exists() and not target.is_dir():
            raise UsageError(f"{path}: exists and is not a directory (the outputs go into a directory)")
        return
    if path.endswith(("/", os.sep)) or target.is_dir():
        raise UsageError(f"{path}: is a directory, not an output file name")
    if not target.parent.is_dir():
        raise UsageError(f"{path}: no such directory: {target.parent}")


def _replace(tmp: str, target: str) -> None:
    """os.replace, whose error names the target the user asked for rather than our temporary."""
    try:
        os.replace(tmp, target)
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(target)) from None


# Inside all_or_nothing(): the writes made so far, as (temporary path or None for stdout, target
# path, stdout bytes), committed together when the scope ends without an error.
_PENDING: ContextVar[list[tuple[str | None, str, bytes]] | None] = ContextVar("nn2tosa_pending_writes", default=None)
# Inside captured_writes(): each output's bytes by the path it was meant for, nothing written to disk.
_CAPTURED: ContextVar[dict[str, bytes] | None] = ContextVar("nn2tosa_captured_writes", default=None)


def write_atomic(path: str | os.PathLike, data: bytes | memoryview | Callable[[BinaryIO], None]) -> None:
    """Write `data` (or let `data(file)` write) to a temporary file beside `path`, then rename.

    A failure leaves neither a partial file nor a changed `path`. "-" writes to stdout. Inside
    `all_or_nothing()`, the rename (and the stdout write) waits for the end of that scope; inside
    `captured_writes()`, the bytes are kept in memory instead (a zoo on a cluster sends them back).
    """
    captured = _CAPTURED.get()
    if captured is not None and str(path) != "-":
        held = io.BytesIO()
        data(held) if callable(data) else held.write(data)
        captured[str(path)] = held.getvalue()
        return
    pending = _PENDING.get()
    if str(path) == "-":
        if pending is not None:
            held = io.BytesIO()
            data(held) if callable(data) else held.write(data)
            pending.append((None, "-", held.getvalue()))
            return
        out = sys.stdout.buffer
        data(out) if callable(data) else out.write(data)
        out.flush()
        return
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as e:  # name the output the user asked for, not the temporary
        raise OSError(e.errno, e.strerror, str(target)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            data(f) if callable(data) else f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        if pending is not None:
            pending.append((tmp, str(target), b""))
            return
        _replace(tmp, str(target))
    except BaseException:
        _unlink(tmp)
        raise


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """Several outputs that appear together or not at all: write_atomic calls in the body only write
    temporaries, renamed onto their targets (stdout written first) when the body ends without an error
    and deleted when it raises. A run that fails after writing one output of several leaves none."""
    if _PENDING.get() is not None:  # nested: the outer scope commits
        yield
        return
    pending: list[tuple[str | None, str, bytes]] = []
    token = _PENDING.set(pending)
    try:
        yield
    except BaseException:
        for tmp, _, _ in pending:
            if tmp is not None:
                _unlink(tmp)
        raise
    finally:
        _PENDING.reset(token)
    pending.sort(key=lambda p: p[0] is not None)  # stdout first: a closed pipe must leave no file behind
    try:
        for i, (tmp, target, held) in enumerate(pending):
            if tmp is None:
                sys.stdout.buffer.write(held)
                sys.stdout.buffer.flush()
            else:
                _replace(tmp, target)
    except BaseException:
        for tmp, _, _ in pending[i:]:
            if tmp is not None:
                _unlink(tmp)
        raise


@contextmanager
def captured_writes() -> Iterator[dict[str, bytes]]:
    """write_atomic calls in the body keep each output's bytes in the dict yielded, keyed by the path asked
    for, and touch no file: a cluster worker converts a model this way when the client writes its outputs."""
    captured: dict[str, bytes] = {}
    token = _CAPTURED.set(captured)
    try:
        yield captured
    finally:
        _CAPTURED.reset(token)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_or_check(path: Path, text: str, command: str, check: bool) -> int:
    """A generated file's main: write `text` to `path` (exit status 0), or with `check` only compare
    (1 when the file differs, saying which `command` regenerates it)."""
    if check:
        if not path.exists() or path.read_text() != text:
            print(f"{path} is out of date: run {command}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    print(f"wrote {path}")
    return 0
