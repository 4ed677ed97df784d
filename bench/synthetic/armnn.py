"""Serialize a `Network` as an Arm NN `.armnn` file, laid out as Arm NN's own serializer does.

Two weight generations (docs/frontend_armnn.md, FORMATS.md):
- "20.08": featureVersions {bindingIdsScheme: 1}; convolution and fully-connected weights and
  biases inside the layer tables; residual sums are Addition layers.
- "23.08": {1, weightsLayoutScheme: 1, constantTensorsAsInputs: 1}; weights and biases are
  Constant layers wired to input slots 1 and 2; sums are ElementwiseBinary(Add) layers.

`quantized=True` writes the int8 network a TFLite int8 model becomes in Arm NN: QAsymmS8
activations (scales from `ranges`, the float network's value ranges on a calibration input),
QSymmS8 convolution weights per output channel, per-tensor QSymmS8 fully-connected weights,
Signed32 biases at input scale x weight scale; ReLU, pooling and reshape keep their input's
quantization and softmax outputs 1/256 with zero point -128, as TFLite requires.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nn2tosa.schemas import load_schema

from .fbwrite import encode
from .network import Network, Op

GENERATIONS = ("20.08", "23.08")
FEATURE_VERSIONS = {
    "20.08": {"bindingIdsScheme": 1},
    "23.08": {"bindingIdsScheme": 1, "weightsLayoutScheme": 1, "constantTensorsAsInputs": 1},
}
Quant = tuple[float, int]  # (scale, zero point) of an int8 tensor


def asymmetric(lo: float, hi: float) -> Quant:
    """int8 scale and zero point covering [lo, hi] (widened to include 0)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = max(hi - lo, 1e-6) / 255.0
    return float(np.float32(scale)), int(np.clip(round(-128 - lo / scale), -128, 127))


def activation_quant(net: Network, ranges: list[tuple[float, float]]) -> list[Quant | None]:
    """The (scale, zero point) of every op's output in the int8 network."""
    quant: list[Quant | None] = []
    for i, op in enumerate(net.ops):
        if op.kind in ("relu", "maxpool", "global_avgpool", "reshape"):
            quant.append(quant[op.inputs[0]])
        elif op.kind in ("softmax", "logistic"):
            quant.append((1.0 / 256.0, -128))
        elif op.kind == "detection":  # float outputs, as Arm NN's and TFLite's post-processing has
            quant.append(None)
        else:
            quant.append(asymmetric(*ranges[i]))
    return quant


