"""What a legalization rule sees of one Arm NN layer, and the helpers every rule shares.

A rule receives a `Layer` and returns the nn values that replace the layer's results. The layer
wraps the `armnn.*` op (attributes, operands, result types, location) and a builder that puts
every op it creates at the layer's location. Helpers cover what many rules need:

- types: `op` creates an nn op with the Arm NN result type when the rule gives one (quantization
  included) or the inferred one; `move` creates a data-movement op (transpose, reshape, slice,
  ...) whose result keeps the operand's element type and quantization (a per-axis axis follows
  the data), so quantized tensors move without being requantized.
- layout: `to_channels_last` / `from_channels_last` wrap channel-first (NCHW, NCDHW) data in
  explicit transposes; the canonicalizer cancels them between layers.
- quantized decompositions: a layer that becomes several nn ops computes in float between
  `real` (nn.dequantize when quantized) and `finish` (nn.quantize to the layer's type), which is
  what Arm NN's reference backend does for every quantized layer (decode, compute in float,
  encode). Single-op layers keep their quantized types instead.
- named constraints (nn2tosa/ir/constraints.py): what a rule cannot express, declared where it
  registers and evaluated through `layer.check(...)`; an unmet one raises `NotLegalizable(why)`,
  which the pass collects.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nn2tosa.ir import Builder, Graph, Quant, TensorType, Value, op_def
from nn2tosa.ir.constraints import Checks
from nn2tosa.limits import reserve

CHANNEL_FIRST = frozenset({"NCHW", "NCDHW"})


class NotLegalizable(Exception):
    """The layer has no meaning in the nn dialect (or not one this pass can express); `why` says why."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def to_channels_last_perm(rank: int) -> list[int]:
    """[0, 2, 3, ..., 1]: N C D.. -> N D.. C."""
    return [0, *range(2, rank), 1]


def to_channels_first_perm(rank: int) -> list[int]:
    """[0, rank-1, 1, ..., rank-2]: N D.. C -> N C D.."""
    return [0, rank - 1, *range(1, rank - 1)]


