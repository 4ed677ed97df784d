"""One record per TOSA operator, and how a record becomes the op's definition.

A `TosaOp` row holds every fact nn2tosa knows about one operator: its operands with their kinds,
attributes, result inference, traits (effects), folder, extra verifier, which TOSA 1.0 profile or
extension provides each type combination (`support`), its TOSA 1.0 flatbuffer opcode (the attribute
table is the schema's union member of that opcode) and its 0.100-draft form (`legacy`), and a
one-line doc. `register(row)` defines the op in the IR registry (arity, attributes, the verifier
derived from the operand kinds, inference, folder, traits, doc) and files the row in `TOSA_OPS`,
where the target inference (tosa_target), both `.tosa` writers and their readers
(nn2tosa.tosa_flatbuffer), and docs/supported_ops.md (nn2tosa.docs) look it up when they need it,
so an op registered later (a test's throwaway op) is handled by all of them alike.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from nn2tosa.ir import Dialect, Graph, ShapeType, TensorType, Type, define, register_dialect
from nn2tosa.ir.registry import Arity, AttrSpec, Folder, Inferrer, OperandSpec, Trait, Verifier
from nn2tosa.tosa_flatbuffer.fields_0100 import LegacyOp

register_dialect(Dialect("tosa", "TOSA 1.0 operators", constant_op="tosa.const", constant_attr="values"))

# Element types a TOSA 1.0 tensor may have (MLIR spellings).
TOSA_ELEMENT_TYPES = frozenset({"i1", "i4", "i8", "i16", "i32", "i48", "f16", "bf16", "f32", "f8E4M3FN", "f8E5M2"})

# Operand kinds: a tensor of a TOSA element type; a `!tosa.shape` value (from tosa.const_shape);
# a tensor that tosa.const must produce (zero points, MUL's shift, TABLE's contents, ...).
OPERAND_KINDS = ("tensor", "shape", "const")


@dataclass(frozen=True)
class Operand:
    name: str
    kind: str = "tensor"

    def __post_init__(self) -> None:
        if self.kind not in OPERAND_KINDS:
            raise ValueError(f"operand {self.name}: kind {self.kind!r} is not one of {OPERAND_KINDS}")


def operands(*names: str) -> tuple[Operand, ...]:
    """Operands from names, "name:kind" giving a kind other than tensor: operands("input1", "shape:shape")."""
    return tuple(Operand(*name.split(":", 1)) for name in names)


# ------------------------------------------------------------------------------ profiles and extensions
# A requirement code names what provides one type combination:
#   "int" / "fp": that profile;  "any": either profile (e.g. i32 add, bool logic, shapes);
#   an extension name (int16, bf16, ...): that extension and the profile it works with;
#   "a+b": every extension listed.
# A signature says which element types are looked up, in order: operand k ("o<k>"), result k
# ("r<k>"), the `acc_type` attribute ("acc") or the `type` attribute ("type").
@dataclass(frozen=True)
class Support:
    signature: tuple[str, ...]
    rows: Mapping[tuple[str, ...], str]  # element types -> requirement code; others are not TOSA 1.0


def rows(table: Mapping[str, str]) -> dict[tuple[str, ...], str]:
    """{requirement: "sig sig ..."} with each sig "t1,t2,..." -> {(t1, t2, ...): requirement}."""
    out = {}
    for requirement, signatures in table.items():
        for sig in signatures.split():
            out[tuple(sig.split(","))] = requirement
    return out


def support(signature: Sequence[str], table: Mapping[str, str] | Mapping[tuple[str, ...], str]) -> Support:
    """Support of `signature`'s types: `table` as {requirement: "sigs"} (see `rows`) or already rows."""
    items = list(table.items())
    built = dict(table) if items and isinstance(items[0][0], tuple) else rows(table)  # type: ignore[arg-type]
    return Support(tuple(signature), built)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ the record
