"""Arm's Vela (PyPI `ethos-u-vela`, the optional extra `nn2tosa[vela]`) as the judge of what an Ethos-U
NPU runs: compile TOSA bytes for one NPU and read what Vela says.

Vela 5.2.0 compiles TOSA input in its native core (`ethosu.regor`), whose Python binding offers only
`compile` and the *TFLite* operator constraints: no per-operator query for TOSA. (The Python modules
`ethosu.vela.tosa_supported_operators` & co. are the legacy core's, which Vela no longer runs for TOSA
or Ethos-U85.) So what the NPU runs is learned by compiling: Vela raises on the first operator it
cannot map (TOSA input has no CPU fallback) with a message naming Vela's own operator type
("Non-passthrough operation (Xor) could not run on NPU"), and on success its summary gives cycles,
memory use and the operators it placed. Compiling runs Vela's command line in this process (its
compiler is a native library: tens of milliseconds for a small model, against a second to start
the `vela` command), with the accelerator's default system configuration, as `vela MODEL` does.

Compiles are cached by (sha256 of the bytes, accelerator): partial conversion and `--vela-report`
compile the same region more than once. `vela_report` is `--vela-report`'s account of a converted Result
(Result.vela_report), `format_vela_report` its text.
"""
from __future__ import annotations

import contextlib
import csv
import hashlib
import importlib.metadata
import io
import re
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VELA_VERSION = "5.2.0"  # the version the `vela` and `test` extras pin, and the one whose behaviour is documented
# nn2tosa's --target preset -> the Vela accelerator configuration it compiles for
ACCELERATORS = {"ethos-u55": "ethos-u55-256", "ethos-u65": "ethos-u65-256", "ethos-u85": "ethos-u85-256"}
_OPERATORS = re.compile(r"^(CPU|NPU) operators = (\d+)", re.MULTILINE)
_PLACED = re.compile(r"^\s+(CPU|NPU): (.+)$", re.MULTILINE)


def vela_version() -> str | None:
    """The installed ethos-u-vela's version, None when it is not installed."""
    try:
        return importlib.metadata.version("ethos-u-vela")
    except importlib.metadata.PackageNotFoundError:
        return None


@dataclass
class VelaOutcome:
    compiled: bool  # Vela wrote a command stream (for a .tflite possibly with CPU operators left)
    npu_ops: int = 0
    cpu_ops: int = 0
    cycles: int | None = None  # cycles_total of the summary CSV
    message: str = ""  # Vela's error (its exception or last line of output) when it failed
    sram_kib: float | None = None  # sram_memory_used of the summary (KiB)
    dram_kib: float | None = None  # dram_memory_used (KiB)
    placed: list[str] = field(default_factory=list)  # "NPU: Abs = Identity (outputs [1, 8, 8, 4])", ...

    @property
    def all_on_npu(self) -> bool:
        return self.compiled and self.cpu_ops == 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def failure_message(output: str) -> str:
    """The line of Vela's output that says why it failed: its exception or error line, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^(\w+Error|Error|\w+Exception)\b", line):
            return line
    return lines[-1] if lines else "no output"


def run_in_process(arguments: list[str]) -> tuple[int, str]:
    """Vela's command line run in this process: (exit code, everything it printed)."""
    from ethosu.vela import vela  # (an optional extra: nn2tosa[vela])

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


def read_outcome(code: int, output: str, out_dir: Path) -> VelaOutcome:
    """What one Vela run said: its exit code, its printed output and the summary CSV it wrote in `out_dir`."""
    if code != 0:
        return VelaOutcome(False, message=failure_message(output))
    counts = {kind: int(n) for kind, n in _OPERATORS.findall(output)}
    outcome = VelaOutcome(True, counts.get("NPU", 0), counts.get("CPU", 0),
                          placed=[f"{kind}: {what.strip()}" for kind, what in _PLACED.findall(output)])
    for summary in out_dir.glob("*_summary_*.csv"):
        with summary.open() as f:
            row = next(csv.DictReader(f), None)
        if row:
            outcome.cycles = int(float(row["cycles_total"])) if row.get("cycles_total") else None
            outcome.sram_kib = float(row["sram_memory_used"]) if row.get("sram_memory_used") else None
            outcome.dram_kib = float(row["dram_memory_used"]) if row.get("dram_memory_used") else None
    return outcome


