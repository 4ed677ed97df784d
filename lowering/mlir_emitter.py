"""TOSA-level graphs -> an `mlir.ir.Module` of the real MLIR tosa dialect, verified in-process.

    module = to_mlir(graph)                       # tosa.target_env attached, verified
    text = module_text(module)                    # generic form (portable), or pretty=True
    data = module_bytecode(module)                # MLIR bytecode
    write_mlir(module, "out.mlir")                # or .mlirbc; atomic
    problems = validate(module, target)           # real tosa-attach-target + tosa-validate (strict)

The module carries `tosa.target_env`. MLIR 22 (and tosa-tools' tosa-opt) print an empty profile or
extension list as `[]` but cannot read it back, from text or bytecode; so the written forms leave
such an attribute out (text output says so in a leading comment), and the in-process module keeps it.

Graph inputs and outputs carry their names as the `tosa.tensor_name` argument/result attribute:
that is what `tosa-opt --tosa-serialize="... retain-graph-input-output-names"` reads, so a .tosa
made by tosa-opt from our MLIR keeps the same tensor names as our own .tosa. Constants of more than
`RESOURCE_THRESHOLD` elements become `dense_resource` blobs built from the numpy buffer (no Python
lists, no text formatting of weights).

Control flow and variables: a graph that a tosa.cond_if / tosa.while_loop names (then_graph,
else_graph, cond_graph, body_graph) is not a function of the module but the op's region: the
branch graph's body becomes the region's one block, its inputs the block arguments, its outputs a
tosa.yield (a graph named twice is copied into each op). Every tosa.variable becomes one
module-level declaration (the first of a sym_name wins), where tosa.variable_read/_write find it.
"""
from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from mlir import ir

from nn2tosa.diagnostics import Nn2TosaError, UnsupportedError
from nn2tosa.dialects.tosa import unsupported_for_emission, with_distinct_outputs
from nn2tosa.dialects.tosa_target import Target, require_tosa_1_0
from nn2tosa.fileio import populate, write_atomic
from nn2tosa.ir import Graph
from nn2tosa.ir.mlir_bridge import GRAPH_ATTRS, RESOURCE_THRESHOLD, new_context, to_module
from nn2tosa.tosa_flatbuffer.common import unique_io_names

from .program import BRANCH_ATTRS, reachable_branches, split_program, unknown_branches

TENSOR_NAME_ATTR = "tosa.tensor_name"
TARGET_ENV_ATTR = "tosa.target_env"


class MlirVerificationError(Nn2TosaError):
    """The emitted module does not verify: a bug of nn2tosa (exit code 1), never of the input.
    `problems` holds one line per MLIR diagnostic, naming the op and its location."""

    exit_code = 1

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("internal error: the emitted TOSA MLIR does not verify: " + "; ".join(problems))


def to_mlir(
    graphs: Graph | Sequence[Graph],
    context: ir.Context | None = None,
    *,
    target: Target | None = None,
    verify: bool = True,
    resource_threshold: int = RESOURCE_THRESHOLD,
    blobs: bool = True,
) -> ir.Module:
    """Build the TOSA MLIR module of TOSA-level graph(s): one func.func per graph, names as
    `tosa.tensor_name`, `tosa.target_env` set to `target` (default: what the graphs need).
    With `verify`, a module MLIR rejects raises MlirVerificationError. Without `blobs`, large
    constants hold no data (`elided_text`)."""
    graphs = [graphs] if isinstance(graphs, Graph) else list(graphs)
    items = unsupported_for_emission(graphs) + unknown_branches(graphs, [g.name for g in graphs])
    if items:
        raise UnsupportedError(items)
    functions, branches = split_program(graphs)
    for g in functions if branches else ():
        reachable_branches(g, branches)  # refuses recursion (TOSA has none) before any region is nested
    functions = [with_distinct_outputs(g) for g in functions]  # a tosa.yield needs no names
    graphs = functions + list(branches.values())
    needed = require_tosa_1_0(graphs)
    target = target or needed
    ctx = context or new_context()
    if blobs:  # the module's blobs are views of the input: map its pages in one call before MLIR reads them
        populate(g.attrs(n)["values"] for g in graphs for n in g.nodes() if g.op(n) == "tosa.const")
    # branch graphs are built as functions too, then moved into the regions of the ops naming them
    module = to_module(graphs, ctx, resource_threshold=resource_threshold, blobs=blobs)
    with ctx, ir.Location.unknown():
        built = list(module.body.operations)
        branch_funcs = dict(zip(branches, built[len(functions):]))
        emptied: list[Any] = []  # erased at the end: erasing drops the Python objects of what they held
        for fn, g in zip(built, functions):
            _name_arguments_for_tosa(fn, *unique_io_names(g))
            if branch_funcs:  # (a Python object per op otherwise: not for models without control flow)
                _nest_branches(fn.regions[0].blocks[0], branch_funcs, emptied)
        for fn in [*branch_funcs.values(), *emptied]:
            fn.erase()
        variable_shapes = {g.attrs(n)["sym_name"]: g.attrs(n)["var_shape"] for g in graphs for n in g.nodes()
                           if g.op(n) == "tosa.variable"}
        if variable_shapes:
            _declare_variables_in_module(module, variable_shapes)
        module.operation.attributes[TARGET_ENV_ATTR] = target.mlir_attr()
    if verify:
        verify_module(module)
    return module


