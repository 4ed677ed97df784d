"""TOSA tensor operators (convolutions, pooling, matmul, argmax, FFT): one record each."""
from __future__ import annotations

from nn2tosa.ir import attr
from nn2tosa.tosa_flatbuffer.fields_0100 import (RESULT, AccumulatorIsResult, Attr, OptionalFlag, OutputShape,
                                                 PoolAccumulator, PropagatesNan, ZeroPoint, legacy)

from . import infer, levels
from .attrs import ACC_TYPE, AXIS, DILATION2, KERNEL2, LOCAL_BOUND, NAN_MODE, PAD4, STRIDE2
from .record import TosaOp, operands, register, support
from .support import CONV_SUPPORT, E4, E5, SIG_IN

_CONV_ATTRS = {"pad": PAD4, "stride": STRIDE2, "dilation": DILATION2, "acc_type": ACC_TYPE, "local_bound": LOCAL_BOUND}
_CONV_OPERANDS = operands("input", "weight", "bias", "input_zp:const", "weight_zp:const")
# 0.90 has no accumulator attribute: it accumulates in the output type
_CONV_0100 = (Attr("pad"), Attr("stride"), Attr("dilation"), ZeroPoint("input_zp", 3, like=0),
              ZeroPoint("weight_zp", 4, like=1), OptionalFlag("local_bound"), AccumulatorIsResult())
_POOL_ATTRS = {"kernel": KERNEL2, "stride": STRIDE2, "pad": PAD4}
_POOL_0100 = (Attr("pad"), Attr("kernel"), Attr("stride"))
_ARGMAX_LIKE = {"int": "i8", "fp": "f16 f32", "int16": "i16", "fp8e4m3": E4, "fp8e5m2": E5, "bf16": "bf16"}

register(
    TosaOp("argmax", operands("input"), "Index (i32) of the largest value along `axis`, which is removed from the shape.",
           support(SIG_IN, _ARGMAX_LIKE), attrs={"axis": AXIS, "nan_mode": NAN_MODE}, infer=infer.argmax,
           legacy=legacy("ARGMAX", "AxisAttribute", Attr("axis"), PropagatesNan())),
    TosaOp("avg_pool2d", operands("input", "input_zp:const", "output_zp:const"),
           "NHWC average pooling; padding is excluded from the divisor; integer results are rounded.",
           support(("o0", "acc"), {"int": "i8,i32", "fp": "f16,f16 f16,f32 f32,f32", "int16": "i16,i32",
                                   "fp8e4m3": f"{E4},f16", "fp8e5m2": f"{E5},f16", "bf16": "bf16,f32"}),
           attrs={**_POOL_ATTRS, "acc_type": ACC_TYPE}, infer=infer.pool, level=levels.pooling,
           legacy=legacy("AVG_POOL2D", "PoolAttribute", *_POOL_0100, ZeroPoint("input_zp", 1, like=0),
                         ZeroPoint("output_zp", 2, like=RESULT), PoolAccumulator())),
    TosaOp("conv2d", _CONV_OPERANDS, "NHWC 2-D convolution with OHWI weights and per-output-channel bias.",
           CONV_SUPPORT, attrs=_CONV_ATTRS, infer=infer.conv(slice(1, 3), lambda x, w: w[0]),
           level=levels.convolution, legacy=legacy("CONV2D", "ConvAttribute", *_CONV_0100)),
    TosaOp("conv3d", _CONV_OPERANDS, "NDHWC 3-D convolution with ODHWI weights and per-output-channel bias.",
           CONV_SUPPORT,
           attrs={"pad": attr("ints", "[front, back, top, bottom, left, right] padding"),
                  "stride": attr("ints", "[d, y, x] stride"), "dilation": attr("ints", "[d, y, x] dilation"),
                  "acc_type": ACC_TYPE, "local_bound": LOCAL_BOUND},
           infer=infer.conv(slice(1, 4), lambda x, w: w[0]),
           level=levels.convolution, legacy=legacy("CONV3D", "ConvAttribute", *_CONV_0100)),
    TosaOp("depthwise_conv2d", _CONV_OPERANDS,
           "NHWC depthwise convolution with [KH, KW, C, M] weights: output channel c*M+m.",
           CONV_SUPPORT, attrs=_CONV_ATTRS, infer=infer.conv(slice(0, 2), lambda x, w: w[2] * w[3]),
           level=levels.convolution, legacy=legacy("DEPTHWISE_CONV2D", "ConvAttribute", *_CONV_0100)),
    TosaOp("fft2d", operands("input_real", "input_imag"),
           "2-D discrete Fourier transform over H and W of [N, H, W] inputs.", support(SIG_IN, {"fft": "f32"}),
           results=2, attrs={"inverse": attr("bool", "true computes the inverse transform"),
                             "local_bound": LOCAL_BOUND}, infer=infer.fft, level=levels.fft,
           legacy=legacy("FFT2D", "FFTAttribute", Attr("inverse"), OptionalFlag("local_bound"))),
    TosaOp("matmul", operands("a", "b", "a_zp:const", "b_zp:const"),
           "Batched matrix product [N, H, C] x [N, C, W] -> [N, H, W].",
           support(("o0", "o1", "r0"), {
               "int": "i8,i8,i32", "fp": "f16,f16,f16 f16,f16,f32 f32,f32,f32", "int16": "i16,i16,i48",
               "fp8e4m3": f"{E4},{E4},f16 {E4},{E4},f32", "fp8e5m2": f"{E5},{E5},f16 {E5},{E5},f32",
               "fp8e4m3+fp8e5m2": f"{E4},{E5},f16 {E4},{E5},f32 {E5},{E4},f16 {E5},{E4},f32",
               "bf16": "bf16,bf16,f32"}),
           legacy=legacy("MATMUL", "MatMulAttribute", ZeroPoint("a_zp", 2, like=0), ZeroPoint("b_zp", 3, like=1))),
    TosaOp("max_pool2d", operands("input"), "NHWC max pooling; padding never wins.", support(SIG_IN, _ARGMAX_LIKE),
           attrs={**_POOL_ATTRS, "nan_mode": NAN_MODE}, infer=infer.pool, level=levels.pooling,
           legacy=legacy("MAX_POOL2D", "PoolAttribute", *_POOL_0100, PropagatesNan())),
    TosaOp("rfft2d", operands("input_real"),
           "2-D real-input Fourier transform of [N, H, W] -> two [N, H, W/2+1] outputs.",
           support(SIG_IN, {"fft": "f32"}), results=2, attrs={"local_bound": LOCAL_BOUND}, infer=infer.rfft, level=levels.fft,
           legacy=legacy("RFFT2D", "RFFTAttribute", OptionalFlag("local_bound"))),
    TosaOp("transpose_conv2d", _CONV_OPERANDS,
           "NHWC transposed (fractionally strided) 2-D convolution with OHWI weights.", CONV_SUPPORT,
           attrs={"out_pad": attr("ints", "[top, bottom, left, right] output padding (may be negative)"),
                  "stride": STRIDE2, "acc_type": ACC_TYPE, "local_bound": LOCAL_BOUND},
           infer=infer.transpose_conv2d, level=levels.transpose_convolution,
           legacy=legacy("TRANSPOSE_CONV2D", "TransposeConvAttribute", Attr("out_pad"), Attr("stride"), OutputShape(),
                         ZeroPoint("input_zp", 3, like=0), ZeroPoint("weight_zp", 4, like=1),
                         OptionalFlag("local_bound"), AccumulatorIsResult())),
)
