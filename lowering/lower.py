"""The `lower-to-tosa` pass: every nn op replaced by TOSA ops through the rule registry.

Ops without a lowering are reported all at once (UnsupportedError); a partial conversion sets
PassContext.keep_unsupported and they stay in place instead (passes/context.py: report_unsupported).
What the report says of the lowering (boundary type changes, semantics-dependent ops, NPU forms chosen)
goes into the pass context's remarks."""
from __future__ import annotations

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Value, as_tensor
from nn2tosa.passes.context import pass_context, report_unsupported
from nn2tosa.passes.manager import register_pass

from .context import LoweringContext, LoweringUnsupported, tosa_type
from .quant import unsigned_input_to_signed, unsigned_output_from_signed
from .rules import CARRY_QUANTIZATION, rule_for
from .rules.float_islands import erase_dead, find_islands


def _where(graph: Graph, node: int) -> str:
    loc = graph.loc(node)
    return str(loc) if loc else f"%{node}"


def _zero_size_tensors(graph: Graph) -> list[Unsupported]:
    """Ops producing tensors with a dimension of 0: TOSA needs every dimension to be at least 1."""
    items = []
    for node in graph.nodes():
        for t in graph.types(node):
            if isinstance(t, TensorType) and 0 in t.shape:
                what = "graph input" if graph.op(node) == INPUT_OP else graph.op(node)
                items.append(Unsupported(what, _where(graph, node),
                                         f"zero-size tensor {t}: TOSA tensors have no dimension of 0"))
                break
    return items


def _check_result(graph: Graph, node: int, value: Value, declared: TensorType) -> None:
    """A rule's result has the TOSA form of the type its op declares: a rule that returned another
    (say f32 for an i32 result) would change what the converted function returns, silently. Both
    sides are taken to their TOSA form: a u8 carrier where the op declares its i8 form is not this bug."""
    got, want = tosa_type(graph.tensor_type(value)), tosa_type(declared)
    if (got.shape, got.dtype) != (want.shape, want.dtype):
        raise RuntimeError(f"{_where(graph, node)}: the lowering of {graph.op(node)} returned {got.dtype} "
                           f"{list(got.shape)} for a {want.dtype} {list(want.shape)} result (a bug)")


@register_pass("lower-to-tosa")
def lower_to_tosa(graph: Graph) -> None:
    """Lower nn ops to TOSA 1.0 ops; every op that cannot be lowered is reported, all at once."""
    unsupported: list[Unsupported] = _zero_size_tensors(graph)
    if unsupported:  # nothing downstream of an empty tensor is worth lowering
        raise UnsupportedError(unsupported)
    # boundary tensors whose element type TOSA cannot have (ui8 -> i8, i64 -> i32, ...): `convert
    # --report` lists them; unsigned quantized ones keep their raw bits (lowering/quant.py)
    boundary_changes = []
    dependent: list[str] = []  # where the quantized integers depend on --semantics (lowering/semantics.py)
    choices: list[str] = []  # forms chosen for the --target preset (lowering/npu_target.py)
    # the nn-level type of every value that lowering retypes (graph inputs, lowered results): rules
    # see their operands' nn types (unsigned, 64-bit, quantized) in ctx.nn_in_types
    nn_types: dict[Value, TensorType] = {}
    output_nn_types = [graph.tensor_type(o.value) for o in graph.outputs]  # before inputs are retyped
    # dequantize -> float elementwise ops -> quantize: one exact lookup (rules/float_islands.py)
    islands = find_islands(graph)
    replaced_by_islands = set().union(*(i.interior for i in islands.values()))
    for node in graph.inputs:
        t = graph.tensor_type(Value(node, 0))
        nn_types[Value(node, 0)] = t
        low = tosa_type(t)
        if low != t:
            graph.types(node)[0] = low
        if low.dtype != t.dtype:
            boundary_changes.append(f"input {graph.input_name(node)}: {t.dtype} as {low.dtype}")
    for out, t in zip(graph.outputs, output_nn_types):
        low = tosa_type(t)
        if low.dtype != t.dtype:
            boundary_changes.append(f"output {out.name}: {t.dtype} as {low.dtype}")
    remarks = pass_context().remarks
    remarks.boundary_changes.extend(boundary_changes)
    for node in list(graph.inputs):
        signed = unsigned_input_to_signed(graph, node, nn_types[Value(node, 0)])
        if signed is not None:
            nn_types[signed] = nn_types[Value(node, 0)]
    for node in graph.topological():
        op = graph.op(node)
        if op == INPUT_OP or op.startswith("tosa.") or node in replaced_by_islands:
            continue
        if not op.startswith("nn."):
            unsupported.append(Unsupported(op, _where(graph, node), "not legalized to the nn dialect"))
            continue
        nn_in_types = [nn_types[v] if v in nn_types else graph.tensor_type(v) for v in graph.operands(node)]
        quants = {t.quant for t in [*nn_in_types, *map(as_tensor, graph.types(node))] if t.quant is not None}
        fn = islands[node].rule(graph) if node in islands else rule_for(op, bool(quants))
        if fn is not None and len(quants) > 1 and op in CARRY_QUANTIZATION and rule_for(op, False) is fn:
            fn = None  # carrying integers between different quantizations would change their values
        if fn is None:
            what = f"quantized {op[3:]}" if quants else op[3:]
            unsupported.append(Unsupported(op, _where(graph, node), f"no lowering of {what} to TOSA yet"))
            continue
        upstream_failed = node not in islands and any(  # (an island's end reads its skipped interior)
            not graph.op(v.node).startswith(("tosa.", INPUT_OP)) for v in graph.operands(node))
        ctx = LoweringContext(graph, node, nn_in_types)
        try:
            results = ctx.apply(fn)
        except LoweringUnsupported as e:
            unsupported.append(Unsupported(op, _where(graph, node), str(e)))
            continue
        except Exception:
            if upstream_failed:  # fed by an op that could not be lowered: that one is reported
                continue
            raise
        if ctx.semantics_consulted:
            dependent.append(_where(graph, node))
        choices.extend(f"{_where(graph, node)}: {choice}" for choice in ctx.npu_choices)
        results = [results] if isinstance(results, Value) else list(results)
        for value, result_type in zip(results, graph.types(node)):
            declared = as_tensor(result_type, value)
            if not upstream_failed:  # (fed by an op left unlowered, a rule sees that op's nn types)
                _check_result(graph, node, value, declared)
            nn_types.setdefault(value, declared)  # a value a rule passes through keeps its own type
        graph.replace_op(node, results)
        if node in islands:
            erase_dead(graph, islands[node])
    remarks.semantics_dependent.extend(dependent)
    remarks.npu_choices.extend(choices)
    if unsupported:
        report_unsupported(unsupported)  # raises, unless a partial conversion keeps them in place
        return
    for out, t in zip(graph.outputs, output_nn_types):
        unsigned_output_from_signed(graph, out, t)
