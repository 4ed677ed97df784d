"""Partial conversion: the TOSA-expressible regions of a model whose other ops are unsupported.

A model may hold ops TOSA cannot express (control flow, a placeholder layer), or ops its user
wants run elsewhere (an SSD detector's DetectionPostProcess, on the CPU beside an NPU).
`convert(..., partial=True)` gives one TOSA function per supported region and a description
(the "sidecar", `PartialResult.partition`) of how a runtime stitches the functions and the ops left
to the host (run by the source runtime) back into the source graph.

How regions are found. The source graph is split, never the converted one, so every tensor that
crosses a region boundary is a source tensor (an Arm NN layer's output slot, an MPS node's result)
that the runtime knows:
1. Start with no op on the host, or with the ops the user asked to leave there (`host=`, e.g. an SSD's
   DetectionPostProcess, which converts, for a runtime that runs it on the CPU). Cut the source graph
   into regions (below), and convert each region
   on its own with a pass context that keeps unsupported ops (PassContext.keep_unsupported), so the passes
   leave what they cannot convert in place, listed in the context's remarks, instead of raising.
2. An op left unconverted whose operands all converted is a root failure: the source ops at its
   location go to the host. (Ops downstream of a failure may fail only because of it, so they get
   another chance in their own region.) Repeat until every region converts; each round moves at
   least one source op to the host, and a region that converted is not converted again.
Cutting: a value is available at stage 0 when it is a graph input or a constant; a supported op's
stage is the latest stage of its operands; a host op's results are available one stage after its
operands. A region is a connected set of supported ops of one stage. No path leaves a region and
comes back (it would cross a host op, which raises the stage), so each region is one function,
and running regions and host ops in `partition["steps"]` order respects every dependency.
Constants are not regions of their own: each region that reads one gets a copy.
For an NPU target (`npu=`, nn2tosa/npu_regions.py), a region that converts is also checked against what that
NPU runs (its profile, and Vela when installed); the source ops it refuses go to the host like a root failure
(`npu_refusals`), and everything may end on the host (then there is no function).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from nn2tosa.conversion import ProgressFn, finish, pass_pipeline, run_pipeline, source_op_list
from nn2tosa.diagnostics import Unsupported, UnsupportedError, UsageError
from nn2tosa.ir import INPUT_OP, Graph, Loc, TensorType, Value
from nn2tosa.passes.context import PassContext, Remarks
from nn2tosa.report import ConversionReport, constant_ops
from nn2tosa.result import Result

SIDECAR_VERSION = 1


class PartialResult(Result):
    """A partial conversion: `functions` (one per region, in execution order) and `partition`, the
    JSON-able description of how they and the host ops make up the source model. Under an NPU target
    `functions` may be empty: every op left to the host, each with why (`partition["host"]`)."""

    def __init__(self, functions: Sequence[Graph], report: ConversionReport, partition: dict[str, Any], **kw: Any):
        super().__init__(functions, report, **kw)
        self.partition = partition

    def sidecar(self, written: dict[str, list[str]] | None = None) -> dict[str, Any]:
        """The partition description; `written` (kind -> paths, as Result.write returns them) adds
        where each function's outputs were written."""
        out = dict(self.partition)
        if written:
            out["files"] = written
        return out


@dataclass
class _Region:
    stage: int
    nodes: list[int]  # in topological order


# ------------------------------------------------------------------------------ cutting
def _stages(graph: Graph, order: list[int], host: set[int], free: set[int]) -> dict[int, int]:
    """Stage of every op (see the module docstring); a host op's entry is the stage its results
    become available."""
    stage: dict[int, int] = {}
    for node in order:
        producers = {v.node for v in graph.operands(node)}
        s = max((stage[p] for p in producers if p not in free), default=0)
        stage[node] = s + 1 if node in host else s
    for node in free:
        stage[node] = 0
    return stage


