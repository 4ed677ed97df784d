"""nn2tosa against the peer users would pick instead, side by side, in one run.

    python bench/side_by_side.py                       # the pairs in ../shared/bench-pairs, 5 runs
    python bench/side_by_side.py --pair net.tflite net.armnn --runs 7
    python bench/side_by_side.py --also before=/path/to/other/venv/bin   # a second nn2tosa build, same run

The peer (`pip install -e '.[test,bench]'`): Arm's C++ converter, then tosa-opt for the flatbuffer,
the two outputs nn2tosa writes in one process:
    tosa-converter-for-tflite NAME.tflite --bytecode -o NAME.mlirbc
    tosa-opt NAME.mlirbc --tosa-serialize --tosa-flatbuffer-filename=NAME.tosa   (its MLIR print to /dev/null)
nn2tosa:
    nn2tosa convert NAME.armnn -o NAME.tosa -o NAME.mlirbc

Every run is a fresh process (bytecode caching on, as an installed package runs), after one
unmeasured warm-up round; contenders alternate run by run (A B A B ...), so that the load of a
shared machine hits them alike. Measured per process with os.wait4: CPU (user + system of the
child), wall time and peak RSS (the peer: CPU and wall summed over its two processes, RSS the
larger). Medians over `--runs`. Also:
- in-process: `nn2tosa.convert(path)` then both outputs written, warm (a second conversion in
  the same process), CPU and wall, against the peer's whole processes;
- the small model examples/cnn_f32.armnn through the CLI to .tosa alone (the start-up floor);
- the >= 100 MB synthetic networks of bench/benchmark.py (ResNet-50 fp32 .armnn, the fp32
  transformer): no .tflite exists for them, so the peer's cost is bounded from below by its second
  step alone, tosa-opt serializing nn2tosa's own .mlirbc of the same network.
Results: --out/side_by_side.json and side_by_side.md (and stdout); docs/performance.md explains them.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from benchmark import MODELS, child_env, ensure_model, run_measured, write_results  # noqa: E402

PAIRS = ROOT.parent / "shared" / "bench-pairs"
SMALL = ROOT / "examples" / "cnn_f32.armnn"
LARGE = ("resnet50_f32_23.08", "transformer_f32_mps")
KEYS = ("cpu", "wall", "rss_mb")

# issue 19's targets: CPU ratio to the peer per pair (by file stem), in-process ratio, small model seconds
CPU_RATIO = {"resnet50_int8": 1.0, "mobilenet_v2_f32": 1.25}
LARGE_CPU_RATIO = 0.5
IN_PROCESS_RATIO = 0.3
SMALL_CPU_SECONDS = 0.45

IN_PROCESS_CHILD = r'''
import json, os, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import nn2tosa
model, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def once():
    for suffix in (".tosa", ".mlirbc"):
        if os.path.exists(out + suffix): os.unlink(out + suffix)
    wall, cpu = time.perf_counter(), time.process_time()
    result = nn2tosa.convert(model)
    result.write(out + ".tosa", "tosa")
    result.write(out + ".mlirbc", "mlirbc")
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
cold = once()
warm = [once() for _ in range(runs)]
print(json.dumps({"cold": cold, "warm": warm}))
'''


class Contender:
    """One way of producing NAME.tosa + NAME.mlirbc: a list of commands run one after the other."""

    def __init__(self, name: str, bin_dir: Path):
        self.name = name
        self.bin = bin_dir

    def tool(self, name: str) -> str:
        path = self.bin / name
        if not path.exists():
            found = shutil.which(name)
            if found is None:
                raise SystemExit(f"{name} is not installed (pip install -e '.[test,bench]')")
            return found
        return str(path)


def run_steps(steps: list[list[str]], env: dict[str, str]) -> dict[str, float]:
    """Run the commands in turn: CPU and wall summed, peak RSS the largest."""
    runs = [run_measured(cmd, env) for cmd in steps]
    return {"cpu": sum(r["cpu"] for r in runs), "wall": sum(r["wall"] for r in runs),
            "rss_mb": max(r["rss_mb"] for r in runs)}


def peer_steps(peer: Contender, tflite: Path, out: Path) -> list[list[str]]:
    return [[peer.tool("tosa-converter-for-tflite"), str(tflite), "--bytecode", "-o", f"{out}.mlirbc"],
            [peer.tool("tosa-opt"), f"{out}.mlirbc", "--tosa-serialize", f"--tosa-flatbuffer-filename={out}.tosa",
             "-o", os.devnull]]


def nn2tosa_steps(build: Contender, model: Path, out: Path, kinds: tuple[str, ...] = ("tosa", "mlirbc")) -> list[list[str]]:
    cmd = [build.tool("nn2tosa"), "convert", str(model)]
    for kind in kinds:
        cmd += ["-o", f"{out}.{kind}"]
    return [cmd]


def clean(out: Path) -> None:
    for suffix in (".tosa", ".mlirbc"):
        Path(f"{out}{suffix}").unlink(missing_ok=True)


def interleaved(jobs: dict[str, list[list[str]]], runs: int, env: dict[str, str], out: Path) -> dict[str, dict]:
    """Run every job `runs` + 1 times, round by round (the first round unmeasured); medians."""
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in jobs}
    for i in range(runs + 1):
        for name, steps in jobs.items():
            clean(out)
            measured = run_steps(steps, env)
            if i:
                samples[name].append(measured)
    clean(out)
    return {name: {**{k: statistics.median(s[k] for s in runs_) for k in KEYS},
                   "runs": [{k: round(s[k], 4) for k in KEYS} for s in runs_]}
            for name, runs_ in samples.items()}


def in_process(build: Contender, model: Path, out: Path, runs: int, env: dict[str, str]) -> dict[str, Any]:
    python = build.tool("python")
    result = json.loads(run_measured([python, "-c", IN_PROCESS_CHILD, str(model), str(out), str(runs)],
                                     env)["stdout"].strip().splitlines()[-1])
    clean(out)
    warm = result["warm"]
    return {"cpu": statistics.median(r["cpu"] for r in warm), "wall": statistics.median(r["wall"] for r in warm),
            "cold_cpu": result["cold"]["cpu"]}


def measure_pair(tflite: Path, armnn: Path, builds: list[Contender], peer: Contender, runs: int,
                 env: dict[str, str], work: Path) -> dict[str, Any]:
    out = work / tflite.stem
    jobs = {"peer": peer_steps(peer, tflite, out)}
    for build in builds:
        jobs[build.name] = nn2tosa_steps(build, armnn, out)
    row = {"tflite": str(tflite), "armnn": str(armnn), "tflite_mb": tflite.stat().st_size / 1e6,
           "armnn_mb": armnn.stat().st_size / 1e6, "cli": interleaved(jobs, runs, env, out)}
    row["in_process"] = {b.name: in_process(b, armnn, out, runs, env) for b in builds}
    return row


def measure_small(builds: list[Contender], runs: int, env: dict[str, str], work: Path) -> dict[str, Any]:
    out = work / "small"
    jobs = {b.name: nn2tosa_steps(b, SMALL, out, ("tosa",)) for b in builds}
    jobs.update({f"{b.name} --help": [[b.tool("nn2tosa"), "--help"]] for b in builds})
    return interleaved(jobs, runs, env, out)


def measure_large(name: str, builds: list[Contender], peer: Contender, runs: int, env: dict[str, str],
                  work: Path, models: Path) -> dict[str, Any]:
    """nn2tosa's CLI, and the peer's tosa-opt step alone on the .mlirbc nn2tosa writes (a lower bound
    of the peer: its converter step is not counted)."""
    model = ensure_model(MODELS[name], models)
    out = work / name
    reference = work / f"{name}.reference"
    run_measured(nn2tosa_steps(builds[0], model, reference, ("mlirbc",))[0], env)
    jobs = {"peer tosa-opt step": [[peer.tool("tosa-opt"), f"{reference}.mlirbc", "--tosa-serialize",
                                    f"--tosa-flatbuffer-filename={out}.tosa", "-o", os.devnull]]}
    for build in builds:
        jobs[build.name] = nn2tosa_steps(build, model, out)
    row = {"model": name, "mb": model.stat().st_size / 1e6, "cli": interleaved(jobs, runs, env, out)}
    Path(f"{reference}.mlirbc").unlink(missing_ok=True)
    return row


# ------------------------------------------------------------------------------ report
def judge(results: dict[str, Any], build: str) -> list[dict[str, Any]]:
    rows = []

    def add(target: str, measured: float, limit: float, unit: str, note: str) -> None:
        rows.append({"target": target, "measured": measured, "limit": limit, "unit": unit, "note": note,
                     "met": measured <= limit})

    for stem, row in results["pairs"].items():
        peer, ours = row["cli"]["peer"], row["cli"][build]
        if stem in CPU_RATIO:
            add(f"{stem}: CLI CPU / peer", ours["cpu"] / peer["cpu"], CPU_RATIO[stem], "x",
                f"{ours['cpu']:.2f} s / {peer['cpu']:.2f} s")
        inner = row["in_process"][build]
        add(f"{stem}: in-process (warm) CPU / peer CLI", inner["cpu"] / peer["cpu"], IN_PROCESS_RATIO, "x",
            f"{inner['cpu']:.3f} s / {peer['cpu']:.2f} s")
        add(f"{stem}: CLI peak RSS / peer", ours["rss_mb"] / peer["rss_mb"], 1.0, "x",
            f"{ours['rss_mb']:.0f} MB / {peer['rss_mb']:.0f} MB")
    for name, row in results.get("large", {}).items():
        bound, ours = row["cli"]["peer tosa-opt step"], row["cli"][build]
        add(f"{name}: CLI CPU / peer (its tosa-opt step alone)", ours["cpu"] / bound["cpu"], LARGE_CPU_RATIO, "x",
            f"{ours['cpu']:.2f} s / {bound['cpu']:.2f} s; the peer's converter step would only add")
    if "small" in results:
        small = results["small"][build]
        add("examples/cnn_f32.armnn -> .tosa, CLI CPU", small["cpu"], SMALL_CPU_SECONDS, "s",
            f"wall {small['wall']:.2f} s, {small['rss_mb']:.0f} MB")
    return rows


def markdown(results: dict[str, Any]) -> str:
    builds = results["builds"]
    lines = [f"Machine: {results['machine']}; load average {results['load_average']} at the start, "
             f"{results.get('load_average_end', '?')} at the end; medians of {results['runs']} runs, interleaved.", ""]
    lines += ["| network | who | CPU s | wall s | peak RSS MB | CPU vs peer | in-process warm CPU s (vs peer) |",
              "|---|---|---|---|---|---|---|"]
    for stem, row in results["pairs"].items():
        peer = row["cli"]["peer"]
        lines.append(f"| {stem} ({row['armnn_mb']:.0f} MB) | peer | {peer['cpu']:.3f} | {peer['wall']:.3f} | "
                     f"{peer['rss_mb']:.0f} | 1 | |")
        for b in builds:
            r, inner = row["cli"][b], row["in_process"][b]
            lines.append(f"| | nn2tosa {b} | {r['cpu']:.3f} | {r['wall']:.3f} | {r['rss_mb']:.0f} | "
                         f"{r['cpu'] / peer['cpu']:.2f}x | {inner['cpu']:.3f} ({inner['cpu'] / peer['cpu']:.2f}x) |")
    for name, row in results.get("large", {}).items():
        bound = row["cli"]["peer tosa-opt step"]
        lines.append(f"| {name} ({row['mb']:.0f} MB) | peer's tosa-opt step alone | {bound['cpu']:.3f} | "
                     f"{bound['wall']:.3f} | {bound['rss_mb']:.0f} | 1 | |")
        for b in builds:
            r = row["cli"][b]
            lines.append(f"| | nn2tosa {b} | {r['cpu']:.3f} | {r['wall']:.3f} | {r['rss_mb']:.0f} | "
                         f"{r['cpu'] / bound['cpu']:.2f}x | |")
    if "small" in results:
        for b in builds:
            r, h = results["small"][b], results["small"][f"{b} --help"]
            lines.append(f"| cnn_f32.armnn -> .tosa | nn2tosa {b} | {r['cpu']:.3f} | {r['wall']:.3f} | "
                         f"{r['rss_mb']:.0f} | | |")
            lines.append(f"| `--help` | nn2tosa {b} | {h['cpu']:.3f} | {h['wall']:.3f} | {h['rss_mb']:.0f} | | |")
    lines += ["", f"Targets (issue 19), nn2tosa {builds[0]}:", "", "| target | measured | limit | met | note |",
              "|---|---|---|---|---|"]
    for t in results["targets"]:
        lines.append(f"| {t['target']} | {t['measured']:.2f} {t['unit']} | <= {t['limit']:.2f} {t['unit']} | "
                     f"{'yes' if t['met'] else 'NO'} | {t['note']} |")
    return "\n".join(lines) + "\n"


def pairs_in(folder: Path) -> list[tuple[Path, Path]]:
    return [(t, t.with_suffix(".armnn")) for t in sorted(folder.glob("*.tflite")) if t.with_suffix(".armnn").exists()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pair", nargs=2, action="append", default=[], metavar=("TFLITE", "ARMNN"),
                    help="a .tflite and the .armnn of the same network (repeatable)")
    ap.add_argument("--pairs-dir", type=Path, default=PAIRS, help=f"folder of NAME.tflite + NAME.armnn (default {PAIRS})")
    ap.add_argument("--runs", type=int, default=5, help="measured runs per contender (default 5)")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=BIN_DIR",
                    help="another nn2tosa build to measure in the same run: the bin folder of its environment")
    ap.add_argument("--no-large", action="store_true", help="skip the >= 100 MB synthetic networks")
    ap.add_argument("--models", type=Path, default=Path.home() / ".cache" / "nn2tosa-bench",
                    help="where bench/benchmark.py keeps its generated models")
    ap.add_argument("--out", type=Path, default=BENCH / "results")
    args = ap.parse_args()
    here = Path(sys.executable).parent
    builds = [Contender("this", here)] + [Contender(n, Path(d)) for n, d in (a.split("=", 1) for a in args.also)]
    peer = Contender("peer", here)
    pairs = [(Path(t), Path(a)) for t, a in args.pair] + (pairs_in(args.pairs_dir) if args.pairs_dir.exists() else [])
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="nn2tosa-side-by-side-"))
    env = child_env(work / "pycache")
    results: dict[str, Any] = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
                               "load_average": " ".join(f"{x:.1f}" for x in os.getloadavg()), "runs": args.runs,
                               "builds": [b.name for b in builds], "pairs": {}}
    try:
        for tflite, armnn in pairs:
            print(f"{tflite.stem} ...", file=sys.stderr)
            results["pairs"][tflite.stem] = measure_pair(tflite, armnn, builds, peer, args.runs, env, work)
        print("cnn_f32, --help ...", file=sys.stderr)
        results["small"] = measure_small(builds, args.runs, env, work)
        if not args.no_large:
            results["large"] = {}
            for name in LARGE:
                print(f"{name} ...", file=sys.stderr)
                results["large"][name] = measure_large(name, builds, peer, args.runs, env, work, args.models)
        results["load_average_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
        results["targets"] = judge(results, builds[0].name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_results(args.out, "side_by_side", results, markdown)


if __name__ == "__main__":
    main()
