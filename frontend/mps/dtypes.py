"""MPSDataType: its two numberings, the element types they stand for, and how to tell which one a file uses.

The backend's writer serializes the numbers of its Python `MPSDataType` enum. Until August 2024 that enum
was out of step with the schema (`schema.fbs` already listed float64, int4, ...): files written then use
the *legacy* numbering

    0 invalid, 1 float16, 2 float32, 3 bfloat16, 4 int8, 5 int16, 6 int32, 7 int64, 8 uint8, 9 bool,
    10 complex_float16, 11 complex_float32

while later files use the schema's *current* numbering (float64 = 3, bfloat16 = 4, int4 = 5, ...,
int64 = 9, bool = 15, complex_float32 = 17). The file identifier ("MP00") did not change and both
generations can carry the 24-byte header with a constant segment, so the numbering is detected from what
the file holds (`detect_numbering`):

  Facts are collected, each saying "this raw dtype number must name one of these types":
  1. a constant whose byte count is known must have a type whose size explains it (numel x item size;
     int4 packs two per byte; the backend's 8-byte integer scalars are allowed for any integer type);
  2. the results of comparisons, isnan, isinf and logical_not are bool;
  3. the index operands of index_select, embedding and scatter, and max-pool's indices result, are
     int32 or int64;
  4. a number outside a numbering's range contradicts it; an MPSDequantizePerChannelGroup node
     contradicts the legacy numbering (writers of that era had no int4 support).
  The numbering contradicted by fewer facts wins. A tie (no fact tells them apart: a float-only graph,
  where both agree, or say an int32-only graph without constants) goes by the container: a bare
  flatbuffer is legacy (writers already wrote the 24-byte header and constant segment before the
  renumbering, so a file without them is older), a payload with the header is current.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from nn2tosa.schemas import load_schema

CURRENT = "current"
LEGACY = "legacy"

# Current schema enum: number -> name (from the packaged schema, so it cannot drift from it).
CURRENT_NAMES: dict[int, str] = dict(load_schema("mps").enums["MPSDataType"].names)

# The Python enum the backend wrote with before August 2024 (see the module docstring).
LEGACY_NAMES: dict[int, str] = {
    i: "mps_data_type_" + short
    for i, short in enumerate(
        "invalid float16 float32 bfloat16 int8 int16 int32 int64 uint8 bool complex_float16 complex_float32".split()
    )
}

NUMBERINGS: dict[str, dict[int, str]] = {CURRENT: CURRENT_NAMES, LEGACY: LEGACY_NAMES}

# Type name -> MLIR element type of the IR (None: nn2tosa has no element type for it).
# bf16 values are kept as raw uint16 bits and i4 values unpacked one per int8 (see nn2tosa/ir/types.py).
ELEMENT_TYPES: dict[str, str | None] = {
    "mps_data_type_invalid": None,
    "mps_data_type_float16": "f16",
    "mps_data_type_float32": "f32",
    "mps_data_type_float64": "f64",
    "mps_data_type_bfloat16": "bf16",
    "mps_data_type_int4": "i4",
    "mps_data_type_int8": "i8",
    "mps_data_type_int16": "i16",
    "mps_data_type_int32": "i32",
    "mps_data_type_int64": "i64",
    "mps_data_type_uint4": None,
    "mps_data_type_uint8": "ui8",
    "mps_data_type_uint16": "ui16",
    "mps_data_type_uint32": "ui32",
    "mps_data_type_uint64": "ui64",
    "mps_data_type_bool": "i1",
    "mps_data_type_complex_float16": None,
    "mps_data_type_complex_float32": None,
}

# Bytes a constant of n elements occupies in the file, per element type.
_STORAGE_BITS = {"f16": 16, "f32": 32, "f64": 64, "bf16": 16, "i4": 4, "i8": 8, "i16": 16, "i32": 32,
                 "i64": 64, "ui8": 8, "ui16": 16, "ui32": 32, "ui64": 64, "i1": 8}
INTEGER_ELEMENTS = frozenset({"i4", "i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64", "i1"})
# The backend's define_scalar stores an integer scalar as 8 bytes whatever its declared type.
SCALAR_INT_BYTES = 8


def storage_bytes(element: str, count: int) -> int:
    """Bytes that `count` elements of `element` take in the file (int4: two per byte, rounded up)."""
    return (count * _STORAGE_BITS[element] + 7) // 8


def size_explains(element: str | None, count: int, nbytes: int) -> bool:
    """Whether `nbytes` of constant data fit a tensor of `count` elements of type `element`: exactly, or
    as one of the backend's 8-byte integer scalars (whose value is in the leading bytes)."""
    if element is None:
        return False
    if nbytes == storage_bytes(element, count):
        return True
    return count == 1 and nbytes == SCALAR_INT_BYTES and element in INTEGER_ELEMENTS and element != "i4"


@functools.lru_cache(maxsize=1024)
def elements_of_size(count: int, nbytes: int) -> frozenset[str]:
    """The element types whose `count` elements `nbytes` bytes of constant data can hold."""
    return frozenset(e for e in _STORAGE_BITS if size_explains(e, count, nbytes))


@dataclass(frozen=True)
class DTypeFact:
    """Raw dtype number `raw` must name one of `allowed` (element types); `why` says where it comes from."""

    raw: int
    allowed: frozenset[str]
    why: str


def contradictions(numbering: str, facts: Iterable[DTypeFact]) -> list[DTypeFact]:
    """The facts that `numbering` does not satisfy."""
    names = NUMBERINGS[numbering]
    return [f for f in facts if ELEMENT_TYPES.get(names.get(f.raw, ""), None) not in f.allowed]


def detect_numbering(facts: list[DTypeFact], raw_values: Iterable[int], legacy_impossible: bool,
                     has_header: bool) -> str:
    """CURRENT or LEGACY for a file with these facts and raw dtype numbers (rule in the module docstring)."""
    raw = set(raw_values)
    bad = {n: len(contradictions(n, facts)) for n in NUMBERINGS}
    for n, names in NUMBERINGS.items():
        bad[n] += sum(1 for r in raw if r not in names)
    if legacy_impossible:
        bad[LEGACY] += 1
    if bad[LEGACY] == bad[CURRENT]:
        return CURRENT if has_header else LEGACY
    return LEGACY if bad[LEGACY] < bad[CURRENT] else CURRENT
