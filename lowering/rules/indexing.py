"""Indexed data movement: gather along an axis, gather_nd and scatter_nd (with their reductions).

TOSA's GATHER and SCATTER work on [N, K, C] tensors: gather along any axis reshapes the data to
[outer, axis, inner] and tiles the indices over outer; gather_nd/scatter_nd flatten the indexed prefix
into one linear index (a dot product with the prefix's strides). Quantized, these move the stored
integers (the `moves_data` form of shape.py).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import Value

from ..context import LoweringContext, constant_value
from ..registry import rule
from .arith import Arith, to_i32
from .shape import product_tree, tile


def _as_i32_indices(ctx: LoweringContext, idx: Value) -> Value:
    return ctx.cast(idx, "i32")


# Index arithmetic on constant indices is done here in numpy: the graph then holds only constant
# i32 tensors, and a float model with constant gather/scatter indices needs no integer profile.
def _index_tensor(ctx: LoweringContext, known: np.ndarray | None, build) -> Value:
    """`known` (an int array computed from constant indices) as a constant, else `build()`."""
    return ctx.const(known.astype(np.int32), "i32") if known is not None else build()


def _prefix_strides(prefix: Sequence[int]) -> np.ndarray:
    return np.array([int(np.prod(prefix[j + 1:], dtype=np.int64)) for j in range(len(prefix))], np.int64)


# ------------------------------------------------------------------------------ gather and scatter
# element types TOSA GATHER/SCATTER move directly; others travel as the same-width integer
_GATHER_CARRIER = {"i1": "i8"}


def _gather_rows(ctx: LoweringContext, values: Value, indices: Value) -> Value:
    """TOSA GATHER of [N, K, C] values by [N, W] i32 indices (booleans carried as i8)."""
    vt = ctx.type_of(values)
    carrier = _GATHER_CARRIER.get(vt.dtype, vt.dtype)
    out = ctx.tosa.gather(ctx.cast(values, carrier), indices)
    return ctx.cast(out, vt.dtype) if carrier != vt.dtype else out


@rule("nn.gather")
def gather(ctx: LoweringContext) -> Value:
    """numpy.take along `axis`: data as [outer, axis, inner], the flattened indices tiled over outer."""
    data, idx = ctx.operand("data"), ctx.operand("indices")
    axis = int(ctx.attrs["axis"])
    dt, it = ctx.type_of(data), ctx.type_of(idx)
    outer = int(np.prod(dt.shape[:axis], dtype=np.int64))
    inner = int(np.prod(dt.shape[axis + 1:], dtype=np.int64))
    w = int(np.prod(it.shape, dtype=np.int64))
    values = ctx.reshape(data, (outer, dt.shape[axis], inner))
    known = constant_value(ctx, idx)
    indices = _index_tensor(ctx, None if known is None else np.tile(known.reshape(1, w), (outer, 1)),
                            lambda: tile(ctx, ctx.reshape(_as_i32_indices(ctx, idx), (1, w)), [outer, 1]))
    return ctx.reshape(_gather_rows(ctx, values, indices), ctx.out_types[0].shape)


def _linear_prefix_index(ctx: LoweringContext, idx: Value, prefix: Sequence[int]) -> Value:
    """indices [..., k] into the first k dimensions of data -> flat row numbers [1, W] (i32)."""
    known = constant_value(ctx, idx)
    if known is not None:
        return ctx.const((known.reshape(-1, len(prefix)).astype(np.int64) @ _prefix_strides(prefix))
                         .reshape(1, -1).astype(np.int32), "i32")
    idx = _as_i32_indices(ctx, idx)
    t = ctx.type_of(idx)
    strides = _prefix_strides(prefix).astype(np.int32)
    weighted = ctx.mul(idx, ctx.const(strides.reshape((1,) * (t.rank - 1) + (len(prefix),)), "i32"))
    summed = ctx.tosa.reduce_sum(weighted, axis=t.rank - 1)
    return ctx.reshape(summed, (1, int(np.prod(t.shape[:-1], dtype=np.int64))))


@rule("nn.gather_nd")
def gather_nd(ctx: LoweringContext) -> Value:
    data, idx = ctx.operand("data"), ctx.operand("indices")
    dt, it = ctx.type_of(data), ctx.type_of(idx)
    k = it.shape[-1]
    rows = int(np.prod(dt.shape[:k], dtype=np.int64))
    inner = int(np.prod(dt.shape[k:], dtype=np.int64))
    flat = _linear_prefix_index(ctx, idx, dt.shape[:k])
    values = ctx.reshape(data, (1, rows, inner))
    return ctx.reshape(_gather_rows(ctx, values, flat), ctx.out_types[0].shape)


# scatter_nd reduction -> how updates landing on the same row combine with the row (the TOSA reduction's
# and the elementwise op's typed builder methods, unbound: called with ctx.tosa)
_SCATTER_REDUCE: dict[str, Callable[..., Value]] = {"add": TosaBuilder.reduce_sum, "mul": TosaBuilder.reduce_product, "max": TosaBuilder.reduce_max,
                   "min": TosaBuilder.reduce_min}
_SCATTER_COMBINE: dict[str, Callable[..., Value]] = {"add": TosaBuilder.add, "max": TosaBuilder.maximum, "min": TosaBuilder.minimum}


def scatter_reduction_supported(ctx: LoweringContext) -> str | None:
    """scatter_nd's reduction is none, add, mul, max or min, and only 'none' on booleans."""
    reduction = ctx.attrs["reduction"]
    if reduction == "none":
        return None
    if reduction not in _SCATTER_REDUCE:
        return f"scatter_nd reduction {reduction!r}"
    if ctx.type_of(ctx.operand("data")).dtype == "i1":
        return f"scatter_nd reduction {reduction!r} on booleans"
    return None


