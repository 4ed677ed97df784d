"""Elementwise forms chosen for Ethos-U's Vela (docs/vela.md): each gives the integers of the form it
replaces on every input (checked on the TOSA reference model), and Vela maps it as one NPU operator
where it maps the .tflite's (one small Vela compile per form)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import CORPUS
from test_quant import one_op, qtype, run
from vela_harness import compile_with_vela, vela_command

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

FOLDER = CORPUS / "armnn" / "litert_23.08"
PAIRS = np.stack(np.meshgrid(np.arange(-128, 128), np.arange(-128, 128), indexing="ij")).astype(np.int8)


@pytest.mark.parametrize("semantics", ["litert", "cpuref"])
@pytest.mark.parametrize("op,combine", [("nn.minimum", np.minimum), ("nn.maximum", np.maximum)])
def test_extremum_of_one_quantization_is_the_extremum_of_the_integers(op, combine, semantics):
    q = qtype((256, 256), "i8", 0.005881975404918194, 42)  # q8_minimum's
    (got,), low = run(one_op(op, {"a": q, "b": q}, q), [PAIRS[0], PAIRS[1]], semantics=semantics)
    np.testing.assert_array_equal(got.reshape(256, 256), combine(PAIRS[0], PAIRS[1]))
    ops = [low.op(n) for n in low.nodes()]
    assert ops.count("tosa.rescale") == 3 and ops.count(f"tosa.{op[3:]}") == 1


@pytest.mark.skipif(vela_command() is None, reason="Vela is not installed (the test extra has ethos-u-vela)")
@pytest.mark.parametrize("accelerator", ["ethos-u55-256", "ethos-u85-256"])
@pytest.mark.parametrize("stem", ["q8_abs", "q8_minimum"])
def test_vela_estimates_no_more_cycles_than_for_the_tflite(stem, accelerator):
    """Vela's cycle estimate (a deterministic count from its performance model, not a timing) of the
    corpus file's .tosa is at most its estimate for the .tflite (q8_abs was 1,622 against 96 on U85
    as a TABLE; q8_minimum 1,728 against 192 on U55 on common-unit RESCALEs)."""
    import nn2tosa

    armnn = FOLDER / f"{stem}.armnn"
    if not armnn.exists():
        pytest.skip(f"no corpus file {armnn}")
    path = Path(tempfile.mkdtemp(prefix="nn2tosa-npu-elem-")) / f"{stem}.tosa"
    path.write_bytes(nn2tosa.convert(armnn, target=accelerator.rsplit("-", 1)[0]).tosa_flatbuffer())
    tosa, tflite = (compile_with_vela(p, accelerator, in_process=True) for p in (path, armnn.with_suffix(".tflite")))
    assert tosa.compiled and tflite.all_on_npu, (tosa.message, tflite.message)
    assert tosa.cycles <= tflite.cycles


@pytest.mark.parametrize("semantics", ["litert", "cpuref"])
@pytest.mark.parametrize("dtype,x_q,y_q", [("i8", (0.0157, 3), (0.0211, -7)), ("i16", (6.1e-05, 0), (9.3e-05, 0))])
def test_prelu_through_the_sign_bit_equals_the_select(dtype, x_q, y_q, semantics):
    """--target ethos-u55 (Vela maps no SELECT or comparison there) gives SELECT's integers, for alphas
    below 0, in (0, 1), 1 and above 1, on every int8 input (a spread of int16 ones)."""
    alphas = np.array([-0.5, 0.0, 0.25, 1.0, 1.75, 3.0], np.float32)
    a_q = qtype((6,), dtype, 0.0125 if dtype == "i8" else 1e-4, 0)
    alpha = np.round(alphas / a_q.quant.scales[0]).astype(np.int8 if dtype == "i8" else np.int16)
    lo, hi = (-128, 128) if dtype == "i8" else (-32768, 32768)
    x = np.repeat(np.arange(lo, hi, 1 if dtype == "i8" else 97)[:, None], 6, axis=1).astype(alpha.dtype)
    x_t, y_t = qtype(x.shape, dtype, *x_q), qtype(x.shape, dtype, *y_q)
    results = []
    for target in (None, "ethos-u55"):
        g = one_op("nn.prelu", {"x": x_t, "alpha": a_q}, y_t)
        (got,), low = run(g, [x, alpha], semantics=semantics, target=target)
        ops = {low.op(n) for n in low.nodes()}
        assert ("tosa.select" in ops) == (target is None) and ("tosa.greater_equal" in ops) == (target is None)
        results.append(got)
    np.testing.assert_array_equal(results[1], results[0])


@pytest.mark.skipif(vela_command() is None, reason="Vela is not installed (the test extra has ethos-u-vela)")
def test_vela_compiles_quantized_prelu_for_ethos_u55():
    """Vela maps no SELECT or comparison on Ethos-U55: the preset's prelu has none (it failed before)."""
    import nn2tosa

    armnn = CORPUS / "armnn" / "perlayer_23.08" / "prelu_alpha_const_bcast_qs8.armnn"
    if not armnn.exists():
        pytest.skip(f"no corpus file {armnn}")
    path = Path(tempfile.mkdtemp(prefix="nn2tosa-npu-elem-")) / "prelu.tosa"
    path.write_bytes(nn2tosa.convert(armnn, target="ethos-u55").tosa_flatbuffer())
    outcome = compile_with_vela(path, "ethos-u55-256", in_process=True)
    assert outcome.compiled and outcome.cpu_ops == 0, outcome.message


