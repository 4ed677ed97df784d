"""Which integers a quantized nn graph computes: LiteRT's (the default) or Arm NN CpuRef's, an option of
the conversion (nn2tosa.passes.context.PassContext.semantics) that legalization may consult and the
lowering rules read. nn2tosa.lowering.semantics says where the two differ and why."""
from __future__ import annotations

SEMANTICS = ("litert", "cpuref")
MEANING = {"litert": "TFLite's integer kernels", "cpuref": "Arm NN CpuRef's float32 emulation of them"}
DEFAULT = "litert"
