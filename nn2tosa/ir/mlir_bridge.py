"""Graph <-> mlir.ir.Module, through the real MLIR Python bindings.

The IR's text form is MLIR's own generic printing of the module this builds, and parsing is
MLIR's parser followed by `from_module`; the TOSA MLIR emitter is `to_module` on a graph of
tosa.* ops. One conversion in each direction serves all three, so they cannot disagree.

A graph becomes a `func.func` whose arguments are the graph inputs and whose `func.return`
operands are the outputs; input and output names are the argument/result attribute
`nn2tosa.name`. Attribute values convert by the op's registered AttrSpec kind when it has
one, otherwise by the Python value's type (see registry.py for the table).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from mlir import ir

from nn2tosa.limits import reserve

from .graph import INPUT_OP, Graph, Loc, Value
from .registry import AttrSpec, op_def
from .types import ShapeType, TensorType, Type, numpy_dtype, parse_type

NAME_ATTR = "nn2tosa.name"
GRAPH_ATTRS = "nn2tosa.graph"
# Constants with more elements than this become dense_resource blobs (no text formatting of
# weights, and zero-copy from the numpy buffer); smaller ones stay readable dense<...>.
RESOURCE_THRESHOLD = 64


class RawAttr(str):
    """An MLIR attribute nn2tosa has no Python form for, kept as its MLIR text."""


def new_context() -> ir.Context:
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True
    return ctx


# ---------------------------------------------------------------- Python -> MLIR
_INT_WIDTH = {"int": 64, "i64": 64, "i32": 32, "i16": 16, "i8": 8, "i1": 1}
_ARRAY_CLASS = {
    "ints": "DenseI64ArrayAttr", "i64s": "DenseI64ArrayAttr", "i32s": "DenseI32ArrayAttr",
    "i16s": "DenseI16ArrayAttr", "i8s": "DenseI8ArrayAttr", "floats": "DenseF64ArrayAttr",
    "f64s": "DenseF64ArrayAttr", "f32s": "DenseF32ArrayAttr", "bools": "DenseBoolArrayAttr",
}


def _nested(items: list[str], shape: tuple[int, ...]) -> str:
    """MLIR's nested-list literal of row-major `items` with `shape` (a rank-0 value is bare)."""
    if not shape:
        return items[0]
    if len(shape) == 1:
        return "[" + ", ".join(items) + "]"
    step = len(items) // shape[0] if shape[0] else 0
    return "[" + ", ".join(_nested(items[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


class _Builder:
    """Converts one graph's values into MLIR objects of one context, caching types."""

    def __init__(self, resource_threshold: int, blobs: bool = True):
        self.resource_threshold = resource_threshold
        self.blobs = blobs  # False: large constants are dense_resource handles without data
        self.types: dict[str, ir.Type] = {}
        self.resource_count = 0

    def type(self, t: Type | str) -> ir.Type:
        key = str(t)
        cached = self.types.get(key)
        if cached is None:
            cached = self.types[key] = ir.Type.parse(key)
        return cached

    def element(self, element_type: str) -> ir.Type:
        return self.type(element_type)

    def tensor(self, array: np.ndarray, element_type: str) -> ir.Attribute:
        array = np.asarray(array)
        shape = list(array.shape)
        mlir_type = ir.RankedTensorType.get(shape, self.element(element_type))
        if element_type == "i1" or array.size <= self.resource_threshold:
            if element_type == "i1":
                array = array.astype(np.bool_)
                if array.size:  # MLIR's i1 storage is bits, little-endian: the text form took 100 bytes each
                    bits = np.packbits(array.reshape(-1), bitorder="little")
                    return ir.DenseElementsAttr.get(bits, type=mlir_type.element_type, shape=shape)
            if element_type in ("bf16", "index", "i48", "i4") or array.dtype == np.bool_:
                return self._dense_from_text(array, element_type, mlir_type)
            return ir.DenseElementsAttr.get(np.ascontiguousarray(array), type=mlir_type.element_type, shape=shape)
        name = f"cst{self.resource_count}"
        self.resource_count += 1
        if element_type == "i48":
            raise ValueError(f"large {element_type} constants are not supported in MLIR")
        if not self.blobs:  # a handle the context knows no data of: text with elided constants prints it alike
            return ir.Attribute.parse(f"dense_resource<{name}> : {mlir_type}")
        data = np.ascontiguousarray(array)
        # i4 blobs hold one element per byte (the int8 array's bytes), as MLIR stores sub-byte
        # elements of dense attributes; the parser reads them back the same way.
        return ir.DenseResourceElementsAttr.get_from_buffer(
            data.reshape(-1).view(np.uint8).data, name, mlir_type, alignment=max(data.dtype.itemsize, 1)
        )

    def _dense_from_text(self, array: np.ndarray, element_type: str, mlir_type: ir.Type) -> ir.Attribute:
        flat = array.reshape(-1).tolist()
        if element_type == "i1":
            items = ", ".join("true" if v else "false" for v in flat)
        elif element_type == "bf16":  # MLIR reads a hex literal as the bit pattern (NaN, inf included)
            items = ", ".join(f"0x{v:04X}" for v in flat)
        else:
            items = ", ".join(str(int(v)) for v in flat)
        return ir.Attribute.parse(f"dense<{_nested(items.split(', ') if flat else [], array.shape)}> : {mlir_type}")

    def attr(self, value: Any, spec: AttrSpec | None, graph: Graph, node: int) -> ir.Attribute:
        kind = spec.kind if spec else "any"
        base, _, arg = kind.partition(":")
        if isinstance(value, RawAttr):
            return ir.Attribute.parse(str(value))
        if base == "any":
            return self.infer(value, graph, node)
        if base in _INT_WIDTH:
            return ir.IntegerAttr.get(ir.IntegerType.get_signless(_INT_WIDTH[base]), int(value))
        if base in ("float", "f64"):
            return ir.FloatAttr.get(ir.F64Type.get(), float(value))
        if base == "f32":
            return ir.FloatAttr.get(ir.F32Type.get(), float(value))
        if base == "bool":
            return ir.BoolAttr.get(bool(value))
        if base == "str":
            return ir.StringAttr.get(value)
        if base in _ARRAY_CLASS:
            cls = getattr(ir, _ARRAY_CLASS[base])
            cast = bool if base == "bools" else (float if "f" in base else int)
            return cls.get([cast(v) for v in value])
        if base == "strs":
            return ir.ArrayAttr.get([ir.StringAttr.get(v) for v in value])
        if base == "tensor":
            return self.tensor(value, _tensor_element_type(value, graph, node))
        if base == "type":
            return ir.TypeAttr.get(self.type(value))
        if base == "elemtype":
            return ir.TypeAttr.get(self.element(value))
        if base == "enum":
            return ir.Attribute.parse(f"#{arg}<{value}>")
        if base == "scalar_like":
            element = graph.tensor_type(graph.operand(node, int(arg))).dtype
            if element in ("f32", "f16", "bf16", "f64"):
                return ir.FloatAttr.get(self.element(element), float(value))
            return ir.IntegerAttr.get(self.element(element.replace("ui", "i")), int(value))
        if base == "dict":
            return ir.DictAttr.get({k: self.infer(v, graph, node) for k, v in value.items() if v is not None})
        raise ValueError(f"cannot convert attribute kind {kind}")

    def infer(self, value: Any, graph: Graph, node: int) -> ir.Attribute:
        if isinstance(value, RawAttr):
            return ir.Attribute.parse(str(value))
        if isinstance(value, (bool, np.bool_)):
            return ir.BoolAttr.get(bool(value))
        if isinstance(value, (int, np.integer)):
            return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))
        if isinstance(value, (float, np.floating)):
            return ir.FloatAttr.get(ir.F64Type.get(), float(value))
        if isinstance(value, str):
            return ir.StringAttr.get(value)
        if isinstance(value, np.ndarray):
            return self.tensor(value, _tensor_element_type(value, graph, node))
        if isinstance(value, (TensorType, ShapeType)):
            return ir.TypeAttr.get(self.type(value))
        if isinstance(value, dict):
            return ir.DictAttr.get({k: self.infer(v, graph, node) for k, v in value.items() if v is not None})
        if isinstance(value, (list, tuple)):
            if all(isinstance(v, (bool, np.bool_)) for v in value) and value:
                return ir.DenseBoolArrayAttr.get([bool(v) for v in value])
            if all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in value):
                return ir.DenseI64ArrayAttr.get([int(v) for v in value])
            if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in value):
                return ir.DenseF64ArrayAttr.get([float(v) for v in value])
            return ir.ArrayAttr.get([self.infer(v, graph, node) for v in value])
        raise ValueError(f"cannot convert attribute value of type {type(value).__name__}")

    def loc(self, loc: Loc | None) -> ir.Location:
        if loc is None:
            return ir.Location.unknown()
        if loc.detail is None:
            return ir.Location.name(loc.name)
        return ir.Location.name(loc.name, childLoc=ir.Location.name(loc.detail))


