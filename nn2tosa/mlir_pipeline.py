"""Running a user's MLIR pass pipeline (`convert --mlir-pipeline "builtin.module(...)"`) on the module.

MLIR's pipeline parser reports most mistakes as a Python ValueError, but some wrongly nested
pipelines make it abort the whole process with `LLVM ERROR` (for example
`builtin.module(func.func(tosa-to-linalg-pipeline))`: that pipeline holds a module-level pass). No
check of the string's text can foresee every such case, so the string is first parsed in a child
process: if the child fails or dies, its message becomes a one-line error (exit 2) and this process
never parses the string; if it parses there, it parses here too.
"""
from __future__ import annotations

import subprocess
import sys
from typing import Any

from nn2tosa.diagnostics import Nn2TosaError, UsageError

# The anchors a pipeline may start with: the module itself, or any op (MLIR's `any(...)`).
ANCHORS = ("builtin.module(", "any(")

_PARSE_IN_CHILD = """
import sys
from mlir import ir
from mlir.passmanager import PassManager
with ir.Context():
    try:
        PassManager.parse(sys.argv[1])
    except ValueError as e:
        sys.stderr.write(str(e))
        sys.exit(3)
"""


class MlirPipelineError(Nn2TosaError):
    """The pipeline parsed, but a pass of it failed on the module (exit 1), with MLIR's diagnostics."""

    exit_code = 1


def check_pipeline(pipeline: str) -> None:
    """Raise UsageError (with MLIR's message) unless `pipeline` parses as a pass pipeline on the module."""
    text = pipeline.strip()
    if not text.startswith(ANCHORS):
        raise UsageError(f"--mlir-pipeline {pipeline!r}: the pipeline runs on the module, so it must be written "
                         "'builtin.module(pass1,pass2,...)' (nest function passes as func.func(...) inside it)")
    try:
        child = subprocess.run([sys.executable, "-c", _PARSE_IN_CHILD, text], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise UsageError(f"--mlir-pipeline {pipeline!r}: MLIR did not finish parsing it") from None
    if child.returncode != 0:
        message = " ".join(child.stderr.decode(errors="replace").split()) or f"exit status {child.returncode}"
        raise UsageError(f"--mlir-pipeline {pipeline!r}: {message}")


def run_pipeline(module: Any, pipeline: str) -> None:
    """Run the MLIR pass pipeline on `module` in place (checked first with `check_pipeline`)."""
    from mlir import ir
    from mlir.passmanager import PassManager

    check_pipeline(pipeline)
    with module.context:
        pm = PassManager.parse(pipeline.strip())
        try:
            pm.run(module.operation)
        except ir.MLIRError as e:
            lines = [f"{d.message} at {d.location}" for d in e.error_diagnostics] or [" ".join(str(e).split())]
            raise MlirPipelineError(f"the MLIR pipeline failed: {'; '.join(lines)}") from None
