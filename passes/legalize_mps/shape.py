"""Shape and data-movement nodes, casts, and the nodes that make constants (full, full_like, arange).

Shapes are static, so a node whose result shape the file declares (view with -1, squeeze,
unsqueeze, expand) becomes a reshape or broadcast to that declared shape; the nn op's own type
inference then checks that the element counts agree.
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import Value

from .core import Node, dtype_has_element_type, element_type, normalize_axis, rule


@rule("MPSView", "MPSSqueeze", "MPSUnsqueeze")
def reshape(n: Node) -> Value:
    """view / reshape (a -1 in `shape` is resolved by the declared result), squeeze (only size-1
    dimensions among `dims` go), unsqueeze: all a reshape to the declared shape."""
    x = n.input("input1_id")
    target = n.out.shape
    if math.prod(target) != n.type_of(x).num_elements:
        raise ValueError(f"cannot reshape {list(n.type_of(x).shape)} to the declared {list(target)}")
    return n.reshape(x, target)


@rule("MPSExpand")
def expand(n: Node) -> Value:
    """torch expand: -1 keeps a dimension; the declared result shape says the rest."""
    x = n.input("input1_id")
    return n.op("nn.broadcast_to", [x], {"shape": list(n.out.shape)})


@rule("MPSPermute")
def permute(n: Node) -> Value:
    x = n.input("input1_id")
    rank = n.type_of(x).rank
    return n.transpose(x, [normalize_axis(p, rank) for p in n.attrs["perm"]])


@rule("MPSCat")
def cat(n: Node) -> Value:
    """torch.cat: operands promoted to one type; empty pieces (the runtime skips the nil tensor of an
    empty full()) contribute nothing."""
    pieces = [v for v in n.inputs("input_ids") if v is not None]
    dtype = n.compute_dtype(pieces)
    rank = n.out.rank
    kept = [v for v in pieces if n.type_of(v).num_elements > 0] or pieces[:1]
    axis = normalize_axis(n.attrs["dim"], rank)
    if len(kept) == 1:
        return n.cast(kept[0], dtype)
    return n.op("nn.concat", [n.cast(v, dtype) for v in kept], {"axis": axis})


@rule("MPSSelect")
def select(n: Node) -> Value:
    """x.select(dim, index): the slice at `index` (negative from the end), without that dimension."""
    x = n.input("input1_id")
    shape = n.type_of(x).shape
    dim = normalize_axis(n.attrs["dim"], len(shape))
    index = n.attrs["index"] + shape[dim] if n.attrs["index"] < 0 else n.attrs["index"]
    begin = [0] * len(shape)
    begin[dim] = index
    size = list(shape)
    size[dim] = 1
    sliced = n.op("nn.slice", [x], {"begin": begin, "size": size})
    return n.reshape(sliced, shape[:dim] + shape[dim + 1:])


def torch_slice_bounds(start: int, end: int, size: int) -> tuple[int, int]:
    """PyTorch's slice: negative bounds count from the end, then both are clamped to [0, size]."""
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


@rule("MPSSlice")
def slice_(n: Node) -> Value:
    x = n.input("input1_id")
    shape = n.type_of(x).shape
    dim = normalize_axis(int(n.attrs["dim"]), len(shape))
    step = int(n.attrs["step"])
    if step <= 0:
        raise ValueError(f"slice step {step} is not positive")
    start, end = torch_slice_bounds(int(n.attrs["start"]), int(n.attrs["end"]), shape[dim])
    begin, stop, strides = [0] * len(shape), list(shape), [1] * len(shape)
    begin[dim], stop[dim], strides[dim] = start, end, step
    if step == 1:
        return n.op("nn.slice", [x], {"begin": begin, "size": [e - b for b, e in zip(begin, stop)]})
    return n.op("nn.strided_slice", [x], {"begin": begin, "end": stop, "strides": strides})


@rule("MPSSplitWithSizes")
def split(n: Node) -> list[Value]:
    x = n.input("input1_id")
    axis = normalize_axis(n.attrs["dim"], n.type_of(x).rank)
    return n.ops("nn.split", [x], {"axis": axis, "sizes": [int(s) for s in n.attrs["split_sizes"]]})


