"""What the Arm NN schema says about each layer type, derived from schemas/armnn.fbs.

The reader and the dialect both work from this catalogue, so adding a layer type to the schema
adds it here without code: its descriptor's fields become attributes, its ConstTensor fields
become constant operands. The only hand-written facts are the ones the schema does not hold:
how many tensors a layer's input slots connect and how many outputs it has (`_INPUT_SLOTS`,
`_RESULTS`), and the data type table (`DATA_TYPES`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from nn2tosa.ir.registry import Arity
from nn2tosa.schemas import Schema, load_schema
from nn2tosa.schemas.model import FieldDef, TableDef

LAYER_UNION = "Layer"
CONST_TENSOR = "ConstTensor"
PARAMS_FIELD = "inputParams"  # the LSTM family's table of ConstTensors
BINDABLE_BASE = "BindableLayerBase"


@dataclass(frozen=True)
class DataType:
    """How an Arm NN DataType is held in the IR: MLIR element type and whether it is quantized."""

    element: str
    quantized: bool = False
    symmetric: bool = False  # zero point always 0


# Arm NN DataType name -> IR element type. Old names (QuantisedAsymm8, QuantisedSymm16) are the
# same values under their pre-20.02 spelling. BFloat16 is listed for completeness: Arm NN has it,
# but no serializer schema (20.08, 23.08, latest) can write it.
DATA_TYPES: dict[str, DataType] = {
    "Float16": DataType("f16"),
    "Float32": DataType("f32"),
    "BFloat16": DataType("bf16"),
    "QAsymmU8": DataType("ui8", quantized=True),
    "QuantisedAsymm8": DataType("ui8", quantized=True),
    "QAsymmS8": DataType("i8", quantized=True),
    "QSymmS8": DataType("i8", quantized=True, symmetric=True),
    "QSymmS16": DataType("i16", quantized=True, symmetric=True),
    "QuantisedSymm16": DataType("i16", quantized=True, symmetric=True),
    "Signed32": DataType("i32"),
    "Signed64": DataType("i64"),
    "Boolean": DataType("i1"),
}

# Tensors the layer's input slots connect, in the newest Arm NN (23.08 and later), NOT counting
# the ConstTensor fields of its table (weights, biases, ...): those are counted from the schema.
# Convolution2d's weights on input slot 1 are its `weights` field's place, so Convolution2d is 1.
_INPUT_SLOTS: dict[Arity, str] = {
    0: "Constant",
    1: "Abs Activation ArgMinMax BatchNormalization BatchToSpaceNd Cast ChannelShuffle Convolution2d "
       "DepthToSpace DepthwiseConvolution2d Dequantize ElementwiseUnary Fill Floor FullyConnected "
       "InstanceNormalization L2Normalization LogSoftmax Mean Normalization Pad Permute Pooling2d Pooling3d "
       "Quantize Rank Reduce Reshape Resize ResizeBilinear Rsqrt Shape Slice Softmax SpaceToBatchNd "
       "SpaceToDepth Splitter StridedSlice Tile Transpose TransposeConvolution2d",
    2: "Addition BatchMatMul Comparison DetectionPostProcess Division ElementwiseBinary Equal Gather GatherNd "
       "Greater LogicalBinary Maximum Merge Minimum Multiplication Prelu ReverseV2 Subtraction Switch",
    3: "Lstm QLstm QuantizedLstm ScatterNd UnidirectionalSequenceLstm",  # ScatterNd: input|shape, indices, updates
    (2, 3): "Convolution3d",  # input, weights, optional bias: never table fields
    (1, None): "Concat Merger Stack",
    (0, None): "StandIn",
}
# Output slots; every layer type not listed has one.
_RESULTS: dict[Arity, str] = {
    (1, None): "Splitter",
    (0, None): "StandIn",
    2: "QuantizedLstm Switch",
    3: "QLstm",
    4: "DetectionPostProcess Lstm",
    (1, 3): "UnidirectionalSequenceLstm",  # 3 slots: output state, cell state, output sequence (the order the files hold)
}
# ConstTensor fields that may be absent (the descriptor's biasEnabled says whether they are there).
OPTIONAL_CONSTANTS = frozenset({"biases"})


@dataclass(frozen=True)
class LayerKind:
    """One member of the schema's `union Layer`.

    name: the LayerType name (the union member without "Layer"), the op is `armnn.<name>`.
    descriptor: the descriptor table's name, or None.
    constants: the table's ConstTensor fields in schema order (weights, biases, mean, ...).
    params: the ConstTensor fields of its `inputParams` table (the LSTM family), in schema order.
    """

    name: str
    table: str
    union_tag: int
    descriptor: str | None
    constants: tuple[str, ...]
    params: tuple[str, ...]
    input_slots: Arity
    results: Arity
    bindable: bool

    @property
    def op(self) -> str:
        return f"armnn.{self.name}"

    @property
    def operands(self) -> Arity:
        """Operand count in the IR: connected inputs, then the constants the table held."""
        lo, hi = (self.input_slots, self.input_slots) if isinstance(self.input_slots, int) else self.input_slots
        required = sum(1 for c in self.constants if c not in OPTIONAL_CONSTANTS)
        if self.name == "Constant":  # its own ConstTensor is its value, not an operand
            return 0
        lo += required
        hi = None if hi is None else hi + len(self.constants) + len(self.params)
        return lo if lo == hi else (lo, hi)


def _by_name(table: dict[Arity, str]) -> dict[str, Arity]:
    return {name: arity for arity, names in table.items() for name in names.split()}


def _field_table(schema: Schema, f: FieldDef) -> TableDef | None:
    return schema.tables.get(f.type.name) if f.type.kind == "table" else None


def _layer_kind(schema: Schema, member_name: str, table_name: str, tag: int, inputs: dict, results: dict) -> LayerKind:
    table = schema.tables[table_name]
    name = member_name.removesuffix("Layer")
    descriptor, bindable = None, False
    constants: list[str] = []
    params: tuple[str, ...] = ()
    for f in table.visible_fields():
        sub = _field_table(schema, f)
        if f.name == "base":
            bindable = f.type.name == BINDABLE_BASE
        elif f.name == "descriptor" and sub is not None:
            descriptor = sub.name
        elif f.type.kind == "table" and f.type.name == CONST_TENSOR:
            constants.append(f.name)
        elif f.name == PARAMS_FIELD and sub is not None:
            params = tuple(p.name for p in sub.visible_fields() if p.type.name == CONST_TENSOR)
        else:  # a new kind of layer field: the reader would silently drop it
            raise TypeError(f"{table_name}.{f.name}: a layer field the Arm NN catalogue does not know")
    if not bindable and name not in inputs:
        raise TypeError(f"layer type {name}: its input slot count is missing from _INPUT_SLOTS")
    return LayerKind(name, table_name, tag, descriptor, tuple(constants), params,
                     inputs.get(name, 0), results.get(name, 1), bindable)


@functools.cache
def layer_kinds() -> dict[int, LayerKind]:
    """Union tag -> LayerKind for every member of `union Layer` (Input and Output included)."""
    schema = load_schema("armnn")
    inputs, results = _by_name(_INPUT_SLOTS), _by_name(_RESULTS)
    layer_types = set(schema.enums["LayerType"].values)
    kinds = {}
    for m in schema.unions[LAYER_UNION].members:
        kind = _layer_kind(schema, m.name, m.table, m.value, inputs, results)
        if kind.name not in layer_types:
            raise TypeError(f"union Layer member {m.name} has no LayerType {kind.name}")
        kinds[m.value] = kind
    unknown = (set(inputs) | set(results)) - {k.name for k in kinds.values()}
    if unknown:
        raise TypeError(f"arity tables name layer types the schema lacks: {sorted(unknown)}")
    return kinds


@functools.cache
def kinds_by_name() -> dict[str, LayerKind]:
    return {k.name: k for k in layer_kinds().values()}
