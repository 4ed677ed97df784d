"""nn convolutions, fully connected, matmul, pooling and resize."""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import TensorType, attr

from .common import Attrs, define_nn, broadcast_shape

# ------------------------------------------------------------------------------ convolution, matmul, pooling


def _window_out(size: int, kernel: int, stride: int, dilation: int, pad_before: int, pad_after: int) -> int:
    return (size + pad_before + pad_after - ((kernel - 1) * dilation + 1)) // stride + 1


def _check_windows(attrs: Attrs, *names: str) -> None:
    """Strides, dilations and kernels count elements: each is at least 1 (a stride of 0 has no output
    size; TOSA refuses it)."""
    for name in names:
        values = attrs.get(name, ())
        if any(v < 1 for v in values):
            raise ValueError(f"{name} {list(values)} has a value below 1")


def _check_bias(types: list[TensorType], channels: int) -> None:
    """A convolution's optional bias (operand 2) has one value per output channel, or one for all."""
    if len(types) > 2 and tuple(types[2].shape) not in ((channels,), (1,)):
        raise ValueError(f"bias {list(types[2].shape)} for {channels} output channels")


def _check_in_channels(w: TensorType, weight_channels: int, channels: int) -> None:
    """Weights whose input-channel dimension is the input's channel count (a transposed or 3-D
    convolution of mismatched channels has no meaning; the reference model refuses it at run time)."""
    if weight_channels != channels:
        raise ValueError(f"weights {list(w.shape)} do not match {channels} input channels")


