"""The IR's text form: MLIR generic syntax, printed and parsed by the real MLIR bindings."""
from __future__ import annotations

import re
from collections.abc import Sequence

from mlir import ir

from .graph import Graph
from .mlir_bridge import from_module, new_context, resource_blobs, to_module

ELIDE_LIMIT = 16
_EMPTY_RESOURCES = re.compile(r"\n\{-#\s*#-\}\n")  # what MLIR leaves when it elides every blob


def print_ir(graphs: Graph | Sequence[Graph], *, elide_constants: bool = False, debug_info: bool = True) -> str:
    """Generic-form MLIR text of one or more graphs, with locations.

    Constants of more than 64 elements are printed as dense_resource blobs; with
    `elide_constants` every constant over 16 elements is elided (the text is then for reading,
    not for parsing back).
    """
    module = to_module(graphs)
    limit = ELIDE_LIMIT if elide_constants else None
    text = module.operation.get_asm(
        print_generic_op_form=True,
        enable_debug_info=debug_info,
        large_elements_limit=limit,
        large_resource_limit=limit,
        assume_verified=True,
    )
    return _EMPTY_RESOURCES.sub("", text) if elide_constants else text


class ParseError(ValueError):
    """MLIR could not parse the text (the message is MLIR's diagnostic)."""


# MLIR's parser descends recursively into brackets: 20,000 nested levels overflow its C++ stack
# (a segmentation fault, not an error). Real IR nests a few dozen levels.
MAX_NESTING = 1000
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: fast over megabytes of hex blobs
_BRACKET = re.compile(r"->|[\[\]{}()<>]")


def check_nesting(text: str, limit: int = MAX_NESTING) -> None:
    """Refuse text whose brackets (outside string literals) nest deeper than `limit`."""
    depth = 0
    code = _STRING.sub('""', text)  # strings keep their line: MLIR escapes newlines in them
    for m in _BRACKET.finditer(code):
        c = m.group()
        if c in "[{(<":
            depth += 1
            if depth > limit:
                line = code.count("\n", 0, m.start()) + 1
                raise ParseError(f"line {line}: brackets nest deeper than {limit} levels")
        elif c != "->":
            depth -= 1


def parse_module(text: str, context: ir.Context | None = None) -> ir.Module:
    check_nesting(text)
    ctx = context or new_context()
    try:
        with ctx:
            return ir.Module.parse(text)
    except ir.MLIRError as e:
        raise ParseError(_diagnostic_text(e)) from None


def _diagnostic_text(e: "ir.MLIRError") -> str:
    """MLIR's diagnostics as `line L col C: message` (the text has no file name of its own)."""
    parts = []
    for d in e.error_diagnostics:
        loc = d.location
        where = f"line {loc.start_line} col {loc.start_col}: " if loc.is_a_file() else ""
        parts.append(where + d.message)
    return "; ".join(parts) if parts else " ".join(str(e).split())


def parse_ir(text: str) -> list[Graph]:
    """Graphs from IR text (generic or pretty MLIR holding func.func ops)."""
    module = parse_module(text)
    return from_module(module, resource_blobs(text))


def parse_graph(text: str) -> Graph:
    graphs = parse_ir(text)
    if len(graphs) != 1:
        raise ParseError(f"expected one function, found {len(graphs)}")
    return graphs[0]
