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
Each op's `doc` states its semantics; docs/supported_ops.md is generated from them.
"""
from __future__ import annotations

import math

from collections.abc import Callable
from typing import Any

import numpy as np

from nn2tosa.ir import Dialect, Graph, TensorType, Type, attr, define, register_dialect
from nn2tosa.ir.verify import constant_verifier

register_dialect(Dialect("nn", "canonical neural-network ops", constant_op="nn.constant", constant_attr="value"))

Attrs = dict[str, Any]


# ------------------------------------------------------------------------------ helpers
def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy broadcasting of static shapes (raises ValueError when they do not broadcast)."""
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def _same(attrs: Attrs, types: list[Type]) -> list[Type]:
    return [types[0]]


def _unquantized(t: TensorType) -> TensorType:
    return TensorType(t.shape, t.dtype)


def _broadcast(dtype_from: int | None = 0, dtype: str | None = None) -> Callable[[Attrs, list[Type]], list[Type]]:
    def infer(attrs: Attrs, types: list[Type]) -> list[Type]:
        shape = broadcast_shape(*[t.shape for t in types])
        return [TensorType(shape, dtype or types[dtype_from].dtype)]

    return infer


def _same_dtypes(graph: Graph, node: int, first: int = 0) -> list[str]:
    dtypes = {graph.type_of(v).dtype for v in graph.operands(node)[first:]}
    return [] if len(dtypes) <= 1 else [f"operands have different element types {sorted(dtypes)}"]


def _fold_with(fn: Callable[..., Any]) -> Callable[[Attrs, list[np.ndarray], list[Type]], list[np.ndarray] | None]:
    def fold(attrs: Attrs, values: list[np.ndarray], types: list[Type]) -> list[np.ndarray] | None:
        if any(t.quant is not None for t in types):  # quantized arithmetic is not plain numpy
            return None
        with np.errstate(all="ignore"):
            return [np.asarray(fn(*values, **attrs) if attrs else fn(*values)).astype(types[0].numpy_dtype)]

    return fold


def _axes_ok(axes: list[int], rank: int) -> bool:
    return all(0 <= a < rank for a in axes) and len(set(axes)) == len(axes)


# ------------------------------------------------------------------------------ constants
define(
    "nn.constant",
    operands=0,
    attrs={"value": attr("tensor", "the tensor, in the storage type of the result")},
    doc="A constant tensor. Quantized constants hold their stored integers; the result type carries the scale.",
    verify=constant_verifier("value"),
    traits={"constant"},
)

# ------------------------------------------------------------------------------ elementwise
# name -> (numpy function, doc); operands share a dtype, numpy broadcasting.
_FLOAT_INT_BINARY = {
    "add": (np.add, "x + y."),
    "sub": (np.subtract, "x - y."),
    "mul": (np.multiply, "x * y."),
    "maximum": (np.maximum, "max(x, y); NaN if either is NaN."),
    "minimum": (np.minimum, "min(x, y); NaN if either is NaN."),
    "squared_difference": (lambda x, y: (x - y) * (x - y), "(x - y)^2."),
    "pow": (np.power, "x ** y."),
}
_DIVISIONS = {
    "div": (lambda x, y: x / y if x.dtype.kind == "f" else np.trunc(x / y), "x / y; integer operands truncate toward zero."),
    "floor_div": (np.floor_divide, "floor(x / y)."),
    "mod": (np.mod, "x - floor(x / y) * y (the sign of y, Python's %)."),
    "fmod": (np.fmod, "x - trunc(x / y) * y (the sign of x, C's fmod)."),
}
_INT_BINARY = {
    "bitwise_and": (np.bitwise_and, "x & y (integers and booleans)."),
    "bitwise_or": (np.bitwise_or, "x | y."),
    "bitwise_xor": (np.bitwise_xor, "x ^ y."),
    "shift_left": (np.left_shift, "x << y."),
    "shift_right": (np.right_shift, "x >> y, arithmetic for signed types."),
}
for _table in (_FLOAT_INT_BINARY, _DIVISIONS, _INT_BINARY):
    for _name, (_fn, _doc) in _table.items():
        define(f"nn.{_name}", operands=2, doc=_doc, infer=_broadcast(), fold=_fold_with(_fn),
               verify=_same_dtypes, traits={"elementwise"})

_COMPARISONS = {
    "equal": (np.equal, "x == y, boolean result."),
    "not_equal": (np.not_equal, "x != y, boolean result."),
    "greater": (np.greater, "x > y, boolean result."),
    "greater_equal": (np.greater_equal, "x >= y, boolean result."),
    "less": (np.less, "x < y, boolean result."),
    "less_equal": (np.less_equal, "x <= y, boolean result."),
    "logical_and": (np.logical_and, "x and y on booleans."),
    "logical_or": (np.logical_or, "x or y on booleans."),
    "logical_xor": (np.logical_xor, "x xor y on booleans."),
}
for _name, (_fn, _doc) in _COMPARISONS.items():
    define(f"nn.{_name}", operands=2, doc=_doc, infer=_broadcast(dtype="i1"), fold=_fold_with(_fn),
           verify=_same_dtypes, traits={"elementwise"})


