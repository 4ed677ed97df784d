"""The Arm NN reader: SerializedGraph -> Graph (the conventions are in the package docstring).

Reading goes in passes, each over every layer, so that nothing depends on the file's layer order:
read each layer's table (type, name, slots, tensor infos), create the graph inputs in binding
order, create one op per layer (and a Constant op per ConstTensor a layer table holds), wire
input slots to the outputs they name, bring depthwise weights to [1, H, W, I*M], then outputs.
Every error names the layer it is about; the flatbuffer reader checks every offset before use.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn2tosa.diagnostics import InvalidInputError, Unsupported, UnsupportedError
from nn2tosa.ir import Graph, Loc, Quant, TensorType, Value
from nn2tosa.ir.verify import op_problems
from nn2tosa.limits import reserve
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.flatread import FlatBuffer, Table
from nn2tosa.schemas.verify import verify_buffer

from . import descriptors
from .catalogue import PARAMS_FIELD, LayerKind, layer_kinds
from .tensors import check_per_axis, const_array, tensor_type

CONSTANT_OP = "armnn.Constant"
# Layers whose weights placement the featureVersions flag constantTensorsAsInputs describes
# (TransposeConvolution2d keeps its weights in its table in every version).
_WEIGHTS_AS_INPUTS_LAYERS = frozenset({"Convolution2d", "DepthwiseConvolution2d", "FullyConnected"})
DEPTHWISE_OLD = "[M,I,H,W]"
DEPTHWISE_NEW = "[1,H,W,I*M]"


@dataclass
class _Layer:
    """One layer as the file gives it."""

    position: int  # in the layers vector
    index: int  # LayerBase.index: what connections refer to
    name: str
    kind: LayerKind
    table: Table
    binding_id: int | None = None
    inputs: list[tuple[int, int]] = field(default_factory=list)  # per input slot: (source layer, output slot)
    outputs: list[TensorType] = field(default_factory=list)  # per output slot
    node: int | None = None  # the op (or graph input) in the IR
    constants: list[Value] = field(default_factory=list)  # operands synthesized from the table

    @property
    def where(self) -> str:
        return f"layer {self.index} '{self.name}'"

    @property
    def loc(self) -> Loc:
        return Loc(self.name, f"layer {self.index}")

    @property
    def graph_node(self) -> int:
        """`node`, of a layer the graph has by now (every layer but an Output one, once created)."""
        if self.node is None:
            raise AssertionError(f"{self.where} has no op in the graph")
        return self.node


@contextmanager
def _located(where: str) -> Iterator[None]:
    """Re-raise reading errors as naming `where` first (the layer), then what they said."""
    try:
        yield
    except InvalidInputError as e:
        detail = f"{e.where}: {e.message}" if e.where else e.message
        raise InvalidInputError(detail, where=where) from None
    except UnsupportedError as e:
        raise UnsupportedError([Unsupported(u.what, f"{where} {u.where}", u.why) for u in e.items]) from None


def read_graph(data: memoryview) -> Graph:
    return _Reader(data).read()


class _Reader:
    def __init__(self, data: memoryview):
        self.schema = load_schema("armnn")
        self.fb = FlatBuffer(data, self.schema)
        self.kinds = layer_kinds()
        self.graph = Graph(meta={"format": "armnn", "inputBindingIds": [], "outputBindingIds": []})
        self.layers: list[_Layer] = []
        self.by_index: dict[int, _Layer] = {}
        self.by_node: dict[int, _Layer] = {}

    def read(self) -> Graph:
        with _located("graph"):
            # one bounded walk of the whole buffer first: a hostile file whose tables share
            # subtrees cannot make the layer-by-layer reading below superlinear
            verify_buffer(self.fb)
            root = self.fb.root()
            flags = self._features(root)
            layers = root.get("layers")
            if layers is None:
                raise InvalidInputError("the file has no layers")
            input_ids, output_ids = root.get("inputIds"), root.get("outputIds")
        for position in range(len(layers)):
            self._add_layer(self._read_layer(position, layers))
        scheme = flags["bindingIdsScheme"]
        for layer in self._bound("Input", input_ids, scheme):
            self._create_input(layer)
        for layer in self.layers:
            if not layer.kind.bindable:
                with _located(layer.where):
                    self._create_op(layer)
        for layer in self.layers:
            if not layer.kind.bindable:
                with _located(layer.where):
                    self._wire(layer)
        self._record_content(flags, self._normalize_depthwise(flags))
        for layer in self._bound("Output", output_ids, scheme):
            with _located(layer.where):
                self._create_output(layer)
        self._check_acyclic()
        for layer in self.layers:
            with _located(layer.where):
                self._check_per_axis(layer)
            if not layer.kind.bindable:
                self._verify(layer)
        return self.graph

    # ---------------------------------------------------------------- the file's layers
    def _features(self, root: Table) -> dict[str, int]:
        """featureVersions as the Arm NN deserializer reads it (absent: every scheme 0)."""
        fv = root.get("featureVersions")
        names = ("bindingIdsScheme", "weightsLayoutScheme", "constantTensorsAsInputs")
        flags = {n: (0 if fv is None else int(fv.get(n))) for n in names}
        meta = self.graph.meta
        meta["featureVersions"] = fv is not None
        meta.update(flags)
        if fv is None:
            meta["generation"] = "pre-20.08"
        else:
            meta["generation"] = "23.08" if flags["constantTensorsAsInputs"] >= 1 else "20.08"
        return flags

    def _read_layer(self, position: int, layers: Any) -> _Layer:
        where = f"layer #{position}"
        with _located(where):
            any_layer = layers[position]
            tag = any_layer.get("layer_type")
            kind = self.kinds.get(tag)
            if kind is None:
                raise InvalidInputError(
                    "layer type NONE" if tag == 0 else f"layer type {tag} (union tag) is unknown to every Arm NN schema"
                )
            table = any_layer.get("layer")
            if table is None:  # a union tag without its value
                raise InvalidInputError(f"the layer has type {kind.table} but no table")
            base = table.get("base")
            if base is None:
                raise InvalidInputError(f"{kind.table} has no base")
            binding_id = None
            if kind.bindable:
                binding_id = int(base.get("layerBindingId"))
                base = base.get("base")
                if base is None:
                    raise InvalidInputError(f"{kind.table} has no LayerBase")
            name = base.get("layerName") or ""
            layer = _Layer(position, int(base.get("index")), name, kind, table, binding_id)
        with _located(layer.where):
            layer.inputs = self._input_slots(base)
            layer.outputs = [tensor_type(info, f"output slot {i}") for i, info in enumerate(self._output_infos(base))]
        return layer

    @staticmethod
    def _slots_in_order(slots: Any, what: str) -> list[Table]:
        """Slots sorted by their `index` field, which must number them 0..n-1."""
        if slots is None:
            return []
        by_index: dict[int, Table] = {}
        for slot in slots:
            i = int(slot.get("index"))
            if i in by_index or i >= len(slots):
                raise InvalidInputError(f"{what} slot indices are not 0..{len(slots) - 1} (slot index {i})")
            by_index[i] = slot
        return [by_index[i] for i in range(len(slots))]

    def _input_slots(self, base: Table) -> list[tuple[int, int]]:
        inputs = []
        for i, slot in enumerate(self._slots_in_order(base.get("inputSlots"), "input")):
            connection = slot.get("connection")
            if connection is None:
                raise InvalidInputError(f"input slot {i} is not connected")
            if slot.get("isOverridden"):
                raise UnsupportedError([Unsupported("isOverridden", f"input slot {i}", "an input slot that overrides its tensor info")])
            inputs.append((int(connection["sourceLayerIndex"]), int(connection["outputSlotIndex"])))
        return inputs

    def _output_infos(self, base: Table) -> list[Table | None]:
        return [slot.get("tensorInfo") for slot in self._slots_in_order(base.get("outputSlots"), "output")]

    def _add_layer(self, layer: _Layer) -> None:
        other = self.by_index.get(layer.index)
        if other is not None:
            raise InvalidInputError(f"has the same index as layer #{other.position} '{other.name}'", where=layer.where)
        self.layers.append(layer)
        self.by_index[layer.index] = layer

    def _bound(self, kind: str, ids: np.ndarray | None, scheme: int) -> list[_Layer]:
        """Input or Output layers in the order inputIds/outputIds list them (binding ids, or layer
        indices when bindingIdsScheme is 0); layers the list misses follow in file order."""
        layers = [layer for layer in self.layers if layer.kind.name == kind]
        if ids is None:
            return layers
        key = (lambda layer: layer.index) if scheme == 0 else (lambda layer: layer.binding_id)
        by_key: dict[int, _Layer] = {}
        for layer in layers:
            if key(layer) in by_key:
                raise InvalidInputError(f"two {kind} layers have binding id {key(layer)}", where=layer.where)
            by_key[key(layer)] = layer
        ordered: list[_Layer] = []
        what = "layer index" if scheme == 0 else "binding id"
        list_name = f"{kind.lower()}Ids"
        for i in ids.tolist():
            listed = by_key.get(i)
            if listed is None:
                raise InvalidInputError(f"{list_name} lists {what} {i}, which no {kind} layer has", where="graph")
            if listed in ordered:
                raise InvalidInputError(f"{list_name} lists {what} {i} twice", where="graph")
            ordered.append(listed)
        return ordered + [layer for layer in layers if layer not in ordered]

    # ---------------------------------------------------------------- building the graph
    def _create_input(self, layer: _Layer) -> None:
        if len(layer.outputs) != 1:
            raise InvalidInputError(f"an Input layer has {len(layer.outputs)} output slots, not 1", where=layer.where)
        value = self.graph.add_input(layer.outputs[0], layer.name, layer.loc)
        self.graph.attrs(value.node)["binding_id"] = layer.binding_id
        self.graph.meta["inputBindingIds"].append(layer.binding_id)
        self._bind(layer, value.node)

    def _bind(self, layer: _Layer, node: int) -> None:
        layer.node = node
        self.by_node[node] = layer

    def _constant(self, tensor: Table, what: str, loc: Loc, result: TensorType | None = None) -> int:
        value, t = const_array(self.fb.buf, tensor, what)
        if result is not None:
            if result.shape != t.shape or result.dtype != t.dtype:
                raise InvalidInputError(f"{what} is {t} but the output slot says {result}")
            t = result
        return self.graph.add_op(CONSTANT_OP, (), [t], {"value": value}, loc)

    def _create_op(self, layer: _Layer) -> None:
        kind, table = layer.kind, layer.table
        if kind.name == "Constant":
            if len(layer.outputs) != 1:
                raise InvalidInputError(f"a Constant layer has {len(layer.outputs)} output slots, not 1")
            tensor = table.get("input")
            if tensor is None:
                raise InvalidInputError("the Constant layer has no tensor")
            self._bind(layer, self._constant(tensor, "the constant", layer.loc, layer.outputs[0]))
            return
        for name in kind.constants:  # weights, biases, mean, ... held in the table (20.08 style)
            tensor = table.get(name)
            if tensor is not None:
                layer.constants.append(Value(self._constant(tensor, name, layer.loc)))
        attrs: dict[str, Any] = {}
        if kind.descriptor is not None:
            attrs.update(descriptors.read(self.schema, table.get("descriptor"), self.schema.tables[kind.descriptor]))
        if kind.params:
            params = table.get(PARAMS_FIELD)
            present = []
            for name in kind.params:
                tensor = None if params is None else params.get(name)
                if tensor is not None:
                    layer.constants.append(Value(self._constant(tensor, f"{PARAMS_FIELD}.{name}", layer.loc)))
                    present.append(name)
            attrs[PARAMS_FIELD] = present
        self._bind(layer, self.graph.add_op(kind.op, (), layer.outputs, attrs, layer.loc))

    def _source(self, layer: _Layer, slot: int) -> Value:
        """The value input slot `slot` of `layer` is connected to."""
        source_index, output_slot = layer.inputs[slot]
        source = self.by_index.get(source_index)
        if source is None:
            raise InvalidInputError(f"input slot {slot} is connected to layer {source_index}, which does not exist")
        if source.node is None or not 0 <= output_slot < len(source.outputs):
            raise InvalidInputError(
                f"input slot {slot} is connected to output slot {output_slot} of {source.where}, "
                f"which has {len(source.outputs)} output slot(s)"
            )
        return Value(source.node, output_slot)

    def _wire(self, layer: _Layer) -> None:
        slots = layer.kind.input_slots
        data_slots = slots if isinstance(slots, int) else slots[1]
        if layer.constants and data_slots is not None and len(layer.inputs) > data_slots:
            held = [name for name in layer.kind.constants if layer.table.get(name) is not None]
            raise InvalidInputError(
                f"the layer holds {', '.join(held)} in its table and has {len(layer.inputs)} connected input "
                "slots as well: which to use is ambiguous"
            )
        operands = [self._source(layer, i) for i in range(len(layer.inputs))] + layer.constants
        self.graph.set_operands(layer.graph_node, operands)

    def _create_output(self, layer: _Layer) -> None:
        if len(layer.inputs) != 1:
            raise InvalidInputError(f"an Output layer has {len(layer.inputs)} input slots, not 1")
        self.graph.add_output(self._source(layer, 0), layer.name)
        self.graph.meta["outputBindingIds"].append(layer.binding_id)

    # ---------------------------------------------------------------- normalizing weights
    def _normalize_depthwise(self, flags: dict[str, int]) -> set[str]:
        """Bring every depthwise layer's constant weights to [1, H, W, I*M] (see depthwise_layout);
        returns the layouts the file used."""
        g = self.graph
        layouts = set()
        for layer in self.layers:
            if layer.kind.name != "DepthwiseConvolution2d":
                continue
            with _located(layer.where):
                operands = g.operands(layer.graph_node)
                if len(operands) < 2:
                    continue  # the verifier reports the missing weights
                weights = operands[1]
                if g.op(weights.node) != CONSTANT_OP:
                    continue  # weights computed at run time: only the new layout exists there
                layout = depthwise_layout(g, layer.graph_node, g.tensor_type(weights), flags["weightsLayoutScheme"])
                layouts.add(layout)
                if layout == DEPTHWISE_OLD:
                    self._convert_depthwise_weights(layer, weights)
        return layouts

    def _convert_depthwise_weights(self, layer: _Layer, weights: Value) -> None:
        """Replace operand 1 by a converted copy, at the original's location (the depthwise layer
        for weights its table held, the Constant layer otherwise); the original goes if unused."""
        g = self.graph
        t = g.tensor_type(weights)
        reserve(t.shape, t.dtype, "relayout of depthwise weights", where=layer.where)  # nn2tosa.limits: a copy
        value, t = mihw_to_1hwim(g.attrs(weights.node)["value"], t)
        converted = g.add_op(CONSTANT_OP, (), [t], {"value": value}, g.loc(weights.node))
        g.set_operand(layer.graph_node, 1, Value(converted))
        if not g.has_uses(weights):
            g.erase(weights.node)
            if weights.node in self.by_node:  # a Constant layer: it now holds the converted tensor
                self._bind(self.by_node.pop(weights.node), converted)
        layer.constants = [Value(converted) if v == weights else v for v in layer.constants]

    def _record_content(self, flags: dict[str, int], depthwise_layouts: set[str]) -> None:
        """meta: where the weights were and whether the featureVersions flags said so."""
        placements = {
            "inline" if layer.constants else "inputs" for layer in self.layers if layer.kind.name in _WEIGHTS_AS_INPUTS_LAYERS
        }
        meta = self.graph.meta
        meta["weights"] = _one_or_mixed(placements, "none")
        if depthwise_layouts:
            meta["depthwiseLayout"] = _one_or_mixed(depthwise_layouts, "")
        claimed_placement = "inline" if flags["constantTensorsAsInputs"] == 0 else "inputs"
        claimed_layout = DEPTHWISE_OLD if flags["weightsLayoutScheme"] == 0 else DEPTHWISE_NEW
        meta["flagsMatchContent"] = (
            meta["weights"] in ("none", claimed_placement) and meta.get("depthwiseLayout", claimed_layout) == claimed_layout
        )

    # ---------------------------------------------------------------- checks
    def _check_acyclic(self) -> None:
        try:
            self.graph.topological()
        except ValueError:
            import networkx as nx

            cycle = nx.find_cycle(self.graph.nx)
            names = [self.by_node[u].where for u, *_ in cycle if u in self.by_node]
            raise InvalidInputError(f"the connections form a cycle: {' -> '.join(names + names[:1])}") from None

    def _check_per_axis(self, layer: _Layer) -> None:
        """Per-axis scales only depthwise weights may hold until they are normalized (tensors._scales_axis)."""
        g = self.graph
        for slot, result in enumerate(g.results(layer.node) if layer.node is not None else ()):
            check_per_axis(g.tensor_type(result), f"output slot {slot}")
        for value in layer.constants:
            check_per_axis(g.tensor_type(value), "weights")

    def _verify(self, layer: _Layer) -> None:
        """The op's registered definition (arity, attributes, bias and weights conventions) holds."""
        node = layer.graph_node
        problems = op_problems(self.graph, node)
        if problems:
            prefix = f"{self.graph.op(node)} %{node}"
            text = problems[0].split(": ", 1)[1] if problems[0].startswith(prefix) else problems[0]
            raise InvalidInputError(f"{layer.kind.name}: {text}", where=layer.where)


