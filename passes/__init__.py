"""The pass manager and the passes over the IR. Importing this package registers every pass but the two
legalizations and lower-to-tosa, which register when a pipeline first names them (manager._ON_DEMAND)."""
from . import dce, fold  # noqa: F401  (registration)
from . import canonicalize, cse, layout  # noqa: F401  (registration)
from .manager import PassManager, available_passes, has_pass, parse_pipeline, register_pass

__all__ = ["PassManager", "available_passes", "has_pass", "parse_pipeline", "register_pass"]
