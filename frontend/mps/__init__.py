"""ExecuTorch Apple-MPS graphs -> the IR: one `mps.*` op per MPSGraph node.

Accepted inputs (sniffed by content, see `sniff`):
- the MPS payload `MPSBackend.preprocess` returns (24-byte "MP00" header, flatbuffer, constant segment);
- a bare MPSGraph flatbuffer (older writers), constants inline in `MPSTensor.constant_buffer`;
- an ExecuTorch program (.pte): every MPSBackend delegate in it, inline or in a segment, gives one graph.

Conventions of the IR this frontend produces (docs/frontend_mps.md has the long form):
- Ops: `mps.<Member>` per MPSNodeUnion member without its "MPS" prefix (`mps.Conv2D`, `mps.Expand`,
  `mps.MaxPool2DWithIndices`); value ids become operands and results, every other table field an
  attribute under its schema name (enums by value name); see dialect.py for the layout rules,
  `operandSegmentSizes`/`resultSegmentSizes`, absent (-1) ids and clamp's `min_value`/`max_value`.
- Constants (`MPSGraph.constant_ids`) are `mps.constant` ops whose `value` is a numpy view into the
  input buffer (copies only for int4 unpacking and non-0/1 bool bytes, see constants.py).
- Types: TensorType with the declared dims (0-d `[]` and `[1]` kept as they are) and MLIR element types
  (f16, f32, bf16 as raw uint16 bits, i1, i4 unpacked into int8, i8 ... i64, ui8 ...). The backend declares
  the exported program's dtypes: in an fp16 graph, intermediate values are declared float32 although MPS
  computes them in float16; only the boundary casts say f16 explicitly. The IR keeps the declared types.
- The in-place boundary cast `MPSCast(x -> x)` becomes an `mps.Cast` whose result has the cast's element
  type; later readers of x (and the graph output) read that result, the graph input keeps its type.
- Graph inputs and outputs follow `input_ids` / `output_ids`, named `input{i}` / `output{i}` (MPS files
  carry no names). Locations: `Loc("node {i}", "<UnionMember>")` for node ops, `Loc("value {id}",
  "constant")` for constants, i = position in `mps_nodes`.
- `Graph.meta`: format "mps", version (the schema version string), graph_type ("mps_graph" or
  "metal_kernel"), dtype_numbering ("current" or "legacy", detected as dtypes.py explains), container
  ("payload", "flatbuffer" or "pte"); for a .pte also partition (k), plan, delegate (its index in the
  plan), delegate_data ("inline"/"segment") and cpu_operators (what the plan runs outside any delegate,
  comma separated).
- Graph names: "main" for a single graph; "partition{k}" for the k-th MPS delegate of a .pte that has
  several, so that MLIR function names stay unique.
- Errors: InvalidInputError (exit 2) naming the node index and type or the value id; UnsupportedError
  (exit 3) for element types nn2tosa has no type for (uint4, complex) and .pte files without MPS delegates.
"""
from __future__ import annotations

from nn2tosa import limits
from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.ir import Graph

from . import payload, pte

__all__ = ["sniff", "read"]


def sniff(data: memoryview) -> bool:
    """An MPS payload or bare MPSGraph flatbuffer ("MP00" at byte 4), or an ExecuTorch .pte."""
    return payload.sniff(data) or pte.sniff(data)


def read(data: memoryview, name: str, *, partitions: bool = False) -> list[Graph]:
    """The graphs in `data`: one for a payload; for a .pte, the whole program as one graph
    (program.py), or with `partitions` (and for a file without a plan to follow) one per MPS
    delegate. `name` is the file name (errors get it from the caller)."""
    from .reader import read_graph  # here, not at the top: sniffing another format must not load the reader

    if not pte.sniff(data):
        return [read_graph(data)]
    if not partitions:
        from .plan import read_plan
        from .program import build_program, is_trivial

        plan = read_plan(data)
        if plan is not None and not is_trivial(plan):
            return [build_program(plan, read_graph)]
    return _partitions(data)


def _partitions(data: memoryview) -> list[Graph]:
    from .reader import read_graph

    delegates = pte.find_delegates(data)
    graphs = []
    read: dict[tuple[int, int], Graph] = {}  # delegates may share data (ExecuTorch de-duplicates payloads)
    total_ops = 0
    for k, d in enumerate(delegates):
        where = f"delegate {k} ({d.location} data at offset 0x{d.start:x})"
        name = "main" if len(delegates) == 1 else f"partition{k}"
        shared = read.get((d.start, d.size))
        try:
            g = read_graph(data[d.start: d.start + d.size], name) if shared is None else shared.copy()
        except InvalidInputError as e:
            raise InvalidInputError(e.message, where=f"{where}: {e.where}" if e.where else where) from None
        read.setdefault((d.start, d.size), g)
        g.name = name
        # a small file naming one payload thousands of times must not make thousands of graphs
        total_ops += len(g)
        if total_ops > limits.current().max_ops:
            raise limits.LimitExceededError(
                f"its {k + 1} delegates hold {total_ops} operations together, above the limit of "
                f"{limits.current().max_ops} ({limits.flag('max_ops')})", where=where)
        g.meta.update(container="pte", partition=k, plan=d.plan, delegate=d.index, delegate_data=d.location,
                      cpu_operators=",".join(d.cpu_operators))
        graphs.append(g)
    return graphs
