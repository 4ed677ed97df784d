"""One MPS payload (an MPSGraph flatbuffer and its constants) -> one Graph of mps.* ops.

Reading happens in three steps, so that value ids need not be in topological order:
1. decode every node: its union member, attributes, operand and result ids (all ids range-checked);
2. record who defines each value id: a graph input, a constant, or a node result. A value is defined
   once, except that a node may redefine in place a value it reads (the backend's fp16 boundary casts
   `MPSCast(input1_id = x, output_id = x)`): readers later in node order, and the graph outputs, see the
   new definition; the graph input itself keeps its declared (float32) type;
3. create the ops in node order, each operand wired to the definition of its id visible at that node:
   the latest one before it in node order, or, when there is none yet, the only one there is (a later
   node: such operands are wired once every op exists, and then the graph is checked for cycles).
A dimension of -1 is dynamic; other negative sizes are errors.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn2tosa.diagnostics import InvalidInputError, Unsupported, UnsupportedError
from nn2tosa.ir import Graph, Loc, TensorType, Value
from nn2tosa.schemas import Schema, load_schema
from nn2tosa.schemas.model import TypeRef
from nn2tosa.schemas.flatread import FlatBuffer, Table
from nn2tosa.schemas.verify import verify_buffer

from . import constants, dtypes
from .dialect import LAYOUTS, NODE_UNION, OPERAND_SEGMENTS, RESULT_SEGMENTS, IdField, NodeLayout, absent_attr
from .payload import Payload, parse

ABSENT = -1
FORMAT = "mps"

# Facts about result and operand types that tell the dtype numbering apart (see dtypes.py).
_BOOL_RESULTS = frozenset({"MPSEq", "MPSNe", "MPSGe", "MPSGt", "MPSLe", "MPSLt", "MPSIsnan", "MPSIsinf",
                           "MPSLogicalNot"})
_INDEX_FIELDS = {"MPSIndexSelect": "index_id", "MPSEmbedding": "input2_id", "MPSScatter": "idx_id",
                 "MPSMaxPool2DWithIndices": "output2_id"}
_INDEX_TYPES = frozenset({"i32", "i64"})


@functools.lru_cache(maxsize=1)
def _bare_schema() -> Schema:
    """The schema for bare flatbuffers. Their writers declared `constant_buffer_size:int` (4 bytes) where
    the current schema says uint64; a bare flatbuffer keeps its data inline and the size is never read,
    so declaring it 4 bytes wide checks and reads both layouts safely. A deep copy of the packaged
    model, so that no table definition (nor the reader's per-definition plans) is shared with it."""
    schema = copy.deepcopy(load_schema("mps"))
    table = schema.tables["MPSTensor"]
    wide = table.by_name["constant_buffer_size"]
    if wide.type.scalar != "ulong":  # pragma: no cover - the packaged schema is frozen
        raise RuntimeError("the MPS schema no longer declares constant_buffer_size as uint64")
    narrow = dataclasses.replace(wide, type=TypeRef("scalar", "int", "int"))
    table.fields = [narrow if f is wide else f for f in table.fields]
    table.by_name[narrow.name] = narrow
    return schema


@dataclass
class _Node:
    index: int
    layout: NodeLayout
    where: str
    attrs: dict[str, Any]
    ids: dict[str, list[int]]  # id field -> the ids it holds (an absent id gives [])
    node_id: int = -1  # the IR op, once created

    @property
    def flat_operands(self) -> list[int]:
        return [i for f in self.layout.operands for i in self.ids[f.name]]

    @property
    def flat_results(self) -> list[int]:
        return [i for f in self.layout.results for i in self.ids[f.name]]


@dataclass
class _Values:
    """mps_values read once: raw dtype number and dims per value id."""

    raw_dtype: list[int] = field(default_factory=list)
    dims: list[tuple[int, ...]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


def read_graph(data: memoryview, name: str = "main") -> Graph:
    """The Graph of an MPS payload (with the 24-byte header) or of a bare MPSGraph flatbuffer."""
    payload = parse(data)
    schema = load_schema("mps") if payload.has_header else _bare_schema()
    fb = FlatBuffer(payload.data, schema, payload.flatbuffer_start, end=payload.flatbuffer_end)
    root = fb.root()
    _check_node_types(root)  # before the verifier, which would name an unknown type by offset only
    verify_buffer(fb)
    return _Reader(payload, root).build(name)


def _check_node_types(root: Table) -> None:
    for index, node in enumerate(root.get("mps_nodes") or []):
        tag = node.get("mpsnode_union_type")
        if tag not in NODE_UNION.by_value:
            known = f"1..{len(NODE_UNION.members)}"
            raise InvalidInputError(f"unknown node type {tag} (MPSNodeUnion has {known})", where=f"node {index}")


class _Reader:
    def __init__(self, payload: Payload, root: Table):
        self.payload = payload
        self.root = root
        self.values = self._read_values()
        self.count = len(self.values.raw_dtype)
        self.nodes = [self._decode_node(i, n) for i, n in enumerate(root.get("mps_nodes") or [])]
        self.input_ids = self._id_list("input_ids")
        self.output_ids = self._id_list("output_ids")
        self.constant_ids = self._id_list("constant_ids")
        self.locations = {vid: self._constant_location(vid) for vid in self.constant_ids}
        self.numbering = self._detect_numbering()
        self.types: dict[int, TensorType] = {}
        self.forward_reads = False  # whether some node reads a value a later node defines

    # ---------------------------------------------------------------- decoding
    def _read_values(self) -> _Values:
        values = _Values()
        for i, v in enumerate(self.root.get("mps_values") or []):
            dims = v.get("dims")
            dims_t = () if dims is None else tuple(int(d) for d in dims)
            if any(d < ABSENT for d in dims_t):
                raise InvalidInputError(f"dims {list(dims_t)} has a negative size", where=f"value {i}")
            if v.has("num_dims") and v.get("num_dims") != len(dims_t):
                raise InvalidInputError(f"num_dims {v.get('num_dims')} but {len(dims_t)} dims", where=f"value {i}")
            values.raw_dtype.append(v.get("datatype"))
            values.dims.append(dims_t)
            values.tables.append(v)
        return values

    def _check_id(self, value_id: int, where: str, what: str) -> None:
        if not 0 <= value_id < self.count:
            raise InvalidInputError(f"{what} {value_id} is out of range (the graph has {self.count} values)",
                                    where=where)

    def _id_list(self, field_name: str) -> list[int]:
        ids = self.root.get(field_name)
        out = [] if ids is None else [int(i) for i in ids]
        for k, i in enumerate(out):
            self._check_id(i, f"MPSGraph.{field_name}[{k}]", "value id")
        if len(set(out)) != len(out):
            raise InvalidInputError("lists a value twice", where=f"MPSGraph.{field_name}")
        return out

    def _decode_node(self, index: int, node: Table) -> _Node:
        member = NODE_UNION.by_value[node.get("mpsnode_union_type")]  # checked by _check_node_types
        where = f"node {index} ({member.name})"
        table = node.get("mpsnode_union")
        if table is None:
            raise InvalidInputError("the node has a type but no table", where=where)
        layout = LAYOUTS[member.name]
        attrs: dict[str, Any] = {name: table.get(name) for name in layout.attrs}
        ids = {}
        for f in layout.operands + layout.results:
            ids[f.name], absent = self._ids(table, f, where)
            if absent and f.variadic:
                attrs[absent_attr(f.name)] = absent
        for name, value in list(attrs.items()):
            if value is None:
                if layout.attrs[name] == "str":
                    del attrs[name]  # a string the file does not hold
                else:
                    attrs[name] = []  # an absent vector
            elif isinstance(value, np.ndarray):
                attrs[name] = value.tolist()
        min_max = node.get("min_max")
        if min_max is not None:
            bounds = [min_max.get("min_value"), min_max.get("max_value")]
            if member.name == "MPSClamp":
                attrs["min_value"], attrs["max_value"] = bounds
            else:
                attrs["min_max"] = bounds
        if layout.has_operand_segments:
            attrs[OPERAND_SEGMENTS] = [len(ids[f.name]) for f in layout.operands]
        if layout.has_result_segments:
            attrs[RESULT_SEGMENTS] = [len(ids[f.name]) for f in layout.results]
        return _Node(index, layout, where, attrs, ids)

    def _ids(self, table: Table, f: IdField, where: str) -> tuple[list[int], list[int]]:
        """(the ids field `f` holds, the positions in it that held -1)."""
        raw = table.get(f.name)
        ids = ([] if raw is None else [int(i) for i in raw]) if f.variadic else [raw]
        present = [i for i in ids if i != ABSENT]
        for i in present:
            self._check_id(i, where, f.name)
        return present, [k for k, i in enumerate(ids) if i == ABSENT]

    # ---------------------------------------------------------------- dtype numbering
    def _detect_numbering(self) -> str:
        facts = []
        for vid, location in self.locations.items():
            if location is not None:
                count = int(np.prod(self.values.dims[vid], dtype=object))
                allowed = dtypes.elements_of_size(count, location[1])
                facts.append(dtypes.DTypeFact(self.values.raw_dtype[vid], allowed, f"constant value {vid}"))
        for n in self.nodes:
            if n.layout.member in _BOOL_RESULTS:
                facts += [dtypes.DTypeFact(self.values.raw_dtype[v], frozenset({"i1"}), n.where) for v in n.flat_results]
            index_field = _INDEX_FIELDS.get(n.layout.member)
            if index_field is not None:
                facts += [dtypes.DTypeFact(self.values.raw_dtype[v], _INDEX_TYPES, n.where) for v in n.ids[index_field]]
        legacy_impossible = any(n.layout.member == "MPSDequantizePerChannelGroup" for n in self.nodes)
        return dtypes.detect_numbering(facts, self.values.raw_dtype, legacy_impossible, self.payload.has_header)

    # ---------------------------------------------------------------- types and constants
    def _dtype_name(self, raw: int, where: str) -> str:
        name = dtypes.NUMBERINGS[self.numbering].get(raw)
        if name is None:
            raise InvalidInputError(f"unknown MPSDataType {raw} ({self.numbering} numbering)", where=where)
        return name

    def _type(self, vid: int, unsupported: list[Unsupported]) -> TensorType | None:
        t = self.types.get(vid)
        if t is None:
            where = f"value {vid}"
            name = self._dtype_name(self.values.raw_dtype[vid], where)
            element = dtypes.ELEMENT_TYPES[name]
            if element is None:
                if name == "mps_data_type_invalid":
                    raise InvalidInputError("the value's dtype is mps_data_type_invalid", where=where)
                unsupported.append(Unsupported(name, where, "nn2tosa has no element type for it"))
                return None
            t = self.types[vid] = TensorType(self.values.dims[vid], element)
        return t

    def _constant_location(self, vid: int) -> tuple[int, int] | None:
        """(offset in the payload, byte count) of a constant's data: inline storage when it has any, else
        its range of the constant segment; None when the file holds no data for it."""
        v = self.values.tables[vid]
        buffer = v.get("constant_buffer")
        span = buffer.vector_span("storage") if buffer is not None else None
        if span is not None and span[1] > 0:
            return span
        if not self.payload.has_header:
            return None
        offset, size = v.get("segment_offset"), v.get("constant_buffer_size")
        segment = self.payload.constants_end - self.payload.constants_start
        if offset > segment or size > segment - offset:
            raise InvalidInputError(
                f"constant data ({size} bytes at segment offset {offset}) lies outside the constant segment "
                f"({segment} bytes at offset {self.payload.constants_start})",
                where=f"value {vid}",
            )
        return self.payload.constants_start + offset, size

    def _constant(self, vid: int, t: TensorType) -> np.ndarray:
        where = f"value {vid}"
        location = self.locations[vid]
        if location is None:
            raise InvalidInputError("constant has no data (no inline buffer and no constant segment)", where=where)
        return constants.decode(self.payload.data, location[0], location[1], t, where=where)

    # ---------------------------------------------------------------- building
    def build(self, name: str) -> Graph:
        g = Graph(name)
        g.meta.update(
            format=FORMAT,
            version=self.root.get("version") or "",
            graph_type=self.root.enum_name("graph_type"),
            dtype_numbering=self.numbering,
            container="payload" if self.payload.has_header else "flatbuffer",
        )
        unsupported: list[Unsupported] = []
        used = set(self.input_ids) | set(self.constant_ids) | set(self.output_ids)
        for n in self.nodes:
            used.update(n.flat_operands, n.flat_results)
        for vid in sorted(used):
            self._type(vid, unsupported)
        if unsupported:
            raise UnsupportedError(unsupported)

        defs: dict[int, list[tuple[int, Value]]] = {}  # value id -> (node index, definition), in node order

        for i, vid in enumerate(self.input_ids):
            defs[vid] = [(-1, g.add_input(self.types[vid], f"input{i}", Loc(f"value {vid}", "input")))]
        for vid in self.constant_ids:
            if vid in defs:
                raise InvalidInputError("is both a graph input and a constant", where=f"value {vid}")
            t = self.types[vid]
            node = g.add_op("mps.constant", (), [t], {"value": self._constant(vid, t)}, Loc(f"value {vid}", "constant"))
            defs[vid] = [(-1, Value(node, 0))]
        deferred: list[_Node] = []  # nodes reading a value that a later node defines
        for n in self.nodes:
            self._name_enums(n)
            in_place = set(n.flat_operands)
            types = []
            for vid in n.flat_results:
                if vid in defs and vid not in in_place:
                    first = defs[vid][0][0]
                    by = f"node {first}" if first >= 0 else "a graph input or constant"
                    raise InvalidInputError(f"redefines value {vid}, already defined by {by}", where=n.where)
                types.append(self._result_type(n, vid, vid in in_place))
            # `defs` holds the definitions before this node: wire now unless an operand comes later
            ready = all(vid in defs for vid in n.flat_operands)
            operands = [defs[vid][-1][1] for vid in n.flat_operands] if ready else []
            n.node_id = g.add_op(n.layout.op, operands, types, n.attrs, Loc(f"node {n.index}", n.layout.member))
            if not ready:
                deferred.append(n)
            for k, vid in enumerate(n.flat_results):
                if vid in defs and defs[vid][-1][0] == n.index:
                    raise InvalidInputError(f"defines value {vid} twice", where=n.where)
                defs.setdefault(vid, []).append((n.index, Value(n.node_id, k)))

        for n in deferred:
            g.set_operands(n.node_id, [self._resolve(defs, vid, n.index, n.where) for vid in n.flat_operands])
        for i, vid in enumerate(self.output_ids):
            g.add_output(self._resolve(defs, vid, len(self.nodes), f"MPSGraph.output_ids[{i}]"), f"output{i}")
        if self.forward_reads:  # otherwise every operand comes from an earlier node: no cycle possible
            self._check_acyclic(g)
        return g

    def _name_enums(self, n: _Node) -> None:
        """Enum attributes hold numbers until the numbering is known; then they get their value names."""
        for name, enum in n.layout.enums.items():
            raw = n.attrs[name]
            if enum == "MPSDataType":
                n.attrs[name] = self._dtype_name(raw, n.where)
            else:  # pragma: no cover - node tables hold no other enum
                n.attrs[name] = self.root.flatbuffer.schema.enums[enum].names[raw]

    def _result_type(self, n: _Node, vid: int, in_place: bool) -> TensorType:
        t = self.types[vid]
        if in_place and n.layout.member == "MPSCast":  # an in-place cast: same value, the cast's element type
            element = dtypes.ELEMENT_TYPES[n.attrs["dtype"]]
            if element is None:
                raise UnsupportedError([Unsupported(n.attrs["dtype"], n.where, "nn2tosa has no element type for it")])
            t = t.with_dtype(element)
        return t

    def _resolve(self, defs: dict[int, list[tuple[int, Value]]], vid: int, position: int, where: str) -> Value:
        candidates = defs.get(vid)
        if not candidates:
            raise InvalidInputError(f"reads value {vid}, which no graph input, constant or node defines", where=where)
        before = [value for pos, value in candidates if pos < position]
        if before:
            return before[-1]
        if len(candidates) == 1:  # defined by a node later in node order: fine if there is no cycle
            self.forward_reads = True
            return candidates[0][1]
        raise InvalidInputError(f"reads value {vid} before any of its {len(candidates)} definitions", where=where)

    def _check_acyclic(self, g: Graph) -> None:
        """Raise naming the nodes of a cycle, if there is one (linear: peel off acyclic nodes first)."""
        indegree = dict(g.nx.in_degree())
        ready = [n for n, d in indegree.items() if d == 0]
        while ready:
            n = ready.pop()
            for _, v in g.nx.out_edges(n):
                indegree[v] -= 1
                if indegree[v] == 0:
                    ready.append(v)
        stuck = {n for n, d in indegree.items() if d > 0}
        if not stuck:
            return
        # every stuck node reads another stuck node: walk backwards until a node repeats
        path: list[int] = []
        seen: dict[int, int] = {}
        n = min(stuck)
        while n not in seen:
            seen[n] = len(path)
            path.append(n)
            n = min(u for u, _ in g.nx.in_edges(n) if u in stuck)
        cycle = [str(g.loc(m)) for m in reversed(path[seen[n]:])]  # "node 3 (MPSAdd)": every node has one
        raise InvalidInputError("nodes form a cycle: " + " -> ".join(cycle), where=cycle[0])
