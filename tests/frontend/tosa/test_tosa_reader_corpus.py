"""Every corpus model's .tosa round-trips both ways.

For each model the converter handles today (others skip, naming why, while conversion is incomplete):
  - .tosa -> IR -> .tosa gives the same bytes (our writer wrote the original);
  - 1.0 -> 0.100-draft -> 1.0 gives the same reference-model outputs on the corpus inputs, unless
    the 0.100 writer refuses the graph (TOSA 0.90 cannot express it), which must name a reason.
"""
from __future__ import annotations

import pytest

from conftest import requires_corpus
from corpus_harness import convert_entry, entries, entry_id, load_inputs, run_reference
from test_tosa_reader import assert_same_outputs, read_one

from nn2tosa.diagnostics import Nn2TosaError, UnsupportedError
from nn2tosa.lowering.flatbuffer_0100 import build_flatbuffer_0100
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer

pytestmark = requires_corpus
ENTRIES = entries()


def _converted(e: dict) -> bytes:
    try:
        conv = convert_entry(e)
    except Nn2TosaError as err:  # the converter's own gaps are test_corpus_e2e.py's business
        pytest.skip(f"conversion incomplete: {err}")
    if conv.unsupported:
        pytest.skip(f"conversion incomplete: {conv.unsupported[0]}")
    return conv.tosa


@pytest.mark.parametrize("e", ENTRIES, ids=entry_id)
def test_corpus_tosa_round_trips(e):
    data = _converted(e)
    g = read_one(data)
    assert bytes(build_flatbuffer(g)) == data
    try:
        seed = bytes(build_flatbuffer_0100(g))
    except UnsupportedError as err:
        assert all(item.why for item in err.items)
        return
    again = bytes(build_flatbuffer(read_one(seed)))
    inputs = load_inputs(e)
    original, status = run_reference(data, inputs)
    round_tripped, status_again = run_reference(again, inputs)
    assert status_again == status
    assert_same_outputs(original, round_tripped)
