"""Time printing and parsing the IR text of a 10,000-op graph (medians of several runs).

Run: python bench/ir_roundtrip.py [--ops N] [--runs R]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from nn2tosa.ir import Graph, Loc, TensorType, Value
from nn2tosa.ir.text import parse_graph, print_ir


def chain(ops: int) -> Graph:
    """x -> (add const) -> (neg) -> ... : `ops` operations in all, half of them constants."""
    g = Graph()
    t = TensorType((1, 16), "f32")
    v = g.add_input(t, "x")
    for i in range(ops // 2):
        c = g.add_op("nn.constant", [], [t], {"value": np.full((1, 16), i, np.float32)}, Loc(f"c{i}"))
        v = Value(g.add_op("nn.add", [v, Value(c)], [t], loc=Loc(f"layer{i}", f"layer {i}")))
    g.add_output(v, "y")
    return g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    g = chain(args.ops)
    prints, parses = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        text = print_ir(g)
        t1 = time.perf_counter()
        parse_graph(text)
        parses.append(time.perf_counter() - t1)
        prints.append(t1 - t0)
    print(f"{len(g) - 1} ops, {len(text) / 1e6:.1f} MB of text: "
          f"print {statistics.median(prints):.3f} s, parse {statistics.median(parses):.3f} s (median of {args.runs})")


if __name__ == "__main__":
    main()