@dataclass(frozen=True)
class TosaOp:
    """Everything about one TOSA operator (see the module docstring)."""

    name: str  # without the dialect prefix: "floor"
    operands: tuple[Operand, ...] | Arity  # named operands, or a variadic arity (min, max) of tensors
    doc: str  # one line of semantics; the definition's doc adds the operand list
    support: Support
    results: Arity = 1
    attrs: Mapping[str, AttrSpec] = field(default_factory=dict)
    infer: Inferrer | None = None  # result types from operand types and attributes, where they follow
    traits: frozenset[Trait] = frozenset()
    fold: Folder | None = None
    verify: Verifier | None = None  # checks beyond the operand kinds, run when those pass
    check_kinds: bool = True  # False: `verify` checks everything (the constant ops)
    opcode: str | None = None  # the TOSA 1.0 (and by default 0.100) Op enum name; default NAME
    # the 0.100-draft form: its row, or why 0.90 has none; None: an operator of the same name with no
    # attribute table (what a plain elementwise op is: no attributes, no constant or shape operands)
    legacy: LegacyOp | str | None = None
    legacy_unwritten: str | None = None  # why the 0.100 writer refuses an op whose row the reader reads
    # the level 8K limits the op's attributes and operands must keep (levels.py), beyond tensor sizes
    level: Callable[[Graph, int], list[tuple[str, int, int]]] | None = None
    # attribute -> {value: the extension that value needs} (RESCALE's rounding modes)
    attribute_extensions: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def legacy_refusal(self) -> str | None:
        """Why the 0.100 writer does not write this op, or None."""
        return self.legacy if isinstance(self.legacy, str) else self.legacy_unwritten

    @property
    def full_name(self) -> str:
        return f"tosa.{self.name}"

    @property
    def op_name(self) -> str:
        """The Op enum name of the TOSA 1.0 flatbuffer."""
        return self.opcode or self.name.upper()

    @property
    def legacy_form(self) -> LegacyOp | str:
        """The 0.100 row, or the reason there is none."""
        return LegacyOp(self.op_name) if self.legacy is None else self.legacy

    def positions(self, kind: str) -> tuple[int, ...]:
        if not isinstance(self.operands, tuple) or self.is_variadic:
            return ()
        return tuple(k for k, o in enumerate(self.operands) if isinstance(o, Operand) and o.kind == kind)

    @property
    def named_operands(self) -> tuple[Operand, ...]:
        """The operands by name (none for a variadic op)."""
        return tuple(o for o in self.operands if isinstance(o, Operand)) if isinstance(self.operands, tuple) else ()

    @property
    def is_variadic(self) -> bool:
        return bool(self.operands) and isinstance(self.operands[0], int)  # type: ignore[index]

    @property
    def operand_doc(self) -> str:
        if self.is_variadic:
            return "variadic tensors"
        return ", ".join(o.name for o in self.operands) or "none"  # type: ignore[union-attr]

    @property
    def arity(self) -> Arity:
        return self.operands if self.is_variadic else len(self.operands)  # type: ignore[return-value,arg-type]


TOSA_OPS: dict[str, TosaOp] = {}  # "tosa.floor" -> its record


def register(*ops: TosaOp) -> None:
    """Define each op from its record and file the record in TOSA_OPS."""
    for op in ops:
        if op.legacy is None and (op.positions("const") or op.positions("shape") or
                                  (op.attrs and "constant" not in op.traits)):
            raise ValueError(f"tosa.{op.name}: attributes and constant or shape operands need a 0.100 row saying "
                             "which fields hold them")
        define(op.full_name, operands=op.arity, results=op.results, attrs=dict(op.attrs),
               doc=f"{op.doc} Operands: {op.operand_doc}.", verify=_verifier(op), fold=op.fold,
               traits=op.traits, infer=op.infer,
               operand_names=tuple(OperandSpec(o.name) for o in op.named_operands) if not op.is_variadic else ())
        TOSA_OPS[op.full_name] = op


def _verifier(op: TosaOp) -> Verifier:
    if not op.check_kinds:
        assert op.verify is not None, op.name
        return op.verify
    shapes, constants, extra = op.positions("shape"), op.positions("const"), op.verify

    def verify(graph: Graph, node: int) -> list[str]:
        """What every TOSA op shares: shape operands are shape values, constant operands come from
        tosa.const, all other operands and results are tensors of TOSA element types without
        quantization; then the op's own checks."""
        problems = []
        for k, value in enumerate(graph.operands(node)):
            t = graph.type_of(value)
            if k in shapes:
                if not isinstance(t, ShapeType):
                    problems.append(f"operand #{k} must be a !tosa.shape value, is {t}")
                continue
            problems.extend(f"operand #{k}: {p}" for p in tensor_type_problems(t))
            if k in constants and graph.op(value.node) != "tosa.const":
                problems.append(f"operand #{k} must be produced by tosa.const, not {graph.op(value.node)}")
        for i, t in enumerate(graph.types(node)):
            problems.extend(f"result #{i}: {p}" for p in tensor_type_problems(t))
        if not problems and extra is not None:
            problems.extend(extra(graph, node))
        return problems

    return verify


def tensor_type_problems(t: Type) -> list[str]:
    if not isinstance(t, TensorType):
        return [f"must be a tensor, is {t}"]
    if t.quant is not None:
        return [f"{t} is quantized; TOSA-level types carry no quantization (use zero points and RESCALE)"]
    if t.dtype not in TOSA_ELEMENT_TYPES:
        return [f"element type {t.dtype} is not a TOSA 1.0 type"]
    return []


V = TypeVar("V")


class View(Mapping[str, V], Generic[V]):
    """A read-only mapping "tosa.<op>" -> one projection of its record, computed when looked up, so
    that it always agrees with TOSA_OPS (ops registered later included). `project` returns None for
    an op the view leaves out."""

    def __init__(self, project: Callable[[TosaOp], V | None]):
        self._project = project

    def __getitem__(self, name: str) -> V:
        op = TOSA_OPS.get(name)
        value = None if op is None else self._project(op)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name, op in list(TOSA_OPS.items()) if self._project(op) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)
