"""docs/supported_ops.md, generated from the op registries and the rule tables.

    python -m nn2tosa.docs            # rewrite docs/supported_ops.md
    python -m nn2tosa.docs --check    # exit 1 if it is out of date (tests/project/test_docs.py does this)

What each section reads:
- the source dialects' registries (`ops_of("armnn")`, `ops_of("mps")`): every layer/node type and
  its attributes with their documentation;
- the legalization tables (passes/legalize_armnn RULES and NO_MEANING, passes/legalize_mps RULES):
  whether a type converts, and, reading each rule's code, the nn ops it can create;
- the lowering tables (lowering/rules RULES, QUANTIZED_RULES, CARRY_QUANTIZATION): for each nn op
  the TOSA ops its float and quantized rules (any of their forms) can create;
- the named constraints each rule declares (nn2tosa/ir/constraints.py) and those the helpers of every
  rule evaluate (`general`): their docstrings are the conditions listed, the same functions whose
  results are the run-time reasons;
- the tosa op table (nn2tosa/dialects/tosa_ops): every TOSA op's operands, attributes, type
  combinations by profile and extension, and 0.100-draft form;
- the frontends' data type tables.
"Can create" is a reading of the code (nn2tosa/rule_reading.py), not a run: a rule's string literals
naming ops, the tables it indexes and the helpers it calls (followed through its package and the
builder classes), so an op listed may be used only for some attribute values or types. A layer is
listed as quantized when every nn op it can create has a quantized lowering or only carries stored
values.
"""
from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nn2tosa.fileio import write_or_check
from nn2tosa.ir.constraints import Checks, Constraint, declared, describe
from nn2tosa.rule_reading import CodeReader, Reading

DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "supported_ops.md"
# TOSA ops nearly every lowering creates (constants and shape operands): left out of the tables
_PLUMBING = frozenset({"tosa.const", "tosa.const_shape"})


# ------------------------------------------------------------------------------ the facts
def _conditions(constraints: Iterable[Constraint]) -> list[str]:
    """The documented conditions of constraints (their docstrings), each once."""
    out: list[str] = []
    for c in constraints:
        text = describe(c)
        if text not in out:
            out.append(text)
    return out


@dataclass
class Row:
    """One source type (Arm NN layer type or MPS node type) or nn op, and what it becomes."""

    name: str
    doc: str
    attrs: list[tuple[str, str, str]]  # (name, kind, doc)
    converts: bool
    why_not: str = ""
    nn_ops: list[str] = field(default_factory=list)
    helper_ops: list[str] = field(default_factory=list)  # created only by helpers the rule calls
    tosa_ops: list[str] = field(default_factory=list)
    quantized: str = ""
    constraints: list[str] = field(default_factory=list)  # the conditions of the rule's named constraints
    operands: str = ""  # an nn op's operand names ("input, weight, bias?")


@functools.lru_cache(maxsize=1)
def _nn_lowering() -> tuple[dict[str, Reading], dict[str, Reading], frozenset[str]]:
    """For each nn op: what its float rule and its quantized rule can create."""
    from nn2tosa.dialects.tosa_builder import EQUAL_RANKS, TosaBuilder
    from nn2tosa.ir import Builder
    from nn2tosa.lowering.context import LoweringContext
    from nn2tosa.lowering.rules import CARRY_QUANTIZATION, QUANTIZED_RULES, RULES, OpLowering

    # the typed builder brings an elementwise op's operands to one rank (ctx.same_rank) before it builds it
    reader = CodeReader("tosa.", "nn2tosa.lowering", [LoweringContext, Builder],
                        implied={op: [LoweringContext.same_rank] for op in EQUAL_RANKS}, builder=TosaBuilder)

    def read(op: str, rule: OpLowering) -> Reading:  # what any of the op's forms can create
        reading = Reading()
        for form in rule.forms:
            reading.merge(reader.read(form.fn, op), own=True)
        return reading

    floats = {op: read(op, fn) for op, fn in sorted(RULES.items())}
    quantized = {op: read(op, fn) for op, fn in sorted(QUANTIZED_RULES.items())}
    return floats, quantized, CARRY_QUANTIZATION


def _quantized(nn_ops: Iterable[str], quantized: dict[str, Reading], carried: frozenset[str]) -> str:
    """Which of the nn ops have a quantized lowering (or carry stored values of one quantization)."""
    ops = list(nn_ops)
    missing = sorted(op for op in ops if op not in quantized and op not in carried)
    if not missing:
        return "all" if ops else ""
    if len(missing) == len(ops):
        return "none"
    return "all but " + ", ".join(op.split(".", 1)[1] for op in missing)


