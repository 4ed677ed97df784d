"""Op definitions, one registry for all dialects.

Each dialect module registers its ops with `define(...)` when imported; `op_def(name)` imports
the dialect on first use. An OpDef is the single place that knows an op's arity, attribute
schema, verifier, folder and documentation: the verifier, the MLIR bridge (attribute types),
the constant folder and the generated docs all read it.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import numpy as np

from .constraints import Constraint, declare

if TYPE_CHECKING:
    from .effects import Effect
    from .graph import Graph
    from .types import Type

# How an attribute value is stored in Python and spelled in MLIR:
#   int / i32 / i8 ...   int             IntegerAttr of that width (int = i64)
#   float / f32          float           FloatAttr (float = f64)
#   bool                 bool            BoolAttr
#   str                  str             StringAttr
#   ints / i32s / i8s    list[int]       DenseI64ArrayAttr / DenseI32ArrayAttr / DenseI8ArrayAttr
#   floats / f32s        list[float]     DenseF64ArrayAttr / DenseF32ArrayAttr
#   bools                list[bool]      DenseBoolArrayAttr
#   strs                 list[str]       ArrayAttr of StringAttr
#   tensor               np.ndarray      dense<...> or dense_resource<...> (element type from the op)
#   type                 Type            TypeAttr
#   elemtype             str ("f32")     TypeAttr of an element type
#   enum:<prefix>        str             #<prefix><VALUE>, e.g. enum:tosa.rounding_mode
#   scalar_like:<k>      float|int       FloatAttr/IntegerAttr typed like operand k's element type
#   dict                 dict            DictionaryAttr
#   any                  any of these    inferred from the Python value
ATTR_KINDS = frozenset(
    "int i64 i32 i16 i8 i1 float f64 f32 bool str ints i64s i32s i16s i8s floats f64s f32s bools strs "
    "tensor type elemtype dict any".split()
)


@dataclass(frozen=True)
class AttrSpec:
    kind: str = "any"
    optional: bool = False
    doc: str = ""

    def __post_init__(self) -> None:
        base = self.kind.split(":", 1)[0]
        if self.kind not in ATTR_KINDS and base not in ("enum", "scalar_like"):
            raise ValueError(f"unknown attribute kind {self.kind!r}")


def attr(kind: str = "any", doc: str = "", optional: bool = False) -> AttrSpec:
    return AttrSpec(kind, optional, doc)


Arity = int | tuple[int, int | None]  # exactly n, or (min, max) with max None = unbounded


@dataclass(frozen=True)
class OperandSpec:
    """One named operand of an op, or a named run of them: `count` operands (1 for a single one), or
    any number from `count` up when `variadic`; an `optional` one may be left out (trailing only)."""

    name: str
    optional: bool = False
    count: int = 1
    variadic: bool = False

    def __str__(self) -> str:
        """The spelling `operand_specs` reads: "bias?", "inputs+", "params*", "params[12]"."""
        if self.variadic:
            return self.name + ("+" if self.count else "*")
        return self.name + ("?" if self.optional else "" if self.count == 1 else f"[{self.count}]")


def operand_specs(names: tuple[str, ...] | list[str]) -> tuple[OperandSpec, ...]:
    """Specs from spellings: "weight", "bias?" (optional), "inputs+" (one or more), "params*" (any
    number), "params[12]" (exactly 12). Optional ones, then a run, may only come last."""
    specs: list[OperandSpec] = []
    for text in names:
        if text.endswith("?"):
            spec = OperandSpec(text[:-1], optional=True)
        elif text[-1:] in "+*" and text:
            spec = OperandSpec(text[:-1], count=1 if text.endswith("+") else 0, variadic=True)
        elif text.endswith("]") and "[" in text:
            name, count = text[:-1].split("[", 1)
            spec = OperandSpec(name, count=int(count))
        else:
            spec = OperandSpec(text)
        if not spec.name.isidentifier() or any(s.name == spec.name for s in specs):
            raise ValueError(f"operand name {text!r} is not an identifier or is repeated")
        if specs and (specs[-1].variadic or specs[-1].count != 1 or (specs[-1].optional and not spec.optional)):
            raise ValueError(f"operand {text!r} follows an optional operand or a run of operands")
        specs.append(spec)
    return tuple(specs)


def arity_of(specs: tuple[OperandSpec, ...]) -> Arity:
    """The arity named operands give: exactly n, or (required, most) with None for no limit."""
    required = sum(s.count for s in specs if not s.optional)
    most = None if any(s.variadic for s in specs) else sum(s.count for s in specs)
    return required if most == required else (required, most)
Verifier = Callable[["Graph", int], Iterable[str]]
# folder(attrs, operand values, result types) -> result values, or None when it cannot fold
Folder = Callable[[dict[str, Any], list[np.ndarray], list["Type"]], list[np.ndarray] | None]
# infer(attrs, operand types) -> result types (shape and storage dtype; quantization is the
# builder's to choose). The verifier checks declared result shapes and dtypes against it.
Inferrer = Callable[[dict[str, Any], list["Type"]], list["Type"]]
# A trait: one of the names below, which passes ask about, or a declared side effect (an Effect
# constant of nn2tosa.ir.effects).
Trait: TypeAlias = "str | Effect"
NAMED_TRAITS = frozenset({
    "elementwise",  # computes each result element from the operand elements at the same (broadcast) index
    "constant",  # holds its value in an attribute, no operands
    "control_flow",  # runs other graphs of the module, named in its attributes
    "variable",  # declares or accesses a persistent variable
    # how quantized lowering treats the op (lowering/rules/): found on the op, not in lists beside the rules
    "carries_quantization",  # only moves stored values: its float lowering carries integers of one quantization
    "moves_data",  # quantized: its float lowering moves (max pooling: selects) the stored integers, results
    #                quantized unlike the operand are requantized after
    "tabulated",  # quantized: a function of one tensor, its integers exact for every input (TABLE, GATHER, or an
    #               exact integer form)
    "rescale_clamp",  # quantized i8 -> i8: a requantization (of |x - zp| for abs), clamped: RESCALE + CLAMP where exact
    "litert_int16_rescale",  # quantized i16 under LiteRT semantics: TFLite's kernel is a RESCALE by its multipliers
    "float_when_quantized",  # quantized: computed in f32 between dequantize and quantize, as CpuRef computes it
})


@dataclass
class OpDef:
    name: str
    operands: Arity = 0
    results: Arity = 1
    attrs: dict[str, AttrSpec] = field(default_factory=dict)
    doc: str = ""
    verify: Verifier | None = None
    fold: Folder | None = None
    traits: frozenset[Trait] = frozenset()
    # ops mirroring a source format may carry fields a newer schema added
    open_attrs: bool = False
    infer: Inferrer | None = None
    operand_names: tuple[OperandSpec, ...] = ()  # the operands by name, where the definition names them

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]


@dataclass
class Dialect:
    name: str
    doc: str = ""
    constant_op: str | None = None  # the op that holds a constant, e.g. nn.constant
    constant_attr: str | None = None  # its attribute holding the numpy value


# Where each dialect's definitions live; imported the first time one of its ops is looked up. The
# shared dialects are here; a source format's dialect is added by its frontend package when imported
# (nn2tosa.frontend), so the IR names no module above it.
DIALECT_MODULES = {
    "nn": "nn2tosa.dialects.nn",
    "tosa": "nn2tosa.dialects.tosa",
}

_OPS: dict[str, OpDef] = {}
_DIALECTS: dict[str, Dialect] = {}


def register_dialect_module(name: str, module: str) -> None:
    """Say which module defines dialect `name`, to import when one of its ops is first looked up."""
    DIALECT_MODULES[name] = module


def register_dialect(dialect: Dialect) -> Dialect:
    _DIALECTS[dialect.name] = dialect
    return dialect


def define(
    name: str,
    operands: Arity = 0,
    results: Arity = 1,
    attrs: dict[str, AttrSpec] | None = None,
    doc: str = "",
    verify: Verifier | None = None,
    fold: Folder | None = None,
    traits: Iterable[Trait] = (),
    open_attrs: bool = False,
    infer: Inferrer | None = None,
    operand_names: tuple[OperandSpec, ...] = (),
) -> OpDef:
    """Register an op; returns its definition (`operand_names`, when given, must agree with `operands`)."""
    if name in _OPS:
        raise ValueError(f"op {name} registered twice")
    traits = tuple(traits)
    unknown = [t for t in traits if isinstance(t, str) and t not in NAMED_TRAITS]
    if unknown:  # a trait no pass asks about would protect nothing (effects are Effect constants)
        raise ValueError(f"op {name}: unknown trait {unknown[0]!r} (named traits: {', '.join(sorted(NAMED_TRAITS))})")
    if operand_names and arity_of(operand_names) != operands:
        raise ValueError(f"op {name}: operands {[s.name for s in operand_names]} do not make arity {operands}")
    d = OpDef(name, operands, results, dict(attrs or {}), doc, verify, fold, frozenset(traits), open_attrs, infer,
              operand_names)
    _OPS[name] = d
    return d


def _load(dialect: str) -> None:
    module = DIALECT_MODULES.get(dialect)
    if module is not None and dialect not in _DIALECTS:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:  # a real import error inside the dialect module
                raise


def op_def(name: str) -> OpDef | None:
    """The definition of an op, or None for an op no dialect defines."""
    if name not in _OPS:
        _load(name.split(".", 1)[0])
    return _OPS.get(name)


def dialect(name: str) -> Dialect | None:
    _load(name)
    return _DIALECTS.get(name)


def is_known_dialect(name: str) -> bool:
    return name in DIALECT_MODULES


def ops_of(dialect_name: str) -> list[OpDef]:
    """Every op a dialect defines, sorted by name (for docs and coverage reports)."""
    _load(dialect_name)
    return sorted((d for d in _OPS.values() if d.dialect == dialect_name), key=lambda d: d.name)


F = TypeVar("F", bound=Callable[..., Any])


def registering(table: dict[str, F], keys: Iterable[str], what: str, constraints: Iterable[Constraint] = (),
                checks: Iterable[Constraint] = ()) -> Callable[[F], F]:
    """A decorator filing the function it decorates in `table` under each of `keys` (the rule registries
    of legalization and lowering); a key filed twice is an error naming `what` ("lowering rules for").
    `constraints` and `checks`: the rule's named constraints (nn2tosa/ir/constraints.py)."""
    keys = tuple(keys)
    constraints, checks = tuple(constraints), tuple(checks)

    def register(fn: F) -> F:
        for key in keys:
            if key in table:
                raise ValueError(f"two {what} {key}")
            table[key] = fn
        declare(fn, constraints, checks)
        return fn

    return register


def arity_ok(arity: Arity, n: int) -> bool:
    if isinstance(arity, int):
        return n == arity
    lo, hi = arity
    return n >= lo and (hi is None or n <= hi)


def arity_str(arity: Arity) -> str:
    if isinstance(arity, int):
        return str(arity)
    lo, hi = arity
    return f"{lo}+" if hi is None else f"{lo}..{hi}"
