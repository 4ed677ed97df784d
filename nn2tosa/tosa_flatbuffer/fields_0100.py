"""The pieces of the seed's flatbuffer generation (TOSA 0.90 semantics, stamped 0.100.0 draft) that
an op's row in the tosa op table (nn2tosa/dialects/tosa_ops, its `legacy` field) is made of: element
types, and Fields, each knowing both directions: `write` (IR op -> table fields,
nn2tosa.lowering.flatbuffer_0100) and `read` (table fields -> IR attributes and constant operands,
nn2tosa.frontend.tosa.layout_0100), so the two cannot disagree. docs/tosa_formats.md explains them.
This module names no op: the rows are in the op table, and layout_0100 gathers them.
"""
from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from nn2tosa.ir import TensorType
from nn2tosa.ir.types import bf16_bits
from nn2tosa.schemas import tosa_0_100_generated as fb0

from .common import utf8_text, utf8_vector


DTYPES = {
    "i1": fb0.DType.BOOL, "i4": fb0.DType.INT4, "i8": fb0.DType.INT8, "i16": fb0.DType.INT16,
    "i32": fb0.DType.INT32, "i48": fb0.DType.INT48, "f32": fb0.DType.FP32, "f16": fb0.DType.FP16,
    "bf16": fb0.DType.BF16, "f8E4M3FN": fb0.DType.FP8E4M3, "f8E5M2": fb0.DType.FP8E5M2,
}
# The type of a value that RESCALE reads or writes unsigned.
UNSIGNED_DTYPES = {"i8": fb0.DType.UINT8, "i16": fb0.DType.UINT16}


# ------------------------------------------------------------------------------ views of one op
class WriteView(Protocol):
    """One IR op, as a Field's write side sees it."""

    attrs: dict[str, Any]

    def operand_type(self, k: int) -> TensorType: ...
    def const(self, k: int) -> np.ndarray: ...  # values of the tosa.const / tosa.const_shape at operand k
    def result_type(self) -> TensorType: ...


class ReadView(Protocol):
    """One 0.100 operator being read (frontend/tosa/layout_0100.py), as a Field's read side sees it."""

    attrs: dict[str, Any]  # the IR op's attributes, being filled

    def field(self, name: str) -> Any: ...  # the attribute table's field (schema default when absent)
    def enum_name(self, name: str) -> str: ...
    def input_type(self, k: int) -> str: ...  # element type of the k-th data input
    def input_unsigned(self, k: int) -> bool: ...
    def result_type(self) -> TensorType: ...
    def result_unsigned(self) -> bool: ...
    def set_const(self, operand: int, values: Any, element_type: str) -> None: ...
    def set_shape(self, operand: int, values: Iterable[int]) -> None: ...
    def fail(self, message: str) -> None: ...


# ------------------------------------------------------------------------------ fields
# Where a zero point's element type comes from: a data operand (0, 1) or the result.
RESULT = -1


@functools.lru_cache(maxsize=None)
def fp8_values(element_type: str) -> np.ndarray:
    """The float32 value of each of the 256 bit patterns of an fp8 type (E4M3FN: bias 7, no
    infinities, S.1111.111 is NaN; E5M2: bias 15, IEEE infinities and NaNs)."""
    exponent_bits, bias = (4, 7) if element_type == "f8E4M3FN" else (5, 15)
    mantissa_bits = 7 - exponent_bits
    bits = np.arange(256)
    sign = np.where(bits & 0x80, -1.0, 1.0)
    exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = bits & ((1 << mantissa_bits) - 1)
    normal = (1 + mantissa / (1 << mantissa_bits)) * np.exp2(exponent - bias)
    subnormal = mantissa / (1 << mantissa_bits) * np.exp2(1 - bias)
    values = sign * np.where(exponent == 0, subnormal, normal)
    top = exponent == (1 << exponent_bits) - 1
    if element_type == "f8E4M3FN":
        values = np.where(top & (mantissa == 7), np.nan, values)
    else:
        values = np.where(top, np.where(mantissa == 0, sign * np.inf, np.nan), values)
    return values.astype(np.float32)


