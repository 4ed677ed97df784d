"""Shapes and data movement: broadcast, concat/split/slice (strided, negative strides), pad in every
mode, tile, reverse (gather and scatter: indexing.py); and the quantized forms of every op that moves data.

TOSA's data-movement ops are few: SLICE (unit stride), PAD (constant), TILE, REVERSE (one axis),
CONCAT, RESHAPE, TRANSPOSE, GATHER/SCATTER on [N, K, C] tensors. Everything else is built from them:
- a strided slice splits a dimension into (count, stride) with RESHAPE and keeps index 0;
- reflect/symmetric/edge padding is a static index map per axis, emitted as runs of slices (reversed
  where the map walks backwards, tiled where it repeats one index) joined by CONCAT.

Quantized, the float rules move the integers as they are; a result quantized differently from its
operand is requantized afterwards (quantization.requantize_value). concat requantizes each operand to the
result's quantization; constant pad fills with the encoded pad value.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from ..fixed_point.carrier import carried_type, encode, qinfo
from ..registry import RULES, ops_with, rule
from .quantization import q_in, q_out, require_per_tensor, requantize_value, same_quantization

MAX_CONCAT_OPERANDS = 64  # TOSA level 8K's tensor list size


# ------------------------------------------------------------------------------ helpers
def tosa_slice(ctx: LoweringContext, x: Value, start: Sequence[int], size: Sequence[int]) -> Value:
    t = ctx.type_of(x)
    if list(start) == [0] * t.rank and tuple(size) == tuple(t.shape):
        return x
    return ctx.tosa.slice(x, ctx.shape(start), ctx.shape(size), types=[t.with_shape(tuple(size))])


def slice_axis(ctx: LoweringContext, x: Value, axis: int, start: int, size: int) -> Value:
    t = ctx.type_of(x)
    begin = [0] * t.rank
    begin[axis] = start
    shape = list(t.shape)
    shape[axis] = size
    return tosa_slice(ctx, x, begin, shape)


def product_tree(ctx: LoweringContext, x: Value, axis: int) -> Value:
    """Integer product along `axis` by halving (TOSA's REDUCE_PRODUCT is float only): multiply
    the two halves (the odd element rides along) until one slice is left. i32 MUL wraps as nn does."""
    while ctx.type_of(x).shape[axis] > 1:
        n = ctx.type_of(x).shape[axis]
        half = n // 2
        product = ctx.mul(slice_axis(ctx, x, axis, 0, half), slice_axis(ctx, x, axis, half, half))
        if n % 2:
            product = ctx.tosa.concat([product, slice_axis(ctx, x, axis, n - 1, 1)], axis=axis)
        x = product
    return x


def concat(ctx: LoweringContext, xs: Sequence[Value], axis: int) -> Value:
    """CONCAT of any number of tensors (groups of at most 64, the level's tensor list size)."""
    xs = list(xs)
    if len(xs) == 1:
        return xs[0]
    while len(xs) > MAX_CONCAT_OPERANDS:
        xs = [concat(ctx, xs[i:i + MAX_CONCAT_OPERANDS], axis) for i in range(0, len(xs), MAX_CONCAT_OPERANDS)]
    return ctx.tosa.concat(xs, axis=axis)


def tile(ctx: LoweringContext, x: Value, multiples: Sequence[int]) -> Value:
    t = ctx.type_of(x)
    if all(m == 1 for m in multiples):
        return x
    shape = tuple(d * m for d, m in zip(t.shape, multiples))
    return ctx.tosa.tile(x, ctx.shape(multiples), types=[t.with_shape(shape)])


def reverse(ctx: LoweringContext, x: Value, axis: int) -> Value:
    if ctx.type_of(x).shape[axis] == 1:
        return x
    return ctx.tosa.reverse(x, axis=axis)


def pad_constant(ctx: LoweringContext, x: Value, pads: Sequence[int], value: float | int | bool) -> Value:
    """One TOSA PAD of x's rank with a constant fill. (TOSA 1.0 limits PAD's input rank to the level's
    MAX_RANK, not the length of its padding shape; MLIR 22's tosa-validate wrongly applies MAX_RANK to
    that length, which `mlir_emitter.validate` accounts for.)"""
    if not any(pads):
        return x
    t = ctx.type_of(x)
    out = tuple(d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(t.shape))
    return ctx.tosa.pad(x, ctx.shape(pads), ctx.zero_point(t.dtype, value), types=[t.with_shape(out)])


def tile_axis(ctx: LoweringContext, x: Value, axis: int, count: int) -> Value:
    """x repeated `count` times along `axis`."""
    multiples = [1] * ctx.type_of(x).rank
    multiples[axis] = count
    return tile(ctx, x, multiples)


def repeat_index(ctx: LoweringContext, x: Value, axis: int, index: int, count: int) -> Value:
    """x[index] along `axis`, `count` (at least 1) times."""
    return tile_axis(ctx, slice_axis(ctx, x, axis, index, 1), axis, count)


def take_static(ctx: LoweringContext, x: Value, axis: int, indices: Sequence[int]) -> Value:
    """x indexed along `axis` by a compile-time index list, as runs of consecutive indices: an
    ascending run is a SLICE, a descending one a reversed SLICE, a repeated index a tiled one."""
    pieces = []
    i = 0
    n = len(indices)
    while i < n:
        j = i + 1
        step = indices[j] - indices[i] if j < n else 1
        if step not in (-1, 0, 1):
            step = 1
        while j < n and indices[j] - indices[j - 1] == step:
            j += 1
        first, count = indices[i], j - i
        if step == 0:
            piece = repeat_index(ctx, x, axis, first, count)
        elif step == 1:
            piece = slice_axis(ctx, x, axis, first, count)
        else:
            piece = reverse(ctx, slice_axis(ctx, x, axis, first - count + 1, count), axis)
        pieces.append(piece)
        i = j
    return concat(ctx, pieces, axis)


def operands_quantized_as_result(ctx: LoweringContext) -> str | None:
    """Data movement keeps stored values: every operand is quantized as the result is (others need a
    RESCALE, which the quantized rules add)."""
    out = ctx.nn_out_types[0].quant
    if any(isinstance(t, TensorType) and t.quant != out for t in ctx.nn_in_types):
        return "operands quantized differently from the result need a RESCALE (quantized lowering)"
    return None


# ------------------------------------------------------------------------------ rules
@rule("nn.broadcast_to")
def broadcast_to(ctx: LoweringContext) -> Value:
    shape = [int(d) for d in ctx.attrs["shape"]]
    x = ctx.to_rank(ctx.operand("x"), len(shape))
    multiples = [o if i == 1 else 1 for i, o in zip(ctx.type_of(x).shape, shape)]
    return tile(ctx, x, multiples)


@rule("nn.concat", constraints=(operands_quantized_as_result,))
def concat_rule(ctx: LoweringContext) -> Value:
    return concat(ctx, ctx.operands, int(ctx.attrs["axis"]))


@rule("nn.split")
def split(ctx: LoweringContext) -> list[Value]:
    axis = int(ctx.attrs["axis"])
    starts = np.concatenate([[0], np.cumsum(ctx.attrs["sizes"])[:-1]])
    return [slice_axis(ctx, ctx.operand("x"), axis, int(s), int(n)) for s, n in zip(starts, ctx.attrs["sizes"])]


@rule("nn.slice")
def slice_rule(ctx: LoweringContext) -> Value:
    return tosa_slice(ctx, ctx.operand("x"), [int(b) for b in ctx.attrs["begin"]], [int(s) for s in ctx.attrs["size"]])


def _stride_axis(ctx: LoweringContext, x: Value, axis: int, count: int, stride: int) -> Value:
    """Every `stride`-th element along `axis` from index 0, `count` of them: pad the axis to
    count*stride, view it as (count, stride) with the other axes folded (rank 4 at most), keep
    column 0."""
    t = ctx.type_of(x)
    span = count * stride
    have = t.shape[axis]
    if have > span:
        x = slice_axis(ctx, x, axis, 0, span)
    elif have < span:
        padding = [0] * (2 * t.rank)
        padding[2 * axis + 1] = span - have
        x = pad_constant(ctx, x, padding, False if t.dtype == "i1" else 0)
    outer = int(np.prod(t.shape[:axis], dtype=np.int64))
    inner = int(np.prod(t.shape[axis + 1:], dtype=np.int64))
    folded = ctx.reshape(x, (outer, count, stride, inner))
    picked = tosa_slice(ctx, folded, [0, 0, 0, 0], [outer, count, 1, inner])
    shape = list(t.shape)
    shape[axis] = count
    return ctx.reshape(picked, shape)


def selects_something(ctx: LoweringContext, axis: int, visited: range) -> str | None:
    """A strided slice selects at least one element along every axis: TOSA has no empty tensors."""
    if len(visited) == 0:
        return f"strided_slice selecting nothing along axis {axis} (TOSA has no empty tensors)"
    return None


def _visited(ctx: LoweringContext) -> list[range]:
    """The indices Python slicing visits along each axis."""
    return [range(*slice(int(b), None if (s < 0 and e < 0) else int(e), int(s)).indices(d))
            for b, e, s, d in zip(ctx.attrs["begin"], ctx.attrs["end"], ctx.attrs["strides"], ctx.in_types[0].shape)]


def _strides_spatial_int8(ctx: LoweringContext) -> bool:
    """An int8 NHWC slice striding H or W: one window op can subsample both (the forms below)."""
    t = ctx.in_types[0]
    return (t.rank == 4 and t.dtype == "i8"
            and any(len(v) > 1 and abs(v.step) > 1 for v in _visited(ctx)[1:3]))


def _strided_slice(ctx: LoweringContext) -> tuple[Value, list[int]]:
    """Python slicing per axis: the indices it visits are range(first, ..., step); a negative
    step reverses the axis first (and mirrors the first index). Strides of H and W of int8 NHWC data
    are left to one window op: x is then cut to their extent, and their strides are returned."""
    x = ctx.operand("x")
    shape = ctx.type_of(x).shape
    plan = []
    for axis, visited in enumerate(_visited(ctx)):
        ctx.check(selects_something, axis, visited)
        plan.append((axis, visited))
    spatial = [1, 1]  # strides of H and W left to one window op (`_subsample_spatial`)
    window: tuple[list[int], list[int | None]] = ([0] * len(shape), [None] * len(shape))  # their slice
    for axis, visited in plan:
        first, step, count = visited[0], visited.step, len(visited)
        if step < 0:
            x = reverse(ctx, x, axis)
            first, step = shape[axis] - 1 - first, -step
        if count == 1:
            step = 1
        extent = min(shape[axis] - first, (count - 1) * step + 1)
        if step > 1 and axis in (1, 2) and len(shape) == 4 and ctx.type_of(x).dtype == "i8":
            spatial[axis - 1] = step  # its slice joins the other spatial axis's: one SLICE
            window[0][axis], window[1][axis] = first, extent
            continue
        x = slice_axis(ctx, x, axis, first, extent)
        if step > 1:
            x = _stride_axis(ctx, x, axis, count, step)
    if spatial != [1, 1]:
        x = tosa_slice(ctx, x, window[0], [d if e is None else e for d, e in zip(ctx.type_of(x).shape, window[1])])
    return x, spatial


# The --target preset's forms of striding H and W (lowering/npu_target.py), then the general one
@rule("nn.strided_slice", checks=(selects_something,), benefit=20, when=_strides_spatial_int8,
      choice=("strided_slice_spatial", "max_pool2d"))
def strided_slice_max_pool(ctx: LoweringContext) -> Value:
    """H and W strided by a MAX_POOL2D of 1x1 windows (the maximum of one: the stored integers, no RESCALE)."""
    x, spatial = _strided_slice(ctx)
    return ctx.tosa.max_pool2d(x, kernel=[1, 1], stride=spatial, pad=[0, 0, 0, 0])


@rule("nn.strided_slice", checks=(selects_something,), benefit=10, when=_strides_spatial_int8,
      choice=("strided_slice_spatial", "depthwise_conv2d"))
def strided_slice_depthwise(ctx: LoweringContext) -> Value:
    """H and W strided by one DEPTHWISE_CONV2D (`_subsample_spatial`)."""
    return _subsample_spatial(ctx, *_strided_slice(ctx))


@rule("nn.strided_slice", checks=(selects_something,))
def strided_slice(ctx: LoweringContext) -> Value:
    """Each strided axis a RESHAPE into (count, stride) and a SLICE keeping index 0 (`_stride_axis`)."""
    x, spatial = _strided_slice(ctx)
    for axis, step in ((1, spatial[0]), (2, spatial[1])):
        if step > 1:
            x = _stride_axis(ctx, x, axis, (ctx.type_of(x).shape[axis] - 1) // step + 1, step)
    return x


def _subsample_spatial(ctx: LoweringContext, x: Value, stride: Sequence[int]) -> Value:
    """Every stride-th row and column of int8 NHWC x from the first, the last one included (x is
    already cut to (count - 1) * stride + 1): a DEPTHWISE_CONV2D of weight 1, zero points 0 and
    stride `stride` (its 1x1 windows tile that extent exactly), whose i32 result is the stored
    integer, and a RESCALE by 1 (2**30 >> 30: exact). Vela runs it as one strided read with the
    RESCALE fused, where the RESHAPE + SLICE form costs a copy per axis."""
    from ..fixed_point.rescale import rescale

    channels = ctx.type_of(x).shape[3]
    operands = [x, ctx.const(np.ones((1, 1, channels, 1), np.int8), "i8"),
                ctx.const(np.zeros(channels, np.int64), "i32"), ctx.zero_point("i8"), ctx.zero_point("i8")]
    picked = ctx.tosa.depthwise_conv2d(*operands, stride=list(stride), pad=[0, 0, 0, 0],
                                       dilation=[1, 1], acc_type="i32")
    return rescale(ctx, picked, 1.0, "i8")


def _fill_value(ctx: LoweringContext, dtype: str, value: float):
    if dtype == "i1":
        return bool(value)
    if dtype in ("f32", "f16", "bf16"):
        return float(value)
    return int(value)


def pad_mode_known(ctx: LoweringContext) -> str | None:
    """The pad mode is constant, reflect, symmetric or edge."""
    if ctx.attrs["mode"] not in ("constant", "reflect", "symmetric", "edge"):
        return f"pad mode {ctx.attrs['mode']!r}"
    return None


def constant_pad_unquantized(ctx: LoweringContext) -> str | None:
    """Constant padding's float rule pads unquantized tensors (the quantized rule encodes the fill value)."""
    if ctx.attrs["mode"] == "constant" and ctx.nn_type("x").quant is not None:
        return "constant padding of quantized tensors (the fill value needs quantizing)"
    return None


def reflected_dimensions_wider_than_one(ctx: LoweringContext) -> str | None:
    """Reflect padding pads no dimension of size 1 (there is nothing to reflect)."""
    pads = [int(p) for p in ctx.attrs["pads"]]
    if ctx.attrs["mode"] == "reflect" and any(
            d == 1 and (pads[2 * axis] or pads[2 * axis + 1]) for axis, d in enumerate(ctx.type_of(ctx.operand("x")).shape)):
        return "reflect padding of a size-1 dimension (nothing to reflect)"
    return None


@rule("nn.pad", constraints=(constant_pad_unquantized, pad_mode_known, reflected_dimensions_wider_than_one))
def pad(ctx: LoweringContext) -> Value:
    x = ctx.operand("x")
    t = ctx.type_of(x)
    pads = [int(p) for p in ctx.attrs["pads"]]
    mode = ctx.attrs["mode"]
    if mode == "constant":
        value = _fill_value(ctx, t.dtype, ctx.attrs["value"])
        if t.dtype not in ("f32", "f16", "bf16", "i1"):
            info = np.iinfo(ctx.nn_type("x").numpy_dtype)
            value = int(np.clip(value, info.min, info.max))
        return pad_constant(ctx, x, pads, value) if any(pads) else x
    for axis, d in enumerate(t.shape):
        before, after = pads[2 * axis], pads[2 * axis + 1]
        if before or after:
            x = _pad_axis(ctx, x, axis, d, before, after, mode)
    return x


def _pad_axis(ctx: LoweringContext, x: Value, axis: int, d: int, before: int, after: int,
              mode: Literal["edge", "reflect", "symmetric"]) -> Value:
    """One axis of an edge / reflect / symmetric pad (numpy's modes, which are nn's), in a number of
    ops that does not grow with the pad: edge is two tiled slices around x; the reflecting modes
    repeat with period 2(d-1) or 2d, so one period is gathered from slices and then tiled."""
    if mode == "edge":
        head = [repeat_index(ctx, x, axis, 0, before)] if before else []
        tail = [repeat_index(ctx, x, axis, d - 1, after)] if after else []
        return concat(ctx, [*head, x, *tail], axis)
    total = before + d + after
    period = 2 * (d - 1) if mode == "reflect" else 2 * d
    if total <= 2 * period:  # at most a few slices: gather the whole index map directly
        return take_static(ctx, x, axis, [int(i) for i in np.pad(np.arange(d), (before, after), mode=mode)])
    phase = (np.arange(period) - before) % period  # position in the period of each output index
    mirrored = period - phase if mode == "reflect" else period - 1 - phase
    one_period = take_static(ctx, x, axis, [int(i) for i in np.where(phase < d, phase, mirrored)])
    return slice_axis(ctx, tile_axis(ctx, one_period, axis, -(-total // period)), axis, 0, total)


@rule("nn.tile")
def tile_rule(ctx: LoweringContext) -> Value:
    return tile(ctx, ctx.operand("x"), [int(m) for m in ctx.attrs["multiples"]])


@rule("nn.reverse")
def reverse_rule(ctx: LoweringContext) -> Value:
    x = ctx.operand("x")
    for axis in sorted(set(int(a) for a in ctx.attrs["axes"])):
        x = reverse(ctx, x, axis)
    return x


# ------------------------------------------------------------------------------ quantized: the stored integers move
def float_rule_on_carried(ctx: LoweringContext, out_types: Sequence[TensorType] | None = None) -> Value | list[Value]:
    """The op's float rule, seeing the carried types (signed, zero points moved) it really works on."""
    saved = ctx.nn_in_types, ctx.nn_out_types
    ctx.nn_in_types = [carried_type(t) for t in ctx.nn_in_types]
    ctx.nn_out_types = [carried_type(t) for t in (out_types or ctx.nn_out_types)]
    try:
        return ctx.apply(RULES[ctx.op_name])
    finally:
        ctx.nn_in_types, ctx.nn_out_types = saved


@rule(*ops_with("moves_data"), quantized=True)
def movement(ctx: LoweringContext) -> Value | list[Value]:
    """The float rule moves (or, for max pooling, selects) the stored integers; results quantized
    unlike the data operand are requantized (max commutes with the monotonic encoding)."""
    xq = q_in(ctx)
    x_type = carried_type(ctx.nn_in_types[0])
    # the float rule sees results quantized as the data operand: it only moves integers
    results = float_rule_on_carried(ctx, [TensorType(t.shape, x_type.dtype, x_type.quant) if t.quant is not None
                                          else t for t in ctx.nn_out_types])
    single = isinstance(results, Value)
    values = [results] if isinstance(results, Value) else list(results)
    out = []
    for value, t in zip(values, ctx.nn_out_types):
        yq = qinfo(t) if t.quant is not None else None
        if xq is not None and yq is not None and not same_quantization(xq, yq):
            require_per_tensor(ctx, xq, yq)
            value = requantize_value(ctx, value, xq, yq)
        out.append(value)
    return out[0] if single else out


@rule("nn.argmax", "nn.argmin", quantized=True)
def arg_extremum(ctx: LoweringContext) -> Value | list[Value]:
    """Positions of the largest (smallest) stored integers: the encoding is monotonic."""
    return float_rule_on_carried(ctx)


@rule("nn.pad", quantized=True)
def quantized_pad(ctx: LoweringContext) -> Value | list[Value]:
    """A constant pad fills with the pad value encoded in the tensor's quantization (legalize-armnn
    gives Arm NN's raw quantized pad value as the real value it stands for)."""
    xq, yq = q_in(ctx), q_out(ctx)
    if ctx.attrs["mode"] != "constant":
        return movement(ctx)
    assert xq is not None and yq is not None, "a constant pad between quantized and unquantized data"
    require_per_tensor(ctx, xq, yq)
    x = requantize_value(ctx, ctx.operand("x"), xq, yq)
    fill = int(encode(np.array([ctx.attrs["value"]], np.float32), yq)[0])
    return pad_constant(ctx, x, ctx.attrs["pads"], fill)


def concat_operands_quantized(ctx: LoweringContext) -> str | None:
    """A quantized concatenation's operands are all quantized (not mixed with float tensors)."""
    if any(q_in(ctx, k) is None for k in range(len(ctx.operands))):
        return "concatenation of quantized and float tensors"
    return None


@rule("nn.concat", quantized=True, constraints=(concat_operands_quantized,))
def quantized_concat(ctx: LoweringContext) -> Value:
    yq = q_out(ctx)
    assert yq is not None, "a concatenation of quantized tensors into an unquantized one"
    parts = []
    for k, x in enumerate(ctx.operands):
        xq = q_in(ctx, k)
        assert xq is not None  # concat_operands_quantized
        require_per_tensor(ctx, xq, yq)
        parts.append(requantize_value(ctx, x, xq, yq))
    return concat(ctx, parts, ctx.attrs["axis"])
