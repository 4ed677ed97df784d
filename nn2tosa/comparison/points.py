"""Where each source layer's output can be seen in a converted graph.

Every op a pass creates keeps the location (Loc) of the source layer or node it came from, so the
ops carrying a layer's location form its lowering, and the value such an op hands to an op of another
location (or to a graph output) is the layer's output as the converted graph holds it: its
*boundary value*. A source tensor (layer, output slot) is compared at its boundary value, found by:

- a graph output: source output k is the converted graph's output k;
- a layer with one output: its last boundary value holding as many elements;
- several outputs: the boundary value read by the ops of the layers that read that slot;
- a layer canonicalize fused into its producer (an activation into a clamp, a batch norm into a
  convolution's weights): the producer's boundary value, which now holds the fused layer's result;
  the producer's own output is then *not visible* and is not compared;
- a layer that became no op (an identity, a reshape the next layer absorbed): its producer's value,
  when that holds the same elements in the same order;
- a layer folded at compile time: the constant carrying its location.

The same search over the nn-level graph (after legalization, before any fusion) finds where the
float reference (nn2tosa.comparison.nn_numpy) holds each source tensor.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote

from nn2tosa.ir import INPUT_OP, Graph, Loc, TensorType, Value

CONSTANT_OPS = ("tosa.const", "tosa.const_shape", "nn.constant", "armnn.Constant", "mps.constant")
_RESHAPES = re.compile(r"Reshape|View|Flatten|Squeeze|Unsqueeze|ExpandDims|reshape|Identity|identity")
# an activation a quantized producer's output range already applies (canonicalize removes it): its
# effect is in the producer's output, as a fused layer's is
_ACTIVATIONS = re.compile(r"Activation|ReLU|Relu|relu|Clamp|clamp|HardTanh|Clip")
_NHWC_OPS = {"tosa.conv2d", "tosa.depthwise_conv2d", "tosa.transpose_conv2d", "tosa.max_pool2d", "tosa.avg_pool2d",
             "tosa.resize"}


@dataclass
class Point:
    """One source tensor to compare: a layer's output slot, in the source graph's terms."""

    key: str  # "LAYER:SLOT": the .npy name of the tensor (quoted), the Arm NN layer / MPS node and the slot
    layer: str  # the layer's name (Arm NN) or "node I" (MPS)
    where: str | None  # the location's detail: "layer 3", or the MPS node type
    op: str  # the source op, e.g. armnn.Convolution2d
    slot: int
    type: TensorType  # the source tensor's type (shape, dtype, quantization)
    order: int  # position in the source graph's order
    status: str = "lowered"  # as the conversion report says: lowered, folded, fused, removed, unsupported
    note: str = ""  # how it is compared when not at its own ops ("fused into conv1", "not visible: ...")
    feeds: list[str] = field(default_factory=list)  # the keys of the source tensors it reads
    value: Value | None = None  # where the converted graph holds it (None: not visible)
    graph: str = ""  # the name of the converted graph holding `value`
    transposed: bool = False  # `value` is NHWC where the source tensor (or its producer's) is NCHW
    loc: Loc | None = None  # the source op's location

    @property
    def file_name(self) -> str:
        return quote(self.key, safe=":-._ ") + ".npy"


def tensor_key(loc: Loc | None, node: int, slot: int) -> str:
    return f"{loc.name if loc else f'%{node}'}:{slot}"


def source_points(source: Graph, statuses: dict[Loc | None, str]) -> tuple[list[Point], dict[Value, Point]]:
    """One Point per output slot of every non-constant source op, in graph order, and the Point of
    each source value (graph inputs get Points too, marked status "input")."""
    points: list[Point] = []
    by_value: dict[Value, Point] = {}
    taken: set[str] = set()
    for node in source.topological():
        op = source.op(node)
        if op in CONSTANT_OPS:
            continue
        loc = source.loc(node)
        for value in source.results(node):
            t = source.type_of(value)
            if not isinstance(t, TensorType):
                continue
            if op == INPUT_OP:
                key, layer = f"{source.input_name(node)}:0", source.input_name(node)
                status = "input"
            else:
                key, layer = tensor_key(loc, node, value.index), (loc.name if loc else f"%{node}")
                if key in taken and loc is not None:  # a repeated layer name: told apart by its detail
                    key = f"{loc.name} ({loc.detail}):{value.index}"
                status = statuses.get(loc, "lowered")
            taken.add(key)
            feeds = [by_value[v].key for v in source.operands(node) if v in by_value] if op != INPUT_OP else []
            p = Point(key, layer, loc.detail if loc else None, op, value.index, t, len(points), status, feeds=feeds,
                      loc=loc)
            points.append(p)
            by_value[value] = p
    return points, by_value


def boundary_values(graph: Graph) -> dict[Loc | None, list[Value]]:
    """Per location, the values its ops hand to ops of other locations or to graph outputs, in graph
    order (constants only where the location has nothing else: a folded layer)."""
    found: dict[Loc | None, list[Value]] = {}
    constants: dict[Loc | None, list[Value]] = {}
    for node in graph.topological():
        op = graph.op(node)
        if op == INPUT_OP:
            continue
        loc = graph.loc(node)
        for value in graph.results(node):
            if not isinstance(graph.type_of(value), TensorType):
                continue
            leaves = graph.is_output(value) or any(graph.loc(u.node) != loc for u in graph.users(value))
            if leaves:
                (constants if op in CONSTANT_OPS else found).setdefault(loc, []).append(value)
    for loc, values in constants.items():
        found.setdefault(loc, values)
    return found


Anchor = tuple[Point, Value, str]  # a source tensor known to be this value of the converted graph of that name


def place(points: list[Point], source: Graph, by_value: dict[Value, Point], graphs: list[Graph],
          inputs: list[Anchor] | None = None, outputs: list[Anchor] | None = None) -> None:
    """Set each Point's `value` and `graph` to where `graphs` (the converted functions, then the
    graphs their control flow runs) hold it, with a note where that is not at its own ops. `inputs`
    and `outputs` say which source tensors the functions' inputs and outputs are (default: the
    source graph's inputs and outputs are the first function's)."""
    main = graphs[0]
    if inputs is None:
        inputs = [(by_value[Value(n, 0)], Value(m, 0), main.name) for n, m in zip(source.inputs, main.inputs)]
    if outputs is None:
        outputs = [(by_value[o.value], m.value, main.name) for o, m in zip(source.outputs, main.outputs)
                   if o.value in by_value]
    _place(points, source, by_value, graphs, inputs, outputs)
    nchw_source = source.meta.get("format") == "mps"  # PyTorch's layout, made NHWC by the layout pass
    layouts = {g.name: nhwc_values(g) for g in graphs} if nchw_source else {}
    for p in points:
        if p.value is None:
            continue
        t = next(g for g in graphs if g.name == p.graph).tensor_type(p.value)
        if nchw_source:
            p.transposed = p.value in layouts[p.graph]
        else:  # an NHWC-only TOSA op computing an NCHW Arm NN layer: told by the shapes alone
            s = p.type.shape
            p.transposed = len(s) == 4 and s != t.shape and t.shape == (s[0], s[2], s[3], s[1])


def nhwc_values(graph: Graph) -> set[Value]:
    """The rank-4 values of a converted graph laid out NHWC where the source's are NCHW: the results of
    TOSA's NHWC-only ops and of transposes to NHWC, and what elementwise ops make of those (graph inputs
    and outputs are in the source's layout)."""
    found: set[Value] = set()
    for node in graph.topological():
        op = graph.op(node)
        for value in graph.results(node):
            t = graph.type_of(value)
            if not isinstance(t, TensorType) or t.rank != 4 or op == INPUT_OP:
                continue
            if op in _NHWC_OPS:
                found.add(value)
            elif op == "tosa.transpose":
                if list(graph.attrs(node).get("perms", ())) == [0, 2, 3, 1]:
                    found.add(value)
            elif any(v in found and graph.tensor_type(v).shape == t.shape for v in graph.operands(node)):
                found.add(value)
    return found


