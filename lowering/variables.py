"""A program's mutable buffers as TOSA variables.

A whole ExecuTorch program (frontend/mps/program.py) carries each mutable buffer as a graph input and a
graph output (`buffer{v}` and `buffer{v}_next`), listed in `Graph.meta["state"]`: the form `--state io`
keeps. `buffers_to_variables` turns a converted (TOSA-level) graph into the stateful form: per buffer
one `tosa.variable` declaration with its initial value (zeros: ExecuTorch zero-fills planned memory and
the .pte holds no initial values), a `tosa.variable_read` where the input was, and a
`tosa.variable_write` of the value the output had. The buffer's TOSA type is what lowering gave its
input (an int64 counter is carried as int32, as every int64 tensor is: TOSA 1.0 has no int64 tensors).
TOSA 1.0 variables hold int8, fp16 and fp32 only: a buffer of another type (an int32-carried counter)
stays an input and an output, and the report says so (`state_kept_io`).
Reads are created before writes, and the IR keeps ops with side effects in creation order, so every
read of a call sees the value the previous call wrote.
"""
from __future__ import annotations

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import Builder, Graph, Loc, Value

STATE_KEY = "state"
VARIABLES_KEY = "state_variables"  # the buffers made variables
KEPT_KEY = "state_kept_io"  # the buffers that stay inputs and outputs, and why (the report lists them)
# What TOSA 1.0's VARIABLE operators hold (EXT-VARIABLE: int8 with PRO-INT, fp16 and fp32 with PRO-FP)
VARIABLE_TYPES = frozenset({"i8", "f16", "f32"})


def state_of(graph: Graph) -> list[dict]:
    """The graph's mutable buffers (name, value, shape, dtype, initial), [] for a stateless graph."""
    state = graph.meta.get(STATE_KEY)
    return list(state) if isinstance(state, list) else []


def buffers_to_variables(graph: Graph) -> None:
    """Replace every buffer's input and output by variable accesses (see the module docstring)."""
    state = state_of(graph)
    if not state:
        return
    inputs = {graph.input_name(n): n for n in graph.inputs}
    outputs = {o.name: o for o in graph.outputs}
    missing = [s["name"] for s in state if s["name"] not in inputs or s["next"] not in outputs]
    if missing:
        raise AssertionError(f"buffers {missing} are not both an input and an output of {graph.name}")
    writes = []
    kept: list[str] = []
    for s in state:
        name = s["name"]
        node = inputs[name]
        t = graph.tensor_type(Value(node, 0))
        if t.dtype not in VARIABLE_TYPES:
            kept.append(f"{name} ({s['dtype']}{list(s['shape'])}, carried as {t.dtype}): TOSA 1.0 variables hold "
                        f"{', '.join(sorted(VARIABLE_TYPES))} only, so it stays an input and an output")
            continue
        loc = Loc(name, "buffer")
        tosa = TosaBuilder(Builder(graph, loc, constant_dialect="tosa"))
        tosa.variable(sym_name=name, var_shape=list(t.shape), type=t.dtype,
                      initial_value=np.zeros(t.shape, dtype=t.numpy_dtype), types=[])
        read = tosa.variable_read(name=name, types=[t])
        graph.replace_all_uses(Value(node, 0), read)
        graph.erase(node)
        writes.append((name, outputs[s["next"]].value, loc))
    made = {name for name, _, _ in writes}
    graph.outputs = [o for o in graph.outputs if o.name not in {s["next"] for s in state if s["name"] in made}]
    for name, value, loc in writes:
        TosaBuilder(Builder(graph, loc, constant_dialect="tosa")).variable_write(value, name=name, types=[])
    graph.meta[VARIABLES_KEY] = sorted(made)
    if kept:
        graph.meta[KEPT_KEY] = "; ".join(kept)