def _infer_conv2d(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x, w = types[0], types[1]
    n, h, wd, c = x.shape
    o, kh, kw, ci = w.shape
    _check_windows(attrs, "stride", "dilation")
    _check_bias(types, o)
    if ci * attrs["groups"] != c or o % attrs["groups"]:
        raise ValueError(f"weights {list(w.shape)} do not fit {c} input channels in {attrs['groups']} groups")
    (sy, sx), (dy, dx), (pt, pb, pl, pr) = attrs["stride"], attrs["dilation"], attrs["pad"]
    return [TensorType((n, _window_out(h, kh, sy, dy, pt, pb), _window_out(wd, kw, sx, dx, pl, pr), o), x.dtype)]


_CONV_ATTRS = {
    "stride": attr("ints", "[y, x]"), "dilation": attr("ints", "[y, x]"),
    "pad": attr("ints", "[top, bottom, left, right]"),
}
define_nn("nn.conv2d", operands=("input", "weight", "bias?"), attrs={**_CONV_ATTRS, "groups": attr("int", "channel groups (1: ordinary)")},
          doc="2-D convolution (cross-correlation) of NHWC input with [O, KH, KW, I/groups] weights plus an "
              "optional bias [O].", infer=_infer_conv2d)


def _infer_depthwise(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x, w = types[0], types[1]
    n, h, wd, c = x.shape
    kh, kw, wc, m = w.shape
    _check_windows(attrs, "stride", "dilation")
    _check_in_channels(w, wc, c)
    _check_bias(types, c * m)
    (sy, sx), (dy, dx), (pt, pb, pl, pr) = attrs["stride"], attrs["dilation"], attrs["pad"]
    return [TensorType((n, _window_out(h, kh, sy, dy, pt, pb), _window_out(wd, kw, sx, dx, pl, pr), c * m), x.dtype)]


define_nn("nn.depthwise_conv2d", operands=("input", "weight", "bias?"), attrs=dict(_CONV_ATTRS),
          doc="Depthwise 2-D convolution: NHWC input, [KH, KW, C, M] weights, output channel c*M+m, optional "
              "bias [C*M].", infer=_infer_depthwise)


def _infer_conv3d(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x, w = types[0], types[1]
    n, d, h, wd, c = x.shape
    o, kd, kh, kw, wc = w.shape
    _check_windows(attrs, "stride", "dilation")
    _check_in_channels(w, wc, c)
    _check_bias(types, o)
    (sz, sy, sx), (dz, dy, dx) = attrs["stride"], attrs["dilation"]
    pf, pk, pt, pb, pl, pr = attrs["pad"]
    return [TensorType((n, _window_out(d, kd, sz, dz, pf, pk), _window_out(h, kh, sy, dy, pt, pb),
                        _window_out(wd, kw, sx, dx, pl, pr), o), x.dtype)]


define_nn("nn.conv3d", operands=("input", "weight", "bias?"),
          attrs={"stride": attr("ints", "[z, y, x]"), "dilation": attr("ints", "[z, y, x]"),
                 "pad": attr("ints", "[front, back, top, bottom, left, right]")},
          doc="3-D convolution of NDHWC input with [O, KD, KH, KW, I] weights plus an optional bias [O].",
          infer=_infer_conv3d)


def _infer_transpose_conv(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x, w = types[0], types[1]
    n, h, wd, c = x.shape
    o, kh, kw, wc = w.shape
    _check_windows(attrs, "stride")
    _check_in_channels(w, wc, c)
    _check_bias(types, o)
    (sy, sx), (pt, pb, pl, pr) = attrs["stride"], attrs["out_pad"]
    return [TensorType((n, (h - 1) * sy + pt + pb + kh, (wd - 1) * sx + pl + pr + kw, o), x.dtype)]


define_nn("nn.transpose_conv2d", operands=("input", "weight", "bias?"),
          attrs={"stride": attr("ints", "[y, x]"),
                 "out_pad": attr("ints", "[top, bottom, left, right] added to (negative: cropped from) the full output")},
          doc="Transposed 2-D convolution, TOSA semantics: each input pixel scatters weights [O, KH, KW, I] into "
              "an output of size (in-1)*stride + kernel, then out_pad grows/crops its edges; optional bias [O].",
          infer=_infer_transpose_conv)


def _infer_fc(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x, w = types[0], types[1]
    if x.rank < 1 or w.rank != 2:
        raise ValueError(f"input {list(x.shape)} and weights {list(w.shape)}: expected [..., K] and [O, K]")
    _check_bias(types, w.shape[0])
    if x.shape[-1] != w.shape[1]:
        raise ValueError(f"input depth {x.shape[-1]} differs from weights {list(w.shape)}")
    return [TensorType(tuple(x.shape[:-1]) + (w.shape[0],), x.dtype)]


define_nn("nn.fully_connected", operands=("input", "weight", "bias?"),
          doc="x @ W^T (+ bias): input [..., K], weights [O, K], optional bias [O].", infer=_infer_fc)


def _infer_matmul(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    a, b = types
    if a.rank < 2 or b.rank < 2 or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"cannot multiply {list(a.shape)} by {list(b.shape)}")
    batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
    return [TensorType(batch + (a.shape[-2], b.shape[-1]), a.dtype)]


define_nn("nn.matmul", operands=("a", "b"), doc="Batched a @ b, rank >= 2, batch dimensions broadcast.", infer=_infer_matmul,
          fold=lambda a, v, t: None if t[0].quant else [np.matmul(v[0], v[1]).astype(t[0].numpy_dtype)])


def _infer_pool(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x = types[0]
    n, h, w, c = x.shape
    _check_windows(attrs, "kernel", "stride", "dilation")
    (kh, kw), (sy, sx), (pt, pb, pl, pr) = attrs["kernel"], attrs["stride"], attrs["pad"]
    dy, dx = attrs.get("dilation", [1, 1])
    return [TensorType((n, _window_out(h, kh, sy, dy, pt, pb), _window_out(w, kw, sx, dx, pl, pr), c), x.dtype)]


_POOL_ATTRS = {"kernel": attr("ints", "[y, x]"), "stride": attr("ints", "[y, x]"),
               "pad": attr("ints", "[top, bottom, left, right]")}
define_nn("nn.max_pool2d", operands=("input",), attrs={**_POOL_ATTRS, "dilation": attr("ints", "[y, x]")},
          doc="Max over windows of NHWC input; padding never wins (acts as -inf: a window over padding only "
              "gives -inf, or the minimum of an integer type).", infer=_infer_pool, traits={"moves_data"})
define_nn("nn.avg_pool2d", operands=("input",),
          attrs={**_POOL_ATTRS,
                 "count_pad": attr("ints", "[top, bottom, left, right]: the part of `pad` counted in the divisor "
                                           "as zeros (the rest is excluded)"),
                 "divisor": attr("int", "if > 0, divide every window sum by this instead")},
          doc="Mean over windows of NHWC input: sum of the real elements / number of elements in the window that "
              "lie in the input or in the counted padding (`divisor` overrides; a window with none gives 0/0 = NaN).",
          infer=_infer_pool)
define_nn("nn.l2_pool2d", operands=("input",), attrs=dict(_POOL_ATTRS),
          doc="sqrt(mean of x^2 over windows), padding excluded from the count.", infer=_infer_pool,
          traits={"float_when_quantized"})


def _infer_pool3d(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x = types[0]
    n, d, h, w, c = x.shape
    _check_windows(attrs, "kernel", "stride")
    (kd, kh, kw), (sz, sy, sx) = attrs["kernel"], attrs["stride"]
    pf, pk, pt, pb, pl, pr = attrs["pad"]
    return [TensorType((n, _window_out(d, kd, sz, 1, pf, pk), _window_out(h, kh, sy, 1, pt, pb),
                        _window_out(w, kw, sx, 1, pl, pr), c), x.dtype)]


_POOL3D_ATTRS = {"kernel": attr("ints", "[z, y, x]"), "stride": attr("ints", "[z, y, x]"),
                 "pad": attr("ints", "[front, back, top, bottom, left, right]")}
define_nn("nn.max_pool3d", operands=("input",), attrs=dict(_POOL3D_ATTRS), doc="Max over windows of NDHWC input (see max_pool2d).",
          infer=_infer_pool3d, traits={"moves_data"})
define_nn("nn.avg_pool3d", operands=("input",),
          attrs={**_POOL3D_ATTRS, "count_pad": attr("ints", "the part of `pad` counted as zeros"),
                 "divisor": attr("int", "if > 0, the divisor")},
          doc="Mean over windows of NDHWC input (see avg_pool2d).", infer=_infer_pool3d)
define_nn("nn.l2_pool3d", operands=("input",), attrs=dict(_POOL3D_ATTRS),
          doc="sqrt(mean of x^2 over windows) of NDHWC input, padding excluded.", infer=_infer_pool3d,
          traits={"float_when_quantized"})


def _infer_resize(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    n, _, _, c = types[0].shape
    h, w = attrs["size"]
    return [TensorType((n, h, w, c), types[0].dtype)]


define_nn("nn.resize", operands=("input",),
          attrs={"size": attr("ints", "[height, width] of the result"), "mode": attr("str", "'bilinear' or 'nearest'"),
                 "align_corners": attr("bool", "corner pixels' centres align"),
                 "half_pixel_centers": attr("bool", "sample at pixel centres (x + 0.5)"),
                 "nearest_rounding": attr("str", "nearest only: 'half_up' (floor(src + 0.5), the default when absent) "
                                                 "or 'floor' (floor(src): Arm NN's and PyTorch's nearest without "
                                                 "align_corners/half_pixel_centers)", optional=True)},
          doc="Resize NHWC images. Source coordinate of output index x, per axis, in exact rational arithmetic: "
              "align_corners (which wins over half_pixel_centers): x*(in-1)/(out-1), 0 when out = 1; "
              "half_pixel_centers: (x+0.5)*in/out-0.5; else x*in/out. Nearest takes the input pixel at "
              "floor(src + 0.5) (or floor(src) with nearest_rounding='floor'), clamped to the input; bilinear "
              "takes the clamped neighbours floor(src) and floor(src)+1 weighted by 1-f and f (f = src - floor(src)), "
              "along the width first, then the height.",
          infer=_infer_resize)
