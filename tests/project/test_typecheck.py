"""mypy (pinned in the test extra, configured in pyproject.toml) over the package: no errors.

The package's folders are laid out as installed (nn2tosa/frontend, nn2tosa/passes, ... are the
repository's top-level folders: setup.py), so mypy reads a tree of links that puts them there. One
planted module with type errors shows the check can fail: its errors must be the only ones reported,
and among them the misuses of the typed TOSA builder (issue 29) mypy must catch where they are
written: a misspelled op, a missing operand, a misspelled attribute, a misspelled op handed to a helper (`TosaBuilder.conv2dd`)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

FOLDERS = ("frontend", "passes", "lowering", "schemas")  # nn2tosa.<folder> once installed
PROBE = """count: int = "three"
from nn2tosa.lowering.context import LoweringContext
def misuses(ctx: LoweringContext) -> None:
    ctx.tosa.conv2dd(ctx.operands[0])
    ctx.tosa.add(ctx.operands[0])
    ctx.tosa.clamp(ctx.operands[0], min_val=0.0, max_val=6.0, nan_mod="IGNORE")
    from nn2tosa.dialects.tosa_builder import TosaBuilder
    from nn2tosa.lowering.rules.convolution import convolution
    convolution(ctx, TosaBuilder.conv2dd, ctx.operands[0], ctx.operands[1], None, "f32", kernel=(1, 1), pad=(0,) * 4, stride=(1, 1))
"""
PROBE_ERRORS = {1: "Incompatible types in assignment", 4: 'has no attribute "conv2dd"',
                5: 'Missing positional argument "input2"', 6: 'Unexpected keyword argument "nan_mod"',
                9: 'type[TosaBuilder]" has no attribute "conv2dd"'}


def _installed_layout(root: Path) -> Path:
    package = root / "nn2tosa"
    package.mkdir()
    for entry in (REPO / "nn2tosa").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for folder in FOLDERS:
        (package / folder).symlink_to(REPO / folder, target_is_directory=True)
    (package / "typecheck_probe.py").write_text(PROBE)
    return package


def test_mypy_finds_no_error_but_the_planted_one(tmp_path):
    _installed_layout(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "-p", "nn2tosa", "--config-file", str(REPO / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", "--hide-error-context"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    probe = "nn2tosa/typecheck_probe.py:"
    assert all(line.startswith(probe) for line in errors), run.stdout + run.stderr
    found = {int(line[len(probe):].split(":", 1)[0]): line for line in errors}
    assert sorted(found) == sorted(PROBE_ERRORS), run.stdout + run.stderr
    for line, what in PROBE_ERRORS.items():
        assert what in found[line], found[line]