@rule("nn.scatter_nd", constraints=(scatter_reduction_supported,))
def scatter_nd(ctx: LoweringContext) -> Value:
    """Rows of data (its first k dimensions flattened, P rows of C elements) replaced by, or
    combined with, the W update rows whose index names them. TOSA SCATTER forbids duplicate
    indices, which nn allows ('none': the last update wins), so the rule compares every row
    number with every index ([P, W] booleans) instead:
      'none'  the last matching update's position (REDUCE_MAX over a [P, W] position table) picks
              the row through GATHER; rows no index names keep data;
      others  the updates matching each row, the reduction's identity elsewhere ([P, W, C]), are
              reduced over W and combined with data."""
    data, idx, updates = ctx.operand("data"), ctx.operand("indices"), ctx.operand("updates")
    reduction = ctx.attrs["reduction"]
    dt, it = ctx.type_of(data), ctx.type_of(idx)
    k = it.shape[-1]
    rows = int(np.prod(dt.shape[:k], dtype=np.int64))
    inner = int(np.prod(dt.shape[k:], dtype=np.int64))
    w = int(np.prod(it.shape[:-1], dtype=np.int64))
    flat_idx = _linear_prefix_index(ctx, idx, dt.shape[:k])
    flat_known = constant_value(ctx, flat_idx)
    row_numbers = np.arange(rows, dtype=np.int32).reshape(rows, 1)
    hits_known = None if flat_known is None else row_numbers == flat_known
    hits = ctx.const(hits_known, "i1") if hits_known is not None else \
        ctx.tosa.equal(ctx.const(row_numbers, "i32"), flat_idx)  # [P, W]
    base = ctx.reshape(data, (rows, inner))
    upd = ctx.reshape(updates, (w, inner))
    i32 = Arith(ctx, "i32", 2)
    if reduction == "none":
        positions = np.arange(w, dtype=np.int32).reshape(1, w)
        last_known = None if hits_known is None else np.where(hits_known, positions, -1).max(axis=1, keepdims=True)
        last = _index_tensor(ctx, last_known, lambda: ctx.tosa.reduce_max(
            i32.select(hits, ctx.const(positions, "i32"), -1), axis=1))  # [P, 1]
        source_rows = _index_tensor(ctx, None if last_known is None else np.maximum(last_known, 0).reshape(1, rows),
                                    lambda: ctx.reshape(i32.maximum(last, 0), (1, rows)))
        picked = _gather_rows(ctx, ctx.reshape(upd, (1, w, inner)), source_rows)
        written = ctx.const(last_known >= 0, "i1") if last_known is not None else i32.ge(last, 0)
        result = Arith(ctx, dt.dtype, 2).select(written, ctx.reshape(picked, (rows, inner)), base)
        return ctx.reshape(result, dt.shape)
    identity = {"add": 0, "mul": 1, "max": -np.inf, "min": np.inf}[reduction]
    compute = dt.dtype
    if dt.dtype not in ("f32", "f16", "bf16"):  # integer reductions and sums are i32 in TOSA
        base, upd = to_i32(ctx, base, ctx.nn_type("data").dtype), to_i32(ctx, upd, ctx.nn_type("updates").dtype)
        compute = "i32"
        identity = {"add": 0, "mul": 1, "max": -(1 << 31), "min": (1 << 31) - 1}[reduction]
    a = Arith(ctx, compute, 3)
    spread = a.select(ctx.reshape(hits, (rows, w, 1)), ctx.reshape(upd, (1, w, inner)), identity)  # [P, W, C]
    if reduction == "mul" and compute == "i32":  # REDUCE_PRODUCT is float only
        reduced = product_tree(ctx, spread, 1)
    else:
        reduced = _SCATTER_REDUCE[reduction](ctx.tosa, spread, axis=1)
    gathered = ctx.reshape(reduced, (rows, inner))
    if reduction == "mul":
        combined = ctx.mul(base, gathered)
    else:
        combined = _SCATTER_COMBINE[reduction](ctx.tosa, base, gathered)
    return ctx.reshape(ctx.cast(combined, dt.dtype), dt.shape)
