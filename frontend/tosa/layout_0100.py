"""The seed's TOSA layout (0.90 semantics, stamped 0.100.0 draft) -> tosa.* ops of TOSA 1.0.

The mapping is the 0.100 writer's table read backwards (nn2tosa.tosa_flatbuffer.layout_0100.LEGACY_OPS):
each row names the IR op, and each of its Fields turns attribute-table fields back into the IR op's
attributes and constant operands (zero points, RESCALE multiplier/shift, MUL shift, TABLE contents,
PAD's value as tosa.const; RESHAPE/SLICE/TILE/PAD/RESIZE shapes as tosa.const_shape). The operator's
inputs fill the remaining operand positions in order. UINT8/UINT16 tensors become i8/i16 with the
RESCALEs that read or write them marked input_unsigned/output_unsigned (and zero points stored as
TOSA 1.0 stores them); nothing but RESCALE may touch such a tensor.

FULLY_CONNECTED (gone in TOSA 1.0) becomes reshape -> conv2d (1x1) -> reshape, which computes the same
sums. Operators without a TOSA 1.0 counterpart (DIM, CONST_SHAPE and the *_SHAPE family, RESERVED)
are unsupported. Files of this layout carry no locations: ops have none.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from nn2tosa.ir import Graph, Loc, TensorType, Value
from nn2tosa.tosa_flatbuffer.layout_0100 import DTYPES, LEGACY_OPS, UNSIGNED_DTYPES, LegacyOp, ZeroPoint
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.flatread import FlatBuffer, Table

from .blocks import BlockReader, ElementType, Operator, const_op, read_blocks

SCHEMA = load_schema("tosa_0_100")

ELEMENT_TYPES = {value: ElementType(element) for element, value in DTYPES.items()}
ELEMENT_TYPES.update({value: ElementType(element, unsigned=True) for element, value in UNSIGNED_DTYPES.items()})
READ_ROWS: dict[str, tuple[str, LegacyOp]] = {row.op: (ir_op, row) for ir_op, row in LEGACY_OPS.items()}
# The conv2d result type FULLY_CONNECTED's decomposition gives, by input type (TOSA 1.0's rule).
_FC_RESULTS = {"i8": "i32", "i16": "i48", "f16": "f16", "f32": "f32", "bf16": "bf16"}


class _View:
    """A ReadView (see flatbuffer_0100) of one operator: the fields read, attributes and constant
    operands made."""

    def __init__(self, reader: BlockReader, operator: Operator, operands: list[Value], table_name: str | None):
        self.reader = reader
        self.operator = operator
        self.operands = operands
        self.attrs: dict[str, Any] = {}
        self.made: dict[int, Value] = {}
        member = operator.table.union_type("attribute")
        if member is not None and member != table_name:
            self.fail(f"carries a {member}, expected {table_name or 'no attribute'}")
        self.table: Table | None = operator.table["attribute"] if member is not None else None
        self.table_def = SCHEMA.tables[table_name] if table_name else None

    def field(self, name: str) -> Any:
        if self.table is not None:
            return self.table[name]
        default = {f.name: f.default for f in self.table_def.fields}.get(name) if self.table_def else None
        return default

    def enum_name(self, name: str) -> str:
        return self.table.enum_name(name) if self.table is not None else "UNKNOWN"

    def input_type(self, k: int) -> str:
        if k >= len(self.operands):
            self.fail(f"has {len(self.operands)} inputs, reading input {k}")
        t = self.reader.graph.type_of(self.operands[k])
        return t.dtype if isinstance(t, TensorType) else ""

    def input_unsigned(self, k: int) -> bool:
        return k < len(self.operator.inputs) and self.reader.element_type(self.operator.inputs[k], self.operator).unsigned

    def result_type(self) -> TensorType:
        if not self.operator.outputs:
            self.fail("has no output")
        return self.reader.value_type(self.operator.outputs[0], self.operator)  # type: ignore[return-value]

    def result_unsigned(self) -> bool:
        if not self.operator.outputs:
            self.fail("has no output")
        return self.reader.element_type(self.operator.outputs[0], self.operator).unsigned

    def set_const(self, operand: int, values: Any, element_type: str) -> None:
        self.made[operand] = self.reader.add_const(np.asarray(values).reshape(-1), element_type, self.operator)

    def set_shape(self, operand: int, values: Any) -> None:
        self.made[operand] = self.reader.add_const_shape(list(values), self.operator)

    def fail(self, message: str) -> None:
        self.reader.fail(message, self.operator)

    def all_operands(self) -> list[Value]:
        """The operator's inputs with the constants made from fields at their operand positions."""
        count = len(self.operands) + len(self.made)
        if any(k >= count for k in self.made):  # fewer inputs than the op has (a damaged file)
            self.fail(f"has {len(self.operands)} inputs, too few for its operands")
        data = iter(self.operands)
        return [self.made[k] if k in self.made else next(data) for k in range(count)]


