"""TensorInfo -> TensorType and ConstTensor -> numpy view.

Types: DataType via catalogue.DATA_TYPES; dimensions as written, a dimension whose
`dimensionSpecificity` is false as -1; `dimensionality` Scalar keeps the stored dimensions ([1]:
Arm NN reports a scalar as shape [1], and the corpus' outputs are [1]); NotSpecified (unknown
rank) cannot be held and is reported as unsupported.

Quantization: per axis when `quantizationScales` is present (zero point `quantizationOffset` for
every index, axis `quantizationDim`), else per tensor (`quantizationScale`, `quantizationOffset`)
for quantized data types, with zero point 0 for the symmetric ones. Signed32 tensors (biases of
quantized layers) keep a per-tensor scale only when it is not Arm NN's "unset" 0 or the schema
default 1; other types never carry quantization.

Constant data: the bytes of the ConstTensorData union member are the tensor's raw little-endian
data whatever the member (float32 weights arrive as IntData). Arm NN 20.08 writes int8 constants
with the union tag NONE but the payload present: the payload is then read through the tag's
vector of whatever element size makes its length match the tensor.
"""
from __future__ import annotations

import numpy as np

from nn2tosa import limits
from nn2tosa.diagnostics import InvalidInputError, Unsupported, UnsupportedError
from nn2tosa.ir import Quant, TensorType, numpy_dtype
from nn2tosa.schemas.flatread import Buffer, Table

from .catalogue import DATA_TYPES

# ConstTensorData member -> element size of its `data` vector.
_DATA_ELEMENT_SIZE = {"ByteData": 1, "ShortData": 2, "IntData": 4, "LongData": 8}
_DIMENSIONALITY_NOT_SPECIFIED = 0  # armnn::Dimensionality: NotSpecified 0, Specified 1, Scalar 2
_UNSET_SCALES = (0.0, 1.0)


def tensor_type(info: Table | None, what: str) -> TensorType:
    """The IR type of a TensorInfo; `what` names the tensor in errors ("output slot 0")."""
    if info is None:
        raise InvalidInputError(f"{what} has no tensor info")
    dtype_name = info.enum_name("dataType")
    dtype = DATA_TYPES.get(dtype_name)
    if dtype is None:  # pragma: no cover - every enum value of the schema is in the table
        raise UnsupportedError([Unsupported(dtype_name, what, "a data type nn2tosa does not know")])
    if info.get("dimensionality") == _DIMENSIONALITY_NOT_SPECIFIED:
        raise UnsupportedError([Unsupported("tensor of unknown rank", what, "dimensionality NotSpecified")])
    dims = info.get("dimensions")
    shape = [] if dims is None else [int(d) for d in dims]
    specific = info.get("dimensionSpecificity")
    if specific is not None:
        if len(specific) != len(shape):
            raise InvalidInputError(f"{what}: {len(specific)} dimensionSpecificity flags for {len(shape)} dimensions")
        shape = [d if s else -1 for d, s in zip(shape, specific)]
    return TensorType(tuple(shape), dtype.element, _quantization(info, dtype_name, len(shape), shape, what))


def _quantization(info: Table, dtype_name: str, rank: int, shape: list[int], what: str) -> Quant | None:
    dtype = DATA_TYPES[dtype_name]
    offset = 0 if dtype.symmetric else int(info.get("quantizationOffset"))
    if dtype.quantized:
        # A zero point outside the storage range has no meaning (and overflows integer arithmetic later).
        limits = np.iinfo(numpy_dtype(dtype.element))
        if not limits.min <= offset <= limits.max:
            raise InvalidInputError(f"{what}: quantization offset {offset} outside the {dtype_name} range")
    scales = info.get("quantizationScales")
    if scales is not None and len(scales) > 0:
        axis = _scales_axis(len(scales), shape, int(info.get("quantizationDim")), what)
        return Quant(_scales(scales, what), (offset,) * len(scales), axis)
    scale = float(info.get("quantizationScale"))
    if dtype.quantized or (dtype.element == "i32" and scale not in _UNSET_SCALES):
        return Quant(_scales(np.array([scale]), what), (offset,))
    return None


