"""The seed's flatbuffer generation (TOSA 0.90 semantics, stamped 0.100.0 draft) as a form of the
tosa dialect: its schema, element types, and the mapping gathered from the op table: `LEGACY_OPS`,
per op its 0.100 row (Op name, attribute table, Fields knowing both directions, see fields_0100),
and `NOT_IN_0_90`, why an op has no 0.90 form. The writer (nn2tosa.lowering.flatbuffer_0100) and the
reader (nn2tosa.frontend.tosa.layout_0100) both use them, so the two cannot disagree.
docs/tosa_formats.md explains the mapping.
"""
from __future__ import annotations

from collections.abc import Mapping

from nn2tosa.dialects.tosa_ops import View
from nn2tosa.schemas import load_schema
from nn2tosa.schemas import tosa_0_100_generated as fb0

from .fields_0100 import (DTYPES, RESULT, UNSIGNED_DTYPES, AccumulatorIsResult, Attr, ClampBounds,  # noqa: F401
                          ConstVector, DoubleRound, Field, ImplementationAttrs, LegacyOp, MulShift, OptionalFlag,
                          OutputShape, PadValue, PoolAccumulator, PropagatesNan, ReadView, ShapeField,
                          TableContents, Unsigned, WriteView, ZeroPoint, _float_storage, _storage_to_float,
                          fp8_values)

SCHEMA = load_schema("tosa_0_100")

# "tosa.<op>" -> its 0.100 row, for every op that has one (read from the op table when looked up)
LEGACY_OPS: Mapping[str, LegacyOp] = View(lambda op: op.legacy_form if isinstance(op.legacy_form, LegacyOp) else None)
# "tosa.<op>" -> why the 0.100 writer writes no form of it (TOSA 1.0 ops 0.90 lacks; control flow,
# whose row only the reader uses; const_shape, whose values are folded into the fields of its users)
NOT_IN_0_90: Mapping[str, str] = View(lambda op: op.legacy_refusal)


def check_row(row: LegacyOp) -> None:
    """A row names an operator and attribute table the 0.100 schema has."""
    if not hasattr(fb0.Op, row.op):
        raise ValueError(f"0.100 has no operator {row.op}")
    if row.table is not None and row.table not in SCHEMA.tables:
        raise ValueError(f"0.100 has no attribute table {row.table}")


for _row in LEGACY_OPS.values():
    check_row(_row)
