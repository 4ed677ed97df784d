"""The performance benchmark: large synthetic models through every stage and the whole CLI.

    python bench/benchmark.py                 # everything (about 15 minutes on 2 busy cores)
    python bench/benchmark.py --quick         # ResNet-50 fp32 .armnn and the fp32 transformer, 3 runs

Models are generated once (deterministically, bench/synthetic) into `--models` (default
~/.cache/nn2tosa-bench). Every measurement runs in a fresh process with bytecode caching on (in a
private pycache, as an installed package has it), after one unmeasured warm-up round; the stage,
CLI and copy runs of a model alternate, so that a change in the machine's load hits them alike:
- stages: read, legalize, canonicalize, lower (lower-to-tosa, cse, dce), report, write .tosa,
  MLIR module, write .mlirbc, write .mlir text, timed inside one process (imports timed apart);
- cli: `nn2tosa convert M -o M.tosa -o M.mlirbc`, wall and CPU time and peak RSS of the process;
- copy: a python process reading the file with numpy and writing it twice (the least a conversion
  to two outputs has to do), the yardstick of the "within 2x" target;
- MLIR footprint: peak RSS of a small model converted to .tosa + .mlirbc minus to .tosa alone;
- scaling: the per-stage times of models with 10x the ops (weights kept tiny);
- start-up: `nn2tosa --help` and a small corpus model end to end; the 10,000-op IR print/parse.
Times are medians over `--runs`. Results: `--out`/results.json and results.md (and stdout).
docs/performance.md explains each number.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

MB = 1e6


# ------------------------------------------------------------------------------ models
@dataclass(frozen=True)
class Model:
    file: str
    make: Callable[[Path], Any]  # writes the model to the given path
    quick: bool = False


def _resnet(batchnorm: bool = False, **kw: Any) -> Any:
    from synthetic.network import resnet50

    return resnet50(batchnorm=batchnorm, **kw)


def _armnn(generation: str, int8: bool = False, **kw: Any) -> Callable[[Path], Any]:
    def make(path: Path) -> None:
        from synthetic.armnn import write_armnn
        from synthetic.network import forward

        ranges = None
        if int8:  # activation ranges of the float network on a small calibration image
            import numpy as np

            small = _resnet(image=32, **kw)
            x = np.random.default_rng(0).standard_normal((1, 32, 32, 3)).astype(np.float32)
            ranges = [(float(v.min()), float(v.max())) for v in forward(small, [x], keep_all=True)]
        write_armnn(_resnet(**kw), path, generation, ranges=ranges)
    return make


def _mps(network: str, fp16: bool, **kw: Any) -> Callable[[Path], Any]:
    def make(path: Path) -> None:
        from synthetic.mps import write_mps
        from synthetic.network import transformer

        net = _resnet(batchnorm=True, **kw) if network == "resnet50" else transformer(**kw)
        write_mps(net, path, fp16=fp16)
    return make


MODELS = {
    "resnet50_f32_23.08": Model("resnet50_f32_23.08.armnn", _armnn("23.08"), quick=True),
    "resnet50_f32_20.08": Model("resnet50_f32_20.08.armnn", _armnn("20.08")),
    "resnet50_int8_23.08": Model("resnet50_int8_23.08.armnn", _armnn("23.08", int8=True)),
    "resnet50_int8_20.08": Model("resnet50_int8_20.08.armnn", _armnn("20.08", int8=True)),
    "resnet50_f32_mps": Model("resnet50_f32.mpsgraph", _mps("resnet50", False)),
    "resnet50_f16_mps": Model("resnet50_f16.mpsgraph", _mps("resnet50", True)),
    "transformer_f32_mps": Model("transformer_f32.mpsgraph", _mps("transformer", False), quick=True),
    "transformer_f16_mps": Model("transformer_f16.mpsgraph", _mps("transformer", True)),
}
# 1x and 10x the ops with tiny weights: the stage times should grow ~10x
SCALING = {
    "resnet_narrow_x1": Model("scaling_resnet_x1.armnn", _armnn("23.08", width=8, image=32, classes=10)),
    "resnet_narrow_x10": Model("scaling_resnet_x10.armnn",
                               _armnn("23.08", width=8, image=32, classes=10, blocks=(30, 40, 60, 30))),
    "transformer_narrow_x1": Model("scaling_transformer_x1.mpsgraph",
                                   _mps("transformer", False, layers=12, hidden=32, heads=2, seq=8)),
    "transformer_narrow_x10": Model("scaling_transformer_x10.mpsgraph",
                                    _mps("transformer", False, layers=120, hidden=32, heads=2, seq=8)),
}
GENERATOR_FILES = ("synthetic/network.py", "synthetic/armnn.py", "synthetic/mps.py", "synthetic/fbwrite.py")


def ensure_model(model: Model, folder: Path) -> Path:
    """The model file, (re)generated when missing or older than the generator code."""
    path = folder / model.file
    newest_code = max((BENCH / f).stat().st_mtime for f in GENERATOR_FILES)
    if not path.exists() or path.stat().st_mtime < newest_code:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        start = time.perf_counter()
        # in a child: this process stays small, and children inherit its peak RSS (Linux keeps
        # ru_maxrss across fork and exec), which would then inflate every measurement
        subprocess.run([sys.executable, __file__, "--generate", model.file, str(tmp)], check=True)
        tmp.replace(path)
        print(f"  generated {model.file} ({path.stat().st_size / MB:.1f} MB) in {time.perf_counter() - start:.1f} s",
              file=sys.stderr)
    return path


# ------------------------------------------------------------------------------ child processes
def child_env(pycache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure with cached bytecode, as an installed package runs
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["TOSA_MODEL_NO_BACKTRACE"] = "1"
    return env


class _RusagePopen(subprocess.Popen):
    """Popen that keeps the rusage of the reaped child (os.wait4 instead of os.waitpid)."""

    rusage: Any = None

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        try:
            pid, status, self.rusage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            pid, status = self.pid, 0
        return pid, status


def run_measured(cmd: list[str], env: dict[str, str], ok_codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    """Run `cmd`; its wall time, CPU time (user + system) and peak RSS (from wait4's rusage). An exit
    status outside `ok_codes` is an error."""
    start = time.perf_counter()
    proc = _RusagePopen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode not in ok_codes:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    usage = proc.rusage
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss * 1024 / MB,
            "stdout": out.decode()}


def nn2tosa_cmd() -> list[str]:
    script = Path(sys.executable).parent / "nn2tosa"
    return [str(script)] if script.exists() else [sys.executable, "-m", "nn2tosa"]


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


# ------------------------------------------------------------------------------ the stage child
STAGE_CHILD = r'''
import json, resource, sys, time
def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6
t0 = time.perf_counter()
import nn2tosa.api, nn2tosa.frontend, nn2tosa.passes, nn2tosa.lowering.lower
import nn2tosa.lowering.flatbuffer_emitter, nn2tosa.lowering.mlir_emitter
from nn2tosa.frontend import FORMAT_MODULES
import importlib
for m in FORMAT_MODULES.values(): importlib.import_module(m)
stages, peaks = {"import": time.perf_counter() - t0}, {"import": rss()}
model, out = sys.argv[1], sys.argv[2]
def timed(name, fn):
    start = time.perf_counter(); value = fn()
    stages[name] = stages.get(name, 0.0) + time.perf_counter() - start; peaks[name] = rss()
    return value
result = nn2tosa.api.convert(model)
names = {"load": "read", "cse": "lower", "dce": "lower", "lower-to-tosa": "lower"}
for name, seconds in result.report.timings.items():
    key = "legalize" if name.startswith("legalize-") else names.get(name, name)
    stages[key] = stages.get(key, 0.0) + seconds
peaks["convert"] = rss()
timed("write .tosa", lambda: result.write(out + ".tosa", "tosa"))
timed("MLIR module", result.mlir_module)
timed("write .mlirbc", lambda: result.write(out + ".mlirbc", "mlirbc"))
timed("write .mlir text", lambda: result.write(out + ".mlir", "mlir"))
memory = {}
try:  # Linux: how much of the resident memory is anonymous (copies) and file-backed (the mapped input, libraries)
    for line in open("/proc/self/status"):
        key = line.split(":")[0]
        if key in ("VmHWM", "RssAnon", "RssFile"): memory[key] = int(line.split()[1]) * 1024 / 1e6
except OSError:
    pass
print(json.dumps({"stages": stages, "rss_after": peaks, "memory": memory, "constant_bytes": result.report.constant_bytes,
                  "ops": sum(1 for _ in result.graph.nodes())}))
'''

COPY_CHILD = r'''
import sys, time
import numpy as np
start = time.perf_counter()
data = np.fromfile(sys.argv[1], dtype=np.uint8)
data.tofile(sys.argv[2] + ".1")
data.tofile(sys.argv[2] + ".2")
read_write = time.perf_counter() - start
start = time.perf_counter()
np.copy(data); np.copy(data)
print(read_write, time.perf_counter() - start)
'''

FOOTPRINT_CHILD = r'''
import resource, sys
def rss():
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"): return int(line.split()[1]) * 1024 / 1e6
    except OSError:  # elsewhere the peak will do (bytes on macOS, KB on Linux)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024) / 1e6
import numpy
base = rss()
from mlir import ir
import mlir.dialects.func, mlir.dialects.tosa
with ir.Context():
    ir.Module.parse("func.func @f(%x: tensor<1xf32>) -> tensor<1xf32> { %y = tosa.abs %x : (tensor<1xf32>) -> tensor<1xf32>\n return %y : tensor<1xf32> }")
    print(base, rss())
'''


def remove_outputs(prefix: Path) -> None:
    for suffix in (".tosa", ".mlirbc", ".mlir", ".1", ".2"):
        Path(str(prefix) + suffix).unlink(missing_ok=True)


CONSTANT_STAGES = ("read", "write .tosa", "MLIR module", "write .mlirbc")  # the stages that move weights


def measure_model(name: str, path: Path, work: Path, runs: int, env: dict[str, str]) -> dict[str, Any]:
    """Stage timings, CLI run and numpy copy of one model; the three interleaved run by run, so that
    a change in the machine's load hits them alike."""
    out = work / "out" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    size = path.stat().st_size
    stage_runs, cli, copies = [], [], []
    for i in range(runs + 1):  # the first round warms the page cache and the pycache
        remove_outputs(out)
        stages = run_measured([sys.executable, "-c", STAGE_CHILD, str(path), str(out)], env)
        remove_outputs(out)
        convert = run_measured(nn2tosa_cmd() + ["convert", str(path), "-o", f"{out}.tosa", "-o", f"{out}.mlirbc"], env)
        remove_outputs(out)
        copy = run_measured([sys.executable, "-c", COPY_CHILD, str(path), str(out)], env)
        if i:
            stage_runs.append(json.loads(stages["stdout"].strip().splitlines()[-1]))
            cli.append(convert)
            in_process = [float(v) for v in copy["stdout"].split()]
            copies.append({"process": copy["wall"], "read_and_write_twice": in_process[0], "memory_copy_twice": in_process[1]})
    remove_outputs(out)
    first = stage_runs[0]
    stage_names = list(first["stages"])
    row: dict[str, Any] = {"model": name, "file_mb": size / MB, "constant_mb": first["constant_bytes"] / MB,
                           "tosa_ops": first["ops"], "memory_at_end_mb": first["memory"]}
    row["stages"] = {s: statistics.median(r["stages"].get(s, 0.0) for r in stage_runs) for s in stage_names}
    row["cli"] = {k: median_of(cli, k) for k in ("wall", "cpu", "rss_mb")}
    row["copy"] = {k: median_of(copies, k) for k in copies[0]}
    row["in_process_convert"] = sum(v for k, v in row["stages"].items() if k not in ("import", "write .mlir text"))
    constants = first["constant_bytes"]
    row["throughput_gb_s"] = {
        **{s: constants / max(row["stages"][s], 1e-9) / 1e9 for s in CONSTANT_STAGES},
        "whole conversion (in-process)": constants / row["in_process_convert"] / 1e9,
        "CLI wall": constants / row["cli"]["wall"] / 1e9,
    }
    return row


def measure_footprint(runs: int, env: dict[str, str], work: Path) -> dict[str, float]:
    """What the MLIR bindings add to a conversion: peak RSS of a small model converted to .tosa and
    .mlirbc minus to .tosa alone (also: RSS with MLIR imported and a context used, minus numpy only)."""
    small, out = small_model(), work / "out" / "footprint"
    both, alone, loaded = [], [], []
    for _ in range(runs):
        remove_outputs(out)
        both.append(run_measured(nn2tosa_cmd() + ["convert", str(small), "-o", f"{out}.tosa", "-o", f"{out}.mlirbc"], env))
        remove_outputs(out)
        alone.append(run_measured(nn2tosa_cmd() + ["convert", str(small), "-o", f"{out}.tosa"], env))
        loaded.append([float(v) for v in run_measured([sys.executable, "-c", FOOTPRINT_CHILD], env)["stdout"].split()])
    remove_outputs(out)
    with_mlir, without = median_of(both, "rss_mb"), median_of(alone, "rss_mb")
    base, imported = statistics.median(v[0] for v in loaded), statistics.median(v[1] for v in loaded)
    return {"mlir_footprint_mb": with_mlir - without, "small_model_tosa_only_mb": without,
            "small_model_with_mlir_mb": with_mlir, "python_numpy_mb": base, "numpy_and_mlir_imported_mb": imported,
            "mlir_import_footprint_mb": imported - base}


def small_model() -> Path:
    corpus = ROOT.parent / "shared" / "corpus" / "armnn" / "pyarmnn_23.08" / "cnn_conv_relu_maxpool_fc_softmax_f32.armnn"
    return corpus if corpus.exists() else ROOT / "examples" / "cnn_f32.armnn"


def measure_startup(runs: int, env: dict[str, str], work: Path) -> dict[str, Any]:
    helps = [run_measured(nn2tosa_cmd() + ["--help"], env) for _ in range(runs + 1)][1:]
    small = small_model()
    out = work / "out" / "small"
    out.parent.mkdir(parents=True, exist_ok=True)
    converts = []
    for _ in range(runs + 1):
        remove_outputs(out)
        converts.append(run_measured(nn2tosa_cmd() + ["convert", str(small), "-o", f"{out}.tosa", "-o", f"{out}.mlirbc"], env))
    remove_outputs(out)
    return {"help": {k: median_of(helps, k) for k in ("wall", "cpu", "rss_mb")},
            "small_model": {"file": small.name, "kb": small.stat().st_size / 1e3,
                            **{k: median_of(converts[1:], k) for k in ("wall", "cpu", "rss_mb")}}}


def measure_ir_roundtrip(env: dict[str, str]) -> dict[str, Any]:
    out = run_measured([sys.executable, str(BENCH / "ir_roundtrip.py")], env)["stdout"]
    m = re.search(r"(\d+) ops, ([\d.]+) MB of text: print ([\d.]+) s, parse ([\d.]+) s", out)
    if not m:
        return {"output": out.strip()}
    return {"ops": int(m.group(1)), "text_mb": float(m.group(2)), "print_s": float(m.group(3)),
            "parse_s": float(m.group(4))}


# ------------------------------------------------------------------------------ report
# issue 9's targets
CLI_SECONDS = 1.2  # ResNet-50 fp32 .armnn -> .tosa + .mlirbc
THROUGHPUT_GB_S = 1.0  # constants through every stage that moves them
COPY_RATIO = 2.0  # CLI run / a numpy process reading the file and writing it twice
RSS_FACTOR = 1.5  # peak RSS <= 1.5 x model file + MLIR footprint
SMALL_SECONDS = 1.0  # a small corpus model end to end
HELP_SECONDS = 0.5  # "well under a second"
SCALING_SLACK = 1.5  # 10x the ops: at most 1.5 x 10x the time


def judge(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target of issue 9: what was measured, the limit, met or not."""
    rows = []
    footprint = results["footprint"]["mlir_footprint_mb"]

    def add(target: str, measured: float, limit: float, unit: str, note: str = "", at_least: bool = False) -> None:
        rows.append({"target": target, "measured": measured, "limit": limit, "unit": unit, "note": note,
                     "met": measured >= limit if at_least else measured <= limit})

    models = results["models"]
    if "resnet50_f32_23.08" in models:
        row = models["resnet50_f32_23.08"]
        add("ResNet-50 fp32 .armnn -> .tosa + .mlirbc (CLI, wall)", row["cli"]["wall"], CLI_SECONDS, "s",
            f"CPU {row['cli']['cpu']:.2f} s")
    for name in ("resnet50_f32_23.08", "transformer_f32_mps"):
        if name not in models:
            continue
        row = models[name]
        rates = row["throughput_gb_s"]
        slowest = min(CONSTANT_STAGES, key=lambda s: rates[s])
        add(f"{name}: constants throughput, slowest stage moving them", rates[slowest], THROUGHPUT_GB_S, "GB/s",
            f"{slowest}; whole conversion in-process {rates['whole conversion (in-process)']:.2f} GB/s", at_least=True)
        add(f"{name}: CLI / numpy process reading the file and writing it twice", row["cli"]["wall"] / row["copy"]["process"],
            COPY_RATIO, "x", f"{row['cli']['wall']:.2f} s / {row['copy']['process']:.2f} s; in-process "
            f"{row['in_process_convert']:.2f} s / {row['copy']['read_and_write_twice']:.2f} s")
    for name, row in models.items():
        limit = RSS_FACTOR * row["file_mb"] + footprint
        memory = row["memory_at_end_mb"]
        add(f"{name}: CLI peak RSS", row["cli"]["rss_mb"], limit, "MB",
            f"{RSS_FACTOR} x {row['file_mb']:.0f} + {footprint:.0f}; at the end: anonymous {memory.get('RssAnon', 0):.0f}, "
            f"file-backed {memory.get('RssFile', 0):.0f} (input pages and libraries)")
    for family, (small, large) in results.get("scaling", {}).items():
        ops = large["tosa_ops"] / small["tosa_ops"]
        time_ratio = large["in_process_convert"] / small["in_process_convert"]
        add(f"{family}: time ratio for {ops:.1f}x the ops", time_ratio, SCALING_SLACK * ops, "x")
    startup = results["startup"]
    add("small corpus model CLI end to end", startup["small_model"]["wall"], SMALL_SECONDS, "s",
        f"{startup['small_model']['file']} ({startup['small_model']['kb']:.0f} KB), CPU {startup['small_model']['cpu']:.2f} s")
    add("nn2tosa --help", startup["help"]["wall"], HELP_SECONDS, "s", f"CPU {startup['help']['cpu']:.2f} s")
    return rows


def write_results(out: Path, stem: str, results: dict[str, Any], markdown: Callable[[dict[str, Any]], str]) -> None:
    """out/STEM.json (every measurement) and out/STEM.md (the table `markdown` makes of them), and the
    table on stdout: how each benchmark script ends."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(results, indent=1) + "\n")
    table = markdown(results)
    (out / f"{stem}.md").write_text(table)
    print(table)


def markdown(results: dict[str, Any]) -> str:
    lines = [f"Machine: {results['machine']}; load average {results['load_average']} at the start, "
             f"{results.get('load_average_end', '?')} at the end; medians of {results['runs']} runs.", ""]
    models = results["models"]
    stage_names = list(next(iter(models.values()))["stages"]) if models else []
    lines += ["Stage seconds (one process, imports apart) and whole CLI runs "
              "(`nn2tosa convert M -o M.tosa -o M.mlirbc`):", "",
              "| model | MB | TOSA ops | " + " | ".join(stage_names) + " | CLI wall | CLI CPU | CLI peak RSS | "
              "numpy copy process | GB/s slowest stage |",
              "|---" * (len(stage_names) + 8) + "|"]
    for name, row in models.items():
        slowest = min(row["throughput_gb_s"][s] for s in CONSTANT_STAGES)
        lines.append(f"| {name} | {row['file_mb']:.1f} | {row['tosa_ops']} | "
                     + " | ".join(f"{row['stages'][s]:.3f}" for s in stage_names)
                     + f" | {row['cli']['wall']:.2f} s | {row['cli']['cpu']:.2f} s | {row['cli']['rss_mb']:.0f} MB | "
                     f"{row['copy']['process']:.2f} s | {slowest:.2f} |")
    if results.get("scaling"):
        stages = results["scaling_stages"]
        lines += ["", "Scaling: stage seconds of the x10 model (ratio to x1):", "",
                  "| model | ops x1 | ops x10 | " + " | ".join(stages) + " | total |", "|---" * (len(stages) + 4) + "|"]
        for family, (small, large) in results["scaling"].items():
            cells = [f"{large['stages'][s]:.3f} ({large['stages'][s] / max(small['stages'][s], 1e-9):.1f}x)" for s in stages]
            total = large["in_process_convert"] / small["in_process_convert"]
            lines.append(f"| {family} | {small['tosa_ops']} | {large['tosa_ops']} | " + " | ".join(cells)
                         + f" | {large['in_process_convert']:.2f} ({total:.1f}x) |")
    fp = results["footprint"]
    lines += ["", f"MLIR footprint: {fp['mlir_footprint_mb']:.0f} MB (peak RSS of a small model to .tosa + .mlirbc, "
                  f"{fp['small_model_with_mlir_mb']:.0f} MB, minus to .tosa alone, {fp['small_model_tosa_only_mb']:.0f} MB; "
                  f"importing MLIR and using a context adds {fp['mlir_import_footprint_mb']:.0f} MB to python + numpy's "
                  f"{fp['python_numpy_mb']:.0f} MB)."]
    ir = results.get("ir_roundtrip", {})
    if "print_s" in ir:
        lines += ["", f"IR text round trip ({ir['ops']} ops, {ir['text_mb']} MB): print {ir['print_s']:.3f} s, "
                      f"parse {ir['parse_s']:.3f} s."]
    for name, error in results.get("failed", {}).items():
        lines += ["", f"**{name} failed**: {error.splitlines()[-1] if error else ''}"]
    lines += ["", "| target | measured | limit | met | note |", "|---|---|---|---|---|"]
    for t in results["targets"]:
        lines.append(f"| {t['target']} | {t['measured']:.2f} {t['unit']} | {'>=' if t['unit'] == 'GB/s' else '<='} "
                     f"{t['limit']:.2f} {t['unit']} | {'yes' if t['met'] else 'NO'} | {t['note']} |")
    return "\n".join(lines) + "\n"


def generate(file: str, path: Path) -> None:
    model = next(m for m in (*MODELS.values(), *SCALING.values()) if m.file == file)
    model.make(path)


def main() -> None:
    if sys.argv[1:2] == ["--generate"]:
        generate(sys.argv[2], Path(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="two models, no scaling run, 3 runs")
    ap.add_argument("--runs", type=int, help="measured runs per item (default 5, --quick 3)")
    ap.add_argument("--models", type=Path, default=Path.home() / ".cache" / "nn2tosa-bench",
                    help="where generated models are kept (default ~/.cache/nn2tosa-bench)")
    ap.add_argument("--out", type=Path, default=BENCH / "results", help="results.json / results.md go here")
    ap.add_argument("--only", nargs="*", choices=[*MODELS, *SCALING], metavar="MODEL",
                    help=f"models to run, no scaling run (default: all, or the quick ones): {', '.join([*MODELS, *SCALING])}")
    args = ap.parse_args()
    runs = args.runs or (3 if args.quick else 5)
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="nn2tosa-bench-"))
    env = child_env(work / "pycache")
    chosen = args.only or [n for n, m in MODELS.items() if m.quick or not args.quick]
    results: dict[str, Any] = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
                               "load_average": " ".join(f"{x:.1f}" for x in os.getloadavg()), "runs": runs,
                               "models": {}}
    try:
        for name in chosen:
            print(f"{name} ...", file=sys.stderr)
            path = ensure_model({**MODELS, **SCALING}[name], args.models)
            try:
                results["models"][name] = measure_model(name, path, work, runs, env)
            except RuntimeError as e:  # a failing conversion is reported, and the other models still run
                results.setdefault("failed", {})[name] = str(e)[-2000:]
                print(f"  FAILED: {str(e)[-300:]}", file=sys.stderr)
        if not args.quick and not args.only:
            results["scaling"] = {}
            for family in ("resnet_narrow", "transformer_narrow"):
                print(f"{family} x1, x10 ...", file=sys.stderr)
                pair = [measure_model(f"{family}_x{k}", ensure_model(SCALING[f"{family}_x{k}"], args.models), work,
                                      runs, env) for k in (1, 10)]
                results["scaling"][family] = pair
            results["scaling_stages"] = [s for s in pair[0]["stages"] if s not in ("import", "write .mlir text")]
        print("footprint, start-up, IR round trip ...", file=sys.stderr)
        results["footprint"] = measure_footprint(runs, env, work)
        results["startup"] = measure_startup(runs, env, work)
        results["ir_roundtrip"] = measure_ir_roundtrip(env)
        results["load_average_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
        results["targets"] = judge(results)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_results(args.out, "results", results, markdown)


if __name__ == "__main__":
    main()