def _storage_to_float(values: np.ndarray, element_type: str) -> np.ndarray:
    """Float values (float32 or wider) of IR storage: bf16 and fp8 are raw bits."""
    if element_type == "bf16":
        return (np.asarray(values, dtype="<u2").astype("<u4") << 16).view("<f4")
    if element_type.startswith("f8"):
        return fp8_values(element_type)[np.asarray(values, dtype=np.uint8)]
    return np.asarray(values, dtype=np.float64)


def _float_storage(value: float, element_type: str) -> np.ndarray:
    """One float as IR storage of `element_type` (bf16 rounded to nearest even, as MLIR does; an
    fp8 value must be one the type holds exactly)."""
    if element_type == "bf16":
        return np.array([bf16_bits(value)], dtype="<u2")
    if element_type.startswith("f8"):
        wanted = np.array([value], dtype=np.float32).view(np.uint32)[0]
        matches = np.flatnonzero(fp8_values(element_type).view(np.uint32) == wanted)
        if not matches.size:
            raise ValueError(f"{value} is not a {element_type} value")
        return matches[:1].astype(np.uint8)
    return np.array([value], dtype=TensorType((), element_type).numpy_dtype)


def _is_float(element_type: str) -> bool:
    return element_type.startswith(("f", "bf"))


class Field:
    """How some of a 0.100 attribute table's fields stand for the IR op's attributes or constant
    operands. `operands` are the IR operand positions the fields replace (no tensor is written for
    them)."""

    operands: tuple[int, ...] = ()

    def refusal(self, view: WriteView) -> str | None:
        """Why 0.90 cannot express this part of the op, or None."""
        return None

    def write(self, view: WriteView) -> dict[str, Any]:
        """{table field: value}."""
        return {}

    def read(self, view: ReadView) -> None:
        """Fill view.attrs / the constant operands from the table."""


@dataclass(frozen=True)
class Attr(Field):
    """An IR attribute kept as a table field with the same meaning (`field` when the name differs)."""

    name: str
    field_name: str | None = None
    renamed: tuple[tuple[str, str], ...] = ()  # (IR enum name, 0.100 enum name)

    @property
    def field(self) -> str:
        return self.field_name or self.name

    def write(self, view: WriteView) -> dict[str, Any]:
        value = view.attrs.get(self.name)
        if isinstance(value, str):
            value = dict(self.renamed).get(value, value)
        return {} if value is None else {self.field: value}

    def read(self, view: ReadView) -> None:
        raw = view.field(self.field)
        if isinstance(raw, np.ndarray):
            view.attrs[self.name] = [int(v) for v in raw]
        elif raw is not None and not isinstance(raw, (str, bool)) and self.renamed:
            name = view.enum_name(self.field)
            if name == "UNKNOWN":
                view.fail(f"{self.field} is UNKNOWN")
            view.attrs[self.name] = {old: new for new, old in self.renamed}.get(name, name)
        elif raw is not None:
            view.attrs[self.name] = raw


@dataclass(frozen=True)
class OptionalFlag(Field):
    """An optional IR bool attribute (absent = false) kept as a table field."""

    name: str

    def write(self, view: WriteView) -> dict[str, Any]:
        return {self.name: bool(view.attrs.get(self.name, False))}

    def read(self, view: ReadView) -> None:
        if view.field(self.name):
            view.attrs[self.name] = True


