"""What a TOSA-level graph needs from a TOSA 1.0 implementation: profiles, extensions and level.

The profile and extension of each operator follow the "Supported Data Types" tables of the TOSA 1.0
specification (which MLIR's tosa-validate also implements): a row says which element types an op
may combine and which profile or extension provides that combination. `required_target` walks
the graph, looks every op's type signature up in `COMPLIANCE` and keeps the smallest set that
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nn2tosa.diagnostics import Nn2TosaError
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Type
from nn2tosa.ir.types import bit_width

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

# Level 8K limits (TOSA 1.0 "Levels").
MAX_RANK = 6
MAX_KERNEL = 8192
MAX_STRIDE = 8192
MAX_SCALE = 256
MAX_LOG2_SIZE = 31
MAX_TENSOR_LIST_SIZE = 64


# ------------------------------------------------------------------------------ requirements
# A requirement code names what provides one type combination:
#   "int" / "fp": that profile;  "any": either profile (e.g. i32 add, bool logic, shapes);
#   an extension name (int16, bf16, ...): that extension and the profile it works with;
#   "a+b": every extension listed.
def _rows(table: dict[str, str]) -> dict[tuple[str, ...], str]:
    """{requirement: "sig sig ..."} with each sig "t1,t2,..." -> {(t1, t2, ...): requirement}."""
    rows = {}
    for requirement, signatures in table.items():
        for sig in signatures.split():
            rows[tuple(sig.split(","))] = requirement
    return rows


E4, E5 = "f8E4M3FN", "f8E5M2"
_FLOAT_UNARY = _rows({"fp": "f16 f32", "bf16": "bf16"})
_CONV = _rows({
    "int": "i8,i8,i32", "fp": "f16,f16,f16 f16,f16,f32 f32,f32,f32", "int4": "i8,i4,i32", "int16": "i16,i8,i48",
    "fp8e4m3": f"{E4},{E4},f16", "fp8e5m2": f"{E5},{E5},f16", "bf16": "bf16,bf16,f32",
})
_DATA_MOVEMENT = _rows({"any": "i1", "int": "i8 i16 i32", "fp": "f16 f32", "fp8e4m3": E4, "fp8e5m2": E5, "bf16": "bf16"})
_INT_BITWISE = _rows({"int": "i8 i16 i32"})
_ARITH_I32_ANY = _rows({"any": "i32", "fp": "f16 f32", "bf16": "bf16"})
_ARITH_I32_INT = _rows({"int": "i32", "fp": "f16 f32", "bf16": "bf16"})
_BOOL = _rows({"any": "i1"})
_SHIFT = _rows({"any": "i8 i16 i32"})
_REDUCE_MINMAX = _rows({"int": "i8 i16 i32", "fp": "f16 f32", "bf16": "bf16"})
_GATHER = _rows({"int": "i8 i16 i32", "fp": "f16 f32", "fp8e4m3": E4, "fp8e5m2": E5, "bf16": "bf16"})
_DATA_NODE = _rows({"any": "i1 i8 i16 i32", "fp": "f16 f32", "int4": "i4", "int16": "i48",
                    "fp8e4m3": E4, "fp8e5m2": E5, "bf16": "bf16"})
_VARIABLE = _rows({"int+variable": "i8", "fp+variable": "f16 f32"})


def _cast_rows() -> dict[tuple[str, ...], str]:
    ints = ("i8", "i16", "i32")
    rows: dict[tuple[str, ...], str] = {}
    for a in ("i1",) + ints:  # every conversion among bool and the integer types
        for b in ("i1",) + ints:
            if a != b:
                rows[(a, b)] = "int"
    for i in ints:
        rows.update({(i, "f16"): "fp", (i, "f32"): "fp", ("f16", i): "fp", ("f32", i): "fp",
                     (i, "bf16"): "bf16", ("bf16", i): "bf16"})
    rows.update({("f16", "f32"): "fp", ("f32", "f16"): "fp", ("bf16", "f32"): "bf16", ("f32", "bf16"): "bf16"})
    for f8, ext in ((E4, "fp8e4m3"), (E5, "fp8e5m2")):
        rows.update({(f8, "f16"): ext, (f8, "f32"): ext, ("f16", f8): ext, ("f32", f8): ext,
                     (f8, "bf16"): f"bf16+{ext}", ("bf16", f8): f"bf16+{ext}"})
    return rows


# How an op's type signature is read: element types of operands ("o<k>"), results ("r<k>") or
# of the `acc_type` attribute ("acc"), in this order.
_SIG_IN = ("o0",)
_SIG_IN_OUT = ("o0", "r0")

# op -> (signature, {signature types: requirement}). Types outside the table are not TOSA 1.0.
COMPLIANCE: dict[str, tuple[tuple[str, ...], dict[tuple[str, ...], str]]] = {
    "argmax": (_SIG_IN, _rows({"int": "i8", "fp": "f16 f32", "int16": "i16", "fp8e4m3": E4, "fp8e5m2": E5,
                               "bf16": "bf16"})),
    "avg_pool2d": (("o0", "acc"), _rows({"int": "i8,i32", "fp": "f16,f16 f16,f32 f32,f32", "int16": "i16,i32",
                                         "fp8e4m3": f"{E4},f16", "fp8e5m2": f"{E5},f16", "bf16": "bf16,f32"})),
    "conv2d": (("o0", "o1", "acc"), _CONV),
    "conv3d": (("o0", "o1", "acc"), _CONV),
    "depthwise_conv2d": (("o0", "o1", "acc"), _CONV),
    "transpose_conv2d": (("o0", "o1", "acc"), _CONV),
    "fft2d": (_SIG_IN, _rows({"fft": "f32"})),
    "rfft2d": (_SIG_IN, _rows({"fft": "f32"})),
    "matmul": (("o0", "o1", "r0"), _rows({
        "int": "i8,i8,i32", "fp": "f16,f16,f16 f16,f16,f32 f32,f32,f32", "int16": "i16,i16,i48",
        "fp8e4m3": f"{E4},{E4},f16 {E4},{E4},f32", "fp8e5m2": f"{E5},{E5},f16 {E5},{E5},f32",
        "fp8e4m3+fp8e5m2": f"{E4},{E5},f16 {E4},{E5},f32 {E5},{E4},f16 {E5},{E4},f32", "bf16": "bf16,bf16,f32"})),
    "max_pool2d": (_SIG_IN, _rows({"int": "i8", "fp": "f16 f32", "int16": "i16", "fp8e4m3": E4, "fp8e5m2": E5,
                                   "bf16": "bf16"})),
    "clamp": (_SIG_IN, _rows({"int": "i8", "fp": "f16 f32", "int16": "i16", "bf16": "bf16"})),
    "erf": (_SIG_IN, _FLOAT_UNARY),
    "sigmoid": (_SIG_IN, _FLOAT_UNARY),
    "tanh": (_SIG_IN, _FLOAT_UNARY),
    "add": (_SIG_IN, _ARITH_I32_ANY),
    "sub": (_SIG_IN, _ARITH_I32_ANY),
    "arithmetic_right_shift": (_SIG_IN, _INT_BITWISE),
    "bitwise_and": (_SIG_IN, _INT_BITWISE),
    "bitwise_or": (_SIG_IN, _INT_BITWISE),
    "bitwise_xor": (_SIG_IN, _INT_BITWISE),
    "bitwise_not": (_SIG_IN, _INT_BITWISE),
    "intdiv": (_SIG_IN, _rows({"any": "i32"})),
    "logical_and": (_SIG_IN, _BOOL),
    "logical_or": (_SIG_IN, _BOOL),
    "logical_xor": (_SIG_IN, _BOOL),
    "logical_not": (_SIG_IN, _BOOL),
    "logical_left_shift": (_SIG_IN, _SHIFT),
    "logical_right_shift": (_SIG_IN, _SHIFT),
    "maximum": (_SIG_IN, _ARITH_I32_INT),
    "minimum": (_SIG_IN, _ARITH_I32_INT),
    "mul": (_SIG_IN_OUT, _rows({"int": "i8,i32 i16,i32", "any": "i32,i32", "fp": "f16,f16 f32,f32",
                                "bf16": "bf16,bf16"})),
    "pow": (_SIG_IN, _FLOAT_UNARY),
    "table": (_SIG_IN, _rows({"int": "i8", "int16": "i16"})),
    "abs": (_SIG_IN, _ARITH_I32_INT),
    "ceil": (_SIG_IN, _FLOAT_UNARY),
    "clz": (_SIG_IN, _rows({"int": "i32"})),
    "cos": (_SIG_IN, _FLOAT_UNARY),
    "exp": (_SIG_IN, _FLOAT_UNARY),
    "floor": (_SIG_IN, _FLOAT_UNARY),
    "log": (_SIG_IN, _FLOAT_UNARY),
    "negate": (_SIG_IN, _rows({"int": "i8 i16 i32", "fp": "f16 f32", "bf16": "bf16"})),
    "reciprocal": (_SIG_IN, _FLOAT_UNARY),
    "rsqrt": (_SIG_IN, _FLOAT_UNARY),
    "sin": (_SIG_IN, _FLOAT_UNARY),
    "select": (("o1",), _rows({"any": "i1", "int": "i8 i16 i32", "fp": "f16 f32", "bf16": "bf16"})),
    "equal": (_SIG_IN, _ARITH_I32_INT),
    "greater": (_SIG_IN, _ARITH_I32_INT),
    "greater_equal": (_SIG_IN, _ARITH_I32_INT),
    "reduce_all": (_SIG_IN, _BOOL),
    "reduce_any": (_SIG_IN, _BOOL),
    "reduce_max": (_SIG_IN, _REDUCE_MINMAX),
    "reduce_min": (_SIG_IN, _REDUCE_MINMAX),
    "reduce_product": (_SIG_IN, _FLOAT_UNARY),
    "reduce_sum": (_SIG_IN, _ARITH_I32_INT),
    # CONCAT is the one data-movement op whose i16 form needs EXT-INT16
    "concat": (_SIG_IN, _rows({"any": "i1", "int": "i8 i32", "int16": "i16", "fp": "f16 f32", "fp8e4m3": E4,
                               "fp8e5m2": E5, "bf16": "bf16"})),
    "pad": (_SIG_IN, _DATA_MOVEMENT),
    "reshape": (_SIG_IN, _DATA_MOVEMENT),
    "reverse": (_SIG_IN, _DATA_MOVEMENT),
    "slice": (_SIG_IN, _DATA_MOVEMENT),
    "tile": (_SIG_IN, _DATA_MOVEMENT),
    "transpose": (_SIG_IN, _DATA_MOVEMENT),
    "gather": (_SIG_IN, _GATHER),
    "scatter": (_SIG_IN, _GATHER),
    "resize": (_SIG_IN_OUT, _rows({"int": "i8,i32 i8,i8", "fp": "f16,f16 f32,f32", "int16": "i16,i48 i16,i16",
                                   "bf16": "bf16,bf16"})),
    "cast": (_SIG_IN_OUT, _cast_rows()),
    "rescale": (_SIG_IN_OUT, _rows({"int": " ".join(f"{a},{b}" for a in ("i8", "i16", "i32") for b in ("i8", "i16", "i32")),
                                    "int16": "i48,i8 i48,i16 i48,i32"})),
    "const": (("r0",), _DATA_NODE),
    "identity": (_SIG_IN, _DATA_NODE),
    "variable": (("type",), _VARIABLE),
    "variable_read": (("r0",), _VARIABLE),
    "variable_write": (_SIG_IN, _VARIABLE),
    "custom": ((), {(): "any"}),
    "const_shape": ((), {(): "any"}),
    "cond_if": ((), {(): "any+controlflow"}),
    "while_loop": ((), {(): "any+controlflow"}),
}

# RESCALE rounding modes beyond SINGLE_ROUND come from extensions.
ROUNDING_MODE_EXTENSION = {"DOUBLE_ROUND": "doubleround", "INEXACT_ROUND": "inexactround"}


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
    """The requirement code of one op (see `_rows`), or None when TOSA 1.0 has no such op/type combination."""
    name = graph.op(node).split(".", 1)[1]
    entry = COMPLIANCE.get(name)
    if entry is None:
        return None
    spec, rows = entry
    return rows.get(_signature(graph, node, spec))


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
                sig = _signature(g, node, COMPLIANCE[op.split(".", 1)[1]][0]) if op.split(".", 1)[1] in COMPLIANCE else ()
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
            mode = g.attrs(node).get("rounding_mode")
            if op == "tosa.rescale" and mode in ROUNDING_MODE_EXTENSION:
                need(ROUNDING_MODE_EXTENSION[mode])
                need("pro_int")
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
    """(what, value, limit) triples of the op's kernel, stride, padding and scale limits."""
    op = graph.op(node).split(".", 1)[1]
    attrs = graph.attrs(node)
    checks: list[tuple[str, int, int]] = []
    if op in ("conv2d", "depthwise_conv2d", "conv3d"):
        weight = graph.type_of(graph.operand(node, 1)).shape
        spatial = weight[1:-1] if op != "depthwise_conv2d" else weight[:2]
        checks += [(f"dilation*kernel[{i}]", d * k, MAX_KERNEL) for i, (d, k) in enumerate(zip(attrs["dilation"], spatial))]
        checks += [("pad", p, MAX_KERNEL) for p in attrs["pad"]] + [("stride", s, MAX_STRIDE) for s in attrs["stride"]]
    elif op == "transpose_conv2d":
        weight = graph.type_of(graph.operand(node, 1)).shape
        checks += [("kernel", k, MAX_KERNEL) for k in weight[1:3]] + [("out_pad", p, MAX_KERNEL) for p in attrs["out_pad"]]
        checks += [("stride", s, MAX_STRIDE) for s in attrs["stride"]]
    elif op in ("avg_pool2d", "max_pool2d"):
        checks += [("kernel", k, MAX_KERNEL) for k in attrs["kernel"]] + [("pad", p, MAX_KERNEL) for p in attrs["pad"]]
        checks += [("stride", s, MAX_STRIDE) for s in attrs["stride"]]
    elif op in ("fft2d", "rfft2d"):
        shape = graph.type_of(graph.operand(node, 0)).shape
        checks += [("H", shape[1], MAX_KERNEL), ("W", shape[2], MAX_KERNEL)]
    elif op == "resize":
        scale_source = graph.operand(node, 1)
        if graph.op(scale_source.node) == "tosa.const_shape":
            y_n, y_d, x_n, x_d = (int(v) for v in graph.attrs(scale_source.node)["values"])
            # the ratio n/d must not exceed MAX_SCALE (integer comparison, no rounding)
            checks += [("scale_y", y_n, MAX_SCALE * y_d), ("scale_x", x_n, MAX_SCALE * x_d)]
    elif op in ("concat", "custom", "cond_if", "while_loop"):
        checks.append(("tensor list size", len(graph.operands(node)), MAX_TENSOR_LIST_SIZE))
    return checks


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
           "COMPLIANCE", "PROFILES", "EXTENSIONS"]
