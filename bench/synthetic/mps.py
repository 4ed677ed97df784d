"""Serialize a `Network` as an ExecuTorch MPS payload ("MP00"), laid out as the MPS backend's
preprocess writes it (FORMATS.md): a 24-byte header, the MPSGraph flatbuffer, then the constant
bytes packed one after another, the whole segment padded to 16.

Node choices follow what the backend emits for the PyTorch modules: Conv2d -> MPSConv2D on NCHW
with OIHW weights; BatchNorm2d -> MPSBatchNorm (three results); MaxPool2d ->
MPSMaxPool2DWithIndices; adaptive average pooling -> MPSMean over [-2, -1]; Linear -> MPSPermute
of the weight and MPSAddmm; view/permute/bmm/softmax/LayerNorm/GELU/add/mul -> MPSView,
MPSPermute, MPSMatMul, MPSSoftmax, MPSLayerNorm, MPSGELU, MPSAdd (alpha 1), MPSMul by a [1]
constant. `fp16=True` is the backend's default lowering: fp16 constants, values still declared
float32, and in-place MPSCast nodes on the graph inputs (to fp16) and outputs (to fp32).
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

from nn2tosa.schemas import load_schema

from .fbwrite import encode
from .network import Network, Op

F32, F16, I64 = "mps_data_type_float32", "mps_data_type_float16", "mps_data_type_int64"
HEADER = 24


def nchw(shape: tuple[int, ...]) -> tuple[int, ...]:
    """PyTorch's order of a 4-D NHWC shape (other ranks are the same in both)."""
    return (shape[0], shape[3], shape[1], shape[2]) if len(shape) == 4 else shape


