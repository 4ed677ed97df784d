"""One model of a many-model run (nn2tosa/zoo.py), as every pool converts it: the run's shared `Job`
(options, output directory, kinds to write) and the `ModelResult` it answers. The pools (zoo_local.py,
zoo_executor.py) and zoo.py, which picks the pool, all import from here; this module imports none of them."""
from __future__ import annotations

import glob
import time
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nn2tosa.options import ConvertOptions

# What --emit can ask for, and the file each becomes in the output directory.
EMIT_SUFFIXES = {"tosa": ".tosa", "mlir": ".mlir", "mlirbc": ".mlirbc", "report": ".report.json"}

# Exit classes from best to worst (see zoo.py's module doc), and the status word of each.
SEVERITY = (0, 3, 2, 1)
STATUS = {0: "ok", 3: "unsupported", 2: "invalid", 1: "failed"}
CRASHED, TIMEOUT = "crashed", "timeout"  # exit 1 and exit 2: what the parent sees of a worker that died or hung


@dataclass(frozen=True)
class ModelResult:
    """How one model of a convert_many run went."""

    input: str  # the path as given
    name: str  # the stem of its outputs: DIR/<name>.tosa, ...
    status: str  # ok, unsupported, invalid, failed (an internal error), crashed, timeout
    exit_code: int  # what converting it alone exits with: 0, 3, 2, 1 (crashed: 1, timeout: 2)
    seconds: float  # wall time of its conversion
    cpu_seconds: float | None  # CPU time of its conversion in the worker; None when the worker died
    ops: int | None  # TOSA ops written (every function and partition); None when it failed
    outputs: tuple[str, ...] = ()  # the files written, none when it failed
    message: str = ""  # the one-line error, when it failed

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "outputs": list(self.outputs)}


@dataclass(frozen=True)
class Job:
    """What every model of a run shares: the options, the directory, the kinds to write, and whether an
    error shows its traceback (debug)."""

    options: ConvertOptions
    out_dir: Path
    emit: tuple[str, ...]
    debug: bool = False

    def convert(self, path: str, name: str, data: bytes | None = None) -> ModelResult:
        """Convert one model as `nn2tosa convert` converts it alone (nn2tosa.api.convert_file): its own limits
        scope, all or nothing. `data`: the model's bytes when they were sent from elsewhere (`path` still
        names it)."""
        from nn2tosa.api import convert_file
        from nn2tosa.diagnostics import error_exit

        outputs = [(str(self.out_dir / f"{name}{EMIT_SUFFIXES[k]}"), k) for k in self.emit if k != "report"]
        report_json = str(self.out_dir / f"{name}{EMIT_SUFFIXES['report']}") if "report" in self.emit else None
        sidecar = str(self.out_dir / f"{name}.partition.json") if self.options.partial else None
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            with warnings.catch_warnings():
                if not self.debug:  # as the command line: numpy's warnings on hostile data stay quiet
                    warnings.simplefilter("ignore")
                done = convert_file(path, outputs, self.options, sidecar=sidecar, report_json=report_json, data=data)
        except Exception as e:
            if self.debug:
                traceback.print_exc()
            code, message = error_exit(e)
            return ModelResult(path, name, STATUS[code], code, time.perf_counter() - wall, time.process_time() - cpu,
                               None, (), message)
        ops = sum(sum(r.report.tosa_ops.values()) for r in done.results)
        return ModelResult(path, name, STATUS[0], 0, time.perf_counter() - wall, time.process_time() - cpu, ops,
                           tuple(done.written))


def remove_temporaries(out_dir: Path, name: str, names: Sequence[str]) -> None:
    """Delete what a killed worker left of model `name`: write_atomic's temporaries `.<output>.<random>.tmp`
    beside the outputs, all named `name.<something>` (a temporary a longer model name also matches, e.g.
    `a.b` for `a`, is that model's)."""
    longer = [n for n in names if n != name and n.startswith(name + ".")]
    for tmp in out_dir.glob(f".{glob.escape(name)}.*.tmp"):
        if not any(tmp.name.startswith(f".{n}.") for n in longer):
            tmp.unlink(missing_ok=True)
