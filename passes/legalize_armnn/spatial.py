"""Layers over image-like data: convolutions, pooling, resize, normalizations, and the
space/depth/batch rearrangements.

nn computes these channels-last (NHWC, NDHWC): a layer whose dataLayout is NCHW/NCDHW gets its
input transposed to channels-last, the nn op, and the result transposed back. Weights arrive in
Arm NN's layouts and are rearranged into nn's (docs in nn2tosa/dialects/nn/):
  Convolution2d          NHWC [O, H, W, I]      NCHW [O, I, H, W]     -> [O, KH, KW, I]
  DepthwiseConvolution2d [1, H, W, I*M] (the frontend's form in every file)   -> [KH, KW, I, M]
  Convolution3d          [D, H, W, I, O] in both layouts                -> [O, KD, KH, KW, I]
  TransposeConvolution2d NHWC [O, H, W, I]      NCHW [O, I, H, W]     -> [O, KH, KW, I]
"""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import TensorType, Value

from .layer import Layer
from .registry import rule


def _biases(layer: Layer) -> list[Value]:
    return layer.operands[2:3] if layer.attrs["biasEnabled"] else []


def _spatial_op(layer: Layer, name: str, operands: list[Value], attrs: dict) -> Value:
    """`name` on channels-last data (operands[0] is the layer's input; the rest already in nn's
    layout), wrapped in the transposes the layer's dataLayout needs."""
    cf = layer.channels_first()
    x = layer.to_channels_last(operands[0], cf)
    y = layer.op(name, [x, *operands[1:]], attrs, type=layer.channels_last_type(layer.out_type, cf))
    return layer.from_channels_last(y, cf)


# ------------------------------------------------------------------------------ convolutions
def _conv2d_attrs(a: dict) -> dict:
    return {"stride": [a["strideY"], a["strideX"]], "dilation": [a["dilationY"], a["dilationX"]],
            "pad": [a["padTop"], a["padBottom"], a["padLeft"], a["padRight"]]}


@rule("Convolution2d")
def _conv2d(layer: Layer) -> list[Value]:
    x, w = layer.operands[:2]
    if layer.channels_first():
        w = layer.transpose(w, [0, 2, 3, 1])  # [O, I, H, W] -> [O, H, W, I]
    attrs = {**_conv2d_attrs(layer.attrs), "groups": 1}
    return [_spatial_op(layer, "nn.conv2d", [x, w, *_biases(layer)], attrs)]


@rule("DepthwiseConvolution2d")
def _depthwise(layer: Layer) -> list[Value]:
    """Weights [1, H, W, I*M] (channel i*M + m) become [H, W, I, M]. Per-axis quantized weights
    with M > 1 cannot keep one quantization axis in that shape, so they become the equivalent
    grouped convolution (I groups, weights [I*M, H, W, 1], output channel i*M + m as well)."""
    x, w = layer.operands[:2]
    cf = layer.channels_first()
    channels = layer.type_of(x).shape[1 if cf else 3]
    _, kh, kw, im = layer.type_of(w).shape
    multiplier = im // channels
    attrs = _conv2d_attrs(layer.attrs)
    q = layer.type_of(w).quant
    if q is not None and q.axis is not None and multiplier > 1:
        w = layer.transpose(w, [3, 1, 2, 0])
        return [_spatial_op(layer, "nn.conv2d", [x, w, *_biases(layer)], {**attrs, "groups": channels})]
    w = layer.reshape(w, [kh, kw, channels, multiplier])
    return [_spatial_op(layer, "nn.depthwise_conv2d", [x, w, *_biases(layer)], attrs)]


@rule("Convolution3d")
def _conv3d(layer: Layer) -> list[Value]:
    x, w = layer.operands[:2]
    a = layer.attrs
    w = layer.transpose(w, [4, 0, 1, 2, 3])  # [D, H, W, I, O] -> [O, D, H, W, I]
    attrs = {"stride": [a["strideZ"], a["strideY"], a["strideX"]],
             "dilation": [a["dilationZ"], a["dilationY"], a["dilationX"]],
             "pad": [a["padFront"], a["padBack"], a["padTop"], a["padBottom"], a["padLeft"], a["padRight"]]}
    return [_spatial_op(layer, "nn.conv3d", [x, w, *_biases(layer)], attrs)]


