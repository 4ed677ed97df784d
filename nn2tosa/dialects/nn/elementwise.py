"""The constant and the elementwise nn ops: one definition each (inference, folder, verifier, doc)."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from nn2tosa.ir import Graph, TensorType, attr
from nn2tosa.ir.verify import constant_verifier

from .common import Attrs, define_nn, broadcast_shape, same, broadcast, same_dtypes, fold_with, same_shape

# ------------------------------------------------------------------------------ constants
define_nn(
    "nn.constant",
    operands=0,
    attrs={"value": attr("tensor", "the tensor, in the storage type of the result")},
    doc="A constant tensor. Quantized constants hold their stored integers; the result type carries the scale.",
    verify=constant_verifier("value"),
    traits={"constant", "carries_quantization"},
)

# ------------------------------------------------------------------------------ elementwise
# name -> (numpy function, doc); operands share a dtype, numpy broadcasting.
Table = dict[str, tuple[Callable[..., Any], str]]
_FLOAT_INT_BINARY: Table = {
    "add": (np.add, "x + y."),
    "sub": (np.subtract, "x - y."),
    "mul": (np.multiply, "x * y."),
    "maximum": (np.maximum, "max(x, y); NaN if either is NaN."),
    "minimum": (np.minimum, "min(x, y); NaN if either is NaN."),
    "squared_difference": (lambda x, y: (x - y) * (x - y), "(x - y)^2."),
    "pow": (np.power, "x ** y."),
}
_DIVISIONS: Table = {
    "div": (lambda x, y: x / y if x.dtype.kind == "f" else np.trunc(x / y), "x / y; integer operands truncate toward zero."),
    "floor_div": (np.floor_divide, "floor(x / y)."),
    "mod": (np.mod, "x - floor(x / y) * y (the sign of y, Python's %)."),
    "fmod": (np.fmod, "x - trunc(x / y) * y (the sign of x, C's fmod)."),
}
_INT_BINARY: Table = {
    "bitwise_and": (np.bitwise_and, "x & y (integers and booleans)."),
    "bitwise_or": (np.bitwise_or, "x | y."),
    "bitwise_xor": (np.bitwise_xor, "x ^ y."),
    "shift_left": (np.left_shift, "x << y."),
    "shift_right": (np.right_shift, "x >> y, arithmetic for signed types."),
}
# quantized, these are computed in f32 between dequantize and quantize, as CpuRef computes them
_IN_FLOAT_WHEN_QUANTIZED = ("pow", "floor_div", "mod", "fmod")
for _table in (_FLOAT_INT_BINARY, _DIVISIONS, _INT_BINARY):
    for _name, (_fn, _doc) in _table.items():
        define_nn(f"nn.{_name}", operands=2, doc=_doc, infer=broadcast(), fold=fold_with(_fn), verify=same_dtypes,
                  traits={"elementwise", *(["float_when_quantized"] if _name in _IN_FLOAT_WHEN_QUANTIZED else [])})

_COMPARISONS: Table = {
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


def _booleans(graph: Graph, node: int) -> list[str]:
    """Logical ops take booleans (sources with truthy numbers compare them with 0 first): a damaged
    file's logical op on other types is refused at its layer."""
    dtypes = sorted({graph.tensor_type(v).dtype for v in graph.operands(node)} - {"i1"})
    return [f"a logical operation on {', '.join(dtypes)} (it takes booleans)"] if dtypes else []


for _name, (_fn, _doc) in _COMPARISONS.items():
    define_nn(f"nn.{_name}", operands=2, doc=_doc, infer=broadcast(dtype="i1"), fold=fold_with(_fn),
              verify=_booleans if _name.startswith("logical_") else same_dtypes, traits={"elementwise"})


def _np_round_half_even(x: np.ndarray) -> np.ndarray:
    return np.round(x)


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x)


