"""The performance benchmark: large synthetic models through every stage and the whole CLI.

    python bench/benchmark.py                 # everything (about 10 minutes on 2 cores)
    python bench/benchmark.py --quick         # ResNet-50 fp32 .armnn and the fp32 transformer, 3 runs

Models are generated once (deterministically, bench/synthetic) into `--models` (default
~/.cache/nn2tosa-bench). Every measurement runs in a fresh process with bytecode caching on (in a
private pycache, as an installed package has it), after one unmeasured warm-up run:
- stages: read, legalize, canonicalize, lower (lower-to-tosa, cse, dce), report, MLIR module,
  write .tosa, write .mlirbc, write .mlir text, timed inside one process (imports timed apart);
- cli: `nn2tosa convert M -o M.tosa -o M.mlirbc`, wall and CPU time and peak RSS of the process;
- copy: the same file read with numpy and written twice (the least any conversion to two
  outputs has to do), the yardstick of the "within 2x" target;
- MLIR footprint: RSS of a process with the MLIR bindings loaded minus one with numpy only;
- scaling: the per-stage times of a model with 10x the ops (weights kept tiny);
- start-up: `nn2tosa --help` and a small corpus model end to end; the 10,000-op IR print/parse.
Times are medians over `--runs`. Results: `--out`/results.json and results.md (and stdout).
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
    input_shape: tuple[int, ...]
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
    "resnet50_f32_23.08": Model("resnet50_f32_23.08.armnn", _armnn("23.08"), (1, 224, 224, 3), quick=True),
    "resnet50_f32_20.08": Model("resnet50_f32_20.08.armnn", _armnn("20.08"), (1, 224, 224, 3)),
    "resnet50_int8_23.08": Model("resnet50_int8_23.08.armnn", _armnn("23.08", int8=True), (1, 224, 224, 3)),
    "resnet50_int8_20.08": Model("resnet50_int8_20.08.armnn", _armnn("20.08", int8=True), (1, 224, 224, 3)),
    "resnet50_f32_mps": Model("resnet50_f32.mpsgraph", _mps("resnet50", False), (1, 3, 224, 224)),
    "resnet50_f16_mps": Model("resnet50_f16.mpsgraph", _mps("resnet50", True), (1, 3, 224, 224)),
    "transformer_f32_mps": Model("transformer_f32.mpsgraph", _mps("transformer", False), (1, 128, 768), quick=True),
    "transformer_f16_mps": Model("transformer_f16.mpsgraph", _mps("transformer", True), (1, 128, 768)),
}
# 1x and 10x the ops with tiny weights: the stage times should grow ~10x
SCALING = {
    "resnet_narrow_x1": Model("scaling_resnet_x1.armnn", _armnn("23.08", width=8, image=32, classes=10), ()),
    "resnet_narrow_x10": Model("scaling_resnet_x10.armnn",
                               _armnn("23.08", width=8, image=32, classes=10, blocks=(30, 40, 60, 30)), ()),
    "transformer_narrow_x1": Model("scaling_transformer_x1.mpsgraph",
                                   _mps("transformer", False, layers=12, hidden=32, heads=2, seq=8), ()),
    "transformer_narrow_x10": Model("scaling_transformer_x10.mpsgraph",
                                    _mps("transformer", False, layers=120, hidden=32, heads=2, seq=8), ()),
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


def run_measured(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run `cmd`; its wall time, CPU time (user + system) and peak RSS (from wait4's rusage)."""
    start = time.perf_counter()
    proc = _RusagePopen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
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
print(json.dumps({"stages": stages, "rss_after": peaks, "constant_bytes": result.report.constant_bytes,
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
import resource
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1]) * 1024 / 1e6
import numpy
base = rss()
from nn2tosa.ir.mlir_bridge import new_context
from mlir.dialects import tosa, func
ctx = new_context()
with ctx:
    from mlir import ir
    ir.Module.parse("func.func @f(%x: tensor<1xf32>) -> tensor<1xf32> { %y = tosa.abs %x : (tensor<1xf32>) -> tensor<1xf32>\n return %y : tensor<1xf32> }")
print(base, rss())
'''


def remove_outputs(prefix: Path) -> None:
    for suffix in (".tosa", ".mlirbc", ".mlir", ".1", ".2"):
        Path(str(prefix) + suffix).unlink(missing_ok=True)


def measure_model(name: str, path: Path, work: Path, runs: int, env: dict[str, str], text: bool = True) -> dict[str, Any]:
    out = work / "out" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    size = path.stat().st_size
    row: dict[str, Any] = {"model": name, "file_mb": size / MB}
    stage_runs = []
    for i in range(runs + 1):  # the first run warms the page cache and the pycache
        remove_outputs(out)
        r = run_measured([sys.executable, "-c", STAGE_CHILD, str(path), str(out)], env)
        if i:
            stage_runs.append(json.loads(r["stdout"].strip().splitlines()[-1]))
    stage_names = list(stage_runs[0]["stages"])
    row["stages"] = {s: statistics.median(r["stages"].get(s, 0.0) for r in stage_runs) for s in stage_names}
    row["rss_after_stage_mb"] = stage_runs[-1]["rss_after"]
    row["constant_mb"] = stage_runs[0]["constant_bytes"] / MB
    row["tosa_ops"] = stage_runs[0]["ops"]
    cli = []
    for i in range(runs + 1):
        remove_outputs(out)
        r = run_measured(nn2tosa_cmd() + ["convert", str(path), "-o", f"{out}.tosa", "-o", f"{out}.mlirbc"], env)
        if i:
            cli.append(r)
    row["cli"] = {k: median_of(cli, k) for k in ("wall", "cpu", "rss_mb")}
    copies = []
    for i in range(runs + 1):
        remove_outputs(out)
        r = run_measured([sys.executable, "-c", COPY_CHILD, str(path), str(out)], env)
        if i:
            copies.append([float(v) for v in r["stdout"].split()])
    remove_outputs(out)
    row["copy"] = {"read_and_write_twice": statistics.median(c[0] for c in copies),
                   "memory_copy_twice": statistics.median(c[1] for c in copies)}
    in_process = sum(v for k, v in row["stages"].items() if k not in ("import", "write .mlir text"))
    row["in_process_convert"] = in_process
    row["throughput_gb_s"] = {"in_process": stage_runs[0]["constant_bytes"] / in_process / 1e9,
                              "cli_wall": stage_runs[0]["constant_bytes"] / row["cli"]["wall"] / 1e9}
    return row


def measure_footprint(env: dict[str, str]) -> dict[str, float]:
    values = [run_measured([sys.executable, "-c", FOOTPRINT_CHILD], env)["stdout"].split() for _ in range(3)]
    base, loaded = statistics.median(float(v[0]) for v in values), statistics.median(float(v[1]) for v in values)
    return {"python_numpy_mb": base, "with_mlir_mb": loaded, "mlir_footprint_mb": loaded - base}


def measure_startup(runs: int, env: dict[str, str], work: Path) -> dict[str, Any]:
    helps = [run_measured(nn2tosa_cmd() + ["--help"], env) for _ in range(runs + 1)][1:]
    corpus = ROOT.parent / "shared" / "corpus" / "armnn" / "pyarmnn_23.08" / "cnn_conv_relu_maxpool_fc_softmax_f32.armnn"
    small = corpus if corpus.exists() else ROOT / "examples" / "cnn_f32.armnn"
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
TARGETS = {
    "cli_time": 1.2, "throughput": 1.0, "copy_ratio": 2.0, "rss_factor": 1.5, "small_cli": 1.0, "help": 1.0,
}


def judge(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target of issue 9: what was measured, the limit, met or not."""
    rows = []
    footprint = results["footprint"]["mlir_footprint_mb"]

    def add(target: str, measured: float, limit: float, unit: str, note: str = "") -> None:
        rows.append({"target": target, "measured": measured, "limit": limit, "unit": unit,
                     "met": measured <= limit if unit != "GB/s" else measured >= limit, "note": note})

    for name, row in results["models"].items():
        if name == "resnet50_f32_23.08":
            add("ResNet-50 fp32 .armnn -> .tosa + .mlirbc, CLI wall", row["cli"]["wall"], TARGETS["cli_time"], "s",
                f"CPU {row['cli']['cpu']:.2f} s")
        if name in ("resnet50_f32_23.08", "transformer_f32_mps"):
            add(f"{name}: constants throughput (in-process)", row["throughput_gb_s"]["in_process"],
                TARGETS["throughput"], "GB/s", f"CLI wall: {row['throughput_gb_s']['cli_wall']:.2f} GB/s")
            add(f"{name}: in-process time / (read + write twice with numpy)",
                row["in_process_convert"] / row["copy"]["read_and_write_twice"], TARGETS["copy_ratio"], "x",
                f"CLI wall / copy: {row['cli']['wall'] / row['copy']['read_and_write_twice']:.2f}x")
        limit = TARGETS["rss_factor"] * row["file_mb"] + footprint
        add(f"{name}: CLI peak RSS", row["cli"]["rss_mb"], limit, "MB", f"1.5 x {row['file_mb']:.0f} MB + {footprint:.0f} MB MLIR")
    startup = results["startup"]
    add("small corpus model CLI end to end", startup["small_model"]["wall"], TARGETS["small_cli"], "s",
        f"{startup['small_model']['file']} ({startup['small_model']['kb']:.0f} KB)")
    add("nn2tosa --help", startup["help"]["wall"], TARGETS["help"], "s")
    return rows


def markdown(results: dict[str, Any]) -> str:
    lines = [f"Machine: {results['machine']}; load average at start {results['load_average']}; "
             f"{results['runs']} runs, medians.", ""]
    models = results["models"]
    stage_names = list(next(iter(models.values()))["stages"]) if models else []
    lines += ["| model | MB | TOSA ops | " + " | ".join(stage_names) + " | CLI wall | CLI CPU | CLI peak RSS | "
              "numpy read+write x2 | const GB/s |",
              "|---" * (len(stage_names) + 9) + "|"]
    for name, row in models.items():
        lines.append(f"| {name} | {row['file_mb']:.1f} | {row['tosa_ops']} | "
                     + " | ".join(f"{row['stages'][s]:.3f}" for s in stage_names)
                     + f" | {row['cli']['wall']:.2f} s | {row['cli']['cpu']:.2f} s | {row['cli']['rss_mb']:.0f} MB | "
                     f"{row['copy']['read_and_write_twice']:.2f} s | {row['throughput_gb_s']['in_process']:.2f} |")
    if results.get("scaling"):
        lines += ["", "Scaling (stage seconds; ratio x10 / x1):", "",
                  "| model | ops x1 | ops x10 | " + " | ".join(results["scaling_stages"]) + " |",
                  "|---" * (len(results["scaling_stages"]) + 3) + "|"]
        for family, (small, large) in results["scaling"].items():
            ratios = [large["stages"][s] / max(small["stages"][s], 1e-9) for s in results["scaling_stages"]]
            lines.append(f"| {family} | {small['tosa_ops']} | {large['tosa_ops']} | "
                         + " | ".join(f"{large['stages'][s]:.3f} ({r:.1f}x)" for s, r in zip(results["scaling_stages"], ratios))
                         + " |")
    fp = results["footprint"]
    lines += ["", f"MLIR bindings footprint: {fp['mlir_footprint_mb']:.0f} MB "
                  f"(python + numpy {fp['python_numpy_mb']:.0f} MB, with MLIR loaded {fp['with_mlir_mb']:.0f} MB).", ""]
    ir = results.get("ir_roundtrip", {})
    if "print_s" in ir:
        lines += [f"IR text round trip ({ir['ops']} ops, {ir['text_mb']} MB): print {ir['print_s']:.3f} s, "
                  f"parse {ir['parse_s']:.3f} s.", ""]
    lines += ["| target | measured | limit | met | note |", "|---|---|---|---|---|"]
    for t in results["targets"]:
        lines.append(f"| {t['target']} | {t['measured']:.2f} {t['unit']} | {t['limit']:.2f} {t['unit']} | "
                     f"{'yes' if t['met'] else 'NO'} | {t['note']} |")
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
    ap.add_argument("--only", nargs="*", help="model names to run (default: all, or the quick ones)")
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
            path = ensure_model(MODELS[name], args.models)
            results["models"][name] = measure_model(name, path, work, runs, env)
        if not args.quick and not args.only:
            results["scaling"] = {}
            for family in ("resnet_narrow", "transformer_narrow"):
                print(f"{family} x1, x10 ...", file=sys.stderr)
                pair = [measure_model(f"{family}_x{k}", ensure_model(SCALING[f"{family}_x{k}"], args.models), work,
                                      runs, env) for k in (1, 10)]
                results["scaling"][family] = pair
            results["scaling_stages"] = [s for s in pair[0]["stages"] if s not in ("import", "write .mlir text")]
        print("footprint, start-up, IR round trip ...", file=sys.stderr)
        results["footprint"] = measure_footprint(env)
        results["startup"] = measure_startup(runs, env, work)
        results["ir_roundtrip"] = measure_ir_roundtrip(env)
        results["targets"] = judge(results)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    table = markdown(results)
    (args.out / "results.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