def _nest_branches(block: ir.Block, branch_funcs: dict[str, Any], emptied: list[Any]) -> None:
    """Replace every control-flow op of `block` (and, recursively, of the regions it gets) by one
    with regions: a copy of each named branch function's body, its func.return a tosa.yield (the
    caller has refused recursion). The copied functions, their body taken, go to `emptied`."""
    for op in list(block.operations):
        graph_attrs = BRANCH_ATTRS.get(op.name)
        if graph_attrs is None:
            continue
        names = [op.attributes[a].value for a in graph_attrs]
        attributes = {k: op.attributes[k] for k in op.attributes if k not in graph_attrs}
        nested = ir.Operation.create(op.name, results=[r.type for r in op.results], operands=list(op.operands),
                                     attributes=attributes, regions=len(names), loc=op.location,
                                     ip=ir.InsertionPoint(op))
        for region, name in zip(nested.regions, names):
            copy = branch_funcs[name].clone()
            copy.regions[0].blocks[0].append_to(region)
            emptied.append(copy)
            body = region.blocks[0]
            terminator = list(body.operations)[-1]
            ir.Operation.create("tosa.yield", operands=list(terminator.operands), loc=terminator.location,
                                ip=ir.InsertionPoint(terminator))
            terminator.erase()
            _nest_branches(body, branch_funcs, emptied)
        for old, new in zip(op.results, nested.results):
            old.replace_all_uses_with(new)
        op.erase()


def _declare_variables_in_module(module: ir.Module, shapes: dict[str, list[int]]) -> None:
    """Move every tosa.variable to the top of the module, where the reads and writes look their
    symbol up (one declaration per name), with its shape (`shapes`, by name) as MLIR's index
    elements (the generic builder cannot give the op that form)."""
    declared: set[str] = set()
    first = module.body.operations[0]  # a function: there is at least one
    variables: list[Any] = []

    def collect(op: Any) -> ir.WalkResult:
        if op.name == "tosa.variable":
            variables.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(collect)
    for op in variables:
        name = op.attributes["sym_name"].value
        if name in declared:
            op.erase()
            continue
        declared.add(name)
        attributes = {k: op.attributes[k] for k in op.attributes if k != "var_shape"}
        shape = shapes[name]
        attributes["var_shape"] = ir.DenseElementsAttr.get(
            np.asarray(shape, dtype=np.int64), type=ir.RankedTensorType.get([len(shape)], ir.IndexType.get()))
        ir.Operation.create("tosa.variable", attributes=attributes, loc=op.location, ip=ir.InsertionPoint(first))
        op.erase()


def _name_arguments_for_tosa(fn: Any, input_names: list[str], output_names: list[str]) -> None:
    """Name arguments and results with `tosa.tensor_name` (the .tosa writer's unique names, so that
    a repeated output name gets the same suffix in both outputs) and drop nn2tosa's graph metadata."""
    for attr_name, names in (("arg_attrs", input_names), ("res_attrs", output_names)):
        if attr_name not in fn.attributes:
            continue
        fn.attributes[attr_name] = ir.ArrayAttr.get(
            [ir.DictAttr.get({TENSOR_NAME_ATTR: ir.StringAttr.get(name)}) for name in names])
    if GRAPH_ATTRS in fn.attributes:
        del fn.attributes[GRAPH_ATTRS]


def _diagnostic_lines(error: ir.MLIRError) -> list[str]:
    lines = []
    for d in error.error_diagnostics:
        lines.append(f"{d.message} at {d.location}")
    return lines or [" ".join(str(error).split())]


def verify_module(module: ir.Module) -> None:
    """Run MLIR's verifier; raise MlirVerificationError with every diagnostic."""
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise MlirVerificationError(_diagnostic_lines(e)) from None


@contextmanager
def _readable_target_env(module: ir.Module) -> Iterator[str]:
    """Within the block, the module has no tosa.target_env if MLIR could not parse its printed form;
    yields a comment line for text output ("" when nothing was taken out)."""
    attributes = module.operation.attributes
    env = attributes[TARGET_ENV_ATTR] if TARGET_ENV_ATTR in attributes else None
    if env is None or "[]" not in str(env):
        yield ""
        return
    del attributes[TARGET_ENV_ATTR]
    try:
        yield f"// {env} (left out below: MLIR cannot parse an empty list in it)\n"
    finally:
        attributes[TARGET_ENV_ATTR] = env


