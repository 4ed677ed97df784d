"""Quantized tensors at the graph boundary: unsigned inputs and outputs keep their raw bits (RESCALE
input_unsigned / output_unsigned next to them, lowering/lower.py), and the int4 weights `--keep-int4`
cannot keep. How quantized tensors are carried inside the graph: lowering/fixed_point/."""
from __future__ import annotations

from nn2tosa.diagnostics import Unsupported
from nn2tosa.ir import Graph, TensorType, Type, Value
from nn2tosa.ir.graph import Output

from .context import LoweringContext
from .fixed_point.carrier import qinfo, unsigned_offset
from .fixed_point.rescale import rescale


# ------------------------------------------------------------------------------ the graph boundary
def unsigned_input_to_signed(graph: Graph, node: int, nn_type: Type) -> Value | None:
    """For a graph input of unsigned quantized type (raw uint8 bits in an i8 tensor): a RESCALE
    (input_unsigned) next to it making the carried signed values q - 128, which every use of the
    input reads instead. Returns that value, or None for other inputs."""
    if not isinstance(nn_type, TensorType) or not unsigned_offset(nn_type):
        return None
    raw = Value(node, 0)
    users = graph.users(raw)
    outputs = [o for o in graph.outputs if o.value == raw]
    ctx = LoweringContext(graph, node, [])
    offset = unsigned_offset(nn_type)
    signed = rescale(ctx, raw, 1.0, qinfo(nn_type).dtype, in_zp=offset, input_unsigned=True)
    for use in users:
        graph.set_operand(use.node, use.operand, signed)
    for o in outputs:
        o.value = signed
    return signed


def unsigned_output_from_signed(graph: Graph, out: Output, nn_type: Type) -> None:
    """A graph output of unsigned quantized type gets its raw bits back: RESCALE (output_unsigned)
    of the carried signed values adds the 128 (32768) the carrier took off."""
    if not isinstance(nn_type, TensorType) or not unsigned_offset(nn_type):
        return
    ctx = LoweringContext(graph, out.value.node, [])
    out.value = rescale(ctx, out.value, 1.0, qinfo(nn_type).dtype, out_zp=unsigned_offset(nn_type),
                        output_unsigned=True)


# ------------------------------------------------------------------------------ int4 weights (MPS)
# The source ops whose int4 weights legalization folds into float constants.
INT4_DEQUANTIZATIONS = {"mps.DequantizePerChannelGroup": "group-quantized int4 weights"}
KEEP_INT4_WHY = (
    "TOSA 1.0 keeps int4 weights only in CONV2D/CONV3D/DEPTHWISE_CONV2D/TRANSPOSE_CONV2D of int8 data with one "
    "scale per output channel (EXT-INT4); these multiply float activations with one scale per group of {group} "
    "reduction elements, which no TOSA 1.0 op takes, so keeping them would change the arithmetic (without "
    "--keep-int4 they become float weights)")


def int4_weights_kept_unsupported(graph: Graph) -> list[Unsupported]:
    """What `convert --keep-int4` cannot keep as int4 in TOSA 1.0, with the reason (empty: nothing)."""
    found = []
    for node in graph.nodes():
        op = graph.op(node)
        if op in INT4_DEQUANTIZATIONS:
            loc = graph.loc(node)
            group = graph.attrs(node).get("group_size", "?")
            found.append(Unsupported(INT4_DEQUANTIZATIONS[op], str(loc) if loc else f"%{node}",
                                     KEEP_INT4_WHY.format(group=group)))
    return found
