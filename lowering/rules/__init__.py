"""The nn -> tosa lowering rules, one module per op family, each registering its forms in the registry
(lowering/registry.py: how an op's forms are chosen and tried). Importing this package registers every
form: read the filled tables (RULES, QUANTIZED_RULES, rule_for, ...) from here.
"""
from __future__ import annotations

from ..context import LoweringContext, float_rule_unquantized
from ..registry import (CARRY_QUANTIZATION, QUANTIZED_RULES, RULES, Form, OpLowering, Rule, ops_with, rule,
                        rule_for)

# the op families (each module holds its ops' float, CpuRef, LiteRT and NPU forms, registered with `rule`)
from . import elementwise  # noqa: F401  (registration)
from . import convolution  # noqa: F401  (registration)
from . import transpose_convolution  # noqa: F401  (registration)
from . import matmul  # noqa: F401  (registration)
from . import pooling  # noqa: F401  (registration)
from . import math  # noqa: F401  (registration)
from . import division  # noqa: F401  (registration)
from . import activations  # noqa: F401  (registration)
from . import cast  # noqa: F401  (registration)
from . import resize  # noqa: F401  (registration)
from . import shape  # noqa: F401  (registration)
from . import reductions  # noqa: F401  (registration)
from . import normalization  # noqa: F401  (registration)
from . import quantization  # noqa: F401  (registration)
from . import indexing  # noqa: F401  (registration)
from . import recurrent  # noqa: F401  (registration)


# The checks of helpers many rules share, whatever the rule (docs/supported_ops.md lists them once).
LoweringContext.general = (float_rule_unquantized, quantization.quantized_per_tensor,
                           quantization.quantizes_per_tensor, quantization.real_function_known,
                           quantization.lookup_types, quantization.has_float_rule)

__all__ = ["CARRY_QUANTIZATION", "QUANTIZED_RULES", "RULES", "Form", "OpLowering", "Rule", "ops_with", "rule",
           "rule_for"]