@pytest.mark.parametrize("integer_bits", [0, 3, 4, 6])
@pytest.mark.parametrize("tanh", [False, True], ids=["logistic", "tanh"])
def test_gemmlowp_int16_functions_in_arithmetic_on_every_input(tanh, integer_bits):
    """The integer LSTMs' activations without GATHER (--target ethos-u55/u65): gemmlowp's logistic and tanh
    of every FixedPoint<int16, integer_bits> raw, as fixed_point/tflite.py's numpy model of gemmlowp computes them."""
    from lowering_harness import run_reference_model
    from nn2tosa.ir import Graph, TensorType
    from nn2tosa.lowering.context import LoweringContext
    from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
    from nn2tosa.lowering.fixed_point.gemmlowp16 import logistic_or_tanh16, supported
    from nn2tosa.lowering.fixed_point.tflite import gemmlowp_logistic16, gemmlowp_tanh16

    assert supported(integer_bits, tanh)
    v = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)
    g = Graph()
    x = g.add_input(TensorType(v.shape, "i16"), "x")
    g.add_output(logistic_or_tanh16(LoweringContext(g, x.node, []), x, integer_bits, tanh), "y")
    (got,) = run_reference_model(bytes(build_flatbuffer(g)), [v])
    want = (gemmlowp_tanh16 if tanh else gemmlowp_logistic16)(v.astype(np.int64), integer_bits)
    np.testing.assert_array_equal(got.astype(np.int64), want)
    assert not {g.op(n) for n in g.nodes()} & {"tosa.gather", "tosa.select", "tosa.greater", "tosa.bitwise_and"}


@pytest.mark.parametrize("stem", ["qlstm_basic_nolayernorm_qs8", "qlstm_cifg_peephole_projection_layernorm_qs8"])
def test_integer_lstm_under_the_u55_preset(stem):
    """The QLSTM corpus files under --target ethos-u55 (gemmlowp's activations in arithmetic, the layer norm
    without BITWISE_AND, int16 MATMUL, EQUAL or SELECT) give the default lowering's integers on the corpus
    inputs and on random ones, and Vela compiles them for U55 (it stopped at their GATHERs before)."""
    import nn2tosa
    from lowering_harness import run_reference_model

    armnn = CORPUS / "armnn" / "perlayer_23.08" / f"{stem}.armnn"
    if not armnn.exists():
        pytest.skip(f"no corpus file {armnn}")
    inputs = [np.load(p) for p in sorted(armnn.parent.glob(f"{stem}.input*.npy"))]
    rng = np.random.default_rng(7)
    feeds = [inputs] + [[rng.integers(np.iinfo(a.dtype).min, np.iinfo(a.dtype).max, a.shape, endpoint=True)
                         .astype(a.dtype) for a in inputs] for _ in range(3)]
    default, u55 = (bytes(nn2tosa.convert(armnn, **options).tosa_flatbuffer()) for options in ({}, {"target": "ethos-u55"}))
    for feed in feeds:
        for want, got in zip(run_reference_model(default, feed), run_reference_model(u55, feed), strict=True):
            np.testing.assert_array_equal(got, want)
    if vela_command() is not None:
        path = Path(tempfile.mkdtemp(prefix="nn2tosa-npu-elem-")) / f"{stem}.tosa"
        path.write_bytes(u55)
        outcome = compile_with_vela(path, "ethos-u55-256", in_process=True)
        assert outcome.compiled and outcome.cpu_ops == 0, outcome.message