@rule("TransposeConvolution2d")
def _transpose_conv2d(layer: Layer) -> list[Value]:
    """Arm NN scatters each input pixel's kernel into a full output of (in - 1) * stride + kernel
    and crops padTop/padLeft from its start; the output shape (the layer's type) decides how much
    is kept at the end. In nn's terms: out_pad = [-padTop, out - full + padTop, ...]."""
    x, w = layer.operands[:2]
    a = layer.attrs
    cf = layer.channels_first()
    if cf:
        w = layer.transpose(w, [0, 2, 3, 1])  # [O, I, H, W] -> [O, H, W, I]
    _, kh, kw, _ = layer.type_of(w).shape
    in_shape = layer.channels_last_type(layer.type_of(x), cf).shape
    out_shape = layer.channels_last_type(layer.out_type, cf).shape
    full_h = (in_shape[1] - 1) * a["strideY"] + kh
    full_w = (in_shape[2] - 1) * a["strideX"] + kw
    out_pad = [-a["padTop"], out_shape[1] - full_h + a["padTop"], -a["padLeft"], out_shape[2] - full_w + a["padLeft"]]
    attrs = {"stride": [a["strideY"], a["strideX"]], "out_pad": out_pad}
    return [_spatial_op(layer, "nn.transpose_conv2d", [x, w, *_biases(layer)], attrs)]


# ------------------------------------------------------------------------------ pooling
def _padding_only_windows(size: int, out: int, kernel: int, stride: int, pad_before: int, pad_after: int) -> list[bool]:
    """Per output position: whether its window covers padding only (Arm NN outputs 0 there)."""
    only_padding = []
    for o in range(out):
        start = o * stride - pad_before
        end = min(start + kernel, size + pad_after)
        only_padding.append(end <= 0 or start >= size)
    return only_padding


def pooling_algorithm_known(layer: Layer) -> str | None:
    """The pooling algorithm is Max, Average or L2."""
    if layer.attrs["poolType"] not in ("Max", "Average", "L2"):
        return f"pooling algorithm {layer.attrs['poolType']} is unknown"
    return None


@rule("Pooling2d", "Pooling3d", constraints=(pooling_algorithm_known,))
def _pooling(layer: Layer) -> list[Value]:
    """Arm NN's pooling (its reference Pooling2d/3d): a window starts at o*stride - padBefore and
    is cut at input + padAfter, so the extra windows of Ceiling rounding reach into padding
    that is never counted. Average divides by the window size within input + declared padding
    (IgnoreValue) or within the input only (Exclude); L2 is sqrt of the same average of
    squares; Max ignores padding. A window over padding only gives 0."""
    a = layer.attrs
    three_d = layer.type_name == "Pooling3d"
    axes = ("Depth", "Height", "Width") if three_d else ("Height", "Width")
    dims = ("Z", "Y", "X") if three_d else ("Y", "X")
    pad_names = (("Front", "Back"), ("Top", "Bottom"), ("Left", "Right"))[-len(axes):]
    cf = layer.channels_first()
    x = layer.to_channels_last(layer.operands[0], cf)
    in_shape = layer.type_of(x).shape
    out_t = layer.channels_last_type(layer.out_type, cf)
    kernel = [a[f"pool{n}"] for n in axes]
    stride = [a[f"stride{d}"] for d in dims]
    declared = [a[f"pad{p}"] for pair in pad_names for p in pair]
    pad, padding_only = [], []
    for i, (k, s) in enumerate(zip(kernel, stride)):
        size, out = in_shape[1 + i], out_t.shape[1 + i]
        before, after = declared[2 * i], declared[2 * i + 1]
        extra = (out - 1) * s + k - (size + before + after)  # Ceiling rounding's windows past the padding
        if (size + before + after - k) // s + 1 > out:
            raise ValueError(f"the output has {out} positions along {axes[i].lower()} where the window fits "
                             f"{(size + before + after - k) // s + 1}")
        pad += [before, after + max(0, extra)]
        padding_only.append(_padding_only_windows(size, out, k, s, before, after))
    exclude = a["paddingMethod"] == "Exclude"
    suffix = "3d" if three_d else "2d"
    attrs = {"kernel": kernel, "stride": stride, "pad": pad}
    kind = a["poolType"]
    if kind == "Max":
        if not three_d:
            attrs["dilation"] = [1, 1]
        y = layer.op(f"nn.max_pool{suffix}", [x], attrs, type=out_t)
    elif kind == "Average":
        counted = [0] * len(declared) if exclude else declared
        y = layer.op(f"nn.avg_pool{suffix}", [x], {**attrs, "count_pad": counted, "divisor": 0}, type=out_t)
    elif kind == "L2" and (exclude or not any(declared)):
        y = layer.op(f"nn.l2_pool{suffix}", [x], attrs, type=out_t)
    elif kind == "L2":  # IgnoreValue counts the declared padding: sqrt(average of squares)
        real = layer.real(x)
        mean = layer.op(f"nn.avg_pool{suffix}", [layer.op("nn.square", [real])],
                        {**attrs, "count_pad": declared, "divisor": 0})
        y = layer.finish(layer.op("nn.sqrt", [mean]), out_t)
    else:
        raise AssertionError(kind)  # pooling_algorithm_known
    if any(any(p) for p in padding_only):
        y = _zero_where_padding_only(layer, y, padding_only)
    return [layer.from_channels_last(y, cf)]