@dataclass(frozen=True)
class ZeroPoint(Field):
    """A zero point: IR operand `operand` (a one-element constant of the element type of data
    operand `like`, or of the result) <-> an int32 field. On an unsigned side (`unsigned` names
    the RESCALE attribute) the field holds the unsigned number."""

    name: str
    operand: int
    like: int
    unsigned: str | None = None

    @property
    def operands(self) -> tuple[int, ...]:  # type: ignore[override]
        return (self.operand,)

    def _element(self, view: WriteView) -> str:
        return (view.result_type() if self.like == RESULT else view.operand_type(self.like)).dtype

    def refusal(self, view: WriteView) -> str | None:
        values = view.const(self.operand)
        element = self._element(view)
        if values.size != 1:
            return f"{self.name} has {values.size} values; 0.90 has one"
        if _is_float(element) and not _storage_to_float(values, element)[0] == 0:
            return f"{self.name} of a {element} tensor is not zero"
        return None

    def write(self, view: WriteView) -> dict[str, Any]:
        element = self._element(view)
        if _is_float(element):
            return {self.name: 0}
        value = int(view.const(self.operand).reshape(-1)[0])
        if self.unsigned and view.attrs.get(self.unsigned):
            value &= (1 << int(element[1:])) - 1
        return {self.name: value}

    def read(self, view: ReadView) -> None:
        element = view.result_type().dtype if self.like == RESULT else view.input_type(self.like)
        value = int(view.field(self.name))
        if _is_float(element):
            if value != 0:
                view.fail(f"{self.name} is {value} on a {element} tensor (must be 0)")
            view.set_const(self.operand, _float_storage(0.0, element), element)
            return
        bits = 48 if element == "i48" else int(element[1:])
        unsigned = view.result_unsigned() if self.like == RESULT else view.input_unsigned(self.like)
        if unsigned and 0 <= value < 1 << bits:  # the stored signed storage of the unsigned number
            value = value - (1 << bits) if value >= 1 << (bits - 1) else value
        if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            view.fail(f"{self.name} {value} does not fit {'unsigned ' if unsigned else ''}{element}")
        view.set_const(self.operand, np.array([value]), element)


@dataclass(frozen=True)
class ShapeField(Field):
    """A !tosa.shape operand (a tosa.const_shape) <-> an int32 (or int16) vector field."""

    name: str
    operand: int
    bits: int = 32

    @property
    def operands(self) -> tuple[int, ...]:  # type: ignore[override]
        return (self.operand,)

    def refusal(self, view: WriteView) -> str | None:
        values = view.const(self.operand)
        limit = 1 << (self.bits - 1)
        if values.size and not (-limit <= values.min() and values.max() < limit):
            return f"{self.name} {values.tolist()} does not fit int{self.bits}"
        return None

    def write(self, view: WriteView) -> dict[str, Any]:
        return {self.name: [int(v) for v in view.const(self.operand)]}

    def read(self, view: ReadView) -> None:
        values = view.field(self.name)
        view.set_shape(self.operand, () if values is None else [int(v) for v in values])


@dataclass(frozen=True)
class ConstVector(Field):
    """A constant operand <-> an integer vector field; `element` gives its IR element type."""

    name: str
    operand: int
    element: Callable[[dict[str, Any], str], str]  # (IR attributes, input element type) -> element type

    @property
    def operands(self) -> tuple[int, ...]:  # type: ignore[override]
        return (self.operand,)

    def write(self, view: WriteView) -> dict[str, Any]:
        return {self.name: [int(v) for v in view.const(self.operand).reshape(-1)]}

    def read(self, view: ReadView) -> None:
        values = view.field(self.name)
        values = np.array([] if values is None else [int(v) for v in values], dtype=np.int64)
        element = self.element(view.attrs, view.input_type(0))
        info = np.iinfo(TensorType((), element).numpy_dtype)
        if values.size and not (info.min <= values.min() and values.max() <= info.max):
            view.fail(f"{self.name} values do not fit {element}")
        view.set_const(self.operand, values, element)


@dataclass(frozen=True)
class MulShift(Field):
    """MUL's shift: a tensor<1xi8> operand <-> an int32 field."""

    operands: tuple[int, ...] = (2,)

    def write(self, view: WriteView) -> dict[str, Any]:
        return {"shift": int(view.const(2).reshape(-1)[0])}

    def read(self, view: ReadView) -> None:
        shift = int(view.field("shift"))
        if not -128 <= shift <= 127:
            view.fail(f"shift {shift} does not fit i8")
        view.set_const(2, np.array([shift]), "i8")


