"""Copies, clones, views, dim-order ops and indexing: what ExecuTorch leaves on the CPU around MPS
partitions. Tensors are values here: an ExecuTorch dim order (memory layout) never changes a
tensor's logical contents, so clones and dim-order copies are the identity (plus the out tensor's
element type), and every view is the copy `*_copy` makes of it. Argument positions follow the ATen
schemas (`aten::slice_copy(self, dim=0, start=None, end=None, step=1)`); the result shape is the
out tensor's, which the plan declares."""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import Value

from .core import Call, rule


@rule("aten::clone", "aten::alias_copy", "aten::alias", "aten::detach_copy", "aten::lift_fresh_copy",
      "dim_order_ops::_clone_dim_order", "dim_order_ops::_to_dim_order_copy", "aten::_to_copy", "aten::to",
      "aten::contiguous", "aten::_to_dim_order_copy")
def copy_of_self(c: Call) -> Value:
    """The same values in the out tensor's element type (dim orders and memory formats are layouts)."""
    return c.like(c.tensor(0), c.out)


@rule("aten::copy", "aten::copy_")
def copy(c: Call) -> Value:
    """self.copy_(src): src broadcast to self's shape, converted to self's element type."""
    return c.like(c.tensor(1), c.out)


@rule("aten::view_copy", "aten::_unsafe_view", "aten::reshape", "aten::view", "aten::squeeze_copy",
      "aten::unsqueeze_copy", "aten::flatten", "aten::unflatten")
def view(c: Call) -> Value:
    """Views that keep the element order: a reshape to the declared out shape."""
    x = c.tensor(0)
    if c.type_of(x).num_elements != c.out.num_elements:
        raise ValueError(f"cannot view {list(c.type_of(x).shape)} as {list(c.out.shape)}")
    return c.cast(c.reshape(x, c.out.shape), c.out.dtype)


@rule("aten::expand_copy", "aten::expand", "aten::broadcast_to")
def expand(c: Call) -> Value:
    return c.like(c.tensor(0), c.out)


@rule("aten::permute_copy", "aten::permute")
def permute(c: Call) -> Value:
    x = c.tensor(0)
    rank = c.type_of(x).rank
    return c.cast(c.transpose(x, [c.axis(d, rank) for d in c.ints(1)]), c.out.dtype)


@rule("aten::t_copy", "aten::transpose_copy", "aten::transpose")
def transpose(c: Call) -> Value:
    x = c.tensor(0)
    rank = c.type_of(x).rank
    perm = list(range(rank))
    if rank >= 2:
        a, b = (c.axis(c.int_arg(1), rank), c.axis(c.int_arg(2), rank)) if len(c.arguments) > 2 else (0, 1)
        perm[a], perm[b] = perm[b], perm[a]
    return c.cast(c.transpose(x, perm), c.out.dtype)


def _slice_bounds(size: int, start: int | None, end: int | None, step: int) -> tuple[int, int]:
    """Python's clamping of start and end (step > 0), as ATen's slice does."""
    start = 0 if start is None else start + size if start < 0 else start
    end = size if end is None else end + size if end < 0 else end
    start, end = min(max(start, 0), size), min(max(end, 0), size)
    return start, max(start, end)


@rule("aten::slice_copy", "aten::slice")
def slice_copy(c: Call) -> Value:
    x = c.tensor(0)
    shape = c.type_of(x).shape
    axis = c.axis(c.int_arg(1, 0), len(shape))
    step = c.int_arg(4, 1)
    if step <= 0:
        raise ValueError(f"slice step {step} (must be positive)")
    start, end = _slice_bounds(shape[axis], c.arg(2), c.arg(3), step)
    begin = [0] * len(shape)
    stop = list(shape)
    begin[axis], stop[axis] = start, end
    if step == 1:
        y = c.op("nn.slice", [x], {"begin": begin, "size": [e - b for b, e in zip(begin, stop)]})
    else:
        strides = [1] * len(shape)
        strides[axis] = step
        y = c.op("nn.strided_slice", [x], {"begin": begin, "end": stop, "strides": strides})
    return c.like(y, c.out)


@rule("aten::select_copy", "aten::select")
def select(c: Call) -> Value:
    """x.select(dim, index): the slice at `index` (negative from the end), without that dimension."""
    x = c.tensor(0)
    shape = c.type_of(x).shape
    axis = c.axis(c.int_arg(1), len(shape))
    index = c.int_arg(2)
    index = index + shape[axis] if index < 0 else index
    if not 0 <= index < shape[axis]:
        raise ValueError(f"select index {c.int_arg(2)} is out of range for size {shape[axis]}")
    begin = [0] * len(shape)
    size = list(shape)
    begin[axis], size[axis] = index, 1
    return c.cast(c.reshape(c.op("nn.slice", [x], {"begin": begin, "size": size}), c.out.shape), c.out.dtype)


