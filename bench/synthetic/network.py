"""Format-neutral descriptions of the benchmark networks, and a numpy forward pass over them.

A `Network` is a list of `Op`s in dependency order: each names its kind, the ops it reads, its
output shape and its weights. The builders (`resnet50`, `transformer`) make real structure
(ResNet-50's bottleneck stages with projection shortcuts; a BERT-base encoder's attention and
feed-forward blocks) with deterministic weights from a seed; the writers in `armnn.py` and
`mps.py` serialize the same description in each format, and `forward` computes what any
faithful conversion must output (float64, written independently of nn2tosa).

Layout conventions: activations NHWC, convolution weights [O, H, W, I] (Arm NN's NHWC form),
fully-connected weights [O, I]. The MPS writer turns 4-D tensors into PyTorch's NCHW.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Op:
    kind: str
    name: str
    inputs: tuple[int, ...]
    shape: tuple[int, ...]
    params: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Network:
    name: str
    seed: int
    ops: list[Op] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    # float16 builds a multi-GB network's weights at half the memory (the MPS fp16 writer then takes
    # them as they are); the values are the fp32 ones rounded
    weight_dtype: type = np.float32
    # for models too large to draw normals for (bench/big_model.py): float16 weights of random bits
    # with magnitudes below 0.25, ten times faster; not for a forward pass to mean much
    random_bits: bool = False

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def weight_bytes(self, itemsize: int = 4) -> int:
        return sum(w.size for op in self.ops for w in op.weights.values()) * itemsize

    # ---- building: each method appends one op and returns its index
    def _add(self, kind: str, name: str, inputs: tuple[int, ...], shape: tuple[int, ...], **params: Any) -> int:
        weights = params.pop("weights", {})
        self.ops.append(Op(kind, name, inputs, tuple(int(d) for d in shape), params, weights))
        return len(self.ops) - 1

    def shape(self, x: int) -> tuple[int, ...]:
        return self.ops[x].shape

    def normal(self, shape: tuple[int, ...], std: float) -> np.ndarray:
        if self.random_bits:  # sign, exponents up to 2**-3, any mantissa: finite, never NaN
            return (self.rng.integers(0, 1 << 16, shape, dtype=np.uint16) & 0xB3FF).view(np.float16)
        return (self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(self.weight_dtype)

    def input(self, name: str, shape: tuple[int, ...]) -> int:
        return self._add("input", name, (), shape)

    def conv(self, name: str, x: int, out: int, k: int, stride: int = 1, gain: float = 1.0, bias: bool = True) -> int:
        n, h, w, c = self.shape(x)
        pad = (k - 1) // 2
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        weights = {"w": self.normal((out, k, k, c), gain * math.sqrt(2.0 / (k * k * c)))}
        if bias:
            weights["b"] = self.normal((out,), 0.05)
        return self._add("conv", name, (x,), (n, oh, ow, out), stride=stride, pad=pad, weights=weights)

    def batchnorm(self, name: str, x: int, eps: float = 1e-5) -> int:
        c = self.shape(x)[-1]
        weights = {"mean": self.normal((c,), 0.1), "var": (0.5 + self.rng.random(c, dtype=np.float32)),
                   "gamma": 1.0 + self.normal((c,), 0.1), "beta": self.normal((c,), 0.1)}
        return self._add("batchnorm", name, (x,), self.shape(x), eps=eps, weights=weights)

    def relu(self, name: str, x: int) -> int:
        return self._add("relu", name, (x,), self.shape(x))

    def maxpool(self, name: str, x: int, k: int, stride: int) -> int:
        n, h, w, c = self.shape(x)
        pad = (k - 1) // 2
        return self._add("maxpool", name, (x,), (n, (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1, c),
                         k=k, stride=stride, pad=pad)

    def global_avgpool(self, name: str, x: int) -> int:
        n, _, _, c = self.shape(x)
        return self._add("global_avgpool", name, (x,), (n, 1, 1, c))

    def add(self, name: str, a: int, b: int) -> int:
        return self._add("add", name, (a, b), self.shape(a))

    def reshape(self, name: str, x: int, shape: tuple[int, ...]) -> int:
        assert math.prod(shape) == math.prod(self.shape(x)), (shape, self.shape(x))
        return self._add("reshape", name, (x,), shape)

    def transpose(self, name: str, x: int, perm: tuple[int, ...]) -> int:
        return self._add("transpose", name, (x,), tuple(self.shape(x)[p] for p in perm), perm=tuple(perm))

    def fc(self, name: str, x: int, out: int, gain: float = 1.0) -> int:
        m, i = self.shape(x)
        weights = {"w": self.normal((out, i), gain / math.sqrt(i)), "b": self.normal((out,), 0.02)}
        return self._add("fc", name, (x,), (m, out), weights=weights)

    def softmax(self, name: str, x: int) -> int:
        return self._add("softmax", name, (x,), self.shape(x))

    def layernorm(self, name: str, x: int, eps: float = 1e-5) -> int:
        c = self.shape(x)[-1]
        weights = {"gamma": 1.0 + self.normal((c,), 0.1), "beta": self.normal((c,), 0.1)}
        return self._add("layernorm", name, (x,), self.shape(x), eps=eps, weights=weights)

    def gelu(self, name: str, x: int) -> int:
        return self._add("gelu", name, (x,), self.shape(x))

    def matmul(self, name: str, a: int, b: int) -> int:
        sa, sb = self.shape(a), self.shape(b)
        assert sa[:-2] == sb[:-2] and sa[-1] == sb[-2], (sa, sb)
        return self._add("matmul", name, (a, b), sa[:-1] + sb[-1:])

    def scale(self, name: str, x: int, factor: float) -> int:
        return self._add("scale", name, (x,), self.shape(x), factor=factor)

    def logistic(self, name: str, x: int) -> int:
        return self._add("logistic", name, (x,), self.shape(x))

    def detection(self, name: str, boxes: int, scores: int, anchors: np.ndarray, max_detections: int = 4,
                  iou: float = 0.5, threshold: float = 0.3) -> int:
        """An SSD's post-processing (Arm NN DetectionPostProcess, fast NMS, TFLite's default box scales):
        box encodings [1, A, 4] and class scores [1, A, C + 1] (background first) to detection boxes,
        classes, scores and their count (`shape` is the boxes'; the writer gives all four)."""
        n = self.shape(boxes)[0]
        return self._add("detection", name, (boxes, scores), (n, max_detections, 4), max_detections=max_detections,
                         classes=self.shape(scores)[-1] - 1, iou=iou, threshold=threshold,
                         weights={"anchors": anchors.astype(np.float32)})


# ------------------------------------------------------------------------------ the networks
def resnet50(*, image: int = 224, width: int = 64, blocks: tuple[int, ...] = (3, 4, 6, 3), classes: int = 1000,
             batchnorm: bool = False, seed: int = 50) -> Network:
    """ResNet-50 (v1.5: stride in the 3x3 convolution), NHWC. Full size (the defaults) holds 25.6 M
    weights, 102 MB in fp32. `batchnorm`: convolutions without bias followed by batch norms (what
    PyTorch exports), else with the batch norm folded into a bias (what TFLite/Arm NN files hold).
    Smaller `image`, `width` and `blocks` give the same structure for quick checks."""
    net = Network(f"resnet50_w{width}_i{image}", seed)

    def conv_unit(name: str, x: int, out: int, k: int, stride: int = 1, relu: bool = True, gain: float = 1.0) -> int:
        y = net.conv(name, x, out, k, stride, gain, bias=not batchnorm)
        if batchnorm:
            y = net.batchnorm(f"{name}/bn", y)
        return net.relu(f"{name}/relu", y) if relu else y

    x = net.input("input", (1, image, image, 3))
    x = conv_unit("conv1", x, width, 7, 2)
    x = net.maxpool("pool1", x, 3, 2)
    for stage, count in enumerate(blocks):
        mid = width * 2 ** stage
        for block in range(count):
            name = f"stage{stage + 1}/block{block + 1}"
            stride = 2 if block == 0 and stage > 0 else 1
            shortcut = x
            if block == 0:
                shortcut = conv_unit(f"{name}/shortcut", x, mid * 4, 1, stride, relu=False)
            y = conv_unit(f"{name}/conv1", x, mid, 1)
            y = conv_unit(f"{name}/conv2", y, mid, 3, stride)
            # a small last gain keeps the residual sum bounded through 16 blocks of random weights
            y = conv_unit(f"{name}/conv3", y, mid * 4, 1, relu=False, gain=0.3)
            x = net.relu(f"{name}/relu", net.add(f"{name}/add", y, shortcut))
    x = net.global_avgpool("avgpool", x)
    x = net.reshape("flatten", x, (1, net.shape(x)[-1]))
    x = net.fc("fc", x, classes)
    net.outputs = [net.softmax("softmax", x)]
    return net


def transformer(*, layers: int = 12, hidden: int = 768, heads: int = 12, ffn: int | None = None, seq: int = 128,
                seed: int = 12, weight_dtype: type = np.float32, random_bits: bool = False) -> Network:
    """A BERT-base-shaped encoder (post-layer-norm, exact GELU): `layers` blocks of multi-head
    self-attention and a feed-forward network on a [1, seq, hidden] input. At the defaults it
    holds 85 M weights, 340 MB in fp32."""
    ffn = ffn or 4 * hidden
    head = hidden // heads
    net = Network(f"transformer_l{layers}_h{hidden}_s{seq}", seed, weight_dtype=weight_dtype, random_bits=random_bits)
    x = net.reshape("flatten", net.input("input", (1, seq, hidden)), (seq, hidden))
    for i in range(layers):
        name = f"layer{i}"

        def heads_of(part: str, perm: tuple[int, ...]) -> int:
            y = net.fc(f"{name}/attention/{part}", x, hidden)
            y = net.reshape(f"{name}/attention/{part}/split", y, (seq, heads, head))
            return net.transpose(f"{name}/attention/{part}/heads", y, perm)

        q = heads_of("query", (1, 0, 2))  # [heads, seq, head]
        k = heads_of("key", (1, 2, 0))  # [heads, head, seq]
        v = heads_of("value", (1, 0, 2))
        scores = net.scale(f"{name}/attention/scale", net.matmul(f"{name}/attention/scores", q, k), 1 / math.sqrt(head))
        context = net.matmul(f"{name}/attention/context", net.softmax(f"{name}/attention/softmax", scores), v)
        context = net.transpose(f"{name}/attention/merge", context, (1, 0, 2))
        context = net.reshape(f"{name}/attention/concat", context, (seq, hidden))
        attended = net.add(f"{name}/attention/residual", net.fc(f"{name}/attention/output", context, hidden), x)
        x = net.layernorm(f"{name}/attention/norm", attended)
        y = net.gelu(f"{name}/ffn/gelu", net.fc(f"{name}/ffn/up", x, ffn))
        x = net.layernorm(f"{name}/ffn/norm", net.add(f"{name}/ffn/residual", net.fc(f"{name}/ffn/down", y, hidden), x))
    net.outputs = [net.reshape("unflatten", x, (1, seq, hidden))]
    return net


def ssd_detector(*, image: int = 32, width: int = 16, anchors_per_cell: int = 2, classes: int = 3,
                 seed: int = 7) -> Network:
    """A small SSD-style detector: a convolutional backbone (three stride-2 3x3 convolutions with ReLU), a
    box head and a class head (3x3 convolutions on the last feature map, reshaped to [1, A, 4] and
    [1, A, classes + 1]; the scores through a logistic), into DetectionPostProcess with one anchor grid."""
    net = Network("ssd_detector", seed)
    x = net.input("image", (1, image, image, 3))
    for k in range(3):
        x = net.relu(f"backbone{k}/relu", net.conv(f"backbone{k}/conv", x, width * 2 ** min(k, 1), 3, stride=2))
    _, h, w, _ = net.shape(x)
    count = h * w * anchors_per_cell
    boxes = net.reshape("box_head/reshape", net.conv("box_head/conv", x, anchors_per_cell * 4, 3, gain=0.5), (1, count, 4))
    logits = net.conv("class_head/conv", x, anchors_per_cell * (classes + 1), 3)
    scores = net.logistic("class_head/logistic", net.reshape("class_head/reshape", logits, (1, count, classes + 1)))
    centres = (np.arange(h * w * anchors_per_cell) // anchors_per_cell)
    cy, cx = (centres // w + 0.5) / h, (centres % w + 0.5) / w
    size = np.where(np.arange(count) % anchors_per_cell == 0, 0.2, 0.35)
    anchors = np.stack([cy, cx, size, size], axis=1)  # Arm NN's anchors: [y, x, h, w]
    net.outputs = [net.detection("detection_post_process", boxes, scores, anchors)]
    return net


# ------------------------------------------------------------------------------ the reference
def _windows(x: np.ndarray, k: int, stride: int, pad: int, fill: float) -> np.ndarray:
    """[N, OH, OW, C, k, k] views of the padded NHWC input."""
    x = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)), constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))
    return win[:, ::stride, ::stride]