def _tensor_element_type(array: np.ndarray, graph: Graph, node: int) -> str:
    """The element type a constant attribute has: that of the op's single result when the
    storage dtypes agree (so bf16 bits, quantized storage and i48 keep their type), else the
    numpy dtype's."""
    types = graph.types(node)
    if len(types) == 1:
        t = types[0]
        if isinstance(t, ShapeType):
            return "index"
        if numpy_dtype(t.dtype) == array.dtype:
            return t.dtype
    from .types import element_type_of

    return element_type_of(array.dtype)


def to_module(
    graphs: Graph | Sequence[Graph],
    context: ir.Context | None = None,
    *,
    resource_threshold: int = RESOURCE_THRESHOLD,
    blobs: bool = True,
) -> ir.Module:
    """Build an MLIR module holding one func.func per graph (not verified here). Without `blobs`,
    constants of more than `resource_threshold` elements name dense_resource blobs that hold no data
    (a module only to print with its constants elided)."""
    from mlir.dialects import func

    graphs = [graphs] if isinstance(graphs, Graph) else list(graphs)
    ctx = context or new_context()
    b = _Builder(resource_threshold, blobs)
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            for g in graphs:
                _build_func(g, b, func)
    return module


def _build_func(g: Graph, b: _Builder, func: Any) -> None:
    arg_types = [b.type(g.type_of(v)) for v in g.input_values()]
    result_types = [b.type(g.type_of(o.value)) for o in g.outputs]
    fn = func.FuncOp(g.name, ir.FunctionType.get(arg_types, result_types))
    fn.arg_attrs = ir.ArrayAttr.get(
        [ir.DictAttr.get({NAME_ATTR: ir.StringAttr.get(g.input_name(n))}) for n in g.inputs]
    )
    fn.res_attrs = ir.ArrayAttr.get([ir.DictAttr.get({NAME_ATTR: ir.StringAttr.get(o.name)}) for o in g.outputs])
    if g.meta:
        fn.attributes[GRAPH_ATTRS] = b.infer(g.meta, g, -1)
    block = fn.add_entry_block()
    values: dict[int, Sequence[ir.Value]] = {n: [block.arguments[i]] for i, n in enumerate(g.inputs)}
    with ir.InsertionPoint(block):
        for n in g.topological():
            op = g.op(n)
            if op == INPUT_OP:
                continue
            d = op_def(op)
            specs = d.attrs if d else {}
            attributes = {
                k: b.attr(v, specs.get(k), g, n) for k, v in g.attrs(n).items() if v is not None
            }
            created = ir.Operation.create(
                op,
                results=[b.type(t) for t in g.types(n)],
                operands=[values[v.node][v.index] for v in g.operands(n)],
                attributes=attributes,
                loc=b.loc(g.loc(n)),
            )
            values[n] = created.results
        func.ReturnOp([values[o.value.node][o.value.index] for o in g.outputs])