_CACHE: dict[tuple[str, str, bool], VelaOutcome] = {}


def compile_tosa(data: bytes, accelerator: str, name: str = "region", placed: bool = False) -> VelaOutcome:
    """Vela's outcome for the `.tosa` bytes on `accelerator` (e.g. "ethos-u55-256"), once per distinct input.
    `placed`: also list the operators Vela placed (its --show-cpu-operations, whose database reader in 5.2.0
    raises KeyError on some graphs Vela compiles, e.g. an ARGMAX's: then the list is left empty)."""
    key = (hashlib.sha256(data).hexdigest(), accelerator, placed)
    if key not in _CACHE:
        with tempfile.TemporaryDirectory(prefix="nn2tosa-vela-") as work:
            model = Path(work) / f"{name}.tosa"
            model.write_bytes(data)
            out = Path(work) / "out"
            arguments = ["--accelerator-config", accelerator, "--output-dir", str(out), str(model)]
            code, output = run_in_process(arguments + (["--show-cpu-operations"] if placed else []))
            outcome = read_outcome(code, output, out)
            if placed and not outcome.compiled and outcome.message.startswith("KeyError"):
                outcome = compile_tosa(data, accelerator, name)
            _CACHE[key] = outcome
    return _CACHE[key]


# ------------------------------------------------------------------------------ --vela-report
def vela_report(result: Any) -> dict[str, Any]:
    """Every function of a Result converted with an NPU target, compiled by Vela for that NPU: per region
    its cycles, SRAM and DRAM use and the operators placed; and the ops left to the host (a partial
    conversion's), each with why."""
    from nn2tosa.diagnostics import UsageError

    target = result.report.npu_target or (getattr(result, "partition", {}).get("npu") or {}).get("target")
    if not target:
        raise UsageError("a Vela report needs an NPU target (--target, target=)")
    if vela_version() is None:
        raise UsageError("a Vela report needs Vela: pip install nn2tosa[vela]")
    accelerator = ACCELERATORS[target]
    functions, _ = result._program()
    regions = []
    for g, data in zip(functions, result.tosa_flatbuffers() if functions else []):
        outcome = compile_tosa(data, accelerator, g.name, placed=True)
        regions.append({"function": g.name, "compiled": outcome.compiled, "cycles": outcome.cycles,
                        "sram_kib": outcome.sram_kib, "dram_kib": outcome.dram_kib, "npu_ops": outcome.npu_ops,
                        "cpu_ops": outcome.cpu_ops, "placed": outcome.placed, "message": outcome.message})
    host = [{"op": h["op"], "name": h["name"], "where": h["where"], "why": h["why"]}
            for h in getattr(result, "partition", {}).get("host", [])]
    return {"vela": vela_version(), "accelerator": accelerator, "regions": regions,
            "npu_cycles": sum(r["cycles"] or 0 for r in regions), "host": host}


def format_vela_report(report: dict[str, Any]) -> str:
    """The Vela report as text lines (what `convert --vela-report` prints to stderr)."""
    lines = [f"vela {report['vela']} on {report['accelerator']}: {len(report['regions'])} NPU region(s), "
             f"{report['npu_cycles']:,} cycles; {len(report['host'])} op(s) on the host"]
    for r in report["regions"]:
        if not r["compiled"]:
            lines.append(f"  {r['function']}: Vela refuses it: {r['message']}")
            continue
        lines.append(f"  {r['function']}: {r['cycles']:,} cycles, SRAM {r['sram_kib']:.2f} KiB, "
                     f"DRAM {r['dram_kib']:.2f} KiB, {r['npu_ops']} NPU / {r['cpu_ops']} CPU operators")
        kinds = Counter(p.split(" = ", 1)[0] for p in r["placed"])  # "NPU: Conv2D = layer_17 (...)"
        if kinds:
            lines.append("    placed: " + ", ".join(f"{k} x{n}" for k, n in kinds.items()))
    for h in report["host"]:
        lines.append(f"  host: {h['op']} '{h['name']}' ({h['where']}): {'; '.join(h['why'])}")
    return "\n".join(lines) + "\n"