@rule("aten::cat", "aten::concat")
def cat(c: Call) -> Value:
    pieces = [v for v in c.arg(0) if v is not None and c.type_of(v).num_elements > 0]
    if not pieces:
        return c.constant(np.zeros(c.out.shape), c.out.dtype)
    axis = c.axis(c.int_arg(1, 0), c.out.rank)
    pieces = [c.cast(v, c.out.dtype) for v in pieces]
    return pieces[0] if len(pieces) == 1 else c.op("nn.concat", pieces, {"axis": axis})


def _index(c: Call, index: Value, size: int) -> Value:
    """An integer index tensor as i32 with negative entries counted from the end (values must fit i32:
    indices into a dimension of fewer than 2^31 elements do)."""
    dtype = c.type_of(index).dtype
    if dtype not in ("i8", "i16", "i32", "i64", "ui8"):
        raise ValueError(f"an index tensor of {dtype}")
    value = c.constant_value(index)
    if value is not None:
        return c.constant(np.where(value < 0, value + size, value), "i32")
    index = c.cast(index, "i32")
    negative = c.op("nn.less", [index, c.scalar(0, "i32")])
    return c.op("nn.select", [negative, c.op("nn.add", [index, c.scalar(size, "i32")]), index])


@rule("aten::index_select")
def index_select(c: Call) -> Value:
    x = c.tensor(0)
    shape = c.type_of(x).shape
    axis = c.axis(c.int_arg(1), len(shape))
    gathered = c.op("nn.gather", [x, _index(c, c.tensor(2), shape[axis])], {"axis": axis})
    return c.like(c.reshape(gathered, c.out.shape), c.out)


@rule("aten::embedding")
def embedding(c: Call) -> Value:
    """weight[indices] (padding_idx and the other arguments only change gradients)."""
    weight = c.tensor(0)
    return c.like(c.op("nn.gather", [weight, _index(c, c.tensor(1), c.type_of(weight).shape[0])], {"axis": 0}), c.out)


@rule("aten::index")
def index(c: Call) -> Value:
    """x[..., idx, ...] with one index tensor (the others None): a gather along that dimension."""
    x = c.tensor(0)
    indices = c.arg(1) or []
    present = [k for k, v in enumerate(indices) if v is not None]
    if len(present) != 1:
        from .core import NotLegalizable

        raise NotLegalizable(f"advanced indexing with {len(present)} index tensors (one is supported)")
    axis = present[0]
    shape = c.type_of(x).shape
    gathered = c.op("nn.gather", [x, _index(c, indices[axis], shape[axis])], {"axis": axis})
    return c.like(c.reshape(gathered, c.out.shape), c.out)


def _flat_gather(c: Call, x: Value, positions: np.ndarray) -> Value:
    """x's elements at the flat (row-major) `positions`, shaped like `positions`."""
    flat = c.reshape(x, [c.type_of(x).num_elements])
    return c.op("nn.gather", [flat, c.constant(positions.astype(np.int32), "i32")], {"axis": 0})


@rule("aten::as_strided_copy", "aten::as_strided")
def as_strided(c: Call) -> Value:
    """The elements at storage_offset + sum(i_k * stride_k) of x's contiguous storage: a reshape when
    that is x's own element order, else one gather of constant positions."""
    x = c.tensor(0)
    size, stride = c.ints(1), c.ints(2)
    offset = c.int_arg(3, 0)
    if len(size) != len(stride):
        raise ValueError(f"size {size} and stride {stride} differ in length")
    c.check_computed(size, "position table")
    positions = np.full(size, offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        positions = positions + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    count = c.type_of(x).num_elements
    if positions.size and (positions.min() < 0 or positions.max() >= count):
        raise ValueError(f"as_strided reads storage positions {positions.min()}..{positions.max()} of a "
                         f"tensor of {count} elements")
    if positions.size == count and np.array_equal(positions.ravel(), np.arange(count)):
        return c.like(c.reshape(x, size), c.out)
    return c.like(_flat_gather(c, x, positions), c.out)


@rule("aten::gather")
def gather(c: Call) -> Value:
    """out[i][j][k] = self[i][index[i][j][k]][k] (dim 1): one flat gather, positions = the out position's
    flat offset in self with the gathered dimension's coordinate replaced by the index."""
    x = c.tensor(0)
    shape = c.type_of(x).shape
    axis = c.axis(c.int_arg(1), len(shape))
    idx = c.tensor(2)
    ishape = c.type_of(idx).shape
    c.check_computed(ishape, "position table")
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    base = np.zeros(ishape, dtype=np.int64)
    for k, n in enumerate(ishape):
        if k == axis:
            continue
        r = [1] * len(ishape)
        r[k] = n
        base = base + (np.arange(n, dtype=np.int64) * strides[k]).reshape(r)
    index = _index(c, idx, shape[axis])
    positions = c.op("nn.add", [c.op("nn.mul", [index, c.scalar(strides[axis], "i32")]), c.constant(base, "i32")])
    flat = c.reshape(x, [c.type_of(x).num_elements])
    return c.like(c.op("nn.gather", [flat, positions], {"axis": 0}), c.out)