# ---------------------------------------------------------------- MLIR -> Python
_RESOURCES_RE = re.compile(r"\{-#\s*dialect_resources:\s*\{(.*)\}\s*#-\}\s*$", re.S)
_BLOB_RE = re.compile(r"([\w.$-]+)\s*:\s*\"0x([0-9A-Fa-f]*)\"")


def resource_blobs(text: str) -> dict[str, bytes]:
    """The builtin dialect resource blobs of an MLIR text file (name -> data bytes)."""
    m = _RESOURCES_RE.search(text)
    if not m:
        return {}
    blobs = {}
    for name, hexdata in _BLOB_RE.findall(m.group(1)):
        raw = bytes.fromhex(hexdata)
        blobs[name] = raw[4:]  # the first four bytes hold the blob's alignment
    return blobs


def _array_from_attr(a: ir.Attribute, resources: dict[str, bytes]) -> np.ndarray:
    t = parse_type(str(a.type))
    assert isinstance(t, TensorType)
    reserve(t.shape, t.dtype, "a constant of the IR text")  # a splat of a huge type is one short line
    text = str(a)
    if text.startswith("dense_resource<"):
        name = text[len("dense_resource<"): text.index(">")]
        if name not in resources:
            raise ValueError(f"constant {name} has no data (elided?)")
        return np.frombuffer(resources[name], dtype=numpy_dtype(t.dtype)).reshape(t.shape)
    if t.dtype in ("bf16", "index", "i48", "i4"):
        return _array_from_text(text, t)
    return np.array(a).astype(numpy_dtype(t.dtype), copy=False).reshape(t.shape)


def _array_from_text(text: str, t: TensorType) -> np.ndarray:
    """Values of a dense<...> attribute whose element type numpy cannot take from MLIR."""
    body = text[len("dense<"): text.rindex(" : ")].rstrip(">").strip()
    dtype = numpy_dtype(t.dtype)
    if body.startswith('"0x'):  # MLIR's hex form: the raw little-endian data
        data = np.frombuffer(bytes.fromhex(body[3:-1]), dtype=dtype)
    else:
        values = [v for v in re.split(r"[\[\],\s]+", body) if v]
        if t.dtype == "bf16":  # hex literals are bit patterns, decimals are values
            data = np.array(
                [int(v, 16) if v.startswith("0x") else np.float32(v).view(np.uint32) >> 16 for v in values], dtype
            )
        else:
            data = np.array([int(v, 0) for v in values], dtype=dtype)
    if data.size == 1:
        return np.broadcast_to(data.reshape(()), t.shape).copy()
    return data.reshape(t.shape)