def _np_round_half_even(x: np.ndarray) -> np.ndarray:
    return np.round(x)


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x)


_UNARY = {
    "neg": (np.negative, "-x."),
    "abs": (np.abs, "|x|."),
    "sqrt": (np.sqrt, "sqrt(x)."),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "1 / sqrt(x)."),
    "reciprocal": (lambda x: 1 / x, "1 / x."),
    "square": (np.square, "x * x."),
    "exp": (np.exp, "e^x."),
    "exp2": (np.exp2, "2^x."),
    "log": (np.log, "natural logarithm."),
    "log2": (np.log2, "base-2 logarithm."),
    "log10": (np.log10, "base-10 logarithm."),
    "sin": (np.sin, "sine."), "cos": (np.cos, "cosine."), "tan": (np.tan, "tangent."),
    "asin": (np.arcsin, "arcsine."), "acos": (np.arccos, "arccosine."), "atan": (np.arctan, "arctangent."),
    "sinh": (np.sinh, "hyperbolic sine."), "cosh": (np.cosh, "hyperbolic cosine."),
    "asinh": (np.arcsinh, "inverse hyperbolic sine."), "acosh": (np.arccosh, "inverse hyperbolic cosine."),
    "atanh": (np.arctanh, "inverse hyperbolic tangent."),
    "floor": (np.floor, "round toward -inf."),
    "ceil": (np.ceil, "round toward +inf."),
    "round": (_np_round_half_even, "round half to even."),
    "sign": (np.sign, "-1, 0 or 1 (0 for 0, NaN for NaN)."),
    "erf": (_erf, "the error function."),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "1 / (1 + e^-x)."),
    "tanh": (np.tanh, "hyperbolic tangent."),
    "relu": (lambda x: np.maximum(x, 0), "max(x, 0)."),
    "hard_swish": (lambda x: x * np.clip(x + 3, 0, 6) / 6, "x * relu6(x + 3) / 6."),
    "softplus": (lambda x: np.log1p(np.exp(x)), "log(1 + e^x)."),
    "bitwise_not": (np.invert, "~x on integers."),
    "logical_not": (np.logical_not, "not x on booleans."),
    "identity": (lambda x: x, "x (removed by canonicalization)."),
}
for _name, (_fn, _doc) in _UNARY.items():
    define(f"nn.{_name}", operands=1, doc=_doc, infer=_same, fold=_fold_with(_fn), traits={"elementwise"})

for _name, _fn in {"isnan": np.isnan, "isinf": np.isinf}.items():
    define(f"nn.{_name}", operands=1, doc=f"{_name}(x), boolean result.",
           infer=lambda a, t: [TensorType(t[0].shape, "i1")], fold=_fold_with(_fn), traits={"elementwise"})

def _bounds_are_numbers(graph: Graph, node: int) -> list[str]:
    """A NaN bound means nothing (a damaged file's clamp): refused at the layer or node that has it."""
    attrs = graph.attrs(node)
    return [f"clamp bound {k} is NaN" for k in ("min", "max") if math.isnan(float(attrs[k]))]


define("nn.clamp", operands=1, attrs={"min": attr("float", "lower bound"), "max": attr("float", "upper bound")},
       doc="min(max(x, min), max), so max everywhere when min > max (numpy.clip, torch.clamp). Bounds are real "
           "values (quantized ops compare dequantized values); NaN is not a bound.",
       infer=_same, verify=_bounds_are_numbers, fold=_fold_with(lambda x, min, max: np.clip(x, min, max)),
       traits={"elementwise"})
define("nn.leaky_relu", operands=1, attrs={"alpha": attr("float", "slope for x < 0")},
       doc="x if x >= 0 else alpha * x.", infer=_same,
       fold=_fold_with(lambda x, alpha: np.where(x >= 0, x, alpha * x)), traits={"elementwise"})
define("nn.elu", operands=1, attrs={"alpha": attr("float", "scale of the negative part")},
       doc="x if x > 0 else alpha * (e^x - 1).", infer=_same,
       fold=_fold_with(lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x))), traits={"elementwise"})
define("nn.gelu", operands=1, attrs={"approximate": attr("str", "'none' (erf form) or 'tanh'")},
       doc="x * Phi(x); approximate='tanh': 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).", infer=_same,
       traits={"elementwise"})