# Traits of the quantized lowering (nn2tosa/ir/registry.py NAMED_TRAITS): TAB a function of one quantized tensor
# computed exactly per integer; requantizations also RESCALE + CLAMP for i8 and RESCALE for LiteRT's int16.
TAB = frozenset({"tabulated"})
REQUANTIZING = TAB | {"rescale_clamp", "litert_int16_rescale"}
_UNARY: dict[str, tuple[Callable[..., Any], str, frozenset[str]]] = {  # name -> (numpy function, doc, traits)
    "neg": (np.negative, "-x.", TAB),
    "abs": (np.abs, "|x|.", REQUANTIZING),
    "sqrt": (np.sqrt, "sqrt(x).", TAB),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "1 / sqrt(x).", TAB),
    "reciprocal": (lambda x: 1 / x, "1 / x.", TAB),
    "square": (np.square, "x * x.", TAB),
    "exp": (np.exp, "e^x.", TAB),
    "exp2": (np.exp2, "2^x.", TAB),
    "log": (np.log, "natural logarithm.", TAB),
    "log2": (np.log2, "base-2 logarithm.", TAB),
    "log10": (np.log10, "base-10 logarithm.", TAB),
    "sin": (np.sin, "sine.", TAB), "cos": (np.cos, "cosine.", TAB), "tan": (np.tan, "tangent.", TAB),
    "asin": (np.arcsin, "arcsine.", TAB), "acos": (np.arccos, "arccosine.", TAB), "atan": (np.arctan, "arctangent.", TAB),
    "sinh": (np.sinh, "hyperbolic sine.", TAB), "cosh": (np.cosh, "hyperbolic cosine.", TAB),
    "asinh": (np.arcsinh, "inverse hyperbolic sine.", TAB), "acosh": (np.arccosh, "inverse hyperbolic cosine.", TAB),
    "atanh": (np.arctanh, "inverse hyperbolic tangent.", TAB),
    "floor": (np.floor, "round toward -inf.", TAB),
    "ceil": (np.ceil, "round toward +inf.", TAB),
    "round": (_np_round_half_even, "round half to even.", TAB),
    "sign": (np.sign, "-1, 0 or 1 (0 for 0, NaN for NaN).", TAB),
    "erf": (_erf, "the error function.", TAB),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), "1 / (1 + e^-x).", TAB),
    "tanh": (np.tanh, "hyperbolic tangent.", TAB),
    "relu": (lambda x: np.maximum(x, 0), "max(x, 0).", REQUANTIZING),
    "hard_swish": (lambda x: x * np.clip(x + 3, 0, 6) / 6, "x * relu6(x + 3) / 6.", TAB),
    "softplus": (lambda x: np.log1p(np.exp(x)), "log(1 + e^x).", TAB),
    "bitwise_not": (np.invert, "~x on integers.", frozenset()),
    "logical_not": (np.logical_not, "not x on booleans.", frozenset()),
    "identity": (lambda x: x, "x (removed by canonicalization).", REQUANTIZING | {"carries_quantization"}),
}
for _name, (_fn, _doc, _traits) in _UNARY.items():
    define_nn(f"nn.{_name}", operands=1, doc=_doc, infer=same, fold=fold_with(_fn), traits={"elementwise", *_traits},
              verify=_booleans if _name == "logical_not" else None)

for _name, _fn in {"isnan": np.isnan, "isinf": np.isinf}.items():
    define_nn(f"nn.{_name}", operands=1, doc=f"{_name}(x), boolean result.",
              infer=lambda a, t: [TensorType(t[0].shape, "i1")], fold=fold_with(_fn), traits={"elementwise"})

def _bounds_are_numbers(graph: Graph, node: int) -> list[str]:
    """A NaN bound means nothing (a damaged file's clamp): refused at the layer or node that has it."""
    attrs = graph.attrs(node)
    return [f"clamp bound {k} is NaN" for k in ("min", "max") if math.isnan(float(attrs[k]))]


define_nn("nn.clamp", operands=1, attrs={"min": attr("float", "lower bound"), "max": attr("float", "upper bound")},
          doc="min(max(x, min), max), so max everywhere when min > max (numpy.clip, torch.clamp). Bounds are real "
              "values (quantized ops compare dequantized values); NaN is not a bound.",
          infer=same, verify=_bounds_are_numbers, fold=fold_with(lambda x, min, max: np.clip(x, min, max)),
          traits={"elementwise", *REQUANTIZING})
define_nn("nn.leaky_relu", operands=1, attrs={"alpha": attr("float", "slope for x < 0")},
          doc="x if x >= 0 else alpha * x.", infer=same,
          fold=fold_with(lambda x, alpha: np.where(x >= 0, x, alpha * x)),
          traits={"elementwise", *TAB, "litert_int16_rescale"})
define_nn("nn.elu", operands=1, attrs={"alpha": attr("float", "scale of the negative part")},
          doc="x if x > 0 else alpha * (e^x - 1).", infer=same,
          fold=fold_with(lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x))), traits={"elementwise", *TAB})
define_nn("nn.gelu", operands=1, attrs={"approximate": attr("str", "'none' (erf form) or 'tanh'")},
          doc="x * Phi(x); approximate='tanh': 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).", infer=same,
          traits={"elementwise", *TAB})
define_nn("nn.prelu", operands=2, doc="x if x >= 0 else alpha * x, alpha broadcast against x (operand 1).",
          infer=broadcast(), fold=fold_with(lambda x, a: np.where(x >= 0, x, a * x)), traits={"elementwise"})


def _infer_select(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    return [TensorType(broadcast_shape(*[t.shape for t in types]), types[1].dtype)]


define_nn("nn.select", operands=3, doc="cond ? x : y (operand 0 boolean), numpy broadcasting.",
          infer=_infer_select, fold=fold_with(np.where),
          verify=lambda g, n: same_dtypes(g, n, first=1), traits={"elementwise"})




def _fold_cast(attrs: Attrs, values: list[np.ndarray], types: list[TensorType]) -> list[np.ndarray] | None:
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


define_nn("nn.cast", operands=1,
          doc="Convert to the result's element type: float->int rounds half to even and saturates; "
              "to boolean is x != 0. Quantized types are not cast (see quantize/dequantize).",
          infer=None, fold=_fold_cast, verify=same_shape, traits={"elementwise"})
