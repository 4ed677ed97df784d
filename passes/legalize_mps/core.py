"""What a legalization rule sees of one MPS node, the rule registry, and the helpers rules share.

A rule receives a `Node` and returns one nn value per *logical* result of the node: the node's
result fields in order (`output_id`, or `output1_id`..`output3_id`, or every entry of
`output_ids`), including the ones the file left out (-1), as `frontend/mps/dialect.py`'s
`node_results` lists them. A rule may return None for a result it does not compute (BatchNorm's
saved statistics): that is fine as long as nothing reads it.

Element types. The backend declares every value with the exported program's dtype, but in an fp16
graph MPS computes in fp16 what it declares fp32 (docs/frontend_mps.md). nn keeps what MPS
computes: the element type of a float result follows its operands, promoted the way the runtime's
binary ops promote (f16 with f16 stays f16, f16 with f32 is f32); a float result computed from no
float operand (int / int true division, fills) takes its declared type. Integer and boolean
results always have their declared type. So an fp16 graph computes in f16 from the in-place input
cast to the in-place output cast, and an fp32 graph in f32.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from nn2tosa.frontend.mps.dialect import node_operands, node_results
from nn2tosa.frontend.mps.dtypes import ELEMENT_TYPES
from nn2tosa.ir import Builder, Graph, TensorType, Value, op_def
from nn2tosa.ir.constraints import Checks, Constraint
from nn2tosa.ir.registry import registering
from nn2tosa.ir.types import FLOAT_TYPES, bf16_bits, bit_width

from ..fold import constant_value


class NotLegalizable(Exception):
    """The node has no meaning in the nn dialect (or none this pass can express); `why` says why."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


Results = Sequence["Value | None"] | Value
Rule = Callable[["Node"], Results]
RULES: dict[str, Rule] = {}


def rule(*members: str, constraints: Iterable[Constraint] = (),
         checks: Iterable[Constraint] = ()) -> Callable[[Rule], Rule]:
    """Register a rule for MPSNodeUnion members (`"MPSConv2D"`, ...); `constraints` are evaluated before
    it runs, `checks` by its body (`n.check(c, ...)`; nn2tosa/ir/constraints.py)."""
    return registering(RULES, members, "legalization rules for", constraints, checks)


# ------------------------------------------------------------------------------ element types
def is_float(dtype: str) -> bool:
    return dtype in FLOAT_TYPES


def is_int(dtype: str) -> bool:
    return not is_float(dtype) and dtype != "i1"


def promote(dtypes: Sequence[str]) -> str:
    """PyTorch's promotion of tensor dtypes (what the runtime's binary ops do too): bool < integers
    < floats; f16 with bf16 is f32; signed with an unsigned of the same width or wider goes to the next
    wider signed type."""
    floats = {d for d in dtypes if is_float(d)}
    if floats:
        if len(floats) == 1:
            return floats.pop()
        widest = max(floats, key=bit_width)
        return "f32" if bit_width(widest) == 16 else widest
    ints = [d for d in dtypes if is_int(d)]
    if not ints:
        return "i1"
    signed = [d for d in ints if not d.startswith("ui")]
    unsigned = [d for d in ints if d.startswith("ui")]
    if not signed:
        return max(unsigned, key=bit_width)
    widest_signed = max(signed, key=bit_width)
    if unsigned and bit_width(max(unsigned, key=bit_width)) >= bit_width(widest_signed):
        return {8: "i16", 16: "i32", 32: "i64"}.get(bit_width(max(unsigned, key=bit_width)), "i64")
    return widest_signed


def element_type(mps_dtype: str) -> str:
    """The IR element type of an MPSDataType name ("mps_data_type_float16" -> "f16"); a rule reading
    one from its `dtype` field declares `dtype_has_element_type`, evaluated before it runs."""
    element = ELEMENT_TYPES.get(mps_dtype)
    if element is None:
        raise AssertionError(f"data type {mps_dtype} reached a rule that does not declare dtype_has_element_type")
    return element


def dtype_has_element_type(n: Node) -> str | None:
    """The `dtype` field names an MPS data type that has an nn element type (the data type table)."""
    if ELEMENT_TYPES.get(n.attrs["dtype"]) is None:
        return f"data type {n.attrs['dtype']} has no nn element type"
    return None


# Constants this pass computes itself (fills, ranges, index tables, default affine parameters) are
# bounded: a file that declares a huge full() or index must not make the converter allocate it.
MAX_COMPUTED_ELEMENTS = 1 << 24


# ------------------------------------------------------------------------------ layout
NCHW_TO_NHWC = [0, 2, 3, 1]
NHWC_TO_NCHW = [0, 3, 1, 2]


