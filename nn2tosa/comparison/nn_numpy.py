"""A numpy reference evaluator for graphs of `nn` ops: the tests' reference and `compare`'s float one.

Written from the semantics each op's doc states in nn2tosa/dialects/nn/, and deliberately
independent of the code under test: it uses neither the dialect's folders nor its type inference
nor any pass. Use it to check that a rewrite keeps a graph's meaning:

    before = evaluate(graph, inputs)        # inputs: {name: array} or a list in input order
    PassManager.from_names("canonicalize").run(graph)
    np.testing.assert_allclose(evaluate(graph, inputs)[0], before[0], rtol=1e-5)

Numbers: every op reads its operands as real values in float64 (integers as int64, booleans as
bool; quantized tensors dequantized: real = scale * (stored - zero_point), per axis when the type
says so), computes, and rounds to its result type: floats to their dtype (fp16/bf16 rounding
included), integers wrap, quantized results are quantize(real) = clamp(round_half_even(real /
scale) + zero_point). This is the "real-valued" semantics the dialect documents for quantized
ops (clamp bounds and pad values are real), so quantize/dequantize/requantize are identities on
real values. Inputs and outputs are in storage form (quantized ones as their integers, bf16 as
its raw uint16 bits).

`EVALUATORS` maps op names to functions `(attrs, operands, result types) -> result(s)`;
`supported_ops()` lists them. The integer LSTM cells, defined by their integers, are computed by the
kernel models of tests/lstm_kernels.py on the stored values: tests/nn_reference.py registers them
(their evaluators also get the operand types: INTEGER_EVALUATORS).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import product
from typing import Any, cast

import numpy as np

from nn2tosa import limits
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Value

Evaluator = Callable[[dict[str, Any], list[np.ndarray], list[TensorType]], "np.ndarray | list[np.ndarray]"]
EVALUATORS: dict[str, Evaluator] = {}
INTEGER_EVALUATORS: set[str] = set()  # called as fn(attrs, operands, result types, operand types)


def op(*names: str) -> Callable[[Evaluator], Evaluator]:
    def register(fn: Evaluator) -> Evaluator:
        for name in names:
            EVALUATORS[name] = fn
        return fn

    return register


def supported_ops() -> set[str]:
    return set(EVALUATORS)


# ------------------------------------------------------------------------------ storage <-> real values
def _quant_broadcast(values: tuple, axis: int | None, rank: int) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if axis is None:
        return array.reshape(())
    return array.reshape((-1,) + (1,) * (rank - 1 - axis))


def to_real(stored: np.ndarray, t: TensorType) -> np.ndarray:
    """Storage form -> what ops compute on."""
    stored = np.asarray(stored)
    if t.quant is not None:
        q = t.quant
        return (stored.astype(np.float64) - _quant_broadcast(q.zero_points, q.axis, stored.ndim)) * \
            _quant_broadcast(q.scales, q.axis, stored.ndim)
    if t.dtype == "bf16":
        return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if t.dtype in ("f64", "f32", "f16"):
        return stored.astype(np.float64)
    if t.dtype == "i1":
        return stored.astype(bool)
    if t.dtype.startswith("f8"):
        raise NotImplementedError("fp8 tensors")
    return stored.astype(np.int64) if t.dtype != "ui64" else stored.astype(np.uint64)


def to_storage(real: np.ndarray, t: TensorType) -> np.ndarray:
    """What ops computed -> the storage form of type t."""
    real = np.asarray(real)
    dtype = t.numpy_dtype
    if t.quant is not None:
        q = t.quant
        scaled = real.astype(np.float64) / _quant_broadcast(q.scales, q.axis, real.ndim)
        # halves round away from zero, as Arm NN's Quantize does (nn.quantize's doc)
        stored = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5) + _quant_broadcast(q.zero_points, q.axis, real.ndim)
        info = np.iinfo(dtype)
        return np.clip(stored, info.min, info.max).astype(dtype).reshape(t.shape)
    if t.dtype == "bf16":  # round to nearest even on the float32 bits
        bits = real.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return np.where(np.isnan(real), 0x7FC0, rounded).astype(np.uint16).reshape(t.shape)
    if t.dtype == "i1":
        return real.astype(bool).reshape(t.shape)
    with np.errstate(all="ignore"):
        if dtype.kind in "iu" and real.dtype.kind == "f":  # integer results computed in float: truncate
            real = np.trunc(real)
        return real.astype(dtype).reshape(t.shape)


# ------------------------------------------------------------------------------ the walk
def evaluate(graph: Graph, inputs: dict[str, np.ndarray] | Sequence[np.ndarray], *, real: bool = False,
             visit: Callable[[Value, np.ndarray], None] | None = None) -> list[np.ndarray]:
    """Values of the graph's outputs (storage form) for `inputs` (storage form).

    `real=True` keeps every float and quantized value as the float64 it computes to, never rounded
    to its type (the float reference of nn2tosa.comparison: a quantized graph with every quantized
    tensor dequantized); outputs are then real values too. `visit(value, array)` sees each value as
    it is computed; values are dropped once their last reader has run (a large graph's are not all
    held at once)."""
    if not isinstance(inputs, dict):
        inputs = {graph.input_name(n): a for n, a in zip(graph.inputs, inputs)}
    values: dict[tuple[int, int], np.ndarray] = {}
    readers = {v: len(graph.users(v)) for n in graph.nodes() for v in graph.results(n)}
    outputs = {o.value for o in graph.outputs}

    def keep(value: Value, array: np.ndarray) -> None:
        if visit is not None:
            visit(value, array)
        if readers.get(value) or value in outputs:
            values[value] = array

    for node in graph.topological():
        name = graph.op(node)
        types = cast(list[TensorType], graph.types(node))  # (nn graphs hold tensors only)
        if name == INPUT_OP:
            data = np.asarray(inputs[graph.input_name(node)])
            if tuple(data.shape) != tuple(types[0].shape):
                raise ValueError(f"input {graph.input_name(node)} has shape {data.shape}, expected {types[0].shape}")
            stored = data.astype(types[0].numpy_dtype)
            keep(Value(node, 0), to_real(stored, types[0]) if real else stored)
            continue
        fn = EVALUATORS.get(name)
        if fn is None:
            raise NotImplementedError(f"no reference for {name}")
        operand_values = graph.operands(node)
        operands = [values[v] if real else to_real(values[v], graph.tensor_type(v)) for v in operand_values]
        extra = [[graph.tensor_type(v) for v in operand_values]] if name in INTEGER_EVALUATORS else []
        with np.errstate(all="ignore"):
            results = fn(graph.attrs(node), operands, types, *extra)
        if not isinstance(results, list):
            results = [results]
        for v in operand_values:
            readers[v] -= 1
            if not readers[v] and v not in outputs:
                values.pop(v, None)
        for i, (r, t) in enumerate(zip(results, types)):
            if tuple(np.shape(r)) != tuple(t.shape):
                raise AssertionError(f"reference {name} made shape {np.shape(r)}, its type says {t.shape}")
            if real:
                exact = t.quant is None and t.dtype not in ("f64", "f32", "f16", "bf16")
                keep(Value(node, i), to_real(to_storage(r, t), t) if exact else np.asarray(r, dtype=np.float64))
            else:
                keep(Value(node, i), to_storage(r, t))
    return [values[o.value] for o in graph.outputs]


# ------------------------------------------------------------------------------ constants and elementwise
@op("nn.constant")
def _constant(attrs, xs, types):
    return to_real(attrs["value"], types[0])


def _trunc_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f" or y.dtype.kind == "f":
        return x / y
    q = np.abs(x) // np.abs(y)
    return np.where((x < 0) != (y < 0), -q, q)


def _floor_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.floor(x / y) if x.dtype.kind == "f" else np.floor_divide(x, y)


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "maximum": np.maximum, "minimum": np.minimum,  # both propagate NaN
    "squared_difference": lambda x, y: (x - y) ** 2, "pow": np.power,
    "div": _trunc_div, "floor_div": _floor_div, "mod": np.mod, "fmod": np.fmod,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "shift_left": np.left_shift, "shift_right": np.right_shift,
    "equal": np.equal, "not_equal": np.not_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "less": np.less, "less_equal": np.less_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}
def _binary(fn: Callable[..., Any]) -> Evaluator:
    return lambda attrs, xs, types: fn(xs[0], xs[1])


def _unary(fn: Callable[..., Any]) -> Evaluator:
    return lambda attrs, xs, types: fn(xs[0])


for _name, _fn in _BINARY.items():
    op(f"nn.{_name}")(_binary(_fn))

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative, "abs": np.abs, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": lambda x: 1 / x, "square": lambda x: x * x, "exp": np.exp, "exp2": np.exp2, "log": np.log,
    "log2": np.log2, "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "floor": np.floor, "ceil": np.ceil,
    "round": np.round,  # half to even
    "sign": np.sign, "erf": _erf, "sigmoid": _sigmoid, "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0), "hard_swish": lambda x: x * np.minimum(np.maximum(x + 3, 0), 6) / 6,
    "softplus": lambda x: np.logaddexp(0, x), "bitwise_not": np.invert, "logical_not": np.logical_not,
    "identity": lambda x: x, "isnan": np.isnan, "isinf": np.isinf,
    # per-element conversions: on real values, the result type does the work
    "quantize": lambda x: x, "dequantize": lambda x: x, "requantize": lambda x: x,
}
for _name, _one in _UNARY.items():
    op(f"nn.{_name}")(_unary(_one))


@op("nn.clamp")
def _clamp(attrs, xs, types):
    return np.minimum(np.maximum(xs[0], attrs["min"]), attrs["max"])


@op("nn.leaky_relu")
def _leaky_relu(attrs, xs, types):
    return np.where(xs[0] >= 0, xs[0], attrs["alpha"] * xs[0])


@op("nn.elu")
def _elu(attrs, xs, types):
    return np.where(xs[0] > 0, xs[0], attrs["alpha"] * (np.exp(xs[0]) - 1))


@op("nn.gelu")
def _gelu(attrs, xs, types):
    x = xs[0]
    if attrs["approximate"] == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return x * 0.5 * (1 + _erf(x / math.sqrt(2)))


@op("nn.prelu")
def _prelu(attrs, xs, types):
    return np.where(xs[0] >= 0, xs[0], xs[1] * xs[0])


@op("nn.select")
def _select(attrs, xs, types):
    return np.where(xs[0], xs[1], xs[2])


@op("nn.cast")
def _cast(attrs, xs, types):
    x, t = xs[0], types[0]
    if t.dtype == "i1":
        return x != 0
    if t.is_float:  # bf16 (stored as uint16 bits) included: to_storage rounds to the type
        return x.astype(np.float64)
    dtype = t.numpy_dtype
    if x.dtype.kind == "f" and dtype.kind in "iu":  # round half to even, saturate
        info = np.iinfo(dtype)
        return np.clip(np.round(x), info.min, info.max)
    return x.astype(np.float64) if dtype.kind == "f" else x


# ------------------------------------------------------------------------------ shapes and data movement
@op("nn.reshape")
def _reshape(attrs, xs, types):
    return xs[0].reshape(attrs["shape"])


@op("nn.transpose")
def _transpose(attrs, xs, types):
    return np.transpose(xs[0], attrs["perm"])


@op("nn.broadcast_to")
def _broadcast_to(attrs, xs, types):
    return np.broadcast_to(xs[0], attrs["shape"])


@op("nn.concat")
def _concat(attrs, xs, types):
    return np.concatenate(xs, axis=attrs["axis"])


@op("nn.split")
def _split(attrs, xs, types):
    bounds = np.cumsum(attrs["sizes"])[:-1]
    return list(np.split(xs[0], bounds, axis=attrs["axis"]))


@op("nn.slice")
def _slice(attrs, xs, types):
    return xs[0][tuple(slice(b, b + s) for b, s in zip(attrs["begin"], attrs["size"]))]


@op("nn.strided_slice")
def _strided_slice(attrs, xs, types):
    index = []
    for b, e, s in zip(attrs["begin"], attrs["end"], attrs["strides"]):
        index.append(slice(b, None if (s < 0 and e < 0) else e, s))
    return xs[0][tuple(index)]


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "symmetric": "symmetric", "edge": "edge"}


@op("nn.pad")
def _pad(attrs, xs, types):
    pads = attrs["pads"]
    widths = [(pads[2 * i], pads[2 * i + 1]) for i in range(xs[0].ndim)]
    if attrs["mode"] == "constant":
        return np.pad(xs[0], widths, mode="constant", constant_values=attrs["value"])
    return np.pad(xs[0], widths, mode=_PAD_MODES[attrs["mode"]])


@op("nn.tile")
def _tile(attrs, xs, types):
    return np.tile(xs[0], attrs["multiples"])


@op("nn.reverse")
def _reverse(attrs, xs, types):
    return np.flip(xs[0], axis=tuple(attrs["axes"]))


@op("nn.gather")
def _gather(attrs, xs, types):
    return np.take(xs[0], xs[1].astype(np.int64), axis=attrs["axis"])


@op("nn.gather_nd")
def _gather_nd(attrs, xs, types):
    data, idx = xs[0], xs[1].astype(np.int64)
    return data[tuple(np.moveaxis(idx, -1, 0))]


@op("nn.scatter_nd")
def _scatter_nd(attrs, xs, types):
    data, idx, updates = xs[0].copy(), xs[1].astype(np.int64), xs[2]
    k = idx.shape[-1]
    flat_idx = idx.reshape(-1, k)
    flat_updates = updates.reshape((flat_idx.shape[0],) + data.shape[k:])
    combine = {"none": lambda old, new: new, "add": np.add, "mul": np.multiply, "max": np.maximum,
               "min": np.minimum}[attrs["reduction"]]
    for i, u in zip(flat_idx, flat_updates):  # in order: with duplicates the last one wins
        data[tuple(i)] = combine(data[tuple(i)], u)
    return data


# ------------------------------------------------------------------------------ reductions and normalization
_REDUCE: dict[str, Callable[..., Any]] = {
    "reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
    "reduce_prod": np.prod, "reduce_any": np.any, "reduce_all": np.all}
def _reduce(fn: Callable[..., Any]) -> Evaluator:
    return lambda attrs, xs, types: fn(xs[0], axis=tuple(attrs["axes"]), keepdims=attrs["keep_dims"])


for _name, _reducer in _REDUCE.items():
    op(f"nn.{_name}")(_reduce(_reducer))


def _arg_of(fn: Callable) -> Evaluator:
    def evaluate_arg(attrs, xs, types):
        return fn(xs[0], axis=attrs["axis"], keepdims=attrs["keep_dims"])  # the first extremum

    return evaluate_arg


EVALUATORS["nn.argmax"] = _arg_of(np.argmax)
EVALUATORS["nn.argmin"] = _arg_of(np.argmin)


@op("nn.softmax")
def _softmax(attrs, xs, types):
    z = attrs["beta"] * xs[0]
    e = np.exp(z - np.max(z, axis=attrs["axis"], keepdims=True))
    return e / np.sum(e, axis=attrs["axis"], keepdims=True)


@op("nn.log_softmax")
def _log_softmax(attrs, xs, types):
    z = attrs["beta"] * xs[0]
    shifted = z - np.max(z, axis=attrs["axis"], keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=attrs["axis"], keepdims=True))


@op("nn.layer_norm")
def _layer_norm(attrs, xs, types):
    x, axes = xs[0], tuple(attrs["axes"])
    mean = np.mean(x, axis=axes, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + attrs["epsilon"])
    if len(xs) > 1:
        y = y * xs[1]
    if len(xs) > 2:
        y = y + xs[2]
    return y


def _along(v: np.ndarray, axis: int, rank: int) -> np.ndarray:
    return v.reshape((-1,) + (1,) * (rank - 1 - axis))


@op("nn.batch_norm")
def _batch_norm(attrs, xs, types):
    x, mean, var, gamma, beta = xs
    axis = attrs["axis"]
    mean, var, gamma, beta = (_along(v, axis, x.ndim) for v in (mean, var, gamma, beta))
    return (x - mean) / np.sqrt(var + attrs["epsilon"]) * gamma + beta


@op("nn.instance_norm")
def _instance_norm(attrs, xs, types):
    x, gamma, beta = xs
    spatial = tuple(range(1, x.ndim - 1))
    mean = np.mean(x, axis=spatial, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=spatial, keepdims=True)
    return (x - mean) / np.sqrt(var + attrs["epsilon"]) * gamma + beta


@op("nn.l2_normalize")
def _l2_normalize(attrs, xs, types):
    x = xs[0]
    ss = np.sum(x * x, axis=tuple(attrs["axes"]), keepdims=True)
    return x / np.sqrt(np.maximum(ss, attrs["epsilon"]))


@op("nn.local_response_norm")
def _lrn(attrs, xs, types):
    x, r = xs[0], attrs["radius"]
    sq = x * x
    c = x.shape[-1]
    window = np.zeros_like(x)
    for i in range(c):
        window[..., i] = np.sum(sq[..., max(0, i - r): i + r + 1], axis=-1)
    return x / (attrs["bias"] + attrs["alpha"] * window) ** attrs["beta"]


# ------------------------------------------------------------------------------ windows: convolution and pooling
def _window_views(x: np.ndarray, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
                  pad: Sequence[int], fill: float = 0.0
                  ) -> tuple[list[tuple[tuple[int, ...], np.ndarray]], tuple[int, ...]]:
    """For x [N, S1..Sd, C]: [(kernel offset, x sampled at that offset for every output position, `fill`
    where the offset lands in the padding)], and the output shape [N, O1..Od, C]. Pads are [before1,
    after1, before2, after2, ...]. Offsets that land in the padding at every output position are left
    out: they read nothing but `fill`, and a window of 2**31 taps has almost all of them there."""
    d = len(kernel)
    sizes = x.shape[1:-1]
    out = [max((sizes[i] + pad[2 * i] + pad[2 * i + 1] - ((kernel[i] - 1) * dilation[i] + 1)) // stride[i] + 1, 0)
           for i in range(d)]
    per_axis = [_taps_reading_input(sizes[i], out[i], kernel[i], stride[i], dilation[i], pad[2 * i])
                for i in range(d)]
    views = []
    for taps in product(*per_axis):
        view = x
        for axis, (_, index) in enumerate(taps):
            view = _take_or_fill(view, index, 1 + axis, fill)
        views.append((tuple(j for j, _ in taps), view))
    return views, (x.shape[0], *out, x.shape[-1])


def _taps_reading_input(size: int, out: int, kernel: int, stride: int, dilation: int,
                        before: int) -> list[tuple[int, np.ndarray]]:
    """Along one axis: (tap j, the input index tap j reads at each output position) for the taps
    that read the input at one position at least. Output o's tap j reads o*stride - before + j*dilation."""
    starts = [o * stride - before for o in range(out)]
    taps: set[int] = set()
    for start in starts:
        first = max(0, -(start // dilation))  # smallest j with start + j*dilation >= 0
        last = min(kernel - 1, (size - 1 - start) // dilation)
        taps.update(range(first, last + 1))
    return [(j, np.array([start + j * dilation for start in starts], dtype=np.int64)) for j in sorted(taps)]


def _take_or_fill(x: np.ndarray, index: np.ndarray, axis: int, fill: float) -> np.ndarray:
    """x at `index` along `axis`, `fill` where the index is outside x (a strided view when it is inside
    and evenly spaced)."""
    size = x.shape[axis]
    inside = (index >= 0) & (index < size)
    if inside.all():
        step = int(index[1] - index[0]) if len(index) > 1 else 1
        if step > 0 and np.all(np.diff(index) == step):
            at = slice(int(index[0]), int(index[-1]) + 1, step)
            return x[(slice(None),) * axis + (at,)]
        return np.take(x, index, axis=axis)
    taken = np.take(x, np.clip(index, 0, size - 1), axis=axis)
    taken[(slice(None),) * axis + (~inside,)] = fill
    return taken


def _sum_views(views: list[tuple[tuple[int, ...], np.ndarray]], shape: tuple[int, ...],
               dtype: Any) -> np.ndarray:
    """The sum of the views; zeros of `shape` when no tap reads the input."""
    arrays = [v for _, v in views]
    return sum(arrays[1:], arrays[0]) if arrays else np.zeros(shape, dtype=dtype)


def _conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, stride, dilation, pad, groups: int) -> np.ndarray:
    """x [N, S.., C], w [O, K.., C/groups] -> [N, O.., O]."""
    kernel = w.shape[1:-1]
    views, out_shape = _window_views(x, kernel, stride, dilation, pad)
    o, per_group = w.shape[0], w.shape[-1]
    out_per_group = o // groups
    result = None
    for offset, view in views:
        tap = w[(slice(None),) + offset]  # [O, C/groups]
        parts = [view[..., g * per_group:(g + 1) * per_group] @ tap[g * out_per_group:(g + 1) * out_per_group].T
                 for g in range(groups)]
        term = np.concatenate(parts, axis=-1)
        result = term if result is None else result + term
    if result is None:  # every window lies in the padding
        result = np.zeros(out_shape[:-1] + (o,), dtype=np.result_type(x, w))
    return result if bias is None else result + bias


@op("nn.conv2d")
def _conv2d(attrs, xs, types):
    return _conv(xs[0], xs[1], xs[2] if len(xs) > 2 else None, attrs["stride"], attrs["dilation"], attrs["pad"],
                 attrs["groups"])


@op("nn.conv3d")
def _conv3d(attrs, xs, types):
    return _conv(xs[0], xs[1], xs[2] if len(xs) > 2 else None, attrs["stride"], attrs["dilation"], attrs["pad"], 1)


@op("nn.depthwise_conv2d")
def _depthwise(attrs, xs, types):
    x, w = xs[0], xs[1]
    kh, kw, c, m = w.shape
    views, out_shape = _window_views(x, (kh, kw), attrs["stride"], attrs["dilation"], attrs["pad"])
    products = [((ky, kx), view[..., :, None] * w[ky, kx]) for (ky, kx), view in views]
    result = _sum_views(products, out_shape[:-1] + (c, m), np.result_type(x, w))  # [N, OH, OW, C, M]
    result = result.reshape(result.shape[:3] + (c * m,))
    return result + xs[2] if len(xs) > 2 else result


@op("nn.transpose_conv2d")
def _transpose_conv2d(attrs, xs, types):
    x, w = xs[0], xs[1]
    n, h, wd, _ = x.shape
    o, kh, kw, _ = w.shape
    sy, sx = attrs["stride"]
    full_shape = (n, (h - 1) * sy + kh, (wd - 1) * sx + kw, o)  # out_pad can crop most of a huge one away
    limits.reserve(full_shape, np.float64, "the float reference's transposed convolution")
    full = np.zeros(full_shape)
    for ky in range(kh):
        for kx in range(kw):
            full[:, ky: ky + sy * (h - 1) + 1: sy, kx: kx + sx * (wd - 1) + 1: sx, :] += x @ w[:, ky, kx, :].T
    top, bottom, left, right = attrs["out_pad"]
    out = np.zeros((n, full.shape[1] + top + bottom, full.shape[2] + left + right, o))
    # out[y] = full[y - top] where that exists (negative out_pad crops)
    ys = range(max(0, top), min(out.shape[1], full.shape[1] + top))
    xs_ = range(max(0, left), min(out.shape[2], full.shape[2] + left))
    if len(ys) and len(xs_):
        out[:, ys.start:ys.stop, xs_.start:xs_.stop] = full[:, ys.start - top:ys.stop - top,
                                                           xs_.start - left:xs_.stop - left]
    return out + xs[2] if len(xs) > 2 else out


@op("nn.fully_connected")
def _fully_connected(attrs, xs, types):
    y = xs[0] @ xs[1].T
    return y + xs[2] if len(xs) > 2 else y


@op("nn.matmul")
def _matmul(attrs, xs, types):
    return np.matmul(xs[0], xs[1])


def _max_pool(attrs, x, d, t):
    x = x.astype(np.float64)  # integers too: the -inf padding needs a float (values up to 2**53 stay exact)
    views, out_shape = _window_views(x, attrs["kernel"], attrs["stride"], attrs.get("dilation", [1] * d),
                                     attrs["pad"], fill=-np.inf)
    result = np.max(np.stack([v for _, v in views]), axis=0) if views else np.full(out_shape, -np.inf)
    if t.quant is None and not t.is_float and t.dtype != "i1":  # a window over padding only: the type's minimum
        result = np.maximum(result, np.iinfo(t.numpy_dtype).min)
    return result


def _avg_pool(attrs, x, d):
    kernel, stride, pad = attrs["kernel"], attrs["stride"], attrs["pad"]
    views, out_shape = _window_views(x, kernel, stride, [1] * d, pad)
    total = _sum_views(views, out_shape, np.float64)
    if attrs["divisor"] > 0:
        return total / attrs["divisor"]
    # per axis, the window elements inside the input or inside the counted part of the padding; the
    # windows are boxes, so the count is the product over the axes
    counted_pad = attrs["count_pad"]
    counts = np.ones((1,) * (d + 2))
    for i in range(d):
        size, k = x.shape[1 + i], kernel[i]
        first, last = -counted_pad[2 * i], size + counted_pad[2 * i + 1]  # the counted region, [first, last)
        starts = np.arange(out_shape[1 + i], dtype=np.int64) * stride[i] - pad[2 * i]
        along = np.clip(np.minimum(starts + k, last) - np.maximum(starts, first), 0, None)
        counts = counts * along.reshape((1,) * (1 + i) + (-1,) + (1,) * (d - i))
    return total / counts


def _l2_pool(attrs, x, d):
    kernel, stride, pad = attrs["kernel"], attrs["stride"], attrs["pad"]
    views, out_shape = _window_views(x * x, kernel, stride, [1] * d, pad)
    mask = np.ones((1,) + tuple(x.shape[1:-1]) + (1,))
    counts, count_shape = _window_views(mask, kernel, stride, [1] * d, pad)
    return np.sqrt(_sum_views(views, out_shape, np.float64) / _sum_views(counts, count_shape, np.float64))


def _pools(d: int) -> tuple[Evaluator, Evaluator, Evaluator]:
    return (lambda attrs, xs, types: _max_pool(attrs, xs[0], d, types[0]),
            lambda attrs, xs, types: _avg_pool(attrs, xs[0], d),
            lambda attrs, xs, types: _l2_pool(attrs, xs[0], d))


for _d, _suffix in ((2, "2d"), (3, "3d")):
    _max, _avg, _l2 = _pools(_d)
    op(f"nn.max_pool{_suffix}")(_max)
    op(f"nn.avg_pool{_suffix}")(_avg)
    op(f"nn.l2_pool{_suffix}")(_l2)


def _source_coordinates(out: int, size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    x = np.arange(out, dtype=np.float64)
    if align_corners:
        return x * (size - 1) / (out - 1) if out > 1 else np.zeros(out)
    if half_pixel:
        return (x + 0.5) * size / out - 0.5
    return x * size / out


@op("nn.resize")
def _resize(attrs, xs, types):
    x = xs[0]
    _, h, w, _ = x.shape
    oh, ow = attrs["size"]
    sy = _source_coordinates(oh, h, attrs["align_corners"], attrs["half_pixel_centers"])
    sx = _source_coordinates(ow, w, attrs["align_corners"], attrs["half_pixel_centers"])
    if attrs["mode"] == "nearest":
        offset = 0.0 if attrs.get("nearest_rounding", "half_up") == "floor" else 0.5
        iy = np.clip(np.floor(sy + offset).astype(np.int64), 0, h - 1)
        ix = np.clip(np.floor(sx + offset).astype(np.int64), 0, w - 1)
        return x[:, iy][:, :, ix]
    y0, x0 = np.floor(sy).astype(np.int64), np.floor(sx).astype(np.int64)
    fy, fx = (sy - y0)[None, :, None, None], (sx - x0)[None, None, :, None]
    y0c, y1c = np.clip(y0, 0, h - 1), np.clip(y0 + 1, 0, h - 1)
    x0c, x1c = np.clip(x0, 0, w - 1), np.clip(x0 + 1, 0, w - 1)
    top = x[:, y0c][:, :, x0c] * (1 - fx) + x[:, y0c][:, :, x1c] * fx
    bottom = x[:, y1c][:, :, x0c] * (1 - fx) + x[:, y1c][:, :, x1c] * fx
    return top * (1 - fy) + bottom * fy
