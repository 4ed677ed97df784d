"""The emitters behind the Python API: Result.write for each output kind, target and validation."""
from __future__ import annotations

import numpy as np
from mlir import ir

from nn2tosa.api import Result
from nn2tosa.ir import Builder, Graph, TensorType
from nn2tosa.ir.mlir_bridge import new_context
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer


def tosa_graph() -> Graph:
    g = Graph()
    b = Builder(g, constant_dialect="tosa")
    x = g.add_input(TensorType((2, 3), "f32"), "x")
    y = b.op("tosa.mul", [x, b.constant(np.full((1, 3), 2, np.float32)), b.constant(np.zeros(1, np.int8))],
             types=[TensorType((2, 3), "f32")])
    g.add_output(b.op("tosa.sigmoid", [y], types=[TensorType((2, 3), "f32")]), "y")
    return g


def test_result_writes_every_output_kind(tmp_path):
    result = Result(tosa_graph())
    assert result.target.profiles == ("pro_fp",)
    assert result.validate() == []
    for kind in ("mlir", "mlirbc", "tosa"):
        result.write(str(tmp_path / f"out.{kind}"), kind)
    assert (tmp_path / "out.tosa").read_bytes() == bytes(build_flatbuffer(result.graph))
    text = (tmp_path / "out.mlir").read_text()
    assert '"tosa.sigmoid"' in text and 'tosa.tensor_name = "y"' in text
    with new_context():
        module = ir.Module.parse((tmp_path / "out.mlirbc").read_bytes())
        assert "tosa.sigmoid" in str(module)
    result.write(str(tmp_path / "pretty.mlir"), "mlir", pretty=True)
    assert "tosa.sigmoid %" in (tmp_path / "pretty.mlir").read_text()