define("nn.prelu", operands=2, doc="x if x >= 0 else alpha * x, alpha broadcast against x (operand 1).",
       infer=_broadcast(), fold=_fold_with(lambda x, a: np.where(x >= 0, x, a * x)), traits={"elementwise"})


def _infer_select(attrs: Attrs, types: list[Type]) -> list[Type]:
    return [TensorType(broadcast_shape(*[t.shape for t in types]), types[1].dtype)]


define("nn.select", operands=3, doc="cond ? x : y (operand 0 boolean), numpy broadcasting.",
       infer=_infer_select, fold=_fold_with(np.where),
       verify=lambda g, n: _same_dtypes(g, n, first=1), traits={"elementwise"})


def _same_shape(graph: Graph, node: int) -> list[str]:
    """A type conversion keeps its operand's shape (its result type is given, not inferred: a file
    whose declared output shape contradicts the input's is caught here, at the layer or node)."""
    have, want = graph.type_of(graph.operands(node)[0]).shape, graph.types(node)[0].shape
    return [] if tuple(have) == tuple(want) else [f"result shape {list(want)} differs from the operand's {list(have)}"]


def _fold_cast(attrs: Attrs, values: list[np.ndarray], types: list[Type]) -> list[np.ndarray] | None:
    t = types[0]
    if t.quant is not None or t.dtype in ("bf16", "i4", "i48"):
        return None
    x = values[0]
    if t.dtype == "i1":
        return [x != 0]
    if x.dtype.kind == "f" and t.numpy_dtype.kind in "iu":  # float -> int rounds half to even, saturating
        info = np.iinfo(t.numpy_dtype)
        with np.errstate(invalid="ignore"):
            return [np.clip(np.round(x), info.min, info.max).astype(t.numpy_dtype)]
    return [x.astype(t.numpy_dtype)]


define("nn.cast", operands=1,
       doc="Convert to the result's element type: float->int rounds half to even and saturates; "
           "to boolean is x != 0. Quantized types are not cast (see quantize/dequantize).",
       infer=None, fold=_fold_cast, verify=_same_shape, traits={"elementwise"})

# ------------------------------------------------------------------------------ shapes and data movement


def _infer_reshape(attrs: Attrs, types: list[Type]) -> list[Type]:
    shape = tuple(attrs["shape"])
    if int(np.prod(shape)) != types[0].num_elements:
        raise ValueError(f"cannot reshape {list(types[0].shape)} to {list(shape)}")
    return [TensorType(shape, types[0].dtype)]


define("nn.reshape", operands=1, attrs={"shape": attr("ints", "the result shape (static, no -1)")},
       doc="The same elements in row-major order, in a new shape.", infer=_infer_reshape,
       fold=lambda a, v, t: [v[0].reshape(t[0].shape)])


def _infer_transpose(attrs: Attrs, types: list[Type]) -> list[Type]:
    perm = attrs["perm"]
    if sorted(perm) != list(range(types[0].rank)):
        raise ValueError(f"perm {perm} is not a permutation of the {types[0].rank} dimensions")
    return [TensorType(tuple(types[0].shape[p] for p in perm), types[0].dtype)]


define("nn.transpose", operands=1, attrs={"perm": attr("ints", "result dimension i is input dimension perm[i]")},
       doc="Permute dimensions: result.shape[i] = input.shape[perm[i]].", infer=_infer_transpose,
       fold=lambda a, v, t: [np.ascontiguousarray(v[0].transpose(a["perm"]))])


def _infer_broadcast_to(attrs: Attrs, types: list[Type]) -> list[Type]:
    shape = tuple(attrs["shape"])
    if broadcast_shape(types[0].shape, shape) != shape:
        raise ValueError(f"{list(types[0].shape)} does not broadcast to {list(shape)}")
    return [TensorType(shape, types[0].dtype)]


define("nn.broadcast_to", operands=1, attrs={"shape": attr("ints", "the result shape")},
       doc="Numpy broadcast_to.", infer=_infer_broadcast_to,
       fold=lambda a, v, t: [np.ascontiguousarray(np.broadcast_to(v[0], t[0].shape))])


def _infer_concat(attrs: Attrs, types: list[Type]) -> list[Type]:
    axis = attrs["axis"]
    first = types[0].shape
    for t in types[1:]:
        if len(t.shape) != len(first) or any(a != b for i, (a, b) in enumerate(zip(t.shape, first)) if i != axis):
            raise ValueError("operand shapes differ outside the concatenation axis")
    shape = list(first)
    shape[axis] = sum(t.shape[axis] for t in types)
    return [TensorType(tuple(shape), types[0].dtype)]


define("nn.concat", operands=(1, None), attrs={"axis": attr("int", "the axis to join along")},
       doc="Join tensors along `axis`.", infer=_infer_concat,
       fold=lambda a, v, t: None if t[0].quant else [np.concatenate(v, axis=a["axis"])])