@dataclass(frozen=True)
class TableContents(Field):
    """TABLE's table: a constant operand (i8[256] or i16[513], by input type) <-> an int16 vector."""

    operands: tuple[int, ...] = (1,)

    def write(self, view: WriteView) -> dict[str, Any]:
        return {"table": [int(v) for v in view.const(1).reshape(-1)]}

    def read(self, view: ReadView) -> None:
        element = view.input_type(0)
        values = view.field("table")
        values = np.array([] if values is None else values, dtype=np.int64)
        if element == "i8" and values.size and not (-128 <= values.min() and values.max() <= 127):
            view.fail("an i8 TABLE holds values beyond i8")
        view.set_const(1, values, element)


@dataclass(frozen=True)
class PadValue(Field):
    """PAD's pad_const operand <-> pad_const_int (integer and bool inputs) or pad_const_fp (floats,
    as a little-endian float32, which holds every f16, bf16 and fp8 value exactly)."""

    operands: tuple[int, ...] = (2,)

    def write(self, view: WriteView) -> dict[str, Any]:
        element = view.operand_type(0).dtype
        values = view.const(2).reshape(-1)
        if _is_float(element):
            return {"pad_const_fp": struct.pack("<f", float(_storage_to_float(values, element)[0]))}
        return {"pad_const_int": int(values[0])}

    def read(self, view: ReadView) -> None:
        element = view.input_type(0)
        if _is_float(element):
            raw = view.field("pad_const_fp")
            value = 0.0 if raw is None or raw.size < 4 else struct.unpack("<f", raw[:4].tobytes())[0]
            try:
                view.set_const(2, _float_storage(value, element), element)
            except ValueError as e:
                view.fail(f"pad_const_fp: {e}")
        else:
            view.set_const(2, np.array([int(view.field("pad_const_int"))]), element)


@dataclass(frozen=True)
class ClampBounds(Field):
    """CLAMP's min_val/max_val <-> min_int/max_int (integers) or min_fp/max_fp (float32 bytes)."""

    def refusal(self, view: WriteView) -> str | None:
        if view.operand_type(0).dtype.startswith("f8"):
            return "CLAMP on fp8"
        return None

    def write(self, view: WriteView) -> dict[str, Any]:
        element = view.operand_type(0).dtype
        lo, hi = view.attrs["min_val"], view.attrs["max_val"]
        if not _is_float(element):
            return {"min_int": int(lo), "max_int": int(hi)}

        def as_float32(value: float) -> bytes:  # the bound as the input type holds it, widened to float32
            return struct.pack("<f", float(_storage_to_float(_float_storage(float(value), element), element)[0]))

        return {"min_fp": as_float32(lo), "max_fp": as_float32(hi)}

    def read(self, view: ReadView) -> None:
        element = view.input_type(0)
        if not _is_float(element):
            view.attrs["min_val"], view.attrs["max_val"] = int(view.field("min_int")), int(view.field("max_int"))
            return
        for attr_name, name in (("min_val", "min_fp"), ("max_val", "max_fp")):
            raw = view.field(name)
            if raw is None or raw.size < 4:
                view.fail(f"{name} holds {0 if raw is None else raw.size} bytes, a float32 needs 4")
            view.attrs[attr_name] = struct.unpack("<f", raw[:4].tobytes())[0]


@dataclass(frozen=True)
class AccumulatorIsResult(Field):
    """Convolutions: 0.90 has no accumulator attribute, it accumulates in the output type."""

    def refusal(self, view: WriteView) -> str | None:
        acc, result = view.attrs["acc_type"], view.result_type().dtype
        if acc != result:
            return f"a {acc} accumulator with a {result} output (0.90 accumulates in the output type)"
        return None

    def read(self, view: ReadView) -> None:
        view.attrs["acc_type"] = view.result_type().dtype


@dataclass(frozen=True)
class PoolAccumulator(Field):
    """AVG_POOL2D's acc_type <-> PoolAttribute.accum_dtype."""

    def write(self, view: WriteView) -> dict[str, Any]:
        return {"accum_dtype": DTYPES[view.attrs["acc_type"]]}

    def read(self, view: ReadView) -> None:
        element = READ_DTYPES.get(int(view.field("accum_dtype")))
        if element is None:
            view.fail(f"accum_dtype {view.enum_name('accum_dtype')} is no accumulator type")
        view.attrs["acc_type"] = element


