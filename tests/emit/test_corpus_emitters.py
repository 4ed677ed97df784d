"""The two emitters agree on real models, and the MLIR is valid TOSA for the target we report.

For every whole model of the corpus and one per-layer/per-op file of every (type, tolerance class)
pair (a deterministic sample, to keep the suite fast; bench/corpus_report.py covers every file):
  - the MLIR verifies and passes MLIR's strict tosa-validate for the target nn2tosa reports;
  - `tosa-opt --tosa-serialize` of our MLIR text gives a .tosa whose reference-model outputs are
    bit-identical to our own .tosa's on the corpus inputs (the two emitters cannot disagree);
  - converting twice gives byte-identical .tosa and MLIR text.
"""
from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from conftest import requires_corpus
from corpus_harness import entries, entry_id, known_gap, load_inputs, model_path, run_reference

pytestmark = requires_corpus
TOSA_OPT = Path(sysconfig.get_paths()["purelib"]) / "bin" / "tosa-opt"


def _sample() -> list[dict]:
    picked, seen = [], set()
    for e in entries(lambda e: known_gap(e) is None):
        whole_model = "/perlayer" not in e["file"] and "/perop" not in e["file"]
        keys = {(t, e["tolerance"]) for t in e["histogram"]} - seen
        if whole_model or keys:
            picked.append(e)
            seen |= keys
    return picked


SAMPLE = _sample()


def _convert(e: dict):
    from nn2tosa.api import convert
    from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer

    result = convert(model_path(e))
    return result, bytes(build_flatbuffer(result.graph))


@pytest.mark.parametrize("e", SAMPLE, ids=entry_id)
def test_mlir_is_valid_and_emitters_agree(e, tmp_path):
    from nn2tosa.lowering.mlir_emitter import module_text

    result, ours = _convert(e)
    assert result.validate() == [], f"strict tosa-validate for {result.target}"
    mlir = tmp_path / "m.mlir"
    result.write(str(mlir), "mlir")
    theirs_path = tmp_path / "theirs.tosa"
    subprocess.run([str(TOSA_OPT), f"--tosa-serialize=tosa-flatbuffer-filename={theirs_path} "
                    "retain-graph-input-output-names", str(mlir), "-o", os.devnull], check=True, timeout=300)
    inputs = load_inputs(e)
    ours_out, ours_status = run_reference(ours, inputs)
    theirs_out, theirs_status = run_reference(theirs_path.read_bytes(), inputs)
    assert ours_status == theirs_status == "TOSA_VALID"
    for a, b in zip(ours_out, theirs_out, strict=True):
        np.testing.assert_array_equal(a, b)
    again, again_bytes = _convert(e)
    assert again_bytes == ours
    assert module_text(again.mlir_module()) == module_text(result.mlir_module())
