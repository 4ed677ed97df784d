"""The MPS payload container: the 24-byte "MP00" header in front of the flatbuffer, or a bare flatbuffer.

    [0:4]   u32 0
    [4:8]   "MP00"
    [8:16]  u64 LE constant data offset (from the start of the payload)
    [16:24] u64 LE constant data size
    [24:]   the MPSGraph flatbuffer (root offset at 24), padded to the constant data offset

A bare flatbuffer (root offset at 0, file identifier "MP00" at 4) is what older writers produced; its
constants are inline in the deprecated `MPSTensor.constant_buffer`, so it has no constant segment.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from nn2tosa.diagnostics import InvalidInputError

MAGIC = b"MP00"
HEADER_SIZE = 24
_HEADER = struct.Struct("<I4sQQ")


@dataclass(frozen=True)
class Payload:
    """Where the flatbuffer and the constant segment sit in `data` (byte ranges, end exclusive)."""

    data: memoryview
    flatbuffer_start: int
    flatbuffer_end: int
    constants_start: int
    constants_end: int
    has_header: bool


def sniff(data: memoryview) -> bool:
    """An MPS payload, with header or bare: "MP00" at bytes 4..8."""
    return len(data) >= 8 and bytes(data[4:8]) == MAGIC


def parse(data: memoryview) -> Payload:
    """Locate the flatbuffer and the constant segment; every range is checked against the data."""
    size = len(data)
    if size < 8 or bytes(data[4:8]) != MAGIC:
        raise InvalidInputError('not an MPS payload (no "MP00" at byte 4)', where="offset 0x4")
    first_word = struct.unpack_from("<I", data, 0)[0]
    if first_word != 0:  # a root offset: a bare flatbuffer
        return Payload(data, 0, size, size, size, has_header=False)
    if size < HEADER_SIZE + 8:
        raise InvalidInputError(f"{size} bytes is too short for the MPS header and a flatbuffer", where="offset 0x0")
    _, _, const_offset, const_size = _HEADER.unpack_from(data, 0)
    if not HEADER_SIZE + 8 <= const_offset <= size:
        raise InvalidInputError(
            f"header constant data offset {const_offset} is outside the payload ({size} bytes; the flatbuffer "
            f"starts at {HEADER_SIZE})",
            where="offset 0x8",
        )
    if const_size > size - const_offset:
        raise InvalidInputError(
            f"header constant data ({const_size} bytes at offset {const_offset}) runs past the end of the "
            f"payload ({size} bytes)",
            where="offset 0x10",
        )
    return Payload(data, HEADER_SIZE, const_offset, const_offset, const_offset + const_size, has_header=True)
