"""End to end on the corpus: every model converts, its .tosa runs on the TOSA reference model with
TOSA_VALID, and its outputs match the source runtime's (Arm NN CpuRef, PyTorch) within the
tolerance class the manifest gives. Files listed in corpus_harness.KNOWN_GAPS must instead be
reported unsupported with the documented reason; files in KNOWN_MISMATCHES are held to their
measured error bound. Quantized files are converted with `semantics="cpuref"`: the runtime that
computed their outputs is CpuRef (tests/corpus/test_litert_corpus.py holds LiteRT's integers, the default)."""
from __future__ import annotations

import pytest

from conftest import requires_corpus
from corpus_harness import (KNOWN_MISMATCHES, convert_entry, entries, entry_id, judge, known_gap, load_expected,
                            load_inputs, run_reference)

pytestmark = requires_corpus
ENTRIES = entries()


@pytest.mark.parametrize("e", ENTRIES, ids=entry_id)
def test_converts_and_matches(e):
    gap = known_gap(e)
    conv = convert_entry(e, semantics="cpuref")
    if gap is not None:
        assert conv.unsupported, f"expected unsupported ({gap}) but it converted"
        assert any(gap in u for u in conv.unsupported), conv.unsupported
        return
    assert not conv.unsupported, "; ".join(conv.unsupported)
    outputs, status = run_reference(conv.tosa, load_inputs(e))
    assert status == "TOSA_VALID"
    if e["expected_files"]:
        j = judge(load_expected(e), outputs, e["tolerance"])
        if e["file"] in KNOWN_MISMATCHES:
            bound, reason = KNOWN_MISMATCHES[e["file"]]
            assert j.max_error <= bound, f"known mismatch ({reason}) grew to {j.max_error} > {bound}"
            return
        assert j.ok, "; ".join(j.problems)