@rule("MPSPixelShuffle")
def pixel_shuffle(n: Node) -> Value:
    """[..., C*r*r, H, W] -> [..., C, H*r, W*r] with out[c, h*r+i, w*r+j] = in[c*r*r + i*r + j, h, w]:
    a reshape to [..., C, r, r, H, W], a transpose to [..., C, H, r, W, r] and a reshape."""
    x = n.input("input1_id")
    (r,) = n.require(["upscale_factor"], 1)
    shape = n.type_of(x).shape
    if len(shape) < 3 or shape[-3] % (r * r):
        raise ValueError(f"pixel_shuffle by {r} needs a channel count divisible by {r * r}, got {list(shape)}")
    batch, (c, h, w) = list(shape[:-3]), shape[-3:]
    b = len(batch)
    split = n.reshape(x, batch + [c // (r * r), r, r, h, w])
    moved = n.transpose(split, list(range(b)) + [b + p for p in (0, 3, 1, 4, 2)])
    return n.reshape(moved, batch + [c // (r * r), h * r, w * r])


@rule("MPSConstantPadND")
def constant_pad(n: Node) -> Value:
    """torch constant_pad_nd: `pad` holds (before, after) pairs from the last dimension backwards;
    negative amounts crop."""
    x = n.input("input1_id")
    shape = n.type_of(x).shape
    pad = [int(p) for p in n.attrs["pad"]]
    if len(pad) % 2 or len(pad) // 2 > len(shape):
        raise ValueError(f"pad {pad} does not fit rank {len(shape)}")
    pads = [0] * (2 * len(shape))
    for i in range(len(pad) // 2):
        dim = len(shape) - 1 - i
        pads[2 * dim], pads[2 * dim + 1] = pad[2 * i], pad[2 * i + 1]
    if any(p < 0 for p in pads):  # crop first, then pad what is positive
        begin = [max(-pads[2 * d], 0) for d in range(len(shape))]
        size = [shape[d] - begin[d] - max(-pads[2 * d + 1], 0) for d in range(len(shape))]
        x = n.op("nn.slice", [x], {"begin": begin, "size": size})
        pads = [max(p, 0) for p in pads]
    if not any(pads):
        return x
    return n.op("nn.pad", [x], {"pads": pads, "mode": "constant", "value": float(n.attrs["value"])})


@rule("MPSCast", constraints=(dtype_has_element_type,))
def cast(n: Node) -> Value:
    """Also the fp16 boundary casts the backend adds in place (docs/frontend_mps.md)."""
    return n.cast(n.input("input1_id"), element_type(n.attrs["dtype"]))


# ------------------------------------------------------------------------------ constants
# A larger fill is a broadcast of its scalar (still a constant expression; nothing is allocated here).
MAX_MATERIALIZED_FILL = 1 << 20


@rule("MPSFull", "MPSFullLike", constraints=(dtype_has_element_type,))
def full(n: Node) -> Value:
    """A constant of the declared shape (full_like: its operand's) and `dtype`, filled with fill_value."""
    t = n.out
    dtype = element_type(n.attrs["dtype"])
    value = _in_dtype(float(n.attrs["fill_value"]), dtype)
    if t.num_elements <= MAX_MATERIALIZED_FILL:
        return n.constant(np.full(t.shape, value), dtype)
    return n.op("nn.broadcast_to", [n.scalar(value, dtype)], {"shape": list(t.shape)})


@rule("MPSArange", constraints=(dtype_has_element_type,))
def arange(n: Node) -> Value:
    """start + i * step for i < ceil((end - start) / step), computed in double and converted to `dtype`
    (the runtime's formula; the declared length must agree)."""
    start, end, step = (float(n.attrs[k]) for k in ("start", "end", "step"))
    if step == 0:
        raise ValueError("arange step is 0")
    length = max(0, math.ceil((end - start) / step))
    if (length,) != tuple(n.out.shape):
        raise ValueError(f"arange({start}, {end}, {step}) has {length} elements, the file declares {list(n.out.shape)}")
    dtype = element_type(n.attrs["dtype"])
    n.check_computed([length], "range")
    values = start + np.arange(length, dtype=np.float64) * step
    return n.constant(_in_dtype(values, dtype), dtype)


def _in_dtype(value: float | np.ndarray, dtype: str) -> np.ndarray:
    """A float value converted as PyTorch converts to `dtype` (integers truncate, bool is != 0)."""
    value = np.asarray(value, dtype=np.float64)
    if dtype == "i1":
        return value != 0
    if dtype.startswith(("i", "ui")):
        return np.trunc(value)
    return value
