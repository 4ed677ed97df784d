"""The `canonicalize` pass: simplify `nn` graphs before lowering.

canonicalize = layout (sink and cancel transposes) -> the greedy driver with CANONICAL (below) and
registry folders -> cse -> dce (the driver runs once more when CSE merged something).

The patterns, each a small function registered for the ops it matches:
- remove-noop: an op that returns its operand unchanged (identity, reshape/cast/broadcast_to to
  the same type, identity transpose, zero pad, full slice, unit tile, one-operand concat,
  one-piece split, reverse or reduction over unit dims, unbounded clamp, 1x1 stride-1 pooling,
  same-size nearest resize). The result type must equal the operand type exactly.
- chains: reshape of reshape, transpose of transpose (a pair that cancels disappears), slice of
  slice, concat of concat along the same axis, double negation / logical or bitwise not.
- transposes: one that only moves unit dimensions becomes a reshape; one is hoisted above an
  elementwise op when that removes it (its operands' transposes exist already or are free).
- neutral operands: x*1, x/1, x-(+0.0), x+(-0.0) (and integer 0) are x; x+(+0.0) is not (it turns
  -0.0 into +0.0), so it stays.
- cropped transposed convolutions: a transpose_conv2d whose out_pad crops away all that some input rows
  or columns scatter into slices them off its input first (`crop_transpose_conv_input`).
- pads into windows: a constant pad of H, W that writes what the following conv2d /
  depthwise_conv2d / max_pool2d's own padding reads (the zero point; a value that never wins a max)
  becomes that op's `pad` attribute (`fold_pad_into_window`).
- activations as clamp: relu -> clamp(0, inf); maximum/minimum with a constant of one value ->
  clamp; clamp(clamp) -> one clamp when the ranges overlap (so min(max(x, 0), 6) becomes
  clamp(0, 6)). Bounds are real values, so quantized ops keep their real bounds.
- powers (power.py): nn.pow by a constant exponent 1, 2..8, -1, 0.5 or -0.5 becomes x itself,
  products, a reciprocal, sqrt(x) + 0.0 or an rsqrt.
- affine folding (affine_folding.py, tried last): batch_norm, and mul / add / sub of a
  per-output-channel constant, after a float conv or fully_connected with constant weights fold into
  its weights and bias; a batch norm with constant statistics otherwise becomes x * scale + shift.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nn2tosa.ir import Graph, TensorType, Value, op_def

from .affine_folding import AFFINE_FOLDING
from .power import POWER
from .cse import eliminate_common_subexpressions
from .dce import dce
from .layout import LayoutStats, compose, is_identity, moves_only_unit_dims, sink_transposes, transposed_type
from .manager import Statistics, register_pass
from .rewrite import (PatternSet, RewriteStats, apply_patterns_greedily, constant, new_op, operand_type, producer,
                      real_constant, replace, result_type, single_use, uniform_scalar)

CANONICAL = PatternSet("canonical")


def _transposed_constant(graph: Graph, data: np.ndarray, like: Value, perm: tuple[int, ...]) -> Value:
    node = graph.add_op("nn.constant", (), [transposed_type(graph.tensor_type(like), perm)],
                        {"value": np.ascontiguousarray(data.transpose(perm))}, graph.loc(like.node))
    return Value(node, 0)


# ------------------------------------------------------------------------------ ops that change nothing
def _unit_dims(graph: Graph, node: int, axes: list[int]) -> bool:
    shape = operand_type(graph, node).shape
    return all(shape[a] == 1 for a in axes)


_REDUCTIONS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all")
# op -> when it returns its operand 0 (checked on top of "the result type equals the operand type")
NOOPS: dict[str, Callable[[Graph, int], bool]] = {
    "nn.identity": lambda g, n: True,
    "nn.reshape": lambda g, n: True,
    "nn.cast": lambda g, n: True,
    "nn.broadcast_to": lambda g, n: True,
    "nn.requantize": lambda g, n: True,
    "nn.slice": lambda g, n: True,
    "nn.tile": lambda g, n: True,
    "nn.transpose": lambda g, n: is_identity(g.attrs(n)["perm"]),
    "nn.pad": lambda g, n: not any(g.attrs(n)["pads"]),
    "nn.strided_slice": lambda g, n: all(s == 1 for s in g.attrs(n)["strides"]),
    "nn.concat": lambda g, n: len(g.operands(n)) == 1,
    "nn.split": lambda g, n: len(g.types(n)) == 1,
    "nn.reverse": lambda g, n: _unit_dims(g, n, g.attrs(n)["axes"]),
    "nn.clamp": lambda g, n: g.attrs(n)["min"] == -math.inf and g.attrs(n)["max"] == math.inf,
    "nn.max_pool2d": lambda g, n: list(g.attrs(n)["kernel"]) == [1, 1] and not any(g.attrs(n)["pad"]),
    "nn.avg_pool2d": lambda g, n: (list(g.attrs(n)["kernel"]) == [1, 1] and not any(g.attrs(n)["pad"])
                                   and g.attrs(n)["divisor"] in (0, 1)),
    "nn.resize": lambda g, n: g.attrs(n)["mode"] == "nearest",
    **{f"nn.{r}": (lambda g, n: _unit_dims(g, n, g.attrs(n)["axes"])) for r in _REDUCTIONS},
}


@CANONICAL.pattern(*NOOPS)
def remove_noop(graph: Graph, node: int) -> bool:
    x = graph.operand(node, 0)
    if graph.types(node) != [graph.type_of(x)] or not NOOPS[graph.op(node)](graph, node):
        return False
    return replace(graph, node, x)


# ------------------------------------------------------------------------------ chains
@CANONICAL.pattern("nn.reshape")
def reshape_of_reshape(graph: Graph, node: int) -> bool:
    inner = producer(graph, graph.operand(node, 0), "nn.reshape")
    if inner is None:
        return False
    return replace(graph, node, new_op(graph, node, [graph.operand(inner, 0)]))


@CANONICAL.pattern("nn.transpose")
def transpose_of_transpose(graph: Graph, node: int) -> bool:
    inner = producer(graph, graph.operand(node, 0), "nn.transpose")
    if inner is None:
        return False
    perm = compose(tuple(graph.attrs(inner)["perm"]), tuple(graph.attrs(node)["perm"]))
    x = graph.operand(inner, 0)
    if is_identity(perm) and graph.type_of(x) == graph.types(node)[0]:
        return replace(graph, node, x)
    return replace(graph, node, new_op(graph, node, [x], {"perm": list(perm)}))


@CANONICAL.pattern("nn.transpose")
def transpose_to_reshape(graph: Graph, node: int) -> bool:
    """A transpose that only moves unit dimensions keeps the element order: it is a reshape."""
    x = graph.operand(node, 0)
    perm = tuple(graph.attrs(node)["perm"])
    if is_identity(perm) or not moves_only_unit_dims(operand_type(graph, node).shape, perm):
        return False
    out = result_type(graph, node)
    return replace(graph, node, new_op(graph, node, [x], {"shape": list(out.shape)}, op="nn.reshape"))


@CANONICAL.pattern("nn.transpose")
def hoist_transpose_into_operands(graph: Graph, node: int) -> bool:
    """transpose(f(a, b)) -> f(a', b') for an elementwise f read only by this transpose, when every
    operand's transpose is free: a constant (transposed now), one element, a transpose it cancels, or
    a transpose of it the graph already has. One transpose fewer, none added (the layout pass sinks
    transposes; this catches what sinking cannot: a shared input transposed on one path, not yet on
    another)."""
    perm = tuple(graph.attrs(node)["perm"])
    v = graph.operand(node, 0)
    u = v.node
    d = op_def(graph.op(u))
    if d is None or "elementwise" not in d.traits or not single_use(graph, v) or len(graph.types(u)) != 1:
        return False
    plan: list[Value | np.ndarray] = []
    for w in graph.operands(u):
        t = graph.type_of(w)
        inner = producer(graph, w, "nn.transpose")
        if not isinstance(t, TensorType):  # u need not be an nn op: another dialect's may read a shape
            return False
        if t.num_elements == 1 and t.rank <= len(perm):
            plan.append(w)
        elif t.rank != len(perm):
            return False
        elif (data := constant(graph, w)) is not None:
            plan.append(data)
        elif inner is not None and is_identity(compose(tuple(graph.attrs(inner)["perm"]), perm)):
            plan.append(graph.operand(inner, 0))
        else:
            existing = next((use.node for use in graph.users(w) if graph.op(use.node) == "nn.transpose"
                             and tuple(graph.attrs(use.node)["perm"]) == perm), None)
            if existing is None:
                return False
            plan.append(Value(existing, 0))
    operands = [item if isinstance(item, Value) else _transposed_constant(graph, item, w, perm)
                for item, w in zip(plan, graph.operands(u))]
    return replace(graph, node, new_op(graph, u, operands, types=graph.types(node)))


@CANONICAL.pattern("nn.slice")
def slice_of_slice(graph: Graph, node: int) -> bool:
    inner = producer(graph, graph.operand(node, 0), "nn.slice")
    if inner is None:
        return False
    begin = [a + b for a, b in zip(graph.attrs(inner)["begin"], graph.attrs(node)["begin"])]
    attrs = {"begin": begin, "size": list(graph.attrs(node)["size"])}
    return replace(graph, node, new_op(graph, node, [graph.operand(inner, 0)], attrs))


@CANONICAL.pattern("nn.concat")
def concat_of_concat(graph: Graph, node: int) -> bool:
    axis = graph.attrs(node)["axis"]
    operands, flattened = [], False
    for v in graph.operands(node):
        inner = producer(graph, v, "nn.concat")
        if (inner is not None and graph.attrs(inner)["axis"] == axis and single_use(graph, v)
                and graph.tensor_type(v).quant == result_type(graph, node).quant):
            operands.extend(graph.operands(inner))
            flattened = True
        else:
            operands.append(v)
    return flattened and replace(graph, node, new_op(graph, node, operands))


_INVOLUTIONS = ("nn.neg", "nn.logical_not", "nn.bitwise_not")


@CANONICAL.pattern(*_INVOLUTIONS)
def double_involution(graph: Graph, node: int) -> bool:
    inner = producer(graph, graph.operand(node, 0), graph.op(node))
    if inner is None:
        return False
    x = graph.operand(inner, 0)
    return graph.type_of(x) == graph.types(node)[0] and replace(graph, node, x)


# ------------------------------------------------------------------------------ neutral operands
def _is_neutral(array: np.ndarray | None, value: float, negative_zero: bool | None = None) -> bool:
    if array is None or not np.all(array == value):
        return False
    if negative_zero is None or array.dtype.kind != "f":
        return True
    return bool(np.all(np.signbit(array) == negative_zero))


# op -> (operand positions the neutral constant may take, its value, sign bit required of a float zero)
_NEUTRAL = {
    "nn.mul": ((0, 1), 1.0, None),
    "nn.div": ((1,), 1.0, None),
    "nn.add": ((0, 1), 0.0, True),  # only -0.0 leaves every float unchanged
    "nn.sub": ((1,), 0.0, False),  # x - (+0.0) == x, -0.0 included
}


@CANONICAL.pattern(*_NEUTRAL)
def drop_neutral_operand(graph: Graph, node: int) -> bool:
    positions, value, negative_zero = _NEUTRAL[graph.op(node)]
    out = result_type(graph, node)
    if out.quant is not None:
        return False
    for k in positions:
        x = graph.operand(node, 1 - k)
        c = graph.operand(node, k)
        if graph.type_of(x) == out and graph.tensor_type(c).quant is None and \
                _is_neutral(constant(graph, c), value, negative_zero):
            return replace(graph, node, x)
    return False


# ------------------------------------------------------------------------------ pads into windows
# What padding the window op does itself reads: (fill of a float input, stored fill of a quantized one)
_WINDOW_PAD_FILL: dict[str, Callable[[TensorType], tuple[float, int]]] = {
    # a convolution's padding adds nothing: real 0 (the input zero point, TOSA's input_zp)
    "nn.conv2d": lambda t: (0.0, t.quant.zero_point if t.quant else 0),
    "nn.depthwise_conv2d": lambda t: (0.0, t.quant.zero_point if t.quant else 0),
    # max pooling's padding never wins: -inf, or the integer minimum
    "nn.max_pool2d": lambda t: (-math.inf, _INT_MIN.get(t.dtype, 0)),
}
_INT_MIN: dict[str, int] = {"i8": -128, "ui8": 0, "i16": -32768, "ui16": 0, "i32": -(1 << 31)}


def _stored_fill(t: TensorType, value: float) -> float | int:
    """What a constant pad with real `value` writes into a tensor of type `t` (quantized: the
    stored integer, rounded half away from zero and clamped as the quantized pad rule encodes it)."""
    if t.quant is None or math.isnan(value) or t.dtype not in _INT_MIN:
        return value  # (NaN equals no fill: nothing folds)
    lo, hi = _INT_MIN[t.dtype], {"i8": 127, "ui8": 255, "i16": 32767, "ui16": 65535, "i32": (1 << 31) - 1}[t.dtype]
    with np.errstate(all="ignore"):
        scaled = float(np.float32(value) / np.float32(t.quant.scale))
    if not math.isfinite(scaled):
        return lo if scaled < 0 else hi
    return int(np.clip(math.copysign(math.floor(abs(scaled) + 0.5), scaled) + t.quant.zero_point, lo, hi))


def _never_above(graph: Graph, x: Value, value: float) -> bool:
    """Every element of x is at least `value` (x is a clamp's result with min >= value)."""
    clamp = producer(graph, x, "nn.clamp")
    return clamp is not None and graph.attrs(clamp)["min"] >= value


@CANONICAL.pattern(*_WINDOW_PAD_FILL)
def fold_pad_into_window(graph: Graph, node: int) -> bool:
    """A constant pad of H and W only, read by nothing else, becomes the conv2d / depthwise_conv2d /
    max_pool2d's own padding when it writes what that padding reads: the input zero point (real 0)
    for a convolution; for max pooling a value that never wins (the lowest value, or a fill no
    element is below: the input is a clamp with min >= fill), with the padding staying under the
    kernel so every window keeps a real element. avg_pool2d is left alone: the padding it counts
    is padded explicitly again at lowering (TOSA leaves padding out of the count), so nothing is won."""
    pad = producer(graph, graph.operand(node, 0), "nn.pad")
    if pad is None or not single_use(graph, graph.operand(node, 0)):
        return False
    attrs, x = graph.attrs(pad), graph.operand(pad, 0)
    pads, x_type, padded = list(attrs["pads"]), graph.tensor_type(x), result_type(graph, pad)
    if (attrs["mode"] != "constant" or len(pads) != 8 or any(pads[:2]) or any(pads[6:])
            or x_type.dtype != padded.dtype or x_type.quant != padded.quant
            or (x_type.quant is not None and x_type.quant.axis is not None)):
        return False
    op = graph.op(node)
    real_fill, stored_fill = _WINDOW_PAD_FILL[op](x_type)
    fill = attrs["value"]
    writes = _stored_fill(x_type, fill)
    if op == "nn.max_pool2d":
        wins_never = writes == stored_fill if x_type.quant is not None else fill == real_fill
        if not (wins_never or _never_above(graph, x, fill)):
            return False
    elif writes != (stored_fill if x_type.quant is not None else real_fill):
        return False
    window = dict(graph.attrs(node))
    merged = [p + q for p, q in zip(window["pad"], pads[2:6])]
    if op == "nn.max_pool2d":
        kh, kw = window["kernel"]
        if list(window.get("dilation", [1, 1])) != [1, 1] or max(merged[:2]) >= kh or max(merged[2:]) >= kw:
            return False
    window["pad"] = merged
    return replace(graph, node, new_op(graph, node, [x, *graph.operands(node)[1:]], window))


# ------------------------------------------------------------------------------ cropped transposed convolutions
def _rows_reaching(size: int, kernel: int, stride: int, before: int, out: int) -> tuple[int, int]:
    """Along one axis of a transpose_conv2d: the first and last input row whose scatter (full-output
    rows [i*stride, i*stride + kernel)) reaches the rows the result keeps (full rows [-before, out - before))."""
    keep_from, keep_to = -before, out - before
    first = max(0, -((kernel - 1 - keep_from) // stride))  # ceil((keep_from - kernel + 1) / stride)
    last = min(size - 1, (keep_to - 1) // stride)
    return first, last


@CANONICAL.pattern("nn.transpose_conv2d")
def crop_transpose_conv_input(graph: Graph, node: int) -> bool:
    """A transpose_conv2d whose out_pad crops away every row (or column) some input rows scatter
    into reads only the rows that reach its result: a slice of the input first, out_pad shifted by
    the rows dropped. The result is the same; the TOSA op (and the NPU compiler, and the reference
    model) no longer builds a full output of which it keeps a sliver (a 46,341-row input cropped to
    5 rows took Vela minutes)."""
    x = graph.operand(node, 0)
    x_type, w_type, y_type = graph.tensor_type(x), operand_type(graph, node, 1), result_type(graph, node)
    if any(d < 0 for d in (*x_type.shape, *y_type.shape)):
        return False
    attrs = dict(graph.attrs(node))
    out_pad, stride = list(attrs["out_pad"]), attrs["stride"]
    begin, size = [0] * 4, list(x_type.shape)
    for axis in (1, 2):  # H, W
        i = axis - 1
        first, last = _rows_reaching(x_type.shape[axis], w_type.shape[axis], stride[i], out_pad[2 * i],
                                     y_type.shape[axis])
        if first > last:  # no input row reaches the result: it is all bias, left to the lowering
            return False
        kept = last - first + 1
        out_pad[2 * i] += first * stride[i]
        out_pad[2 * i + 1] = y_type.shape[axis] - ((kept - 1) * stride[i] + w_type.shape[axis]) - out_pad[2 * i]
        begin[axis], size[axis] = first, kept
    if size == list(x_type.shape):
        return False
    trimmed = new_op(graph, node, [x], {"begin": begin, "size": size}, op="nn.slice",
                     types=[x_type.with_shape(tuple(size))])
    attrs["out_pad"] = out_pad
    return replace(graph, node, new_op(graph, node, [trimmed, *graph.operands(node)[1:]], attrs))


# ------------------------------------------------------------------------------ activations as clamp
def _clamp(graph: Graph, like: int, x: Value, low: float, high: float) -> Value:
    return new_op(graph, like, [x], {"min": float(low), "max": float(high)}, op="nn.clamp")


@CANONICAL.pattern("nn.relu")
def relu_to_clamp(graph: Graph, node: int) -> bool:
    return replace(graph, node, _clamp(graph, node, graph.operand(node, 0), 0.0, math.inf))


@CANONICAL.pattern("nn.maximum", "nn.minimum")
def bound_to_clamp(graph: Graph, node: int) -> bool:
    """maximum(x, c) / minimum(x, c) with a constant c of one (real) value that does not widen x."""
    out = result_type(graph, node)
    if out.dtype == "i1":
        return False
    for k in (0, 1):
        x, c = graph.operand(node, k), graph.operand(node, 1 - k)
        bound = uniform_scalar(real_constant(graph, c))
        if bound is None or graph.tensor_type(x).shape != out.shape:
            continue
        if graph.op(node) == "nn.maximum":
            return replace(graph, node, _clamp(graph, node, x, bound, math.inf))
        return replace(graph, node, _clamp(graph, node, x, -math.inf, bound))
    return False


@CANONICAL.pattern("nn.clamp")
def clamp_of_clamp(graph: Graph, node: int) -> bool:
    inner = producer(graph, graph.operand(node, 0), "nn.clamp")
    if inner is None:
        return False
    x = graph.operand(inner, 0)
    if graph.type_of(x) != graph.types(inner)[0]:  # a requantizing inner clamp rounds in between
        return False
    low = max(graph.attrs(inner)["min"], graph.attrs(node)["min"])
    high = min(graph.attrs(inner)["max"], graph.attrs(node)["max"])
    if low > high:  # disjoint ranges: the result is a constant, which is not this pattern's business
        return False
    return replace(graph, node, _clamp(graph, node, x, low, high))


# ------------------------------------------------------------------------------ affine folding into convolutions
# batch norms and per-channel mul / add / sub folded into weights (affine_folding.py), tried after the above
for _pattern in [*POWER, *AFFINE_FOLDING]:
    CANONICAL.add(_pattern)


# ------------------------------------------------------------------------------ the pass
@dataclass
class CanonicalizeStats:
    layout: LayoutStats
    rewrites: list[RewriteStats] = field(default_factory=list)
    merged: int = 0  # ops CSE merged

    @property
    def work(self) -> int:
        """Ops visited and patterns tried by every stage: the measure of the pass's cost."""
        return self.layout.visited + sum(r.work for r in self.rewrites)

    def statistics(self) -> Statistics:
        """Rewrites by pattern name, "constant-fold" and "cse" counts (what the conversion report lists)."""
        counts: Statistics = {}
        for r in self.rewrites:
            for pattern, n in r.rewrites.items():
                counts[pattern] = counts.get(pattern, 0) + n
            if r.folds:
                counts["constant-fold"] = counts.get("constant-fold", 0) + r.folds
        if self.merged:
            counts["cse"] = counts.get("cse", 0) + self.merged
        return counts


def canonicalize_graph(graph: Graph, patterns: PatternSet = CANONICAL) -> CanonicalizeStats:
    """The canonicalize pipeline on one graph (in place); returns what each stage did."""
    stats = CanonicalizeStats(sink_transposes(graph))
    stats.rewrites.append(apply_patterns_greedily(graph, patterns))
    stats.merged = eliminate_common_subexpressions(graph)
    if stats.merged:
        stats.rewrites.append(apply_patterns_greedily(graph, patterns))
    dce(graph)
    return stats


@register_pass("canonicalize")
def canonicalize(graph: Graph) -> Statistics:
    """Sink transposes, fold constants and batch norms, fuse activations into clamps, remove no-ops, CSE, DCE."""
    return canonicalize_graph(graph).statistics()
