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
