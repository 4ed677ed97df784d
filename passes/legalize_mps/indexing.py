"""Indexing nodes: index_select, embedding, index.Tensor, index_put and scatter, as nn.gather,
nn.gather_nd and nn.scatter_nd.

index.Tensor and index_put follow PyTorch's advanced indexing: the index tensors (None for a `:`)
broadcast to one shape B; when the indexed dimensions are adjacent, B replaces them in place in the
result, otherwise B comes first. Negative indices count from the end. The MPS runtime only builds
the one-index case (several indices go to a `metal_kernel` partition it cannot run yet); nn has no
such limit, so several indices are converted with PyTorch's meaning.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nn2tosa.ir import Value

from .core import Node, is_int, normalize_axis, promote, rule


def index_is_integer(n: Node, index: Value) -> str | None:
    """Indices are integers: a boolean mask selects a data-dependent number of elements, which static
    shapes cannot hold."""
    if not is_int(n.type_of(index).dtype):
        return (f"an index of element type {n.type_of(index).dtype} (a boolean mask selects a data-dependent "
                "number of elements; static shapes cannot hold it)")
    return None


@rule("MPSIndexSelect", checks=(index_is_integer,))
def index_select(n: Node) -> Value:
    x = n.input("input1_id")
    axis = normalize_axis(n.attrs["dim"], n.type_of(x).rank)
    gathered = n.op("nn.gather", [x, _integer_index(n, n.input("index_id"))], {"axis": axis})
    return n.reshape(gathered, n.out.shape)  # a 0-d index keeps the dimension (size 1)


@rule("MPSEmbedding", checks=(index_is_integer,))
def embedding(n: Node) -> Value:
    """weight[indices]. `padding_idx` only changes gradients in PyTorch; the MPS runtime also zeroes the
    rows it selects, which agrees whenever that row of the weight is zero (nn.Embedding initializes it
    so). PyTorch's forward is what is kept."""
    weight, indices = n.input("input1_id"), n.input("input2_id")
    return n.op("nn.gather", [weight, _integer_index(n, indices)], {"axis": 0})


def _integer_index(n: Node, index: Value) -> Value:
    n.check(index_is_integer, index)
    return index


def _wrapped(n: Node, index: Value, size: int) -> Value:
    """Negative indices count from the end of a dimension of `size` elements."""
    index = _integer_index(n, index)
    dtype = n.type_of(index).dtype
    value = n.constant_value(index)
    if value is not None:
        if (value >= 0).all():
            return index
        return n.constant(np.where(value < 0, value + size, value), dtype)
    negative = n.op("nn.less", [index, n.scalar(0, dtype)])
    return n.op("nn.select", [negative, n.op("nn.add", [index, n.scalar(size, dtype)]), index])


@dataclass
class AdvancedIndex:
    """x[indices] laid out for gather_nd / scatter_nd: the data with its indexed dimensions moved first
    (`data`, by `perm`), the coordinates [*B, k] (`coords`), and how PyTorch orders the result."""

    data: Value
    perm: list[int]
    coords: Value
    batch: tuple[int, ...]  # B, the broadcast index shape
    front: int  # dimensions before B in PyTorch's result (the first indexed dimension when adjacent, else 0)

    def result_perm(self, rest: int) -> list[int]:
        """gather_nd gives [*B, *rest dims]; PyTorch puts `front` rest dims before B."""
        b = len(self.batch)
        return [b + i for i in range(self.front)] + list(range(b)) + [b + i for i in range(self.front, rest)]


def advanced_index(n: Node, x: Value, indices: list[Value | None]) -> AdvancedIndex:
    shape = n.type_of(x).shape
    if len(indices) > len(shape):
        raise ValueError(f"{len(indices)} indices for a rank-{len(shape)} tensor")
    positions = [i for i, v in enumerate(indices) if v is not None]
    if not positions:
        raise ValueError("no index tensor")
    present = [_wrapped(n, v, shape[p]) for p, v in enumerate(indices) if v is not None]
    batch = tuple(np.broadcast_shapes(*[n.type_of(v).shape for v in present]))
    dtype = promote([n.type_of(v).dtype for v in present])
    columns = []
    for v in present:
        v = n.cast(v, dtype)
        if n.type_of(v).shape != batch:
            v = n.op("nn.broadcast_to", [v], {"shape": list(batch)})
        columns.append(n.reshape(v, list(batch) + [1]))
    coords = columns[0] if len(columns) == 1 else n.op("nn.concat", columns, {"axis": len(batch)})
    others = [d for d in range(len(shape)) if d not in positions]
    perm = positions + others
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    return AdvancedIndex(n.transpose(x, perm), perm, coords, batch, positions[0] if adjacent else 0)