def _one_or_mixed(values: set[str], none: str) -> str:
    return none if not values else next(iter(values)) if len(values) == 1 else "mixed"


def depthwise_layout(g: Graph, node: int, weights: TensorType, layout_scheme: int) -> str:
    """Which layout a depthwise layer's constant weights are in: [M, I, H, W] (weightsLayoutScheme
    0) or [1, H, W, I*M] (1). The shape decides when only one layout fits the layer's input (I)
    and output (I*M) channel counts; the flag decides when both fit (e.g. M = I = 1, H = W)."""
    data = g.tensor_type(g.operand(node, 0))
    if not g.types(node):
        raise InvalidInputError("a depthwise convolution with no output slot")
    out = g.tensor_type(Value(node, 0))
    channel = 1 if g.attrs(node)["dataLayout"] == "NCHW" else 3
    if data.rank != 4 or out.rank != 4 or weights.rank != 4:
        raise InvalidInputError(f"depthwise input {data}, weights {weights} and output {out} are not all rank 4")
    i, o = data.shape[channel], out.shape[channel]
    s = weights.shape
    fits_new = s[0] == 1 and s[3] == o
    fits_old = s[1] == i and s[0] * s[1] == o
    if fits_new and fits_old:
        return DEPTHWISE_OLD if layout_scheme == 0 else DEPTHWISE_NEW
    if fits_new:
        return DEPTHWISE_NEW
    if fits_old:
        return DEPTHWISE_OLD
    raise InvalidInputError(
        f"depthwise weights {list(s)} fit neither [M, I, H, W] nor [1, H, W, I*M] for {i} input and {o} output channels"
    )


