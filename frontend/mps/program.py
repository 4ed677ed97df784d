"""A whole ExecuTorch program (.pte) -> one Graph: the plan's instructions in order over its values.

- Plan inputs are the graph inputs `input{k}`, plan outputs the graph outputs `output{k}`.
- A DelegateCall inlines its MPS payload's graph (read as frontend/mps/reader.py reads any payload):
  its inputs are wired to the call's input values, its outputs define the call's output values. Its
  ops keep their node locations, prefixed by the delegate: `delegate 1 node 3` (MPSAdd).
- A KernelCall is one `executorch.kernel` op (dialect.py of this package): attributes `operator`
  ("aten::topk.values") and `arguments`, a JSON list with one entry per call argument, and as operands
  the tensors it reads, as results the tensors it writes (passes/legalize_executorch gives it meaning).
  A tensor argument it writes is one no instruction defined before it (an out-argument), or the first
  argument of an in-place operator (`aten::copy_`).
- Constant tensors of the plan are `mps.constant` ops (views into the file).
- State: a tensor that an in-place `aten::copy_` writes and that is neither a plan input nor a constant
  is a mutable buffer (ExecuTorch writes every BUFFER_MUTATION back that way, at the end of the plan).
  It is a graph input named `buffer{v}` (v: its value index) and its value after the plan the graph
  output `buffer{v}_next`; `Graph.meta["state"]` lists them (name, next, type, initial value "zeros": the
  file holds no initial values, and ExecuTorch zero-fills planned memory). api.convert then makes
  them TOSA variables, or leaves them as inputs and outputs (`state="io"`).
- Reading a value that nothing defined (neither input, constant, buffer nor an earlier instruction)
  is invalid input (exit 2) naming the instruction.
"""
from __future__ import annotations

import json
from typing import Any

from nn2tosa.diagnostics import InvalidInputError, Unsupported, UnsupportedError
from nn2tosa.ir import Graph, Loc, TensorType, Value, attr, define

from .plan import EValue, Instruction, Plan, TensorValue
from .pte import MPS_BACKEND_ID

KERNEL_OP = "executorch.kernel"
STATE_KEY = "state"  # Graph.meta: the mutable buffers (list of dicts: name, shape, dtype, initial)
PLAN_KEY = "plan_steps"  # Graph.meta: the plan in order, for inspect and the report


define(
    KERNEL_OP,
    operands=(0, None),
    results=(0, None),
    attrs={"operator": attr("str", "the ExecuTorch operator and overload, e.g. aten::topk.values"),
           "arguments": attr("str", "JSON: one entry per call argument: {kind, value} for scalars and lists, "
                                    "{kind: Tensor, in: operand k} / {out: result k} for tensors")},
    doc="One CPU operator call of an ExecuTorch plan (KernelCall), legalized by passes/legalize_executorch.",
)


def is_trivial(plan: Plan) -> bool:
    """One delegate call and nothing else, reading the plan inputs and writing its outputs: the
    delegate's graph is the program (converted exactly as the delegate alone)."""
    if len(plan.instructions) != 1 or plan.instructions[0].kind != "delegate":
        return False
    return list(plan.instructions[0].args) == plan.inputs + plan.outputs


def mutable_buffers(plan: Plan) -> list[int]:
    """Value indices of the mutable buffers: tensors an in-place copy_ writes that are neither plan
    inputs nor constants (in value order)."""
    found = set()
    for ins in plan.instructions:
        if ins.kind == "kernel" and plan.operator(ins).split(".")[0] == "aten::copy_" and ins.args:
            v = plan.value(ins.args[0], plan.where(ins))
            if v.kind == "Tensor" and v.value.constant is None and ins.args[0] not in plan.inputs:
                found.add(ins.args[0])
    return sorted(found)


def buffer_name(index: int) -> str:
    return f"buffer{index}"