def _erf(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _conv(op: Op, x: np.ndarray) -> np.ndarray:
    w = op.weights["w"].astype(np.float64)
    win = _windows(x, w.shape[1], op.params["stride"], op.params["pad"], 0.0)  # N OH OW C kh kw
    y = np.einsum("nhwcij,oijc->nhwo", win, w, optimize=True)
    return y + op.weights["b"] if "b" in op.weights else y


def _layernorm(op: Op, x: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + op.params["eps"]) * op.weights["gamma"] + op.weights["beta"]


def _batchnorm(op: Op, x: np.ndarray) -> np.ndarray:
    w = op.weights
    return (x - w["mean"]) / np.sqrt(w["var"].astype(np.float64) + op.params["eps"]) * w["gamma"] + w["beta"]


_FORWARD = {
    "conv": lambda op, x: _conv(op, x[0]),
    "batchnorm": lambda op, x: _batchnorm(op, x[0]),
    "relu": lambda op, x: np.maximum(x[0], 0.0),
    "maxpool": lambda op, x: _windows(x[0], op.params["k"], op.params["stride"], op.params["pad"], -np.inf).max(axis=(4, 5)),
    "global_avgpool": lambda op, x: x[0].mean(axis=(1, 2), keepdims=True),
    "add": lambda op, x: x[0] + x[1],
    "reshape": lambda op, x: x[0].reshape(op.shape),
    "transpose": lambda op, x: x[0].transpose(op.params["perm"]),
    "fc": lambda op, x: x[0] @ op.weights["w"].T.astype(np.float64) + op.weights["b"],
    "softmax": lambda op, x: _softmax(x[0]),
    "layernorm": lambda op, x: _layernorm(op, x[0]),
    "gelu": lambda op, x: 0.5 * x[0] * (1.0 + _erf(x[0] / math.sqrt(2.0))),
    "matmul": lambda op, x: x[0] @ x[1],
    "scale": lambda op, x: x[0] * op.params["factor"],
    "logistic": lambda op, x: 1.0 / (1.0 + np.exp(-x[0])),
}


def forward(net: Network, inputs: list[np.ndarray], *, weights_dtype: type = np.float32,
            keep_all: bool = False) -> list[np.ndarray]:
    """The network's outputs (float64) for `inputs` (in input-op order, NHWC). `weights_dtype`
    rounds the weights first (np.float16 for an fp16 model). `keep_all`: every op's value."""
    values: list[np.ndarray | None] = []
    feed = iter(inputs)
    rounded = {}
    for op in net.ops:
        if op.kind == "input":
            values.append(np.asarray(next(feed), dtype=np.float64))
            continue
        if weights_dtype is not np.float32:
            rounded = {k: w.astype(weights_dtype).astype(np.float64) for k, w in op.weights.items()}
        real = Op(op.kind, op.name, op.inputs, op.shape, op.params, rounded or op.weights) if rounded else op
        values.append(_FORWARD[op.kind](real, [values[i] for i in op.inputs]))
    if keep_all:
        return values  # type: ignore[return-value]
    return [values[i] for i in net.outputs]