def mihw_to_1hwim(value: np.ndarray, t: TensorType) -> tuple[np.ndarray, TensorType]:
    """[M, I, H, W] depthwise weights as [1, H, W, I*M] (channel i*M + m), as Arm NN's own
    deserializer converts them; the one place the reader copies weights. Per-axis scales follow:
    per M (axis 0) repeat for every input channel, per I (axis 1) for every multiplier, and
    M*I scales (20.08 records them as axis 0) are already one per output channel."""
    m, i, h, w = value.shape
    converted = np.ascontiguousarray(value.transpose(2, 3, 1, 0)).reshape(1, h, w, i * m)
    q = t.quant
    if q is not None and q.axis is not None:
        scales, zero_points = np.array(q.scales), np.array(q.zero_points)
        if len(scales) in (1, i * m):
            pass  # one scale for the whole axis, or already one per output channel (20.08: recorded as axis 0)
        elif q.axis == 0:
            scales, zero_points = np.tile(scales, i), np.tile(zero_points, i)
        elif q.axis == 1:
            scales, zero_points = np.repeat(scales, m), np.repeat(zero_points, m)
        else:
            raise InvalidInputError(f"depthwise weights quantized per axis {q.axis} of [M, I, H, W]: not per channel")
        if len(scales) == 1:
            scales, zero_points = np.repeat(scales, i * m), np.repeat(zero_points, i * m)
        q = Quant(tuple(scales.tolist()), tuple(int(z) for z in zero_points), 3, q.expressed)
    return converted, TensorType(converted.shape, t.dtype, q)
