"""nn reductions, arg max/min, softmax and the normalizations."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn2tosa.ir import Graph, TensorType, attr

from .common import Attrs, define_nn, same, axes_ok

# ------------------------------------------------------------------------------ reductions and normalization


def _infer_reduce(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    axes, keep = attrs["axes"], attrs["keep_dims"]
    shape = types[0].shape
    if not axes_ok(axes, len(shape)):
        raise ValueError(f"bad reduction axes {axes} for rank {len(shape)}")
    out = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in axes)
    return [TensorType(out, types[0].dtype)]


_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
    "reduce_prod": np.prod, "reduce_any": np.any, "reduce_all": np.all,
}
for _name, _fn in _REDUCTIONS.items():
    define_nn(f"nn.{_name}", operands=("x",),
              attrs={"axes": attr("ints", "dimensions reduced"), "keep_dims": attr("bool", "keep them with size 1")},
              doc=f"{_name[7:]} over `axes`.", infer=_infer_reduce,
              fold=(lambda fn: lambda a, v, t: None if t[0].quant else
                    [np.asarray(fn(v[0], axis=tuple(a["axes"]), keepdims=a["keep_dims"])).astype(t[0].numpy_dtype)])(_fn))


def _infer_arg(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    shape = list(types[0].shape)
    if attrs["keep_dims"]:
        shape[attrs["axis"]] = 1
    else:
        del shape[attrs["axis"]]
    return [TensorType(tuple(shape), attrs["output_type"])]


for _name in ("argmax", "argmin"):
    define_nn(f"nn.{_name}", operands=("x",),
              attrs={"axis": attr("int", "the dimension searched"), "keep_dims": attr("bool", "keep it with size 1"),
                     "output_type": attr("str", "index element type: i32 or i64")},
              doc=f"Index of the first {_name[3:]}imum along `axis`.", infer=_infer_arg)

define_nn("nn.softmax", operands=("x",), attrs={"axis": attr("int", "the dimension normalized"), "beta": attr("float", "input scale")},
          doc="exp(beta*x - max) / sum(exp(beta*x - max)) along `axis`.", infer=same)
define_nn("nn.log_softmax", operands=("x",), attrs={"axis": attr("int", "the dimension normalized"), "beta": attr("float", "input scale")},
          doc="beta*x - max - log(sum(exp(beta*x - max))) along `axis`.", infer=same, traits={"float_when_quantized"})
define_nn("nn.layer_norm", operands=("x", "gamma?", "beta?"),
          attrs={"axes": attr("ints", "normalized trailing dimensions"), "epsilon": attr("float", "added to the variance")},
          doc="(x - mean) / sqrt(var + epsilon) * gamma + beta over `axes` (biased variance); gamma and beta "
              "(operands 1 and 2, optional) broadcast against x.", infer=same, traits={"float_when_quantized"})

_BATCH_NORM_STATISTICS = ("mean", "variance", "gamma", "beta")


def _statistics_per_channel(graph: Graph, node: int) -> list[str]:
    """The four statistics are 1-D with one value per channel: the lowering reshapes them along `axis`
    (an input that is not, e.g. a fuzzed MPS file naming the wrong tensor, is refused here, by name)."""
    x = graph.tensor_type(graph.operand(node, 0))
    axis = int(graph.attrs(node)["axis"])
    if not -x.rank <= axis < x.rank:
        return [f"axis {axis} is outside the input's rank {x.rank}"]
    channels = x.shape[axis]
    problems = []
    for slot, what in enumerate(_BATCH_NORM_STATISTICS, start=1):
        shape = graph.tensor_type(graph.operand(node, slot)).shape
        if tuple(shape) != (channels,):
            problems.append(f"the {what} (operand {slot}) must have shape [{channels}] (the input's channels along "
                            f"axis {axis}), not {list(shape)}")
    return problems


define_nn("nn.batch_norm", operands=("x", "mean", "var", "gamma", "beta"), attrs={"epsilon": attr("float", "added to the variance"), "axis": attr("int", "the channel dimension")},
          doc="Inference batch normalization: (x - mean) / sqrt(var + epsilon) * gamma + beta with operands "
              "(x, mean, var, gamma, beta), the four statistics 1-D over `axis`.", infer=same,
          verify=_statistics_per_channel)
define_nn("nn.instance_norm", operands=("x", "gamma", "beta"), attrs={"epsilon": attr("float", "added to the variance")},
          doc="Per sample and channel of an NHWC tensor: (x - mean_hw) / sqrt(var_hw + epsilon) * gamma + beta "
              "(gamma, beta of shape [C]).", infer=same, traits={"float_when_quantized"})
define_nn("nn.l2_normalize", operands=("x",), attrs={"axes": attr("ints", "normalized dimensions"), "epsilon": attr("float", "lower bound of the sum of squares")},
          doc="x / sqrt(max(sum(x^2 over axes), epsilon)).", infer=same)
define_nn("nn.local_response_norm", operands=("x",),
          attrs={"radius": attr("int", "half window over channels"), "alpha": attr("float", ""), "beta": attr("float", ""),
                 "bias": attr("float", "k")},
          doc="x / (bias + alpha * sum(x_c^2 over channels c-radius..c+radius)) ^ beta, channels last.", infer=same,
          verify=lambda graph, node: [] if graph.tensor_type(graph.operand(node, 0)).rank else
          ["a local response normalization of a scalar (it normalizes across the last, channel, axis)"],
          traits={"float_when_quantized"})