def _infer_split(attrs: Attrs, types: list[Type]) -> list[Type]:
    axis, sizes = attrs["axis"], attrs["sizes"]
    if sum(sizes) != types[0].shape[axis]:
        raise ValueError(f"split sizes {sizes} do not add up to dimension {types[0].shape[axis]}")
    out = []
    for s in sizes:
        shape = list(types[0].shape)
        shape[axis] = s
        out.append(TensorType(tuple(shape), types[0].dtype))
    return out


def _fold_split(a: Attrs, v: list[np.ndarray], t: list[Type]) -> list[np.ndarray]:
    return np.split(v[0], np.cumsum(a["sizes"])[:-1], axis=a["axis"])


define("nn.split", operands=1, results=(1, None),
       attrs={"axis": attr("int", "the axis to cut"), "sizes": attr("ints", "size of each piece along axis")},
       doc="Cut a tensor into consecutive pieces along `axis`; one result per piece.", infer=_infer_split,
       fold=_fold_split)


def _infer_slice(attrs: Attrs, types: list[Type]) -> list[Type]:
    begin, size = attrs["begin"], attrs["size"]
    shape = types[0].shape
    if len(begin) != len(shape) or len(size) != len(shape):
        raise ValueError("begin/size rank differs from the input's")
    if any(b < 0 or s < 0 or b + s > d for b, s, d in zip(begin, size, shape)):
        raise ValueError(f"slice begin {begin} size {size} is outside {list(shape)}")
    return [TensorType(tuple(size), types[0].dtype)]


define("nn.slice", operands=1,
       attrs={"begin": attr("ints", "first index per dimension"), "size": attr("ints", "extent per dimension")},
       doc="x[begin[i] : begin[i] + size[i]] in every dimension.", infer=_infer_slice,
       fold=lambda a, v, t: [np.ascontiguousarray(v[0][tuple(slice(b, b + s) for b, s in zip(a["begin"], a["size"]))])])


def _infer_strided_slice(attrs: Attrs, types: list[Type]) -> list[Type]:
    shape = types[0].shape
    dims = [len(range(*slice(b, e, s).indices(d))) for b, e, s, d in
            zip(attrs["begin"], attrs["end"], attrs["strides"], shape)]
    return [TensorType(tuple(dims), types[0].dtype)]


define("nn.strided_slice", operands=1,
       attrs={"begin": attr("ints", "start per dimension"), "end": attr("ints", "stop per dimension (exclusive)"),
              "strides": attr("ints", "non-zero step per dimension; negative walks backwards")},
       doc="Python slicing x[b0:e0:s0, b1:e1:s1, ...] with begin/end already normalized: a negative end "
           "with a negative stride means 'before index 0' (use -dim-1).",
       infer=_infer_strided_slice,
       fold=lambda a, v, t: [np.ascontiguousarray(v[0][tuple(slice(b, None if (s < 0 and e < 0) else e, s)
                                                            for b, e, s in zip(a["begin"], a["end"], a["strides"]))])])


def _infer_pad(attrs: Attrs, types: list[Type]) -> list[Type]:
    pads = attrs["pads"]
    shape = types[0].shape
    if len(pads) != 2 * len(shape):
        raise ValueError("pads needs a (before, after) pair per dimension")
    return [TensorType(tuple(d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(shape)), types[0].dtype)]


def _fold_pad(attrs: Attrs, values: list[np.ndarray], types: list[Type]) -> list[np.ndarray] | None:
    if types[0].quant is not None:  # the fill value is real: quantizing it is the lowering's business
        return None
    pads = attrs["pads"]
    widths = [(pads[2 * i], pads[2 * i + 1]) for i in range(values[0].ndim)]
    if attrs["mode"] == "constant":
        return [np.pad(values[0], widths, constant_values=attrs["value"]).astype(types[0].numpy_dtype)]
    return [np.pad(values[0], widths, mode=attrs["mode"])]  # numpy's reflect/symmetric/edge are ours


define("nn.pad", operands=1,
       attrs={"pads": attr("ints", "[before0, after0, before1, after1, ...], non-negative"),
              "mode": attr("str", "'constant', 'reflect' (no edge repeat), 'symmetric' (edge repeated) or 'edge'"),
              "value": attr("float", "fill value for mode 'constant' (a real value; quantized: see the type)")},
       doc="Pad every dimension.", infer=_infer_pad, fold=_fold_pad)


def _infer_tile(attrs: Attrs, types: list[Type]) -> list[Type]:
    return [TensorType(tuple(d * m for d, m in zip(types[0].shape, attrs["multiples"])), types[0].dtype)]


