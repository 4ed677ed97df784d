"""lowering/rules/normalization.py end to end: nn graphs -> numpy reference (tests/nn_reference.py) vs the
lowered .tosa on the TOSA reference model, and the MLIR through strict tosa-validate."""
from __future__ import annotations

import numpy as np
import pytest

from lowering_harness import builder, check_lowering, lower, nn_graph

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

SHAPE = (2, 3, 4, 5)
MEASURED: dict[str, float] = {}


def _x(rng, shape=SHAPE, scale=4.0, dtype=np.float32):
    return (rng.standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_softmax_and_log_softmax_every_axis_and_beta(dtype):
    rng = np.random.default_rng(1)
    g, x = nn_graph({"x": (SHAPE, dtype)})
    b = builder(g)
    for op in ("nn.softmax", "nn.log_softmax"):
        for axis in range(4):
            for beta in (1.0, 0.5, -2.0):
                g.add_output(b.op(op, [x], {"axis": axis, "beta": beta}), f"{op[3:]}_{axis}_{beta}")
    data = _x(rng, scale=20.0)  # large logits: unshifted exponentials would overflow
    if dtype == "bf16":
        data = (data.view(np.uint32) >> 16).astype(np.uint16)
    report = check_lowering(g, [data.astype(np.float16) if dtype == "f16" else data])
    MEASURED.update({f"{dtype} {k}": v for k, v in report.errors.items()})


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_layer_norm_with_and_without_affine(dtype):
    rng = np.random.default_rng(2)
    npt = np.float32 if dtype == "f32" else np.float16
    g, x, gamma, beta = nn_graph({"x": (SHAPE, dtype), "gamma": ((4, 5), dtype), "beta": ((5,), dtype)})
    b = builder(g)
    for axes in ([3], [2, 3], [1, 2, 3]):
        name = "_".join(map(str, axes))
        g.add_output(b.op("nn.layer_norm", [x], {"axes": axes, "epsilon": 1e-5}), f"plain_{name}")
        g.add_output(b.op("nn.layer_norm", [x, gamma], {"axes": axes, "epsilon": 1e-3}), f"gamma_{name}")
        g.add_output(b.op("nn.layer_norm", [x, gamma, beta], {"axes": axes, "epsilon": 1e-5}), f"affine_{name}")
    data = (_x(rng) + 100).astype(npt)  # a large mean: the variance must not cancel
    report = check_lowering(g, [data, _x(rng, (4, 5), 1, npt), _x(rng, (5,), 1, npt)])
    MEASURED.update({f"{dtype} layer_norm {k}": v for k, v in report.errors.items()})


def test_batch_norm_constant_and_runtime_statistics_any_axis():
    rng = np.random.default_rng(3)
    g, x, mean, var = nn_graph({"x": (SHAPE, "f32"), "mean": ((3,), "f32"), "var": ((3,), "f32")})
    b = builder(g)
    consts = {k: b.constant(v) for k, v in {
        "m4": _x(rng, (5,)), "v4": rng.uniform(0.1, 3, 5).astype(np.float32), "g4": _x(rng, (5,), 1),
        "b4": _x(rng, (5,), 1), "g1": _x(rng, (3,), 1), "b1": _x(rng, (3,), 1)}.items()}
    g.add_output(b.op("nn.batch_norm", [x, consts["m4"], consts["v4"], consts["g4"], consts["b4"]],
                      {"epsilon": 1e-3, "axis": 3}), "constant_stats")
    g.add_output(b.op("nn.batch_norm", [x, mean, var, consts["g1"], consts["b1"]], {"epsilon": 1e-5, "axis": 1}),
                 "runtime_stats")
    report = check_lowering(g, [_x(rng), _x(rng, (3,)), rng.uniform(0.1, 3, 3).astype(np.float32)])
    MEASURED.update({f"batch_norm {k}": v for k, v in report.errors.items()})


def test_instance_norm_rank_4_and_5():
    rng = np.random.default_rng(4)
    g, x, x5, gamma, beta = nn_graph({"x": (SHAPE, "f32"), "x5": ((2, 3, 2, 4, 3), "f16"), "gamma": ((5,), "f32"),
                                      "beta": ((5,), "f32")})
    b = builder(g)
    g.add_output(b.op("nn.instance_norm", [x, gamma, beta], {"epsilon": 1e-5}), "nhwc")
    g5 = b.constant(_x(rng, (3,), 1, np.float16))
    b5 = b.constant(_x(rng, (3,), 1, np.float16))
    g.add_output(b.op("nn.instance_norm", [x5, g5, b5], {"epsilon": 1e-3}), "ndhwc")
    report = check_lowering(g, [_x(rng) + 50, _x(rng, (2, 3, 2, 4, 3), 2, np.float16), _x(rng, (5,), 1),
                                _x(rng, (5,), 1)])
    MEASURED.update({f"instance_norm {k}": v for k, v in report.errors.items()})


def test_l2_normalize_axes_epsilon_and_huge_values():
    rng = np.random.default_rng(5)
    g, x = nn_graph({"x": (SHAPE, "f32")})
    b = builder(g)
    for axes in ([3], [1, 2], [0, 1, 2, 3]):
        g.add_output(b.op("nn.l2_normalize", [x], {"axes": axes, "epsilon": 1e-12}), f"l2_{'_'.join(map(str, axes))}")
    g.add_output(b.op("nn.l2_normalize", [x], {"axes": [3], "epsilon": 10.0}), "large_epsilon")
    data = _x(rng)
    data[0, 0, 0] *= 1e30  # squares overflow f32 here
    data[1, 1, 1] = 0.0
    report = check_lowering(g, [data])
    MEASURED.update({f"l2_normalize {k}": v for k, v in report.errors.items()})


def test_local_response_norm_radii():
    rng = np.random.default_rng(6)
    g, x = nn_graph({"x": (SHAPE, "f32")})
    b = builder(g)
    for radius in (0, 1, 2, 7):
        g.add_output(b.op("nn.local_response_norm", [x], {"radius": radius, "alpha": 1e-2, "beta": 0.75, "bias": 1.0}),
                     f"r{radius}")
    g.add_output(b.op("nn.local_response_norm", [x], {"radius": 2, "alpha": 2.0, "beta": 0.5, "bias": 2.0}), "other")
    report = check_lowering(g, [_x(rng)])
    MEASURED.update({f"local_response_norm {k}": v for k, v in report.errors.items()})
    low = lower(g)
    assert "tosa.pow" in low.histogram()


def test_report_measured_errors(capsys):
    """Not a check: prints what the tests above measured (run with -s to see it)."""
    with capsys.disabled():
        for name, error in sorted(MEASURED.items()):
            print(f"  {name:40s} max error {error:.3g}")


def test_rank_1_softmax_and_rank_6_layer_norm():
    rng = np.random.default_rng(7)
    g, v, x = nn_graph({"v": ((7,), "f32"), "x": ((2, 1, 2, 3, 1, 4), "f32")})
    b = builder(g)
    g.add_output(b.op("nn.softmax", [v], {"axis": 0, "beta": 1.0}), "softmax1")
    g.add_output(b.op("nn.log_softmax", [x], {"axis": 5, "beta": 1.0}), "log_softmax6")
    g.add_output(b.op("nn.layer_norm", [x], {"axes": [3, 4, 5], "epsilon": 1e-5}), "layer_norm6")
    g.add_output(b.op("nn.l2_normalize", [x], {"axes": [0, 5], "epsilon": 1e-12}), "l2_6")
    check_lowering(g, [_x(rng, (7,)), _x(rng, (2, 1, 2, 3, 1, 4))])