def _scales_axis(count: int, shape: list[int], recorded: int, what: str) -> int:
    """The axis `count` per-axis scales run along. Arm NN's TfLite parser records two axes that do not
    hold the scales, and Arm NN reads both without complaint (its decoders index the scales by output
    channel): the rank-1 bias of a depthwise convolution carries its weights' dimension 3 (23.08), and
    20.08's [M, I, H, W] depthwise weights carry dimension 0 (M) for one scale per output channel
    i*M + m. The first is axis 0; the second stays axis 0 with M*I scales until the reader brings the
    weights to [1, H, W, I*M] (mihw_to_1hwim), and `check_per_axis` refuses it anywhere else."""
    rank = len(shape)
    if rank == 1 and count == shape[0]:
        return 0
    if recorded >= rank:
        raise InvalidInputError(f"{what}: quantization axis {recorded} of a rank-{rank} tensor")
    if count in (1, shape[recorded]) or shape[recorded] < 0:
        return recorded
    if rank == 4 and recorded == 0 and count == shape[0] * shape[1]:
        return recorded
    raise InvalidInputError(f"{what}: {count} quantization scales for axis {recorded} of size {shape[recorded]}")


def check_per_axis(t: TensorType, what: str) -> None:
    """Refuse per-axis scales that do not run along their axis (see _scales_axis), as Arm NN does."""
    q = t.quant
    if q is not None and q.axis is not None and len(q.scales) not in (1, t.shape[q.axis]) and t.shape[q.axis] >= 0:
        raise InvalidInputError(f"{what}: {len(q.scales)} quantization scales for axis {q.axis} of size "
                                f"{t.shape[q.axis]}")


def _scales(values: np.ndarray, what: str) -> tuple[float, ...]:
    """Quantization scales as floats, checked in one pass over the (per-channel: thousands) values."""
    bad = ~(np.isfinite(values) & (values > 0))
    if np.any(bad):
        value = float(values[int(np.argmax(bad))])
        raise InvalidInputError(f"{what}: quantization scale {value} is not a positive number")
    return tuple(values.tolist())


def const_array(buf: Buffer, tensor: Table, what: str) -> tuple[np.ndarray, TensorType]:
    """A read-only numpy view of a ConstTensor's data in `buf`, shaped as its info says, and its type."""
    t = tensor_type(tensor.get("info"), what)
    if any(d < 0 for d in t.shape):
        raise InvalidInputError(f"{what}: a constant of shape {list(t.shape)} has unknown dimensions")
    # before any size arithmetic: a damaged dimensions vector can declare thousands of dimensions, whose
    # byte count is an integer too long even to print
    limits.check_tensor(t.shape, t.dtype, what)
    dtype = t.numpy_dtype
    count = t.num_elements
    needed = count * dtype.itemsize
    member = tensor.union_type("data")
    if member is None:  # 20.08's int8 constants: payload present, tag NONE
        data = tensor.get_as("data", "ByteData")
        if data is None:
            raise InvalidInputError(f"{what}: the constant has no data")
        start, n = data.vector_span("data") or (0, 0)
        esize = needed // n if n else 1
        if n * esize != needed or esize not in _DATA_ELEMENT_SIZE.values():
            raise InvalidInputError(f"{what}: untagged constant data of {n} elements cannot hold {needed} bytes")
        if start + needed > len(buf):
            raise InvalidInputError(f"{what}: constant data of {needed} bytes runs past the end of the file")
    else:
        data = tensor.get("data")
        if data is None:  # the tag names a member but the vtable dropped the table (a damaged file)
            raise InvalidInputError(f"{what}: the constant's data is tagged {member} but has no table")
        start, n = data.vector_span("data") or (0, 0)
        esize = _DATA_ELEMENT_SIZE[member]
        if n * esize != needed:
            raise InvalidInputError(
                f"{what} has {n * esize} bytes of data but shape {list(t.shape)} of {t.dtype} needs {needed}"
            )
    array = np.frombuffer(buf, dtype=dtype, count=count, offset=start).reshape(t.shape)
    if t.dtype == "i1" and count and array.view(np.uint8).max() > 1:
        raise InvalidInputError(f"{what}: a Boolean constant holds bytes other than 0 and 1")
    return array, t
