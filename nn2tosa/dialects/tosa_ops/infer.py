"""Result type inference and folders of TOSA ops, which the rows of the op table name.

infer(attrs, operand types) -> result types, for the ops whose result type follows from operand
types and attributes alone (not reshape/slice/tile/pad/resize, whose shapes are shape operands'
values, nor cast/rescale/matmul/const, whose result element type is a choice). The IR verifier
checks declared result types against it, and `Builder.op` can leave `types=` out for these ops.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn2tosa.ir import TensorType, Type

# ---------------------------------------------------------------- folders
def fold_transpose(attrs: dict[str, Any], values: list[np.ndarray], types: list[Type]) -> list[np.ndarray]:
    return [np.ascontiguousarray(values[0].transpose(attrs["perms"]))]


def fold_identity(attrs: dict[str, Any], values: list[np.ndarray], types: list[Type]) -> list[np.ndarray]:
    return [values[0]]


# ---------------------------------------------------------------- result type inference
Attrs = dict[str, Any]


def _tensor(types: list[Type], k: int) -> TensorType:
    t = types[k]
    if not isinstance(t, TensorType):
        raise ValueError(f"operand #{k} is not a tensor")
    return t


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """TOSA broadcasting: equal ranks, each dimension equal or 1 (-1 is unknown)."""
    if len({len(s) for s in shapes}) != 1:
        raise ValueError(f"ranks differ: {[list(s) for s in shapes]}")
    out = []
    for dims in zip(*shapes):
        known = {d for d in dims if d != 1}
        if len(known - {-1}) > 1:
            raise ValueError(f"shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(max(known - {-1}, default=-1 if -1 in known else 1))
    return tuple(out)


def elementwise(result_dtype: Callable[[str], str] = lambda d: d, data_operand: int = 0, operands: int = 2):
    def infer(attrs: Attrs, types: list[Type]) -> list[Type]:
        shape = _broadcast(*(_tensor(types, k).shape for k in range(operands)))
        return [TensorType(shape, result_dtype(_tensor(types, data_operand).dtype))]
    return infer


def same(attrs: Attrs, types: list[Type]) -> list[Type]:
    return [_tensor(types, 0).with_dtype(_tensor(types, 0).dtype)]


def reduce(attrs: Attrs, types: list[Type]) -> list[Type]:
    t = _tensor(types, 0)
    shape = list(t.shape)
    shape[attrs["axis"]] = 1
    return [TensorType(tuple(shape), t.dtype)]


def argmax(attrs: Attrs, types: list[Type]) -> list[Type]:
    shape = list(_tensor(types, 0).shape)
    del shape[attrs["axis"]]
    return [TensorType(tuple(shape), "i32")]


def concat(attrs: Attrs, types: list[Type]) -> list[Type]:
    first = _tensor(types, 0)
    axis = attrs["axis"]
    shape = list(first.shape)
    shape[axis] = sum(_tensor(types, k).shape[axis] for k in range(len(types)))
    return [TensorType(tuple(shape), first.dtype)]


def transpose(attrs: Attrs, types: list[Type]) -> list[Type]:
    t = _tensor(types, 0)
    return [TensorType(tuple(t.shape[p] for p in attrs["perms"]), t.dtype)]


def gather(attrs: Attrs, types: list[Type]) -> list[Type]:
    values, indices = _tensor(types, 0), _tensor(types, 1)
    return [TensorType((values.shape[0], indices.shape[1], values.shape[2]), values.dtype)]


def _output_size(size: int, pad_before: int, pad_after: int, kernel: int, stride: int, dilation: int = 1) -> int:
    span = size - 1 + pad_before + pad_after - (kernel - 1) * dilation
    if span % stride:
        raise ValueError(f"output size ({span} / stride {stride}) is not a whole number")
    return span // stride + 1


# Convolution result element type by input element type (floats keep theirs; fp8 gives f16).
_CONV_RESULT = {"i8": "i32", "i16": "i48", "f8E4M3FN": "f16", "f8E5M2": "f16"}


def conv(kernel_dims: slice, channels: Callable[[tuple[int, ...], tuple[int, ...]], int]):
    """Convolution over the spatial dims of NHWC / NDHWC input; `kernel_dims` picks the kernel
    sizes out of the weight shape, `channels(input shape, weight shape)` the output channels."""
    def infer(attrs: Attrs, types: list[Type]) -> list[Type]:
        x, w = _tensor(types, 0), _tensor(types, 1)
        kernel = w.shape[kernel_dims]
        spatial = [_output_size(x.shape[1 + i], attrs["pad"][2 * i], attrs["pad"][2 * i + 1], k, attrs["stride"][i],
                                attrs["dilation"][i]) for i, k in enumerate(kernel)]
        return [TensorType((x.shape[0], *spatial, channels(x.shape, w.shape)), _CONV_RESULT.get(x.dtype, x.dtype))]
    return infer


def transpose_conv2d(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, w = _tensor(types, 0), _tensor(types, 1)
    out_pad, stride = attrs["out_pad"], attrs["stride"]
    oh = (x.shape[1] - 1) * stride[0] + out_pad[0] + out_pad[1] + w.shape[1]
    ow = (x.shape[2] - 1) * stride[1] + out_pad[2] + out_pad[3] + w.shape[2]
    return [TensorType((x.shape[0], oh, ow, w.shape[0]), _CONV_RESULT.get(x.dtype, x.dtype))]


def pool(attrs: Attrs, types: list[Type]) -> list[Type]:
    x = _tensor(types, 0)
    pad, kernel, stride = attrs["pad"], attrs["kernel"], attrs["stride"]
    oh = _output_size(x.shape[1], pad[0], pad[1], kernel[0], stride[0])
    ow = _output_size(x.shape[2], pad[2], pad[3], kernel[1], stride[1])
    return [TensorType((x.shape[0], oh, ow, x.shape[3]), x.dtype)]


def fft(attrs: Attrs, types: list[Type]) -> list[Type]:
    return [_tensor(types, 0)] * 2


def rfft(attrs: Attrs, types: list[Type]) -> list[Type]:
    n, h, w = _tensor(types, 0).shape
    return [TensorType((n, h, w // 2 + 1), _tensor(types, 0).dtype)] * 2


binary = elementwise()
comparison = elementwise(lambda d: "i1")
mul = elementwise(lambda d: "i32" if d in ("i8", "i16") else d)  # i8 and i16 products are i32
select = elementwise(data_operand=1, operands=3)


def table(attrs: Attrs, types: list[Type]) -> list[Type]:
    """i8 looks up i8, i16 interpolates to i32."""
    return [_tensor(types, 0).with_dtype("i32" if _tensor(types, 0).dtype == "i16" else "i8")]


def first(attrs: Attrs, types: list[Type]) -> list[Type]:
    """The type of operand 0 (scatter's values_in)."""
    return [_tensor(types, 0)]

