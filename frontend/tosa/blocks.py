"""What both TOSA layouts share: one basic block -> one Graph.

A TOSA basic block lists its tensors (name, shape, element type, constant data), its operators
(op code, attribute table, input and output tensor names) and the names of its inputs and outputs.
`BlockReader` turns that into the IR: graph inputs first, then one op per operator, created in an
order where every producer comes before its users (the file's order when the file is already
topologically sorted, so that a file our writer made is re-created op for op), then the outputs.
What an operator becomes is the layout's business (`Layout.convert`); the reader resolves names to
values, decodes constant data and checks each created op with the IR's own verifier, so that an
inconsistent file fails here, naming the operator, instead of somewhere downstream.

Variables, as tosa-opt writes them: a tensor with `variable` set is a persistent variable (its data
the initial value); an IDENTITY reading it is `tosa.variable_read`, an IDENTITY writing it
`tosa.variable_write`, and every such tensor declares one `tosa.variable` in the graph.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import numpy as np

from nn2tosa.diagnostics import InvalidInputError, Unsupported
from nn2tosa.ir import Graph, Loc, ShapeType, TensorType, Type, Value
from nn2tosa.ir.types import numpy_dtype
from nn2tosa.ir.verify import op_problems
from nn2tosa.limits import check_tensor
from nn2tosa.schemas.flatread import Table


@dataclass(frozen=True)
class ElementType:
    """What a DType value of a layout means: an IR element type, and whether the layout marks the
    data unsigned (the 0.100 layout's UINT8/UINT16, which TOSA 1.0 expresses on RESCALE instead)."""

    mlir: str
    unsigned: bool = False


@dataclass
class Operator:
    """One operator of a block, as the file gives it."""

    index: int
    name: str  # the Op enum name, e.g. "CONV2D"
    table: Table
    inputs: list[str]
    outputs: list[str]

    @property
    def where(self) -> str:
        return f"operator {self.index} ({self.name})"


class Layout(Protocol):
    """What differs between the TOSA layouts (see layout_1x.py and layout_0100.py)."""

    element_types: dict[int, ElementType]  # DType value -> element type (absent: not readable)
    dtype_names: dict[int, str]  # DType value -> its name, for messages
    op_names: dict[int, str]  # Op value -> its name

    def unsupported(self, reader: BlockReader, operator: Operator) -> str | None:
        """Why nn2tosa cannot read this operator, or None."""

    def convert(self, reader: BlockReader, operator: Operator, operands: list[Value]) -> list[Value]:
        """Create the operator's op(s); return one value per output tensor."""

    def location(self, operator: Operator) -> Loc | None:
        """The operator's source location, when the layout records one."""


# Bytes one element takes in a block's data (i4: two per byte, bool: one byte each, i48: six).
_STORED_BITS = {"i1": 8, "i4": 4, "i8": 8, "i16": 16, "i32": 32, "i48": 48, "f16": 16, "bf16": 16, "f32": 32,
                "f8E4M3FN": 8, "f8E5M2": 8}


class BlockReader:
    """Reads one TosaBasicBlock into a Graph named `graph_name`.

    `file_data` is the whole file (tensors may keep large data outside the flatbuffer, at a file
    offset); `where` prefixes every error ("region 'main' block 'main':")."""

    def __init__(self, layout: Layout, block: Table, graph_name: str, file_data: memoryview, where: str):
        self.layout = layout
        self.block = block
        self.file_data = file_data
        self.where = where
        self.graph = Graph(graph_name)
        self.values: dict[str, Value] = {}
        self.tensors = self._by_name(block["tensors"] or (), "tensor")
        self.shapes = self._by_name(block["shapes"] or (), "shape") if "shapes" in block.fields() else {}
        self.operators = [self._operator(i, t) for i, t in enumerate(block["operators"] or ())]
        self._producer_index: dict[str, int] | None = None
        self._types: dict[str, TensorType] = {}  # tensor name -> its type, read once

    # ------------------------------------------------------------------ errors
    def fail(self, message: str, operator: Operator | None = None) -> NoReturn:
        raise InvalidInputError(message, where=self.where_of(operator))

    def where_of(self, operator: Operator | None) -> str:
        return self.where + (f" {operator.where}" if operator is not None else "")

    def _by_name(self, tables: Sequence[Table], kind: str) -> dict[str, Table]:
        out: dict[str, Table] = {}
        for i, t in enumerate(tables):
            name = t["name"]
            if name is None:
                self.fail(f"{kind} {i} has no name")
            if name in out:
                self.fail(f"two {kind}s are named {name!r}")
            out[name] = t
        return out

    def _operator(self, index: int, t: Table) -> Operator:
        code = t["op"]
        name = self.layout.op_names.get(code)
        if name is None:
            self.fail(f"operator {index} has op code {code}, which the schema does not define")
        return Operator(index, name, t, list(t["inputs"] or ()), list(t["outputs"] or ()))

    # ------------------------------------------------------------------ what the file cannot express in the IR
    def unsupported(self) -> list[Unsupported]:
        """Everything in the block nn2tosa cannot read, all at once."""
        items = []
        for name, t in self.tensors.items():
            if t["type"] not in self.layout.element_types:
                dtype = self.layout.dtype_names.get(t["type"], str(t["type"]))
                items.append(Unsupported(f"{dtype} tensor", f"{self.where} tensor {name!r}",
                                         f"element type {dtype} is not a TOSA 1.0 type"))
            elif t["is_unranked"]:
                items.append(Unsupported("unranked tensor", f"{self.where} tensor {name!r}",
                                         "the IR holds ranked tensors only"))
        for o in self.operators:
            why = self.layout.unsupported(self, o)
            if why:
                items.append(Unsupported(o.name, f"{self.where} operator {o.index}", why))
        return items

    def producer(self, name: str) -> Operator | None:
        """The operator writing tensor `name` (None for graph inputs and variables)."""
        if self._producer_index is None:
            self._producer_index = self._producers()
        index = self._producer_index.get(name)
        return None if index is None else self.operators[index]

    # ------------------------------------------------------------------ tensors
    def tensor(self, name: str, operator: Operator | None = None) -> Table:
        t = self.tensors.get(name)
        if t is None:
            self.fail(f"no tensor is named {name!r}", operator)
        return t

    def element_type(self, name: str, operator: Operator | None = None) -> ElementType:
        return self.layout.element_types[self.tensor(name, operator)["type"]]

    def is_variable(self, name: str) -> bool:
        t = self.tensors.get(name)
        return t is not None and bool(t["variable"])

    def value_type(self, name: str, operator: Operator | None = None) -> Type:
        """The IR type of tensor (or shape) `name`."""
        if name in self.shapes:
            return ShapeType(int(self.shapes[name]["rank"]))
        known = self._types.get(name)
        if known is not None:
            return known
        t = self.tensor(name, operator)
        dims = t["shape"]
        shape = () if dims is None else tuple(dims.tolist())
        if any(d < -1 for d in shape):
            self.fail(f"tensor {name!r} has shape {list(shape)} (a dimension is a size, or -1 when dynamic)", operator)
        element_type = self.layout.element_types[t["type"]].mlir
        # a declared size checked before anything is built from it (numpy cannot even reshape to some claims)
        check_tensor(shape, element_type, f"tensor {name!r}", where=self.where_of(operator))
        known = self._types[name] = TensorType(shape, element_type)
        return known

    def result_types(self, operator: Operator) -> list[Type]:
        return [self.value_type(name, operator) for name in operator.outputs]

    def constant(self, name: str, operator: Operator | None) -> np.ndarray:
        """The data of tensor `name` as the IR stores it: a read-only view into the file wherever the
        storage allows (copies only to unpack i4 and i48, and for bool bytes other than 0 and 1)."""
        t = self.tensor(name, operator)
        tensor_type = self.value_type(name, operator)
        if not isinstance(tensor_type, TensorType) or -1 in tensor_type.shape:
            self.fail(f"constant {name!r} has no static tensor shape ({tensor_type})", operator)
        start, size = self._data_span(t, name, operator)
        count = tensor_type.num_elements
        needed = (count * _STORED_BITS[tensor_type.dtype] + 7) // 8
        if size < needed:
            self.fail(f"tensor {name!r} ({tensor_type}) needs {needed} bytes of data, has {size}", operator)
        return decode_data(self.buffer_of(t), start, tensor_type).reshape(tensor_type.shape)

    def buffer_of(self, t: Table) -> Any:
        return self.file_data if _external(t) else t.flatbuffer.buf

    def _data_span(self, t: Table, name: str, operator: Operator | None) -> tuple[int, int]:
        """(start, size) of a tensor's data: its `data` vector, or, in files over 2 GB, the bytes at
        its `offset` (from the start of the file) and `size`."""
        if _external(t):
            offset, size = int(t["offset"]), int(t["size"])
            if offset + size > len(self.file_data):
                self.fail(f"tensor {name!r} keeps {size} bytes at file offset {offset}, past the end of the "
                          f"file ({len(self.file_data)} bytes)", operator)
            return offset, size
        span = t.vector_span("data")
        return (0, 0) if span is None else span

    def shape_values(self, name: str, operator: Operator) -> np.ndarray:
        """The int64 values of shape `name` (a TosaShape of the block, or a SHAPE tensor)."""
        s = self.shapes.get(name)
        if s is None:
            self.fail(f"no shape is named {name!r}", operator)
        rank = int(s["rank"])
        span = s.vector_span("data")
        start, size = (0, 0) if span is None else span
        if size < 8 * rank:
            self.fail(f"shape {name!r} of rank {rank} needs {8 * rank} bytes of data, has {size}", operator)
        return np.frombuffer(s.flatbuffer.buf, dtype="<i8", count=rank, offset=start)

    # ------------------------------------------------------------------ creating ops
    def add(self, op: str, operands: Sequence[Value], types: Sequence[Type], attrs: dict[str, Any],
            operator: Operator) -> list[Value]:
        """Create `op`, located at `operator`, and check it with the IR verifier (constants, whose
        values the reader shaped after their type itself, need no check)."""
        node = self.graph.add_op(op, operands, types, attrs, self.layout.location(operator))
        if op in _BUILT_CONSISTENT:
            return self.graph.results(node)
        problems = op_problems(self.graph, node)
        if problems:
            self.fail(problems[0].split(": ", 1)[-1], operator)
        return self.graph.results(node)

    def add_const(self, values: np.ndarray, element_type: str, operator: Operator) -> Value:
        """A tosa.const (for operands that the file keeps in attributes)."""
        return self.add("tosa.const", (), [TensorType(values.shape, element_type)],
                        {"values": np.ascontiguousarray(values, dtype=numpy_dtype(element_type))}, operator)[0]

    def add_const_shape(self, values: Sequence[int], operator: Operator) -> Value:
        array = np.asarray(values, dtype="<i8").reshape(-1)
        return self.add("tosa.const_shape", (), [ShapeType(array.size)], {"values": array}, operator)[0]

    # ------------------------------------------------------------------ the block
    def read(self) -> Graph:
        producers = self._producers() if self._producer_index is None else self._producer_index
        for name in self.block["inputs"] or ():
            if name in producers:
                self.fail(f"graph input {name!r} is also written by operator {producers[name]}")
            if name in self.values:
                self.fail(f"graph input {name!r} is listed twice")
            self.values[name] = self.graph.add_input(self.value_type(name), name)
        self._declare_variables()
        self._create_all(producers)
        for name in self.block["outputs"] or ():
            value = self.values.get(name)
            if value is None:
                self.fail(f"graph output {name!r} is neither a graph input nor written by an operator")
            self.graph.add_output(value, name)
        return self.graph

    def _producers(self) -> dict[str, int]:
        """Tensor name -> the operator writing it (writes into variables excepted)."""
        producers: dict[str, int] = {}
        for o in self.operators:
            for name in o.outputs:
                if self.is_variable(name):
                    continue
                if name in producers:
                    self.fail(f"tensor {name!r} is written by operators {producers[name]} and {o.index}", o)
                producers[name] = o.index
        return producers

    def _create_all(self, producers: dict[str, int]) -> None:
        """Create every operator after the producers of its inputs (an explicit stack: deep graphs
        must not hit Python's recursion limit)."""
        state = [0] * len(self.operators)  # 0 new, 1 waiting for its producers, 2 created
        checked = [0] * len(self.operators)  # inputs already available, so each input is looked at once
        for first in range(len(self.operators)):
            stack = [first]
            while stack:
                i = stack[-1]
                if state[i] == 2:
                    stack.pop()
                    continue
                o = self.operators[i]
                state[i] = 1
                waiting = None
                while checked[i] < len(o.inputs):
                    name = o.inputs[checked[i]]
                    j = producers.get(name)
                    if name not in self.values and j is not None:
                        if state[j] == 1:
                            self.fail(f"input {name!r} depends on the operator's own result (a cycle)", o)
                        waiting = j
                        break
                    checked[i] += 1
                if waiting is not None:
                    stack.append(waiting)
                    continue
                stack.pop()
                state[i] = 2
                self._create(o)

    def _create(self, o: Operator) -> None:
        if o.name == "IDENTITY" and any(self.is_variable(n) for n in o.inputs + o.outputs):
            results = self._variable_access(o)
        else:
            operands = []
            for name in o.inputs:
                value = self.values.get(name)
                if value is None:
                    if self.is_variable(name):
                        self.fail(f"reads variable {name!r} directly (only IDENTITY reads variables)", o)
                    self.fail(f"input {name!r} is neither a graph input nor written by an operator", o)
                operands.append(value)
            results = self.layout.convert(self, o, operands)
        for name, value in zip(o.outputs, results):
            self.values[name] = value

    # ------------------------------------------------------------------ variables
    def _declare_variables(self) -> None:
        for name, t in self.tensors.items():
            if not t["variable"]:
                continue
            tensor_type = self.value_type(name)
            if not isinstance(tensor_type, TensorType):  # a shape of the same name
                self.fail(f"variable {name!r} has no tensor type ({tensor_type})")
            attrs: dict[str, Any] = {"sym_name": t["variable_name"] or name, "var_shape": list(tensor_type.shape),
                                     "type": tensor_type.dtype}
            if self._data_span(t, name, None)[1]:
                attrs["initial_value"] = self.constant(name, None)
            self.graph.add_op("tosa.variable", (), (), attrs, Loc(name, "variable"))

    def _variable_access(self, o: Operator) -> list[Value]:
        if len(o.inputs) != 1 or len(o.outputs) != 1:
            self.fail("an IDENTITY on a variable has one input and one output", o)
        source, target = o.inputs[0], o.outputs[0]
        if self.is_variable(source) and not self.is_variable(target):
            name = self.tensor(source, o)["variable_name"] or source
            return self.add("tosa.variable_read", (), self.result_types(o), {"name": name}, o)
        if self.is_variable(target) and not self.is_variable(source):
            value = self.values.get(source)
            if value is None:
                self.fail(f"input {source!r} is neither a graph input nor written by an operator", o)
            name = self.tensor(target, o)["variable_name"] or target
            self.add("tosa.variable_write", [value], (), {"name": name}, o)
            return []
        self.fail("copies one variable into another", o)


_BUILT_CONSISTENT = frozenset({"tosa.const", "tosa.const_shape"})


def _external(t: Table) -> bool:
    """Tensors of files over 2 GB keep their data outside the flatbuffer (1.x `offset` > 1)."""
    return "offset" in t.fields() and int(t["offset"]) > 1


EXTERNAL_ALIGNMENT = 8  # what TosaTensor.data's force_align asks of data inside the flatbuffer


def check_external_data(readers: list[BlockReader]) -> None:
    """The data tensors keep after the flatbuffer (1.x offset/size), checked across the whole file
    before anything is read from it: each span 8-byte aligned, inside the file, and no two of them
    overlapping (InvalidInputError naming the tensors)."""
    spans = []
    for r in readers:
        for name, t in r.tensors.items():
            if _external(t):
                offset, size = int(t["offset"]), int(t["size"])
                if offset % EXTERNAL_ALIGNMENT:
                    r.fail(f"tensor {name!r} keeps its data at file offset {offset}, which is not "
                           f"{EXTERNAL_ALIGNMENT}-byte aligned")
                if offset + size > len(r.file_data):
                    r.fail(f"tensor {name!r} keeps {size} bytes at file offset {offset}, past the end of the "
                           f"file ({len(r.file_data)} bytes)")
                spans.append((offset, size, name, r))
    spans.sort(key=lambda s: s[:2])
    for (a, a_size, a_name, a_reader), (b, _, b_name, b_reader) in zip(spans, spans[1:]):
        if b < a + a_size:
            b_reader.fail(f"tensor {b_name!r} keeps its data at file offset {b}, inside that of tensor {a_name!r} "
                          f"({a_reader.where.rstrip(':')}, offset {a}, {a_size} bytes)")


def decode_data(buf: Any, start: int, tensor_type: TensorType) -> np.ndarray:
    """The flat IR storage of `tensor_type.num_elements` elements stored at `buf[start:]` (the caller
    has checked that enough bytes are there)."""
    count = tensor_type.num_elements
    dtype = tensor_type.dtype
    if dtype == "i4":  # two per byte, element 2i in the low nibble, sign-extended
        packed = np.frombuffer(buf, dtype=np.int8, count=(count + 1) // 2, offset=start)
        out = np.empty(packed.size * 2, dtype=np.int8)
        out[0::2] = (packed << 4) >> 4
        out[1::2] = packed >> 4
        return out[:count]
    if dtype == "i48":  # six little-endian bytes each, sign-extended into int64
        raw = np.frombuffer(buf, dtype=np.uint8, count=6 * count, offset=start).reshape(count, 6)
        wide = np.zeros((count, 8), dtype=np.uint8)
        wide[:, :6] = raw
        wide[:, 6:] = np.where(raw[:, 5:6] & 0x80, 0xFF, 0)
        return wide.view("<i8").reshape(count)
    if dtype == "i1":
        raw = np.frombuffer(buf, dtype=np.uint8, count=count, offset=start)
        return raw.view(np.bool_) if not raw.size or raw.max() <= 1 else raw != 0
    return np.frombuffer(buf, dtype=numpy_dtype(dtype), count=count, offset=start)


def const_op(reader: BlockReader, operator: Operator, operands: list[Value]) -> list[Value]:
    """CONST: a tosa.const holding its output tensor's data (the same in every layout)."""
    if operands or len(operator.outputs) != 1:
        reader.fail("CONST has no inputs and one output", operator)
    name = operator.outputs[0]
    return reader.add("tosa.const", (), reader.result_types(operator), {"values": reader.constant(name, operator)},
                      operator)


def read_blocks(readers: list[BlockReader]) -> tuple[list[Graph], list[Unsupported]]:
    """Read every block whose content nn2tosa supports; graphs in file order with "main" first."""
    unsupported = [item for r in readers for item in r.unsupported()]
    if unsupported:
        return [], unsupported
    readers.sort(key=lambda r: r.graph.name != "main")  # stable: the rest keep file order
    return [r.read() for r in readers], []