def normalize_axis(axis: int, rank: int) -> int:
    """PyTorch's dim: negative counts from the end."""
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < max(rank, 1):
        raise ValueError(f"dimension {axis} is out of range for rank {rank}")
    return a


# ------------------------------------------------------------------------------ the node
def computed_constant_small(n: Node, shape: Sequence[int], what: str) -> str | None:
    """A constant the conversion computes itself (a fill, a range, an index table) has at most 2^24
    elements."""
    count = math.prod(int(d) for d in shape)
    if count > MAX_COMPUTED_ELEMENTS:
        return f"its {what} has {count} elements, more than nn2tosa computes at compile time ({MAX_COMPUTED_ELEMENTS})"
    return None


def no_int4_data(n: Node) -> str | None:
    """The node computes on no int4 data: TOSA 1.0 has int4 only as convolution weights (int4
    constants, group-quantized weights unpacked by their dequantize node, are fine)."""
    # a graph input, or a result declared int4 (as a file whose dtype field says 5 has)
    reads = [v for v in n.graph.operands(n.node) if n.type_of(v).dtype == "i4" and n.constant_value(v) is None]
    makes = [v for v in n.result_values if v is not None and n.type_of(v).dtype == "i4"]
    if reads or makes:
        return "it computes on int4 data (TOSA 1.0 has int4 only as convolution weights)"
    return None


def used_result_has_counterpart(n: Node, index: int, declared: TensorType) -> str | None:
    """Every non-empty result the graph reads is one the rule computes (a node's auxiliary results,
    such as batch norm's saved statistics, convert only while nothing reads them)."""
    if declared.num_elements:
        return f"its result #{index} is used, and nn has no counterpart for it"
    return None