class Layout0100:
    """The `Layout` of 0.100-draft files (see blocks.Layout)."""

    element_types = ELEMENT_TYPES
    dtype_names = SCHEMA.enums["DType"].names
    op_names = SCHEMA.enums["Op"].names

    def unsupported(self, reader: BlockReader, operator: Operator) -> str | None:
        if operator.name == "UNKNOWN":
            reader.fail("op code UNKNOWN (0) is not an operator", operator)
        if operator.name not in READ_ROWS and operator.name != "FULLY_CONNECTED":
            return "no TOSA 1.0 counterpart"
        if operator.name != "RESCALE":
            for name in operator.inputs + operator.outputs:
                t = reader.tensors.get(name)
                if t is None:
                    continue
                element = self.element_types.get(t["type"])
                if element is not None and element.unsigned:
                    return (f"{reader.layout.dtype_names[t['type']]} tensor {name!r}: TOSA 1.0 keeps unsigned data "
                            "only at RESCALE")
        if operator.name == "FULLY_CONNECTED" and len(operator.inputs) == 3 and len(operator.outputs) == 1:
            x, y = (reader.tensors.get(n) for n in (operator.inputs[0], operator.outputs[0]))
            if x is not None and y is not None and x["type"] in ELEMENT_TYPES and y["type"] in ELEMENT_TYPES:
                source, result = ELEMENT_TYPES[x["type"]].mlir, ELEMENT_TYPES[y["type"]].mlir
                if _FC_RESULTS.get(source) != result:
                    return f"{source} input with {result} output: TOSA 1.0 CONV2D gives {_FC_RESULTS.get(source)}"
        return None

    def convert(self, reader: BlockReader, operator: Operator, operands: list[Value]) -> list[Value]:
        if operator.name == "CONST":
            return const_op(reader, operator, operands)
        if operator.name == "FULLY_CONNECTED":
            return _fully_connected(reader, operator, operands)
        ir_op, row = READ_ROWS[operator.name]
        view = _View(reader, operator, operands, row.table)
        for f in row.fields:
            f.read(view)
        return reader.add(ir_op, view.all_operands(), reader.result_types(operator), view.attrs, operator)

    def location(self, operator: Operator) -> Loc | None:
        return None


def _fully_connected(reader: BlockReader, operator: Operator, operands: list[Value]) -> list[Value]:
    """FULLY_CONNECTED [N, IC] x [OC, IC] + bias -> reshape to [N, 1, 1, IC] and [OC, 1, 1, IC], a
    1x1 CONV2D accumulating in the output type, reshape back to [N, OC]."""
    if len(operands) != 3 or len(operator.outputs) != 1:
        reader.fail("FULLY_CONNECTED has three inputs (input, weight, bias) and one output", operator)
    view = _View(reader, operator, operands, "FullyConnectedAttribute")
    for zp in (ZeroPoint("input_zp", 3, like=0), ZeroPoint("weight_zp", 4, like=1)):
        zp.read(view)
    x, w, bias = operands
    x_type, w_type = reader.graph.type_of(x), reader.graph.type_of(w)
    result = reader.result_types(operator)[0]
    if not (isinstance(x_type, TensorType) and isinstance(w_type, TensorType) and x_type.rank == w_type.rank == 2
            and isinstance(result, TensorType) and result.rank == 2):
        reader.fail("FULLY_CONNECTED takes a rank-2 input and weight and gives a rank-2 output", operator)

    def reshape(value: Value, shape: tuple[int, ...]) -> Value:
        source = reader.graph.tensor_type(value)
        return reader.add("tosa.reshape", [value, reader.add_const_shape(shape, operator)],
                          [source.with_shape(shape)], {}, operator)[0]

    (n, ic), (oc, _) = x_type.shape, w_type.shape
    conv = reader.add("tosa.conv2d", [reshape(x, (n, 1, 1, ic)), reshape(w, (oc, 1, 1, ic)), bias,
                                      view.made[3], view.made[4]],
                      [TensorType((n, 1, 1, oc), result.dtype)],
                      {"pad": [0, 0, 0, 0], "stride": [1, 1], "dilation": [1, 1], "acc_type": result.dtype},
                      operator)[0]
    return [reshape(conv, tuple(result.shape))]


def read_graphs(fb: FlatBuffer, file_data: memoryview) -> tuple[list[Graph], list]:
    """One graph per block (named after it; COND_IF/WHILE_LOOP name blocks), "main" first."""
    layout = Layout0100()
    readers = []
    for r, region in enumerate(fb.root()["regions"] or ()):
        for b, block in enumerate(region["blocks"] or ()):
            name = block["name"] or f"block{b}"
            where = f"region {region['name'] or r!r} block {name!r}:"
            readers.append(BlockReader(layout, block, name, file_data, where))
    return read_blocks(readers)
