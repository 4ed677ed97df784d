"""`nn2tosa graph`: draw the IR of a model at one stage as Graphviz DOT (and SVG, PNG or PDF).

    nn2tosa graph model.armnn --stage source -o g.dot     # one box per Arm NN layer / MPS node
    nn2tosa graph model.armnn --stage nn -o g.svg         # after legalization and canonicalization
    nn2tosa graph model.armnn --stage tosa -o g.svg       # the TOSA graph that is emitted

Each op is a box with its name, result types and source location; graph inputs and outputs are
ellipses; an edge from a multi-result op or into a multi-operand op says which result/operand.
DOT is written by this module (deterministic, no dependency); other formats are made from it by
the `dot` program of the system's Graphviz package, when it is installed.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
from collections.abc import Sequence

from nn2tosa.diagnostics import Nn2TosaError, UsageError
from nn2tosa.ir import INPUT_OP, Graph, TensorType

STAGES = ("source", "nn", "tosa")
RENDERED = ("svg", "png", "pdf")  # made by `dot -T<format>`


def stage_graphs(graphs: Sequence[Graph], stage: str) -> list[Graph]:
    """The graphs at `stage`: as read ("source"), after the passes before lowering ("nn"), or converted ("tosa")."""
    if stage == "source":
        return list(graphs)
    from nn2tosa.api import convert, tosa_pipeline

    out = []
    for g in graphs:
        passes = tosa_pipeline(g.meta.get("format", "unknown"))
        if stage == "nn" and "lower-to-tosa" in passes:
            passes = passes[:passes.index("lower-to-tosa")]
        out.append(convert(g, passes=passes).graph)
    return out


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _types(g: Graph, node: int) -> str:
    return ", ".join(f"{'x'.join(map(str, t.shape)) or 'scalar'} {t.dtype}" if isinstance(t, TensorType) else str(t)
                     for t in g.types(node))


def to_dot(graphs: Sequence[Graph]) -> str:
    """DOT text of the graphs (several partitions become one cluster each)."""
    lines = ["digraph nn2tosa {", '  node [shape=box, fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=8];']
    many = len(graphs) > 1
    for k, g in enumerate(graphs):
        prefix = f"g{k}_" if many else ""
        indent = "    " if many else "  "
        if many:
            lines.append(f"  subgraph cluster_{k} {{")
            lines.append(f"    label={_quote(g.name)};")
        for node in g.topological():
            op = g.op(node)
            loc = g.loc(node)
            if op == INPUT_OP:
                label = f"{g.input_name(node)}\n{_types(g, node)}"
                lines.append(f"{indent}{prefix}n{node} [label={_quote(label)}, shape=ellipse];")
                continue
            label = "\n".join(p for p in (op, _types(g, node), str(loc) if loc else "") if p)
            style = ", style=dashed" if op.endswith((".const", ".constant", ".Constant", ".const_shape")) else ""
            lines.append(f"{indent}{prefix}n{node} [label={_quote(label)}{style}];")
        for node in g.topological():
            operands = g.operands(node)
            for k_operand, v in enumerate(operands):
                parts = []
                if len(g.types(v.node)) > 1:
                    parts.append(f"#{v.index}")
                if len(operands) > 1:
                    parts.append(f"->{k_operand}")
                label = f" [label={_quote(' '.join(parts))}]" if parts else ""
                lines.append(f"{indent}{prefix}n{v.node} -> {prefix}n{node}{label};")
        for i, out in enumerate(g.outputs):
            lines.append(f"{indent}{prefix}out{i} [label={_quote(out.name)}, shape=ellipse];")
            lines.append(f"{indent}{prefix}n{out.value.node} -> {prefix}out{i};")
        if many:
            lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot: str, fmt: str) -> bytes:
    """`dot -T<fmt>` of the DOT text; UsageError when Graphviz is not installed."""
    exe = shutil.which("dot")
    if exe is None:
        raise UsageError(f"writing .{fmt} needs the `dot` program of Graphviz, which is not installed "
                         "(e.g. apt install graphviz); write a .dot file instead")
    proc = subprocess.run([exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=600)
    if proc.returncode != 0:
        raise Nn2TosaError(f"dot -T{fmt} failed: {' '.join(proc.stderr.decode(errors='replace').split())}")
    return proc.stdout


def cmd_graph(args: argparse.Namespace) -> int:
    from nn2tosa.fileio import check_output_path, write_atomic
    from nn2tosa.frontend import load

    check_output_path(args.output)
    suffix = "dot" if args.output == "-" else args.output.rsplit(".", 1)[-1].lower()
    if suffix not in ("dot", "gv") + RENDERED:
        raise UsageError(f"{args.output}: unknown graph format (use .dot, .gv, {', '.join('.' + f for f in RENDERED)})")
    if suffix in RENDERED and shutil.which("dot") is None:
        render("", suffix)  # says that Graphviz is missing, before any work
    graphs = load(args.input, partitions=args.partition is not None)
    if args.partition is not None:
        if not 0 <= args.partition < len(graphs):
            raise UsageError(f"--partition {args.partition}: {args.input} has {len(graphs)} partition(s)")
        graphs = [graphs[args.partition]]
    try:
        dot = to_dot(stage_graphs(graphs, args.stage))
    except Nn2TosaError as e:
        raise e.located(args.input) if hasattr(e, "located") else e
    write_atomic(args.output, dot.encode() if suffix in ("dot", "gv") else render(dot, suffix))
    return 0