def cut(graph: Graph, host: set[int], free: set[int]) -> tuple[list[_Region], dict[int, int]]:
    """The regions of supported ops, ordered by stage and then by first op; and the op stages."""
    order = graph.topological()
    stage = _stages(graph, order, host, free)
    supported = [n for n in order if n not in host and n not in free and graph.op(n) != INPUT_OP]
    position = {n: i for i, n in enumerate(order)}
    parent = {n: n for n in supported}

    def find(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for n in supported:
        for v in graph.operands(n):
            if v.node in parent and stage[v.node] == stage[n]:
                a, b = find(v.node), find(n)
                if a != b:
                    parent[max(a, b, key=position.__getitem__)] = min(a, b, key=position.__getitem__)
    groups: dict[int, list[int]] = {}
    for n in supported:
        groups.setdefault(find(n), []).append(n)
    regions = [_Region(stage[root], nodes) for root, nodes in groups.items()]
    regions.sort(key=lambda r: (r.stage, position[r.nodes[0]]))
    return regions, stage


# ------------------------------------------------------------------------------ naming tensors
class _Tensors:
    """A stable name for every source value that crosses a boundary, and what it is in the source."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.free: set[int] = set()  # the constants of the current cut
        self.names: dict[Value, str] = {}
        self.taken: set[str] = set()
        for node in graph.inputs:
            self._claim(Value(node, 0), graph.input_name(node))
        for out in graph.outputs:
            if out.value not in self.names:
                self._claim(out.value, out.name)

    def _claim(self, value: Value, wanted: str) -> str:
        name, k = wanted, 1
        while name in self.taken:
            k += 1
            name = f"{wanted}#{k}"
        self.taken.add(name)
        self.names[value] = name
        return name

    def name(self, value: Value) -> str:
        if value not in self.names:
            loc = self.graph.loc(value.node)
            # "layer name:result"; a constant (e.g. anchors an Arm NN layer holds) is "layer name:constant"
            suffix = "constant" if value.node in self.free else value.index
            self._claim(value, f"{loc.name if loc else f'%{value.node}'}:{suffix}")
        return self.names[value]

    def describe(self, value: Value) -> dict[str, Any]:
        """The source tensor: its type and what produces it (graph input, constant, or an op's result)."""
        g = self.graph
        t = g.type_of(value)
        d: dict[str, Any] = {"shape": list(t.shape), "dtype": t.dtype} if isinstance(t, TensorType) else {}
        if isinstance(t, TensorType) and t.quant is not None:
            d["quantization"] = {"scales": list(t.quant.scales), "zero_points": list(t.quant.zero_points),
                                 "axis": t.quant.axis}
        op, loc = g.op(value.node), g.loc(value.node)
        if op == INPUT_OP:
            d["source"] = {"graph_input": g.input_name(value.node)}
        else:
            d["source"] = {"op": op, "name": loc.name if loc else None, "where": loc.detail if loc else None,
                           "result": value.index, **({"constant": True} if value.node in self.free else {})}
        return d


# ------------------------------------------------------------------------------ one region as a graph
def crossing_values(graph: Graph, regions: list[_Region]) -> set[Value]:
    """Values of region ops that something outside their region reads (another region, a host op,
    the model's outputs)."""
    region_of = {n: k for k, r in enumerate(regions) for n in r.nodes}
    crossing = {o.value for o in graph.outputs if o.value.node in region_of}
    for u, v, r in graph.nx.edges(data="result"):
        if u in region_of and region_of.get(v) != region_of[u]:
            crossing.add(Value(u, r))
    return crossing


def region_graph(graph: Graph, region: _Region, name: str, tensors: _Tensors, free: set[int],
                 crossing: set[Value]) -> Graph:
    """The source ops of `region` as a graph of their own: operands from outside become inputs
    (named after the source tensor), constants are copied in, and the `crossing` values it computes
    become outputs."""
    inside = set(region.nodes)
    meta = {k: v for k, v in graph.meta.items() if isinstance(v, (str, int, float, bool))}
    g = Graph(name, meta)
    mapped: dict[Value, Value] = {}

    def operand(v: Value) -> Value:
        if v in mapped:
            return mapped[v]
        if v.node in free:  # a copy of the constant (the array itself is shared)
            node = g.add_op(graph.op(v.node), (), graph.types(v.node), graph.attrs(v.node), graph.loc(v.node))
            for i in range(len(graph.types(v.node))):
                mapped[Value(v.node, i)] = Value(node, i)
        else:
            mapped[v] = g.add_input(graph.type_of(v), tensors.name(v), graph.loc(v.node))
        return mapped[v]

    for node in region.nodes:
        operands = [operand(v) for v in graph.operands(node)]
        new = g.add_op(graph.op(node), operands, graph.types(node), graph.attrs(node), graph.loc(node))
        for i in range(len(graph.types(node))):
            mapped[Value(node, i)] = Value(new, i)
    for v in sorted(v for v in crossing if v.node in inside):
        g.add_output(mapped[v], tensors.name(v))
    return g


# ------------------------------------------------------------------------------ the driver
def _root_failures(g: Graph) -> set[Loc | None]:
    """Locations of the ops a converted region still holds that are not TOSA and whose operands are."""
    def left(node: int) -> bool:
        op = g.op(node)
        return op != INPUT_OP and not op.startswith("tosa.")

    return {g.loc(n) for n in g.nodes() if left(n) and not any(left(v.node) for v in g.operands(n))}


ASKED_FOR_HOST = "left to the host as asked (--host, host=)"


def asked_for_host(graph: Graph, names: Sequence[str]) -> tuple[set[int], list[Unsupported]]:
    """The source ops the user asked to leave to the host: each name is an op type (`DetectionPostProcess`
    or `armnn.DetectionPostProcess`) or a layer/node name; a name matching no op is a UsageError."""
    constants = constant_ops()
    ops = [n for n in graph.topological() if graph.op(n) != INPUT_OP and graph.op(n) not in constants]
    asked: set[int] = set()
    for name in names:
        matching = {n for n in ops if name in (graph.op(n), graph.op(n).split(".", 1)[-1])
                    or ((loc := graph.loc(n)) is not None and loc.name == name)}
        if not matching:
            raise UsageError(f"host {name!r}: no op of that type or name in the model")
        asked |= matching
    reasons = []
    for n in sorted(asked):
        loc = graph.loc(n)
        where = (f"{loc.detail} '{loc.name}'" if loc.detail else f"'{loc.name}'") if loc else f"%{n}"
        reasons.append(Unsupported(graph.op(n).split(".", 1)[-1], where, ASKED_FOR_HOST))
    return asked, reasons


def convert_partial(graph: Graph, report: ConversionReport, new_context: Callable[..., PassContext], *,
                    profile: str | Sequence[str] | None = None, passes: Sequence[str] | None = None,
                    progress: ProgressFn | None = None, host: Sequence[str] = (), npu: Any = None) -> PartialResult:
    """Convert the supported regions of `graph` (a source-level graph, consumed); see the module docstring.
    `new_context(keep_unsupported=...)` makes the pass context of each run (ConvertOptions.pass_context).
    `host` names ops to leave to the host even when they convert (asked_for_host). `npu` (an
    nn2tosa.npu_regions.NpuCheck) also sends to the host what that NPU does not run (npu_refusals)."""
    pipeline = pass_pipeline(graph, passes, report.model)
    source_ops = source_op_list(graph)
    constants = constant_ops()
    asked, reasons = asked_for_host(graph, host)
    done: dict[frozenset[int], tuple[Graph, dict, Remarks]] = {}  # converted regions, by their source ops
    tensors = _Tensors(graph)  # one naming for all rounds: a converted region keeps its input names
    if not asked:
        # Round 0 is the whole model as it is: when it all converts, the result is the usual conversion.
        whole = graph.copy()
        context = new_context(keep_unsupported=True)
        censuses = run_pipeline(whole, pipeline, report, context, progress)
        roots = _root_failures(whole) or npu_refusals(npu, whole, reasons)
        if not roots:
            ops = [n for n in graph.topological() if graph.op(n) != INPUT_OP and graph.op(n) not in constants]
            return _result(graph, [_Region(0, ops)], [(whole, censuses, context.remarks)], set(),
                           {n: 0 for n in ops}, tensors, [], report, source_ops, profile, new_context(), npu)
        reasons.extend(context.remarks.unsupported)
        asked = _located(graph, [n for n in graph.nodes() if graph.op(n) not in constants], roots,
                         context.remarks.unsupported, report)
    hosted = set(asked)  # the ops left to the host, growing each round
    for _ in range(len(graph) + 1):
        free = {n for n in graph.nodes() if graph.op(n) in constants and n not in hosted}
        tensors.free = free
        regions, stage = cut(graph, hosted, free)
        regions = [r for r in regions if r.nodes]
        crossing = crossing_values(graph, regions)
        failed: set[int] = set()
        for k, region in enumerate(regions):
            key = frozenset(region.nodes)
            if key in done:
                continue
            g = region_graph(graph, region, f"region{k}", tensors, free, crossing)
            context = new_context(keep_unsupported=True)
            censuses = run_pipeline(g, pipeline, report, context, progress)
            roots = _root_failures(g) or npu_refusals(npu, g, reasons)
            if not roots:
                done[key] = (g, censuses, context.remarks)
                continue
            reasons.extend(context.remarks.unsupported)
            failed |= _located(graph, region.nodes, roots, context.remarks.unsupported, report)
        if not failed:
            break
        hosted |= failed
    else:  # pragma: no cover - each round moves at least one op to the host
        raise AssertionError("partial conversion did not converge")
    # a region nothing outside reads (dead source ops) converts to nothing: no function for it
    regions = [r for r in regions if done[frozenset(r.nodes)][0].outputs]
    if not regions and npu is None:  # (for an NPU, all on the host is an answer: the sidecar says why)
        raise UnsupportedError(_unique(reasons) or [Unsupported("partial", report.model, "no op converts")])
    converted = [done[frozenset(r.nodes)] for r in regions]
    return _result(graph, regions, converted, hosted, stage, tensors, reasons, report, source_ops, profile,
                   new_context(), npu)


def _located(graph: Graph, nodes: Any, roots: set[Loc | None], unsupported: list[Unsupported],
             report: ConversionReport) -> set[int]:
    """The source ops among `nodes` at the locations of root failures (constants are not among `nodes`:
    they go with their readers, as the anchors an Arm NN DetectionPostProcess holds share its location)."""
    located = {n for n in nodes if graph.op(n) != INPUT_OP and graph.loc(n) in roots}
    if not located:  # a failure without a source location cannot be cut out: report it as a whole conversion would
        raise UnsupportedError(unsupported or
                               [Unsupported("partial", report.model, "an op without a source location failed")])
    return located


def _result(graph: Graph, regions: list[_Region], converted: list[tuple[Graph, dict, Remarks]], host: set[int],
            stage: dict[int, int], tensors: _Tensors, reasons: list[Unsupported], report: ConversionReport,
            source_ops: list, profile: str | Sequence[str] | None, context: PassContext,
            npu: Any = None) -> PartialResult:
    """The PartialResult of the converted regions; `context`: a fresh pass context of the conversion's options,
    which takes the regions' remarks for the report."""
    start = time.perf_counter()
    functions = []
    merged: dict[str, dict] = {}
    for k, (g, censuses, _) in enumerate(converted):
        g.name = "main" if len(converted) == 1 and not host else f"region{k}"
        functions.append(g)
        for stage_name, counts in censuses.items():
            merged.setdefault(stage_name, {}).update(counts)
    report.unsupported = [str(u) for u in _unique(reasons)]
    partition = _describe(graph, regions, functions, host, stage, tensors, reasons)
    partition["model"] = report.model
    if npu is not None:
        partition["npu"] = {"target": npu.target, **npu.decided_by()}
    report.time("partition", time.perf_counter() - start)
    # the remarks of the functions kept, in their order (the unsupported ops are `reasons`, above)
    context = replace(context, remarks=Remarks.merged(remarks for _, _, remarks in converted))
    result = finish(functions, source_ops, merged, report, profile, context, {graph.loc(n) for n in host},
                    empty_ok=True)
    return PartialResult(result.functions, report, partition, target=result.target, empty_ok=True)


def npu_refusals(npu: Any, g: Graph, reasons: list[Unsupported]) -> set[Loc | None]:
    """The source locations of the converted region `g` that the NPU of `npu` (an NpuCheck, or None: no
    NPU target) does not run; why each is refused goes into `reasons`."""
    if npu is None:
        return set()
    refused = npu.refusals(g)
    reasons.extend(u for _, u in refused)
    return {loc for loc, _ in refused}


def _unique(items: list[Unsupported]) -> list[Unsupported]:
    """The reasons, once each, without the lowering pass's echo of an op the legalization refused."""
    seen, out = set(), []
    for u in items:
        if u not in seen and u.why != "not legalized to the nn dialect":
            seen.add(u)
            out.append(u)
    return out


def _describe(graph: Graph, regions: list[_Region], functions: list[Graph], host: set[int], stage: dict[int, int],
              tensors: _Tensors, reasons: list[Unsupported]) -> dict[str, Any]:
    """The sidecar: functions with their inputs/outputs as source tensors, host ops, and the steps in order."""
    fns: list[dict[str, Any]] = []
    for region, g in zip(regions, functions):
        inputs = [{"name": g.input_name(v.node), "tosa_dtype": g.tensor_type(v).dtype} for v in g.input_values()]
        outputs = [{"name": o.name, "tosa_dtype": g.tensor_type(o.value).dtype} for o in g.outputs]
        fns.append({"name": g.name, "stage": region.stage, "inputs": inputs, "outputs": outputs,
                    "source_ops": [_source_op(graph, n) for n in region.nodes]})
    host_ops = []
    for node in sorted(host, key=lambda n: (stage[n], n)):
        loc = graph.loc(node)
        why = sorted({u.why for u in reasons if loc is not None and loc.name in u.where
                      and u.why != "not legalized to the nn dialect"})
        host_ops.append({**_source_op(graph, node), "stage": stage[node] - 1, "why": why,
                         "inputs": [tensors.name(v) for v in graph.operands(node)],
                         "outputs": [tensors.name(v) for v in graph.results(node)]})
    referenced = {t["name"] for f in fns for t in f["inputs"] + f["outputs"]}
    referenced |= {t for h in host_ops for t in h["inputs"] + h["outputs"]}
    referenced |= {tensors.name(v) for v in graph.input_values()} | {tensors.name(o.value) for o in graph.outputs}
    steps = []
    for s in range(max([r.stage for r in regions] + [h["stage"] + 1 for h in host_ops] + [0]) + 1):
        steps += [{"function": f["name"]} for f in fns if f["stage"] == s]
        steps += [{"host": h["name"], "where": h["where"]} for h in host_ops if h["stage"] == s]
    return {
        "version": SIDECAR_VERSION,
        "model": graph.name,
        "format": graph.meta.get("format"),
        "inputs": [tensors.name(v) for v in graph.input_values()],
        "outputs": [{"name": o.name, "tensor": tensors.name(o.value)} for o in graph.outputs],
        "tensors": {name: tensors.describe(v) for v, name in sorted(tensors.names.items(), key=lambda kv: kv[1])
                    if name in referenced},
        "functions": fns,
        "host": host_ops,
        "steps": steps,
    }


def _source_op(graph: Graph, node: int) -> dict[str, Any]:
    loc = graph.loc(node)
    op: dict[str, Any] = {"op": graph.op(node), "name": loc.name if loc else None,
                          "where": loc.detail if loc else None}
    if graph.op(node) == "executorch.kernel":  # a program's CPU operator call: what the host calls it with
        import json

        attrs = graph.attrs(node)
        op["call"] = {"operator": attrs["operator"], "arguments": json.loads(attrs["arguments"])}
    return op


# for nn2tosa.npu_regions, which cuts converted graphs into prefixes the same way
Region, Tensors = _Region, _Tensors