def permuted(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(shape[p] for p in perm)


def _transposed_quant(q: Quant | None, perm: Sequence[int]) -> Quant | None:
    if q is None or q.axis is None:
        return q
    return Quant(q.scales, q.zero_points, list(perm).index(q.axis), q.expressed)


def _reshaped_axis(axis: int, old: Sequence[int], new: Sequence[int]) -> int | None:
    """Where a per-axis quantization axis is after a reshape: its dimension survives when it keeps its
    size and the number of elements before it; otherwise (None) one axis cannot describe the scales."""
    before = int(np.prod(old[:axis]))
    for k in range(len(new)):
        if new[k] == old[axis] and int(np.prod(new[:k])) == before:
            return k
    return None


def quantization(t: TensorType) -> Quant:
    """t's quantization, where the rule's constraints have required one (ValueError should one be missing)."""
    if t.quant is None:
        raise ValueError(f"a {t.dtype} tensor where a quantized one is needed")
    return t.quant


def moves_keep_quantized_axis(layer: Layer, name: str, q: Quant | None, old: Sequence[int],
                              new: Sequence[int]) -> str | None:
    """Data movement the conversion adds (a reshape, a slice) keeps a per-axis quantized dimension whole,
    so that one axis still describes the scales."""
    if q is None or q.axis is None or name == "nn.transpose":
        return None
    if name == "nn.reshape":
        if _reshaped_axis(q.axis, old, new) is None:
            return f"a reshape from {list(old)} to {list(new)} splits the per-axis quantized dimension {q.axis}"
    elif new[q.axis] != old[q.axis]:
        return f"{name} would cut the per-axis quantized dimension {q.axis}"
    return None


class Layer(Checks):
    """One `armnn.*` op being legalized."""

    refusal = NotLegalizable
    general = (moves_keep_quantized_axis,)  # evaluated by the helpers below, for any rule

    def __init__(self, graph: Graph, node: int):
        self.graph = graph
        self.node = node
        self.type_name = graph.op(node).split(".", 1)[1]  # the Arm NN LayerType, e.g. "Convolution2d"
        self.attrs: dict[str, Any] = graph.attrs(node)
        self.operands: list[Value] = graph.operands(node)
        # armnn.* and nn ops have tensors only
        self.result_types: list[TensorType] = [graph.tensor_type(v) for v in graph.results(node)]
        self.loc = graph.loc(node)
        self.builder = Builder(graph, loc=self.loc)

    # ---- reading ----------------------------------------------------------------------------
    @property
    def where(self) -> str:
        """How users see this layer in messages: "layer 3 'conv'" (the frontend's wording)."""
        if self.loc is None:
            return f"%{self.node}"
        return f"{self.loc.detail} '{self.loc.name}'" if self.loc.detail else f"'{self.loc.name}'"

    def type_of(self, v: Value) -> TensorType:
        return self.graph.tensor_type(v)

    @property
    def out_type(self) -> TensorType:
        return self.result_types[0]

    def constant_value(self, v: Value) -> np.ndarray | None:
        """The value of an operand produced by a constant (nn.constant once legalized), else None."""
        from ..fold import constant_value

        return constant_value(self.graph, v)

    def inferred(self, name: str, attrs: dict[str, Any], operands: Sequence[Value]) -> TensorType:
        """The (first) result type nn op `name` infers from `operands`."""
        d = op_def(name)
        if d is None or d.infer is None:
            raise ValueError(f"{name} cannot infer its result types")
        (t, *_) = d.infer(attrs, [self.type_of(v) for v in operands])
        if not isinstance(t, TensorType):  # (nn ops compute tensors: a `!tosa.shape` is TOSA's alone)
            raise TypeError(f"{name} infers {t}, not a tensor")
        return t

    # ---- building ---------------------------------------------------------------------------
    def op(self, name: str, operands: Sequence[Value], attrs: dict[str, Any] | None = None,
           type: TensorType | None = None) -> Value:
        """An nn op; its result type is `type` when given (checked against the op's inference, so a
        file whose shapes contradict its layers fails here, at the layer), else inferred."""
        d = op_def(name)
        if type is not None and d is not None and d.infer is not None:
            want = self.inferred(name, dict(attrs or {}), operands)
            if tuple(want.shape) != tuple(type.shape) or want.dtype != type.dtype:
                raise ValueError(f"{name} computes {want.dtype} of shape {list(want.shape)} where the layer's "
                                 f"output is {type.dtype} of shape {list(type.shape)}")
        value = self.builder.op(name, list(operands), attrs, None if type is None else [type])
        if d is not None and d.verify is not None:  # the op's own rules too (operands of one element type,
            problems = list(d.verify(self.graph, value.node))  # ...): the layer is named, not the emitter
            if problems:
                raise ValueError(f"{name}: {problems[0]}")
        return value

    def move(self, name: str, x: Value, attrs: dict[str, Any]) -> Value:
        """A data-movement op whose result keeps x's element type and quantization."""
        t = self.type_of(x)
        inferred = self.inferred(name, attrs, [x])
        quant = t.quant
        self.check(moves_keep_quantized_axis, name, quant, t.shape, inferred.shape)
        if name == "nn.transpose":
            quant = _transposed_quant(quant, attrs["perm"])
        elif name == "nn.reshape" and quant is not None and quant.axis is not None:
            axis = _reshaped_axis(quant.axis, t.shape, inferred.shape)
            quant = Quant(quant.scales, quant.zero_points, axis, quant.expressed)
        return self.op(name, [x], attrs, TensorType(inferred.shape, t.dtype, quant))

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        if list(perm) == list(range(len(perm))):
            return x
        return self.move("nn.transpose", x, {"perm": [int(p) for p in perm]})

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        if tuple(shape) == tuple(self.type_of(x).shape):
            return x
        return self.move("nn.reshape", x, {"shape": [int(d) for d in shape]})

    def constant(self, value: Any, type: TensorType | None = None, dtype: str | None = None) -> Value:
        """An nn.constant holding `value` (as is, no copy, when its dtype already fits `type`)."""
        if type is None:
            return self.builder.constant(value, dtype)
        array = np.asarray(value)
        if array.dtype != type.numpy_dtype or not array.flags.c_contiguous:
            reserve(type.shape, type.dtype, "a constant built by legalize-armnn")  # nn2tosa.limits: a copy
            array = np.ascontiguousarray(array, dtype=type.numpy_dtype)
        if array.shape != tuple(type.shape):
            array = array.reshape(type.shape)
        node = self.graph.add_op("nn.constant", (), [type], {"value": array}, self.loc)
        return Value(node, 0)

    def scalar(self, value: float, like: Value) -> Value:
        """A rank-0 constant in the element type of `like` (which must not be quantized)."""
        t = self.type_of(like)
        return self.constant(np.asarray(value, dtype=t.numpy_dtype), TensorType((), t.dtype))

    # ---- layout -----------------------------------------------------------------------------
    def channels_first(self) -> bool:
        """Whether the layer's dataLayout puts channels before the spatial dimensions."""
        return self.attrs["dataLayout"] in CHANNEL_FIRST

    def to_channels_last(self, x: Value, channels_first: bool) -> Value:
        return self.transpose(x, to_channels_last_perm(self.type_of(x).rank)) if channels_first else x

    def from_channels_last(self, x: Value, channels_first: bool) -> Value:
        return self.transpose(x, to_channels_first_perm(self.type_of(x).rank)) if channels_first else x

    def channels_last_type(self, t: TensorType, channels_first: bool) -> TensorType:
        """The type `t` (a channel-first result) has in channels-last layout."""
        if not channels_first:
            return t
        perm = to_channels_last_perm(t.rank)
        return TensorType(permuted(t.shape, perm), t.dtype, _transposed_quant(t.quant, perm))

    # ---- quantized decompositions -----------------------------------------------------------
    def real(self, x: Value) -> Value:
        """x itself when it is not quantized, else its dequantized (float) value."""
        t = self.type_of(x)
        if t.quant is None:
            return x
        return self.op("nn.dequantize", [x], type=TensorType(t.shape, t.quant.expressed))

    def finish(self, y: Value, t: TensorType | None = None) -> Value:
        """y converted to exactly the layer's result type t (default: the first result's):
        quantized when t is and y is not, requantized when both are but differ, cast when
        only the element type differs; y itself when it already has type t."""
        t = self.out_type if t is None else t
        have = self.type_of(y)
        if have == t:
            return y
        if tuple(have.shape) != tuple(t.shape):
            raise ValueError(f"it computes {have.dtype} of shape {list(have.shape)} where its output is {t}")
        if t.quant is not None:
            return self.op("nn.requantize" if have.quant is not None else "nn.quantize", [y], type=t)
        if have.quant is not None:
            y = self.op("nn.dequantize", [y], type=TensorType(have.shape, have.quant.expressed))
            if self.type_of(y) == t:
                return y
        return self.op("nn.cast", [y], type=t)

    def quantized(self) -> bool:
        """Whether any operand or result of the layer has a quantized type."""
        types = [self.type_of(v) for v in self.operands] + self.result_types
        return any(t.quant is not None for t in types)
