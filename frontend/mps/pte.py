"""ExecuTorch program files (.pte): find the MPS delegate payloads inside.

A .pte is a flatbuffer (`Program`, file identifier "ET" + two digits) optionally followed by data
segments. Each execution plan lists its delegates; a delegate's `processed` data is either inline
(`Program.backend_delegate_data[index].data`) or a segment (`Program.segments[index]`, whose offset is
relative to the segment base in the extended header at byte 8: "eh" + two digits, u32 header size,
u64 program size, u64 segment base offset). The MPS backend's delegates have id "MPSBackend" and their
data is the MPS payload, verbatim.

The packaged schema `pte.fbs` (nn2tosa.schemas) is the part of ExecuTorch's `schema/program.fbs` nn2tosa
reads (the delegates here, the execution plan's values and instructions in plan.py), written from its field list: fields nobody here reads are declared with stub types of the right
kind (empty tables, vectors), so that every later field keeps its vtable slot and the verifier can still
walk the whole buffer.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from nn2tosa.diagnostics import InvalidInputError, Unsupported, UnsupportedError
from nn2tosa.schemas import Schema, load_schema
from nn2tosa.schemas.flatread import FlatBuffer, Table
from nn2tosa.schemas.verify import verify_buffer

MPS_BACKEND_ID = "MPSBackend"

_EXTENDED_HEADER = struct.Struct("<4sIQQ")  # magic, header size, program size, segment base offset


def program_schema() -> Schema:
    return load_schema("pte")


def sniff(data: memoryview) -> bool:
    """An ExecuTorch program: "ET" and two ASCII digits at bytes 4..8."""
    return len(data) >= 8 and bytes(data[4:6]) == b"ET" and bytes(data[6:8]).isdigit()


@dataclass(frozen=True)
class Delegate:
    """One MPS delegate payload in a .pte: where it sits and which plan it belongs to."""

    plan: str
    index: int  # position in the plan's delegate list
    start: int
    size: int
    location: str  # "inline" or "segment"
    cpu_operators: tuple[str, ...]  # operators the plan runs outside any delegate


def _segment_base(data: memoryview) -> int | None:
    """The segment base offset from the extended header, or None when the file has none."""
    if len(data) < 8 + _EXTENDED_HEADER.size:
        return None
    magic, header_size, _, base = _EXTENDED_HEADER.unpack_from(data, 8)
    if magic[:2] != b"eh" or not magic[2:].isdigit():
        return None
    if header_size < _EXTENDED_HEADER.size:
        raise InvalidInputError(f"extended header size {header_size} is smaller than {_EXTENDED_HEADER.size}",
                                where="offset 0xc")
    if base > len(data):
        raise InvalidInputError(f"segment base offset {base} is past the end of the file ({len(data)} bytes)",
                                where="offset 0x18")
    return base


def _operators(plan: Table) -> tuple[str, ...]:
    ops = plan.get("operators") or []
    names = []
    for op in ops:
        overload = op.get("overload")
        names.append((op.get("name") or "?") + (f".{overload}" if overload else ""))
    return tuple(names)


def read_program(data: memoryview) -> Table:
    """The verified Program table of a .pte."""
    fb = FlatBuffer(data, program_schema())
    verify_buffer(fb)
    return fb.root()


def segment_span(program: Table, data: memoryview, index: int, where: str) -> tuple[int, int]:
    """(file offset, size) of segment `index`, checked against the file."""
    segments = program.get("segments") or []
    if index >= len(segments):
        raise InvalidInputError(f"segment {index} does not exist ({len(segments)} segments)", where=where)
    base = _segment_base(data)
    if base is None:
        raise InvalidInputError("the data is in a segment but the file has no extended header giving the "
                                "segment base", where=where)
    seg = segments[index]
    start, size = base + seg.get("offset"), seg.get("size")
    if start > len(data) or size > len(data) - start:
        raise InvalidInputError(f"segment {index} ({size} bytes at offset {start}) runs past the end "
                                f"of the file ({len(data)} bytes)", where=where)
    return start, size


def delegate_data(program: Table, delegate: Table, data: memoryview, where: str) -> tuple[str, int, int]:
    """("inline" or "segment", file offset, size) of a delegate's processed data (ranges checked)."""
    ref = delegate.get("processed")
    if ref is None:
        raise InvalidInputError("the delegate has no processed data", where=where)
    location, index = ref.enum_name("location"), ref.get("index")
    if location == "INLINE":
        inline = program.get("backend_delegate_data") or []
        if index >= len(inline):
            raise InvalidInputError(f"inline data {index} does not exist ({len(inline)} entries)", where=where)
        span = inline[index].vector_span("data")
        start, size = span if span is not None else (0, 0)
        return "inline", start, size
    start, size = segment_span(program, data, index, where)
    return "segment", start, size


def find_delegates(data: memoryview) -> list[Delegate]:
    """Every MPS delegate payload of the program, in plan order then delegate order (ranges checked)."""
    program = read_program(data)
    found, others = [], []
    for plan in program.get("execution_plan") or []:
        plan_name = plan.get("name") or ""
        cpu_ops = _operators(plan)
        for k, delegate in enumerate(plan.get("delegates") or []):
            where = f"plan {plan_name!r} delegate {k}"
            backend = delegate.get("id") or ""
            if backend != MPS_BACKEND_ID:
                others.append(backend)
                continue
            location, start, size = delegate_data(program, delegate, data, where)
            found.append(Delegate(plan_name, k, start, size, location, cpu_ops))
    if not found:
        backends = ", ".join(sorted(set(others))) or "none"
        raise UnsupportedError([Unsupported("ExecuTorch program", "the whole file",
                                            f"it holds no {MPS_BACKEND_ID} delegate (delegates: {backends})")])
    return found
