"""The `layout` pass: sink transposes through layout-agnostic ops until they cancel.

Legalizing an NCHW source wraps every NHWC-only op (conv, pool, resize, ...) in a pair of
transposes, so between two such ops the network computes in NCHW: conv -> T(NHWC->NCHW) ->
relu -> add -> T(NCHW->NHWC) -> conv. This pass moves the transposes down through the ops that
do not care about layout (elementwise ops, casts, clamp, pad, concat, reductions, softmax-like
axis ops, slices, reverse, tile, broadcast_to, batch norm, reshapes that only add or drop unit
dimensions) so that the pairs meet and cancel, and a uniformly NCHW network keeps transposes only
at its inputs and outputs.

How: one walk in topological order with *pending* transposes. For each value the walk records
`placed[v] = (phys, perm)`, meaning v == transpose(phys, perm), without creating the transpose.
- A transpose of a placed value composes perms (a pair that cancels leaves the identity).
- A layout-agnostic op whose data operands are pending chooses a frame P (one of its operands'
  perms, or none), computes on the operands brought into that frame (a pending operand whose perm
  is P is used as it is; a constant is transposed at compile time; an operand that already has a
  transpose with the needed perm in the graph reuses it; anything else gets a new transpose), with
  its attributes (axes, pads, begins, ...) permuted, and its results become pending with perm P
  (or the perm that remains after a reduction/reshape). It picks the frame needing the fewest
  new transposes, preferring to keep the transpose pending on a tie (it may cancel further down).
- Any other op, and every graph output, gets its operands materialized: a transpose is created
  only there (once per value and perm), or a transposed constant.
- A flatten reshape feeding only fully_connected ops with constant weights takes the transpose
  into the weights instead (the columns are permuted), so NCHW CNNs ending in flatten + FC keep
  no transpose in front of the classifier.
Every op is visited once: linear in the number of ops (times the operand count).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn2tosa.ir import Graph, Loc, Quant, TensorType, Value, op_def

from .fold import constant_value
from .manager import register_pass
from .rewrite import fold_op, is_trivially_dead

Perm = tuple[int, ...]
Attrs = dict[str, Any]


# ------------------------------------------------------------------------------ permutation algebra
def identity(rank: int) -> Perm:
    return tuple(range(rank))


def is_identity(perm: Perm) -> bool:
    return all(i == p for i, p in enumerate(perm))


def compose(first: Perm, then: Perm) -> Perm:
    """transpose(transpose(x, first), then) == transpose(x, compose(first, then))."""
    return tuple(first[i] for i in then)


def inverse(perm: Perm) -> Perm:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def moves_only_unit_dims(shape: tuple[int, ...], perm: Perm) -> bool:
    """transpose(x, perm) keeps the elements in the same order (it only moves dimensions of size 1):
    a reshape does the same."""
    big = [p for p in perm if shape[p] != 1]
    return big == sorted(big)


def transposed_type(t: TensorType, perm: Perm) -> TensorType:
    """The type of transpose(x: t, perm): dimensions permuted, a per-axis quantization axis follows."""
    quant = t.quant
    if quant is not None and quant.axis is not None:
        quant = Quant(quant.scales, quant.zero_points, inverse(perm)[quant.axis], quant.expressed)
    return TensorType(tuple(t.shape[p] for p in perm), t.dtype, quant)


def per_dim(values: list[Any], perm: Perm) -> list[Any]:
    """A per-dimension list of a logical tensor, for its physical tensor (logical = transpose(phys, perm))."""
    inv = inverse(perm)
    return [values[inv[j]] for j in range(len(perm))]


def drop_axes(perm: Perm, axes: set[int]) -> Perm:
    """The perm left between logical and physical results when `axes` (logical) are removed from both."""
    kept = [i for i in range(len(perm)) if i not in axes]
    rank_of = {p: k for k, p in enumerate(sorted(perm[i] for i in kept))}
    return tuple(rank_of[perm[i]] for i in kept)


# ------------------------------------------------------------------------------ transfer rules
# rule(attrs, P, operand types, result types) -> (physical attrs, perm of each result) or None when
# the op cannot compute in frame P. Operand and result types are the logical ones.
Rule = Callable[[Attrs, Perm, list[TensorType], list[TensorType]], "tuple[Attrs, list[Perm]] | None"]


@dataclass(frozen=True)
class Transfer:
    rule: Rule
    all_operands: bool = False  # every operand is data in frame P (elementwise, concat); else only operand 0


def _unchanged(attrs: Attrs, P: Perm, ins: list[TensorType], outs: list[TensorType]) -> tuple[Attrs, list[Perm]]:
    return dict(attrs), [P] * len(outs)


def _axis_rule(name: str) -> Rule:
    def rule(attrs, P, ins, outs):
        return {**attrs, name: P[attrs[name]]}, [P] * len(outs)
    return rule


def _axes_rule(name: str) -> Rule:
    def rule(attrs, P, ins, outs):
        return {**attrs, name: sorted(P[a] for a in attrs[name])}, [P] * len(outs)
    return rule


def _per_dim_rule(*names: str) -> Rule:
    def rule(attrs, P, ins, outs):
        return {**attrs, **{n: per_dim(list(attrs[n]), P) for n in names}}, [P] * len(outs)
    return rule


def _pad_rule(attrs, P, ins, outs):
    pairs = [attrs["pads"][2 * i: 2 * i + 2] for i in range(len(P))]
    return {**attrs, "pads": [p for pair in per_dim(pairs, P) for p in pair]}, [P]


def _reduction_rule(attrs, P, ins, outs):
    axes = attrs["axes"]
    result = P if attrs["keep_dims"] else drop_axes(P, set(axes))
    return {**attrs, "axes": sorted(P[a] for a in axes)}, [result]


def _arg_rule(attrs, P, ins, outs):
    axis = attrs["axis"]
    return {**attrs, "axis": P[axis]}, [P if attrs["keep_dims"] else drop_axes(P, {axis})]


def _broadcast_to_rule(attrs, P, ins, outs):
    if ins[0].rank != len(P):
        return None
    return {**attrs, "shape": per_dim(list(attrs["shape"]), P)}, [P]


def _channels_last_rule(attrs, P, ins, outs):
    return (dict(attrs), [P]) if P[-1] == len(P) - 1 else None


def _reshape_rule(attrs, P, ins, outs):
    """A reshape that only inserts or removes unit dimensions keeps the order of the others, so it
    can reshape the physical tensor instead; the result stays pending with the perm of what is left."""
    s, t = ins[0].shape, tuple(attrs["shape"])
    if [d for d in s if d != 1] != [d for d in t if d != 1]:
        return None
    big_in = [i for i, d in enumerate(s) if d != 1]  # logical input dims of size > 1, in order
    big_out = [j for j, d in enumerate(t) if d != 1]  # the output dims they become
    in_phys_order = sorted(big_in, key=lambda i: P[i])
    shape = list(t)
    for pos, i in zip(big_out, in_phys_order):
        shape[pos] = s[i]
    result = list(range(len(t)))
    for j, i in zip(big_out, big_in):
        result[j] = big_out[in_phys_order.index(i)]
    return {**attrs, "shape": shape}, [tuple(result)]


TRANSFERS: dict[str, Transfer] = {
    "nn.concat": Transfer(_axis_rule("axis"), all_operands=True),
    "nn.split": Transfer(_axis_rule("axis")),
    "nn.pad": Transfer(_pad_rule),
    "nn.slice": Transfer(_per_dim_rule("begin", "size")),
    "nn.strided_slice": Transfer(_per_dim_rule("begin", "end", "strides")),
    "nn.tile": Transfer(_per_dim_rule("multiples")),
    "nn.reverse": Transfer(_axes_rule("axes")),
    "nn.broadcast_to": Transfer(_broadcast_to_rule),
    "nn.softmax": Transfer(_axis_rule("axis")),
    "nn.log_softmax": Transfer(_axis_rule("axis")),
    "nn.batch_norm": Transfer(_axis_rule("axis")),
    "nn.l2_normalize": Transfer(_axes_rule("axes")),
    "nn.local_response_norm": Transfer(_channels_last_rule),
    "nn.argmax": Transfer(_arg_rule),
    "nn.argmin": Transfer(_arg_rule),
    "nn.reshape": Transfer(_reshape_rule),
    **{f"nn.{r}": Transfer(_reduction_rule) for r in
       ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_any", "reduce_all")},
    # per-element ops without the elementwise trait (their types carry the quantization)
    **{f"nn.{q}": Transfer(_unchanged, all_operands=True) for q in ("quantize", "dequantize", "requantize")},
}
ELEMENTWISE = Transfer(_unchanged, all_operands=True)


def transfer_of(op: str) -> Transfer | None:
    """How `op` computes in another frame, or None when it is layout-sensitive."""
    found = TRANSFERS.get(op)
    if found is None and op.startswith("nn."):
        d = op_def(op)
        if d is not None and "elementwise" in d.traits:
            return ELEMENTWISE
    return found


# ------------------------------------------------------------------------------ the walk
@dataclass
class LayoutStats:
    moved: int = 0  # ops now computing in a transposed frame
    transposes: int = 0  # transposes created where a pending one had to be materialized
    constants: int = 0  # constants transposed at compile time
    fc_weights: int = 0  # flatten + fully_connected that took a transpose into their weights
    visited: int = 0


@dataclass
class _Walk:
    graph: Graph
    stats: LayoutStats = field(default_factory=LayoutStats)
    placed: dict[Value, tuple[Value, Perm]] = field(default_factory=dict)
    # (value, perm) -> a value holding transpose(value, perm): the graph's own transposes, then ours
    available: dict[tuple[Value, Perm], Value] = field(default_factory=dict)
    # the transposes the rewritten graph reads: reusing one costs nothing, an unused one still costs one
    in_use: set[Value] = field(default_factory=set)
    plans: dict[tuple[Value, Perm], frozenset] = field(default_factory=dict)  # memo of `sites`
    retired: set[int] = field(default_factory=set)  # old ops the walk replaced: erased when dead
    created: list[int] = field(default_factory=list)  # ops the walk made: erased when left unused

    def _add(self, op: str, operands: list[Value], t: TensorType, attrs: Attrs, loc: Loc | None) -> Value:
        node = self.graph.add_op(op, operands, [t], attrs, loc)
        self.created.append(node)
        return Value(node, 0)

    # ---- values and frames
    def where(self, v: Value) -> tuple[Value, Perm] | None:
        return self.placed.get(v)

    def materialize(self, phys: Value, perm: Perm, loc: Loc | None) -> Value:
        """A value equal to transpose(phys, perm): phys itself, a known one, a folded constant or a new transpose."""
        if is_identity(perm):
            return phys
        found = self.available.get((phys, perm))
        if found is not None and found.node in self.graph:
            self.in_use.add(found)
            return found
        g = self.graph
        source = g.tensor_type(phys)  # what an nn.transpose reads or an nn op computes
        t = transposed_type(source, perm)
        data = constant_value(g, phys)
        if data is not None:
            value = self._add("nn.constant", [], t, {"value": np.ascontiguousarray(data.transpose(perm))},
                              g.loc(phys.node))
            self.stats.constants += 1
        elif moves_only_unit_dims(source.shape, perm):
            value = self._add("nn.reshape", [phys], t, {"shape": list(t.shape)}, loc)
        else:
            value = self._add("nn.transpose", [phys], t, {"perm": list(perm)}, loc)
            self.stats.transposes += 1
        self.available[(phys, perm)] = value
        self.in_use.add(value)
        return value

    def known_constant(self, v: Value) -> np.ndarray | None:
        """v's data when it is a constant or transposes of one (pending, or not visited yet)."""
        g = self.graph
        phys, perm = self.where(v) or (v, ())
        while constant_value(g, phys) is None and g.op(phys.node) == "nn.transpose":
            inner = tuple(g.attrs(phys.node)["perm"])
            perm = compose(inner, perm) if perm else inner
            phys = g.operand(phys.node, 0)
        data = constant_value(g, phys)
        if data is None:
            return None
        return data.transpose(perm) if perm else data

    def reusable(self, phys: Value, perm: Perm) -> bool:
        """transpose(phys, perm) is already in the rewritten graph (or is a constant: folded for free)."""
        return self.available.get((phys, perm)) in self.in_use or constant_value(self.graph, phys) is not None

    def logical(self, v: Value) -> Value:
        """A value equal to v in the graph as it is being rewritten."""
        placed = self.where(v)
        if placed is None:
            return v
        return self.materialize(placed[0], placed[1], self.graph.loc(v.node))

    def _expanded(self, v: Value, rank: int) -> Value:
        """v (of lower rank, broadcast against `rank`) reshaped to `rank` with leading unit dimensions."""
        g = self.graph
        value = self.logical(v)
        t = g.tensor_type(value)
        shape = (1,) * (rank - t.rank) + tuple(t.shape)
        data = constant_value(g, value)
        if data is not None:
            return self._add("nn.constant", [], t.with_shape(shape), {"value": data.reshape(shape)}, g.loc(v.node))
        return self._add("nn.reshape", [value], t.with_shape(shape), {"shape": list(shape)}, g.loc(v.node))

    def frame_cost(self, v: Value, P: Perm) -> int | None:
        """New transposes needed to use operand v in frame P (None: impossible)."""
        g = self.graph
        t = g.type_of(v)
        if not isinstance(t, TensorType) or t.rank > len(P):
            return None
        if t.num_elements == 1:
            return 0
        placed = self.where(v) or (v, identity(t.rank))
        if t.rank < len(P):
            if t.quant is not None and t.quant.axis is not None:
                return None
            return 0 if constant_value(g, placed[0]) is not None else 1
        phys, p = placed
        needed = compose(p, inverse(P))
        if is_identity(needed) or self.reusable(phys, needed):
            return 0
        return 1

    def in_frame(self, v: Value, P: Perm) -> Value:
        """w with transpose(w, P) equal to v (broadcast to P's rank; a tensor, as frame_cost found)."""
        g = self.graph
        t = g.tensor_type(v)
        placed = self.where(v) or (v, identity(t.rank))
        if t.num_elements == 1 and t.rank <= len(P):
            return placed[0]  # one element: every layout is the same data (shapes are all ones)
        if t.rank < len(P):
            placed = (self._expanded(v, len(P)), identity(len(P)))
        phys, p = placed
        return self.materialize(phys, compose(p, inverse(P)), g.loc(v.node))

    # ---- where a pending transpose would end up
    def sites(self, v: Value, P: Perm) -> frozenset[tuple[Value, Perm]]:
        """Where the transpose of v would be materialized, best case, if v is pending with perm P: empty
        (it cancels or folds away below), one site below v, or {(v, P)} itself (some reader of v needs
        it as it is, or its readers' sites would add up to more than one, so one transpose at v beats
        them). The ops below make the same choice, so the walk follows this plan. Memoized, iterative."""
        key = (v, P)
        if key in self.plans:
            return self.plans[key]
        stack = [(key, self._sites_of(v, P))]
        answer: frozenset | None = None
        while stack:
            top, steps = stack[-1]
            try:
                child = steps.send(answer)
            except StopIteration as done:
                self.plans[top] = done.value
                stack.pop()
                answer = done.value
                continue
            answer = self.plans.get(child)
            if answer is None:
                stack.append((child, self._sites_of(*child)))
        return self.plans[key]

    def _sites_of(self, v: Value, P: Perm):
        """Generator for `sites`: yields the (value, perm) pairs it needs, is sent their sites."""
        if is_identity(P):
            return frozenset()
        g = self.graph
        here = frozenset({(v, P)})
        if g.is_output(v):
            return here
        below: frozenset = frozenset()
        for use in g.users(v):
            op = g.op(use.node)
            if op == "nn.transpose":
                below |= yield (Value(use.node, 0), compose(P, tuple(g.attrs(use.node)["perm"])))
            elif (planned := self._plan_for_use(use.node, use.operand, P)) is not None:
                for i, q in enumerate(planned[1]):
                    below |= yield (Value(use.node, i), q)
            elif not (op == "nn.reshape" and self._fc_weights_absorb(use.node, P) is not None):
                return here  # a reader that needs v itself
            if len(below) > 1:
                return here
        return below

    def _plan_for_use(self, node: int, operand: int, P: Perm) -> tuple[Attrs, list[Perm]] | None:
        """How `node` would compute with its operand `operand` pending with perm P, or None."""
        g = self.graph
        transfer = transfer_of(g.op(node))
        if transfer is None:
            return None
        operands = g.operands(node)
        data = operands if transfer.all_operands else operands[:1]
        out_types = [t for t in g.types(node) if isinstance(t, TensorType)]
        if operand >= len(data) or len(out_types) != len(g.types(node)) \
                or max(g.type_of(w).rank for w in data) != len(P) or g.type_of(operands[operand]).rank != len(P):
            return None
        return transfer.rule(g.attrs(node), P, [g.tensor_type(w) for w in operands], out_types)

    def materialized_anyway(self, v: Value) -> bool:
        """v's transpose will be in the rewritten graph whatever this op does."""
        placed = self.where(v)
        if placed is None or is_identity(placed[1]) or self.reusable(*placed):
            return True
        return self.sites(v, placed[1]) == {(v, placed[1])}

    # ---- ops
    def visit(self, node: int) -> None:
        g = self.graph
        self.stats.visited += 1
        op = g.op(node)
        operands = g.operands(node)
        if op == "nn.transpose":
            self._transpose(node, operands[0])
            return
        if not any(v in self.placed for v in operands):
            return
        if all(constant_value(g, (self.where(v) or (v,))[0]) is not None for v in operands):
            self._rewire(node, operands)
            fold_op(g, node)
            return
        transfer = transfer_of(op)
        if transfer is not None and self._move(node, operands, transfer):
            return
        if op == "nn.reshape" and self._flatten_into_fully_connected(node, operands[0]):
            return
        self._rewire(node, operands)

    def _transpose(self, node: int, x: Value) -> None:
        perm = tuple(self.graph.attrs(node)["perm"])
        placed = self.where(x)
        if placed is None:
            self.available.setdefault((x, perm), Value(node, 0))
            self.placed[Value(node, 0)] = (x, perm)
        else:
            self.placed[Value(node, 0)] = (placed[0], compose(placed[1], perm))
        self.retired.add(node)

    def _rewire(self, node: int, operands: list[Value]) -> None:
        for k, v in enumerate(operands):
            new = self.logical(v)
            if new != v:
                self.graph.set_operand(node, k, new)

    def _move(self, node: int, operands: list[Value], transfer: Transfer) -> bool:
        g = self.graph
        data = operands if transfer.all_operands else operands[:1]
        out_types = [t for t in g.types(node) if isinstance(t, TensorType)]
        if len(out_types) != len(g.types(node)):
            return False
        rank = max(g.type_of(v).rank for v in data)
        in_types = [g.tensor_type(v) for v in operands]  # (transfers are of nn ops)
        # materializing the pending operands here costs one transpose each, unless it happens anyway
        no_move = sum(0 if self.materialized_anyway(v) else 1 for v in data)
        best: tuple[int, Perm, Attrs, list[Perm]] | None = None
        tried: set[Perm] = set()
        for v in data:
            placed = self.where(v)
            if placed is None or len(placed[1]) != rank or is_identity(placed[1]) or placed[1] in tried:
                continue
            P = placed[1]
            tried.add(P)
            costs = [c for c in (self.frame_cost(w, P) for w in data) if c is not None]
            if len(costs) != len(data):
                continue
            planned = transfer.rule(g.attrs(node), P, in_types, out_types)
            if planned is None:
                continue
            # new transposes on the inputs, plus those the results will need further down
            below = frozenset().union(*(self.sites(Value(node, i), q) for i, q in enumerate(planned[1])))
            cost = sum(costs) + len(below)
            if best is None or cost < best[0]:
                best = (cost, P, planned[0], planned[1])
        if best is None or best[0] > no_move:
            return False
        _, P, attrs, result_perms = best
        new_operands = [self.in_frame(v, P) if k < len(data) else self.logical(v) for k, v in enumerate(operands)]
        types = [transposed_type(t, inverse(q)) for t, q in zip(out_types, result_perms)]
        new = g.add_op(g.op(node), new_operands, types, attrs, g.loc(node))
        for i, q in enumerate(result_perms):
            self.placed[Value(node, i)] = (Value(new, i), q)
        self.retired.add(node)
        self.stats.moved += 1
        return True

    def _fc_weights_absorb(self, node: int, P: Perm) -> list[np.ndarray] | None:
        """For a reshape [N, ...] -> [N, K] of a value pending with perm P (keeping N first) whose every
        user is a fully_connected reading it as input with constant weights: those weights, else None."""
        g = self.graph
        s, t = g.tensor_type(g.operand(node, 0)).shape, tuple(g.attrs(node)["shape"])
        result = Value(node, 0)
        if is_identity(P) or P[0] != 0 or len(t) != 2 or t[0] != s[0] or g.is_output(result):
            return None
        users = g.users(result)
        found = [self.known_constant(g.operand(u.node, 1)) if g.op(u.node) == "nn.fully_connected" and u.operand == 0
                 else None for u in users]
        weights = [w for w in found if w is not None]
        if not users or len(weights) != len(users):
            return None
        if any((q := g.tensor_type(g.operand(u.node, 1)).quant) is not None and q.axis not in (None, 0) for u in users):
            return None
        return weights

    def _flatten_into_fully_connected(self, node: int, x: Value) -> bool:
        """reshape(transpose(p, P)) -> [N, K] read only as the input of fully_connected ops with constant
        weights: reshape p instead and permute the weights' columns to match its element order."""
        g = self.graph
        placed = self.where(x)
        if placed is None:
            return False
        phys, P = placed
        weights = self._fc_weights_absorb(node, P)
        if weights is None:
            return False
        s, t = g.tensor_type(x).shape, tuple(g.attrs(node)["shape"])
        users = g.users(Value(node, 0))
        trailing = tuple(p - 1 for p in P[1:])
        order = np.arange(t[1]).reshape(s[1:]).transpose(inverse(trailing)).reshape(-1)
        reshaped = self._add("nn.reshape", [phys], g.tensor_type(Value(node, 0)), dict(g.attrs(node)), g.loc(node))
        for u, w in zip(users, weights):
            fc_operands = g.operands(u.node)
            w_value = fc_operands[1]
            permuted = self._add("nn.constant", [], g.tensor_type(w_value),
                                 {"value": np.ascontiguousarray(w[:, order])}, g.loc(w_value.node))
            new = g.add_op("nn.fully_connected", [reshaped, permuted, *fc_operands[2:]],
                           g.types(u.node), dict(g.attrs(u.node)), g.loc(u.node))
            g.replace_op(u.node, [Value(new, 0)])
            for v in fc_operands[1:]:
                if v.node in g and is_trivially_dead(g, v.node):
                    g.erase(v.node)
            self.stats.fc_weights += 1
        self.retired.add(node)
        return True

    def finish(self, order: list[int]) -> None:
        g = self.graph
        for out in g.outputs:
            out.value = self.logical(out.value)
        # users before producers, so a dead chain goes in one sweep: what the walk made, then what it replaced
        for node in [*reversed(self.created), *(n for n in reversed(order) if n in self.retired)]:
            if node in g and is_trivially_dead(g, node):
                operands = g.operands(node)
                g.erase(node)
                for v in operands:  # constants only the erased op read
                    if v.node in g and g.op(v.node) == "nn.constant" and is_trivially_dead(g, v.node):
                        g.erase(v.node)


def sink_transposes(graph: Graph) -> LayoutStats:
    """Run the layout walk on `graph` (in place); returns what it did."""
    walk = _Walk(graph)
    order = graph.topological()
    for node in order:
        if node in graph:
            walk.visit(node)
    walk.finish(order)
    return walk.stats


@register_pass("layout")
def layout(graph: Graph) -> None:
    """Sink transposes through layout-agnostic ops so that they cancel (NCHW nets: transposes at the boundary)."""
    sink_transposes(graph)
