"""Compiling models with Arm's Vela (PyPI `ethos-u-vela`) for Ethos-U NPUs, and reading what it says.

Test and benchmark infrastructure, independent of the converter: `compile_with_vela` runs the `vela`
command of the environment on a `.tosa` or `.tflite` file for one accelerator configuration and
returns whether it compiled, how many operators went to the NPU and to the CPU (a `.tflite` may
leave some to the CPU; a `.tosa` has no CPU fallback, so one operator Vela cannot map fails the
file), the `cycles_total` of its summary CSV, and Vela's own message when it failed.

Vela 5.2.0 raises `KeyError: '0'` in its statistics writer on a graph whose output is a bool: that is
recorded like any other failure (the message says it), not treated as ours.
"""
from __future__ import annotations

import contextlib
import csv
import io
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

ACCELERATORS = ("ethos-u55-256", "ethos-u85-256")
_OPERATORS = re.compile(r"^(CPU|NPU) operators = (\d+)", re.MULTILINE)


def vela_command() -> list[str] | None:
    """How to run Vela here: the `vela` script beside this Python, or on PATH; None when absent."""
    beside = Path(sys.executable).with_name("vela")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("vela")
    return [found] if found else None


@dataclass
class VelaOutcome:
    compiled: bool  # Vela wrote a command stream (for a .tflite possibly with CPU operators left)
    npu_ops: int = 0
    cpu_ops: int = 0
    cycles: int | None = None  # cycles_total of the summary CSV
    message: str = ""  # Vela's error (its last line of output) when it failed

    @property
    def all_on_npu(self) -> bool:
        return self.compiled and self.cpu_ops == 0

    def as_dict(self) -> dict:
        return asdict(self)


def failure_message(output: str) -> str:
    """The line of Vela's output that says why it failed: its exception or error line, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^(\w+Error|Error|\w+Exception)\b", line):
            return line
    return lines[-1] if lines else "no output"


def _run_in_process(arguments: list[str]) -> tuple[int, str]:
    """Vela's command line run in this process (its compiler is a native library: tens of
    milliseconds a small model, against a second to start the `vela` command): (exit code, output)."""
    from ethosu.vela import vela

    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            code = vela.main(arguments)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except Exception as error:  # Vela reports what it cannot compile by raising
            print(f"{type(error).__name__}: {error}")
            code = 1
    return int(code or 0), output.getvalue()


def compile_with_vela(model: Path, accelerator: str, in_process: bool = False, timeout: float = 600) -> VelaOutcome:
    """`vela --accelerator-config ACCELERATOR --output-dir TMP MODEL` and its outcome: through the `vela`
    command (a crash of Vela's native compiler stays in its process), or `in_process` (fast)."""
    command = vela_command()
    if command is None:
        raise FileNotFoundError("vela is not installed (pip install ethos-u-vela)")
    with tempfile.TemporaryDirectory(prefix="vela-") as out:
        arguments = ["--accelerator-config", accelerator, "--output-dir", out, str(model)]
        if in_process:
            code, output = _run_in_process(arguments)
        else:
            try:
                done = subprocess.run([*command, *arguments], capture_output=True, text=True, timeout=timeout)
            except subprocess.TimeoutExpired:
                return VelaOutcome(False, message=f"timed out after {timeout:.0f} s")
            code, output = done.returncode, done.stdout + "\n" + done.stderr
        if code != 0:
            return VelaOutcome(False, message=failure_message(output))
        counts = {kind: int(n) for kind, n in _OPERATORS.findall(output)}
        cycles = None
        for summary in Path(out).glob("*_summary_*.csv"):
            with summary.open() as f:
                row = next(csv.DictReader(f), None)
            if row and row.get("cycles_total"):
                cycles = int(float(row["cycles_total"]))
        return VelaOutcome(True, counts.get("NPU", 0), counts.get("CPU", 0), cycles)