@rule("MPSIndexTensor", checks=(index_is_integer,))
def index_tensor(n: Node) -> Value:
    x = n.input("input1_id")
    indices = n.inputs("indices_id")
    present = [(i, v) for i, v in enumerate(indices) if v is not None]
    if len(present) == 1:  # x[:, idx]: a gather along that dimension (the runtime's own case)
        p, index = present[0]
        idx = _wrapped(n, index, n.type_of(x).shape[p])
        return n.op("nn.gather", [x, idx], {"axis": p})
    ai = advanced_index(n, x, indices)
    gathered = n.op("nn.gather_nd", [ai.data, ai.coords])
    rest = n.type_of(x).rank - n.type_of(ai.coords).shape[-1]
    return n.transpose(gathered, ai.result_perm(rest))


@rule("MPSIndexPut", checks=(index_is_integer,))
def index_put(n: Node) -> Value:
    """x[indices] = values (values broadcast to `values_shape` when given, then to the indexed shape).
    Duplicate indices: the last update wins. The backend drops PyTorch's accumulate=True (the file
    cannot say it), so an accumulating index_put is converted as a plain assignment, as the file states."""
    x, values = n.input("input1_id"), n.input("values_id")
    dtype = n.compute_dtype([x, values])
    ai = advanced_index(n, n.cast(x, dtype), n.inputs("indices_id"))
    rank, k = n.type_of(x).rank, n.type_of(ai.coords).shape[-1]
    rest_shape = [n.type_of(ai.data).shape[k + i] for i in range(rank - k)]
    perm = ai.result_perm(len(rest_shape))
    indexed_shape = [(list(ai.batch) + rest_shape)[p] for p in perm]  # PyTorch's shape of x[indices]
    values = n.cast(values, dtype)
    if n.attrs.get("values_shape"):
        values = n.op("nn.broadcast_to", [values], {"shape": [int(d) for d in n.attrs["values_shape"]]})
    if n.type_of(values).shape != tuple(indexed_shape):
        values = n.op("nn.broadcast_to", [values], {"shape": indexed_shape})
    updates = n.transpose(values, list(np.argsort(perm)))
    scattered = n.op("nn.scatter_nd", [ai.data, ai.coords, updates], {"reduction": "none"})
    return n.transpose(scattered, list(np.argsort(ai.perm)))


@rule("MPSScatter", checks=(index_is_integer,))
def scatter(n: Node) -> Value:
    """torch.scatter(x, dim, index, src) (the backend emits it for slice_scatter): for every position p
    of `index`, out[p with p[dim] replaced by index[p]] = src[p]. Becomes a scatter_nd whose
    coordinates are the positions of `index` with the indexed dimension taken from it."""
    x, index, src = n.input("input1_id"), n.input("idx_id"), n.input("src_id")
    shape = n.type_of(x).shape
    axis = normalize_axis(int(n.attrs["dim"]), len(shape))
    index_shape = n.type_of(index).shape
    if len(index_shape) != len(shape):
        raise ValueError(f"scatter index {list(index_shape)} and data {list(shape)} differ in rank")
    index = _wrapped(n, index, shape[axis])
    dtype = n.type_of(index).dtype
    n.check_computed(list(index_shape) + [len(shape)], "scatter coordinates")
    grid = np.indices(index_shape)
    value = n.constant_value(index)
    if value is not None:
        grid[axis] = value
        coords = n.constant(np.stack(list(grid), axis=-1), dtype)
    else:  # the indexed coordinate comes from the run-time index, the others are positions
        columns = [n.reshape(index, list(index_shape) + [1]) if d == axis else
                   n.constant(grid[d][..., None], dtype) for d in range(len(shape))]
        coords = n.op("nn.concat", columns, {"axis": len(shape)})
    dtype_out = n.compute_dtype([x, src])
    src = n.cast(src, dtype_out)
    if n.type_of(src).shape != index_shape:  # only src[:index.shape] is used
        src = n.op("nn.slice", [src], {"begin": [0] * len(shape), "size": list(index_shape)})
    return n.op("nn.scatter_nd", [n.cast(x, dtype_out), coords, src], {"reduction": "none"})
