"""The IR's MultiDiGraph behaves as networkx.MultiDiGraph does for every method the IR and its users
call: same answers and the same iteration orders after the same random edits (networkx is the reference)."""
from __future__ import annotations

import random

import networkx as nx
import pytest

from nn2tosa.ir.multidigraph import MultiDiGraph


def _views(g) -> dict:
    nodes = list(g.nodes)
    return {
        "len": len(g), "nodes": nodes, "number_of_nodes": g.number_of_nodes(),
        "number_of_edges": g.number_of_edges(),
        "nodes_data": [(n, dict(d)) for n, d in g.nodes(data=True)],
        "nodes_op": list(g.nodes(data="op")),
        "edges": list(g.edges()), "edges_keys": list(g.edges(keys=True)),
        "edges_data": [(u, v, k, dict(d)) for u, v, k, d in g.edges(keys=True, data=True)],
        "edges_result": list(g.edges(keys=True, data="result")),
        "edges_result_nokey": list(g.edges(data="result")),
        "in_degree": dict(g.in_degree()), "out_degree": {n: g.out_degree(n) for n in nodes},
        "in_edges": {n: list(g.in_edges(n, keys=True)) for n in nodes},
        "in_edges_plain": {n: list(g.in_edges(n)) for n in nodes},
        "out_edges": {n: list(g.out_edges(n)) for n in nodes},
        "successors": {n: list(g.successors(n)) for n in nodes},
        "pred": {n: {u: dict(k) for u, k in g._pred[n].items()} for n in nodes},
        "succ": {n: {v: dict(k) for v, k in g._succ[n].items()} for n in nodes},
        "contains": [n in g for n in range(-1, 40)],
    }


@pytest.mark.parametrize("seed", range(20))
def test_random_edits_read_back_as_networkx(seed):
    rng = random.Random(seed)
    ours, ref = MultiDiGraph(), nx.MultiDiGraph()
    for step in range(300):
        nodes = list(ref.nodes)
        action = rng.random()
        if action < 0.25 or len(nodes) < 2:
            n = rng.randrange(40)
            for g in (ours, ref):
                g.add_node(n, op=f"op{step}", types=[step])
        elif action < 0.65:
            u, v = rng.choice(nodes), rng.choice(nodes)
            key = rng.randrange(4) if rng.random() < 0.8 else None
            assert ours.add_edge(u, v, key=key, result=step % 3) == ref.add_edge(u, v, key=key, result=step % 3)
        elif action < 0.85:
            edges = list(ref.edges(keys=True))
            if edges:
                u, v, k = rng.choice(edges)
                key = k if rng.random() < 0.8 else None
                for g in (ours, ref):
                    g.remove_edge(u, v, key)
        else:
            n = rng.choice(nodes)
            for g in (ours, ref):
                g.remove_node(n)
        if step % 25 == 0:
            assert _views(ours) == _views(ref)
    assert _views(ours) == _views(ref)
    assert ours.nodes[next(iter(ref.nodes))] == ref.nodes[next(iter(ref.nodes))]
    copies = []  # as Graph.copy makes one: nodes, then edges in edge order (the orders of _pred may differ)
    for source, g in ((ours, MultiDiGraph()), (ref, nx.MultiDiGraph())):
        for n, d in source.nodes(data=True):
            g.add_node(n, **d)
        g.add_edges_from(source.edges(keys=True, data=True))
        copies.append(g)
    assert _views(copies[0]) == _views(copies[1])
    assert _views(ours.to_networkx()) == _views(copies[1])