@dataclass(frozen=True)
class OutputShape(Field):
    """TRANSPOSE_CONV2D's output_shape: 0.90 repeats the result shape in an attribute."""

    def write(self, view: WriteView) -> dict[str, Any]:
        return {"output_shape": list(view.result_type().shape)}

    def read(self, view: ReadView) -> None:
        shape = view.field("output_shape")
        if shape is not None and [int(v) for v in shape] != list(view.result_type().shape):
            view.fail(f"output_shape {[int(v) for v in shape]} differs from the output tensor's shape")


@dataclass(frozen=True)
class DoubleRound(Field):
    """RESCALE's rounding_mode <-> double_round (0.90 has no INEXACT_ROUND)."""

    def refusal(self, view: WriteView) -> str | None:
        mode = view.attrs["rounding_mode"]
        return None if mode in ("SINGLE_ROUND", "DOUBLE_ROUND") else f"rounding_mode {mode}"

    def write(self, view: WriteView) -> dict[str, Any]:
        return {"double_round": view.attrs["rounding_mode"] == "DOUBLE_ROUND"}

    def read(self, view: ReadView) -> None:
        view.attrs["rounding_mode"] = "DOUBLE_ROUND" if view.field("double_round") else "SINGLE_ROUND"


@dataclass(frozen=True)
class Unsigned(Field):
    """RESCALE's input_unsigned/output_unsigned: the field, and on reading also the UINT8/UINT16
    type of that side (either says unsigned)."""

    name: str

    def write(self, view: WriteView) -> dict[str, Any]:
        return {self.name: bool(view.attrs[self.name])}

    def read(self, view: ReadView) -> None:
        typed = view.input_unsigned(0) if self.name == "input_unsigned" else view.result_unsigned()
        view.attrs[self.name] = bool(view.field(self.name)) or typed


@dataclass(frozen=True)
class PropagatesNan(Field):
    """0.90 always propagates NaN: nan_mode IGNORE has no 0.90 form."""

    def refusal(self, view: WriteView) -> str | None:
        return "nan_mode IGNORE (0.90 always propagates NaN)" if view.attrs.get("nan_mode") == "IGNORE" else None


@dataclass(frozen=True)
class ImplementationAttrs(Field):
    """CUSTOM's implementation_attrs: an IR string <-> a ubyte vector of its UTF-8 (common.utf8_vector)."""

    def write(self, view: WriteView) -> dict[str, Any]:
        return {"implementation_attrs": utf8_vector(view.attrs["implementation_attrs"])}

    def read(self, view: ReadView) -> None:
        try:
            view.attrs["implementation_attrs"] = utf8_text(view.field("implementation_attrs"))
        except UnicodeDecodeError:
            view.fail("implementation_attrs is not UTF-8 text")


# ------------------------------------------------------------------------------ one op's row
@dataclass(frozen=True)
class LegacyOp:
    """How one IR op is written in the 0.100 layout: its Op name, attribute table and fields."""

    op: str
    table: str | None = None
    fields: tuple[Field, ...] = ()

    @property
    def folded(self) -> frozenset[int]:
        """IR operand positions kept in attribute fields (not written as operator inputs)."""
        return frozenset(k for f in self.fields for k in f.operands)


def legacy(op: str, table: str | None = None, *fields: Field) -> LegacyOp:
    """An op's 0.100 row: its Op enum name, attribute table (None: no attributes) and fields."""
    return LegacyOp(op, table, tuple(fields))


# Why an op has no operator of its own in the 0.100 layout although it is not refused: a
# const_shape's values are folded into the attribute fields of the ops that read it.
FOLDED_INTO_FIELDS = "folded into the attribute fields of the ops that read it"
READ_DTYPES = {value: element for element, value in DTYPES.items()}