class _MpsWriter:
    def __init__(self, net: Network, fp16: bool):
        self.net = net
        self.weight_dtype = np.float16 if fp16 else np.float32
        self.fp16 = fp16
        self.values: list[dict[str, Any]] = []
        self.nodes: list[dict[str, Any]] = []
        self.constants: list[np.ndarray] = []  # in segment order
        self.constant_ids: list[int] = []
        self.segment_end = 0
        self.value_of: dict[int, int] = {}  # op index -> value id of its output

    def value(self, shape: tuple[int, ...], datatype: str = F32) -> int:
        self.values.append({"datatype": datatype, "num_dims": len(shape), "dims": list(shape),
                            "constant_buffer_size": 0, "constant_buffer": {"storage": []}, "segment_offset": 0})
        return len(self.values) - 1

    def constant(self, array: np.ndarray) -> int:
        data = np.ascontiguousarray(array, dtype=self.weight_dtype)
        vid = self.value(data.shape, F16 if self.fp16 else F32)
        self.values[vid].update(constant_buffer_size=data.nbytes, segment_offset=self.segment_end)
        self.segment_end += data.nbytes
        self.constants.append(data)
        self.constant_ids.append(vid)
        return vid

    def node(self, kind: str, **fields: Any) -> None:
        self.nodes.append({"mpsnode_union_type": kind, "mpsnode_union": fields})

    def op(self, i: int, op: Op) -> None:
        x = [self.value_of[j] for j in op.inputs]
        if op.kind == "input":
            self.value_of[i] = self.value(nchw(op.shape))
            return
        out = self.value_of[i] = self.value(nchw(op.shape))
        w = op.weights
        if op.kind == "conv":
            p, s = op.params["pad"], op.params["stride"]
            bias = self.constant(w["b"]) if "b" in w else -1
            self.node("MPSConv2D", input1_id=x[0], input2_id=self.constant(w["w"].transpose(0, 3, 1, 2)),
                      input3_id=bias, output_id=out, stride_x=s, stride_y=s, dilation_x=1, dilation_y=1, groups=1,
                      padding_left=p, padding_right=p, padding_top=p, padding_bottom=p)
        elif op.kind == "batchnorm":
            ids = {k: self.constant(w[k]) for k in ("mean", "var", "gamma", "beta")}
            self.node("MPSBatchNorm", input_id=x[0], mean_id=ids["mean"], var_id=ids["var"], weight_id=ids["gamma"],
                      bias_id=ids["beta"], momentum=0.1, epsilon=op.params["eps"], output1_id=out,
                      output2_id=self.value((0,)), output3_id=self.value((0,)))
        elif op.kind == "layernorm":
            stats = tuple(op.shape[:-1]) + (1,)
            self.node("MPSLayerNorm", input1_id=x[0], normalized_shape=[op.shape[-1]], weight_id=self.constant(w["gamma"]),
                      bias_id=self.constant(w["beta"]), eps=op.params["eps"], output1_id=out,
                      output2_id=self.value(stats), output3_id=self.value(stats))
        elif op.kind == "maxpool":
            k, s, p = op.params["k"], op.params["stride"], op.params["pad"]
            self.node("MPSMaxPool2DWithIndices", input1_id=x[0], kernel_height=k, kernel_width=k, stride_height=s,
                      stride_width=s, padding_left=p, padding_right=p, padding_top=p, padding_bottom=p,
                      dilation_height=1, dilation_width=1, ceil_mode=False, count_include_pad=True, divisor_override=0,
                      output1_id=out, output2_id=self.value(nchw(op.shape), I64))
        elif op.kind == "fc":
            weight = self.constant(w["w"])
            transposed = self.value(w["w"].shape[::-1])
            self.node("MPSPermute", input1_id=weight, output_id=transposed, num_dims=2, perm=[1, 0])
            self.node("MPSAddmm", input1_id=self.constant(w["b"]), input2_id=x[0], input3_id=transposed, output_id=out,
                      beta=1.0, alpha=1.0)
        elif op.kind == "scale":
            self.node("MPSMul", input1_id=x[0], input2_id=self.constant(np.array([op.params["factor"]])), output_id=out)
        elif op.kind == "global_avgpool":
            self.node("MPSMean", input1_id=x[0], output_id=out, num_dims=2, dims=[-2, -1], keep_dims=True)
        elif op.kind == "reshape":
            self.node("MPSView", input1_id=x[0], output_id=out, num_dims=len(op.shape), shape=list(op.shape))
        elif op.kind == "transpose":
            self.node("MPSPermute", input1_id=x[0], output_id=out, num_dims=len(op.shape), perm=list(op.params["perm"]))
        elif op.kind == "matmul":
            self.node("MPSMatMul", input1_id=x[0], input2_id=x[1], output_id=out)
        elif op.kind == "add":
            self.node("MPSAdd", input1_id=x[0], input2_id=x[1], output_id=out, alpha=1.0)
        else:
            one_input = {"relu": "MPSReLU", "softmax": "MPSSoftmax", "gelu": "MPSGELU"}
            extra = {"softmax": {"dim": -1, "half_to_float": False}, "gelu": {"approximate": "none"}}.get(op.kind, {})
            self.node(one_input[op.kind], input1_id=x[0], output_id=out, **extra)

    def document(self) -> dict[str, Any]:
        inputs = [i for i, op in enumerate(self.net.ops) if op.kind == "input"]
        for i, op in enumerate(self.net.ops):
            self.op(i, op)
            if self.fp16 and op.kind == "input":
                self.node("MPSCast", input1_id=self.value_of[i], output_id=self.value_of[i], dtype=F16)
        outputs = [self.value_of[i] for i in self.net.outputs]
        if self.fp16:
            for v in outputs:
                self.node("MPSCast", input1_id=v, output_id=v, dtype=F32)
        return {"version": "0", "mps_nodes": self.nodes, "mps_values": self.values,
                "input_ids": [self.value_of[i] for i in inputs], "output_ids": outputs,
                "constant_ids": self.constant_ids, "graph_type": "mps_graph", "constant_segment": {"offset": 0, "size": 0}}


def _align16(n: int) -> int:
    return -(-n // 16) * 16


def write_mps(net: Network, path: str | Path, *, fp16: bool = False) -> int:
    """Write the MPS payload of `net` to `path`; returns its size in bytes."""
    writer = _MpsWriter(net, fp16)
    doc = writer.document()
    flatbuffer = encode(load_schema("mps"), doc, file_identifier=b"MP00", size_hint=128 * len(writer.values) + (1 << 16))
    data_offset = _align16(HEADER + len(flatbuffer))
    data_size = _align16(writer.segment_end)
    with open(path, "wb") as f:
        f.write(struct.pack("<I4sQQ", 0, b"MP00", data_offset, data_size))
        f.write(flatbuffer)
        f.write(bytes(data_offset - HEADER - len(flatbuffer)))
        for array in writer.constants:
            f.write(memoryview(array).cast("B"))
        f.write(bytes(data_size - writer.segment_end))
    return data_offset + data_size
