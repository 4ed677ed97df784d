"""The `legalize-armnn` pass: Arm NN layers (`armnn.*`, docs/frontend_armnn.md) -> the nn dialect.

Every layer becomes nn ops computing what Arm NN computes (its reference backend, CpuRef, is the
ground truth the corpus records), at the layer's location:

- one rule per layer type (registry.py), grouped by family: elementwise.py (activations,
  elementwise, comparison, logical, casts, quantize/dequantize), spatial.py (convolutions,
  pooling, resize, normalizations, space/depth/batch rearrangements), tensors.py (constants,
  shapes, data movement, reductions, softmax, fully connected, batch matmul, gather/scatter),
  recurrent.py (the LSTM family unrolled over time), qlstm.py (QLstm as CpuRef computes it),
  lstm_integer.py (the integer LSTM cells: TFLite's under --semantics litert, QuantizedLstm),
  detection.py (DetectionPostProcess: box decoding and non-maximum suppression unrolled into
  max-detections steps);
- NCHW/NCDHW layers get explicit nn.transpose to channels-last and back (weights too, as
  transposes of constants that the canonicalizer folds); NHWC passes through;
- tensor types are kept as the frontend gives them, quantization included (layer.py says how
  multi-op decompositions of quantized layers compute);
- layers nn cannot express are collected, and the pass raises one UnsupportedError listing all of
  them (name, index, why) after trying every layer (a partial conversion sets
  PassContext.keep_unsupported instead: they stay in place, see passes/context.py's report_unsupported);
- a layer whose shapes or parameters contradict each other (a damaged or hand-made file: weights
  that do not fit the input, a zero stride, a reshape that changes the element count) is an
  InvalidInputError naming the layer, found while its nn ops are built (every op's type is checked
  against the op's own inference).

Values no op reads any more (a Fill's shape operand, constants consumed at compile time) are
removed at the end.
"""
from __future__ import annotations

from nn2tosa.diagnostics import InvalidInputError, Unsupported
from nn2tosa.ir import Graph

from ..dce import dce
from ..context import report_unsupported
from ..manager import register_pass
from . import detection, elementwise, lstm_integer, qlstm, recurrent, spatial, tensors  # noqa: F401  (rule registration)
from .layer import Layer, NotLegalizable
from .registry import NO_MEANING, RULES

__all__ = ["legalize_armnn", "RULES", "NO_MEANING"]


@register_pass("legalize-armnn")
def legalize_armnn(graph: Graph) -> None:
    """Rewrite armnn.* layers into nn ops with Arm NN's semantics (all unsupported layers reported at once)."""
    unsupported: list[Unsupported] = []
    for node in graph.topological():
        op = graph.op(node)
        if not op.startswith("armnn."):
            continue
        layer = Layer(graph, node)
        rule = RULES.get(layer.type_name)
        try:
            if rule is None:
                raise NotLegalizable(NO_MEANING.get(layer.type_name, "no legalization rule for this layer type"))
            results = layer.apply(rule)
        except NotLegalizable as e:
            unsupported.append(Unsupported(layer.type_name, layer.where, e.why))
            continue
        # shapes or parameters that contradict each other, or values beyond their types (an OverflowError)
        except (ValueError, IndexError, ZeroDivisionError, OverflowError) as e:
            raise InvalidInputError(f"{layer.type_name} layer whose shapes or parameters are inconsistent: {e}",
                                    where=layer.where) from None
        if len(results) != len(layer.result_types):
            raise AssertionError(f"rule for {layer.type_name} made {len(results)} results for "
                                 f"{len(layer.result_types)}")
        for i, (new, declared) in enumerate(zip(results, layer.result_types)):
            # an output slot whose shape contradicts what the layer computes (a damaged dimension): the
            # converted graph would not have the outputs the file declares
            have = graph.tensor_type(new).shape
            if all(d >= 0 for d in declared.shape) and tuple(have) != tuple(declared.shape):
                raise InvalidInputError(f"{layer.type_name} layer whose output slot {i} is declared "
                                        f"{'x'.join(map(str, declared.shape)) or 'scalar'} but computes "
                                        f"{'x'.join(map(str, have)) or 'scalar'}", where=layer.where)
        graph.replace_op(node, results)
    report_unsupported(unsupported)  # raises, unless a partial conversion keeps them in place
    dce(graph)
