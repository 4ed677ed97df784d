"""Layers about tensors rather than pixels: constants, shape queries, data movement, slicing,
padding, gather/scatter, reductions, softmax, fully connected and batch matmul.

Arm NN axes may be negative (counted from the end); nn axes never are, so every rule normalizes
them against the operand's rank.
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import TensorType, Value

from .layer import Layer, permuted
from .registry import rule


def _axis(axis: int, rank: int, extra: int = 0) -> int:
    """A non-negative axis of a rank-`rank` tensor (`extra` more positions allowed, as Stack's)."""
    if not -rank - extra <= axis < rank + extra:
        raise ValueError(f"axis {axis} is outside a rank-{rank} tensor")
    return axis + rank + extra if axis < 0 else axis


# ------------------------------------------------------------------------------ constants and shapes
@rule("Constant")
def _constant(layer: Layer) -> list[Value]:
    """The same numpy array (a view into the mapped file) in an nn.constant: no copy."""
    return [layer.constant(layer.attrs["value"], layer.out_type)]


@rule("Shape")
def _shape(layer: Layer) -> list[Value]:
    """Shapes are static: the operand's shape as a constant."""
    shape = layer.type_of(layer.operands[0]).shape
    return [layer.constant(np.asarray(shape), layer.out_type)]


@rule("Rank")
def _rank(layer: Layer) -> list[Value]:
    rank = layer.type_of(layer.operands[0]).rank
    return [layer.constant(np.full(layer.out_type.shape, rank), layer.out_type)]


# ------------------------------------------------------------------------------ data movement
@rule("Reshape")
def _reshape(layer: Layer) -> list[Value]:
    """The result type holds the target shape (targetShape may say -1 or be empty in old files)."""
    x = layer.operands[0]
    return [layer.finish(layer.reshape(x, layer.out_type.shape))]


@rule("Transpose")
def _transpose(layer: Layer) -> list[Value]:
    """Transpose's dimMappings say where each result dimension comes from: result dim i is input
    dim dimMappings[i], as nn's perm."""
    return [layer.finish(layer.transpose(layer.operands[0], layer.attrs["dimMappings"]))]


@rule("Permute")
def _permute(layer: Layer) -> list[Value]:
    """Permute's dimMappings say where each input dimension goes: input dim i becomes result dim
    dimMappings[i], the inverse of Transpose's (and nn's) convention."""
    mappings = layer.attrs["dimMappings"]
    if sorted(mappings) != list(range(layer.type_of(layer.operands[0]).rank)):
        raise ValueError(f"dimMappings {mappings} is not a permutation of the input's dimensions")
    perm = [0] * len(mappings)
    for source, destination in enumerate(mappings):
        perm[destination] = source
    return [layer.finish(layer.transpose(layer.operands[0], perm))]


def _same_element_types(layer: Layer) -> None:
    """Joined tensors must agree on their element type (a file whose TensorInfo lost its dataType
    gives one input the default, f32): refused here, naming the layer, not left to the MLIR verifier."""
    types = [layer.type_of(x) for x in layer.operands]
    if len({t.dtype for t in types}) > 1:  # (quantization may differ: the lowering requantizes)
        raise ValueError("its inputs have different element types: " + ", ".join(str(t) for t in types))


@rule("Concat", "Merger")
def _concat(layer: Layer) -> list[Value]:
    _same_element_types(layer)
    axis = layer.attrs["concatAxis"]
    return [layer.op("nn.concat", layer.operands, {"axis": axis}, type=layer.out_type)]


@rule("Stack")
def _stack(layer: Layer) -> list[Value]:
    """Each input gains a unit dimension at `axis`; the inputs are joined along it."""
    _same_element_types(layer)
    axis = _axis(layer.attrs["axis"], layer.type_of(layer.operands[0]).rank, extra=1)
    pieces = []
    for x in layer.operands:
        shape = list(layer.type_of(x).shape)
        pieces.append(layer.reshape(x, shape[:axis] + [1] + shape[axis:]))
    return [layer.op("nn.concat", pieces, {"axis": axis}, type=layer.out_type)]


def one_view_per_output(layer: Layer) -> str | None:
    """A Splitter has one view origin and one view size per output."""
    origins, sizes = layer.attrs["origins"]["viewOrigins"], layer.attrs["viewSizes"]
    if len(origins) != len(layer.result_types) or len(sizes) != len(layer.result_types):
        return f"{len(origins)} view origins and {len(sizes)} view sizes for {len(layer.result_types)} outputs"
    return None


@rule("Splitter", constraints=(one_view_per_output,))
def _splitter(layer: Layer) -> list[Value]:
    """Each view is a slice: its origin and size (views need not tile the input)."""
    x = layer.operands[0]
    origins = layer.attrs["origins"]["viewOrigins"]
    sizes = layer.attrs["viewSizes"]
    return [layer.finish(layer.move("nn.slice", x, {"begin": list(o), "size": list(s)}), t)
            for o, s, t in zip(origins, sizes, layer.result_types)]


@rule("Slice")
def _slice(layer: Layer) -> list[Value]:
    begin = layer.attrs["begin"]
    size = list(layer.out_type.shape)  # the descriptor's size may hold -1 ("to the end")
    return [layer.finish(layer.move("nn.slice", layer.operands[0], {"begin": list(begin), "size": size}))]


def strided_slice_parameters_fit(layer: Layer) -> str | None:
    """StridedSlice's begin, end and stride have one length, at most the input's rank."""
    a, rank = layer.attrs, layer.type_of(layer.operands[0]).rank
    if len(a["begin"]) > rank or len(a["end"]) != len(a["begin"]) or len(a["stride"]) != len(a["begin"]):
        return (f"begin/end/stride lengths {len(a['begin'])}/{len(a['end'])}/{len(a['stride'])} "
                f"do not fit a rank-{rank} input")
    return None


def strided_slice_stride_nonzero(layer: Layer) -> str | None:
    """StridedSlice's strides are not 0."""
    stride = list(layer.attrs["stride"])
    pad = layer.type_of(layer.operands[0]).rank - len(stride)  # the parameters apply to the last dimensions
    if 0 in stride:
        return f"stride 0 on axis {pad + stride.index(0)}"
    return None


def slicing_fits_output(layer: Layer, y: Value) -> str | None:
    """What Arm NN's StridedSlice selects has as many elements as the layer's output shape."""
    if layer.type_of(y).num_elements != layer.out_type.num_elements:
        return (f"Arm NN's slicing gives {list(layer.type_of(y).shape)}, which does not fit the layer's output "
                f"shape {list(layer.out_type.shape)}")
    return None


@rule("StridedSlice", constraints=(strided_slice_parameters_fit, strided_slice_stride_nonzero),
      checks=(slicing_fits_output,))
def _strided_slice(layer: Layer) -> list[Value]:
    """Arm NN's StridedSlice: begin/end masks and negative indices resolved and clamped per axis
    as its descriptor does (GetStartForAxis/GetStopForAxis), shrinkAxisMask keeps one element,
    and the ellipsis and new-axis masks are ignored. Parameters shorter than the rank apply to
    the last dimensions (the leading ones are taken whole). The result is then reshaped to the
    layer's output shape (which drops shrunk dimensions)."""
    x = layer.operands[0]
    shape = layer.type_of(x).shape
    a = layer.attrs
    pad = len(shape) - len(a["begin"])
    begin, end, stride = [0] * pad + list(a["begin"]), [0] * pad + list(a["end"]), [1] * pad + list(a["stride"])
    begin_mask = (a["beginMask"] << pad) | ((1 << pad) - 1)
    end_mask = (a["endMask"] << pad) | ((1 << pad) - 1)
    shrink_mask = a["shrinkAxisMask"] << pad
    starts, stops = [], []
    for axis, size in enumerate(shape):
        s = stride[axis]
        start = begin[axis]
        if begin_mask & (1 << axis):
            start = -(2 ** 31) if s > 0 else 2 ** 31 - 1
        if start < 0:
            start += size
        start = max(0, min(start, size - 1))
        if shrink_mask & (1 << axis):
            stop = start + 1
        else:
            stop = end[axis]
            if end_mask & (1 << axis):
                stop = 2 ** 31 - 1 if s > 0 else -(2 ** 31)
            if stop < 0:
                stop += size
            stop = max(0, min(stop, size)) if s > 0 else max(-1, min(stop, size - 1))
        starts.append(start)
        # nn's strided_slice: a negative end with a negative stride means "before index 0"
        stops.append(-size - 1 if (s < 0 and stop < 0) else stop)
    y = layer.move("nn.strided_slice", x, {"begin": starts, "end": stops, "strides": stride})
    layer.check(slicing_fits_output, y)
    return [layer.finish(layer.reshape(y, layer.out_type.shape))]


_PAD_MODES = {"Constant": "constant", "Reflect": "reflect", "Symmetric": "symmetric"}


@rule("Pad")
def _pad(layer: Layer) -> list[Value]:
    """padList holds (before, after) per dimension. A quantized Pad's padValue is the raw stored
    value: Arm NN encodes it with scale 1 and zero point 0, i.e. rounds it half away from zero and
    saturates it to the storage type. nn's value is real, so it gets the real value that stored
    integer stands for, scale * (stored - zero_point), which quantizes back to exactly it."""
    x, out = layer.operands[0], layer.out_type
    value = float(layer.attrs["padValue"])
    if out.quant is not None and value == 0 and _pad_value_unwritten(layer):
        value = 0.0  # the real zero, i.e. the zero point: what TFLite's PAD of a quantized tensor fills
    elif out.quant is not None:
        info = np.iinfo(out.numpy_dtype)
        stored = min(max(math.copysign(math.floor(abs(value) + 0.5), value), info.min), info.max)
        value = out.quant.scale * (stored - out.quant.zero_point)
    attrs = {"pads": list(layer.attrs["padList"]), "mode": _PAD_MODES[layer.attrs["paddingMode"]], "value": value}
    return [layer.op("nn.pad", [x], attrs, type=out)]


def _pad_value_unwritten(layer: Layer) -> bool:
    """Whether a quantized Pad's padValue 0 stands for TFLite's fill rather than the stored integer 0:
    under LiteRT semantics (the file is a TFLite model parsed by Arm NN), files from Arm NN 20.08 and
    before, whose TfLite parser never wrote the pad value; TFLite's PAD fills with the zero point.
    (Later parsers write the zero point itself; CpuRef pads such old files with the integer 0.)"""
    from ..context import pass_context

    return pass_context().semantics == "litert" and layer.graph.meta.get("generation") in ("20.08", "pre-20.08")


@rule("Tile")
def _tile(layer: Layer) -> list[Value]:
    return [layer.op("nn.tile", layer.operands, {"multiples": list(layer.attrs["m_Multiples"])}, type=layer.out_type)]


@rule("ReverseV2")
def _reverse(layer: Layer) -> list[Value]:
    """Reverse along the axes operand 1 lists (negative ones count from the end). Constant axes
    give one nn.reverse; axes known only at run time give, per dimension d, a select between x
    and x reversed along d on "some axis equals d" (exact, and foldable once the axes are known)."""
    x, axes_operand = layer.operands
    rank = layer.type_of(x).rank
    axes = layer.constant_value(axes_operand)
    if axes is not None:
        normalized = sorted({_axis(int(a), rank) for a in axes.reshape(-1)})
        return [layer.op("nn.reverse", [x], {"axes": normalized}, type=layer.out_type)]
    axes_type = layer.type_of(axes_operand)
    y = x
    for d in range(rank):
        hits = [layer.op("nn.equal", [axes_operand, layer.constant(np.asarray(k, axes_type.numpy_dtype))])
                for k in (d, d - rank)]
        chosen = layer.op("nn.reduce_any", [layer.op("nn.logical_or", hits)], {"axes": [0], "keep_dims": False})
        flipped = layer.op("nn.reverse", [y], {"axes": [d]}, type=layer.type_of(y))
        y = layer.op("nn.select", [chosen, flipped, y], type=layer.type_of(y))
    return [layer.finish(y)]


# ------------------------------------------------------------------------------ gather and scatter
@rule("Gather")
def _gather(layer: Layer) -> list[Value]:
    data = layer.operands[0]
    axis = _axis(layer.attrs["axis"], layer.type_of(data).rank)
    return [layer.op("nn.gather", layer.operands, {"axis": axis}, type=layer.out_type)]


@rule("GatherNd")
def _gather_nd(layer: Layer) -> list[Value]:
    return [layer.op("nn.gather_nd", layer.operands, type=layer.out_type)]


_SCATTER_REDUCTIONS = {"Update": "none", "Add": "add", "Max": "max", "Min": "min", "Sub": "add"}


def scatter_without_axis(layer: Layer) -> str | None:
    """ScatterNd does not scatter along an axis (m_AxisEnabled): Arm NN documents no semantics for it to
    reproduce."""
    if layer.attrs["m_AxisEnabled"]:
        return "ScatterNd along an axis (m_AxisEnabled) has no documented semantics to reproduce"
    return None


@rule("ScatterNd", constraints=(scatter_without_axis,))
def _scatter_nd(layer: Layer) -> list[Value]:
    """Operands: the data (or, with m_InputEnabled false, its shape: the data is zeros), indices,
    updates. Sub subtracts every update, which is adding the negated updates."""
    a = layer.attrs
    data, indices, updates = layer.operands
    out = layer.out_type
    if not a["m_InputEnabled"]:
        data = layer.constant(np.zeros(out.shape, out.numpy_dtype), out)
    if a["m_Function"] == "Sub":
        updates = layer.op("nn.neg", [updates], type=layer.type_of(updates))
    attrs = {"reduction": _SCATTER_REDUCTIONS[a["m_Function"]]}
    return [layer.op("nn.scatter_nd", [data, indices, updates], attrs, type=out)]


# ------------------------------------------------------------------------------ reductions
_REDUCE_OPS = {"Sum": "nn.reduce_sum", "Max": "nn.reduce_max", "Mean": "nn.reduce_mean", "Min": "nn.reduce_min",
               "Prod": "nn.reduce_prod"}


def _reduce(layer: Layer, name: str, axes: list[int], keep_dims: bool) -> list[Value]:
    """An empty axis list reduces every dimension (Arm NN's convention). Reducing every
    dimension without keepDims gives Arm NN's scalar shape [1], a reshape of nn's rank 0."""
    x = layer.operands[0]
    rank = layer.type_of(x).rank
    axes = sorted({_axis(a, rank) for a in axes}) if axes else list(range(rank))
    out = layer.out_type
    attrs = {"axes": axes, "keep_dims": bool(keep_dims)}
    y = layer.op(name, [x], attrs, type=out.with_shape(layer.inferred(name, attrs, [x]).shape))
    return [layer.reshape(y, out.shape)]


@rule("Reduce")
def _reduce_layer(layer: Layer) -> list[Value]:
    a = layer.attrs
    return _reduce(layer, _REDUCE_OPS[a["reduceOperation"]], a["axis"], a["keepDims"])


@rule("Mean")
def _mean(layer: Layer) -> list[Value]:
    return _reduce(layer, "nn.reduce_mean", layer.attrs["axis"], layer.attrs["keepDims"])


@rule("ArgMinMax")
def _arg_min_max(layer: Layer) -> list[Value]:
    """The reduced axis disappears; the index type is the layer's (Signed32 or Signed64)."""
    x = layer.operands[0]
    axis = _axis(layer.attrs["axis"], layer.type_of(x).rank)
    name = "nn.argmax" if layer.attrs["argMinMaxFunction"] == "Max" else "nn.argmin"
    attrs = {"axis": axis, "keep_dims": False, "output_type": layer.out_type.dtype}
    return [layer.op(name, [x], attrs, type=layer.out_type)]


@rule("Softmax", "LogSoftmax")
def _softmax(layer: Layer) -> list[Value]:
    """exp((x - max) * beta) / sum along `axis` (Arm NN's reference), which is nn's softmax."""
    x = layer.operands[0]
    name = "nn.softmax" if layer.type_name == "Softmax" else "nn.log_softmax"
    attrs = {"axis": _axis(layer.attrs["axis"], layer.type_of(x).rank), "beta": float(layer.attrs["beta"])}
    return [layer.op(name, [x], attrs, type=layer.out_type)]


# ------------------------------------------------------------------------------ matrix products
def flattens_to_rows(layer: Layer, elements: int, k: int) -> str | None:
    """FullyConnected's input flattens to rows of the weights' input size."""
    if elements % k:
        return f"an input of {elements} elements does not flatten to rows of {k}"
    return None


@rule("FullyConnected", checks=(flattens_to_rows,))
def _fully_connected(layer: Layer) -> list[Value]:
    """The input is flattened to [numel / K, K] (K the weights' input size); weights are [O, K]
    with transposeWeightsMatrix, else [K, O]."""
    x, w = layer.operands[:2]
    bias = layer.operands[2:] if layer.attrs["biasEnabled"] else []
    if not layer.attrs["transposeWeightsMatrix"]:
        w = layer.transpose(w, [1, 0])
    k = layer.type_of(w).shape[1]
    x_type = layer.type_of(x)
    layer.check(flattens_to_rows, x_type.num_elements, k)
    x = layer.reshape(x, [x_type.num_elements // k, k])
    out = layer.out_type
    o = layer.type_of(w).shape[0]
    y = layer.op("nn.fully_connected", [x, w, *bias], type=out.with_shape([x_type.num_elements // k, o]))
    return [layer.reshape(y, out.shape)]


_CHANNELS_LAST_MATMUL = frozenset({"NHWC", "NDHWC"})


def _matrix_axes(layout: str, rank: int) -> tuple[int, int]:
    """The two dimensions a BatchMatMul operand's matrices lie in: the last two, or the two before
    the last (channels) dimension for NHWC/NDHWC (Arm NN's GetAxesToMul)."""
    shift = 1 if layout in _CHANNELS_LAST_MATMUL else 0
    return rank - 2 - shift, rank - 1 - shift


# Largest matrix whose adjugate is expanded into cofactors (n! products per determinant).
_MAX_ADJUGATE = 4


def adjugate_expandable(layer: Layer, rows: int, n: int) -> str | None:
    """With adjointX/Y (and no transpose), the matrices are square and at most 4x4: the adjugate is
    expanded into cofactors, n! products each."""
    if rows != n:
        return f"the adjoint of a {rows}x{n} matrix: Arm NN needs square matrices"
    if n > _MAX_ADJUGATE:
        return (f"the adjugate of {n}x{n} matrices expands to {n}! products per cofactor; only up to "
                f"{_MAX_ADJUGATE}x{_MAX_ADJUGATE} is expanded")
    return None


def matrices_in_same_dimensions(layer: Layer) -> str | None:
    """BatchMatMul's X and Y data layouts put their matrices in the same dimensions (both channels-last,
    or neither)."""
    x, y = layer.attrs["dataLayoutX"], layer.attrs["dataLayoutY"]
    if (x in _CHANNELS_LAST_MATMUL) != (y in _CHANNELS_LAST_MATMUL):
        return f"X in {x} and Y in {y} index different dimensions as matrices, which is not a matrix product"
    return None


@rule("BatchMatMul", constraints=(matrices_in_same_dimensions,), checks=(adjugate_expandable,))
def _batch_matmul(layer: Layer) -> list[Value]:
    """Arm NN's BatchMatMul: each operand's matrices lie in the dimensions its data layout names;
    transposeX/Y transpose them; adjointX/Y replace them by their adjugate (cofactor matrix
    transposed, what Arm NN computes, not a conjugate transpose). Batch dimensions broadcast.
    Here the matrix dimensions are moved last, nn.matmul multiplies, and the result's matrix
    dimensions go back where X's layout puts them."""
    a = layer.attrs
    # An adjugate is a polynomial of the elements: a quantized layer computes it in float.
    in_float = layer.quantized() and ((a["adjointX"] and not a["transposeX"]) or (a["adjointY"] and not a["transposeY"]))
    operands = []
    for v, layout, transpose, adjoint in ((layer.operands[0], a["dataLayoutX"], a["transposeX"], a["adjointX"]),
                                          (layer.operands[1], a["dataLayoutY"], a["transposeY"], a["adjointY"])):
        rank = layer.type_of(v).rank
        rows, cols = _matrix_axes(layout, rank)
        rest = [d for d in range(rank) if d not in (rows, cols)]
        if transpose:
            rows, cols = cols, rows
        v = layer.transpose(layer.real(v) if in_float else v, rest + [rows, cols])
        if adjoint and not transpose:  # Arm NN applies only the transpose when both flags are set
            v = _adjugate(layer, v)
        operands.append(v)
    out = layer.out_type
    rows, cols = _matrix_axes(a["dataLayoutX"], out.rank)
    order = [d for d in range(out.rank) if d not in (rows, cols)] + [rows, cols]
    product_shape = permuted(out.shape, order)
    if not in_float:
        product_type = out.with_shape(product_shape)
    elif out.quant is not None:
        product_type = TensorType(product_shape, out.quant.expressed)
    else:
        raise ValueError(f"quantized operands but a {out.dtype} output")
    product = layer.op("nn.matmul", operands, type=product_type)
    back = [order.index(d) for d in range(out.rank)]
    return [layer.finish(layer.transpose(product, back))]


def _adjugate(layer: Layer, m: Value) -> Value:
    """The adjugate of the [..., n, n] matrices in m: adj[i][j] = (-1)^(i+j) det(minor(j, i)),
    written out as products of elements (Arm NN's reference gets the same determinants by
    elimination). A 1x1 matrix stays itself, as in Arm NN (its empty minor's determinant is taken
    to be the element)."""
    t = layer.type_of(m)
    n = t.shape[-1]
    layer.check(adjugate_expandable, t.shape[-2], n)
    if n == 1:
        return m
    batch = list(t.shape[:-2])
    zeros = [0] * len(batch)
    element = {(i, j): layer.op("nn.slice", [m], {"begin": zeros + [i, j], "size": batch + [1, 1]})
               for i in range(n) for j in range(n)}

    def det(rows: list[int], cols: list[int]) -> Value:
        if len(rows) == 1:
            return element[rows[0], cols[0]]
        # Laplace expansion along the first row (terms made one at a time, each added as it comes)
        terms = (layer.op("nn.mul", [element[rows[0], c], det(rows[1:], cols[:k] + cols[k + 1:])])
                 for k, c in enumerate(cols))
        total = next(terms)
        for k, term in enumerate(terms, 1):
            total = layer.op("nn.add" if k % 2 == 0 else "nn.sub", [total, term])
        return total

    rows_out = []
    for i in range(n):
        row = []
        for j in range(n):
            minor = det([r for r in range(n) if r != j], [c for c in range(n) if c != i])
            row.append(minor if (i + j) % 2 == 0 else layer.op("nn.neg", [minor]))
        rows_out.append(layer.op("nn.concat", row, {"axis": len(batch) + 1}))
    return layer.op("nn.concat", rows_out, {"axis": len(batch)})

