"""nn ops that move data: reshape, transpose, broadcast, concat, split, slices, pad, tile, reverse, gathers and scatters."""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import TensorType, attr

from .common import Attrs, define_nn, broadcast_shape, same

# ------------------------------------------------------------------------------ shapes and data movement


def _infer_reshape(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    shape = tuple(attrs["shape"])
    if int(np.prod(shape)) != types[0].num_elements:
        raise ValueError(f"cannot reshape {list(types[0].shape)} to {list(shape)}")
    return [TensorType(shape, types[0].dtype)]


define_nn("nn.reshape", operands=("x",), attrs={"shape": attr("ints", "the result shape (static, no -1)")},
          doc="The same elements in row-major order, in a new shape.", infer=_infer_reshape,
          fold=lambda a, v, t: [v[0].reshape(t[0].shape)], traits={"carries_quantization", "moves_data"})


def _infer_transpose(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    perm = attrs["perm"]
    if sorted(perm) != list(range(types[0].rank)):
        raise ValueError(f"perm {perm} is not a permutation of the {types[0].rank} dimensions")
    return [TensorType(tuple(types[0].shape[p] for p in perm), types[0].dtype)]


define_nn("nn.transpose", operands=("x",), attrs={"perm": attr("ints", "result dimension i is input dimension perm[i]")},
          doc="Permute dimensions: result.shape[i] = input.shape[perm[i]].", infer=_infer_transpose,
          fold=lambda a, v, t: [np.ascontiguousarray(v[0].transpose(a["perm"]))],
          traits={"carries_quantization", "moves_data"})


def _infer_broadcast_to(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    shape = tuple(attrs["shape"])
    if broadcast_shape(types[0].shape, shape) != shape:
        raise ValueError(f"{list(types[0].shape)} does not broadcast to {list(shape)}")
    return [TensorType(shape, types[0].dtype)]


define_nn("nn.broadcast_to", operands=("x",), attrs={"shape": attr("ints", "the result shape")},
          doc="Numpy broadcast_to.", infer=_infer_broadcast_to,
          fold=lambda a, v, t: [np.ascontiguousarray(np.broadcast_to(v[0], t[0].shape))],
          traits={"carries_quantization", "moves_data"})


def _infer_concat(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    axis = attrs["axis"]
    first = types[0].shape
    for t in types[1:]:
        if len(t.shape) != len(first) or any(a != b for i, (a, b) in enumerate(zip(t.shape, first)) if i != axis):
            raise ValueError("operand shapes differ outside the concatenation axis")
    shape = list(first)
    shape[axis] = sum(t.shape[axis] for t in types)
    return [TensorType(tuple(shape), types[0].dtype)]


define_nn("nn.concat", operands=("inputs+",), attrs={"axis": attr("int", "the axis to join along")},
          doc="Join tensors along `axis`.", infer=_infer_concat,
          fold=lambda a, v, t: None if t[0].quant else [np.concatenate(v, axis=a["axis"])])


def _infer_split(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    axis, sizes = attrs["axis"], attrs["sizes"]
    if sum(sizes) != types[0].shape[axis]:
        raise ValueError(f"split sizes {sizes} do not add up to dimension {types[0].shape[axis]}")
    out = []
    for s in sizes:
        shape = list(types[0].shape)
        shape[axis] = s
        out.append(TensorType(tuple(shape), types[0].dtype))
    return out


def _fold_split(a: Attrs, v: list[np.ndarray], t: list[TensorType]) -> list[np.ndarray]:
    return np.split(v[0], np.cumsum(a["sizes"])[:-1], axis=a["axis"])


define_nn("nn.split", operands=("x",), results=(1, None),
          attrs={"axis": attr("int", "the axis to cut"), "sizes": attr("ints", "size of each piece along axis")},
          doc="Cut a tensor into consecutive pieces along `axis`; one result per piece.", infer=_infer_split,
          fold=_fold_split, traits={"carries_quantization", "moves_data"})


def _infer_slice(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    begin, size = attrs["begin"], attrs["size"]
    shape = types[0].shape
    if len(begin) != len(shape) or len(size) != len(shape):
        raise ValueError("begin/size rank differs from the input's")
    if any(b < 0 or s < 0 or b + s > d for b, s, d in zip(begin, size, shape)):
        raise ValueError(f"slice begin {begin} size {size} is outside {list(shape)}")
    return [TensorType(tuple(size), types[0].dtype)]


define_nn("nn.slice", operands=("x",),
          attrs={"begin": attr("ints", "first index per dimension"), "size": attr("ints", "extent per dimension")},
          doc="x[begin[i] : begin[i] + size[i]] in every dimension.", infer=_infer_slice,
          fold=lambda a, v, t: [np.ascontiguousarray(v[0][tuple(slice(b, b + s) for b, s in zip(a["begin"], a["size"]))])],
          traits={"carries_quantization", "moves_data"})


def _infer_strided_slice(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    shape = types[0].shape
    dims = [len(range(*slice(b, e, s).indices(d))) for b, e, s, d in
            zip(attrs["begin"], attrs["end"], attrs["strides"], shape)]
    return [TensorType(tuple(dims), types[0].dtype)]


define_nn("nn.strided_slice", operands=("x",),
          attrs={"begin": attr("ints", "start per dimension"), "end": attr("ints", "stop per dimension (exclusive)"),
                 "strides": attr("ints", "non-zero step per dimension; negative walks backwards")},
          doc="Python slicing x[b0:e0:s0, b1:e1:s1, ...] with begin/end already normalized: a negative end "
              "with a negative stride means 'before index 0' (use -dim-1).",
          infer=_infer_strided_slice,
          fold=lambda a, v, t: [np.ascontiguousarray(v[0][tuple(slice(b, None if (s < 0 and e < 0) else e, s)
                                                               for b, e, s in zip(a["begin"], a["end"], a["strides"]))])],
          traits={"carries_quantization", "moves_data"})


def _infer_pad(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    pads = attrs["pads"]
    shape = types[0].shape
    if len(pads) != 2 * len(shape):
        raise ValueError("pads needs a (before, after) pair per dimension")
    return [TensorType(tuple(d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(shape)), types[0].dtype)]


def _fold_pad(attrs: Attrs, values: list[np.ndarray], types: list[TensorType]) -> list[np.ndarray] | None:
    if types[0].quant is not None:  # the fill value is real: quantizing it is the lowering's business
        return None
    pads = attrs["pads"]
    widths = [(pads[2 * i], pads[2 * i + 1]) for i in range(values[0].ndim)]
    if attrs["mode"] == "constant":
        return [np.pad(values[0], widths, constant_values=attrs["value"]).astype(types[0].numpy_dtype)]
    return [np.pad(values[0], widths, mode=attrs["mode"])]  # numpy's reflect/symmetric/edge are ours


define_nn("nn.pad", operands=("x",),
          attrs={"pads": attr("ints", "[before0, after0, before1, after1, ...], non-negative"),
                 "mode": attr("str", "'constant', 'reflect' (no edge repeat), 'symmetric' (edge repeated) or 'edge'"),
                 "value": attr("float", "fill value for mode 'constant' (a real value; quantized: see the type)")},
          doc="Pad every dimension.", infer=_infer_pad, fold=_fold_pad)


def _infer_tile(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    return [TensorType(tuple(d * m for d, m in zip(types[0].shape, attrs["multiples"])), types[0].dtype)]


define_nn("nn.tile", operands=("x",), attrs={"multiples": attr("ints", "repetitions per dimension")},
          doc="Numpy tile.", infer=_infer_tile, fold=lambda a, v, t: [np.tile(v[0], a["multiples"])],
          traits={"carries_quantization", "moves_data"})
define_nn("nn.reverse", operands=("x",), attrs={"axes": attr("ints", "dimensions to reverse")},
          doc="Reverse the order of elements along each of `axes`.", infer=same,
          fold=lambda a, v, t: [np.ascontiguousarray(np.flip(v[0], a["axes"]))],
          traits={"carries_quantization", "moves_data"})


def _infer_gather(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    data, idx = types
    axis = attrs["axis"]
    return [TensorType(tuple(data.shape[:axis]) + tuple(idx.shape) + tuple(data.shape[axis + 1:]), data.dtype)]


define_nn("nn.gather", operands=("data", "indices"), attrs={"axis": attr("int", "the axis indexed")},
          doc="numpy.take(data, indices, axis): indices (operand 1, integers, non-negative, in range) select "
              "slices along `axis`.", infer=_infer_gather,
          fold=lambda a, v, t: [np.take(v[0], v[1], axis=a["axis"])], traits={"carries_quantization", "moves_data"})


def _infer_gather_nd(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    data, idx = types
    k = idx.shape[-1]
    return [TensorType(tuple(idx.shape[:-1]) + tuple(data.shape[k:]), data.dtype)]


define_nn("nn.gather_nd", operands=("data", "indices"),
          doc="result[i...] = data[indices[i..., :]]: the last dimension of indices (operand 1) holds a "
              "prefix index into data.", infer=_infer_gather_nd, traits={"carries_quantization", "moves_data"})
define_nn("nn.scatter_nd", operands=("data", "indices", "updates"), attrs={"reduction": attr("str", "'none' (replace), 'add', 'mul', 'max' or 'min'")},
          doc="Copy of data (operand 0) with data[indices[i..., :]] = updates[i...] (indices operand 1, "
              "updates operand 2); with duplicates the last update wins unless a reduction combines them.",
          infer=same)
