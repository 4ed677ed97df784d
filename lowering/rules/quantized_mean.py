"""Quantized sums and means over H and W of an NHWC tensor (a global pool) in the shapes NPU compilers
map: Vela runs REDUCE_SUM over H and W through transposes, and lowers TFLite's own MEAN to a
DEPTHWISE_CONV2D of ones, which is what these helpers build.

- `spatial_sum`: the exact i32 sum of (x - zp) over H and W as one DEPTHWISE_CONV2D with weights 1,
  the input zero point as its input_zp, no padding: the same integers as a widening RESCALE and two
  REDUCE_SUMs (both semantics requantize that sum as before).
- `mean_as_avg_pool`: TFLite's mean as AVG_POOL2D (+ a RESCALE to the output quantization) where
  that gives TFLite's integer for every sum the window can have (checked here, all of them).
  AVG_POOL2D rounds sum / count once; TFLite's mean rounds twice (MultiplyByQuantizedMultiplier: the
  rounding doubling high multiply, then a rounding shift, by a truncated multiplier of
  s_in / (count * s_out)), so 7 / 16 is 0 to AVG_POOL2D and 1 to TFLite. Over windows of 2 to 196
  elements, six output scales and three zero-point pairs, the two agree only for windows of 2 or 3
  elements; every global pool of a real network (ResNet-50's 7 x 7, MobileNet's) keeps the exact
  sum and TFLite's own RESCALE, at the same Vela cost as TFLite's MEAN.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from ..npu_target import choose
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import rescale, rescale_values
from ..fixed_point.tflite import multiply_by_quantized_multiplier, quantize_multiplier

# TOSA 1.0 level 8K: kernel sizes up to MAX_KERNEL
MAX_KERNEL = 8192
# The ones a DEPTHWISE_CONV2D sum needs are H * W * C bytes of weights: above this, REDUCE_SUM
MAX_ONES_BYTES = 1 << 20


def _spatial(ctx: LoweringContext, x: Value, axes: Sequence[int]) -> tuple[int, int, int] | None:
    """(H, W, C) when `axes` are exactly H and W of an NHWC tensor a window op can cover."""
    shape = ctx.type_of(x).shape
    if len(shape) != 4 or sorted(set(int(a) for a in axes)) != [1, 2]:
        return None
    _, h, w, c = shape
    if h * w <= 1 or h > MAX_KERNEL or w > MAX_KERNEL:
        return None
    return h, w, c


def spatial_sum(ctx: LoweringContext, x: Value, xq: QInfo, axes: Sequence[int]) -> Value | None:
    """sum over H, W of (x - zp) as [N, 1, 1, C] i32, or None where a window does not fit. 16-bit data
    (zero point 0, as TOSA requires) sums in i48, taken to i32 by a RESCALE by 1 (exact: the window
    holds fewer than 65536 elements, so the sum fits i32), where the --target preset asks for it."""
    spatial = _spatial(ctx, x, axes)
    if (spatial is None or spatial[0] * spatial[1] * spatial[2] > MAX_ONES_BYTES
            or not (xq.dtype == "i8" or (xq.dtype == "i16" and xq.zero_point == 0 and spatial[0] * spatial[1] < 1 << 16))
            or (xq.dtype == "i16" and choose(ctx, "int16_spatial_sum") != "depthwise_conv2d")):
        return None
    h, w, c = spatial
    acc_type = "i32" if xq.dtype == "i8" else "i48"
    operands = [x, ctx.const(np.ones((h, w, c, 1), np.int8), "i8"), ctx.const(np.zeros(c, np.int64), acc_type),
                ctx.zero_point(xq.dtype, xq.zero_point), ctx.zero_point("i8")]
    attrs = {"pad": [0, 0, 0, 0], "stride": [1, 1], "dilation": [1, 1], "acc_type": acc_type}
    total = ctx.op("tosa.depthwise_conv2d", operands, attrs)
    return total if acc_type == "i32" else rescale(ctx, total, 1.0, "i32")


def avg_pool_values(sums: np.ndarray, count: int, output_zp: int) -> np.ndarray:
    """TOSA 1.0 AVG_POOL2D's integer result for window sums of (x - input_zp) over `count` elements
    (before saturation): the sum times reciprocal_scale(count), rounded, plus the output zero point."""
    k = (count - 1).bit_length()  # 2**(k - 1) < count <= 2**k
    multiplier = (((1 << 30) + 1) << k) // count
    return rescale_values(sums, multiplier, 30 + k) + output_zp


def mean_as_avg_pool(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo, axes: Sequence[int],
                     multiplier: int, exponent: int) -> Value | None:
    """TFLite's mean (sum times its (multiplier, exponent), plus the output zero point) as AVG_POOL2D,
    alone when its zero point can be the output's, else followed by a RESCALE by TFLite's s_in / s_out;
    None unless one of the two gives TFLite's integer for every possible sum."""
    spatial = _spatial(ctx, x, axes)
    if spatial is None or xq.dtype != "i8" or yq.dtype != "i8" or multiplier <= 0:
        return None
    h, w, _ = spatial
    count = h * w
    sums = np.arange(count * (xq.qmin - xq.zero_point), count * (xq.qmax - xq.zero_point) + 1, dtype=np.int64)
    want = np.clip(multiply_by_quantized_multiplier(sums, multiplier, exponent) + yq.zero_point, yq.qmin, yq.qmax)

    def pool(output_zp: int) -> Value:
        return ctx.op("tosa.avg_pool2d", [x, ctx.zero_point("i8", xq.zero_point), ctx.zero_point("i8", output_zp)],
                      {"kernel": [h, w], "stride": [1, 1], "pad": [0, 0, 0, 0], "acc_type": "i32"})

    if np.array_equal(np.clip(avg_pool_values(sums, count, yq.zero_point), yq.qmin, yq.qmax), want):
        return pool(yq.zero_point)
    # the mean in the input's units (its zero point keeps it in range), then to the output's
    pooled = np.clip(avg_pool_values(sums, count, xq.zero_point), xq.qmin, xq.qmax)
    m, e = quantize_multiplier(xq.scale / yq.scale)
    if m <= 0 or not 2 <= 31 - e <= 62:
        return None
    requantized = np.clip(rescale_values(pooled - xq.zero_point, m, 31 - e, "DOUBLE_ROUND") + yq.zero_point,
                          yq.qmin, yq.qmax)
    if not np.array_equal(requantized, want):
        return None
    return rescale(ctx, pool(xq.zero_point), 0.0, "i8", in_zp=xq.zero_point, out_zp=yq.zero_point,
                   fixed=(m, 31 - e), rounding="DOUBLE_ROUND")
