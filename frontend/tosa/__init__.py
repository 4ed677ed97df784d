"""TOSA flatbuffers (.tosa) -> TOSA-level IR (tosa.* ops), ready for the emitters without any pass.

Accepted files carry the "TOSA" file identifier; `TosaGraph.version` picks the layout:
- 1.0 and 1.1 draft (the schema in schemas/tosa.fbs; 1.1 only appends): layout_1x.py;
- 0.100 draft, the seed's generation (TOSA 0.90 semantics, schemas/tosa_0_100.fbs): layout_0100.py.
Any other version is an InvalidInputError (exit 2) that prints it. The whole buffer is verified
(nn2tosa.schemas.verify) before anything is read.

Conventions of the IR this frontend produces (docs/tosa_formats.md has the long form):
- One graph per basic block that holds a graph: per region in 1.x (named after the region; a
  region's further blocks after themselves), per block of the main region in 0.100 (named after
  the block). The graph called "main" (else the first) comes first; COND_IF / WHILE_LOOP name the
  others in their then_graph/else_graph/cond_graph/body_graph attributes, as the tosa dialect says.
- Operand forms are TOSA 1.0's whatever the layout: a 0.100 file's attribute zero points, shifts,
  multipliers, tables, pad values and shapes become tosa.const / tosa.const_shape operands.
- Graph inputs and outputs keep the block's tensor names and order; other tensor names are not
  kept (the writers name intermediate tensors themselves). A 1.x OpLocation becomes the op's Loc
  (its text verbatim); ops without one have no location.
- Constants are read-only numpy views into the file (copies only to unpack i4 and i48 and for bool
  bytes other than 0/1); bf16 and fp8 as raw bits, as the tosa dialect stores them.
- meta: format "tosa", version ("1.0.0", "1.1.0 draft", "0.100.0 draft"), layout ("1.x" or
  "0.100") and, when the file says, writer (the
  serialization library version that wrote it).
- Errors: InvalidInputError naming the region/block, operator index and op, or tensor name;
  UnsupportedError listing everything nn2tosa cannot hold (1.1-only operators and element types,
  unranked tensors, ...).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nn2tosa.diagnostics import InvalidInputError, Unsupported, UnsupportedError
from nn2tosa.ir import Graph
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.flatread import FlatBuffer
from nn2tosa.schemas.verify import verify_buffer

__all__ = ["sniff", "read", "file_version", "LAYOUTS"]

IDENTIFIER = b"TOSA"
Version = tuple[int, int, int, bool]


def sniff(data: memoryview) -> bool:
    """A flatbuffer with the "TOSA" file identifier."""
    return len(data) >= 8 and bytes(data[4:8]) == IDENTIFIER


@dataclass(frozen=True)
class LayoutInfo:
    name: str
    schema: str
    matches: Callable[[Version], bool]
    module: str  # the module whose read_graphs(fb, data) reads it


LAYOUTS = (
    LayoutInfo("1.x", "tosa", lambda v: v[0] == 1 and v[1] in (0, 1), "layout_1x"),
    LayoutInfo("0.100", "tosa_0_100", lambda v: v[:2] == (0, 100), "layout_0100"),
)


def version_text(v: Version) -> str:
    return f"{v[0]}.{v[1]}.{v[2]}" + (" draft" if v[3] else "")


def file_version(data: memoryview) -> Version:
    """(major, minor, patch, draft) of a TOSA flatbuffer. Both layouts keep `version` as the root
    table's first field with the same Version table, so either schema reads it."""
    fb = FlatBuffer(data, load_schema("tosa"), strict_table_size=False)
    version = fb.root()["version"]
    if version is None:
        raise InvalidInputError("the TosaGraph has no version (a required field)", where="TosaGraph.version")
    return (int(version["_major"]), int(version["_minor"]), int(version["_patch"]), bool(version["_draft"]))


def read(data: memoryview, name: str) -> list[Graph]:
    """The graphs of a .tosa file (see the module doc); `name` is the file name (errors get it from the caller)."""
    import importlib

    version = file_version(data)
    layout = next((lay for lay in LAYOUTS if lay.matches(version)), None)
    if layout is None:
        raise InvalidInputError(f"TOSA flatbuffer version {version_text(version)} matches no layout nn2tosa reads "
                                "(1.0, 1.1 draft, 0.100 draft)", where="TosaGraph.version")
    # Buffers written by the Python flatbuffers Builder may understate table sizes (schemas/README.md).
    fb = FlatBuffer(data, load_schema(layout.schema), strict_table_size=False)
    verify_buffer(fb)
    module = importlib.import_module(f"{__name__}.{layout.module}")
    graphs, unsupported = module.read_graphs(fb, data)
    if unsupported:
        raise UnsupportedError(unsupported)
    if not graphs:
        raise InvalidInputError("the file holds no basic block", where="TosaGraph.regions")
    _check_graph_references(graphs)
    _check_tosa_1_0(graphs)
    meta = {"format": "tosa", "version": version_text(version), "layout": layout.name}
    writer = fb.root()["software_version"] if "software_version" in fb.root().fields() else None
    if writer is not None and writer["_major"] >= 0:
        meta["writer"] = f"{writer['_major']}.{writer['_minor']}.{writer['_micro']}{writer['_modifier'] or ''}"
    for g in graphs:
        g.meta = {**meta, **g.meta}
    return graphs


def _check_tosa_1_0(graphs: list[Graph]) -> None:
    """A 1.1 draft file may use type combinations TOSA 1.0 lacks (GATHER on bool, ...): the IR's
    TOSA-level graphs are TOSA 1.0, so those are unsupported, all listed."""
    from nn2tosa.dialects.tosa_target import COMPLIANCE, op_requirement

    items = []
    for g in graphs:
        for node in g.nodes():
            if g.op(node) in COMPLIANCE and op_requirement(g, node) is None:
                types = ", ".join(str(g.type_of(v)) for v in g.operands(node)) or "no operands"
                items.append(Unsupported(g.op(node), f"{g.name}: {g.loc(node) or f'%{node}'}",
                                         f"no TOSA 1.0 profile or extension has it on ({types}) -> "
                                         f"{', '.join(map(str, g.types(node)))}"))
    if items:
        raise UnsupportedError(items)


_GRAPH_ATTRS = ("then_graph", "else_graph", "cond_graph", "body_graph")


def _check_graph_references(graphs: list[Graph]) -> None:
    names = [g.name for g in graphs]
    if len(set(names)) != len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        raise InvalidInputError(f"two graphs are named {duplicate!r}", where="TosaGraph.regions")
    for g in graphs:
        for node in g.nodes():
            for attr in _GRAPH_ATTRS:
                target = g.attrs(node).get(attr)
                if target is not None and target not in names:
                    raise InvalidInputError(f"{g.op(node)} names {attr} {target!r}, which the file does not hold",
                                            where=f"graph {g.name!r} {g.loc(node) or ''}".rstrip())