class _ArmnnWriter:
    def __init__(self, net: Network, generation: str, quant: list[Quant | None] | None):
        if generation not in GENERATIONS:
            raise ValueError(f"generation {generation!r}: one of {GENERATIONS}")
        self.net, self.generation, self.quant = net, generation, quant
        self.layers: list[dict[str, Any]] = []
        self.layer_of: dict[int, int] = {}  # op index -> layer index of its output
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    # ---- tensor infos and constant tensors
    def info(self, shape: tuple[int, ...], data_type: str = "Float32", scale: float = 0.0, offset: int = 0,
             scales: np.ndarray | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {"dimensions": list(shape), "dataType": data_type, "quantizationScale": scale,
                                "dimensionSpecificity": [True] * len(shape)}
        if offset:
            info["quantizationOffset"] = offset
        if scales is not None:
            info["quantizationScales"] = [float(s) for s in scales]
        return info

    def activation_info(self, op_index: int) -> dict[str, Any]:
        shape = self.net.ops[op_index].shape
        if self.quant is None:
            return self.info(shape)
        scale, zero_point = self.quant[op_index]
        return self.info(shape, "QAsymmS8", scale, zero_point)

    def weights(self, op_index: int, op: Op) -> list[tuple[dict[str, Any], np.ndarray]]:
        """(tensor info, data) of the weights and bias of a convolution or fully-connected op."""
        w, b = op.weights["w"], op.weights["b"]
        if self.quant is None:
            return [(self.info(w.shape), w), (self.info(b.shape), b)]
        input_scale = self.quant[op.inputs[0]][0]
        if op.kind == "conv":  # per output channel
            w_scales = (np.abs(w).reshape(w.shape[0], -1).max(axis=1) / 127.0).astype(np.float32)
            w_q = np.clip(np.round(w / w_scales.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
            b_scales = (np.float64(input_scale) * w_scales).astype(np.float32)
            w_info = self.info(w.shape, "QSymmS8", float(w_scales[0]), scales=w_scales)
            b_info = self.info(b.shape, "Signed32", float(b_scales[0]), scales=b_scales)
        else:
            w_scale = np.float32(np.abs(w).max() / 127.0)
            w_q = np.clip(np.round(w / w_scale), -127, 127).astype(np.int8)
            b_scales = np.full(b.shape, np.float32(input_scale * w_scale))
            w_info, b_info = self.info(w.shape, "QSymmS8", float(w_scale)), self.info(b.shape, "Signed32", float(b_scales[0]))
        b_q = np.round(b / b_scales).astype(np.int32)
        return [(w_info, w_q), (b_info, b_q)]

    @staticmethod
    def const_tensor(info: dict[str, Any], data: np.ndarray) -> dict[str, Any]:
        # Arm NN stores 4-byte elements as IntData, bytes as ByteData: the payload is the raw data
        member = {1: "ByteData", 2: "ShortData", 4: "IntData", 8: "LongData"}[data.dtype.itemsize]
        return {"info": info, "data_type": member, "data": {"data": data}}

    # ---- layers
    def base(self, name: str, layer_type: str, sources: list[int], outputs: list[dict[str, Any]]) -> dict[str, Any]:
        index = len(self.layers)
        slots = [{"index": k, "connection": {"sourceLayerIndex": s, "outputSlotIndex": 0}} for k, s in enumerate(sources)]
        return {"index": index, "layerName": name, "layerType": layer_type, "inputSlots": slots,
                "outputSlots": [{"index": k, "tensorInfo": t} for k, t in enumerate(outputs)]}

    def append(self, member: str, table: dict[str, Any]) -> int:
        self.layers.append({"layer_type": member, "layer": table})
        return len(self.layers) - 1

    def constant(self, name: str, info: dict[str, Any], data: np.ndarray) -> int:
        return self.append("ConstantLayer", {"base": self.base(name, "Constant", [], [info]),
                                             "input": self.const_tensor(info, data)})

    def layer(self, i: int, op: Op) -> None:
        sources = [self.layer_of[j] for j in op.inputs]
        out = [self.activation_info(i)] if op.kind != "detection" else []
        if op.kind == "input":
            binding = len(self.inputs)
            index = self.append("InputLayer", {"base": {"base": self.base(op.name, "Input", [], out),
                                                        "layerBindingId": binding}})
            self.inputs.append(binding)
        elif op.kind in ("conv", "fc"):
            layer_type, member = ("Convolution2d", "Convolution2dLayer") if op.kind == "conv" else \
                ("FullyConnected", "FullyConnectedLayer")
            table: dict[str, Any] = {"descriptor": self.descriptor(op)}
            (w_info, w), (b_info, b) = self.weights(i, op)
            if self.generation == "23.08":
                sources += [self.constant(f"{op.name}/weights", w_info, w), self.constant(f"{op.name}/bias", b_info, b)]
            else:
                table["weights"], table["biases"] = self.const_tensor(w_info, w), self.const_tensor(b_info, b)
            table["base"] = self.base(op.name, layer_type, sources, out)
            index = self.append(member, table)
        elif op.kind == "detection":
            p = op.params
            outputs = [self.info(op.shape), self.info(op.shape[:2]), self.info(op.shape[:2]), self.info((1,))]
            descriptor = {"maxDetections": p["max_detections"], "maxClassesPerDetection": 1, "detectionsPerClass": 1,
                          "nmsScoreThreshold": p["threshold"], "nmsIouThreshold": p["iou"], "numClasses": p["classes"],
                          "useRegularNms": False, "scaleX": 10.0, "scaleY": 10.0, "scaleW": 5.0, "scaleH": 5.0}
            anchors = op.weights["anchors"]
            index = self.append("DetectionPostProcessLayer", {
                "base": self.base(op.name, "DetectionPostProcess", sources, outputs), "descriptor": descriptor,
                "anchors": self.const_tensor(self.info(anchors.shape), anchors)})
        elif op.kind == "add" and self.generation == "20.08":
            index = self.append("AdditionLayer", {"base": self.base(op.name, "Addition", sources, out)})
        else:
            layer_type, descriptor = self.simple(op)
            index = self.append(f"{layer_type}Layer", {"base": self.base(op.name, layer_type, sources, out),
                                                       "descriptor": descriptor})
        self.layer_of[i] = index

    def descriptor(self, op: Op) -> dict[str, Any]:
        if op.kind == "fc":
            return {"biasEnabled": True, "transposeWeightsMatrix": True}
        p, s = op.params["pad"], op.params["stride"]
        return {"padLeft": p, "padRight": p, "padTop": p, "padBottom": p, "strideX": s, "strideY": s,
                "dilationX": 1, "dilationY": 1, "biasEnabled": True, "dataLayout": "NHWC"}

    def simple(self, op: Op) -> tuple[str, dict[str, Any]]:
        """(layer type, descriptor) of the ops without weights."""
        if op.kind == "relu":
            return "Activation", {"activationFunction": "ReLu"}
        if op.kind == "logistic":
            return "Activation", {"activationFunction": "Sigmoid"}
        if op.kind == "maxpool":
            k, s, p = op.params["k"], op.params["stride"], op.params["pad"]
            return "Pooling2d", {"poolType": "Max", "padLeft": p, "padRight": p, "padTop": p, "padBottom": p,
                                 "poolWidth": k, "poolHeight": k, "strideX": s, "strideY": s,
                                 "paddingMethod": "Exclude", "dataLayout": "NHWC"}
        if op.kind == "global_avgpool":
            _, h, w, _ = self.net.ops[op.inputs[0]].shape
            return "Pooling2d", {"poolType": "Average", "poolWidth": w, "poolHeight": h, "strideX": w, "strideY": h,
                                 "paddingMethod": "Exclude", "dataLayout": "NHWC"}
        if op.kind == "add":
            return "ElementwiseBinary", {"operation": "Add"}
        if op.kind == "reshape":
            return "Reshape", {"targetShape": list(op.shape)}
        if op.kind == "softmax":
            return "Softmax", {"beta": 1.0}
        raise ValueError(f"no Arm NN layer for {op.kind} ({op.name})")

    def document(self) -> dict[str, Any]:
        for i, op in enumerate(self.net.ops):
            self.layer(i, op)
        slots = [(i, s) for i in self.net.outputs for s in range(4 if self.net.ops[i].kind == "detection" else 1)]
        for k, (i, slot) in enumerate(slots):  # (DetectionPostProcess has four outputs)
            base = self.base(f"output{k}", "Output", [self.layer_of[i]], [])
            base["inputSlots"][0]["connection"]["outputSlotIndex"] = slot
            self.append("OutputLayer", {"base": {"base": base, "layerBindingId": k}})
            self.outputs.append(k)
        return {"layers": self.layers, "inputIds": self.inputs, "outputIds": self.outputs,
                "featureVersions": FEATURE_VERSIONS[self.generation]}


def armnn_bytes(net: Network, generation: str = "23.08", *,
                ranges: list[tuple[float, float]] | None = None) -> bytearray:
    """The .armnn file of `net`: float32, or int8 when `ranges` (per op, of the float network on a
    calibration input) are given."""
    quant = activation_quant(net, ranges) if ranges is not None else None
    doc = _ArmnnWriter(net, generation, quant).document()
    return encode(load_schema("armnn"), doc, size_hint=net.weight_bytes() + (1 << 20))


def write_armnn(net: Network, path: str | Path, generation: str = "23.08", *,
                ranges: list[tuple[float, float]] | None = None) -> int:
    data = armnn_bytes(net, generation, ranges=ranges)
    Path(path).write_bytes(data)
    return len(data)


def calibration_ranges(net: Network, inputs: list[np.ndarray]) -> list[tuple[float, float]]:
    """Each op's value range on `inputs` (the float network), for `ranges=`; a DetectionPostProcess, whose
    outputs stay float, has no reference here and gets a placeholder range (its quantization is unused)."""
    from .network import forward

    cut = next((k for k, op in enumerate(net.ops) if op.kind == "detection"), len(net.ops))
    head = Network(net.name, net.seed, net.ops[:cut], [])
    values = forward(head, inputs, keep_all=True)
    return [(float(v.min()), float(v.max())) for v in values] + [(0.0, 1.0)] * (len(net.ops) - cut)
