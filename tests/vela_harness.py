"""Compiling models with Arm's Vela (PyPI `ethos-u-vela`) for Ethos-U NPUs, and reading what it says.

Test and benchmark infrastructure: `compile_with_vela` runs the `vela`
command of the environment on a `.tosa` or `.tflite` file for one accelerator configuration and
returns whether it compiled, how many operators went to the NPU and to the CPU (a `.tflite` may
leave some to the CPU; a `.tosa` has no CPU fallback, so one operator Vela cannot map fails the
file), the `cycles_total` of its summary CSV, and Vela's own message when it failed.

Reading Vela's output (and running it in process) is nn2tosa.vela_support's, which the converter
uses to decide what the NPU runs (`--target ... --partial`). Vela 5.2.0 raises `KeyError: '0'` in its statistics writer on a graph whose output is a bool: that is
recorded like any other failure (the message says it), not treated as ours.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from nn2tosa.vela_support import VelaOutcome, read_outcome, run_in_process

__all__ = ["ACCELERATORS", "VelaOutcome", "compile_with_vela", "vela_command"]

ACCELERATORS = ("ethos-u55-256", "ethos-u85-256")


def vela_command() -> list[str] | None:
    """How to run Vela here: the `vela` script beside this Python, or on PATH; None when absent."""
    beside = Path(sys.executable).with_name("vela")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("vela")
    return [found] if found else None


def compile_with_vela(model: Path, accelerator: str, in_process: bool = False, timeout: float = 600) -> VelaOutcome:
    """`vela --accelerator-config ACCELERATOR --output-dir TMP MODEL` and its outcome: through the `vela`
    command (a crash of Vela's native compiler stays in its process), or `in_process` (fast)."""
    command = vela_command()
    if command is None:
        raise FileNotFoundError("vela is not installed (pip install ethos-u-vela)")
    with tempfile.TemporaryDirectory(prefix="vela-") as out:
        arguments = ["--accelerator-config", accelerator, "--output-dir", out, str(model)]
        if in_process:
            code, output = run_in_process(arguments)
        else:
            try:
                done = subprocess.run([*command, *arguments], capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return VelaOutcome(False, message=f"timed out after {timeout:.0f} s")
            code, output = done.returncode, done.stdout + "\n" + done.stderr
        return read_outcome(code, output, Path(out))
