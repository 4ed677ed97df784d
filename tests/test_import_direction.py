"""The pipeline's modules import in one direction only: frontend -> passes -> lowering, each on the IR,
the shared dialects and the TOSA flatbuffer forms (nn2tosa/ir, nn2tosa/dialects, nn2tosa/tosa_flatbuffer),
never back. Read from the source with `ast` (every import, at the top or inside a function)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO

# package -> folder, as setup.py maps them
ROOTS = {"nn2tosa.frontend": "frontend", "nn2tosa.passes": "passes", "nn2tosa.lowering": "lowering",
         "nn2tosa.schemas": "schemas", "nn2tosa": "nn2tosa"}
NEUTRAL = ("nn2tosa.ir", "nn2tosa.dialects", "nn2tosa.tosa_flatbuffer")
PIPELINE = ("nn2tosa.frontend", "nn2tosa.passes", "nn2tosa.lowering")
TOP = ("nn2tosa.api", "nn2tosa.cli", "nn2tosa.check", "nn2tosa.partial", "nn2tosa.docs", "nn2tosa.graphviz",
       "nn2tosa.npu_regions", "nn2tosa.vela_support",
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


def _imports(path: Path) -> list[str]:
    """Every module `path` imports (relative imports resolved; `from a import b` counts a and a.b)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[:len(parent) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            found.append(base)
            found.extend(f"{base}.{a.name}" for a in node.names)
    return found


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
