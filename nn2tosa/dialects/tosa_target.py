"""What a TOSA-level graph needs from a TOSA 1.0 implementation: profiles, extensions and level.

The profile and extension of each operator follow the "Supported Data Types" tables of the TOSA 1.0
specification (which MLIR's tosa-validate also implements), kept in each op's record of the op table
(nn2tosa/dialects/tosa_ops, `support`): a row says which element types an op may combine and which
profile or extension provides that combination. `required_target` walks the graph, looks every
op's type signature up in its record and keeps the smallest set that
covers all of them; RESCALE's rounding modes add doubleround/inexactround, and a shape past an 8K
level limit makes the level "none". Typical use:

    target = required_target(graph)
    target.mlir_attr()          # #tosa.target_env<...> for the module
    target.pipeline_options()   # "profiles=pro_int extensions=int16 level=8k" for tosa-attach-target
    target.report()             # a JSON-able dict, with the op that needs each item
"""
from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nn2tosa.diagnostics import Nn2TosaError
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Type
from nn2tosa.ir.types import bit_width

from .tosa_ops import TOSA_OPS, Support, View
from .tosa_ops.levels import MAX_LOG2_SIZE, MAX_RANK

SPECIFICATION_VERSION = "1.0"
PROFILES = ("pro_int", "pro_fp")
# in the order MLIR's tosa.target_env prints them
EXTENSIONS = ("int16", "int4", "bf16", "fp8e4m3", "fp8e5m2", "fft", "variable", "controlflow",
              "doubleround", "inexactround", "dynamic")
LEVELS = ("8k", "none")

# The profile an extension may be combined with (TOSA 1.0, "Profiles and extensions"); MLIR
# rejects an extension-only type combination unless that profile is enabled too.
EXTENSION_PROFILE = {
    "int16": "pro_int", "int4": "pro_int", "doubleround": "pro_int", "inexactround": "pro_int",
    "bf16": "pro_fp", "fp8e4m3": "pro_fp", "fp8e5m2": "pro_fp", "fft": "pro_fp",
}

# Level 8K: tensor ranks and sizes are checked here, each op's own limits (kernel, stride, ...) by
# its record's `level` (tosa_ops/levels.py).


# ------------------------------------------------------------------------------ requirements
# Each op's record in the op table (tosa_ops) says which profile or extension provides each of its
# type combinations (`TosaOp.support`; the requirement codes are explained at record.rows).
# "tosa.<op>" -> its Support, looked up in the op table when asked.
COMPLIANCE: Mapping[str, Support] = View(lambda op: op.support)



def attribute_extensions(graph: Graph, node: int) -> list[str]:
    """The extensions one op needs for its attribute values (RESCALE's rounding modes beyond
    SINGLE_ROUND), from its record's `attribute_extensions`."""
    op = TOSA_OPS.get(graph.op(node))
    if op is None or not op.attribute_extensions:
        return []
    attrs = graph.attrs(node)
    return [table[attrs[name]] for name, table in op.attribute_extensions.items() if attrs.get(name) in table]


