"""Models of the integer LSTM kernels, element by element on Python integers, for tests; written from
the kernels' arithmetic independently of the lowering (lowering/rules/recurrent.py,
lowering/fixed_point/tflite.py):

- gemmlowp's 16-bit fixed point (fixedpoint.h: FixedPoint<int16_t, k>): logistic and tanh;
- TFLite's integer LSTM cell (lstm_eval.cc LstmStepInteger8x8_16, portable_tensor_utils.cc, the
  effective scales and biases of lstm.cc's Prepare): `tflite_lstm_step`;
- Android NN's QUANTIZED_16BIT_LSTM, which is TFLite's quantized LstmCell<4> (reference_ops.h):
  `android_quantized_lstm_step`.

Checked against LiteRT 2.3 (BUILTIN_REF) on the models tests/data/lstm describes.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tflite_kernels import inv_sqrt_multiplier, mbqm, quantize_multiplier, rdbpot, srdhm, wrap32

I16_MIN, I16_MAX = -32768, 32767


def wrap16(v: int) -> int:
    return (v + 32768) % 65536 - 32768


def sat16(v: int) -> int:
    return max(I16_MIN, min(I16_MAX, v))


def c16(raw32: int) -> int:
    """A gemmlowp constant given as a Q0.31-style int32 raw, for an int16 raw type."""
    return rdbpot(raw32, 16)


def mul16(a: int, b: int) -> int:
    return srdhm(a, b, 15)


def sat_pot16(x: int, e: int) -> int:
    """SaturatingRoundingMultiplyByPOT<e> of an int16 raw."""
    return sat16(x << e) if e > 0 else rdbpot(x, -e)


def _exp_interval(a: int) -> int:
    """exp_on_interval_between_negative_one_quarter_and_0_excl, Q0.15."""
    x = wrap16(a + (1 << 12))
    x2 = mul16(x, x)
    x3 = mul16(x2, x)
    x4 = mul16(x2, x2)
    inner = wrap16(mul16(wrap16(rdbpot(x4, 2) + x3), c16(715827883)) + x2)
    return sat16(c16(1895147668) + mul16(c16(1895147668), wrap16(x + rdbpot(inner, 1))))


def exp_neg16(a: int, k: int) -> int:
    """exp_on_negative_values of a Q(k).(15-k) raw <= 0, Q0.15."""
    frac = 15 - k
    quarter = 1 << (frac - 2)
    a_mod = wrap16((a & (quarter - 1)) - quarter)
    result = _exp_interval(sat_pot16(a_mod, k))
    remainder = wrap16(a_mod - a)
    for exponent, multiplier in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                                 (2, 39332535), (3, 720401), (4, 242)):
        if k > exponent and remainder & (1 << (frac + exponent)):
            result = mul16(result, c16(multiplier))
    if k > 5 and a < c16(-(1 << (36 - k))):
        result = 0
    return I16_MAX if a == 0 else result


def _newton_raphson(a: int) -> int:
    """x ~ 1 / ((1 + a) / 2) in Q2.13 for a Q0.15 a in [0, 1]."""
    s = a + I16_MAX
    half = wrap16(int((s + (1 if s >= 0 else -1)) / 2))
    x = wrap16(c16(1515870810) + mul16(half, c16(-1010580540)))
    for _ in range(3):
        x = wrap16(x + sat_pot16(mul16(x, wrap16((1 << 13) - mul16(half, x))), 2))
    return x


@functools.lru_cache(maxsize=None)
def logistic16(a: int, k: int) -> int:
    """gemmlowp::logistic of a FixedPoint<int16, k> raw, Q0.15."""
    if a == 0:
        return c16(1 << 30)
    magnitude = a if a > 0 else wrap16(-a)
    positive = sat_pot16(_newton_raphson(exp_neg16(wrap16(-magnitude), k)), 1)
    return positive if a > 0 else wrap16(I16_MAX - positive)


@functools.lru_cache(maxsize=None)
def tanh16(a: int, k: int) -> int:
    """gemmlowp::tanh of a FixedPoint<int16, k> raw, Q0.15."""
    if a == 0:
        return 0
    n = a if a < 0 else wrap16(-a)
    t = sat_pot16(wrap16(_newton_raphson(exp_neg16(n, k + 1)) - (1 << 13)), 2)
    return wrap16(-t) if a < 0 else t


def _mbqm(x: int, real: float) -> int:
    q, shift = quantize_multiplier(real)
    x = x * (1 << max(shift, 0))
    return rdbpot(srdhm(x, q), max(-shift, 0))


def _mbqm_ruy(x: int, real: float) -> int:
    """MultiplyByQuantizedMultiplier as ruy applies it (its int8 GEMM output stage): the rounding
    doubling high multiply, then a right shift rounding halves up."""
    q, shift = quantize_multiplier(real)
    high = srdhm(x * (1 << max(shift, 0)), q)
    return (high + (1 << (-shift - 1))) >> -shift if shift < 0 else high


# ------------------------------------------------------------------------------ TFLite's integer LSTM
def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def layer_norm(row: list[int], weights: np.ndarray, bias: np.ndarray, scale: float, guard: int) -> list[int]:
    """PortableApplyLayerNorm of one gate row (int16 values): int64 mean and variance, the inverse
    standard deviation as GetInvSqrtQuantizedMultiplierExp gives it, coefficients, bias, rescale."""
    n = len(row)
    total, squares = sum(row), sum(v * v for v in row)
    mean = _trunc_div(total * 1024, n)
    variance = _trunc_div(squares * ((1 << 20) // n) - mean * mean, 1 << 20)
    if variance < 1:
        variance = guard
    multiplier, shift = inv_sqrt_multiplier(variance)
    multiplier = wrap32(multiplier)  # the kernel's `<<=` of a negative exponent wraps
    q, e = quantize_multiplier(scale)
    out = []
    for v, w, b in zip(row, weights, bias):
        rescaled = mbqm(1024 * v - mean, multiplier, shift)
        val3 = wrap32(rescaled * int(w)) + int(b)
        val4 = _trunc_div(val3 + 512 if val3 > 0 else val3 - 512, 1024)
        out.append(sat16(mbqm(val4, q, e + 12)))
    return out


def tflite_lstm_step(x: np.ndarray, h: np.ndarray, c: np.ndarray, params: dict, q: dict, cell_clip: float = 0.0,
                     hidden: tuple[float, int] | None = None, proj_clip: float = 0.0,
                     gate_scales: tuple[float, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One step of LstmStepInteger8x8_16. x [batch, n_in] int8, h [batch, n_out] int8, c [batch, n_cell]
    int16 stored integers; params: Arm NN names -> stored integer arrays (CIFG, peephole, layer norm and
    projection follow from which are present); q: names and 'x', 'h', 'c' -> (scale, zero point);
    hidden: the hidden state's (scale, zero point), the output state's by default; gate_scales: the
    input, forget, cell and output intermediate scales (used with layer norm). Returns (h', c')."""
    f32 = np.float32
    (sx, zx), (sh, zh), (sc, _) = q["x"], q["h"], q["c"]
    cell_exp = round(math.log2(sc))
    s_hidden, z_hidden = hidden if hidden is not None else q["h"]
    cifg = "inputToInputWeights" not in params
    peephole = "cellToForgetWeights" in params
    norm = "forgetLayerNormWeights" in params
    projection = "projectionWeights" in params
    inter = dict(zip(("Input", "Forget", "Cell", "Output"), gate_scales or (2 ** -12,) * 4))
    batch, cells = c.shape
    bias_names = {"Input": "inputGateBias", "Forget": "forgetGateBias", "Cell": "cellBias", "Output": "outputGateBias"}

    n_out = h.shape[1]

    def peephole_rows(name: str, cell: np.ndarray, s_gate) -> np.ndarray:
        """VectorBatchVectorCwiseProductAccumulate as the kernel calls it: with v_size n_output (not
        n_cell), walking the flat [batch * n_cell] buffers: element t of the first batch * n_output
        gets MBQM(w[t mod n_output] * c[t]), the rest nothing (none of it differs without projection)."""
        wc = params[f"cellTo{name}Weights"]
        mc = float(f32(2.0 ** cell_exp * float(f32(q[f"cellTo{name}Weights"][0])) / float(s_gate)))
        flat, add = cell.reshape(-1), np.zeros(cell.size, np.int64)
        for t in range(batch * n_out):
            add[t] = _mbqm(int(wc[t % n_out]) * int(flat[t]), mc)
        return add.reshape(cell.shape)

    def gate(name: str, b: int, peep_cell: np.ndarray | None, activation) -> list[int]:
        s_gate = f32(inter[name]) if norm else f32(2 ** -12)
        wx, wh = params[f"inputTo{name}Weights"], params[f"recurrentTo{name}Weights"]
        mx = float(f32(q[f"inputTo{name}Weights"][0]) * f32(sx) / s_gate)
        mh = float(f32(q[f"recurrentTo{name}Weights"][0]) * f32(sh) / s_gate)
        row = []
        for j in range(cells):
            acc_x = (0 if norm else int(params[bias_names[name]][j]))
            acc_x += sum(int(wx[j, k]) * (int(x[b, k]) - zx) for k in range(wx.shape[1]))
            acc_h = sum(int(wh[j, k]) * (int(h[b, k]) - zh) for k in range(wh.shape[1]))
            v = sat16(_mbqm(acc_h, mh) + sat16(_mbqm(acc_x, mx)))
            if peep_cell is not None:
                v = sat16(int(peephole_rows(name, peep_cell, s_gate)[b, j]) + v)
            row.append(v)
        if norm:
            ln = f"{name[0].lower()}{name[1:]}LayerNormWeights"
            guard = max(1, int(f32(10000) * f32(q[ln][0])))
            row = layer_norm(row, params[ln], params[bias_names[name]], float(f32(q[ln][0])), guard)
        return [activation(v, 3) for v in row]

    h_new = np.zeros((batch, params["projectionWeights"].shape[0] if projection else cells), np.int64)
    c_new = np.zeros(c.shape, np.int64)
    clip = int(min(max(f32(cell_clip) / f32(sc), -32768.0), 32767.0)) if cell_clip > 0 else 0
    hidden_real = float(f32(2.0 ** -15 / float(f32(s_hidden)) * 2.0 ** -15))
    gates = {}
    for b in range(batch):  # the gates reading the old cell state (all batches), then the update
        gates[b] = {"Forget": gate("Forget", b, c if peephole else None, logistic16),
                    "Cell": gate("Cell", b, None, tanh16)}
        gates[b]["Input"] = [I16_MAX - v for v in gates[b]["Forget"]] if cifg else \
            gate("Input", b, c if peephole else None, logistic16)
        for j in range(cells):
            v = sat16(rdbpot(gates[b]["Forget"][j] * int(c[b, j]), 15) +
                      rdbpot(gates[b]["Input"][j] * gates[b]["Cell"][j], 30 + cell_exp))
            c_new[b, j] = max(-clip, min(clip, v)) if clip else v
    for b in range(batch):
        new = [int(v) for v in c_new[b]]
        o = gate("Output", b, c_new if peephole else None, logistic16)
        # LiteRT adds the hidden zero point, or subtracts it when the hidden state is projected (and then
        # adds zp rowsum(W_p) to the projection's bias): measured, see tests/lowering/test_lstm_integer.py
        zp_sign = -1 if projection else 1
        hid = [max(-128, min(127, _mbqm(o[j] * tanh16(new[j], 15 + cell_exp), hidden_real) + zp_sign * z_hidden))
               for j in range(cells)]
        if not projection:
            h_new[b] = hid
            continue
        wp = params["projectionWeights"]
        bp = params.get("projectionBias", np.zeros(wp.shape[0], np.int64))
        mp = float(f32(q["projectionWeights"][0]) * f32(s_hidden) / f32(sh))
        pclip = int(min(max(f32(proj_clip) / f32(sh), -128.0), 127.0)) if proj_clip > 0 else 0
        for r in range(wp.shape[0]):
            acc = int(bp[r]) - zp_sign * z_hidden * int(wp[r].sum()) + sum(int(wp[r, k]) * hid[k] for k in range(cells))
            v = max(-128, min(127, _mbqm(acc, mp) + zh))
            h_new[b, r] = max(-pclip, min(pclip, v)) if pclip else v
    return h_new.astype(np.int8), c_new.astype(np.int16)


