"""Which integers a quantized nn graph computes: LiteRT's (the default) or Arm NN CpuRef's, a fact
of the graph (its meta, `SEMANTICS_KEY`) that `convert` sets, legalization may consult and the
lowering rules read. nn2tosa.lowering.semantics says where the two differ and why."""
from __future__ import annotations

from nn2tosa.ir import Graph

SEMANTICS = ("litert", "cpuref")
MEANING = {"litert": "TFLite's integer kernels", "cpuref": "Arm NN CpuRef's float32 emulation of them"}
DEFAULT = "litert"
SEMANTICS_KEY = "integer_semantics"


def semantics_of(graph: Graph) -> str:
    """The semantics `graph`'s quantized ops are lowered with."""
    return str(graph.meta.get(SEMANTICS_KEY, DEFAULT))


def set_semantics(graph: Graph, semantics: str) -> None:
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics {semantics!r}: one of {', '.join(SEMANTICS)}")
    graph.meta[SEMANTICS_KEY] = semantics
