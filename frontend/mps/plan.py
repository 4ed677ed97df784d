"""An ExecuTorch execution plan, read whole: its values (EValues), instructions, operators and delegates.

What a method does is its plan: `values` (every EValue the method uses: tensors, scalars, lists),
`inputs` / `outputs` (value indices), and one chain of instructions run in order:
- KernelCall(op_index, args): a CPU operator (`operators[op_index]`: name and overload) called with the
  values `args`. ExecuTorch emits the operator's schema arguments in order, out-arguments included, then
  the value it returns (a TensorList for several results);
- DelegateCall(delegate_index, args): a backend delegate called with its inputs then its outputs;
- MoveCall, JumpFalseCall, FreeCall: control flow and memory management (none in a straight-line plan).

Values: a Tensor is a constant when its `data_buffer_idx` is non-zero and it has no `allocation_info`
(its bytes are in the constant segment, or the deprecated inline `constant_buffer`); otherwise it is
mutable, memory-planned when it has `allocation_info`. IntList items are indices of Int values (boxed);
BoolList and DoubleList items are the values themselves; TensorList / OptionalTensorList items are
indices of Tensor values (-1 for None in an optional list).

Everything is range-checked; a bad index or an unknown kind is InvalidInputError naming the value or
instruction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn2tosa.diagnostics import InvalidInputError, Unsupported, UnsupportedError
from nn2tosa.ir import TensorType
from nn2tosa.schemas.flatread import Table

from .pte import delegate_data, read_program, segment_span

# ExecuTorch ScalarType name -> nn element type (None: no nn element type)
SCALAR_TYPES: dict[str, str | None] = {
    "BYTE": "ui8", "CHAR": "i8", "SHORT": "i16", "INT": "i32", "LONG": "i64", "HALF": "f16", "FLOAT": "f32",
    "DOUBLE": "f64", "BOOL": "i1", "BFLOAT16": "bf16", "UINT16": "ui16", "UINT32": "ui32", "UINT64": "ui64",
}


@dataclass(frozen=True)
class TensorValue:
    scalar_type: str  # ExecuTorch's name ("LONG")
    shape: tuple[int, ...]
    constant: np.ndarray | None  # the data of a constant tensor (a view into the file)
    planned: bool  # memory-planned (allocation_info present)
    name: str | None = None  # ExtraTensorInfo.fully_qualified_name, when the file has one

    @property
    def dtype(self) -> str | None:
        return SCALAR_TYPES.get(self.scalar_type)

    @property
    def type(self) -> TensorType:
        if self.dtype is None:
            raise AssertionError(f"{self.scalar_type} has no element type")
        return TensorType(self.shape, self.dtype)

    def describe(self) -> str:
        return f"{self.scalar_type.lower()}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class EValue:
    """One plan value: `kind` is the KernelTypes member ("Tensor", "Int", "IntList", ...; "None" for
    Null), `value` the Python value (TensorValue, int, float, bool, str, or a tuple for lists: the
    value indices of Int/Tensor lists, the items of Bool/Double lists)."""

    kind: str
    value: Any

    def describe(self) -> str:
        if self.kind == "Tensor":
            return self.value.describe()
        if self.kind == "None":
            return "None"
        if self.kind in ("IntList", "TensorList", "OptionalTensorList"):
            return f"{self.kind}{list(self.value)}"
        return repr(self.value)


@dataclass(frozen=True)
class Instruction:
    index: int  # position in the chain
    kind: str  # "kernel" or "delegate"
    target: int  # operator index or delegate index
    args: tuple[int, ...]


@dataclass(frozen=True)
class PlanDelegate:
    backend: str
    location: str  # "inline" or "segment"
    start: int
    size: int


@dataclass
class Plan:
    name: str
    values: list[EValue]
    inputs: list[int]
    outputs: list[int]
    instructions: list[Instruction]
    operators: list[str]  # "name.overload" (or "name")
    delegates: list[PlanDelegate]
    data: memoryview = field(repr=False)

    def tensor(self, index: int, where: str) -> TensorValue:
        v = self.value(index, where)
        if v.kind != "Tensor":
            raise InvalidInputError(f"value {index} is {v.kind}, where a Tensor is needed", where=where)
        return v.value

    def value(self, index: int, where: str) -> EValue:
        if not 0 <= index < len(self.values):
            raise InvalidInputError(f"value index {index} is out of range (the plan has {len(self.values)} values)",
                                    where=where)
        return self.values[index]

    def operator(self, ins: Instruction) -> str:
        return self.operators[ins.target]

    def where(self, ins: Instruction) -> str:
        what = self.operator(ins) if ins.kind == "kernel" else f"delegate {ins.target}"
        return f"plan {self.name!r} instruction {ins.index} ({what})"


def read_plan(data: memoryview) -> Plan | None:
    """The execution plan of a .pte's method, or None when no plan has instructions to follow (a file
    with delegates only: then its delegates convert one by one). Methods without instructions (an LLM
    export's constant methods) are not converted; several methods with instructions are unsupported."""
    program = read_program(data)
    plans = [p for p in program.get("execution_plan") or []
             if any(chain.get("instructions") for chain in p.get("chains") or [])]
    if not plans:
        return None
    if len(plans) > 1:  # (methods without instructions, such as an LLM's get_max_seq_len, return constants)
        names = ", ".join(repr(p.get("name") or "") for p in plans)
        raise UnsupportedError([Unsupported("ExecuTorch program", "the whole file",
                                            f"it has {len(plans)} methods with instructions ({names}); nn2tosa "
                                            "converts a program of one (--partition N converts one delegate)")])
    plan = plans[0]
    name = plan.get("name") or ""
    chains = plan.get("chains") or []
    if len(chains) > 1:
        raise UnsupportedError([Unsupported("ExecuTorch plan", f"plan {name!r}", f"{len(chains)} chains: nn2tosa "
                                            "follows plans of one chain (what ExecuTorch writes)")])
    constants = _Constants(program, data)
    values = [_evalue(v, i, constants, len(plan.get("values") or [])) for i, v in enumerate(plan.get("values") or [])]
    operators = []
    for op in plan.get("operators") or []:
        overload = op.get("overload")
        operators.append((op.get("name") or "?") + (f".{overload}" if overload else ""))
    delegates = []
    for k, d in enumerate(plan.get("delegates") or []):
        location, start, size = delegate_data(program, d, data, f"plan {name!r} delegate {k}")
        delegates.append(PlanDelegate(d.get("id") or "", location, start, size))
    instructions = [_instruction(ins, k, name, len(operators), len(delegates))
                    for k, ins in enumerate(chains[0].get("instructions") or [])]
    result = Plan(name, values, _indices(plan, "inputs"), _indices(plan, "outputs"), instructions, operators,
                  delegates, data)
    for i in result.inputs + result.outputs:
        result.value(i, f"plan {name!r} inputs/outputs")
    for ins in instructions:
        for a in ins.args:
            result.value(a, result.where(ins))
    return result


def _indices(table: Table, field_name: str) -> list[int]:
    raw = table.get(field_name)
    return [] if raw is None else [int(i) for i in raw]


def _instruction(ins: Table, k: int, plan: str, n_ops: int, n_delegates: int) -> Instruction:
    where = f"plan {plan!r} instruction {k}"
    kind = ins.union_type("instr_args")
    body = ins.get("instr_args")
    if kind is None or body is None:
        raise InvalidInputError("the instruction has no arguments", where=where)
    if kind == "KernelCall":
        target, count, what = body.get("op_index"), n_ops, "operator"
    elif kind == "DelegateCall":
        target, count, what = body.get("delegate_index"), n_delegates, "delegate"
    else:
        raise UnsupportedError([Unsupported(kind, where, "nn2tosa follows straight-line plans (kernel and "
                                                         "delegate calls only)")])
    if not 0 <= target < count:
        raise InvalidInputError(f"{what} index {target} is out of range (the plan has {count})", where=where)
    args = body.get("args")
    return Instruction(k, "kernel" if kind == "KernelCall" else "delegate", int(target),
                       tuple(int(a) for a in ([] if args is None else args)))


class _Constants:
    """Where constant tensor data lives: the constant segment (offsets per data_buffer_idx) or the
    deprecated inline constant_buffer."""

    def __init__(self, program: Table, data: memoryview):
        self.program, self.data = program, data
        self.inline = program.get("constant_buffer") or []
        segment = program.get("constant_segment")
        self.offsets = [] if segment is None or segment.get("offsets") is None else [int(o) for o in segment.get("offsets")]
        self.segment = None if segment is None or not self.offsets else segment.get("segment_index")

    def array(self, index: int, t: TensorType, where: str) -> np.ndarray:
        nbytes = math.prod(t.shape) * t.numpy_dtype.itemsize
        if len(self.inline):
            if index >= len(self.inline):
                raise InvalidInputError(f"constant buffer {index} does not exist ({len(self.inline)})", where=where)
            span = self.inline[index].vector_span("storage") or (0, 0)
            start, size = span
        else:
            if self.segment is None or index >= len(self.offsets):
                raise InvalidInputError(f"constant data {index} does not exist ({len(self.offsets)} offsets in the "
                                        "constant segment)", where=where)
            seg_start, seg_size = segment_span(self.program, self.data, self.segment, where)
            offset = self.offsets[index]
            if offset > seg_size:
                raise InvalidInputError(f"constant offset {offset} is past the constant segment ({seg_size} bytes)",
                                        where=where)
            start, size = seg_start + offset, seg_size - offset
        if nbytes > size:
            raise InvalidInputError(f"the constant needs {nbytes} bytes, {size} are there", where=where)
        storage = t.numpy_dtype
        return np.frombuffer(self.data, dtype=storage, count=math.prod(t.shape), offset=start).reshape(t.shape)


def _evalue(v: Table, index: int, constants: _Constants, count: int) -> EValue:
    where = f"value {index}"
    kind = v.union_type("val")
    body = v.get("val")
    if kind is None or kind == "Null" or body is None:
        return EValue("None", None)
    if kind == "Int":
        return EValue(kind, int(body.get("int_val")))
    if kind == "Bool":
        return EValue(kind, bool(body.get("bool_val")))
    if kind == "Double":
        return EValue(kind, float(body.get("double_val")))
    if kind == "String":
        return EValue(kind, body.get("string_val") or "")
    if kind in ("DoubleList", "BoolList"):
        items = body.get("items")
        return EValue(kind, tuple(() if items is None else (bool(x) if kind == "BoolList" else float(x)
                                                            for x in items)))
    if kind in ("IntList", "TensorList", "OptionalTensorList"):
        items = tuple(int(x) for x in (body.get("items") if body.get("items") is not None else []))
        low = -1 if kind == "OptionalTensorList" else 0
        bad = [i for i in items if not low <= i < count]
        if bad:
            raise InvalidInputError(f"{kind} item {bad[0]} is not a value index (the plan has {count} values)",
                                    where=where)
        return EValue(kind, items)
    # a Tensor
    scalar_type = body.enum_name("scalar_type")
    sizes = body.get("sizes")
    shape = tuple(int(d) for d in (sizes if sizes is not None else []))
    if any(d < 0 for d in shape):
        raise InvalidInputError(f"sizes {list(shape)} has a negative size", where=where)
    planned = body.get("allocation_info") is not None
    idx = body.get("data_buffer_idx")
    extra = body.get("extra_tensor_info")
    name = extra.get("fully_qualified_name") if extra is not None else None
    constant = None
    dtype = SCALAR_TYPES.get(scalar_type)
    if idx and not planned:
        if dtype is None:
            raise InvalidInputError(f"a constant of scalar type {scalar_type}, which nn2tosa has no element type for",
                                    where=where)
        constant = constants.array(idx, TensorType(shape, dtype), where)
    return EValue("Tensor", TensorValue(scalar_type, shape, constant, planned, name))