def _place(points: list[Point], source: Graph, by_value: dict[Value, Point], graphs: list[Graph],
           inputs: list[Anchor], outputs: list[Anchor]) -> None:
    placed: dict[str, tuple[Value, str]] = {}
    owner: dict[tuple[str, Value], Point] = {}

    def claim(p: Point, value: Value, graph: str) -> None:
        previous = owner.get((graph, value))
        if previous is not None and _absorbed(p):
            previous.value, previous.note = None, f"not visible: {p.layer} is fused into it (compared there)"
        elif previous is not None and _absorbed(previous):  # (an output layer fused into p)
            p.note = f"not visible: {previous.layer} is fused into it (compared there)"
            placed[p.key] = (value, graph)
            return
        p.value, p.graph = value, graph
        owner[(graph, value)] = p
        placed[p.key] = (value, graph)

    for p, value, graph in inputs:  # where layers that became no op read them
        placed[p.key] = (value, graph)
    for p, value, graph in outputs:
        claim(p, value, graph)
    boundaries = [(g, boundary_values(g)) for g in graphs]
    for node in source.topological():
        op = source.op(node)
        if op in CONSTANT_OPS or op == INPUT_OP:
            continue
        results = [by_value[v] for v in source.results(node) if v in by_value]
        for p in results:
            if p.key in placed:
                continue
            own = _own_value(p, node, source, boundaries, len(results))
            if own is not None:
                claim(p, *own)
                continue
            producer = _producer(source, node, by_value)
            if producer is None or producer.key not in placed:
                p.note = p.note or "not visible: no value of its own in the converted graph"
                continue
            same_order = p.type.shape == producer.type.shape or bool(_RESHAPES.search(op))
            if _absorbed(p) and same_order:
                claim(p, *placed[producer.key])
                p.note = (f"{'fused into' if p.status == 'fused' else 'applied by the output range of'} "
                          f"{producer.layer}: compared at its output")
            elif same_order and p.type.num_elements == producer.type.num_elements:
                p.value, p.graph = placed[producer.key]
                placed[p.key] = placed[producer.key]
                p.note = f"{p.status}: the same values as {producer.layer}'s output"
            elif p.status == "fused":
                readers = sorted({_name(source.loc(u.node)) for v in source.results(node) if v.index == p.slot
                                  for u in source.users(v)})
                p.note = f"not visible: fused into {', '.join(readers) or 'its readers'}"
            else:
                p.note = "not visible: no value of its own in the converted graph"


