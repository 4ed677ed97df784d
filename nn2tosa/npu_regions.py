"""What an Ethos-U NPU runs of a converted graph, for `--target ... --partial` (regions the NPU runs whole,
the rest left to the host) and for `--target` alone (no `.tosa` Vela refuses).

Two rules, applied to each TOSA-level region a partial conversion makes (nn2tosa.partial):
1. The profile rule: an op needing more than the preset's profile (PRO-INT with EXT-INT16, EXT-INT4,
   EXT-DOUBLEROUND: a float op, say) is refused, with the profile or extension it needs. This is the
   whole rule when Vela is not installed.
2. Vela (nn2tosa.vela_support; `pip install nn2tosa[vela]`): the region is compiled for the preset's
   accelerator, and accepted when Vela places every operator on the NPU. Vela 5.2.0 offers no
   per-operator query for TOSA input and its refusal names its own operator type, not where it is; so
   the op it refuses is found by compiling prefixes of the region, cut at source-op boundaries (every
   TOSA op of one source layer/node together, the source ops in topological order), and bisecting for
   the shortest prefix Vela refuses: its last source op is the one. That is at most
   ceil(log2 L) compiles per refused op (L: the source ops of the region), plus one compile per
   region converted; `MAX_COMPILES` bounds a whole conversion (past it: UnsupportedError, not a guess).

A refused op goes to the host with why (the profile, or Vela's message, with the values it gives); the
partial conversion then cuts the source graph again. Boundaries are source tensors, so a quantized
region's inputs and outputs cross in their integer types, and the Dequantize / Quantize layers around
a float island (which need PRO-FP) go to the host with the island.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.ir import INPUT_OP, Graph, Loc, Value

MAX_COMPILES = 2000


def _where(loc: Loc | None, node: int) -> str:
    if loc is None:
        return f"%{node}"
    return f"{loc.detail} '{loc.name}'" if loc.detail else f"'{loc.name}'"


@dataclass
class NpuCheck:
    """The rules above for one preset; `compiles` counts the Vela compiles made (cached ones included)."""

    target: str  # the --target preset, e.g. "ethos-u55"
    use_vela: bool
    compiles: int = 0

    @classmethod
    def for_target(cls, target: str) -> NpuCheck:
        from nn2tosa.vela_support import vela_version

        return cls(target, vela_version() is not None)

    @property
    def accelerator(self) -> str:
        from nn2tosa.vela_support import ACCELERATORS

        return ACCELERATORS[self.target]

    @property
    def profile(self) -> str:
        from nn2tosa.lowering.npu_target import NPU_TARGETS

        return NPU_TARGETS[self.target].profile

    def decided_by(self) -> dict[str, Any]:
        """How the NPU's share was decided, for the sidecar and the report."""
        from nn2tosa.vela_support import vela_version

        if self.use_vela:
            return {"rule": f"vela {vela_version()}", "accelerator": self.accelerator, "profile": self.profile,
                    "vela_compiles": self.compiles}
        return {"rule": "profile", "profile": self.profile,
                "note": "Vela is not installed (pip install nn2tosa[vela]): only the profile rule decided"}

    # ---------------------------------------------------------------------------- the rules
    def refusals(self, graph: Graph) -> list[tuple[Loc | None, Unsupported]]:
        """The source locations of `graph` (TOSA-level) the NPU does not run, each with why: every op
        beyond the profile, else the first op Vela refuses (none when it compiles with all on the NPU)."""
        beyond = self.profile_refusals(graph)
        if beyond or not self.use_vela:
            return beyond
        return self.vela_refusals(graph)

    def profile_refusals(self, graph: Graph) -> list[tuple[Loc | None, Unsupported]]:
        from nn2tosa.conversion import beyond_profile
        from nn2tosa.options import parse_profile

        profiles, extensions = parse_profile(self.profile)
        needs: dict[Loc | None, dict[str, set[str]]] = {}  # loc -> what it needs -> the TOSA ops needing it
        first: dict[Loc | None, int] = {}
        for node, item in beyond_profile(graph, set(profiles) | set(extensions)):
            loc = graph.loc(node)
            first.setdefault(loc, node)
            needs.setdefault(loc, {}).setdefault(item, set()).add(graph.op(node).removeprefix("tosa.").upper())
        found = []
        for loc, items in needs.items():
            what = "; ".join(f"{item} ({', '.join(sorted(ops))})" for item, ops in sorted(items.items()))
            found.append((loc, Unsupported(self.target, _where(loc, first[loc]),
                                           f"needs {what}, which {self.target} lacks: its NPU runs {self.profile}")))
        return found

    def vela_refusals(self, graph: Graph) -> list[tuple[Loc | None, Unsupported]]:
        outcome = self._compile(graph)
        if outcome.all_on_npu:
            return []
        groups = source_groups(graph)
        message = outcome.message or f"{outcome.cpu_ops} operators left to the CPU"
        if not groups:  # every output is a graph input or a constant: no op to blame, nothing to leave to the host
            raise UnsupportedError([Unsupported(self.target, graph.name or "the graph", (
                f"Vela refuses it for {self.accelerator}: {message} (it has no operator for the NPU to run: "
                "every output is a graph input or a constant)"))])
        lo, hi = 1, len(groups)  # the shortest refused prefix is within [lo, hi]; the whole (hi) is refused
        while lo < hi:
            mid = (lo + hi) // 2
            part = prefix_graph(graph, [n for _, nodes in groups[:mid] for n in nodes])
            trial = self._compile(part) if part.outputs else None
            if trial is not None and not trial.all_on_npu:
                hi, message = mid, trial.message or f"{trial.cpu_ops} operators left to the CPU"
            else:
                lo = mid + 1
        loc, nodes = groups[hi - 1]
        ops = sorted({graph.op(n).removeprefix("tosa.").upper() for n in nodes})
        why = f"Vela refuses it for {self.accelerator}: {message} (its TOSA operators: {', '.join(ops)}"
        named = [_describe(graph, n) for n in nodes if _vela_name_matches(graph.op(n), message)]
        return [(loc, Unsupported(self.target, _where(loc, nodes[0]), why + "".join(f"; {d}" for d in named[:3]) + ")"))]

    def _compile(self, graph: Graph) -> Any:
        from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
        from nn2tosa.vela_support import compile_tosa

        self.compiles += 1
        if self.compiles > MAX_COMPILES:
            raise UnsupportedError([Unsupported("vela", self.target, f"more than {MAX_COMPILES} Vela compiles to "
                                                "find what the NPU runs: too many ops it refuses")])
        return compile_tosa(bytes(build_flatbuffer(graph)), self.accelerator, graph.name or "region")

    def refuse_whole(self, graph: Graph) -> None:
        """For `--target` without `--partial`: UnsupportedError naming the op the NPU does not run
        (Vela's rule; the profile is fit_target's), suggesting --partial; nothing when Vela is absent."""
        if not self.use_vela:
            return
        refused = self.vela_refusals(graph)
        if refused:
            raise with_partial_hint(UnsupportedError([u for _, u in refused]))


