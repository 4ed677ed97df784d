"""`nn2tosa compare` against `nn2tosa check` on ResNet-50 int8: wall time, CPU time and peak RSS.

    python bench/compare.py [--models DIR] [--runs N] [--out DIR]

The model is bench/benchmark.py's resnet50_int8_23.08 (generated once into --models). Measured, each
in a fresh process (bench/benchmark.py's run_measured: wait4's rusage):
- check:            nn2tosa check M                     (convert, one reference-model run, random inputs)
- compare npy:      nn2tosa compare M --reference DIR   (DIR: the float reference's tensors, saved by a
                                                         previous run, so that this is the dump's cost alone)
- compare float:    nn2tosa compare M                   (the float64 numpy reference computed as well)
The intermediates are compared as the reference model writes them, so compare's peak RSS should stay
near check's plus one tensor, not grow with the sum of the activations. Results: --out/compare.json
and stdout; docs/compare.md quotes them.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from benchmark import MODELS, child_env, ensure_model, nn2tosa_cmd, run_measured  # noqa: E402


def _reference_directory(model: Path, folder: Path) -> None:
    """The float reference's tensors as a .npy directory (named as --list-tensors names them)."""
    import numpy as np

    from nn2tosa.check import prepare, random_inputs
    from nn2tosa.comparison.points import place, source_points
    from nn2tosa.comparison.references import FloatReference
    from nn2tosa.lowering.program import split_program

    runnable = prepare(str(model))
    statuses = {s.loc: s.status for s in runnable.result.report.source_ops if s.status != "constant"}
    points, by_value = source_points(runnable.source, statuses)
    functions, branches = split_program(runnable.result.functions)
    place(points, runnable.source, by_value, [functions[0], *branches.values()])
    inputs = random_inputs(runnable.inputs, 0)
    reference = FloatReference(runnable.source, inputs, points)
    for p, array in zip([p for p in points if p.status == "input"], inputs):
        np.save(folder / p.file_name, array)
    for p in points:
        got = reference.get(p)
        if got is not None:
            np.save(folder / p.file_name, got[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path.home() / ".cache" / "nn2tosa-bench")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("bench-results"))
    args = ap.parse_args()
    model = ensure_model(MODELS["resnet50_int8_23.08"], args.models)
    with tempfile.TemporaryDirectory() as tmp:
        env = child_env(Path(tmp) / "pycache")
        reference = Path(tmp) / "reference"
        reference.mkdir()
        _reference_directory(model, reference)
        commands = {
            "check": nn2tosa_cmd() + ["check", str(model)],
            "compare npy": nn2tosa_cmd() + ["compare", str(model), "--reference", str(reference)],
            "compare float": nn2tosa_cmd() + ["compare", str(model)],
        }
        results = {}
        for name, cmd in commands.items():
            # (compare exits 1 when a layer is beyond tolerance: measured all the same)
            runs = [run_measured(cmd, env, ok_codes=(0, 1)) for _ in range(args.runs)]
            results[name] = {k: statistics.median(r[k] for r in runs) for k in ("wall", "cpu", "rss_mb")}
            print(f"{name:14s} wall {results[name]['wall']:7.1f} s  cpu {results[name]['cpu']:7.1f} s  "
                  f"peak RSS {results[name]['rss_mb']:7.0f} MB", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare.json").write_text(json.dumps({"model": model.name, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
