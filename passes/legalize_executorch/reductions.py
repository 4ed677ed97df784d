"""Reductions and selections: any/all/sum/mean/amax/amin/argmax/argmin, cumsum, max/min with indices,
topk, sort and argsort.

TOSA has no cumulative sum and no sort. cumsum along a dimension of length L is a matmul of the
float tensor (that dimension last) with an L x L upper-triangular matrix of ones, or for integers
(exact) a broadcast multiply with that matrix and a sum. topk(k) is k rounds of "the maximum, its
first index, then mask that element out" (argmax picks the first of equal values, as PyTorch's CPU
topk does for distinct values); sort is topk of the whole dimension. Both are refused past
MAX_SELECTION_ROUNDS elements. Indices come out as the out tensor's type (int64 at nn level;
lowering carries them as int32, exact below 2^31)."""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import Value

from ..legalize_mps.core import is_float
from .core import MAX_SELECTION_ROUNDS, Call, NotLegalizable, rule

REDUCE = {"aten::any": "nn.reduce_any", "aten::all": "nn.reduce_all", "aten::sum": "nn.reduce_sum",
          "aten::mean": "nn.reduce_mean", "aten::amax": "nn.reduce_max", "aten::amin": "nn.reduce_min",
          "aten::prod": "nn.reduce_prod"}

# the overloads without a dim argument: they reduce every dimension (sum.out(self, *, dtype, out))
WHOLE_TENSOR = frozenset({"aten::sum", "aten::sum.out", "aten::sum.default", "aten::prod", "aten::prod.out",
                          "aten::any", "aten::any.all_out", "aten::all", "aten::all.all_out", "aten::mean",
                          "aten::mean.dtype_out", "aten::mean.default"})


def _dims(c: Call, k: int, rank: int) -> list[int]:
    """A dim / dims argument (None or empty: every dimension)."""
    dims = c.arg(k)
    if dims is None or dims == []:
        return list(range(rank))
    return sorted({c.axis(d, rank) for d in ([dims] if isinstance(dims, int) else dims)})


@rule(*REDUCE)
def reduce(c: Call) -> Value:
    """op(self, dim=None, keepdim=False, ...): any/all in booleans, the others in the out type."""
    x = c.tensor(0)
    rank = c.type_of(x).rank
    has_dim = c.operator not in WHOLE_TENSOR
    axes = _dims(c, 1, rank) if has_dim else list(range(rank))
    keep = c.bool_arg(2) if has_dim else False
    dtype = "i1" if c.member in ("aten::any", "aten::all") else c.out.dtype
    if not axes:
        return c.like(c.cast(x, dtype), c.out)
    y = c.op(REDUCE[c.member], [c.cast(x, dtype)], {"axes": axes, "keep_dims": True})
    return c.like(c.reshape(y, c.out.shape) if not keep else y, c.out)


@rule("aten::argmax", "aten::argmin")
def argmax(c: Call) -> Value:
    """argmax(self, dim=None, keepdim=False): dim None searches the flattened tensor."""
    x = c.tensor(0)
    dim = c.arg(1)
    if dim is None:
        x, axis = c.reshape(x, [c.type_of(x).num_elements]), 0
    else:
        axis = c.axis(dim, c.type_of(x).rank)
    y = c.op("nn." + c.member.split("::")[1], [x], {"axis": axis, "keep_dims": True, "output_type": "i64"})
    return c.like(c.reshape(y, c.out.shape), c.out)


def _triangle(length: int) -> np.ndarray:
    """U[j, i] = 1 where j <= i: (x @ U)[i] = sum of x[0..i]."""
    return np.triu(np.ones((length, length)))


@rule("aten::cumsum")
def cumsum(c: Call) -> Value:
    """cumsum(self, dim, dtype=None), in the out tensor's type."""
    dtype = c.out.dtype
    x = c.cast(c.tensor(0), dtype)
    shape = c.type_of(x).shape
    rank = len(shape)
    if rank == 0:
        return x
    axis = c.axis(c.int_arg(1), rank)
    length = shape[axis]
    c.check_computed([length, length], "triangular matrix")
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = list(np.argsort(perm))
    moved = c.transpose(x, perm)
    if is_float(dtype):
        rows = c.reshape(moved, [1, int(np.prod(c.type_of(moved).shape[:-1], dtype=np.int64)), length])
        summed = c.op("nn.matmul", [rows, c.constant(_triangle(length)[None], dtype)])
        summed = c.reshape(summed, c.type_of(moved).shape)
    else:
        c.check_computed([c.type_of(x).num_elements, length], "masked copy")
        wide = c.op("nn.mul", [c.reshape(moved, [*c.type_of(moved).shape, 1]), c.constant(_triangle(length), dtype)])
        summed = c.reshape(c.op("nn.reduce_sum", [wide], {"axes": [rank - 1], "keep_dims": True}),
                           c.type_of(moved).shape)
    return c.transpose(summed, [int(p) for p in inverse])


