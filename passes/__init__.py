"""The pass manager and the passes over the IR. Importing this package registers every pass."""
from . import dce, fold  # noqa: F401  (registration)
from . import canonicalize, cse, layout  # noqa: F401  (registration)
from . import legalize_armnn  # noqa: F401  (registration)
from . import legalize_mps  # noqa: F401  (registration)
from .manager import PassManager, available_passes, parse_pipeline, register_pass

__all__ = ["PassManager", "available_passes", "parse_pipeline", "register_pass"]
from nn2tosa.lowering import lower  # noqa: E402,F401  (registers lower-to-tosa)