class _Builder:
    def __init__(self, plan: Plan, read_payload: Any, name: str):
        self.plan = plan
        self.read_payload = read_payload  # (memoryview, name) -> Graph of mps ops
        self.g = Graph(name)
        self.defs: dict[int, Value] = {}  # plan value index -> its current IR value
        self.unsupported: list[Unsupported] = []
        self.steps: list[dict[str, Any]] = []
        self.payloads: dict[tuple[int, int], Graph] = {}

    # ---- values
    def tensor_type(self, index: int, where: str) -> TensorType:
        t = self.plan.tensor(index, where)
        if t.dtype is None:
            raise UnsupportedError([Unsupported(t.scalar_type, f"value {index}", "nn2tosa has no element type for it")])
        return t.type

    def read(self, index: int, where: str) -> Value:
        if index in self.defs:
            return self.defs[index]
        t = self.plan.tensor(index, where)
        if t.constant is not None:
            value = self.g.add_op("mps.constant", (), [self.tensor_type(index, where)], {"value": t.constant},
                                  Loc(f"value {index}", "constant"))
            self.defs[index] = Value(value, 0)
            return self.defs[index]
        raise InvalidInputError(f"reads value {index}, which no plan input, constant or earlier instruction defines",
                                where=where)

    def defined(self, index: int) -> bool:
        return index in self.defs or (self.plan.values[index].kind == "Tensor"
                                      and self.plan.values[index].value.constant is not None)

    # ---- the plan
    def build(self) -> Graph:
        plan, g = self.plan, self.g
        for k, i in enumerate(plan.inputs):
            where = f"plan {plan.name!r} input {k}"
            self.defs[i] = g.add_input(self.tensor_type(i, where), f"input{k}", Loc(f"value {i}", "input"))
        state: list[dict[str, Any]] = []
        for i in mutable_buffers(plan):
            t = self.tensor_type(i, f"value {i}")
            self.defs[i] = g.add_input(t, buffer_name(i), Loc(f"value {i}", "buffer"))
            state.append({"name": buffer_name(i), "next": buffer_name(i) + "_next", "value": i,
                          "shape": list(t.shape), "dtype": t.dtype, "initial": "zeros"})
        for ins in plan.instructions:
            if ins.kind == "delegate":
                self.delegate(ins)
            else:
                self.kernel(ins)
        if self.unsupported:
            raise UnsupportedError(self.unsupported)
        for k, i in enumerate(plan.outputs):
            g.add_output(self.read(i, f"plan {plan.name!r} output {k}"), f"output{k}")
        for s in state:
            g.add_output(self.defs[s["value"]], s["next"])
        g.meta.update(container="program", plan=plan.name, delegates=len(plan.delegates))
        g.meta[PLAN_KEY] = self.steps
        if state:
            g.meta[STATE_KEY] = state
        return g

    def delegate(self, ins: Instruction) -> None:
        plan, g = self.plan, self.g
        where = plan.where(ins)
        d = plan.delegates[ins.target]
        if d.backend != MPS_BACKEND_ID:
            self.unsupported.append(Unsupported(f"{d.backend} delegate", where, f"nn2tosa reads {MPS_BACKEND_ID} "
                                                "delegates only"))
            return
        sub = self.payloads.get((d.start, d.size))  # a payload called several times is read once
        if sub is None:
            try:
                sub = self.read_payload(plan.data[d.start: d.start + d.size], f"delegate{ins.target}")
            except InvalidInputError as e:
                raise InvalidInputError(e.message, where=f"{where}: {e.where}" if e.where else where) from None
            self.payloads[(d.start, d.size)] = sub
        n_in, n_out = len(sub.inputs), len(sub.outputs)
        if len(ins.args) != n_in + n_out:
            raise InvalidInputError(f"{len(ins.args)} arguments, but the payload has {n_in} inputs and {n_out} "
                                    "outputs", where=where)
        mapping: dict[Value, Value] = {}
        for k, (node, arg) in enumerate(zip(sub.inputs, ins.args[:n_in])):
            value = self.read(arg, where)
            want, have = sub.tensor_type(Value(node, 0)), g.tensor_type(value)
            if tuple(want.shape) != tuple(have.shape):
                raise InvalidInputError(f"argument {k} (value {arg}) is {have}, the payload's input {k} is {want}",
                                        where=where)
            if want.dtype != have.dtype:
                value = Value(g.add_op("nn.cast", [value], [have.with_dtype(want.dtype)], {},
                                       Loc(f"delegate {ins.target} input {k}", "cast")), 0)
            mapping[Value(node, 0)] = value
        prefix = f"delegate {ins.target} "
        for node in sub.topological():
            if node in sub.inputs:
                continue
            loc = sub.loc(node)
            new = g.add_op(sub.op(node), [mapping[v] for v in sub.operands(node)], sub.types(node), sub.attrs(node),
                           None if loc is None else Loc(prefix + loc.name, loc.detail))
            for r in range(len(sub.types(node))):
                mapping[Value(node, r)] = Value(new, r)
        for out, arg in zip(sub.outputs, ins.args[n_in:]):
            want = self.tensor_type(arg, where)
            value = mapping[out.value]
            have = g.tensor_type(value)
            if tuple(have.shape) != tuple(want.shape):
                raise InvalidInputError(f"the payload's output {out.name} is {have}, the value it writes ({arg}) "
                                        f"is {want}", where=where)
            if have.dtype != want.dtype:  # the plan's type is what the next instruction reads
                value = Value(g.add_op("nn.cast", [value], [want], {}, Loc(f"delegate {ins.target} {out.name}",
                                                                          "cast")), 0)
            self.defs[arg] = value
        self.steps.append({"kind": "delegate", "instruction": ins.index, "delegate": ins.target,
                           "nodes": sum(1 for n in sub.nodes() if not sub.op(n).endswith("constant")
                                        and n not in sub.inputs),
                           "inputs": list(ins.args[:n_in]), "outputs": list(ins.args[n_in:])})

    def kernel(self, ins: Instruction) -> None:
        plan, g = self.plan, self.g
        where = plan.where(ins)
        operator = plan.operator(ins)
        in_place = operator.split(".")[0].endswith("_")
        if not ins.args:
            raise InvalidInputError("a kernel call without arguments (ExecuTorch passes at least the value it "
                                    "returns)", where=where)
        *call_args, ret = ins.args
        operands: list[Value] = []
        results: list[int] = []  # value indices the call writes
        arguments: list[dict[str, Any]] = []

        def tensor_ref(index: int, position: int) -> dict[str, Any]:
            if position == 0 and in_place:  # read, and written
                operands.append(self.read(index, where))
                results.append(index)
                return {"in": len(operands) - 1, "out": len(results) - 1}
            if not self.defined(index):
                if index not in results:
                    results.append(index)
                return {"out": results.index(index)}
            operands.append(self.read(index, where))
            return {"in": len(operands) - 1}

        for position, a in enumerate(call_args):
            v = plan.value(a, where)
            arguments.append(self.argument(v, a, position, tensor_ref, where))
        ret_value = plan.value(ret, where)
        ret_items = [ret] if ret_value.kind == "Tensor" else list(ret_value.value or ()) \
            if ret_value.kind == "TensorList" else []
        if ret_value.kind not in ("Tensor", "TensorList", "None") or any(i not in results for i in ret_items):
            raise InvalidInputError(f"returns value {ret} ({ret_value.kind}), which is not what the call writes "
                                    f"(values {results})", where=where)
        types = [self.tensor_type(i, where) for i in results]
        node = g.add_op(KERNEL_OP, operands, types,
                        {"operator": operator, "arguments": json.dumps(arguments)},
                        Loc(f"instruction {ins.index}", operator))
        for r, i in enumerate(results):
            self.defs[i] = Value(node, r)
        self.steps.append({"kind": "kernel", "instruction": ins.index, "operator": operator,
                           "arguments": [self.plan.values[a].describe() if self.plan.values[a].kind != "Tensor"
                                         else f"%{a}:{self.plan.values[a].describe()}" for a in call_args],
                           "outputs": results})

    def argument(self, v: EValue, index: int, position: int, tensor_ref: Any, where: str) -> dict[str, Any]:
        if v.kind == "Tensor":
            ref = tensor_ref(index, position)
            return {"kind": "Tensor", **ref}
        if v.kind in ("TensorList", "OptionalTensorList"):
            items = [None if i < 0 or self.plan.values[i].kind == "None" else tensor_ref(i, -1) for i in v.value]
            return {"kind": v.kind, "items": items}
        if v.kind == "IntList":
            items = []
            for i in v.value:
                item = self.plan.value(i, where)
                if item.kind != "Int":
                    raise InvalidInputError(f"IntList item {i} is {item.kind}, not Int", where=where)
                items.append(item.value)
            return {"kind": "IntList", "value": items}
        value = v.value
        if isinstance(value, tuple):
            value = list(value)
        return {"kind": v.kind, "value": value}


def build_program(plan: Plan, read_payload: Any, name: str = "main") -> Graph:
    """The whole plan as one Graph (see the module docstring)."""
    return _Builder(plan, read_payload, name).build()