define("nn.tile", operands=1, attrs={"multiples": attr("ints", "repetitions per dimension")},
       doc="Numpy tile.", infer=_infer_tile, fold=lambda a, v, t: [np.tile(v[0], a["multiples"])])
define("nn.reverse", operands=1, attrs={"axes": attr("ints", "dimensions to reverse")},
       doc="Reverse the order of elements along each of `axes`.", infer=_same,
       fold=lambda a, v, t: [np.ascontiguousarray(np.flip(v[0], a["axes"]))])


def _infer_gather(attrs: Attrs, types: list[Type]) -> list[Type]:
    data, idx = types
    axis = attrs["axis"]
    return [TensorType(tuple(data.shape[:axis]) + tuple(idx.shape) + tuple(data.shape[axis + 1:]), data.dtype)]


define("nn.gather", operands=2, attrs={"axis": attr("int", "the axis indexed")},
       doc="numpy.take(data, indices, axis): indices (operand 1, integers, non-negative, in range) select "
           "slices along `axis`.", infer=_infer_gather,
       fold=lambda a, v, t: [np.take(v[0], v[1], axis=a["axis"])])


def _infer_gather_nd(attrs: Attrs, types: list[Type]) -> list[Type]:
    data, idx = types
    k = idx.shape[-1]
    return [TensorType(tuple(idx.shape[:-1]) + tuple(data.shape[k:]), data.dtype)]


define("nn.gather_nd", operands=2,
       doc="result[i...] = data[indices[i..., :]]: the last dimension of indices (operand 1) holds a "
           "prefix index into data.", infer=_infer_gather_nd)
define("nn.scatter_nd", operands=3, attrs={"reduction": attr("str", "'none' (replace), 'add', 'mul', 'max' or 'min'")},
       doc="Copy of data (operand 0) with data[indices[i..., :]] = updates[i...] (indices operand 1, "
           "updates operand 2); with duplicates the last update wins unless a reduction combines them.",
       infer=_same)

# ------------------------------------------------------------------------------ reductions and normalization


def _infer_reduce(attrs: Attrs, types: list[Type]) -> list[Type]:
    axes, keep = attrs["axes"], attrs["keep_dims"]
    shape = types[0].shape
    if not _axes_ok(axes, len(shape)):
        raise ValueError(f"bad reduction axes {axes} for rank {len(shape)}")
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    return [TensorType(out, types[0].dtype)]


_REDUCTIONS = {
    "reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
    "reduce_prod": np.prod, "reduce_any": np.any, "reduce_all": np.all,
}
for _name, _fn in _REDUCTIONS.items():
    define(f"nn.{_name}", operands=1,
           attrs={"axes": attr("ints", "dimensions reduced"), "keep_dims": attr("bool", "keep them with size 1")},
           doc=f"{_name[7:]} over `axes`.", infer=_infer_reduce,
           fold=(lambda fn: lambda a, v, t: None if t[0].quant else
                 [np.asarray(fn(v[0], axis=tuple(a["axes"]), keepdims=a["keep_dims"])).astype(t[0].numpy_dtype)])(_fn))


def _infer_arg(attrs: Attrs, types: list[Type]) -> list[Type]:
    shape = list(types[0].shape)
    if attrs["keep_dims"]:
        shape[attrs["axis"]] = 1
    else:
        del shape[attrs["axis"]]
    return [TensorType(tuple(shape), attrs["output_type"])]


for _name in ("argmax", "argmin"):
    define(f"nn.{_name}", operands=1,
           attrs={"axis": attr("int", "the dimension searched"), "keep_dims": attr("bool", "keep it with size 1"),
                  "output_type": attr("str", "index element type: i32 or i64")},
           doc=f"Index of the first {_name[3:]}imum along `axis`.", infer=_infer_arg)

define("nn.softmax", operands=1, attrs={"axis": attr("int", "the dimension normalized"), "beta": attr("float", "input scale")},
       doc="exp(beta*x - max) / sum(exp(beta*x - max)) along `axis`.", infer=_same)
define("nn.log_softmax", operands=1, attrs={"axis": attr("int", "the dimension normalized"), "beta": attr("float", "input scale")},
       doc="beta*x - max - log(sum(exp(beta*x - max))) along `axis`.", infer=_same)
define("nn.layer_norm", operands=(1, 3),
       attrs={"axes": attr("ints", "normalized trailing dimensions"), "epsilon": attr("float", "added to the variance")},
       doc="(x - mean) / sqrt(var + epsilon) * gamma + beta over `axes` (biased variance); gamma and beta "
           "(operands 1 and 2, optional) broadcast against x.", infer=_same)
define("nn.batch_norm", operands=5, attrs={"epsilon": attr("float", "added to the variance"), "axis": attr("int", "the channel dimension")},
       doc="Inference batch normalization: (x - mean) / sqrt(var + epsilon) * gamma + beta with operands "
           "(x, mean, var, gamma, beta), the four statistics 1-D over `axis`.", infer=_same)