def from_attr(a: ir.Attribute, spec: AttrSpec | None, resources: dict[str, bytes]) -> Any:
    """The Python value of an MLIR attribute (inverse of _Builder.attr)."""
    kind = spec.kind if spec else "any"
    base = kind.split(":", 1)[0]
    if base == "enum":
        text = str(a)
        return text[text.index("<") + 1: text.rindex(">")]
    if base == "elemtype":
        return str(ir.TypeAttr(a).value)
    if isinstance(a, ir.BoolAttr):
        return bool(a.value)
    if isinstance(a, ir.IntegerAttr):
        return int(a.value)
    if isinstance(a, ir.FloatAttr):
        return float(a.value)
    if isinstance(a, ir.StringAttr):
        return a.value
    if isinstance(a, (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr, ir.DenseI16ArrayAttr, ir.DenseI8ArrayAttr)):
        return [int(v) for v in a]
    if isinstance(a, (ir.DenseF64ArrayAttr, ir.DenseF32ArrayAttr)):
        return [float(v) for v in a]
    if isinstance(a, ir.DenseBoolArrayAttr):
        return [bool(v) for v in a]
    if isinstance(a, ir.ArrayAttr):
        return [from_attr(v, None, resources) for v in a]
    if isinstance(a, ir.DictAttr):
        return {na.name: from_attr(na.attr, None, resources) for na in a}
    if isinstance(a, ir.TypeAttr):
        return parse_type(str(a.value))
    if isinstance(a, ir.DenseElementsAttr) or str(a).startswith("dense_resource<"):
        return _array_from_attr(a, resources)
    return RawAttr(str(a))


def _loc_from_mlir(loc: ir.Location) -> Loc | None:
    if loc.is_a_name():
        child = loc.child_loc
        detail = child.name_str if child.is_a_name() else None
        return Loc(loc.name_str, detail)
    # positions in a hand-written .mlir file say nothing about the model: no location
    return None


def from_module(module: ir.Module, resources: dict[str, bytes] | None = None) -> list[Graph]:
    """The graphs of a module made of func.func ops (as to_module writes them)."""
    resources = resources or {}
    graphs = []
    for fn in module.body.operations:
        if fn.operation.name != "func.func":
            raise ValueError(f"expected only func.func at module level, found {fn.operation.name}")
        graphs.append(_read_func(fn, resources))
    return graphs


def _names(fn: Any, attr_name: str, count: int, prefix: str) -> list[str]:
    attrs = fn.attributes[attr_name] if attr_name in fn.attributes else None
    names = []
    for i in range(count):
        name = f"{prefix}{i}"
        if attrs is not None and i < len(attrs):
            d = ir.DictAttr(attrs[i])
            if NAME_ATTR in d:
                name = ir.StringAttr(d[NAME_ATTR]).value
        names.append(name)
    return names


def _read_func(fn: Any, resources: dict[str, bytes]) -> Graph:
    g = Graph(ir.StringAttr(fn.attributes["sym_name"]).value)
    if GRAPH_ATTRS in fn.attributes:
        g.meta = from_attr(fn.attributes[GRAPH_ATTRS], None, resources)
    block = fn.regions[0].blocks[0]
    values: dict[ir.Value, Value] = {}
    arg_names = _names(fn, "arg_attrs", len(block.arguments), "arg")
    for arg, name in zip(block.arguments, arg_names):
        values[arg] = g.add_input(parse_type(str(arg.type)), name)
    ops = list(block.operations)
    for op in ops[:-1]:
        name = op.operation.name
        d = op_def(name)
        specs = d.attrs if d else {}
        attrs = {k: from_attr(a, specs.get(k), resources) for k, a in op.attributes.items()}
        node = g.add_op(
            name,
            [values[v] for v in op.operands],
            [parse_type(str(r.type)) for r in op.results],
            attrs,
            _loc_from_mlir(op.location),
        )
        for i, r in enumerate(op.results):
            values[r] = Value(node, i)
    ret = ops[-1]
    if ret.operation.name != "func.return":
        raise ValueError(f"function @{g.name} does not end with func.return")
    out_names = _names(fn, "res_attrs", len(ret.operands), "out")
    for v, name in zip(ret.operands, out_names):
        g.add_output(values[v], name)
    return g