def _tosa_of(nn_ops: Iterable[str], floats: dict[str, Reading]) -> list[str]:
    out: set[str] = set()
    for op in nn_ops:
        out |= floats.get(op, Reading()).ops
    return sorted(out - _PLUMBING)


def _attrs(d: Any) -> list[tuple[str, str, str]]:
    return [(name, spec.kind, " ".join(spec.doc.split())) for name, spec in sorted(d.attrs.items())]


def source_rows(dialect: str) -> list[Row]:
    """One Row per op of a source dialect ("armnn" or "mps")."""
    import nn2tosa.frontend  # noqa: F401  (registers the source formats' dialects)
    from nn2tosa.ir import Builder, ops_of

    floats, quantized, carried = _nn_lowering()
    rules: Mapping[str, Callable[..., Any]]
    if dialect == "armnn":
        from nn2tosa.passes.legalize_armnn import NO_MEANING, RULES as ARMNN_RULES
        from nn2tosa.passes.legalize_armnn.layer import Layer

        rules = ARMNN_RULES
        reader = CodeReader("nn.", "nn2tosa.passes.legalize_armnn", [Layer, Builder])
        key_of = {d.name: d.name.split(".", 1)[1] for d in ops_of(dialect)}  # the layer type
        no_meaning = {f"armnn.{k}": v for k, v in NO_MEANING.items()}
    else:
        from nn2tosa.passes.legalize_mps import RULES as MPS_RULES
        from nn2tosa.passes.legalize_mps.core import Node

        rules = MPS_RULES
        reader = CodeReader("nn.", "nn2tosa.passes.legalize_mps", [Node, Builder])
        key_of = {d.name: "MPS" + d.name.split(".", 1)[1] for d in ops_of(dialect)}  # the MPSNodeUnion member
        no_meaning = {}
    rows = []
    for d in ops_of(dialect):
        name = d.name.split(".", 1)[1]
        rule = rules.get(key_of[d.name])
        row = Row(name, " ".join(d.doc.split()), _attrs(d), converts=rule is not None)
        if d.name == f"{dialect}.constant" or d.name == "armnn.Constant":
            row.converts, row.nn_ops = True, ["nn.constant"]
        elif rule is None:
            row.why_not = no_meaning.get(d.name, "no legalization rule")
        else:
            reading = reader.read(rule, key_of[d.name])
            # a rule that leaves all the building to helpers (layer.reshape(...)) has nothing of its own
            row.nn_ops = sorted(reading.own or reading.ops)
            row.helper_ops = sorted(reading.ops - set(row.nn_ops))
            row.constraints = _conditions(declared(rule).all)
        if row.converts:
            row.tosa_ops = _tosa_of(row.nn_ops, floats)
            row.quantized = _quantized(row.nn_ops, quantized, carried)
        rows.append(row)
    return rows


def nn_rows() -> list[Row]:
    from nn2tosa.ir import ops_of

    from nn2tosa.lowering.rules import QUANTIZED_RULES, RULES

    floats, quantized, carried = _nn_lowering()
    rows = []
    for d in ops_of("nn"):
        f, q = floats.get(d.name), quantized.get(d.name)
        row = Row(d.name, " ".join(d.doc.split()), _attrs(d), converts=f is not None or q is not None,
                  operands=", ".join(str(spec) for spec in d.operand_names) or "none")
        row.tosa_ops = sorted(f.ops - _PLUMBING) if f else []
        row.quantized = "yes" if q else "carried (one quantization)" if d.name in carried else "no"
        for kind, table in (("float", RULES), ("quantized", QUANTIZED_RULES)):
            conditions = _conditions(declared(table[d.name]).all) if d.name in table else []
            if conditions:
                row.constraints.append(f"**{kind}:** " + " ".join(conditions))
        if not row.converts:
            row.why_not = "no lowering rule"
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------ the document
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _names(ops: Iterable[str]) -> str:
    return ", ".join(op.split(".", 1)[1] for op in ops)


def _summary(rows: list[Row], kind: str) -> list[str]:
    lines = [f"| {kind} | converts | nn ops it can create | TOSA ops they lower to (float) | quantized lowering |",
             "| --- | --- | --- | --- | --- |"]
    for r in rows:
        if not r.converts:
            lines.append(f"| [`{r.name}`](#{_anchor(kind, r.name)}) | **no**: {_cell(r.why_not)} | | | |")
            continue
        lines.append(f"| [`{r.name}`](#{_anchor(kind, r.name)}) | yes | {_names(r.nn_ops)} | {_names(r.tosa_ops)} | "
                     f"{_cell(r.quantized)} |")
    return lines