def _zero_where_padding_only(layer: Layer, y: Value, padding_only: list[list[bool]]) -> Value:
    t = layer.type_of(y)
    mask = np.zeros([1] + [len(p) for p in padding_only] + [1], dtype=bool)
    for i, p in enumerate(padding_only):
        index: list[slice | np.ndarray] = [slice(None)] * mask.ndim
        index[1 + i] = np.asarray(p)
        mask[tuple(index)] = True
    zero = 0 if t.quant is None else t.quant.zero_point  # the stored value of a real 0
    zero_value = layer.constant(np.asarray(zero, t.numpy_dtype), TensorType((), t.dtype, t.quant))
    return layer.op("nn.select", [layer.constant(mask), zero_value, y], type=t)


# ------------------------------------------------------------------------------ resize
@rule("Resize", "ResizeBilinear")
def _resize(layer: Layer) -> list[Value]:
    """Arm NN's Resize samples source coordinate x * in/out (align corners: x * (in-1)/(out-1);
    half-pixel: (x + 0.5) * in/out, minus 0.5 for bilinear). Bilinear interpolates the clamped
    neighbours; nearest takes floor of the coordinate, or rounds it with align corners. nn's
    nearest rounds by default (floor(c + 0.5), the same for align corners and, with nn's
    half-pixel coordinate, for half-pixel), so only plain nearest asks for floor."""
    a = layer.attrs
    mode = "bilinear" if layer.type_name == "ResizeBilinear" or a["method"] == "Bilinear" else "nearest"
    attrs = {"size": [a["targetHeight"], a["targetWidth"]], "mode": mode,
             "align_corners": bool(a["alignCorners"]), "half_pixel_centers": bool(a["halfPixelCenters"])}
    if mode == "nearest" and not (attrs["align_corners"] or attrs["half_pixel_centers"]):
        attrs["nearest_rounding"] = "floor"
    return [_spatial_op(layer, "nn.resize", [layer.operands[0]], attrs)]


# ------------------------------------------------------------------------------ normalizations
def _channel_axis(layer: Layer, rank: int) -> int:
    return 1 if layer.channels_first() else rank - 1


@rule("BatchNormalization")
def _batch_norm(layer: Layer) -> list[Value]:
    """Operands (x, mean, variance, beta, gamma); nn wants (x, mean, var, gamma, beta). The
    channel axis says where the statistics apply, so no transposes are needed."""
    x, mean, var, beta, gamma = layer.operands
    attrs = {"epsilon": float(layer.attrs["eps"]), "axis": _channel_axis(layer, layer.type_of(x).rank)}
    return [layer.op("nn.batch_norm", [x, mean, var, gamma, beta], attrs, type=layer.out_type)]


def l2_normalization_rank_4(layer: Layer) -> str | None:
    """L2Normalization's input has at most 4 dimensions, as in Arm NN."""
    rank = layer.type_of(layer.operands[0]).rank
    if rank > 4:
        return f"Arm NN's L2Normalization handles up to 4 dimensions, not {rank}"
    return None


@rule("L2Normalization", constraints=(l2_normalization_rank_4,))
def _l2_normalization(layer: Layer) -> list[Value]:
    """x / sqrt(max(sum of x^2 over channels, eps)). Arm NN pads a shape of rank < 4 with leading
    1s and takes the channels at the layout's 4-D position, so rank-3 NCHW normalizes over
    dimension 0 and rank-2 NCHW sees one channel (each element is normalized by itself)."""
    x = layer.operands[0]
    rank = layer.type_of(x).rank
    axis = (1 if layer.channels_first() else 3) - (4 - rank)
    attrs = {"axes": [axis] if axis >= 0 else [], "epsilon": float(layer.attrs["eps"])}
    return [layer.op("nn.l2_normalize", [x], attrs, type=layer.out_type)]