# ------------------------------------------------------------------------------ Android NN's QUANTIZED_16BIT_LSTM
def android_quantized_lstm_step(x: np.ndarray, c: np.ndarray, h: np.ndarray, params: dict, weights_zp: int,
                                bias_scale: float, ruy_rounding: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """One step of Android NN's reference (QuantizedLSTM.cpp's quantizedLstmStep, TFLite's reference
    LstmCell<4>): x [batch, n_in] and h [batch, n_out] uint8, c [batch, n_cell] int16 Q4.11; params by
    Arm NN name (uint8 weights with zero point `weights_zp`, int32 biases at `bias_scale`). Returns
    (c', h') as stored integers. `ruy_rounding`: the gate accumulators' final right shift rounds halves
    up, as LiteRT's optimized uint8 LSTM cell (its fully connected part runs on ruy) does."""
    bias_names = {"Input": "inputGateBias", "Forget": "forgetGateBias", "Cell": "cellBias", "Output": "outputGateBias"}
    batch, cells = c.shape

    def gate(name: str, b: int, j: int) -> int:
        acc = int(params[bias_names[name]][j])
        for v, w in ((x, params[f"inputTo{name}Weights"]), (h, params[f"recurrentTo{name}Weights"])):
            acc += sum((int(v[b, k]) - 128) * (int(w[j, k]) - weights_zp) for k in range(w.shape[1]))
        return sat16((_mbqm_ruy if ruy_rounding else _mbqm)(acc, 4096.0 * bias_scale))

    c_new = np.zeros(c.shape, np.int64)
    h_new = np.zeros(h.shape, np.int64)
    for b in range(batch):
        for j in range(cells):
            i, g = logistic16(gate("Input", b, j), 3), tanh16(gate("Cell", b, j), 3)
            f, o = logistic16(gate("Forget", b, j), 3), logistic16(gate("Output", b, j), 3)
            new = sat16(rdbpot(mul16(i, g), 4) + mul16(f, int(c[b, j])))  # Rescale<4>, SaturatingAdd
            c_new[b, j] = new
            out = mul16(o, tanh16(sat_pot16(new, 1), 3))  # Rescale<3> of the Q4.11 state
            h_new[b, j] = 128 + max(-128, min(127, rdbpot(out, 8)))
    return c_new.astype(np.int16), h_new.astype(np.uint8)
