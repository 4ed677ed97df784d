"""Reading inputs without copies and writing outputs atomically."""
from __future__ import annotations

import mmap
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from .diagnostics import InvalidInputError


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


def write_atomic(path: str | os.PathLike, data: bytes | memoryview | Callable[[BinaryIO], None]) -> None:
    """Write `data` (or let `data(file)` write) to a temporary file beside `path`, then rename.

    A failure leaves neither a partial file nor a changed `path`. "-" writes to stdout.
    """
    if str(path) == "-":
        out = sys.stdout.buffer
        data(out) if callable(data) else out.write(data)
        out.flush()
        return
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            data(f) if callable(data) else f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
