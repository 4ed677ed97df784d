"""Types of IR values: tensors (optionally quantized) and TOSA shapes.

Element types use MLIR spellings (`f32`, `i8`, `ui8`, `i1`, ...), so a type prints as the MLIR
type it stands for and parses back from MLIR's own printing of it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

# MLIR element type -> numpy dtype holding its values. bf16 and fp8 values are kept as their raw
# bits (numpy has no such floats); i4 values are kept unpacked, one per int8; i48 in int64.
_NUMPY_DTYPES: dict[str, np.dtype] = {
    "f64": np.dtype("<f8"),
    "f32": np.dtype("<f4"),
    "f16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "f8E4M3FN": np.dtype("u1"),
    "f8E5M2": np.dtype("u1"),
    "i1": np.dtype("bool"),
    "i4": np.dtype("i1"),
    "i8": np.dtype("i1"),
    "i16": np.dtype("<i2"),
    "i32": np.dtype("<i4"),
    "i48": np.dtype("<i8"),
    "i64": np.dtype("<i8"),
    "ui8": np.dtype("u1"),
    "ui16": np.dtype("<u2"),
    "ui32": np.dtype("<u4"),
    "ui64": np.dtype("<u8"),
    "index": np.dtype("<i8"),
}
ELEMENT_TYPES = frozenset(_NUMPY_DTYPES)
FLOAT_TYPES = frozenset({"f64", "f32", "f16", "bf16", "f8E4M3FN", "f8E5M2"})
_FROM_NUMPY = {
    np.dtype("<f8"): "f64", np.dtype("<f4"): "f32", np.dtype("<f2"): "f16", np.dtype("bool"): "i1",
    np.dtype("i1"): "i8", np.dtype("<i2"): "i16", np.dtype("<i4"): "i32", np.dtype("<i8"): "i64",
    np.dtype("u1"): "ui8", np.dtype("<u2"): "ui16", np.dtype("<u4"): "ui32", np.dtype("<u8"): "ui64",
}


def numpy_dtype(element_type: str) -> np.dtype:
    """The numpy dtype that holds values of an MLIR element type."""
    try:
        return _NUMPY_DTYPES[element_type]
    except KeyError:
        raise ValueError(f"unknown element type {element_type!r}") from None


def element_type_of(dtype: np.dtype | type) -> str:
    """The MLIR element type for a numpy dtype (inverse of numpy_dtype where it is unique)."""
    dt = np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).byteorder == ">" else np.dtype(dtype)
    try:
        return _FROM_NUMPY[dt]
    except KeyError:
        raise ValueError(f"no element type for numpy dtype {dt}") from None


def bf16_bits(values: object) -> np.ndarray:
    """Real values -> bf16 storage (the uint16 bits nn2tosa keeps bf16 in), rounded to nearest even as
    MLIR's APFloat rounds; every NaN becomes the quiet NaN 0x7FC0 (rounding its bits could carry into
    the exponent or the sign, giving an infinity or -0)."""
    values = np.asarray(values, dtype=np.float32)
    bits = values.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def bit_width(element_type: str) -> int:
    if element_type in ("index",):
        return 64
    if element_type == "i1":
        return 1
    if element_type.startswith("f8"):
        return 8
    return int(re.sub(r"^[a-z]+", "", element_type))


def beyond_type(values: np.ndarray, element_type: str) -> str | None:
    """Why `values` (in `element_type`'s numpy storage) do not fit the type, or None. Only the signed
    integer types stored wider than they are (i4 in int8, i48 in int64) can hold such values; cutting
    them to the type's bits would make other values."""
    if element_type not in ("i4", "i48") or not values.size:
        return None
    bits = bit_width(element_type)
    low, high = int(values.min()), int(values.max())
    if -(1 << (bits - 1)) <= low and high < 1 << (bits - 1):
        return None
    return f"holds {low}..{high}, beyond {element_type}"


@dataclass(frozen=True)
class Quant:
    """Uniform quantization: real = scale * (stored - zero_point).

    Per tensor when `axis` is None (one scale and zero point), else one pair per index of `axis`.
    """

    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    axis: int | None = None
    expressed: str = "f32"

    def __post_init__(self) -> None:
        if len(self.scales) != len(self.zero_points) or not self.scales:
            raise ValueError("quantization needs as many zero points as scales, at least one")
        if self.axis is None and len(self.scales) != 1:
            raise ValueError("per-tensor quantization has exactly one scale")

    @property
    def scale(self) -> float:
        return self.scales[0]

    @property
    def zero_point(self) -> int:
        return self.zero_points[0]


def _mlir_float(value: float) -> str:
    """A float literal MLIR reads back to the same double (MLIR wants a '.' in the mantissa)."""
    text = repr(float(value))
    if "inf" in text or "nan" in text:
        raise ValueError(f"quantization scale {value} is not finite")
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{exponent}"
    return text


@dataclass(frozen=True)
class TensorType:
    """A ranked tensor. `shape` uses -1 for a dynamic dimension."""

    shape: tuple[int, ...]
    dtype: str
    quant: Quant | None = None

    def __post_init__(self) -> None:
        if self.dtype not in ELEMENT_TYPES:
            raise ValueError(f"unknown element type {self.dtype!r}")
        if not isinstance(self.shape, tuple):
            object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_TYPES and self.quant is None

    @property
    def numpy_dtype(self) -> np.dtype:
        return numpy_dtype(self.dtype)

    def with_shape(self, shape: tuple[int, ...] | list[int]) -> TensorType:
        """Same element type and quantization, other shape (per-axis quantization keeps its axis)."""
        return TensorType(tuple(shape), self.dtype, self.quant)

    def with_dtype(self, dtype: str, quant: Quant | None = None) -> TensorType:
        return TensorType(self.shape, dtype, quant)

    def __str__(self) -> str:
        return tensor_type_str(self)


@dataclass(frozen=True)
class ShapeType:
    """A TOSA shape value (`!tosa.shape<rank>`), the operand form of static shape parameters."""

    rank: int

    def __str__(self) -> str:
        return f"!tosa.shape<{self.rank}>"


Type = TensorType | ShapeType


def as_tensor(t: Type, what: object = "value") -> TensorType:
    """`t` where only a tensor can be (an nn op's operands and results, a TOSA operand that is not a
    shape): the one narrowing of Type the graph, the nn dialect and the lowering share. TypeError,
    naming `what`, for a shape."""
    if not isinstance(t, TensorType):
        raise TypeError(f"{what} is a {t}, not a tensor")
    return t


def _element_str(t: TensorType) -> str:
    q = t.quant
    if q is None:
        return t.dtype
    storage = "u" + t.dtype[2:] if t.dtype.startswith("ui") else t.dtype
    if q.axis is None:
        return f"!quant.uniform<{storage}:{q.expressed}, {_mlir_float(q.scale)}:{q.zero_point}>"
    pairs = ", ".join(f"{_mlir_float(s)}:{z}" for s, z in zip(q.scales, q.zero_points))
    return f"!quant.uniform<{storage}:{q.expressed}:{q.axis}, {{{pairs}}}>"


def tensor_type_str(t: TensorType) -> str:
    """MLIR spelling: tensor<1x8x!quant.uniform<i8:f32, 0.5:-3>>, tensor<f32> for rank 0."""
    dims = "".join(("?" if d < 0 else str(d)) + "x" for d in t.shape)
    return f"tensor<{dims}{_element_str(t)}>"


_TENSOR_RE = re.compile(r"^tensor<((?:(?:\d+|\?)x)*)(.+)>$")
_QUANT_RE = re.compile(
    r"^!quant\.uniform<([ui]\d+)(?:<[^>]*>)?:(f\d+|bf16)(?::(\d+))?, (\{.*\}|[^{}]+)>$"
)
_SHAPE_RE = re.compile(r"^!tosa\.shape<(\d+)>$")


@lru_cache(maxsize=4096)
def parse_type(text: str) -> Type:
    """Read back the MLIR spelling of a type that this module prints (and MLIR's reprint of it)."""
    text = text.strip()
    m = _SHAPE_RE.match(text)
    if m:
        return ShapeType(int(m.group(1)))
    m = _TENSOR_RE.match(text)
    if not m:
        raise ValueError(f"unsupported type {text!r}")
    dims = tuple(-1 if d == "?" else int(d) for d in m.group(1).split("x")[:-1])
    element = m.group(2)
    if element in ELEMENT_TYPES:
        return TensorType(dims, element)
    q = _QUANT_RE.match(element)
    if not q:
        raise ValueError(f"unsupported element type {element!r}")
    storage, expressed, axis, params = q.groups()
    dtype = "ui" + storage[1:] if storage.startswith("u") else storage
    # MLIR omits a zero point of 0: "0.5" means "0.5:0"
    pairs = [(p.strip() + ":0" if ":" not in p else p.strip()).rsplit(":", 1) for p in params.strip("{}").split(",")]
    scales = tuple(float(s) for s, _ in pairs)
    zero_points = tuple(int(z) for _, z in pairs)
    return TensorType(dims, dtype, Quant(scales, zero_points, None if axis is None else int(axis), expressed))