# ------------------------------------------------------------------------------ the target
@dataclass(frozen=True)
class Target:
    """A TOSA 1.0 target: profiles, extensions and level, with why each is needed."""

    profiles: tuple[str, ...]
    extensions: tuple[str, ...] = ()
    level: str = "8k"
    # item ("pro_fp", "int16", "level none") -> the first op that needs it, e.g. "tosa.conv2d 'conv1'"
    reasons: dict[str, str] = field(default_factory=dict, compare=False)
    # type combinations no TOSA 1.0 profile or extension provides (a lowering bug)
    problems: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        unknown = [p for p in self.profiles if p not in PROFILES] + [e for e in self.extensions if e not in EXTENSIONS]
        if unknown or self.level not in LEVELS:
            raise ValueError(f"not a TOSA 1.0 target: {unknown or self.level}")
        # canonical order, so that equal targets print equally
        object.__setattr__(self, "profiles", tuple(p for p in PROFILES if p in self.profiles))
        object.__setattr__(self, "extensions", tuple(e for e in EXTENSIONS if e in self.extensions))

    def mlir_attr(self, context: Any = None) -> Any:
        """The `#tosa.target_env<...>` attribute (in `context`, or the current one).

        Made by MLIR's own tosa-attach-target pass rather than parsed from text: MLIR 22 prints an
        empty profile or extension list as `[]` but cannot parse it back."""
        from mlir import ir
        from mlir.passmanager import PassManager

        with (context or ir.Context.current), ir.Location.unknown():
            scratch = ir.Module.create()
            PassManager.parse(f"builtin.module(tosa-attach-target{{{self.pipeline_options()}}})").run(scratch.operation)
            return scratch.operation.attributes["tosa.target_env"]

    def pipeline_options(self) -> str:
        """Options of MLIR's `tosa-attach-target` pass. Built only from the validated names above, so
        the pipeline string cannot be malformed."""
        parts = []
        if self.profiles:
            parts.append("profiles=" + ",".join(self.profiles))
        if self.extensions:
            parts.append("extensions=" + ",".join(self.extensions))
        parts.append(f"level={self.level}")
        return " ".join(parts)

    def report(self) -> dict[str, Any]:
        """JSON-able: specification version, profiles, extensions, level, reasons and problems."""
        return {
            "specification_version": SPECIFICATION_VERSION,
            "profiles": list(self.profiles),
            "extensions": list(self.extensions),
            "level": self.level,
            "reasons": dict(sorted(self.reasons.items())),
            "problems": list(self.problems),
        }

    def __str__(self) -> str:
        ext = f", extensions {'+'.join(self.extensions)}" if self.extensions else ""
        return f"TOSA {SPECIFICATION_VERSION} {'+'.join(self.profiles) or 'no profile'}{ext}, level {self.level}"


def _signature(graph: Graph, node: int, spec: Sequence[str]) -> tuple[str, ...]:
    attrs = graph.attrs(node)
    types = []
    for item in spec:
        if item in ("acc", "type"):
            types.append(str(attrs.get("acc_type" if item == "acc" else "type")))
            continue
        source = graph.type_of(graph.operand(node, int(item[1:]))) if item[0] == "o" else graph.types(node)[int(item[1:])]
        types.append(source.dtype if isinstance(source, TensorType) else "shape")
    return tuple(types)


def _where(graph: Graph, node: int) -> str:
    loc = graph.loc(node)
    return f"{graph.op(node)} %{node}" + (f" '{loc.name}'" if loc else "")


class _Where:
    """_where(graph, node), formatted when first turned into a string (most ops never are)."""

    __slots__ = ("graph", "node")

    def __init__(self, graph: Graph, node: int):
        self.graph, self.node = graph, node

    def __str__(self) -> str:
        return _where(self.graph, self.node)

    def __format__(self, spec: str) -> str:  # f"{where}: ..."
        return format(str(self), spec)


def op_requirement(graph: Graph, node: int) -> str | None:
    """The requirement code of one op (see tosa_ops.record.rows), or None when TOSA 1.0 has no such
    op/type combination."""
    entry = COMPLIANCE.get(graph.op(node))
    if entry is None:
        return None
    return entry.rows.get(_signature(graph, node, entry.signature))


