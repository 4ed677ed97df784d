"""docs/supported_ops.md is what the registries and rule tables say today."""
from __future__ import annotations

import re
import subprocess
import sys

from nn2tosa import docs
from nn2tosa.ir import ops_of


def test_supported_ops_is_current():
    assert docs.DOC_PATH.read_text() == docs.generate(), "run: python -m nn2tosa.docs"
    proc = subprocess.run([sys.executable, "-m", "nn2tosa.docs", "--check"], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def rows(text: str, section: str) -> dict[str, list[str]]:
    part = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    found = {}
    for line in part.splitlines():
        m = re.match(r"\| \[`([^`]+)`\]\(#[^)]+\) \| (.*)", line)
        if m:
            found[m.group(1)] = [c.strip() for c in m.group(2).rstrip("|").split(" | ")]
    return found


def test_every_layer_and_node_type_has_a_row():
    text = docs.generate()
    armnn, mps = rows(text, "Arm NN layer types"), rows(text, "ExecuTorch MPS node types")
    assert set(armnn) == {d.name.split(".", 1)[1] for d in ops_of("armnn")}
    assert set(mps) == {d.name.split(".", 1)[1] for d in ops_of("mps")}
    from nn2tosa.passes.legalize_armnn import NO_MEANING

    assert armnn["Switch"][0] == f"**no**: {NO_MEANING['Switch']}"
    assert armnn["DetectionPostProcess"][0] == "yes"
    # a table row of a shared rule reads its own row only; conv lowers to TOSA conv
    assert armnn["Abs"][:2] == ["yes", "abs"] and "abs" in armnn["Abs"][2].split(", ")
    assert "conv2d" in armnn["Convolution2d"][2].split(", ") and mps["Softmax"][1] == "log_softmax, softmax"
    known_nn = {d.name.split(".", 1)[1] for d in ops_of("nn")}
    known_tosa = {d.name.split(".", 1)[1] for d in ops_of("tosa")}
    for table in (armnn, mps):
        for name, cells in table.items():
            if cells[0] == "yes":
                assert set(filter(None, cells[1].split(", "))) <= known_nn, name
                assert set(filter(None, cells[2].split(", "))) <= known_tosa, name


def _shift_rule(ctx):  # read, never run: what the code reader makes of the typed builder
    widened = ctx.tosa.logical_left_shift(ctx.operand("x"), ctx.operand("y"))
    seen = set()
    seen.add(widened)  # a method of another object named like a TOSA op creates nothing
    return widened


def test_code_reader_reads_the_typed_builder():
    """`ctx.tosa.<op>` counts as creating the op, and with it what the builder calls for that op (the
    rank equalization: reshapes); a same-named method of anything else does not."""
    from nn2tosa.ir import Builder
    from nn2tosa.lowering.context import LoweringContext
    from nn2tosa.rule_reading import CodeReader

    plain = CodeReader("tosa.", "nn2tosa.lowering", [LoweringContext, Builder]).read(_shift_rule)
    assert plain.own == plain.ops == {"tosa.logical_left_shift"}
    implied = CodeReader("tosa.", "nn2tosa.lowering", [LoweringContext, Builder],
                         implied={"tosa.logical_left_shift": [LoweringContext.same_rank]}).read(_shift_rule)
    assert implied.own == {"tosa.logical_left_shift"}
    assert {"tosa.reshape", "tosa.const_shape"} <= implied.ops