define("nn.instance_norm", operands=3, attrs={"epsilon": attr("float", "added to the variance")},
       doc="Per sample and channel of an NHWC tensor: (x - mean_hw) / sqrt(var_hw + epsilon) * gamma + beta "
           "(gamma, beta of shape [C]).", infer=_same)
define("nn.l2_normalize", operands=1, attrs={"axes": attr("ints", "normalized dimensions"), "epsilon": attr("float", "lower bound of the sum of squares")},
       doc="x / sqrt(max(sum(x^2 over axes), epsilon)).", infer=_same)
define("nn.local_response_norm", operands=1,
       attrs={"radius": attr("int", "half window over channels"), "alpha": attr("float", ""), "beta": attr("float", ""),
              "bias": attr("float", "k")},
       doc="x / (bias + alpha * sum(x_c^2 over channels c-radius..c+radius)) ^ beta, channels last.", infer=_same)

# ------------------------------------------------------------------------------ convolution, matmul, pooling


def _window_out(size: int, kernel: int, stride: int, dilation: int, pad_before: int, pad_after: int) -> int:
    return (size + pad_before + pad_after - ((kernel - 1) * dilation + 1)) // stride + 1


def _check_bias(types: list[Type], channels: int) -> None:
    """A convolution's optional bias (operand 2) has one value per output channel, or one for all."""
    if len(types) > 2 and tuple(types[2].shape) not in ((channels,), (1,)):
        raise ValueError(f"bias {list(types[2].shape)} for {channels} output channels")


def _check_in_channels(w: Type, weight_channels: int, channels: int) -> None:
    """Weights whose input-channel dimension is the input's channel count (a transposed or 3-D
    convolution of mismatched channels has no meaning; the reference model refuses it at run time)."""
    if weight_channels != channels:
        raise ValueError(f"weights {list(w.shape)} do not match {channels} input channels")


