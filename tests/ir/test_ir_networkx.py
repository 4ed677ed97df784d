"""The IR is networkx's graph at every stage: `graph.nx` of an Arm NN, an MPS (`.mpsgraph` and `.pte`) and a
`.tosa` model as read, and of each one converted, is a networkx.MultiDiGraph that networkx's algorithms take;
the order it walks agrees with the IR's own; it pickles; docs/api.md's example runs as printed there."""
from __future__ import annotations

import contextlib
import io
import pickle
import re

import networkx as nx
import pytest

import nn2tosa
from nn2tosa.ir import INPUT_OP, Graph

from conftest import CORPUS, REPO, requires_corpus

EXAMPLE = REPO / "examples" / "cnn_f32.armnn"


def _graphs(loaded: Graph | list[Graph]) -> list[Graph]:
    return loaded if isinstance(loaded, list) else [loaded]


@pytest.fixture(scope="module")
def tosa_file(tmp_path_factory) -> str:
    """The example converted to a .tosa file (read back as a model of its own)."""
    path = tmp_path_factory.mktemp("tosa") / "cnn_f32.tosa"
    nn2tosa.convert(str(EXAMPLE)).write(str(path), "tosa")
    return str(path)


MODELS = {
    "armnn": lambda tosa: str(EXAMPLE),
    "armnn-corpus": lambda tosa: str(CORPUS / "armnn" / "pyarmnn_23.08" / "add_mul_sub_max_concat_reshape_permute_f32.armnn"),
    "mpsgraph": lambda tosa: str(CORPUS / "mps" / "models" / "cnn_fp32.mpsgraph"),
    "pte": lambda tosa: str(CORPUS / "mps" / "programs" / "convnext_small.pte"),
    "tosa": lambda tosa: tosa,
}


def _check_networkx(graph: Graph) -> None:
    g = graph.nx
    assert isinstance(g, nx.MultiDiGraph)
    order = list(nx.topological_sort(g))
    assert sorted(order) == sorted(graph.nodes())
    position = {n: i for i, n in enumerate(order)}
    assert all(position[u] < position[v] for u, v in g.edges())
    chain = nx.dag_longest_path(g)
    assert len(chain) >= 2
    assert g.in_degree(chain[0]) == 0 and g.out_degree(chain[-1]) == 0
    assert all(g.has_edge(u, v) for u, v in zip(chain, chain[1:]))
    # the IR's own walk (ties by creation order) is networkx's lexicographical one where no op has effects
    if not graph._effectful:
        assert graph.topological() == list(nx.lexicographical_topological_sort(g))
    # edges are the operands: key = operand slot, data["result"] = the producer's result
    for node in graph.nodes():
        assert [(u, d["result"]) for u, _, _, d in sorted(g.in_edges(node, keys=True, data=True),
                                                           key=lambda e: e[2])] == list(graph.operands(node))


@requires_corpus
@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_stage_is_a_networkx_graph(model, tosa_file):
    path = MODELS[model](tosa_file)
    loaded = _graphs(nn2tosa.load(path))
    for graph in loaded:
        _check_networkx(graph)
    for graph in loaded:
        result = nn2tosa.convert(graph)
        for function in [result.graph, *result.functions]:
            _check_networkx(function)
            assert all(op.startswith("tosa.") or op == INPUT_OP for _, op in function.nx.nodes(data="op"))


def test_networkx_reads_the_ops_and_values():
    """Node data and edge keys say what docs/architecture.md says they do: a conv's in-edges are its input,
    weights and bias at keys 0, 1, 2, each reading result 0."""
    graph = nn2tosa.load(str(EXAMPLE))
    conv = next(n for n, op in graph.nx.nodes(data="op") if op == "armnn.Convolution2d")
    edges = sorted((k, u, d) for u, _, k, d in graph.nx.in_edges(conv, keys=True, data=True))
    assert [k for k, _, _ in edges] == list(range(len(graph.operands(conv))))
    assert all(d == {"result": 0} for _, _, d in edges)
    assert nx.ancestors(graph.nx, conv) >= {graph.inputs[0]}
    layout = nx.spring_layout(graph.nx, seed=0)  # networkx's drawing takes it as well
    assert set(layout) == set(graph.nodes())


def test_a_graph_pickles_and_copies_with_its_order():
    """Forked zoo workers and check's child hand results back pickled: a graph survives it unchanged."""
    graph = nn2tosa.convert(str(EXAMPLE)).graph
    for other in (pickle.loads(pickle.dumps(graph)), graph.copy()):
        assert isinstance(other.nx, nx.MultiDiGraph)
        assert list(other.nx.nodes) == list(graph.nx.nodes)
        assert list(other.nx.edges(keys=True, data="result")) == list(graph.nx.edges(keys=True, data="result"))
        assert other.topological() == graph.topological() and other.outputs == graph.outputs


def test_the_api_doc_example_prints_what_the_doc_shows(monkeypatch):
    text = (REPO / "docs" / "api.md").read_text()
    section = text.split("\n## The graph is a networkx graph\n", 1)[1].split("\n## ", 1)[0]
    code, shown = re.findall(r"```(?:python)?\n(.*?)\n```", section, re.S)
    monkeypatch.chdir(REPO)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/api.md", "exec"), {})
    assert out.getvalue().rstrip("\n") == shown
