"""What a lowering rule receives: the nn op being lowered and a builder of TOSA ops.

A rule is `rule(ctx) -> Value | list[Value]`: it reads `ctx.attrs`, its operands (already lowered
values) by the names the op's definition gives them (`ctx.operand("weight")`,
`ctx.optional_operand("bias")`, `ctx.nn_type("weight")` for the nn-level type with quantization; all
of them in order as `ctx.operands`), `ctx.in_types` / `ctx.out_types` (TOSA-level types) and
`ctx.nn_in_types` / `ctx.nn_out_types` (the nn-level types), creates TOSA ops through the typed
builder `ctx.tosa` (one method per TOSA op: `ctx.tosa.add(x, y)`, nn2tosa/dialects/tosa_builder.py)
and the helpers below, and returns the values that replace the op's results. What a rule cannot express it states
as named constraints (nn2tosa/ir/constraints.py), declared where it registers: the driver evaluates
its `constraints=` before it runs (`ctx.apply(rule)`), its body evaluates its `checks=` with
`ctx.check(constraint, *values)`; an unmet one raises LoweringUnsupported with the reason.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any, overload

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import Builder, Graph, ShapeType, TensorType, Type, Value, as_tensor, op_def
from nn2tosa.ir.constraints import Checks
from nn2tosa.ir.registry import OperandSpec
from nn2tosa.ir.types import bf16_bits

# nn-level element types TOSA 1.0 tensors cannot have, and what carries them instead
# nn element type -> the TOSA element type that carries it (unsigned data keeps its bits)
TOSA_ELEMENT_OF = {"f64": "f32", "i64": "i32", "ui8": "i8", "ui16": "i16", "ui32": "i32", "ui64": "i32", "index": "i32"}


@overload
def tosa_type(t: TensorType) -> TensorType: ...
@overload
def tosa_type(t: Type) -> Type: ...
def tosa_type(t: Type) -> Type:
    """The TOSA-level type of an nn-level type: quantization dropped (zero points and scales are
    explicit at TOSA level), unsigned and 64-bit types narrowed to what TOSA has."""
    if not isinstance(t, TensorType):
        return t
    return TensorType(t.shape, TOSA_ELEMENT_OF.get(t.dtype, t.dtype))


def constant_value(ctx: LoweringContext, v: Value) -> np.ndarray | None:
    """The stored array of `v` when a tosa.const makes it (None when it is computed at run time)."""
    return ctx.graph.attrs(v.node)["values"] if ctx.graph.op(v.node) == "tosa.const" else None


class LoweringUnsupported(Exception):
    """A rule cannot lower this op (the message says why)."""


def float_rule_unquantized(ctx: LoweringContext, what: str = "operands",
                           types: Sequence[Type] | None = None) -> str | None:
    """A float rule's operands and results are not quantized: quantized ones are lowered by the
    quantized rules, or carried by the float rule of an op that only moves stored values."""
    types = list(ctx.nn_in_types) + list(ctx.nn_out_types) if types is None else types
    if any(isinstance(t, TensorType) and t.quant is not None for t in types):
        return f"quantized {what} {'are' if what.endswith('s') else 'is'} not lowered by the float rules"
    return None


class LoweringContext(Checks):
    refusal = LoweringUnsupported
    # `general`: the checks of helpers many rules share, set by the rules package (lowering/rules/__init__.py)

    def __init__(self, graph: Graph, node: int, nn_in_types: Sequence[Type]):
        self.graph = graph
        self.node = node
        self.op_name = graph.op(node)
        self.attrs: dict[str, Any] = graph.attrs(node)
        self.loc = graph.loc(node)
        self.operands: list[Value] = graph.operands(node)
        # the op's operand and result types, all tensors (nn ops take no shapes), typed so at this one place
        self.nn_in_types: list[TensorType] = [as_tensor(t, "an nn operand") for t in nn_in_types]
        self.nn_out_types: list[TensorType] = [as_tensor(t, "an nn result") for t in graph.types(node)]
        self.out_types: list[TensorType] = [tosa_type(t) for t in self.nn_out_types]
        self.b = Builder(graph, self.loc, constant_dialect="tosa")
        self.semantics_consulted = False  # the op's integers depend on --semantics (the report lists it)
        self.npu_choices: list[str] = []  # forms chosen for an --target preset (lowering/npu_target.py)

    # ---- basics
    @cached_property
    def tosa(self) -> TosaBuilder:
        """The typed builder of TOSA ops; an elementwise op's operands are brought to one rank first."""
        return TosaBuilder(self.b, self.same_rank)

    # ---- operands by the names the op's definition gives them
    def operand(self, name: str) -> Value:
        """The operand named `name` (one that is always there: an optional one is `optional_operand`)."""
        spec, index = self._operand_spec(name)
        if spec.optional or spec.count != 1 or spec.variadic:
            raise ValueError(f"{self.op_name}: operand {name!r} is optional or a run: use optional_operand or "
                             "operand_run")
        return self.operands[index]

    def optional_operand(self, name: str) -> Value | None:
        """The optional operand named `name`, or None when the op does not have it."""
        spec, index = self._operand_spec(name)
        if not spec.optional:
            raise ValueError(f"{self.op_name}: operand {name!r} is not optional: use operand")
        return self.operands[index] if index < len(self.operands) else None

    def operand_run(self, name: str) -> list[Value]:
        """The operands of a named run ("params*", "inputs+", "params[12]" in the definition)."""
        return self.operands[self._run(name)]

    def nn_run_types(self, name: str) -> list[TensorType]:
        """The nn-level types of the operands of a named run."""
        return self.nn_in_types[self._run(name)]

    def _run(self, name: str) -> slice:
        spec, index = self._operand_spec(name)
        return slice(index, None) if spec.variadic else slice(index, index + spec.count)

    def nn_type(self, name: str) -> TensorType:
        """The nn-level type (quantization kept) of the operand named `name`, which must be present."""
        spec, index = self._operand_spec(name)
        if index >= len(self.operands) or spec.count != 1 or spec.variadic:
            raise ValueError(f"{self.op_name}: operand {name!r} is absent or a run")
        return self.nn_in_types[index]

    def _operand_spec(self, name: str) -> tuple[OperandSpec, int]:
        d = op_def(self.op_name)
        index = 0
        for spec in d.operand_names if d is not None else ():
            if spec.name == name:
                return spec, index
            index += spec.count
        known = [spec.name for spec in d.operand_names] if d is not None else []
        raise ValueError(f"{self.op_name} has no operand named {name!r} "
                         f"(its operands: {', '.join(known) or 'unnamed'})")

    @cached_property
    def in_types(self) -> list[TensorType]:
        """The operands' (TOSA-level) types. Read when a rule first asks: a context built beside a TOSA op
        rather than for an nn op (the graph boundary, lowering/quant.py) may have a shape among them."""
        return [self.graph.tensor_type(v) for v in self.operands]

    @property
    def semantics(self) -> str:
        """"litert" or "cpuref": whose integers a quantized op computes (lowering/semantics.py)."""
        from nn2tosa.passes.context import pass_context

        self.semantics_consulted = True
        return pass_context().semantics

    def type_of(self, v: Value) -> TensorType:
        return self.graph.tensor_type(v)

    def const(self, value: Any, dtype: str) -> Value:
        """A tosa.const of element type `dtype` (numpy value converted to its storage dtype;
        floating-point values given for a bf16 constant are rounded to bf16 bits)."""
        value = np.asarray(value)
        if dtype == "bf16" and value.dtype.kind == "f":
            value = bf16_bits(value)
        return self.b.constant(value, dtype)

    def scalar(self, value: float | int, dtype: str, rank: int) -> Value:
        """A constant broadcastable against rank-`rank` tensors (shape [1] * rank)."""
        return self.const(np.full((1,) * rank, value), dtype)

    def zero_point(self, dtype: str, value: int | float = 0) -> Value:
        """The [1]-shaped zero-point operand TOSA 1.0 ops take."""
        return self.const(np.array([value]), dtype)

    def shape(self, values: Sequence[int]) -> Value:
        array = np.asarray(values, dtype=np.int64).reshape(-1)
        return self.tosa.const_shape(values=array, types=[ShapeType(len(array))])

    # ---- common shapes of ops
    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        """x reshaped; a reshape of a reshape reads the first one's operand, so a pair that cancels
        (a view a rule took and another rule undid) leaves no op (the inner one dies in DCE)."""
        while self.graph.op(x.node) == "tosa.reshape":
            x = self.graph.operand(x.node, 0)
        t = self.type_of(x)
        if tuple(shape) == tuple(t.shape):
            return x
        return self.tosa.reshape(x, self.shape(shape), types=[t.with_shape(tuple(shape))])

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        if list(perm) == list(range(len(perm))):
            return x
        return self.tosa.transpose(x, perms=[int(p) for p in perm])

    def cast(self, x: Value, dtype: str) -> Value:
        t = self.type_of(x)
        if t.dtype == dtype:
            return x
        return self.tosa.cast(x, types=[t.with_dtype(dtype)])

    def to_rank(self, x: Value, rank: int) -> Value:
        """Reshape to `rank` by adding leading unit dimensions (TOSA broadcasting needs equal ranks)."""
        t = self.type_of(x)
        if t.rank >= rank:
            return x
        return self.reshape(x, (1,) * (rank - t.rank) + tuple(t.shape))

    def same_rank(self, *xs: Value) -> list[Value]:
        rank = max(self.type_of(x).rank for x in xs)
        return [self.to_rank(x, rank) for x in xs]

    def mul(self, x: Value, y: Value) -> Value:
        """x * y (floating point, or integer with shift 0)."""
        x, y = self.same_rank(x, y)
        return self.tosa.mul(x, y, self.const(np.zeros(1, np.int8), "i8"))

    def negate(self, x: Value) -> Value:
        dtype = self.type_of(x).dtype
        zp = self.zero_point(dtype)
        return self.tosa.negate(x, zp, self.zero_point(dtype))