class Node(Checks):
    """One `mps.*` op being legalized: its fields by schema name, declared result types, and a builder
    that puts every op it creates at the node's location."""

    refusal = NotLegalizable
    # evaluated for every node by the pass or the helpers below, whatever its rule
    general = (no_int4_data, used_result_has_counterpart, computed_constant_small)

    def __init__(self, graph: Graph, node: int):
        self.graph = graph
        self.node = node
        self.member = "MPS" + graph.op(node).split(".", 1)[1]  # the MPSNodeUnion member, e.g. "MPSConv2D"
        self.attrs: dict[str, Any] = graph.attrs(node)
        self.fields = node_operands(graph, node)
        self.loc = graph.loc(node)
        self.builder = Builder(graph, loc=self.loc)
        # logical results (every result field, None where the file had -1) and their mps values
        self.result_values: list[Value | None] = []
        for v in node_results(graph, node).values():
            self.result_values.extend(v if isinstance(v, list) else [v])

    # ---- reading ------------------------------------------------------------------------
    @property
    def where(self) -> str:
        """How users see the node in messages: "node 3" (the frontend's location name)."""
        return self.loc.name if self.loc is not None else f"%{self.node}"

    def input(self, field: str) -> Value:
        """The operand of a value-id field the node needs."""
        v = self.fields.get(field)
        if not isinstance(v, Value):
            raise ValueError(f"{field} is absent (-1), but {self.member} needs it")
        return v

    def optional(self, field: str) -> Value | None:
        v = self.fields.get(field)
        return v if isinstance(v, Value) else None

    def inputs(self, field: str) -> list[Value | None]:
        """A list field (Cat's input_ids, IndexTensor's indices_id), None where the file had -1."""
        v = self.fields.get(field)
        if isinstance(v, Value):  # (a rule's mistake)
            raise TypeError(f"{field} is one value id, not a list of them")
        return list(v or [])

    def require(self, names: Sequence[str], low: int) -> list[int]:
        """Integer attributes that must be at least `low` (strides, kernels: 1; paddings: 0)."""
        values = [int(self.attrs[name]) for name in names]
        bad = [f"{name} = {v}" for name, v in zip(names, values) if v < low]
        if bad:
            raise ValueError(f"{', '.join(bad)} (must be at least {low})")
        return values

    def type_of(self, v: Value) -> TensorType:
        return self.graph.tensor_type(v)  # (mps and nn ops: tensors only)

    def declared(self, index: int = 0) -> TensorType:
        """The declared type of logical result `index`."""
        v = self.result_values[index]
        if v is None:
            raise ValueError(f"result #{index} is absent (-1)")
        return self.type_of(v)

    @property
    def out(self) -> TensorType:
        return self.declared(0)

    def used(self, index: int) -> bool:
        """Whether anything (an op or a graph output) reads logical result `index`."""
        v = self.result_values[index]
        return v is not None and self.graph.has_uses(v)

    def constant_value(self, v: Value) -> np.ndarray | None:
        """The value of an operand that a constant produces (nn.constant once legalized), else None."""
        return constant_value(self.graph, v)

    # ---- element types --------------------------------------------------------------------
    def compute_dtype(self, operands: Sequence[Value], declared: str | None = None) -> str:
        """The element type this node computes its (first) result in, from its operands (module docstring)."""
        declared = self.out.dtype if declared is None else declared
        if not is_float(declared):
            return declared
        floats = [self.type_of(v).dtype for v in operands if is_float(self.type_of(v).dtype)]
        return promote(floats) if floats else declared

    def common_dtype(self, operands: Sequence[Value]) -> str:
        """The promoted element type of operands compared or combined with each other."""
        return promote([self.type_of(v).dtype for v in operands])

    def cast(self, v: Value, dtype: str) -> Value:
        """v converted to `dtype` with PyTorch's conversion (float -> integer truncates toward zero)."""
        have = self.type_of(v).dtype
        if have == dtype:
            return v
        if is_float(have) and is_int(dtype):
            v = self.trunc(v)
        return self.op("nn.cast", [v], type=self.type_of(v).with_dtype(dtype))

    def trunc(self, x: Value) -> Value:
        """Round toward zero (nn has floor and ceil, not trunc): sign(x) * floor(|x|)."""
        if not is_float(self.type_of(x).dtype):
            return x
        return self.op("nn.mul", [self.op("nn.sign", [x]), self.op("nn.floor", [self.op("nn.abs", [x])])])

    # ---- building -------------------------------------------------------------------------
    def op(self, name: str, operands: Sequence[Value], attrs: dict[str, Any] | None = None,
           type: TensorType | None = None) -> Value:
        """An nn op at the node's location; its result type is `type` when given, else inferred. The op's
        own checks run here, so that a node breaking them is named (invalid input), not the emitter."""
        value = self.builder.op(name, list(operands), attrs, None if type is None else [type])
        d = op_def(name)
        if d is not None and d.verify is not None:
            problems = list(d.verify(self.graph, value.node))
            if problems:
                raise ValueError(f"{name}: {problems[0]}")
        return value

    def ops(self, name: str, operands: Sequence[Value], attrs: dict[str, Any] | None = None) -> list[Value]:
        return self.builder.op_results(name, list(operands), attrs)

    def elementwise(self, name: str, operands: Sequence[Value], dtype: str,
                    attrs: dict[str, Any] | None = None) -> Value:
        """An elementwise nn op on the operands converted to `dtype`."""
        return self.op(name, [self.cast(v, dtype) for v in operands], attrs)

    def constant(self, value: Any, dtype: str) -> Value:
        """An nn.constant of element type `dtype` holding `value` (numbers; bf16 is stored as its bits)."""
        array = np.asarray(value)
        storage = TensorType((), dtype).numpy_dtype
        if dtype == "i1":
            array = array != 0
        elif dtype == "bf16" and array.dtype != np.uint16:
            array = bf16_bits(array)
        elif storage.kind in "iu" and array.dtype != storage:
            wide = array.astype(np.float64)  # also Python ints beyond int64 (an object array)
            info = np.iinfo(storage)
            if wide.size and not (np.isfinite(wide).all() and info.min <= wide.min() and wide.max() <= info.max):
                raise ValueError(f"a value of {wide.min()}..{wide.max()} does not fit {dtype}")
        with np.errstate(over="ignore"):  # a float beyond f16's range is inf, as in PyTorch
            return self.builder.constant(np.array(array, dtype=storage, order="C"), dtype)

    def check_computed(self, shape: Sequence[int], what: str) -> None:
        """Refuse to compute a constant of more than MAX_COMPUTED_ELEMENTS elements."""
        self.check(computed_constant_small, shape, what)

    def scalar(self, value: float | np.ndarray, dtype: str) -> Value:
        """A rank-0 constant (nn broadcasts it against anything) of a number or rank-0 array."""
        return self.constant(np.asarray(value), dtype)

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        if tuple(shape) == tuple(self.type_of(x).shape):
            return x
        return self.op("nn.reshape", [x], {"shape": [int(d) for d in shape]})

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        if list(perm) == list(range(len(perm))):
            return x
        return self.op("nn.transpose", [x], {"perm": [int(p) for p in perm]})

    def to_nhwc(self, x: Value) -> Value:
        return self.transpose(x, NCHW_TO_NHWC)

    def to_nchw(self, x: Value) -> Value:
        return self.transpose(x, NHWC_TO_NCHW)
