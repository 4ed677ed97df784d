"""Canonicalize's affine folding patterns: what a float convolution's constant weights can absorb.

- batch_norm after conv2d / depthwise_conv2d / conv3d / transpose_conv2d / fully_connected (float,
  constant weights and statistics, the conv read by nothing else) folds into weights and bias,
  computed in float64 and rounded once to the weights' type; a bias is created if absent.
  A batch norm that cannot fold (no such producer) but has constant statistics becomes
  x * scale + shift with both precomputed the same way; otherwise it stays.
- mul / add / sub of a per-output-channel constant after such a conv folds into its weights/bias.

canonicalize.py adds these patterns to CANONICAL after its own (its driver tries them in that order).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nn2tosa.ir import Graph, TensorType, Value

from .rewrite import PatternSet, constant, new_constant, new_op, producer, replace, result_type, single_use

AFFINE_FOLDING = PatternSet("affine-folding")


def _channel_last_scale(shape: tuple[int, ...], s: np.ndarray) -> np.ndarray:
    return s.reshape((-1,) + (1,) * (len(shape) - 1))


# op -> how a per-output-channel vector (length O) is shaped to scale the weights
WEIGHT_SCALE: dict[str, Callable[[tuple[int, ...], np.ndarray], np.ndarray]] = {
    "nn.conv2d": _channel_last_scale,  # [O, KH, KW, I]
    "nn.conv3d": _channel_last_scale,  # [O, KD, KH, KW, I]
    "nn.transpose_conv2d": _channel_last_scale,  # [O, KH, KW, I]
    "nn.fully_connected": _channel_last_scale,  # [O, K]
    "nn.depthwise_conv2d": lambda shape, s: s.reshape(1, 1, shape[2], shape[3]),  # [KH, KW, C, M]: c*M+m
}


@dataclass
class _Affine:
    """A float conv/fc whose weights and bias are constants and whose result only one op reads."""

    node: int
    weights: np.ndarray
    bias: np.ndarray  # float64, zeros when absent
    channels: int


def _affine_producer(graph: Graph, value: Value) -> _Affine | None:
    node = producer(graph, value, WEIGHT_SCALE.keys())
    if node is None or not single_use(graph, value) or not graph.tensor_type(value).is_float:
        return None
    operands = graph.operands(node)
    weights = constant(graph, operands[1])
    if weights is None or not graph.tensor_type(operands[1]).is_float:
        return None
    channels = graph.tensor_type(value).shape[-1]
    bias = np.zeros(channels) if len(operands) < 3 else constant(graph, operands[2])
    if bias is None or (len(operands) == 3 and not graph.tensor_type(operands[2]).is_float):
        return None
    return _Affine(node, weights, bias.astype(np.float64), channels)


def _per_channel(graph: Graph, value: Value, out: TensorType) -> np.ndarray | None:
    """A float constant that varies only along the last dimension of `out`, as a float64 vector."""
    data = constant(graph, value)
    t = graph.tensor_type(value)
    if data is None or not t.is_float or len(t.shape) > len(out.shape) or not out.shape:  # a scalar has no channels
        return None
    shape = (1,) * (len(out.shape) - len(t.shape)) + tuple(t.shape)
    if any(d != 1 for d in shape[:-1]) or shape[-1] not in (1, out.shape[-1]):
        return None
    return np.broadcast_to(data.reshape(-1).astype(np.float64), (out.shape[-1],))


def _refold(graph: Graph, a: _Affine, scale: np.ndarray | None, shift: np.ndarray, replaced: int) -> bool:
    """Replace `replaced` by a's conv with weights * scale and bias * scale + shift (float64, rounded once)."""
    operands = graph.operands(a.node)
    w_value = operands[1]
    weights = a.weights
    bias = a.bias if scale is None else a.bias * scale
    if scale is not None:  # one float64 temporary: the product of the exactly widened weights
        weights = np.multiply(a.weights, WEIGHT_SCALE[graph.op(a.node)](a.weights.shape, scale), dtype=np.float64)
    bias = bias + shift
    w_dtype = graph.tensor_type(w_value).numpy_dtype
    out = result_type(graph, a.node)
    with np.errstate(over="ignore", invalid="ignore"):
        new_weights = weights.astype(w_dtype)
        new_bias = bias.astype(out.numpy_dtype)
    if not (np.all(np.isfinite(new_weights)) and np.all(np.isfinite(new_bias))):
        return False  # overflow (fp16) or non-finite statistics: keep the ops as they are
    w = w_value if scale is None else new_constant(graph, new_weights, w_value)
    b = new_constant(graph, new_bias, Value(a.node, 0))
    return replace(graph, replaced, new_op(graph, a.node, [operands[0], w, b]))


def _batch_norm_constants(graph: Graph, node: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(scale, shift) in float64 with batch_norm(x) == x * scale + shift along its axis."""
    out = result_type(graph, node)
    if not out.is_float:
        return None
    operands = graph.operands(node)[1:]
    stats = [s for s in (constant(graph, v) for v in operands) if s is not None]
    channels = out.shape[graph.attrs(node)["axis"]]
    # (the verifier does not check their length)
    if len(stats) != len(operands) or any(s.size != channels for s in stats):
        return None
    mean, var, gamma, beta = (s.astype(np.float64).reshape(-1) for s in stats)
    scale = gamma / np.sqrt(var + graph.attrs(node)["epsilon"])
    return scale, beta - mean * scale


@AFFINE_FOLDING.pattern("nn.batch_norm")
def fold_batch_norm_into_conv(graph: Graph, node: int) -> bool:
    x = graph.operand(node, 0)
    if graph.attrs(node)["axis"] != graph.type_of(x).rank - 1:
        return False
    a = _affine_producer(graph, x)
    affine = _batch_norm_constants(graph, node)
    if a is None or affine is None:
        return False
    scale, shift = (np.broadcast_to(v, (a.channels,)) for v in affine)
    return _refold(graph, a, scale, shift, node)


@AFFINE_FOLDING.pattern("nn.batch_norm")
def batch_norm_to_mul_add(graph: Graph, node: int) -> bool:
    affine = _batch_norm_constants(graph, node)
    if affine is None:
        return False
    x = graph.operand(node, 0)
    out = graph.types(node)[0]
    trailing = (1,) * (out.rank - 1 - graph.attrs(node)["axis"])  # broadcast along `axis`
    scale, shift = (new_constant(graph, v.reshape(v.shape + trailing), x) for v in affine)
    scaled = new_op(graph, node, [x, scale], {}, op="nn.mul")
    return replace(graph, node, new_op(graph, node, [scaled, shift], {}, op="nn.add"))


@AFFINE_FOLDING.pattern("nn.mul", "nn.add", "nn.sub")
def fold_affine_into_conv(graph: Graph, node: int) -> bool:
    """conv(x) * c, conv(x) + c, c + conv(x), conv(x) - c with c constant per output channel."""
    op, out = graph.op(node), result_type(graph, node)
    orders = ((0, 1),) if op == "nn.sub" else ((0, 1), (1, 0))
    for conv_at, const_at in orders:
        a = _affine_producer(graph, graph.operand(node, conv_at))
        c = _per_channel(graph, graph.operand(node, const_at), out)
        if a is None or c is None or graph.types(a.node)[0] != out:
            continue
        if op == "nn.mul":
            return _refold(graph, a, c, np.zeros(a.channels), node)
        return _refold(graph, a, None, -c if op == "nn.sub" else c, node)
    return False
