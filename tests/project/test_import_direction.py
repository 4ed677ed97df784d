"""The pipeline's modules import in one direction only: frontend -> passes -> lowering, each on the IR,
the shared dialects and the TOSA flatbuffer forms (nn2tosa/ir, nn2tosa/dialects, nn2tosa/tosa_flatbuffer),
never back; and no modules of the package import each other in a circle. Read from the source with
`ast` (every import, at the top or inside a function)."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import networkx as nx
import pytest

from conftest import REPO

# package -> folder, as setup.py maps them
ROOTS = {"nn2tosa.frontend": "frontend", "nn2tosa.passes": "passes", "nn2tosa.lowering": "lowering",
         "nn2tosa.schemas": "schemas", "nn2tosa": "nn2tosa"}
NEUTRAL = ("nn2tosa.ir", "nn2tosa.dialects", "nn2tosa.tosa_flatbuffer")
PIPELINE = ("nn2tosa.frontend", "nn2tosa.passes", "nn2tosa.lowering")
TOP = ("nn2tosa.api", "nn2tosa.cli", "nn2tosa.check", "nn2tosa.partial", "nn2tosa.docs", "nn2tosa.graphviz",
       "nn2tosa.npu_regions", "nn2tosa.vela_support", "nn2tosa.options", "nn2tosa.result", "nn2tosa.conversion",
       "nn2tosa.comparison")


def _module_name(path: Path) -> str:
    for package, folder in ROOTS.items():
        root = REPO / folder
        if path.is_relative_to(root):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            return ".".join([package, *parts])
    raise AssertionError(path)


class _Statements(ast.NodeVisitor):
    """A module's import statements as (module, names imported from it, runs): relative imports resolved,
    no names for `import m`, `runs` False under `if TYPE_CHECKING:` (at the top or inside a function)."""

    def __init__(self, package: str):
        self.package, self.runs = package, True
        self.found: list[tuple[str, tuple[str, ...], bool]] = []

    def visit_If(self, node: ast.If) -> None:
        if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            self.generic_visit(node)
            return
        runs, self.runs = self.runs, False
        for stmt in node.body:
            self.visit(stmt)
        self.runs = runs
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_Import(self, node: ast.Import) -> None:
        self.found.extend((a.name, (), self.runs) for a in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parent = self.package.split(".")
            base = ".".join(parent[:len(parent) - node.level + 1] + ([base] if base else []))
        self.found.append((base, tuple(a.name for a in node.names), self.runs))


@functools.lru_cache(maxsize=None)
def _parsed(module: str, is_package: bool, source: str, filename: str) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
    visitor = _Statements(module if is_package else module.rpartition(".")[0])
    visitor.visit(ast.parse(source, filename))
    return tuple(visitor.found)


def _statements(path: Path) -> tuple[tuple[str, tuple[str, ...], bool], ...]:
    """`path`'s import statements (parsed once per source text)."""
    return _parsed(_module_name(path), path.name == "__init__.py", path.read_text(), str(path))


def _imports(path: Path) -> list[str]:
    """Every module `path` imports (relative imports resolved; `from a import b` counts a and a.b)."""
    return [m for base, names, _ in _statements(path) for m in (base, *(f"{base}.{n}" for n in names))]


def _sources(package: str) -> list[Path]:
    folder = REPO / ROOTS[package] if package in ROOTS else REPO / package.replace(".", "/")
    return sorted(folder.rglob("*.py"))


def _under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _violations(package: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{path.relative_to(REPO)} imports {name}" for path in _sources(package)
            for name in _imports(path) if _under(name, forbidden)]


@pytest.mark.parametrize("package,forbidden", [
    ("nn2tosa.frontend", ("nn2tosa.passes", "nn2tosa.lowering") + TOP),
    ("nn2tosa.passes", ("nn2tosa.lowering",) + TOP),  # lower-to-tosa registers on demand (manager._ON_DEMAND)
    ("nn2tosa.lowering", ("nn2tosa.frontend",) + TOP),
    ("nn2tosa.ir", PIPELINE + TOP + ("nn2tosa.dialects", "nn2tosa.tosa_flatbuffer")),
    ("nn2tosa.dialects", PIPELINE + TOP),
    ("nn2tosa.tosa_flatbuffer", PIPELINE + TOP),
])
def test_no_back_edges(package, forbidden):
    assert _violations(package, forbidden) == []


def test_the_ir_names_no_module_above_it():
    """Not even as a string to import later: a source format's dialect is registered by its frontend."""
    names = [f"{path.relative_to(REPO)}: {node.value}" for path in _sources("nn2tosa.ir")
             for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Constant)
             and isinstance(node.value, str) and _under(node.value, PIPELINE)]
    assert names == []


