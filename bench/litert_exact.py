"""How far each LiteRT-quantized corpus file is from LiteRT's integers (and from Arm NN CpuRef's).

    python bench/litert_exact.py [--semantics litert|cpuref] [--filter SUBSTRING] [--jobs 2]
                                 [--json out.json] [--markdown out.md]

Every manifest entry with `litert_files` (armnn/litert_*: TFLiteConverter models parsed by Arm NN,
with the outputs of LiteRT's reference kernels) is converted, run on the TOSA reference model, and
compared element by element with LiteRT's outputs and with CpuRef's: exact elements, elements off,
max LSB. The whole-network rows (q8_mobilenet_like, q8_resnet_like, q8_transformer_like) come last.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from corpus_harness import (convert_entry, data_path, entries, load_expected, load_inputs,  # noqa: E402
                            run_reference)

WHOLE_NETWORKS = ("q8_mobilenet_like", "q8_resnet_like", "q8_transformer_like")


def distance(expected: list[np.ndarray], actual: list[np.ndarray]) -> dict:
    """Elements, elements off and max |difference| over all outputs (integers compared as stored)."""
    total = off = worst = 0
    for want, got in zip(expected, actual, strict=True):
        got = np.asarray(got).reshape(want.shape)
        if got.dtype != want.dtype and got.dtype.itemsize == want.dtype.itemsize:
            got = got.view(want.dtype)
        diff = np.abs(want.astype(np.int64) - got.astype(np.int64))
        total += diff.size
        off += int((diff > 0).sum())
        worst = max(worst, int(diff.max()) if diff.size else 0)
    return {"elements": total, "off": off, "max_lsb": worst}


def measure(args: tuple[dict, str]) -> dict:
    e, semantics = args
    row = {"file": e["file"]}
    conv = convert_entry(e, semantics=semantics)
    if conv.unsupported:
        return {**row, "outcome": "unsupported", "reasons": conv.unsupported}
    outputs, status = run_reference(conv.tosa, load_inputs(e))
    if status != "TOSA_VALID":
        return {**row, "outcome": status}
    litert = [np.load(data_path(e, f)) for f in e["litert_files"]]
    row["litert"] = distance(litert, outputs)
    row["cpuref"] = distance(load_expected(e), outputs)
    row["outcome"] = "exact" if row["litert"]["off"] == 0 else "off"
    return row


def markdown(rows: list[dict], semantics: str) -> str:
    exact = sum(r["outcome"] == "exact" for r in rows)
    lines = [f"LiteRT-quantized corpus files under `--semantics {semantics}`: **{exact} of {len(rows)} exact to "
             "LiteRT**.", "", "| file | outcome | elements | off vs LiteRT | max LSB vs LiteRT | off vs CpuRef | "
             "max LSB vs CpuRef |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "litert" not in r:
            lines.append(f"| {r['file']} | {r['outcome']} | | | | | |")
            continue
        lt, cr = r["litert"], r["cpuref"]
        lines.append(f"| {r['file']} | {r['outcome']} | {lt['elements']} | {lt['off']} | {lt['max_lsb']} | "
                     f"{cr['off']} | {cr['max_lsb']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--semantics", default="litert", choices=("litert", "cpuref"))
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    args = ap.parse_args(argv)
    chosen = entries(lambda e: bool(e.get("litert_files")) and args.filter in e["file"])
    chosen.sort(key=lambda e: (Path(e["file"]).stem in WHOLE_NETWORKS, e["file"]))
    with multiprocessing.Pool(args.jobs) as pool:
        rows = pool.map(measure, [(e, args.semantics) for e in chosen])
    text = markdown(rows, args.semantics)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
