"""target.py: the profiles, extensions and level a TOSA-level graph needs, checked against MLIR's
own tosa-validate (strict) where it decides. test_emit.py checks the same on every emitter case."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from nn2tosa.ir import Builder, Graph, ShapeType, TensorType, Value
from nn2tosa.lowering.mlir_emitter import to_mlir, validate
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
from nn2tosa.lowering.target import NotTosaError, Target, required_target


def graph() -> tuple[Graph, Builder]:
    g = Graph()
    return g, Builder(g, constant_dialect="tosa")


def shape(g: Graph, values: list[int]) -> Value:
    return Value(g.add_op("tosa.const_shape", (), [ShapeType(len(values))], {"values": np.array(values, np.int64)}), 0)


def rescale(b: Builder, x: Value, out: TensorType, mode: str) -> Value:
    return b.op("tosa.rescale", [x, b.constant(np.array([1 << 30], np.int32)), b.constant(np.array([40], np.int8)),
                                 b.constant(np.array([0], np.int32)), b.constant(np.array([0], np.int8))],
                {"scale32": True, "rounding_mode": mode, "per_channel": False, "input_unsigned": False,
                 "output_unsigned": False}, types=[out])


def test_float_graph_with_integer_shape_arithmetic_needs_only_pro_fp():
    g, b = graph()
    x = g.add_input(TensorType((4,), "f32"), "x")
    i = g.add_input(TensorType((4,), "i32"), "i")
    g.add_output(b.op("tosa.exp", [x], types=[TensorType((4,), "f32")]), "e")
    g.add_output(b.op("tosa.add", [i, i], types=[TensorType((4,), "i32")]), "s")  # i32 add: either profile
    target = required_target(g)
    assert (target.profiles, target.extensions, target.level) == (("pro_fp",), (), "8k")
    assert validate(to_mlir(g), target) == []


def test_ops_both_profiles_have_need_one_profile():
    g, b = graph()
    p = g.add_input(TensorType((3,), "i1"), "p")
    g.add_output(b.op("tosa.logical_not", [p], types=[TensorType((3,), "i1")]), "q")
    target = required_target(g)
    assert target.profiles == ("pro_int",)
    assert validate(to_mlir(g), target) == []
    assert validate(to_mlir(g), replace(target, profiles=())) != []


@pytest.mark.parametrize("mode, extension", [("SINGLE_ROUND", None), ("DOUBLE_ROUND", "doubleround"),
                                             ("INEXACT_ROUND", "inexactround")])
def test_rescale_rounding_modes(mode, extension):
    g, b = graph()
    x = g.add_input(TensorType((2, 2), "i32"), "x")
    g.add_output(rescale(b, x, TensorType((2, 2), "i8"), mode), "y")
    target = required_target(g)
    assert target.profiles == ("pro_int",)
    assert target.extensions == ((extension,) if extension else ())
    module = to_mlir(g)
    assert validate(module, target) == []
    if extension:
        assert target.reasons[extension].startswith("tosa.rescale")
        assert any(extension in p for p in validate(module, replace(target, extensions=())))


def max_pool_with_stride(stride: int) -> Graph:
    g, b = graph()
    x = g.add_input(TensorType((1, 1, 4, 2), "f32"), "x")
    g.add_output(b.op("tosa.max_pool2d", [x], {"kernel": [1, 1], "stride": [stride, 1], "pad": [0, 0, 0, 0]},
                      types=[TensorType((1, 1, 4, 2), "f32")]), "y")
    return g


def rank7_reshape() -> Graph:
    g, b = graph()
    x = g.add_input(TensorType((2, 2), "i8"), "x")
    g.add_output(b.op("tosa.reshape", [x, shape(g, [1, 1, 1, 1, 1, 2, 2])],
                      types=[TensorType((1, 1, 1, 1, 1, 2, 2), "i8")]), "y")
    return g


def two_gigabyte_tensor() -> Graph:
    g, b = graph()
    x = g.add_input(TensorType((1, 1 << 29), "f32"), "x")  # 2 GiB: one byte over 8K's 2**31 - 1
    g.add_output(b.op("tosa.abs", [x], types=[TensorType((1, 1 << 29), "f32")]), "y")
    return g


@pytest.mark.parametrize("make, reason", [(lambda: max_pool_with_stride(9000), "stride 9000 > 8192"),
                                          (rank7_reshape, "rank 7 > 6"),
                                          (two_gigabyte_tensor, "bytes >= 2**31")])
def test_level_none_when_a_size_exceeds_8k(make, reason):
    g = make()
    target = required_target(g)
    assert target.level == "none"
    assert reason in target.reasons["level none"]
    module = to_mlir(g)
    assert validate(module, target) == []
    assert any("level check" in p for p in validate(module, replace(target, level="8k")))


def test_within_8k_limits_stays_8k():
    assert required_target(max_pool_with_stride(8192)).level == "8k"


def test_type_combinations_no_profile_has_are_reported_and_not_emitted():
    g, b = graph()
    x = g.add_input(TensorType((4,), "f32"), "x")
    g.add_output(b.op("tosa.bitwise_not", [x], types=[TensorType((4,), "f32")]), "y")
    target = required_target(g)
    assert len(target.problems) == 1 and "tosa.bitwise_not" in target.problems[0] and "f32" in target.problems[0]
    # an fp8 CLAMP would make MLIR 22's verifier abort the process: the emitters refuse it first
    g, b = graph()
    x = g.add_input(TensorType((4,), "f8E4M3FN"), "x")
    g.add_output(b.op("tosa.clamp", [x], {"min_val": 0.0, "max_val": 1.0}, types=[TensorType((4,), "f8E4M3FN")]), "y")
    for emit in (to_mlir, build_flatbuffer):
        with pytest.raises(NotTosaError, match="tosa.clamp"):
            emit(g)


def test_dynamic_dimensions_need_the_dynamic_extension():
    g, b = graph()
    x = g.add_input(TensorType((-1, 4), "f32"), "x")
    g.add_output(b.op("tosa.abs", [x], types=[TensorType((-1, 4), "f32")]), "y")
    assert required_target(g).extensions == ("dynamic",)


def test_target_forms():
    target = Target(("pro_fp", "pro_int"), ("doubleround", "int16"), "8k")
    assert target.profiles == ("pro_int", "pro_fp") and target.extensions == ("int16", "doubleround")
    assert target.pipeline_options() == "profiles=pro_int,pro_fp extensions=int16,doubleround level=8k"
    assert str(target) == "TOSA 1.0 pro_int+pro_fp, extensions int16+doubleround, level 8k"
    report = json.loads(json.dumps(target.report()))
    assert report["profiles"] == ["pro_int", "pro_fp"] and report["level"] == "8k"
    from nn2tosa.ir.mlir_bridge import new_context

    with new_context():
        assert str(target.mlir_attr()) == ('#tosa.target_env<specification_version = "1.0", level = "8k", '
                                           'profiles = [pro_int, pro_fp], extensions = [int16, doubleround]>')
    with pytest.raises(ValueError):
        Target(("pro_everything",))