def test_the_emitters_are_independent():
    emitters = {f"nn2tosa.lowering.{m}" for m in ("mlir_emitter", "flatbuffer_emitter", "flatbuffer_0100")}
    crossing = [f"{path.name} imports {name}" for path in (REPO / "lowering").glob("*.py")
                if _module_name(path) in emitters
                for name in _imports(path) if name in emitters - {_module_name(path)}]
    assert crossing == []


def test_the_check_sees_a_back_edge(tmp_path, monkeypatch):
    """The parser resolves relative imports: a frontend module importing lowering through `..` is caught."""
    path = REPO / "frontend" / "tosa" / "layout_1x.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: "from ...lowering import lower\n")
    assert "nn2tosa.lowering.lower" in _imports(path)


# ------------------------------------------------------------------------------ circles
# A circle is a set of modules each of which imports (directly or through the others) all the rest: a
# strongly connected component of the import graph. Which imports are edges:
# - every `import` statement, at the top or inside a function: a function-level import defers the
#   circle to the first call and hides it from the reader, it does not remove it;
# - not those under `if TYPE_CHECKING:`, which never run (annotations are strings here);
# - `from P import n` is an edge to module P.n when that is a module, else to P (n is read from P's
#   namespace, so P's __init__ has run);
# - a package's __init__ importing its own submodules counts (re-exporting or registering them);
# - the parents Python imports implicitly (`import a.b.c` runs a/__init__ and a/b/__init__) do not:
#   counting them would join every module into one circle through the root package's lazy `load` and
#   `convert` attributes (nn2tosa/__init__.py), which are there so that `import nn2tosa` stays cheap.
# A circle accepted for now would be listed here by the import that closes it (its "back edge"; "P.*" is
# any module under P) and removed when it is broken: the test fails on any other circle, and on a listed
# import that no longer exists. Issue 29 broke the last ones (the CLI, the zoo's pools, the API with
# partial.py and npu_regions.py, and the rule registry with the rule modules), so the list is empty.
KNOWN_BACK_EDGES: dict[tuple[str, str], str] = {}


def _known(edge: tuple[str, str], known: tuple[str, str]) -> bool:
    (u, v), (ku, kv) = edge, known
    return u == ku and (v == kv or kv.endswith(".*") and v.startswith(kv[:-1]))


def _dependencies(path: Path, modules: frozenset[str]) -> set[str]:
    """The package modules `path` imports, edges as the block above says."""
    found = set()
    for base, names, runs in _statements(path):
        if runs:
            found.update((f"{base}.{n}" if f"{base}.{n}" in modules else base for n in names) if names else [base])
    return (found & modules) - {_module_name(path)}


def _import_graph() -> nx.DiGraph:
    paths = {_module_name(path): path for package in ROOTS for path in _sources(package)}
    modules = frozenset(paths)
    graph = nx.DiGraph()
    graph.add_nodes_from(paths)
    graph.add_edges_from((module, dep) for module, path in paths.items() for dep in _dependencies(path, modules))
    return graph


def _circles() -> list[list[str]]:
    """The circles left once the known back edges are taken out: one cycle through each, to show where to cut."""
    graph = _import_graph()
    graph.remove_edges_from([e for e in list(graph.edges) if any(_known(e, k) for k in KNOWN_BACK_EDGES)])
    circles = [c for c in nx.strongly_connected_components(graph) if len(c) > 1]
    return [[u for u, _ in nx.find_cycle(graph.subgraph(c))] for c in sorted(circles, key=min)]


def test_no_import_circles():
    assert _circles() == []


def test_the_known_back_edges_are_still_there():
    """A circle that was broken leaves the list, so that it cannot come back unnoticed."""
    edges = list(_import_graph().edges)
    assert [k for k in KNOWN_BACK_EDGES if not any(_known(e, k) for e in edges)] == []


def _with_source(monkeypatch, path: Path, source: str) -> None:
    real = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source if self == path else real(self, *a, **k))


def test_the_check_sees_a_lazy_circle(monkeypatch):
    """A function-level import from the element types back to the limits (which read the types) is a circle."""
    types = REPO / "nn2tosa" / "ir" / "types.py"
    _with_source(monkeypatch, types, types.read_text() + "\n\ndef _late():\n    from nn2tosa import limits\n")
    assert [sorted(c) for c in _circles()] == [["nn2tosa.ir.types", "nn2tosa.limits"]]


def test_type_checking_imports_are_not_edges(monkeypatch):
    types = REPO / "nn2tosa" / "ir" / "types.py"
    _with_source(monkeypatch, types, "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                     "    from nn2tosa import limits\n" + types.read_text())
    assert "nn2tosa.limits" not in _dependencies(types, frozenset(_import_graph()))
