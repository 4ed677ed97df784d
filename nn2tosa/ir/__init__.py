"""The networkx IR: graph, types, op registry, verifier, MLIR text form."""
from .graph import INPUT_OP, Graph, Loc, Output, Use, Value
from .builder import Builder
from .registry import AttrSpec, Dialect, OpDef, attr, define, dialect, op_def, ops_of, register_dialect
from .types import (ELEMENT_TYPES, Quant, ShapeType, TensorType, Type, as_tensor, element_type_of, numpy_dtype,
                    parse_type)
from .verify import VerificationError, verify

__all__ = [
    "Builder", "INPUT_OP", "Graph", "Loc", "Output", "Use", "Value", "AttrSpec", "Dialect", "OpDef", "attr", "define",
    "dialect", "op_def", "ops_of", "register_dialect", "ELEMENT_TYPES", "Quant", "ShapeType", "TensorType",
    "Type", "element_type_of", "numpy_dtype", "parse_type", "VerificationError", "verify",
]