def _write(module: ir.Module, f: Any, *, bytecode: bool, pretty: bool, debug_info: bool, elide_constants: bool) -> None:
    limit = 16 if elide_constants else None
    with _readable_target_env(module) as comment:
        if bytecode:
            module.operation.write_bytecode(f)
            return
        f.write(comment.encode())
        module.operation.print(file=f, binary=True, print_generic_op_form=not pretty, enable_debug_info=debug_info,
                               large_elements_limit=limit, large_resource_limit=limit, assume_verified=True)


# What MLIR prints after the module when it has dense_resource blobs and elides every one of them
ELIDED_RESOURCES = "\n{-#\n\n#-}\n"


def elided_text(graphs: Sequence[Graph], target: Target, *, pretty: bool = False, debug_info: bool = True) -> str:
    """The text `module_text(to_mlir(graphs), elide_constants=True)` prints, from a module whose large
    constants hold no data: MLIR's printer hex-encodes each blob before it decides to elide it (80 s
    for a 2.2 GB model), and a handle without data it skips at once."""
    module = to_mlir(graphs, target=target, blobs=False)
    text = module_text(module, pretty=pretty, debug_info=debug_info, elide_constants=True)
    has_resources = "dense_resource<cst" in text  # (a blob-less handle prints no resource section)
    return text + ELIDED_RESOURCES if has_resources else text


def module_text(module: ir.Module, *, pretty: bool = False, debug_info: bool = True,
                elide_constants: bool = False) -> str:
    """MLIR text: the generic op form by default (it parses in every MLIR version), or the pretty form."""
    buffer = io.BytesIO()
    _write(module, buffer, bytecode=False, pretty=pretty, debug_info=debug_info, elide_constants=elide_constants)
    return buffer.getvalue().decode()


def module_bytecode(module: ir.Module) -> bytes:
    """MLIR bytecode, written by the bindings."""
    buffer = io.BytesIO()
    _write(module, buffer, bytecode=True, pretty=False, debug_info=True, elide_constants=False)
    return buffer.getvalue()


def write_mlir(module: ir.Module, path: str | os.PathLike, *, bytecode: bool | None = None, pretty: bool = False,
               debug_info: bool = True, elide_constants: bool = False) -> None:
    """Write text (.mlir) or bytecode (.mlirbc, or `bytecode=True`) atomically; "-" is stdout (text).
    MLIR streams straight into the file: no second copy of the constants in Python."""
    if bytecode is None:
        bytecode = str(path).endswith(".mlirbc")
    write_atomic(path, lambda f: _write(module, f, bytecode=bool(bytecode), pretty=pretty, debug_info=debug_info,
                                        elide_constants=elide_constants))


# MLIR 22's tosa-validate checks the length of every !tosa.shape against MAX_RANK, so a rank-4 PAD
# (padding !tosa.shape<8>) "exceeds MAX_RANK". TOSA 1.0 limits PAD's input rank (which the validator
# checks on the tensor operand) and shape operations' lengths (MAX_SHAPE_LEN, arm/tosa-specification#29);
# MLIR fixed its check in llvm/llvm-project#175020 (tosa-opt from tosa-tools accepts such a PAD).
_PAD_SHAPE_LENGTH_FALSE_ALARM = re.compile(r"^'tosa\.pad' op failed shape type level check: "
                                           r"'!tosa\.shape<\d+>' exceeds MAX_RANK")


def validate(module: ir.Module, target: Target | None = None) -> list[str]:
    """Run MLIR's `tosa-attach-target` (with `target`; without one, the module's own
    tosa.target_env is kept) and `tosa-validate{strict-op-spec-alignment}` on a copy of `module`.
    Returns the validator's diagnostics, one line each (empty: the module is valid for the target).

    The pipeline string is built here from a validated Target, never from user text: a malformed
    string would abort the whole process with LLVM ERROR."""
    from mlir.passmanager import PassManager

    passes = []
    if target is not None:
        passes.append(f"tosa-attach-target{{{target.pipeline_options()}}}")
    passes.append("tosa-validate{strict-op-spec-alignment}")
    with module.context:
        copy = module.operation.clone()
        pm = PassManager.parse(f"builtin.module({','.join(passes)})")
        try:
            pm.run(copy.operation)
        except ir.MLIRError as e:
            return [line for line in _diagnostic_lines(e) if not _PAD_SHAPE_LENGTH_FALSE_ALARM.match(line)]
    return []


__all__ = ["MlirVerificationError", "to_mlir", "verify_module", "module_text", "module_bytecode", "write_mlir",
           "validate", "TENSOR_NAME_ATTR"]
