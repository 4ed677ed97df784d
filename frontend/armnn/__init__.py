"""Arm NN serialized networks (.armnn) -> the IR, one `armnn.*` op per layer.

Conventions every later pass can rely on (docs/frontend_armnn.md says the same at more length):

- Ops: one `armnn.<LayerType>` per layer, named after the schema's `union Layer` member (old types
  such as `armnn.Addition` or `armnn.Merger` as themselves). The member, not `LayerBase.layerType`,
  decides: Arm NN writes TransposeConvolution2d layers with layerType Convolution2d. Attributes are
  the descriptor's fields, named as in the schema (camelCase), enums as their names, absent fields
  at their schema defaults (descriptors.py). Location: Loc(layer name, "layer <LayerBase.index>").
- Inputs and outputs: Input layers are graph inputs (`binding_id` in the input op's attrs), Output
  layers are graph outputs named after the layer; both in the order the file's inputIds/outputIds
  list them (binding ids; layer indices when bindingIdsScheme is 0). There are no Input/Output ops.
  `meta["inputBindingIds"]`/`meta["outputBindingIds"]` list the binding ids in that order.
- Operands: the connected input slots in slot order, then one operand per ConstTensor the layer's
  table holds, in schema order: weights (1) and biases (2) of Convolution2d, DepthwiseConvolution2d,
  FullyConnected, TransposeConvolution2d; mean, variance, beta, gamma (1-4) of BatchNormalization;
  anchors (2) of DetectionPostProcess; the present LSTM parameters of Lstm, QLstm, QuantizedLstm and
  UnidirectionalSequenceLstm after their 3 data inputs, named in order by their `inputParams`
  attribute. Each such operand is an `armnn.Constant` op located at the owning layer. So a 20.08
  file (weights in the table) and a 23.08 file (weights as Constant layers on input slots 1 and 2)
  give the same IR.
- Depthwise weights are [1, H, W, I*M] (channel i*M + m) in every file: [M, I, H, W] weights of
  20.08 files are converted (a copy, the only one), per-axis scales with them.
- Types: TensorType with MLIR element types (tensors.py): Float32 f32, Float16 f16, QAsymmU8 ui8,
  QAsymmS8 i8, QSymmS8 i8, QSymmS16 i16, Signed32 i32, Signed64 i64, Boolean i1; quantization
  per tensor or per axis on the type. Constants are read-only numpy views into the file.
- meta: `generation` as the featureVersions flags claim ("pre-20.08" without them, "20.08",
  "23.08"), the three flags, and what the content showed: `weights` ("inline", "inputs", "mixed",
  "none"), `depthwiseLayout`, `flagsMatchContent`. Content decides; the flags only break ties.
- Errors: InvalidInputError naming the layer (index and name) and what is wrong; every offset is
  checked before use (nn2tosa.schemas.flatread).
"""
from __future__ import annotations

from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.ir import Graph
from nn2tosa.ir.graph import INPUT_OP
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.flatread import FlatBuffer

from .reader import read_graph

__all__ = ["sniff", "read", "layer_histogram"]

# SerializedGraph has 4 fields (layers, inputIds, outputIds, featureVersions); leave room for
# fields later versions may add, but not for any table at all.
_MAX_ROOT_FIELDS = 8


def sniff(data: memoryview) -> bool:
    """True when `data` is shaped like an Arm NN SerializedGraph: a root table with at most a few
    fields, the first of them (`layers`) present. Arm NN writes no file identifier, so this is
    structure only (an "ARMN" identifier is accepted but not needed). A flatbuffer cut short
    before its root table's vtable is claimed too, so that `read` reports the truncation."""
    try:
        root = FlatBuffer(data, load_schema("armnn")).root()  # checks the root table and its vtable
    except InvalidInputError:
        return _cut_before_root_vtable(data)
    vtable = root.offset - _int32(data, root.offset)
    return int.from_bytes(data[vtable : vtable + 2], "little") <= 4 + 2 * _MAX_ROOT_FIELDS and root.has("layers")


def _int32(data: memoryview, at: int) -> int:
    return int.from_bytes(data[at : at + 4], "little", signed=True)


def _cut_before_root_vtable(data: memoryview) -> bool:
    """A 4-aligned root offset inside the data whose table's vtable would lie past its end."""
    if len(data) < 8:
        return False
    root = _int32(data, 0)
    if root % 4 or not 4 <= root <= len(data) - 4:
        return False
    return root - _int32(data, root) + 4 > len(data)


def read(data: memoryview, name: str) -> list[Graph]:
    """The graph of an Arm NN serialized network (`name` is for messages; errors raise
    InvalidInputError / UnsupportedError, which the caller locates at the file)."""
    return [read_graph(data)]


def layer_histogram(graph: Graph) -> dict[str, int]:
    """LayerType name -> count of the file's layers this graph holds (Input and Output included),
    as Arm NN counts them: Constant ops synthesized for a layer's weights share that layer's
    location and are not layers of their own."""
    op_at: dict[str | None, str] = {}
    for node in graph.nodes():
        if graph.op(node) == INPUT_OP:
            continue
        loc = graph.loc(node)
        key = loc.detail if loc is not None else f"%{node}"
        if op_at.get(key, "armnn.Constant") == "armnn.Constant":  # the owning layer's op wins
            op_at[key] = graph.op(node)
    counts: dict[str, int] = {}
    for op in op_at.values():
        name = op.split(".", 1)[1]
        counts[name] = counts.get(name, 0) + 1
    for name, n in (("Input", len(graph.inputs)), ("Output", len(graph.outputs))):
        if n:
            counts[name] = n
    return dict(sorted(counts.items()))