def _name(loc: Loc | None) -> str:
    return loc.name if loc is not None else "?"


def _absorbed(p: Point) -> bool:
    """Whether p's effect went into its producer's output (fused, or an activation a quantized output
    range applies)."""
    return p.status == "fused" or (p.status == "removed" and p.type.quant is not None
                                   and bool(_ACTIVATIONS.search(p.op)))


def _own_value(p: Point, node: int, source: Graph, boundaries: list[tuple[Graph, dict]],
               slots: int) -> tuple[Value, str] | None:
    """Where the ops of p's layer (source `node`, with `slots` outputs) hand p's value on, if they do."""
    loc = source.loc(node)
    for g, found in boundaries:
        candidates = [v for v in found.get(loc, []) if g.tensor_type(v).num_elements == p.type.num_elements]
        if not candidates:
            continue
        if slots == 1:
            exact = [v for v in candidates if g.tensor_type(v).shape == p.type.shape]
            return (exact or candidates)[-1], g.name
        # several slots: the candidate the ops of this slot's readers read at the same operand
        # position, else one they read at all, else the slot's place among the candidates
        uses = [(source.loc(u.node), u.operand) for v in source.results(node)
                if v.index == p.slot for u in source.users(v)]
        for matches in (lambda v: any((g.loc(u.node), u.operand) in uses for u in g.users(v)),
                        lambda v: any(g.loc(u.node) in {r for r, _ in uses} for u in g.users(v))):
            chosen = [v for v in candidates if matches(v)]
            if len(chosen) == 1:
                return chosen[0], g.name
        if p.slot < len(candidates):
            return candidates[p.slot], g.name
    return None


def _producer(source: Graph, node: int, by_value: dict[Value, Point]) -> Point | None:
    """The one non-constant tensor `node` reads (None when it reads several or none)."""
    data = [by_value[v] for v in source.operands(node) if v in by_value]
    return data[0] if len(data) == 1 else None




__all__ = ["Point", "source_points", "boundary_values", "place", "tensor_key", "CONSTANT_OPS"]
