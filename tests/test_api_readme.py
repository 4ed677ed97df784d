"""The README's examples (Python API, MLIR pipelines, partial conversion, reports, checks, graphs) run as
written: each block in a fresh directory holding the bundled examples, with nn2tosa and mlir-opt on PATH."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO

SECTIONS = ("Python API", "Into an MLIR pipeline", "Partial conversion", "Reports, checks, graphs")
SITE = Path(sysconfig.get_paths()["purelib"])


def blocks(language: str) -> list[tuple[str, str]]:
    text = (REPO / "README.md").read_text()
    found = []
    for section in SECTIONS:
        body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
        found += [(section, code) for code in re.findall(rf"```{language}\n(.*?)\n```", body, re.S)]
    return found


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    flatc = SITE / "bin" / "flatc"  # the partial-conversion example's ssd.armnn: the lit fixture, built
    subprocess.run([str(flatc), "-b", "--no-warnings", "-o", str(tmp_path), str(REPO / "schemas" / "armnn.fbs"),
                    str(REPO / "lit_tests" / "cli" / "Inputs" / "ssd_tail.json")], check=True)
    (tmp_path / "ssd_tail.armnn").rename(tmp_path / "ssd.armnn")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_has_the_examples():
    assert len(blocks("python")) >= 2 and len(blocks("sh")) >= 3


@pytest.mark.parametrize("section,code", blocks("python"), ids=lambda v: v[:40] if isinstance(v, str) else v)
def test_python_example_runs(section, code, workdir):
    exec(compile(code, f"README.md ({section})", "exec"), {"__name__": "__readme__"})


@pytest.mark.parametrize("section,code", blocks("sh"), ids=lambda v: v[:40] if isinstance(v, str) else v)
def test_shell_example_runs(section, code, workdir):
    path = os.pathsep.join([str(Path(sys.executable).parent), str(SITE / "mlir" / "bin"), os.environ["PATH"]])
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=workdir, capture_output=True, timeout=600,
                          env=dict(os.environ, PATH=path))
    assert proc.returncode == 0, proc.stderr.decode()
