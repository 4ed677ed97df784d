"""The `mps` dialect: one op per `MPSNodeUnion` member, generated from the packaged MPS schema.

Each member `MPS<Name>` (with the table it holds: `MPSReLU: _MPSNode2x1`, `MPSExpand: MPSView`, ...)
becomes the op `mps.<Name>`. Its table's fields split three ways by name:
- value ids (`*_id`, `*_ids`) whose name starts with `output` are results, ordered output_id / output_ids
  or output1, output2, output3 (the schema declares BatchNorm's and LayerNorm's output2_id first; here
  result #0 is always the main result);
- the other value ids are operands, in schema field order (`[int]` fields such as Cat's input_ids are
  variadic);
- every other field is an attribute with the schema's field name: int -> i32, long -> i64, float -> f32,
  bool, string, [int] -> i32 array, MPSDataType -> its current schema name ("mps_data_type_float16").
  A string the file does not hold is left out; an absent vector is an empty array.

Absent value ids (-1) leave their operand or result out. Ops whose table has two or more operand fields
carry `operandSegmentSizes` (MLIR's convention): one entry per operand field in schema order, 0 when
absent, 1 when present, n for a list with n present ids. Ops with two or more result fields carry
`resultSegmentSizes` the same way (in result order). In a list field a -1 entry is positional (IndexTensor's
`indices_id = [-1, 7]` is `x[:, idx]`): the list's positions that were -1 are the attribute
`absent_<field>` (e.g. `absent_indices_id = [0]`), present only when there are some.
`node_operands` / `node_results` give all of it back by field name, with None where an id was absent.

The node's `min_max` (only clamp uses it) becomes attributes `min_value` and `max_value` on mps.Clamp,
and `min_max = [min, max]` on any other op that has one.

Constants are `mps.constant` ops (attribute `value`), not union members.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nn2tosa.ir import Dialect, Graph, Value, attr, define, register_dialect
from nn2tosa.ir.verify import constant_verifier
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.model import TableDef, TypeRef

SCHEMA = load_schema("mps")
NODE_UNION = SCHEMA.unions["MPSNodeUnion"]

OPERAND_SEGMENTS = "operandSegmentSizes"
RESULT_SEGMENTS = "resultSegmentSizes"


def absent_attr(field_name: str) -> str:
    """The attribute listing the positions of a list field that held -1."""
    return f"absent_{field_name}"

# Value-id fields a member's table declares but the backend never writes for that member (its Python
# class lacks them) and the runtime never reads. Flatbuffers reads an unwritten int as 0, which would
# wire a phantom operand to value 0, so they are ignored.
UNUSED_ID_FIELDS: dict[str, frozenset[str]] = {
    "MPSReLU": frozenset({"input2_id"}),  # table _MPSNode2x1, a unary op
    "MPSFull": frozenset({"input1_id"}),  # table _MPSFull (shared with FullLike); full has no input
}

# Attribute kind per schema scalar type.
_SCALAR_KINDS = {"bool": "bool", "short": "i16", "int": "i32", "long": "int", "uint": "int", "ulong": "int",
                 "float": "f32", "double": "float"}
_VECTOR_KINDS = {"int": "i32s", "long": "ints"}


@dataclass(frozen=True)
class IdField:
    """A value-id field: `variadic` for a list of ids."""

    name: str
    variadic: bool = False


@dataclass(frozen=True)
class NodeLayout:
    """How one union member maps to its op: operand, result and attribute fields."""

    member: str
    table: str
    op: str
    operands: tuple[IdField, ...]
    results: tuple[IdField, ...]
    attrs: dict[str, str] = field(default_factory=dict)  # field name -> attribute kind
    enums: dict[str, str] = field(default_factory=dict)  # field name -> enum name (attribute is its value name)

    @property
    def has_operand_segments(self) -> bool:
        return len(self.operands) > 1

    @property
    def has_result_segments(self) -> bool:
        return len(self.results) > 1


def op_name(member: str) -> str:
    """`MPSConv2D` -> `mps.Conv2D`."""
    return "mps." + member.removeprefix("MPS")


def _is_id(name: str, t: TypeRef) -> bool:
    is_int = (t.kind == "scalar" and t.scalar == "int") or (
        t.kind == "vector" and t.element is not None and t.element.scalar == "int"
    )
    return is_int and (name.endswith("_id") or name.endswith("_ids"))


def _result_order(f: IdField) -> str:
    # output_id / output_ids first, then output1_id, output2_id, output3_id
    return f.name.replace("output_", "output0_")


def _layout(member: str, tdef: TableDef) -> NodeLayout:
    operands: list[IdField] = []
    results: list[IdField] = []
    attrs: dict[str, str] = {}
    enums: dict[str, str] = {}
    skip = UNUSED_ID_FIELDS.get(member, frozenset())
    for f in tdef.visible_fields():
        t = f.type
        if _is_id(f.name, t):
            if f.name not in skip:
                idf = IdField(f.name, t.kind == "vector")
                (results if f.name.startswith("output") else operands).append(idf)
        elif t.kind == "enum":
            attrs[f.name] = "str"
            enums[f.name] = t.name
        elif t.kind == "string":
            attrs[f.name] = "str"
        elif t.kind == "scalar" and t.scalar in _SCALAR_KINDS:
            attrs[f.name] = _SCALAR_KINDS[t.scalar]
        elif t.kind == "vector" and t.element is not None and t.element.scalar in _VECTOR_KINDS:
            attrs[f.name] = _VECTOR_KINDS[t.element.scalar]
        else:  # the frozen schema has no other field types in node tables
            raise TypeError(f"{tdef.name}.{f.name}: no attribute kind for {t}")
    results.sort(key=_result_order)
    return NodeLayout(member, tdef.name, op_name(member), tuple(operands), tuple(results), attrs, enums)


LAYOUTS: dict[str, NodeLayout] = {m.name: _layout(m.name, SCHEMA.tables[m.table]) for m in NODE_UNION.members}
LAYOUT_BY_OP: dict[str, NodeLayout] = {layout.op: layout for layout in LAYOUTS.values()}


# ---------------------------------------------------------------------------------------------- registry
register_dialect(Dialect("mps", "ExecuTorch MPS backend graph nodes, as serialized", constant_op="mps.constant",
                         constant_attr="value"))


def _segment_problems(name: str, fields: tuple[IdField, ...], sizes: object, count: int) -> list[str]:
    if not isinstance(sizes, (list, tuple)) or len(sizes) != len(fields):
        return [f"{name} must have one entry per field ({', '.join(f.name for f in fields)})"]
    problems = [f"{name}: {f.name} has {n} values" for f, n in zip(fields, sizes) if n < 0 or (not f.variadic and n > 1)]
    if sum(sizes) != count:
        problems.append(f"{name} adds up to {sum(sizes)}, but there are {count}")
    return problems


def _verify_node(graph: Graph, node: int) -> list[str]:
    layout = LAYOUT_BY_OP[graph.op(node)]
    attrs = graph.attrs(node)
    problems = []
    if layout.has_operand_segments:
        problems += _segment_problems(OPERAND_SEGMENTS, layout.operands, attrs[OPERAND_SEGMENTS],
                                      len(graph.operands(node)))
    if layout.has_result_segments:
        problems += _segment_problems(RESULT_SEGMENTS, layout.results, attrs[RESULT_SEGMENTS], len(graph.types(node)))
    return problems


def _arity(fields: tuple[IdField, ...]) -> tuple[int, int | None]:
    # any id may be -1 (absent), so nothing is required
    return (0, None) if any(f.variadic for f in fields) else (0, len(fields))


def _define(layout: NodeLayout) -> None:
    attrs = {}
    for name, kind in layout.attrs.items():
        doc = f"{layout.table}.{name}" + (f" ({layout.enums[name]} value name)" if name in layout.enums else "")
        attrs[name] = attr(kind, doc, optional=kind == "str" and name not in layout.enums)
    if layout.member == "MPSClamp":
        attrs["min_value"] = attr("f32", "MPSNode.min_max.min_value", optional=True)
        attrs["max_value"] = attr("f32", "MPSNode.min_max.max_value", optional=True)
    else:
        attrs["min_max"] = attr("f32s", "MPSNode.min_max as [min_value, max_value], when the node has one",
                                optional=True)
    if layout.has_operand_segments:
        attrs[OPERAND_SEGMENTS] = attr("i32s", "operands per field: " + ", ".join(f.name for f in layout.operands))
    if layout.has_result_segments:
        attrs[RESULT_SEGMENTS] = attr("i32s", "results per field: " + ", ".join(f.name for f in layout.results))
    for f in layout.operands + layout.results:
        if f.variadic:
            attrs[absent_attr(f.name)] = attr("i32s", f"positions of {f.name} that held -1", optional=True)
    alias = "" if layout.table == layout.member else f" (table {layout.table})"
    define(
        layout.op,
        operands=_arity(layout.operands),
        results=_arity(layout.results),
        attrs=attrs,
        doc=f"MPSNodeUnion member {layout.member}{alias}. Operands: "
        + (", ".join(f.name + ("[]" if f.variadic else "") for f in layout.operands) or "none")
        + "; results: "
        + ", ".join(f.name + ("[]" if f.variadic else "") for f in layout.results)
        + ".",
        verify=_verify_node,
    )


for _layout_entry in LAYOUTS.values():
    _define(_layout_entry)


define(
    "mps.constant",
    operands=0,
    attrs={"value": attr("tensor", "the constant's data: a read-only view into the model file where possible")},
    doc="A value listed in MPSGraph.constant_ids, with its data from the constant segment or inline buffer.",
    verify=constant_verifier("value"),
    traits={"constant"},
)


# ------------------------------------------------------------------------------------------- accessors
# schema field name -> its value, None for an absent id, or a list (None where the file had -1)
ByField = dict[str, Value | list[Value | None] | None]


def _by_field(fields: tuple[IdField, ...], values: list[Value], sizes: list[int] | None,
              attrs: dict[str, Any]) -> ByField:
    if sizes is None:  # a single field: it holds everything there is
        sizes = [len(values)] if fields else []
    out: ByField = {}
    pos = 0
    for f, n in zip(fields, sizes):
        chunk: list[Value | None] = list(values[pos: pos + n])
        pos += n
        if f.variadic:
            for k in sorted(attrs.get(absent_attr(f.name), [])):
                chunk.insert(k, None)
            out[f.name] = chunk
        else:
            out[f.name] = chunk[0] if chunk else None
    return out


def node_operands(graph: Graph, node: int) -> ByField:
    """Operands of an mps node op by schema field name: None for an absent id, a list (with None where
    the file had -1) for a list field."""
    layout = LAYOUT_BY_OP[graph.op(node)]
    attrs = graph.attrs(node)
    sizes = attrs.get(OPERAND_SEGMENTS) if layout.has_operand_segments else None
    return _by_field(layout.operands, graph.operands(node), sizes, attrs)


def node_results(graph: Graph, node: int) -> ByField:
    """Results of an mps node op by schema field name, the way `node_operands` gives operands."""
    layout = LAYOUT_BY_OP[graph.op(node)]
    attrs = graph.attrs(node)
    sizes = attrs.get(RESULT_SEGMENTS) if layout.has_result_segments else None
    return _by_field(layout.results, graph.results(node), sizes, attrs)
