"""Canonicalize's power patterns (passes/power.py) against the independent numpy reference
(tests/nn_reference.py: nn.pow is np.power): the rewritten graph computes numpy's x ** y bit for bit
where the rewrite is a single rounding (y = 1, 2, -1, 0.5) and within a few ulp for longer products,
on special values (signed zeros, infinities, NaN, negative bases, values whose powers overflow or
underflow) as well as random ones; the documented exceptions are where TOSA POW is undefined. The
MPS corpus's pow models still match PyTorch on the reference model, now without tosa.pow.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nn2tosa
from nn2tosa.ir import Graph, TensorType, Value
from nn2tosa.passes.canonicalize import canonicalize_graph

from nn_reference import evaluate

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -3.0, 0.5, -0.75, 1e-20, -1e-20, 1e20,
                    -1e20, 3e38, 1e-38, -1e-45, 7.0, 1.1], np.float32)


def values(dtype=np.float32) -> np.ndarray:
    rng = np.random.default_rng(7)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, 64).astype(dtype)
    scaled = rng.standard_normal(200) * np.exp(rng.uniform(-10, 10, 200))
    return np.concatenate([SPECIAL, scaled]).astype(dtype)


def pow_graph(exponent: np.ndarray, n: int, dtype: str = "f32") -> Graph:
    g = Graph("pow")
    x = g.add_input(TensorType((n,), dtype), "x")
    y = Value(g.add_op("nn.constant", (), [TensorType(exponent.shape, dtype)], {"value": exponent}))
    g.add_output(Value(g.add_op("nn.pow", [x, y], [TensorType((n,), dtype)])), "y")
    return g


def rewritten(g: Graph) -> Graph:
    out = g.copy()
    canonicalize_graph(out)
    return out


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 steps between finite a and b (ordered integer views)."""
    def ordered(v: np.ndarray) -> np.ndarray:
        i = v.astype(np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(a) - ordered(b))


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equal values, NaN matching NaN and zeros matching in sign."""
    return (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))


# products round once each: relative error under (y - 1) * 2**-24, so under y - 1 ulp
@pytest.mark.parametrize("y,ulps", [(1, 0), (2, 0), (-1, 0), (0.5, 0), (3, 2), (4, 3), (5, 4), (6, 5), (7, 6),
                                    (8, 7), (-0.5, 0)])
def test_rewrite_matches_numpy_pow(y, ulps):
    x = values()
    g = pow_graph(np.array(y, np.float32), x.size)
    g2 = rewritten(g)
    assert not any(g2.op(n) == "nn.pow" for n in g2.nodes())
    (want,) = evaluate(g, [x])
    (got,) = evaluate(g2, [x])
    # where TOSA POW is undefined the rewrite may differ (passes/power.py says how): sqrt(-inf) is
    # NaN (numpy: +inf); rsqrt(-0) is -inf and rsqrt(-inf) NaN (numpy: +inf, 0)
    skip = np.zeros(x.shape, bool)
    if y == 0.5:
        skip = x == -np.inf
    if y == -0.5:
        skip = (x == -np.inf) | ((x == 0) & np.signbit(x))
    exact = same_bits(got, want)
    finite = np.isfinite(got) & np.isfinite(want) & (got != 0) & (want != 0)
    close = finite & (ulp_distance(got, want) <= ulps)
    # a product that underflows to a subnormal rounds at the subnormal's absolute step
    with np.errstate(invalid="ignore"):
        tiny = (np.abs(want) < np.finfo(np.float32).tiny) & (np.abs(got - want) <= 2 * np.finfo(np.float32).smallest_subnormal)
    bad = ~(exact | close | tiny | skip)
    assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5]))


@pytest.mark.parametrize("y", [2, 3, 5, 8])
def test_integer_powers_wrap_as_numpy(y):
    x = values(np.int32)
    g = pow_graph(np.array(y, np.int32), x.size, "i32")
    g2 = rewritten(g)
    assert not any(g2.op(n) == "nn.pow" for n in g2.nodes())
    np.testing.assert_array_equal(evaluate(g2, [x])[0], evaluate(g, [x])[0])


@pytest.mark.parametrize("exponent", [np.array(2.5), np.array(-2.0), np.array(9.0), np.array([2.0, 3.0]),
                                      np.array(np.inf), np.array(np.nan)], ids=str)
def test_other_exponents_stay(exponent):
    exponent = exponent.astype(np.float32)
    g = pow_graph(np.resize(exponent, exponent.shape), 2)
    assert sum(rewritten(g).op(n) == "nn.pow" for n in rewritten(g).nodes()) == 1


CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
# constant exponents (2, 3, 0.5 ...) of PyTorch's x.pow(c), x.square() and torch.pow tests
POW_MODELS = ["mps/perop/op_pow_tensor_scalar_fp32.mpsgraph", "mps/perop/op_pow_tensor_scalar_half_fp32.mpsgraph",
              "mps/perop/op_pow_tensor_scalar_fp16.mpsgraph", "mps/perop/ut_square_fp32.mpsgraph",
              "mps/perop/ut_pow_1_fp32.mpsgraph"]


@pytest.mark.parametrize("name", POW_MODELS)
def test_corpus_pow_models_match_pytorch_without_tosa_pow(name):
    if not (CORPUS / name).exists():
        pytest.skip(f"the corpus ({CORPUS}) is not here")
    pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")
    entry = next(e for e in json.loads((CORPUS / "manifest.json").read_text())["entries"] if e["file"] == name)
    folder = (CORPUS / name).parent
    result = nn2tosa.convert(str(CORPUS / name))
    assert not any(result.graph.op(n) == "tosa.pow" for n in result.graph.nodes())
    done = subprocess.run([sys.executable, "-m", "nn2tosa", "check", str(CORPUS / name),
                           "--inputs", *[str(folder / f) for f in entry["input_files"]],
                           "--expected", *[str(folder / f) for f in entry["expected_files"]],
                           "--tolerance", entry["tolerance"]], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