def _anchor(kind: str, name: str) -> str:
    return f"{kind}-{name}".lower().replace(" ", "-").replace(".", "").replace("_", "-")


def _details(rows: list[Row], kind: str) -> list[str]:
    lines = []
    for r in rows:
        lines += ["", f'<a id="{_anchor(kind, r.name)}"></a>', f"#### {r.name}", ""]
        if r.doc:
            lines.append(r.doc)
            lines.append("")
        if r.attrs:
            lines.append("Attributes: " + "; ".join(f"`{n}` ({k}){': ' + doc if doc else ''}" for n, k, doc in r.attrs))
            lines.append("")
        if r.helper_ops:
            lines.append("Helpers it calls can also create (for some types or attributes): "
                         + ", ".join(f"`{op}`" for op in r.helper_ops))
            lines.append("")
        if not r.converts:
            lines.append(f"Not converted: {r.why_not}")
        elif r.constraints:
            lines += ["Converts when:", "", *(f"- {c}" for c in r.constraints)]
    return lines


def _general(subject: type[Checks], what: str) -> list[str]:
    """The conditions the helpers of every rule evaluate (a subject class's `general` constraints)."""
    return ["", f"Every {what} converts only when (conditions the helpers all rules share check, where they "
            "apply):", "", *(f"- {c}" for c in _conditions(subject.general))]


# ------------------------------------------------------------------------------ the TOSA op table
_PROFILE_NAMES = {"int": "pro_int", "fp": "pro_fp", "any": "any profile"}


def _requirement(code: str) -> str:
    return "+".join(_PROFILE_NAMES.get(part, part) for part in code.split("+"))


def _type_combinations(op: Any) -> str:
    """"pro_fp: f16, f32; bf16: bf16": each requirement with the type combinations it provides; a
    combination of several types is written a/b/c, in the order the signature (given first) names."""
    names = [o.name for o in op.named_operands]
    what = {"acc": "acc_type", "type": "type"}
    signature = [what.get(s) or (names[int(s[1:])] if s[0] == "o" and int(s[1:]) < len(names) else
                                 ("result" if s[0] == "r" else f"operand {s[1:]}")) for s in op.support.signature]
    by_requirement: dict[str, list[str]] = {}
    for types, code in op.support.rows.items():
        by_requirement.setdefault(_requirement(code), []).append("/".join(types) or "any types")
    text = "; ".join(f"{code}: {', '.join(sigs)}" for code, sigs in by_requirement.items())
    if len(signature) > 1:
        text = f"({'/'.join(signature)}) {text}"
    for attr_name, table in op.attribute_extensions.items():
        text += "".join(f"; {attr_name} {value} needs {extension}" for value, extension in table.items())
    return text


