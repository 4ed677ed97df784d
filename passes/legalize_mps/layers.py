"""Layer nodes: convolutions, pooling, normalizations, reductions, matrix products and the int4
group dequantization.

PyTorch's spatial tensors are NCHW: NHWC-only nn ops (conv2d, depthwise_conv2d, transpose_conv2d,
the pools) get an nn.transpose on each side and their OIHW weights an nn.transpose to nn's layout
(a transpose of a constant, which canonicalize folds). Ops with an axis attribute (batch_norm,
layer_norm, reduce_mean, softmax) work on NCHW as it is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nn2tosa.ir import Value

from .core import Node, is_float, normalize_axis, rule


# ------------------------------------------------------------------------------ convolution
def transposed_convolution_ungrouped(n: Node, groups: int) -> str | None:
    """A transposed convolution (which the backend serializes as MPSConv2D) has one group:
    nn.transpose_conv2d has no groups."""
    if groups != 1:
        return f"a transposed convolution (serialized as MPSConv2D) with groups ({groups}); nn.transpose_conv2d has none"
    return None


def transposed_convolution_undilated(n: Node) -> str | None:
    """A transposed convolution has no dilation: nn.transpose_conv2d has none."""
    dilation = [n.attrs["dilation_y"], n.attrs["dilation_x"]]
    if dilation != [1, 1]:
        return (f"a dilated transposed convolution (serialized as MPSConv2D, dilation {dilation}); "
                "nn.transpose_conv2d has no dilation")
    return None


@rule("MPSConv2D", "MPSDepthwiseConv2D", checks=(transposed_convolution_ungrouped, transposed_convolution_undilated))
def convolution(n: Node) -> Value:
    """Conv2D (OIHW weights, `groups`; 3-D weights are a conv1d, which the runtime runs as a conv2d of
    height 1) and DepthwiseConv2D (weights [C*M, 1, KH, KW], groups == C)."""
    x, w, bias = n.input("input1_id"), n.input("input2_id"), n.optional("input3_id")
    dtype = n.compute_dtype([x, w] + ([bias] if bias is not None else []))
    x, w = n.cast(x, dtype), n.cast(w, dtype)
    bias = None if bias is None else n.cast(bias, dtype)
    conv1d = n.type_of(w).rank == 3
    if conv1d:  # [N, C, L] -> [N, C, 1, L], weights [O, I, K] -> [O, I, 1, K]
        x = n.reshape(x, _insert_unit(n.type_of(x).shape, 2))
        w = n.reshape(w, _insert_unit(n.type_of(w).shape, 2))
    xs, ws = n.type_of(x).shape, n.type_of(w).shape
    if len(xs) != 4 or len(ws) != 4:
        raise ValueError(f"convolution of {list(xs)} by weights {list(ws)}: expected NCHW and OIHW")
    (groups,) = n.require(["groups"], 1)
    attrs: dict[str, list[int] | int] = {
        "stride": n.require(["stride_y", "stride_x"], 1), "dilation": n.require(["dilation_y", "dilation_x"], 1),
        "pad": n.require([f"padding_{s}" for s in ("top", "bottom", "left", "right")], 0)}
    if not _is_forward(n, xs, ws, groups, attrs, conv1d):
        y = _transposed_convolution(n, x, w, bias, groups, conv1d)
    else:
        operands = [n.to_nhwc(x)]
        channels, out_channels = xs[1], ws[0]
        if groups == channels and ws[1] == 1 and groups > 1:  # depthwise, channel multiplier M
            m = out_channels // channels
            kernel = n.reshape(w, [channels, m, ws[2], ws[3]])
            operands.append(n.transpose(kernel, [2, 3, 0, 1]))  # [KH, KW, C, M]
            name = "nn.depthwise_conv2d"
        else:
            operands.append(n.transpose(w, [0, 2, 3, 1]))  # OIHW -> OHWI
            attrs["groups"] = groups
            name = "nn.conv2d"
        if bias is not None:
            operands.append(bias)
        y = n.to_nchw(n.op(name, operands, attrs))
    if conv1d:
        shape = n.type_of(y).shape
        y = n.reshape(y, shape[:2] + shape[3:])
    return y


def _insert_unit(shape: tuple[int, ...], axis: int) -> list[int]:
    return list(shape[:axis]) + [1] + list(shape[axis:])


def _is_forward(n: Node, xs: tuple[int, ...], ws: tuple[int, ...], groups: int, attrs: dict, conv1d: bool) -> bool:
    """Whether the weights fit a forward convolution of x giving the declared result (else the node is
    a transposed convolution the backend serialized as a forward one)."""
    if ws[1] * groups != xs[1]:
        return False
    (sy, sx), (dy, dx), (pt, pb, pl, pr) = attrs["stride"], attrs["dilation"], attrs["pad"]
    h = (xs[2] + pt + pb - dy * (ws[2] - 1) - 1) // sy + 1
    w = (xs[3] + pl + pr - dx * (ws[3] - 1) - 1) // sx + 1
    forward = (xs[0], ws[0], w) if conv1d else (xs[0], ws[0], h, w)
    return forward == tuple(n.out.shape)


def _transposed_convolution(n: Node, x: Value, w: Value, bias: Value | None, groups: int, conv1d: bool) -> Value:
    """The backend serializes ConvTranspose2d as a forward MPSConv2D with the transposed conv's
    [Cin, Cout/groups, KH, KW] weights (it ignores aten.convolution's `transposed` flag); such a node
    has weights that do not fit a forward convolution, and the declared result has the transposed
    convolution's shape. output_padding is not stored: it follows from the declared result."""
    xs, ws = n.type_of(x).shape, n.type_of(w).shape
    declared = n.out.shape if not conv1d else _insert_unit(n.out.shape, 2)
    stride = n.require(["stride_y", "stride_x"], 1)
    pad = n.require([f"padding_{s}" for s in ("top", "bottom", "left", "right")], 0)
    fits = ws[0] == xs[1] and len(declared) == 4 and declared[1] == ws[1] * groups
    # output_padding per spatial dimension: declared - ((in - 1) * stride - pads + kernel)
    extra = [declared[2 + i] - ((xs[2 + i] - 1) * stride[i] - pad[2 * i] - pad[2 * i + 1] + ws[2 + i])
             for i in range(2)]
    if not fits or any(not 0 <= e < stride[i] for i, e in enumerate(extra)):
        raise ValueError(f"neither a convolution nor a transposed convolution of {list(xs)} by weights {list(ws)} "
                         f"({groups} groups) gives the declared {list(n.out.shape)}")
    n.check(transposed_convolution_ungrouped, groups)
    n.check(transposed_convolution_undilated)
    out_pad = [-pad[0], -pad[1] + extra[0], -pad[2], -pad[3] + extra[1]]
    operands = [n.to_nhwc(x), n.transpose(w, [1, 2, 3, 0])]  # [Cin, O, KH, KW] -> [O, KH, KW, Cin]
    if bias is not None:
        operands.append(bias)
    return n.to_nchw(n.op("nn.transpose_conv2d", operands, {"stride": stride, "out_pad": out_pad}))


# ------------------------------------------------------------------------------ pooling
@dataclass
class Window:
    """One spatial dimension of a pooling window, with nn's padding."""

    kernel: int
    stride: int
    dilation: int
    before: int
    after: int  # nn padding after: exactly what the declared output needs
    counted_after: int  # the part of it PyTorch counts as padding (avg pool's count_include_pad)


def _window(n: Node, size: int, out: int, kernel: int, stride: int, dilation: int, before: int, after: int) -> Window:
    """PyTorch pools with symmetric padding; with ceil_mode the backend records padding_bottom/right as
    padding * stride (its visitor's doing) and MPSGraph's ceil mode does the rest. The declared output
    size is what both agree on, so nn's after-padding is exactly what the last window needs, and the
    counted padding is PyTorch's own (`before` again under ceil_mode)."""
    span = dilation * (kernel - 1) + 1
    needed = max(0, (out - 1) * stride + span - size - before)
    if (size + before + needed - span) // stride + 1 != out:
        raise ValueError(f"a window of {kernel} (stride {stride}, padding {before}/{after}) cannot give "
                         f"{out} outputs from {size}")
    torch_after = before if n.attrs.get("ceil_mode") else after
    return Window(kernel, stride, dilation, before, needed, min(torch_after, needed))


def _windows(n: Node, x: Value) -> tuple[Window, Window]:
    if n.type_of(x).rank != 4 or n.out.rank != 4:
        raise ValueError(f"pooling of {n.type_of(x)} to {n.out}: expected NCHW")
    (_, _, h, w), (_, _, oh, ow) = n.type_of(x).shape, n.out.shape
    ky, kx, sy, sx, dy, dx = n.require(["kernel_height", "kernel_width", "stride_height", "stride_width",
                                        "dilation_height", "dilation_width"], 1)
    pt, pb, pl, pr = n.require(["padding_top", "padding_bottom", "padding_left", "padding_right"], 0)
    return _window(n, h, oh, ky, sy, dy, pt, pb), _window(n, w, ow, kx, sx, dx, pl, pr)


def _pool_attrs(y: Window, x: Window) -> dict:
    return {"kernel": [y.kernel, x.kernel], "stride": [y.stride, x.stride],
            "pad": [y.before, y.after, x.before, x.after]}


MAX_INDEX_TAPS = 4096  # window positions the indices of a max pool are computed from, one op each


def pool_indices_window_small(n: Node, wy: Window, wx: Window) -> str | None:
    """When a max pool's indices (result #1) are read, its window has at most 4096 taps: they are
    computed one tap at a time."""
    if wy.kernel * wx.kernel > MAX_INDEX_TAPS:  # one slice per tap: a hostile window would take hours
        return f"the indices of a {wy.kernel}x{wx.kernel} window (at most {MAX_INDEX_TAPS} taps)"
    return None


@rule("MPSMaxPool2DWithIndices", checks=(pool_indices_window_small,))
def max_pool(n: Node) -> list[Value | None]:
    """max_pool2d (dilation, ceil_mode); result #1, PyTorch's indices (flat h * W + w in each plane),
    only when something reads it."""
    x = n.input("input1_id")
    x = n.cast(x, n.compute_dtype([x]))
    wy, wx = _windows(n, x)
    attrs = {**_pool_attrs(wy, wx), "dilation": [wy.dilation, wx.dilation]}
    values = n.to_nchw(n.op("nn.max_pool2d", [n.to_nhwc(x)], attrs))
    indices = _max_pool_indices(n, x, wy, wx) if n.used(1) else None
    return [values, indices]


def _max_pool_indices(n: Node, x: Value, wy: Window, wx: Window) -> Value:
    """argmax over the window taps (the first maximum, as PyTorch scans), turned into the flat input
    index: tap offset (ky * dilation * W + kx * dilation) plus the window origin ((oy * stride - pad) * W
    + ox * stride - pad). Computed on NCHW as it is: no op here cares about layout."""
    n.check(pool_indices_window_small, wy, wx)
    batch, channels, h, w = n.type_of(x).shape
    _, _, oh, ow = n.out.shape
    dtype = n.type_of(x).dtype
    lowest = -math.inf if is_float(dtype) else float(np.iinfo(n.type_of(x).numpy_dtype).min)
    pads = [0, 0, 0, 0, wy.before, wy.after, wx.before, wx.after]
    padded = n.op("nn.pad", [x], {"pads": pads, "mode": "constant", "value": lowest}) if any(pads) else x
    taps, offsets = [], []
    for ky in range(wy.kernel):
        for kx in range(wx.kernel):
            y0, x0 = ky * wy.dilation, kx * wx.dilation
            end = [batch, channels, y0 + wy.stride * (oh - 1) + 1, x0 + wx.stride * (ow - 1) + 1]
            tap = n.op("nn.strided_slice", [padded],
                       {"begin": [0, 0, y0, x0], "end": end, "strides": [1, 1, wy.stride, wx.stride]})
            taps.append(n.reshape(tap, [batch, channels, oh, ow, 1]))
            offsets.append(y0 * w + x0)
    stacked = taps[0] if len(taps) == 1 else n.op("nn.concat", taps, {"axis": 4})
    best = n.op("nn.argmax", [stacked], {"axis": 4, "keep_dims": False, "output_type": "i64"})
    offset = n.op("nn.gather", [n.constant(np.array(offsets), "i64"), best], {"axis": 0})
    n.check_computed([oh, ow], "table of window origins")
    oy, ox = np.meshgrid(np.arange(oh) * wy.stride - wy.before, np.arange(ow) * wx.stride - wx.before, indexing="ij")
    return n.op("nn.add", [offset, n.constant(oy * w + ox, "i64")])


def avg_pool_undilated(n: Node, wy: Window, wx: Window) -> str | None:
    """An average pool has no dilation: nn.avg_pool2d has none."""
    if (wy.dilation, wx.dilation) != (1, 1):
        return f"a dilated average pool (dilation {wy.dilation}x{wx.dilation}); nn.avg_pool2d has no dilation"
    return None


@rule("MPSAvgPool2D", checks=(avg_pool_undilated,))
def avg_pool(n: Node) -> list[Value | None]:
    """avg_pool2d: count_include_pad counts PyTorch's padding (not the ceil-mode overhang) in the
    divisor; divisor_override replaces the divisor."""
    x = n.input("input1_id")
    x = n.cast(x, n.compute_dtype([x]))
    wy, wx = _windows(n, x)
    n.check(avg_pool_undilated, wy, wx)
    counted = [wy.before, wy.counted_after, wx.before, wx.counted_after] if n.attrs["count_include_pad"] else [0] * 4
    attrs = {**_pool_attrs(wy, wx), "count_pad": counted, "divisor": int(n.attrs["divisor_override"])}
    return [n.to_nchw(n.op("nn.avg_pool2d", [n.to_nhwc(x)], attrs)), None]


# ------------------------------------------------------------------------------ normalization, reduction
def batch_norm_has_running_statistics(n: Node) -> str | None:
    """Batch norm has running statistics (a mean and a variance) to normalize by, as in inference."""
    if n.optional("mean_id") is None or n.optional("var_id") is None:
        return "batch norm without running statistics (normalizes by the batch's own)"
    return None


@rule("MPSBatchNorm", constraints=(batch_norm_has_running_statistics,))
def batch_norm(n: Node) -> list[Value | None]:
    """Inference batch norm over dimension 1 (NCHW, NC, NCL). The saved statistics (results #1 and #2)
    are empty tensors in inference; they are not computed."""
    x = n.input("input_id")
    channels = n.type_of(x).shape[1]
    mean, var = n.input("mean_id"), n.input("var_id")  # (batch_norm_has_running_statistics)
    weight, bias = n.optional("weight_id"), n.optional("bias_id")
    stats = [mean, var] + [v for v in (weight, bias) if v is not None]
    dtype = n.compute_dtype([x] + stats)
    n.check_computed([channels], "default scale and shift")
    weight = weight if weight is not None else n.constant(np.ones(channels), dtype)
    bias = bias if bias is not None else n.constant(np.zeros(channels), dtype)
    operands = [n.cast(v, dtype) for v in (x, mean, var, weight, bias)]
    return [n.op("nn.batch_norm", operands, {"epsilon": float(n.attrs["epsilon"]), "axis": 1}), None, None]


@rule("MPSLayerNorm")
def layer_norm(n: Node) -> list[Value | None]:
    """Layer norm over the trailing len(normalized_shape) dimensions. Results #1 and #2 are PyTorch's
    saved mean and 1 / sqrt(var + eps), computed only when something reads them (the MPS runtime
    stores the variance in #2 instead)."""
    x, weight, bias = n.input("input1_id"), n.optional("weight_id"), n.optional("bias_id")
    dtype = n.compute_dtype([x] + [v for v in (weight, bias) if v is not None])
    x = n.cast(x, dtype)
    shape = n.type_of(x).shape
    normalized = [int(d) for d in n.attrs["normalized_shape"]]
    if list(shape[len(shape) - len(normalized):]) != normalized:
        raise ValueError(f"normalized_shape {normalized} is not the end of {list(shape)}")
    axes = list(range(len(shape) - len(normalized), len(shape)))
    eps = float(n.attrs["eps"])
    if weight is None and bias is not None:
        n.check_computed(normalized, "default scale")
        weight = n.constant(np.ones(normalized), dtype)
    affine = [n.cast(v, dtype) for v in (weight, bias) if v is not None]
    y = n.op("nn.layer_norm", [x, *affine], {"axes": axes, "epsilon": eps})
    mean = rstd = None
    if n.used(1) or n.used(2):
        mean = n.op("nn.reduce_mean", [x], {"axes": axes, "keep_dims": True})
        centered = n.op("nn.sub", [x, mean])
        var = n.op("nn.reduce_mean", [n.op("nn.square", [centered])], {"axes": axes, "keep_dims": True})
        rstd = n.op("nn.rsqrt", [n.op("nn.add", [var, n.scalar(eps, dtype)])])
    return [y, mean, rstd]


@rule("MPSMean")
def mean(n: Node) -> Value:
    """torch.mean(x, dims, keepdim); no dims reduces every dimension."""
    x = n.input("input1_id")
    rank = n.type_of(x).rank
    axes = sorted({normalize_axis(d, rank) for d in n.attrs["dims"]}) or list(range(rank))
    attrs = {"axes": axes, "keep_dims": bool(n.attrs["keep_dims"])}
    return n.elementwise("nn.reduce_mean", [x], n.compute_dtype([x]), attrs)


# ------------------------------------------------------------------------------ matrix products
@rule("MPSMatMul")
def matmul(n: Node) -> Value:
    """mm / bmm; a 1-D operand is a row (left) or column (right) vector, dropped from the result."""
    a, b = n.input("input1_id"), n.input("input2_id")
    dtype = n.compute_dtype([a, b])
    a, b = n.cast(a, dtype), n.cast(b, dtype)
    a_vec, b_vec = n.type_of(a).rank == 1, n.type_of(b).rank == 1
    if a_vec:
        a = n.reshape(a, [1, n.type_of(a).shape[0]])
    if b_vec:
        b = n.reshape(b, [n.type_of(b).shape[0], 1])
    y = n.op("nn.matmul", [a, b])
    if a_vec or b_vec:
        shape = list(n.type_of(y).shape)
        y = n.reshape(y, shape[:-2] + ([] if a_vec else [shape[-2]]) + ([] if b_vec else [shape[-1]]))
    return y


@rule("MPSAddmm")
def addmm(n: Node) -> Value:
    """beta * bias + alpha * (a @ b) (input1 = bias, as aten.addmm(self, mat1, mat2)). The linear layer
    (alpha = beta = 1, bias [O]) becomes nn.fully_connected with weights b^T; a constant b that is a
    transposed weight folds back to it."""
    bias, a, b = n.input("input1_id"), n.input("input2_id"), n.input("input3_id")
    dtype = n.compute_dtype([bias, a, b])
    bias, a, b = n.cast(bias, dtype), n.cast(a, dtype), n.cast(b, dtype)
    alpha, beta = float(n.attrs["alpha"]), float(n.attrs["beta"])
    out_features = n.type_of(b).shape[-1]
    bias_shape = n.type_of(bias).shape
    if alpha == 1 and beta == 1 and n.type_of(a).rank == 2 and n.type_of(b).rank == 2 and \
            bias_shape in ((out_features,), (1, out_features)):
        weights = n.transpose(b, [1, 0])
        return n.op("nn.fully_connected", [a, weights, n.reshape(bias, [out_features])])
    y = n.op("nn.matmul", [a, b])
    if alpha != 1:
        y = n.op("nn.mul", [y, n.scalar(alpha, dtype)])
    if beta == 0:  # PyTorch ignores the bias then (NaN and inf included)
        return y
    if beta != 1:
        bias = n.op("nn.mul", [bias, n.scalar(beta, dtype)])
    return n.op("nn.add", [y, bias])


# ------------------------------------------------------------------------------ int4 weights
@rule("MPSDequantizePerChannelGroup")
def dequantize_group(n: Node) -> Value:
    """(w - zero_point) * scale with one scale (and zero point) per group of `group_size` consecutive
    elements of the last dimension: w [..., K], scales [..., K / group_size]. Constant weights fold to
    a float constant here (nn keeps no int4); the result type is the file's output_dtype (the MPS
    runtime always dequantizes to f16, whatever output_dtype says)."""
    w, scales, zero_points = n.input("input1_id"), n.input("scales_id"), n.optional("zero_points_id")
    shape = n.type_of(w).shape
    group = int(n.attrs["group_size"])
    if not shape or group <= 0 or shape[-1] % group or n.type_of(scales).shape != shape[:-1] + (shape[-1] // group,):
        raise ValueError(f"scales {list(n.type_of(scales).shape)} do not give one scale per {group} elements "
                         f"of {list(shape)}")
    grouped = list(shape[:-1]) + [shape[-1] // group, group]
    dtype = n.out.dtype
    present = [v for v in (w, scales, zero_points) if v is not None]
    found = [n.constant_value(v) for v in present]
    arrays = [a for a in found if a is not None]
    if len(arrays) == len(present):
        values = [_numbers(a, n.type_of(p).dtype) for a, p in zip(arrays, present)]
        data = values[0].reshape(grouped)
        if zero_points is not None:
            data = data - values[2][..., None]
        return n.constant((data * values[1][..., None]).reshape(shape), dtype)
    q = n.reshape(n.cast(w, dtype), grouped)
    per_group = list(shape[:-1]) + [shape[-1] // group, 1]
    if zero_points is not None:
        q = n.op("nn.sub", [q, n.reshape(n.cast(zero_points, dtype), per_group)])
    return n.reshape(n.op("nn.mul", [q, n.reshape(n.cast(scales, dtype), per_group)]), shape)


def _numbers(stored: np.ndarray, dtype: str) -> np.ndarray:
    """A constant's values as float64 (bf16 is stored as its raw bits)."""
    if dtype == "bf16":
        return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return stored.astype(np.float64)
