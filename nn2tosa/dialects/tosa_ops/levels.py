"""TOSA 1.0 level 8K limits, and the per-op checks that the op records name (`TosaOp.level`): each
returns (what, value, limit) triples of the op's kernel, stride, padding, scale or list limits."""
from __future__ import annotations

from nn2tosa.ir import Graph, TensorType

# Level 8K limits (TOSA 1.0 "Levels").
MAX_RANK = 6
MAX_KERNEL = 8192
MAX_STRIDE = 8192
MAX_SCALE = 256
MAX_LOG2_SIZE = 31
MAX_TENSOR_LIST_SIZE = 64

Check = tuple[str, int, int]


def _operand_shape(graph: Graph, node: int, k: int) -> tuple[int, ...]:
    t = graph.type_of(graph.operand(node, k))
    assert isinstance(t, TensorType)  # the record's operand kinds, verified
    return t.shape


def _strides(attrs: dict) -> list[Check]:
    return [("stride", s, MAX_STRIDE) for s in attrs["stride"]]


def convolution(graph: Graph, node: int) -> list[Check]:
    """conv2d, conv3d, depthwise_conv2d: dilated kernel, padding, stride."""
    attrs = graph.attrs(node)
    weight = _operand_shape(graph, node, 1)
    spatial = weight[:2] if graph.op(node) == "tosa.depthwise_conv2d" else weight[1:-1]
    checks = [(f"dilation*kernel[{i}]", d * k, MAX_KERNEL) for i, (d, k) in enumerate(zip(attrs["dilation"], spatial))]
    return checks + [("pad", p, MAX_KERNEL) for p in attrs["pad"]] + _strides(attrs)


def transpose_convolution(graph: Graph, node: int) -> list[Check]:
    attrs = graph.attrs(node)
    weight = _operand_shape(graph, node, 1)
    checks = [("kernel", k, MAX_KERNEL) for k in weight[1:3]] + [("out_pad", p, MAX_KERNEL) for p in attrs["out_pad"]]
    return checks + _strides(attrs)


def pooling(graph: Graph, node: int) -> list[Check]:
    attrs = graph.attrs(node)
    checks = [("kernel", k, MAX_KERNEL) for k in attrs["kernel"]] + [("pad", p, MAX_KERNEL) for p in attrs["pad"]]
    return checks + _strides(attrs)


def fft(graph: Graph, node: int) -> list[Check]:
    shape = _operand_shape(graph, node, 0)
    return [("H", shape[1], MAX_KERNEL), ("W", shape[2], MAX_KERNEL)]


def resize(graph: Graph, node: int) -> list[Check]:
    """The scale ratios n/d must not exceed MAX_SCALE (integer comparison, no rounding)."""
    scale_source = graph.operand(node, 1)
    if graph.op(scale_source.node) != "tosa.const_shape":
        return []
    y_n, y_d, x_n, x_d = (int(v) for v in graph.attrs(scale_source.node)["values"])
    return [("scale_y", y_n, MAX_SCALE * y_d), ("scale_x", x_n, MAX_SCALE * x_d)]


def tensor_list(graph: Graph, node: int) -> list[Check]:
    """concat, custom, control flow: the number of operands."""
    return [("tensor list size", len(graph.operands(node)), MAX_TENSOR_LIST_SIZE)]