def tosa_op_lines() -> list[str]:
    """One table row per TOSA op of the op table (nn2tosa/dialects/tosa_ops), sorted by name."""
    from nn2tosa.dialects.tosa_ops import TOSA_OPS

    lines = ["| TOSA op | semantics | operands | attributes | type combinations by profile or extension | 0.100 draft |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name in sorted(TOSA_OPS):
        op = TOSA_OPS[name]
        operands = op.operand_doc if op.is_variadic else ", ".join(
            o.name if o.kind == "tensor" else f"{o.name} ({o.kind})" for o in op.named_operands)
        attrs = ", ".join(f"{a}{'?' if spec.optional else ''}" for a, spec in op.attrs.items())
        legacy = op.legacy_form
        form = legacy if isinstance(legacy, str) else legacy.op + (f" ({legacy.table})" if legacy.table else "")
        if op.legacy_unwritten:
            form += f"; not written: {op.legacy_unwritten}"
        lines.append(f"| `{op.name}` | {_cell(op.doc)} | {_cell(operands or 'none')} | {_cell(attrs)} | "
                     f"{_cell(_type_combinations(op))} | {_cell(form)} |")
    return lines


def _data_types() -> list[str]:
    from nn2tosa.frontend.armnn.catalogue import DATA_TYPES
    from nn2tosa.frontend.mps.dtypes import ELEMENT_TYPES
    from nn2tosa.lowering.context import TOSA_ELEMENT_OF

    lines = ["## Data types", "",
             "Element types in the IR are MLIR's. At the TOSA boundary, types TOSA 1.0 lacks travel as: "
             + ", ".join(f"{k} as {v}" for k, v in sorted(TOSA_ELEMENT_OF.items()))
             + " (unsigned quantized data keeps its bits; `convert --report` lists every such tensor).", "",
             "| Arm NN DataType | IR element type | quantized |", "| --- | --- | --- |"]
    for name, t in DATA_TYPES.items():
        quantized = ("yes, symmetric" if t.symmetric else "yes") if t.quantized else ""
        lines.append(f"| {name} | {t.element} | {quantized} |")
    lines += ["", "| MPSDataType | IR element type |", "| --- | --- |"]
    for name, element in ELEMENT_TYPES.items():
        lines.append(f"| {name} | {element or '**not supported**'} |")
    return lines


def generate() -> str:
    """The whole of docs/supported_ops.md."""
    from nn2tosa.lowering.context import LoweringContext
    from nn2tosa.passes.legalize_armnn.layer import Layer
    from nn2tosa.passes.legalize_mps.core import Node

    armnn, mps, nn, tosa_table = source_rows("armnn"), source_rows("mps"), nn_rows(), tosa_op_lines()
    count = lambda rows: f"{sum(r.converts for r in rows)} of {len(rows)}"  # noqa: E731
    lines = [
        "# Supported operators",
        "",
        "<!-- Generated by `python -m nn2tosa.docs` from the op registries and rule tables; "
        "tests/project/test_docs.py fails when it is out of date. Do not edit by hand. -->",
        "",
        "Every Arm NN layer type and ExecuTorch MPS node type nn2tosa reads, whether it converts, the `nn` ops its",
        "legalization can create and the TOSA 1.0 ops those lower to (constants and shape operands left out), and",
        "which of those nn ops have a quantized lowering (or only carry stored values of one quantization), so that",
        "quantized tensors convert. The op lists are read from the rules' code (string literals naming ops, the rows",
        "of the tables a rule indexes, the helpers it leaves the building to): an op listed may be created only for",
        "some attribute values or data types (a cast for integer inputs, a logical op for booleans).",
        "\"Converts when\" lists the conditions of the named constraints the rule declares (nn2tosa/ir/constraints.py);",
        "a layer that fails one is reported unsupported (exit 3, or left to the host by `convert --partial`) with the",
        "reason the same constraint gives, its values included. Attributes are the serialized descriptor fields, with",
        "their documentation.",
        "",
        f"## Arm NN layer types ({count(armnn)} convert)",
        "",
        *_summary(armnn, "armnn"),
        *_general(Layer, "Arm NN layer"),
        "",
        "### Arm NN layer details",
        *_details(armnn, "armnn"),
        "",
        f"## ExecuTorch MPS node types ({count(mps)} convert)",
        "",
        *_summary(mps, "mps"),
        *_general(Node, "MPS node"),
        "",
        "### MPS node details",
        *_details(mps, "mps"),
        "",
        f"## nn ops and their TOSA lowering ({count(nn)} lower)",
        *_general(LoweringContext, "nn op"),
        "",
        "Operands are named as rules read them (`ctx.operand(\"weight\")`): `?` optional, `+` one or more,",
        "`*` any number, `[n]` exactly n.",
        "",
        "| nn op | operands | TOSA ops (float rule) | quantized rule | converts when |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in nn:
        tosa = _names(r.tosa_ops) if r.converts else "**no lowering**"
        lines.append(f"| `{r.name}` | {_cell(r.operands)} | {tosa} | {_cell(r.quantized)} | "
                     f"{_cell('<br>'.join(r.constraints))} |")
    lines += ["", f"## TOSA 1.0 ops ({len(tosa_table) - 2} ops)", "",
              "Every TOSA op the IR holds, from its record in the op table (nn2tosa/dialects/tosa_ops): operands "
              "(shape: a `!tosa.shape` value; const: must be produced by `tosa.const`), attributes (? = optional), "
              "the element type combinations TOSA 1.0 has with the profile or extension providing each (operand, "
              "result or accumulator types in the order the record reads them), and the operator (attribute table) "
              "the 0.100-draft writer uses, or why it has none.", "", *tosa_table]
    lines += ["", *_data_types()]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return write_or_check(DOC_PATH, generate(), "python -m nn2tosa.docs", "--check" in argv)


if __name__ == "__main__":
    sys.exit(main())
