"""`nn2tosa graph`: DOT of each stage with op names, shapes and locations; SVG through Graphviz."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

import nn2tosa
from conftest import REPO, run_cli

EXAMPLE = REPO / "examples" / "cnn_f32.armnn"
NODE = re.compile(r'^\s*n(\d+) \[label="((?:[^"\\]|\\.)*)"', re.M)
EDGE = re.compile(r"^\s*n(\d+) -> (n\d+|out\d+)", re.M)


def dot_of(stage: str, tmp_path) -> str:
    out = tmp_path / f"{stage}.dot"
    proc = run_cli("graph", str(EXAMPLE), "--stage", stage, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


@pytest.mark.parametrize("stage", ["source", "nn", "tosa"])
def test_every_op_and_edge_is_drawn(stage, tmp_path):
    graph = nn2tosa.load(EXAMPLE)
    if stage != "source":
        passes = nn2tosa.api.tosa_pipeline("armnn")
        graph = nn2tosa.convert(graph, passes=passes if stage == "tosa" else passes[:2]).graph
    dot = dot_of(stage, tmp_path)
    labels = {int(n): label for n, label in NODE.findall(dot)}
    assert len(labels) == len(graph)  # ops and graph inputs
    ops = sorted(label.split("\\n")[0] for n, label in labels.items() if n not in graph.inputs)
    assert ops == sorted(graph.op(n) for n in graph.nodes() if n not in graph.inputs)
    assert len(EDGE.findall(dot)) == graph.nx.number_of_edges() + len(graph.outputs)
    prefix = {"source": "armnn.", "nn": "nn.", "tosa": "tosa."}[stage]
    conv = next(label for label in labels.values() if label.startswith(prefix) and "onv" in label.split("\\n")[0])
    assert "conv1 (layer 5)" in conv and "1x16x16x8 f32" in conv  # location and result type
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tplain"], input=dot.encode(), check=True, capture_output=True)  # Graphviz reads it


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_svg_through_graphviz(tmp_path):
    out = tmp_path / "g.svg"
    proc = run_cli("graph", str(EXAMPLE), "--stage", "tosa", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "tosa.conv2d" in svg


def test_svg_without_graphviz_is_a_clear_error(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # no dot on this PATH
    proc = subprocess.run([sys.executable, "-m", "nn2tosa", "graph", str(EXAMPLE), "-o", str(tmp_path / "g.svg")],
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == ("nn2tosa: error: writing .svg needs the `dot` program of Graphviz, which "
                                            "is not installed (e.g. apt install graphviz); write a .dot file instead")
    assert not (tmp_path / "g.svg").exists()


def test_unknown_format_and_stdout(tmp_path):
    proc = run_cli("graph", str(EXAMPLE), "-o", str(tmp_path / "g.jpeg"))
    assert proc.returncode == 2 and b"unknown graph format" in proc.stderr
    proc = run_cli("graph", str(EXAMPLE), "--stage", "source", "-o", "-")
    assert proc.returncode == 0 and proc.stdout.startswith(b"digraph nn2tosa {")
