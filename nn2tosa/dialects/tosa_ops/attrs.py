"""Attribute specs many TOSA ops share (names and kinds follow MLIR's tosa dialect, LLVM 22)."""
from __future__ import annotations

from nn2tosa.ir import attr

ACC_TYPE = attr("elemtype", "accumulator element type: i32 (int8), i48 (int16), f16 or f32")
NAN_MODE = attr("enum:tosa.nan_mode", "PROPAGATE (the default when absent) or IGNORE: whether a NaN operand "
                "gives NaN or is skipped", optional=True)
LOCAL_BOUND = attr("bool", "true allows an implementation-defined local error bound (default false)", optional=True)
AXIS = attr("i32", "the axis the op works along")
PAD4 = attr("ints", "[top, bottom, left, right] padding")
STRIDE2 = attr("ints", "[y, x] stride")
DILATION2 = attr("ints", "[y, x] dilation")
KERNEL2 = attr("ints", "[y, x] kernel size")
