"""Type-combination tables many TOSA ops share, from the "Supported Data Types" tables of the TOSA 1.0
specification (which MLIR's tosa-validate also implements). A row says which element types an op
may combine and which profile or extension provides that combination (requirement codes: see
record.rows); each op's record names one of these or spells its own.
"""
from __future__ import annotations

from .record import Support, rows, support

E4, E5 = "f8E4M3FN", "f8E5M2"

# How an op's type signature is read (see record.Support).
SIG_IN = ("o0",)
SIG_IN_OUT = ("o0", "r0")

FLOAT_UNARY = support(SIG_IN, {"fp": "f16 f32", "bf16": "bf16"})
CONV = rows({
    "int": "i8,i8,i32", "fp": "f16,f16,f16 f16,f16,f32 f32,f32,f32", "int4": "i8,i4,i32", "int16": "i16,i8,i48",
    "fp8e4m3": f"{E4},{E4},f16", "fp8e5m2": f"{E5},{E5},f16", "bf16": "bf16,bf16,f32",
})
CONV_SUPPORT = support(("o0", "o1", "acc"), CONV)
DATA_MOVEMENT = support(SIG_IN, {"any": "i1", "int": "i8 i16 i32", "fp": "f16 f32", "fp8e4m3": E4, "fp8e5m2": E5,
                                 "bf16": "bf16"})
INT_BITWISE = support(SIG_IN, {"int": "i8 i16 i32"})
ARITH_I32_ANY = support(SIG_IN, {"any": "i32", "fp": "f16 f32", "bf16": "bf16"})
ARITH_I32_INT = support(SIG_IN, {"int": "i32", "fp": "f16 f32", "bf16": "bf16"})
BOOL = support(SIG_IN, {"any": "i1"})
SHIFT = support(SIG_IN, {"any": "i8 i16 i32"})
REDUCE_MINMAX = support(SIG_IN, {"int": "i8 i16 i32", "fp": "f16 f32", "bf16": "bf16"})
GATHER = support(SIG_IN, {"int": "i8 i16 i32", "fp": "f16 f32", "fp8e4m3": E4, "fp8e5m2": E5, "bf16": "bf16"})
_DATA_NODE = {"any": "i1 i8 i16 i32", "fp": "f16 f32", "int4": "i4", "int16": "i48", "fp8e4m3": E4, "fp8e5m2": E5,
              "bf16": "bf16"}
DATA_NODE_RESULT = support(("r0",), _DATA_NODE)
DATA_NODE_INPUT = support(SIG_IN, _DATA_NODE)
_VARIABLE = {"int+variable": "i8", "fp+variable": "f16 f32"}
ANY = Support((), {(): "any"})
CONTROL_FLOW = Support((), {(): "any+controlflow"})


def variable(signature: tuple[str, ...]) -> Support:
    return support(signature, _VARIABLE)


def cast_rows() -> dict[tuple[str, ...], str]:
    """CAST: every conversion among bool and the integer types, integers and floats both ways, fp8."""
    ints = ("i8", "i16", "i32")
    out: dict[tuple[str, ...], str] = {}
    for a in ("i1",) + ints:
        for b in ("i1",) + ints:
            if a != b:
                out[(a, b)] = "int"
    for i in ints:
        out.update({(i, "f16"): "fp", (i, "f32"): "fp", ("f16", i): "fp", ("f32", i): "fp",
                    (i, "bf16"): "bf16", ("bf16", i): "bf16"})
    out.update({("f16", "f32"): "fp", ("f32", "f16"): "fp", ("bf16", "f32"): "bf16", ("f32", "bf16"): "bf16"})
    for f8, ext in ((E4, "fp8e4m3"), (E5, "fp8e5m2")):
        out.update({(f8, "f16"): ext, (f8, "f32"): ext, ("f16", f8): ext, ("f32", f8): ext,
                    (f8, "bf16"): f"bf16+{ext}", ("bf16", f8): f"bf16+{ext}"})
    return out