@rule("InstanceNormalization")
def _instance_norm(layer: Layer) -> list[Value]:
    """gamma and beta are scalars of the descriptor: broadcast to one per channel."""
    a = layer.attrs
    cf = layer.channels_first()
    x = layer.to_channels_last(layer.real(layer.operands[0]), cf)
    t = layer.type_of(x)
    channels = t.shape[-1]
    gamma = layer.constant(np.full([channels], a["gamma"], t.numpy_dtype), TensorType((channels,), t.dtype))
    beta = layer.constant(np.full([channels], a["beta"], t.numpy_dtype), TensorType((channels,), t.dtype))
    y = layer.op("nn.instance_norm", [x, gamma, beta], {"epsilon": float(a["eps"])})
    return [layer.finish(layer.from_channels_last(y, cf))]


def normalization_local_brightness(layer: Layer) -> str | None:
    """Normalization's method is LocalBrightness: Arm NN defines no computation for LocalContrast (its
    reference backend only logs that it is not supported and writes nothing)."""
    method = layer.attrs["normMethodType"]
    if method != "LocalBrightness":
        return (f"{method} normalization has no defined computation in Arm NN (its reference backend only logs "
                "that it is not supported and writes nothing)")
    return None


def within_normalization_4d(layer: Layer) -> str | None:
    """Within-channel Normalization has a 4-D input."""
    rank = layer.type_of(layer.operands[0]).rank
    if layer.attrs["normChannelType"] != "Across" and rank != 4:
        return f"Within normalization needs a 4-D input, not {rank}-D"
    return None


@rule("Normalization", constraints=(normalization_local_brightness, within_normalization_4d))
def _normalization(layer: Layer) -> list[Value]:
    """Local brightness normalization (Krizhevsky 2012): x / (k + alpha * s)^beta, s the sum of
    squares over normSize neighbours (radius normSize // 2, cut at the edges) across channels or,
    Within, over a normSize x normSize spatial window of each channel. Arm NN defines no
    computation for LocalContrast."""
    a = layer.attrs
    radius = a["normSize"] // 2
    if a["normChannelType"] == "Across":
        attrs = {"radius": radius, "alpha": float(a["alpha"]), "beta": float(a["beta"]), "bias": float(a["k"])}
        return [_spatial_op(layer, "nn.local_response_norm", [layer.operands[0]], attrs)]
    cf = layer.channels_first()
    x = layer.to_channels_last(layer.real(layer.operands[0]), cf)
    size = 2 * radius + 1
    window_sum = layer.op("nn.avg_pool2d", [layer.op("nn.square", [x])],
                          {"kernel": [size, size], "stride": [1, 1], "pad": [radius] * 4,
                           "count_pad": [radius] * 4, "divisor": 1})
    scaled = layer.op("nn.mul", [window_sum, layer.scalar(a["alpha"], x)])
    base = layer.op("nn.add", [scaled, layer.scalar(a["k"], x)])
    denominator = layer.op("nn.pow", [base, layer.scalar(a["beta"], x)])
    y = layer.op("nn.div", [x, denominator])
    return [layer.finish(layer.from_channels_last(y, cf))]


# ------------------------------------------------------------------------------ rearrangements
def _block_attrs(layer: Layer, spatial_dims: int) -> tuple[list[int], list[int]]:
    """blockShape (one per spatial dimension) and padList/crops (a pair per spatial dimension)."""
    block = list(layer.attrs["blockShape"])
    pairs = list(layer.attrs["padList"] if "padList" in layer.attrs else layer.attrs["crops"])
    if not block or len(block) > spatial_dims or len(pairs) != 2 * len(block) or min(block) < 1:
        raise ValueError(f"blockShape {block} with pads/crops {pairs} does not fit {spatial_dims} spatial dimensions")
    return block, pairs


