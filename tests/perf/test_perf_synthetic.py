"""The benchmark's synthetic models are real models: scaled-down versions of every generated file
convert, and their .tosa computes on the TOSA reference model what the generator's own numpy
forward pass (bench/synthetic/network.py, written from the layer definitions, not from nn2tosa)
says the network computes.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import nn2tosa

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from synthetic.armnn import activation_quant, armnn_bytes, write_armnn  # noqa: E402
from synthetic.mps import write_mps  # noqa: E402
from synthetic.network import forward, resnet50, transformer  # noqa: E402

trm = pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")


def small_resnet(batchnorm: bool = False):
    return resnet50(image=32, width=8, blocks=(1, 2, 1, 1), classes=10, batchnorm=batchnorm)


def small_transformer():
    return transformer(layers=2, hidden=64, heads=4, seq=8)


def run_tosa(path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    data = bytes(nn2tosa.convert(str(path)).tosa_flatbuffer())
    outputs, status = trm.run(data, inputs, tosa_level="EIGHTK")
    assert status == trm.GraphStatus.TOSA_VALID
    return outputs


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - want).max() / max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("generation", ["20.08", "23.08"])
def test_resnet_armnn_fp32_computes_the_network(tmp_path, generation):
    net = small_resnet()
    x = np.random.default_rng(1).standard_normal((1, 32, 32, 3)).astype(np.float32)
    path = tmp_path / "m.armnn"
    write_armnn(net, path, generation)
    (y,) = run_tosa(path, [x])
    assert relative_error(y, forward(net, [x])[0]) <= 1e-4


@pytest.mark.parametrize("generation", ["20.08", "23.08"])
def test_resnet_armnn_int8_computes_the_network_within_quantization(tmp_path, generation):
    """int8 activations (scales from the float network's ranges), per-channel int8 weights: the
    dequantized softmax output stays within a few output steps (1/256) of the float network's."""
    net = small_resnet()
    x = np.random.default_rng(2).standard_normal((1, 32, 32, 3)).astype(np.float32)
    values = forward(net, [x], keep_all=True)
    ranges = [(float(v.min()), float(v.max())) for v in values]
    quant = activation_quant(net, ranges)
    path = tmp_path / "m.armnn"
    write_armnn(net, path, generation, ranges=ranges)
    (scale_in, zero_in), (scale_out, zero_out) = quant[0], quant[net.outputs[0]]
    xq = np.clip(np.round(x / scale_in) + zero_in, -128, 127).astype(np.int8)
    (yq,) = run_tosa(path, [xq])
    y = (yq.astype(np.float64) - zero_out) * scale_out
    assert np.abs(y - values[net.outputs[0]]).max() <= 4 / 256


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("network", ["resnet", "transformer"])
def test_mps_payloads_compute_the_network(tmp_path, network, fp16):
    net = small_resnet(batchnorm=True) if network == "resnet" else small_transformer()
    shape = net.ops[0].shape
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    path = tmp_path / "m.mpsgraph"
    write_mps(net, path, fp16=fp16)
    feed = x.transpose(0, 3, 1, 2).copy() if len(shape) == 4 else x  # PyTorch's NCHW
    (y,) = run_tosa(path, [feed])
    want = forward(net, [x], weights_dtype=np.float16 if fp16 else np.float32)[0]
    assert relative_error(y, want) <= (3e-2 if fp16 else 1e-4)


def test_generators_are_deterministic_and_full_size_is_resnet50():
    assert armnn_bytes(small_resnet(), "23.08") == armnn_bytes(small_resnet(), "23.08")
    full = resnet50()
    # torchvision's 25,557,032 parameters, less the batch norms' 53,120, plus the 26,560 biases they fold into
    assert full.weight_bytes() == 4 * 25_530_472
    convs = [op for op in full.ops if op.kind == "conv"]
    assert len(convs) == 53 and sum(op.kind == "add" for op in full.ops) == 16
    assert transformer(layers=1).weight_bytes() == 4 * (4 * (768 * 768 + 768) + 2 * 768 * 3072 + 3072 + 768 + 4 * 768)