def _select_rounds(c: Call, x: Value, axis: int, k: int, largest: bool) -> tuple[Value, Value]:
    """The k largest (or smallest) elements along `axis`, in order, and their indices (i64)."""
    t = c.type_of(x)
    length = t.shape[axis]
    if k > MAX_SELECTION_ROUNDS:
        raise NotLegalizable(f"selecting {k} elements takes one round each; nn2tosa stops at "
                             f"{MAX_SELECTION_ROUNDS}")
    if not 0 <= k <= length:
        raise ValueError(f"k = {k} is out of range for a dimension of {length}")
    dtype = t.dtype
    if not is_float(dtype):
        x, dtype = c.cast(x, "f32"), "f32"  # (exact for integers below 2^24; TOSA's argmax compares in f32 too)
    positions_shape = [1] * t.rank
    positions_shape[axis] = length
    positions = c.constant(np.arange(length).reshape(positions_shape), "i32")
    masked = c.scalar(-np.inf if largest else np.inf, dtype)
    search = "nn.argmax" if largest else "nn.argmin"
    values, indices = [], []
    for _ in range(k):
        index = c.op(search, [x], {"axis": axis, "keep_dims": True, "output_type": "i32"})
        hit = c.op("nn.equal", [positions, index])
        values.append(c.op("nn.reduce_max" if largest else "nn.reduce_min", [x], {"axes": [axis], "keep_dims": True}))
        indices.append(index)
        x = c.op("nn.select", [hit, masked, x])
    if len(values) == 1:
        return values[0], indices[0]
    return c.op("nn.concat", values, {"axis": axis}), c.op("nn.concat", indices, {"axis": axis})


@rule("aten::topk")
def topk(c: Call) -> list[Value]:
    """topk(self, k, dim=-1, largest=True, sorted=True) -> (values, indices); sorted or not, the
    elements come in order (PyTorch leaves the unsorted order unspecified)."""
    x = c.tensor(0)
    axis = c.axis(c.int_arg(2, -1), max(c.type_of(x).rank, 1))
    values, indices = _select_rounds(c, x, axis, c.int_arg(1), c.bool_arg(3, True))
    outs = c.outs
    return [c.like(values, outs[0]), c.like(indices, outs[1])]


@rule("aten::sort", "aten::argsort")
def sort(c: Call) -> list[Value] | Value:
    """sort(self, dim=-1, descending=False) -> (values, indices); sort.stable(self, stable, dim,
    descending); argsort(self, dim, descending) -> indices. Equal values keep their order."""
    x = c.tensor(0)
    rank = max(c.type_of(x).rank, 1)
    first = 2 if len(c.arguments) > 1 and c.arguments[1]["kind"] in ("Bool", "None") and "stable" in c.operator else 1
    axis = c.axis(c.int_arg(first, -1), rank)
    descending = c.bool_arg(first + 1, False)
    length = c.type_of(x).shape[axis]
    values, indices = _select_rounds(c, x, axis, length, descending)
    outs = c.outs
    if c.member == "aten::argsort":
        return c.like(indices, outs[0])
    return [c.like(values, outs[0]), c.like(indices, outs[1])]


@rule("aten::max", "aten::min")
def max_dim(c: Call) -> list[Value] | Value:
    """max(self) (all elements) or max.dim(self, dim, keepdim) -> (values, indices)."""
    x = c.tensor(0)
    rank = c.type_of(x).rank
    largest = c.member == "aten::max"
    if len(c.outs) == 1:  # the whole tensor
        y = c.op("nn.reduce_max" if largest else "nn.reduce_min", [x], {"axes": list(range(rank)), "keep_dims": False})
        return c.like(y, c.outs[0])
    axis = c.axis(c.int_arg(1), rank)
    values, indices = _select_rounds(c, x, axis, 1, largest)
    outs = c.outs
    return [c.like(c.reshape(values, outs[0].shape), outs[0]), c.like(c.reshape(indices, outs[1].shape), outs[1])]
