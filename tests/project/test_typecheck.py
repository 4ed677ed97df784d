"""mypy (pinned in the test extra, configured in pyproject.toml) over the package: no errors.

The package's folders are laid out as installed (nn2tosa/frontend, nn2tosa/passes, ... are the
repository's top-level folders: setup.py), so mypy reads a tree of links that puts them there. One
planted module with a type error shows the check can fail: it must be the only error reported."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

FOLDERS = ("frontend", "passes", "lowering", "schemas")  # nn2tosa.<folder> once installed
PROBE = 'count: int = "three"\n'


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
    assert len(errors) == 1 and errors[0].startswith("nn2tosa/typecheck_probe.py:1:"), run.stdout + run.stderr