@rule("SpaceToBatchNd")
def _space_to_batch(layer: Layer) -> list[Value]:
    """TensorFlow's space_to_batch_nd on channels-last data [N, S1..Sm, C]: pad the spatial dims,
    split each into (Si/bi, bi), move the block offsets in front of the batch, merge them in."""
    cf = layer.channels_first()
    x = layer.to_channels_last(layer.operands[0], cf)
    block, pads = _block_attrs(layer, layer.type_of(x).rank - 2)
    shape = list(layer.type_of(x).shape)
    m = len(block)
    widths = [0, 0] + pads + [0, 0] * (len(shape) - 1 - m)
    if any(pads):  # nn.pad's value is real: a quantized tensor is padded with its zero point
        x = layer.move("nn.pad", x, {"pads": widths, "mode": "constant", "value": 0.0})
    padded = list(layer.type_of(x).shape)
    split = [padded[0]]
    for i, b in enumerate(block):
        split += [padded[1 + i] // b, b]
    split += padded[1 + m:]
    x = layer.reshape(x, split)
    offsets = [2 + 2 * i for i in range(m)]
    perm = offsets + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, len(split)))
    x = layer.transpose(x, perm)
    merged = [int(np.prod(block)) * padded[0]] + [padded[1 + i] // b for i, b in enumerate(block)] + padded[1 + m:]
    x = layer.reshape(x, merged)
    return [layer.finish(layer.from_channels_last(x, cf))]


@rule("BatchToSpaceNd")
def _batch_to_space(layer: Layer) -> list[Value]:
    """The inverse: split the batch into (b1..bm, N), interleave each bi after its spatial dim,
    merge, then crop (crops hold a (begin, end) pair per spatial dim)."""
    cf = layer.channels_first()
    x = layer.to_channels_last(layer.operands[0], cf)
    block, crops = _block_attrs(layer, layer.type_of(x).rank - 2)
    shape = list(layer.type_of(x).shape)
    m = len(block)
    n = shape[0] // int(np.prod(block))
    x = layer.reshape(x, block + [n] + shape[1:])
    perm = [m] + [p for i in range(m) for p in (m + 1 + i, i)] + list(range(2 * m + 1, len(shape) + m))
    x = layer.transpose(x, perm)
    full = [n] + [shape[1 + i] * b for i, b in enumerate(block)] + shape[1 + m:]
    x = layer.reshape(x, full)
    if any(crops):
        begin = [0] + [crops[2 * i] for i in range(m)] + [0] * (len(full) - 1 - m)
        size = [n] + [full[1 + i] - crops[2 * i] - crops[2 * i + 1] for i in range(m)] + full[1 + m:]
        x = layer.move("nn.slice", x, {"begin": begin, "size": size})
    return [layer.finish(layer.from_channels_last(x, cf))]


@rule("SpaceToDepth")
def _space_to_depth(layer: Layer) -> list[Value]:
    """[N, H, W, C] -> [N, H/b, W/b, b*b*C], channel (dy*b + dx)*C + c (TensorFlow's order)."""
    b = layer.attrs["blockSize"]
    cf = layer.channels_first()
    x = layer.to_channels_last(layer.operands[0], cf)
    n, h, w, c = layer.type_of(x).shape
    x = layer.reshape(x, [n, h // b, b, w // b, b, c])
    x = layer.transpose(x, [0, 1, 3, 2, 4, 5])
    x = layer.reshape(x, [n, h // b, w // b, b * b * c])
    return [layer.finish(layer.from_channels_last(x, cf))]


@rule("DepthToSpace")
def _depth_to_space(layer: Layer) -> list[Value]:
    """[N, H, W, b*b*C] -> [N, H*b, W*b, C], the inverse order of SpaceToDepth (TensorFlow's DCR)."""
    b = layer.attrs["blockSize"]
    cf = layer.channels_first()
    x = layer.to_channels_last(layer.operands[0], cf)
    n, h, w, c = layer.type_of(x).shape
    x = layer.reshape(x, [n, h, w, b, b, c // (b * b)])
    x = layer.transpose(x, [0, 1, 3, 2, 4, 5])
    x = layer.reshape(x, [n, h * b, w * b, c // (b * b)])
    return [layer.finish(layer.from_channels_last(x, cf))]


@rule("ChannelShuffle")
def _channel_shuffle(layer: Layer) -> list[Value]:
    """Channels along `axis` viewed as [groups, C/groups], transposed to [C/groups, groups]."""
    x = layer.operands[0]
    shape = list(layer.type_of(x).shape)
    axis, groups = layer.attrs["axis"], layer.attrs["numGroups"]
    x = layer.reshape(x, shape[:axis] + [groups, shape[axis] // groups] + shape[axis + 1:])
    perm = list(range(len(shape) + 1))
    perm[axis], perm[axis + 1] = axis + 1, axis
    x = layer.transpose(x, perm)
    return [layer.finish(layer.reshape(x, shape))]