def _infer_conv2d(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, w = types[0], types[1]
    n, h, wd, c = x.shape
    o, kh, kw, ci = w.shape
    _check_bias(types, o)
    if ci * attrs["groups"] != c or o % attrs["groups"]:
        raise ValueError(f"weights {list(w.shape)} do not fit {c} input channels in {attrs['groups']} groups")
    (sy, sx), (dy, dx), (pt, pb, pl, pr) = attrs["stride"], attrs["dilation"], attrs["pad"]
    return [TensorType((n, _window_out(h, kh, sy, dy, pt, pb), _window_out(wd, kw, sx, dx, pl, pr), o), x.dtype)]


_CONV_ATTRS = {
    "stride": attr("ints", "[y, x]"), "dilation": attr("ints", "[y, x]"),
    "pad": attr("ints", "[top, bottom, left, right]"),
}
define("nn.conv2d", operands=(2, 3), attrs={**_CONV_ATTRS, "groups": attr("int", "channel groups (1: ordinary)")},
       doc="2-D convolution (cross-correlation) of NHWC input with [O, KH, KW, I/groups] weights plus an "
           "optional bias [O].", infer=_infer_conv2d)


def _infer_depthwise(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, w = types[0], types[1]
    n, h, wd, c = x.shape
    kh, kw, wc, m = w.shape
    _check_in_channels(w, wc, c)
    _check_bias(types, c * m)
    (sy, sx), (dy, dx), (pt, pb, pl, pr) = attrs["stride"], attrs["dilation"], attrs["pad"]
    return [TensorType((n, _window_out(h, kh, sy, dy, pt, pb), _window_out(wd, kw, sx, dx, pl, pr), c * m), x.dtype)]


define("nn.depthwise_conv2d", operands=(2, 3), attrs=dict(_CONV_ATTRS),
       doc="Depthwise 2-D convolution: NHWC input, [KH, KW, C, M] weights, output channel c*M+m, optional "
           "bias [C*M].", infer=_infer_depthwise)


def _infer_conv3d(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, w = types[0], types[1]
    n, d, h, wd, c = x.shape
    o, kd, kh, kw, wc = w.shape
    _check_in_channels(w, wc, c)
    _check_bias(types, o)
    (sz, sy, sx), (dz, dy, dx) = attrs["stride"], attrs["dilation"]
    pf, pk, pt, pb, pl, pr = attrs["pad"]
    return [TensorType((n, _window_out(d, kd, sz, dz, pf, pk), _window_out(h, kh, sy, dy, pt, pb),
                        _window_out(wd, kw, sx, dx, pl, pr), o), x.dtype)]


define("nn.conv3d", operands=(2, 3),
       attrs={"stride": attr("ints", "[z, y, x]"), "dilation": attr("ints", "[z, y, x]"),
              "pad": attr("ints", "[front, back, top, bottom, left, right]")},
       doc="3-D convolution of NDHWC input with [O, KD, KH, KW, I] weights plus an optional bias [O].",
       infer=_infer_conv3d)


def _infer_transpose_conv(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, w = types[0], types[1]
    n, h, wd, c = x.shape
    o, kh, kw, wc = w.shape
    _check_in_channels(w, wc, c)
    _check_bias(types, o)
    (sy, sx), (pt, pb, pl, pr) = attrs["stride"], attrs["out_pad"]
    return [TensorType((n, (h - 1) * sy + pt + pb + kh, (wd - 1) * sx + pl + pr + kw, o), x.dtype)]


define("nn.transpose_conv2d", operands=(2, 3),
       attrs={"stride": attr("ints", "[y, x]"),
              "out_pad": attr("ints", "[top, bottom, left, right] added to (negative: cropped from) the full output")},
       doc="Transposed 2-D convolution, TOSA semantics: each input pixel scatters weights [O, KH, KW, I] into "
           "an output of size (in-1)*stride + kernel, then out_pad grows/crops its edges; optional bias [O].",
       infer=_infer_transpose_conv)


def _infer_fc(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, w = types[0], types[1]
    if x.shape[-1] != w.shape[1]:
        raise ValueError(f"input depth {x.shape[-1]} differs from weights {list(w.shape)}")
    return [TensorType(tuple(x.shape[:-1]) + (w.shape[0],), x.dtype)]


define("nn.fully_connected", operands=(2, 3),
       doc="x @ W^T (+ bias): input [..., K], weights [O, K], optional bias [O].", infer=_infer_fc)


def _infer_matmul(attrs: Attrs, types: list[Type]) -> list[Type]:
    a, b = types
    if a.rank < 2 or b.rank < 2 or a.shape[-1] != b.shape[-2]:
        raise ValueError(f"cannot multiply {list(a.shape)} by {list(b.shape)}")
    batch = broadcast_shape(a.shape[:-2], b.shape[:-2])
    return [TensorType(batch + (a.shape[-2], b.shape[-1]), a.dtype)]


define("nn.matmul", operands=2, doc="Batched a @ b, rank >= 2, batch dimensions broadcast.", infer=_infer_matmul,
       fold=lambda a, v, t: None if t[0].quant else [np.matmul(v[0], v[1]).astype(t[0].numpy_dtype)])


def _infer_pool(attrs: Attrs, types: list[Type]) -> list[Type]:
    x = types[0]
    n, h, w, c = x.shape
    (kh, kw), (sy, sx), (pt, pb, pl, pr) = attrs["kernel"], attrs["stride"], attrs["pad"]
    dy, dx = attrs.get("dilation", [1, 1])
    return [TensorType((n, _window_out(h, kh, sy, dy, pt, pb), _window_out(w, kw, sx, dx, pl, pr), c), x.dtype)]


_POOL_ATTRS = {"kernel": attr("ints", "[y, x]"), "stride": attr("ints", "[y, x]"),
               "pad": attr("ints", "[top, bottom, left, right]")}
define("nn.max_pool2d", operands=1, attrs={**_POOL_ATTRS, "dilation": attr("ints", "[y, x]")},
       doc="Max over windows of NHWC input; padding never wins (acts as -inf: a window over padding only "
           "gives -inf, or the minimum of an integer type).", infer=_infer_pool)
define("nn.avg_pool2d", operands=1,
       attrs={**_POOL_ATTRS,
              "count_pad": attr("ints", "[top, bottom, left, right]: the part of `pad` counted in the divisor "
                                        "as zeros (the rest is excluded)"),
              "divisor": attr("int", "if > 0, divide every window sum by this instead")},
       doc="Mean over windows of NHWC input: sum of the real elements / number of elements in the window that "
           "lie in the input or in the counted padding (`divisor` overrides; a window with none gives 0/0 = NaN).",
       infer=_infer_pool)
define("nn.l2_pool2d", operands=1, attrs=dict(_POOL_ATTRS),
       doc="sqrt(mean of x^2 over windows), padding excluded from the count.", infer=_infer_pool)


def _infer_pool3d(attrs: Attrs, types: list[Type]) -> list[Type]:
    x = types[0]
    n, d, h, w, c = x.shape
    (kd, kh, kw), (sz, sy, sx) = attrs["kernel"], attrs["stride"]
    pf, pk, pt, pb, pl, pr = attrs["pad"]
    return [TensorType((n, _window_out(d, kd, sz, 1, pf, pk), _window_out(h, kh, sy, 1, pt, pb),
                        _window_out(w, kw, sx, 1, pl, pr), c), x.dtype)]


_POOL3D_ATTRS = {"kernel": attr("ints", "[z, y, x]"), "stride": attr("ints", "[z, y, x]"),
                 "pad": attr("ints", "[front, back, top, bottom, left, right]")}
define("nn.max_pool3d", operands=1, attrs=dict(_POOL3D_ATTRS), doc="Max over windows of NDHWC input (see max_pool2d).",
       infer=_infer_pool3d)
define("nn.avg_pool3d", operands=1,
       attrs={**_POOL3D_ATTRS, "count_pad": attr("ints", "the part of `pad` counted as zeros"),
              "divisor": attr("int", "if > 0, the divisor")},
       doc="Mean over windows of NDHWC input (see avg_pool2d).", infer=_infer_pool3d)
define("nn.l2_pool3d", operands=1, attrs=dict(_POOL3D_ATTRS),
       doc="sqrt(mean of x^2 over windows) of NDHWC input, padding excluded.", infer=_infer_pool3d)


def _infer_resize(attrs: Attrs, types: list[Type]) -> list[Type]:
    n, _, _, c = types[0].shape
    h, w = attrs["size"]
    return [TensorType((n, h, w, c), types[0].dtype)]


define("nn.resize", operands=1,
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

# ------------------------------------------------------------------------------ quantization
define("nn.quantize", operands=1, doc="Float to the quantized result type: clamp(round_half_away_from_zero(x / scale) + zp), as Arm NN quantizes.",
       infer=None, verify=_same_shape)
define("nn.dequantize", operands=1, doc="Quantized to float: (q - zp) * scale.", infer=None, verify=_same_shape)
define("nn.requantize", operands=1, doc="Quantized to another quantization: quantize(dequantize(q)).", infer=None,
       verify=_same_shape)


# ------------------------------------------------------------------------------ integer recurrent cells
def _infer_lstm_integer(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, h, c = types[:3]
    return [TensorType(h.shape, h.dtype), TensorType(c.shape, c.dtype)]


define("nn.lstm_integer", operands=(3, None), results=2,
       attrs={"params": attr("strs", "what each operand after (x, h, c) is, by Arm NN's LSTM parameter names "
                                     "(inputToForgetWeights, forgetGateBias, ...): constants"),
              "cell_clip": attr("float", "> 0: the new cell state limited to +-cell_clip (real units)"),
              "proj_clip": attr("float", "> 0: the projected output limited to +-proj_clip (real units)"),
              "hidden": attr("floats", "[scale, zero point] of the hidden state o * tanh(c) (TFLite's fifth "
                                       "intermediate; the output's quantization without projection)"),
              "gate_scales": attr("floats", "the input, forget, cell and output gates' intermediate scales "
                                            "(TFLite's first four intermediates; 2**-12 without layer norm)")},
       doc="One time step of TFLite's integer LSTM cell (lstm_eval.cc, 8x8_16: int8 x and h, int16 cell state of "
           "a power-of-two scale, int32 biases, int8 weights, int16 peephole and layer norm weights; CIFG, peephole, "
           "layer norm and projection when their parameters are present). Each gate MBQM(x W^T + b - zp_x rowsum "
           "W) + MBQM(h W^T - zp_h rowsum W) (+ MBQM(w_c c)), saturated to int16 at its intermediate scale (b "
           "after the layer norm when there is one), gemmlowp's int16 logistic / tanh; c' = f c >> 15 + i g >> (30 "
           "+ log2 scale_c) (i = 1 - f with CIFG), clipped; h' = MBQM(o tanh(c')) + the hidden zero point, or its "
           "projection (+ zp_h rowsum W_p, the output's zero point, clipped). Results: (h', c').",
       infer=_infer_lstm_integer)


def _infer_quantized_lstm(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, c, h = types[:3]
    return [TensorType(c.shape, c.dtype), TensorType(h.shape, h.dtype)]


define("nn.quantized_lstm", operands=15, results=2,
       attrs={"params": attr("strs", "what each operand after (x, c, h) is, by Arm NN's parameter names: 8 uint8 "
                                     "weights, 4 int32 biases, constants")},
       doc="One step of Android NN's QUANTIZED_16BIT_LSTM (TFLite's quantized LstmCell with 4 state integer bits): "
           "x and h uint8 at 1/128 (zero point 128), the cell state int16 Q4.11. Each gate MBQM(b + sum (x|h - 128) "
           "(w - zp_w)) by the multiplier of 4096 s_b, saturated to Q3.12; gemmlowp's int16 logistic (input, forget, "
           "output) and tanh (cell); c' = sat(Rescale<4>(i * g) + f * c); h' = 128 + clamp(RoundingDivideByPOT(o * "
           "tanh(Rescale<3>(c')), 8)), the products gemmlowp's 16-bit SRDHM. Results: (c', h').",
       infer=_infer_quantized_lstm)
