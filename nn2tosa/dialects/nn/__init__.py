"""The canonical `nn` dialect: the op set both frontends legalize into and lowering consumes.

Conventions (every legalization produces them, every lowering rule may rely on them):
- Layout: spatial ops take NHWC activations (NDHWC in 3-D). Weights: conv2d [O, KH, KW, I/groups],
  depthwise_conv2d [KH, KW, C, M] (output channel c*M+m), conv3d [O, KD, KH, KW, I],
  transpose_conv2d [O, KH, KW, I], fully_connected [O, K]. Padding lists are
  [top, bottom, left, right] ([front, back, top, bottom, left, right] in 3-D).
- Types: operands of an elementwise op share one storage dtype; quantization lives on tensor
  types (result types of quantized ops carry the output scale chosen by the source).
- Axes are non-negative. Shapes are static.
- Numpy broadcasting for every elementwise op (operands may differ in rank).
- High-level ops (softmax, layer_norm, batch_norm, gelu, reductions, ...) stay whole until lowering.
Each op is one `define_nn(...)` (arity, attributes, result inference, folder, verifier, traits, doc) in the
module of its family below; docs/supported_ops.md is generated from them.

    common.py       helpers the definitions share (define_nn: inference and folders on tensor types,
                    broadcasting, folders from numpy functions)
    elementwise.py  the constant, elementwise unary/binary/ternary ops, comparisons, casts
    data.py         reshape, transpose, concat, split, slices, pad, tile, gathers and scatters
    reduce.py       reductions, arg max/min, softmax, normalizations
    spatial.py      convolutions, fully connected, matmul, pooling, resize
    quantized.py    quantize, dequantize, requantize, the integer LSTM cells
"""
from __future__ import annotations

from nn2tosa.ir import Dialect, register_dialect

register_dialect(Dialect("nn", "canonical neural-network ops", constant_op="nn.constant", constant_attr="value"))

from . import elementwise, data, reduce, spatial, quantized  # noqa: E402,F401,I001  (each defines its ops, in this order)
from .common import broadcast_shape  # noqa: E402

__all__ = ["broadcast_shape"]
