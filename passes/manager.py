"""Passes registered by name, and a manager that runs a pipeline of them.

A pass is a function `(graph) -> statistics or None` that rewrites the graph in place; the
statistics (counter name -> count, MLIR's pass statistics) say what it did. The manager can verify
the IR after each pass, print it after some or all passes (MLIR's
`// -----// IR Dump After NAME //----- //` banner) and time each pass; instrumentations
(MLIR's PassInstrumentation) see every pass start and end, with its time and statistics: that is
how `nn2tosa.api.convert`, which runs this same manager, reports progress, timings and rewrites. Every
pass runs under the manager's `context` (passes/context.py: the conversion's options, and the remarks
the passes leave for the report).
"""
from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, TextIO

from nn2tosa.diagnostics import UsageError
from nn2tosa.ir import Graph, verify

from .context import PassContext, running_with

Statistics = dict[str, int]
PassFn = Callable[[Graph], "Statistics | None"]


@dataclass(frozen=True)
class PassInfo:
    name: str
    run: PassFn
    doc: str


_PASSES: dict[str, PassInfo] = {}
# Passes registered when first asked for, by the module that defines them: a conversion needs the
# legalization of its own source format only (importing the other costs ~35 ms of start-up), and
# lowering sits after the passes: this table is the only place here that names it.
_ON_DEMAND = {"legalize-armnn": "nn2tosa.passes.legalize_armnn", "legalize-mps": "nn2tosa.passes.legalize_mps",
              "lower-to-tosa": "nn2tosa.lowering.lower"}


def _load(names: Iterable[str]) -> None:
    for name in names:
        if name not in _PASSES and name in _ON_DEMAND:
            importlib.import_module(_ON_DEMAND[name])


def register_pass(name: str) -> Callable[[PassFn], PassFn]:
    """Decorator: make a pass available by `name` in pipelines (the docstring is its help)."""

    def wrap(fn: PassFn) -> PassFn:
        if name in _PASSES:
            raise ValueError(f"pass {name} registered twice")
        _PASSES[name] = PassInfo(name, fn, (fn.__doc__ or "").strip().split("\n")[0])
        return fn

    return wrap


def has_pass(name: str) -> bool:
    """Whether a pass of that name exists (registering it if it is one of the on-demand ones)."""
    _load([name])
    return name in _PASSES


def available_passes() -> dict[str, PassInfo]:
    _load(_ON_DEMAND)
    return dict(sorted(_PASSES.items()))


def parse_pipeline(pipeline: str | Iterable[str]) -> list[PassInfo]:
    names = [p.strip() for p in pipeline.split(",")] if isinstance(pipeline, str) else list(pipeline)
    names = [n for n in names if n]
    _load(names)
    unknown = [n for n in names if n not in _PASSES]
    if unknown:
        raise UsageError(f"unknown pass{'es' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                         f"available: {', '.join(available_passes())}")
    return [_PASSES[n] for n in names]


class PassInstrumentation(Protocol):
    """Hooks the manager calls around every pass (any object with these two methods)."""

    def before_pass(self, info: PassInfo, graph: Graph, index: int, total: int) -> None:
        """Pass `index` of `total` is about to run on `graph`."""

    def after_pass(self, info: PassInfo, graph: Graph, seconds: float, statistics: Statistics) -> None:
        """The pass ran for `seconds` and counted `statistics` (empty when it keeps none)."""


@dataclass
class PassManager:
    pipeline: list[PassInfo]
    verify_each: bool = True
    print_ir_after_all: bool = False
    print_ir_after: frozenset[str] = frozenset()
    timing: bool = False
    out: TextIO = field(default_factory=lambda: sys.stderr)
    timings: list[tuple[str, float]] = field(default_factory=list)
    instrumentations: list[PassInstrumentation] = field(default_factory=list)
    context: PassContext = field(default_factory=PassContext)

    @classmethod
    def from_names(cls, pipeline: str | Iterable[str], **options) -> "PassManager":
        return cls(parse_pipeline(pipeline), **options)

    def run(self, graph: Graph) -> Graph:
        """Run every pass in order on `graph` (in place), under the manager's context, and return it."""
        unknown = self.print_ir_after - {p.name for p in self.pipeline}
        if unknown:
            raise UsageError(f"--print-ir-after names passes not in the pipeline: {', '.join(sorted(unknown))}")
        with running_with(self.context):
            self._run(graph)
        if self.timing:
            self.report_timing()
        return graph

    def _run(self, graph: Graph) -> None:
        for i, p in enumerate(self.pipeline):
            for instrumentation in self.instrumentations:
                instrumentation.before_pass(p, graph, i, len(self.pipeline))
            start = time.perf_counter()
            statistics = p.run(graph) or {}
            seconds = time.perf_counter() - start
            self.timings.append((p.name, seconds))
            for instrumentation in self.instrumentations:
                instrumentation.after_pass(p, graph, seconds, statistics)
            if self.verify_each:
                verify(graph)
            if self.print_ir_after_all or p.name in self.print_ir_after:
                from nn2tosa.ir.text import print_ir  # (imports MLIR: only when asked to print)

                self.out.write(f"// -----// IR Dump After {p.name} //----- //\n")
                self.out.write(print_ir(graph, elide_constants=True))
                self.out.write("\n")

    def report_timing(self) -> None:
        total = sum(t for _, t in self.timings) or 1e-12
        self.out.write("===-------------------------------------------------------------------------===\n")
        self.out.write("                         ... Pass execution timing report ...\n")
        self.out.write("===-------------------------------------------------------------------------===\n")
        self.out.write(f"  Total Execution Time: {total:.4f} seconds\n\n  ----Wall Time----  ----Name----\n")
        for name, t in self.timings:
            self.out.write(f"  {t:.4f} ({100 * t / total:5.1f}%)  {name}\n")
        self.out.write(f"  {total:.4f} (100.0%)  Total\n")
