"""The numpy reference evaluator of `nn` graphs (nn2tosa/comparison/nn_numpy.py), with the integer LSTM
cells the tests model in tests/lstm_kernels.py registered too."""
# ruff: noqa: F401
from __future__ import annotations

import numpy as np

from nn2tosa.comparison.nn_numpy import (EVALUATORS, INTEGER_EVALUATORS, Evaluator, evaluate, op, supported_ops,
                                      to_real, to_storage)
from nn2tosa.ir import TensorType


# ------------------------------------------------------------------------------ integer LSTM cells
def _stored(real: np.ndarray, t: TensorType) -> np.ndarray:
    """The stored integers of a quantized operand's real values (exact: they are multiples of the scale)."""
    q = t.quant
    return np.round(real / q.scales[0] + q.zero_points[0]).astype(np.int64)


def _real(stored: np.ndarray, t: TensorType) -> np.ndarray:
    return (np.asarray(stored, np.float64) - t.quant.zero_points[0]) * t.quant.scales[0]


def _by_name(attrs, xs, operand_types) -> tuple[dict, dict]:
    names = attrs["params"]
    params = {n: _stored(v, t) for n, v, t in zip(names, xs[3:], operand_types[3:])}
    quant = {n: (t.quant.scales[0], t.quant.zero_points[0]) for n, t in zip(names, operand_types[3:])}
    return params, quant


@op("nn.lstm_integer")
def _lstm_integer(attrs, xs, types, operand_types):
    from lstm_kernels import tflite_lstm_step

    x, h, c = (_stored(v, t) for v, t in zip(xs[:3], operand_types[:3]))
    params, q = _by_name(attrs, xs, operand_types)
    q.update({k: (t.quant.scales[0], t.quant.zero_points[0]) for k, t in zip("xhc", operand_types[:3])})
    scale, zp = attrs["hidden"]
    h_new, c_new = tflite_lstm_step(x, h, c, params, q, attrs["cell_clip"], (scale, int(zp)), attrs["proj_clip"],
                                    attrs["gate_scales"])
    return [_real(h_new, types[0]), _real(c_new, types[1])]


@op("nn.quantized_lstm")
def _quantized_lstm(attrs, xs, types, operand_types):
    from lstm_kernels import android_quantized_lstm_step

    x, c, h = (_stored(v, t) for v, t in zip(xs[:3], operand_types[:3]))
    params, q = _by_name(attrs, xs, operand_types)
    c_new, h_new = android_quantized_lstm_step(x, c, h, params, q["inputToInputWeights"][1], q["inputGateBias"][0])
    return [_real(c_new, types[0]), _real(h_new, types[1])]


INTEGER_EVALUATORS.update({"nn.lstm_integer", "nn.quantized_lstm"})