def with_partial_hint(error: UnsupportedError) -> UnsupportedError:
    """The error of a conversion for an NPU, each item suggesting the partial conversion that leaves it to the host."""
    return UnsupportedError([Unsupported(u.what, u.where, f"{u.why}; convert with --partial (partial=True) to leave "
                                         "it to the host") for u in error.items], file=error.file)


def _vela_name_matches(op: str, message: str) -> bool:
    """Whether the TOSA `op` is what Vela's message names in its own terms ("operation (Xor)" for
    BITWISE_XOR, "(ReduceMax)" for REDUCE_MAX, "(Not)" for LOGICAL_NOT)."""
    named = message.partition("operation (")[2].partition(")")[0].lower()
    return bool(named) and op.removeprefix("tosa.").replace("_", "").lower().endswith(named)


def _describe(graph: Graph, node: int) -> str:
    """One TOSA op with the values Vela judges: its operands (shape operands by value), results and
    scalar attributes, e.g. `RESIZE(tensor<1x3x4x2xi8>, [2, 1, 2, 1], [-1, -1], [0, 0]) -> tensor<1x6x8x2xi8>
    {mode=NEAREST_NEIGHBOR}`."""
    operands = []
    for v in graph.operands(node):
        values = graph.attrs(v.node).get("values") if graph.op(v.node) == "tosa.const_shape" else None
        operands.append(str([int(x) for x in values]) if values is not None else str(graph.type_of(v)))
    attrs = {k: a for k, a in graph.attrs(node).items() if isinstance(a, (str, int, float, bool))}
    text = f"{graph.op(node).removeprefix('tosa.').upper()}({', '.join(operands)}) -> " \
           f"{', '.join(str(t) for t in graph.types(node))}"
    return text + (" {" + ", ".join(f"{k}={a}" for k, a in sorted(attrs.items())) + "}" if attrs else "")


# ------------------------------------------------------------------------------ prefixes of a graph
def source_groups(graph: Graph) -> list[tuple[Loc | None, list[int]]]:
    """The TOSA ops of `graph` grouped by source location, the groups in order of first appearance in a
    topological order (constants and graph inputs left out: a prefix copies the constants it reads)."""
    groups: dict[Loc | None, list[int]] = {}
    for node in graph.topological():
        if graph.op(node) != INPUT_OP and graph.operands(node):
            groups.setdefault(graph.loc(node), []).append(node)
    return list(groups.items())


def prefix_graph(graph: Graph, nodes: list[int]) -> Graph:
    """`nodes` of the TOSA-level `graph` as a graph of their own (nn2tosa.partial.region_graph): what they
    read from outside becomes inputs, the constants they read are copied in, and what outside them
    reads (or the graph outputs) becomes outputs."""
    from nn2tosa.partial import Region, Tensors, region_graph

    inside = set(nodes)
    free = {n for n in graph.nodes() if graph.op(n) != INPUT_OP and not graph.operands(n)}
    crossing = {o.value for o in graph.outputs if o.value.node in inside}
    for u, v, r in graph.nx.edges(data="result"):
        if u in inside and v not in inside:
            crossing.add(Value(u, r))
    tensors = Tensors(graph)
    tensors.free = free
    return region_graph(graph, Region(0, [n for n in graph.topological() if n in inside]), "prefix", tensors, free,
                        crossing)
