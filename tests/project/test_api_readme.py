"""The README's examples (model zoos, Python API, MLIR pipelines, partial conversion, reports, checks, graphs)
run as written: each block in a fresh directory holding the bundled examples, with nn2tosa and mlir-opt on PATH."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

SECTIONS = ("Model zoos", "Python API", "Into an MLIR pipeline", "Partial conversion", "Reports, checks, graphs")


def blocks(language: str) -> list[tuple[str, str]]:
    text = (REPO / "README.md").read_text()
    found = []
    for section in SECTIONS:
        body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
        found += [(section, code) for code in re.findall(rf"```{language}\n(.*?)\n```", body, re.S)]
    return found


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    (tmp_path / "examples").symlink_to(REPO / "examples")  # every model the examples use ships there
    monkeypatch.chdir(tmp_path)
    return tmp_path


def activated_env() -> dict[str, str]:
    """The environment after `. .venv/bin/activate`: the venv's bin first on PATH, nothing more (mlir-opt,
    in site-packages/mlir/bin, is not on a user's PATH)."""
    return dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))


def test_the_readme_has_the_examples():
    assert len(blocks("python")) >= 2 and len(blocks("sh")) >= 3


@pytest.mark.parametrize("section,code", blocks("python"), ids=lambda v: v[:40] if isinstance(v, str) else v)
def test_python_example_runs(section, code, workdir):
    exec(compile(code, f"README.md ({section})", "exec"), {"__name__": "__readme__"})


@pytest.mark.parametrize("section,code", blocks("sh"), ids=lambda v: v[:40] if isinstance(v, str) else v)
def test_shell_example_runs(section, code, workdir):
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=workdir, capture_output=True, timeout=600,
                          env=activated_env())
    assert proc.returncode == 0, proc.stderr.decode()


def test_what_the_readme_commands_write_is_ignored_by_git(workdir):
    """Run from the checkout, the README's commands would leave cnn.*, ssd.*, outputs/: .gitignore has them."""
    setup = re.findall(r"```sh\n(.*?)\n```", (REPO / "README.md").read_text().split("## Set up", 1)[1], re.S)[0]
    convert = setup.split("&& ", )[-1].replace(".venv/bin/nn2tosa", "nn2tosa")  # the set-up's own conversion
    for code in [convert] + [c for _, c in blocks("sh")]:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=workdir, capture_output=True,
                              timeout=600, env=activated_env())
        assert proc.returncode == 0, proc.stderr.decode()
    written = sorted(str(p.relative_to(workdir)) for p in workdir.rglob("*") if p.is_file() and "examples" not in p.parts)
    assert any(w.startswith("outputs/") for w in written) and "cnn.tosa" in written and "ssd.region0.tosa" in written
    assert "zoo/summary.json" in written
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *written], cwd=REPO, capture_output=True, text=True)
    assert sorted(ignored.stdout.split()) == written