def required_target(graphs: Graph | Iterable[Graph]) -> Target:
    """The smallest TOSA 1.0 target that runs every op of the TOSA-level graph(s)."""
    graphs = [graphs] if isinstance(graphs, Graph) else list(graphs)
    needed: dict[str, str] = {}  # item -> first op needing it
    either: list[str] = []  # ops any profile can run (the first one named)
    problems: list[str] = []
    level_reasons: list[str] = []

    for g in graphs:
        for node in g.topological():
            op = g.op(node)
            if op == INPUT_OP:
                continue
            where = _Where(g, node)  # the op's name for a message, made only if one needs it

            def need(item: str, where: _Where = where) -> None:
                if item not in needed:
                    needed[item] = str(where)

            requirement = op_requirement(g, node)
            if requirement is None:
                sig = _signature(g, node, COMPLIANCE[op].signature) if op in COMPLIANCE else ()
                problems.append(f"{where}: no TOSA 1.0 profile or extension has {op} on {', '.join(sig) or 'these types'}")
                continue
            for part in requirement.split("+"):
                if part == "any":
                    if not either:
                        either.append(str(where))
                elif part in ("int", "fp"):
                    need(f"pro_{part}")
                else:
                    need(part)
                    if part in EXTENSION_PROFILE:
                        need(EXTENSION_PROFILE[part])
            for extension in attribute_extensions(g, node):
                need(extension)
                need(EXTENSION_PROFILE[extension])
            types = [g.type_of(v) for v in g.operands(node)] + g.types(node)
            if any(_is_dynamic(t) for t in types):
                need("dynamic")
            level_reasons.extend(f"{where}: {p}" for p in level_8k_problems(g, node, types))
    if either and not any(p in needed for p in PROFILES):
        # ops both profiles have (bool logic, i32 arithmetic, shapes): the integer profile is enough
        needed["pro_int"] = either[0]
    if level_reasons:
        needed["level none"] = level_reasons[0]
    return Target(
        profiles=tuple(p for p in PROFILES if p in needed),
        extensions=tuple(e for e in EXTENSIONS if e in needed),
        level="none" if level_reasons else "8k",
        reasons=needed,
        problems=tuple(problems),
    )


class NotTosaError(Nn2TosaError):
    """A TOSA-level graph uses an op on types no TOSA 1.0 profile or extension has: a lowering bug
    (exit code 1). The emitters stop here rather than hand such an op to MLIR, whose verifier can
    abort the process on some of them (e.g. CLAMP on fp8 in MLIR 22)."""

    exit_code = 1

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("internal error: not TOSA 1.0: " + "; ".join(self.problems))


def require_tosa_1_0(graphs: Graph | Iterable[Graph]) -> Target:
    """`required_target(graphs)`, raising NotTosaError when some op has no TOSA 1.0 type combination."""
    target = required_target(graphs)
    if target.problems:
        raise NotTosaError(target.problems)
    return target


@functools.lru_cache(maxsize=4096)
def _is_dynamic(t: Type) -> bool:
    return isinstance(t, TensorType) and any(d < 0 for d in t.shape)


# ------------------------------------------------------------------------------ level 8K
@functools.lru_cache(maxsize=4096)
def _type_level_problems(t: Type) -> tuple[str, ...]:
    """What one tensor type exceeds of level 8K: rank, or size in bytes (cached: models repeat types)."""
    if not isinstance(t, TensorType):
        return ()
    if t.rank > MAX_RANK:
        return (f"rank {t.rank} > {MAX_RANK}",)
    if not _is_dynamic(t):
        size = max(1, (bit_width(t.dtype) + 7) // 8) * math.prod(t.shape)
        if size > (1 << MAX_LOG2_SIZE) - 1:
            return (f"{t} has {size} bytes >= 2**{MAX_LOG2_SIZE}",)
    return ()


def _kernel_checks(graph: Graph, node: int) -> list[tuple[str, int, int]]:
    """(what, value, limit) triples of the op's kernel, stride, padding and scale limits (its record's `level`)."""
    op = TOSA_OPS.get(graph.op(node))
    return [] if op is None or op.level is None else op.level(graph, node)


def level_8k_problems(graph: Graph, node: int, types: Sequence[Type] | None = None) -> list[str]:
    """The limits of level 8K that one op exceeds (empty when it fits); `types` are its operand and
    result types when the caller has them already."""
    problems = [f"{what} {value} > {limit}" for what, value, limit in _kernel_checks(graph, node) if value > limit]
    if types is None:
        types = [graph.type_of(v) for v in graph.operands(node)] + list(graph.types(node))
    for t in types:
        problems.extend(_type_level_problems(t))
    return problems


__all__ = ["Target", "required_target", "require_tosa_1_0", "NotTosaError", "op_requirement", "level_8k_problems",
           "attribute_extensions", "COMPLIANCE", "PROFILES", "EXTENSIONS"]
