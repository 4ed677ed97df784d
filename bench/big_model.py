"""A model past 2 GB: `nn2tosa convert M -o M.tosa` and `-o M.mlirbc` against a numpy copy of the file.

    python bench/big_model.py                 # generate once (~40 s), then 2 rounds: about 4 minutes
    python bench/big_model.py --runs 1 --layers 28 --models DIR

The model is the benchmark's transformer (bench/synthetic) at TinyLlama's width: hidden 2048, FFN 5632,
16 heads, sequence 8, fp16 weights as ExecuTorch's MPS backend writes them (one payload, 28 layers,
2.23 GB; weights of random bits, see `Network.random_bits`). Each round runs, in fresh processes:
the conversion to `.tosa` (its constants past 2 GB go after the flatbuffer, at each tensor's
offset/size), the conversion to `.mlirbc` (dense_resource blobs), and a Python process that reads the
file with `np.fromfile` and writes it once with `tofile` (the least a conversion to one output must
do). Outputs are deleted between runs. Reported: wall time (median over the rounds after a warm-up),
peak RSS (wait4), and the targets of issue 27: conversion <= 2x the copy, peak RSS <= 1.25x the
file, for both outputs. Results go to `bench/results/big_model.json` (--out DIR).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from benchmark import MB, child_env, nn2tosa_cmd, run_measured  # noqa: E402

COPY_CHILD = "import sys, numpy as np; np.fromfile(sys.argv[1], dtype=np.uint8).tofile(sys.argv[2])"
GENERATE_CHILD = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); from synthetic.mps import write_mps; "
                  "from synthetic.network import transformer; "
                  "write_mps(transformer(layers=int(sys.argv[3]), hidden=2048, heads=16, ffn=5632, seq=8, "
                  "weight_dtype=np.float16, random_bits=True), sys.argv[2], fp16=True)")
TARGET_TIME, TARGET_RSS = 2.0, 1.25


def ensure_model(folder: Path, layers: int) -> Path:
    path = folder / f"big_transformer_l{layers}_f16.mpsgraph"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        start = time.perf_counter()
        # in a child: this process stays small (children inherit the parent's ru_maxrss across fork)
        subprocess.run([sys.executable, "-c", GENERATE_CHILD, str(BENCH), str(tmp), str(layers)], check=True)
        tmp.replace(path)
        print(f"generated {path} ({path.stat().st_size / MB:.0f} MB) in {time.perf_counter() - start:.0f} s",
              file=sys.stderr)
    return path


def measure(path: Path, work: Path, runs: int, env: dict[str, str]) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    outputs = {"tosa": work / "big.tosa", "mlirbc": work / "big.mlirbc", "copy": work / "big.copy"}
    rows: dict[str, list[dict[str, Any]]] = {k: [] for k in outputs}
    for i in range(runs + 1):  # the first round warms the page cache and the pycache
        for kind, out in outputs.items():
            out.unlink(missing_ok=True)
            cmd = ([sys.executable, "-c", COPY_CHILD, str(path), str(out)] if kind == "copy"
                   else nn2tosa_cmd() + ["convert", str(path), "-o", str(out)])
            result = run_measured(cmd, env)
            out.unlink(missing_ok=True)
            if i:
                rows[kind].append(result)
            print(f"  round {i} {kind}: {result['wall']:.1f} s, {result['rss_mb']:.0f} MB", file=sys.stderr)
    size = path.stat().st_size / MB
    report: dict[str, Any] = {"file_mb": size, "runs": runs}
    copy = statistics.median(r["wall"] for r in rows["copy"])
    for kind, runs_of in rows.items():
        wall = statistics.median(r["wall"] for r in runs_of)
        rss = statistics.median(r["rss_mb"] for r in runs_of)
        report[kind] = {"wall": wall, "cpu": statistics.median(r["cpu"] for r in runs_of), "rss_mb": rss,
                        "time_vs_copy": wall / copy, "rss_vs_size": rss / size}
    return report


def markdown(report: dict[str, Any]) -> str:
    lines = [f"model {report['file_mb']:.0f} MB, median of {report['runs']} run(s)", "",
             "| command | wall | CPU | peak RSS | time / numpy copy | RSS / file size | met (<= 2x, <= 1.25x) |",
             "|---|---|---|---|---|---|---|"]
    for kind, label in (("tosa", "convert -o M.tosa"), ("mlirbc", "convert -o M.mlirbc"), ("copy", "numpy copy")):
        r = report[kind]
        met = "" if kind == "copy" else ("yes" if r["time_vs_copy"] <= TARGET_TIME and r["rss_vs_size"] <= TARGET_RSS
                                          else "**no**")
        lines.append(f"| {label} | {r['wall']:.1f} s | {r['cpu']:.1f} s | {r['rss_mb']:.0f} MB | "
                     f"{r['time_vs_copy']:.2f}x | {r['rss_vs_size']:.2f}x | {met} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=Path.home() / ".cache" / "nn2tosa-bench")
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--layers", type=int, default=28, help="80 MB each; 28 make 2.23 GB")
    args = parser.parse_args()
    path = ensure_model(args.models, args.layers)
    report = measure(path, args.models / "big_out", args.runs, child_env(args.models / "pycache"))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "big_model.json").write_text(json.dumps(report, indent=1) + "\n")
    print(markdown(report))


if __name__ == "__main__":
    main()
