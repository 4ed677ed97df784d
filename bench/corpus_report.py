"""Convert every corpus model, run it on the TOSA reference model, judge it, and tabulate.

    python bench/corpus_report.py [--filter SUBSTRING] [--jobs 2] [--json out.json] [--markdown out.md]

Per file: converted / unsupported (with reasons) / crashed, reference-model status, and the judgement
against the source runtime's outputs (tests/corpus_harness.py: the corpus README's tolerance classes);
quantized files are converted with semantics="cpuref", since CpuRef computed their outputs
(bench/litert_exact.py judges the default, LiteRT's integers, against LiteRT's outputs).
Tables: by corpus folder, by Arm NN layer type or MPS node type (a file counts for every type it
contains), max error per whole model, exact / off-by-one / worse integers per quantized file, and
every unsupported reason with its count.
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from corpus_harness import (convert_entry, entries, judge, load_expected, load_inputs,  # noqa: E402
                            run_reference)


def check(e: dict) -> dict:
    row = {"file": e["file"], "tolerance": e["tolerance"], "types": sorted(e["histogram"]),
           "has_expected": bool(e["expected_files"])}
    start = time.perf_counter()
    try:
        conv = convert_entry(e, semantics="cpuref")  # judged against CpuRef (and PyTorch)
    except Exception as err:  # a bug: record it, keep going
        row.update(outcome="crash", error=f"{type(err).__name__}: {err}", trace=traceback.format_exc(limit=3))
        return row
    row["convert_s"] = round(time.perf_counter() - start, 3)
    if conv.unsupported:
        row.update(outcome="unsupported", reasons=conv.unsupported)
        return row
    try:
        outputs, status = run_reference(conv.tosa, load_inputs(e))
    except Exception as err:
        row.update(outcome="reference-error", error=f"{type(err).__name__}: {err}")
        return row
    row["status"] = status
    if status != "TOSA_VALID":
        row["outcome"] = "invalid"
        return row
    if not e["expected_files"]:
        row["outcome"] = "valid-no-reference"
        return row
    j = judge(load_expected(e), outputs, e["tolerance"])
    row.update(outcome="match" if j.ok else "mismatch", max_error=j.max_error, exact=j.exact,
               off_by_one=j.off_by_one, worse=j.worse, problems=j.problems)
    return row


GOOD = {"match", "valid-no-reference"}


def folder(row: dict) -> str:
    parts = row["file"].split("/")
    return "/".join(parts[:2]) + ("/" + parts[2] if len(parts) > 3 else "")


def tables(rows: list[dict]) -> str:
    out = []
    by_folder: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in rows:
        by_folder[folder(r)][r["outcome"]] += 1
    outcomes = ["match", "valid-no-reference", "mismatch", "unsupported", "invalid", "crash", "reference-error"]
    out.append("| folder | files | " + " | ".join(outcomes) + " |")
    out.append("|---|---|" + "---|" * len(outcomes))
    for f, c in sorted(by_folder.items()):
        out.append(f"| {f} | {sum(c.values())} | " + " | ".join(str(c[o]) for o in outcomes) + " |")
    total = collections.Counter(r["outcome"] for r in rows)
    out.append(f"| **all** | {len(rows)} | " + " | ".join(str(total[o]) for o in outcomes) + " |")
    out.append("")
    by_type: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        fmt = r["file"].split("/")[0]
        for t in r["types"]:
            by_type[f"{fmt} {t}"][1] += 1
            by_type[f"{fmt} {t}"][0] += r["outcome"] in GOOD
    out.append("| type | good / files |")
    out.append("|---|---|")
    for t, (good, n) in sorted(by_type.items()):
        out.append(f"| {t} | {good} / {n}{'' if good == n else ' **'} |")
    out.append("")
    models = [r for r in rows if "/perlayer" not in r["file"] and "/perop" not in r["file"]]
    out.append("| whole model | outcome | max error |")
    out.append("|---|---|---|")
    for r in models:
        out.append(f"| {r['file']} | {r['outcome']} | {r.get('max_error', '')} |")
    out.append("")
    quantized = [r for r in rows if r["tolerance"] == "quantized" and r["outcome"] in ("match", "mismatch")]
    if quantized:
        out.append("| quantized file | exact | off by one | worse |")
        out.append("|---|---|---|---|")
        for r in quantized:
            out.append(f"| {r['file']} | {r['exact']} | {r['off_by_one']} | {r['worse']} |")
        totals = [sum(r[k] for r in quantized) for k in ("exact", "off_by_one", "worse")]
        out.append(f"| **{len(quantized)} files** | {totals[0]} | {totals[1]} | {totals[2]} |")
        out.append("")
    reasons = collections.Counter()
    for r in rows:
        for reason in r.get("reasons", []):
            reasons[reason.split(": ", 1)[-1] if "): " not in reason else reason.split("): ", 1)[1]] += 1
        if r["outcome"] in ("crash", "reference-error"):
            reasons["CRASH " + r["error"][:150]] += 1
        if r["outcome"] == "mismatch":
            reasons["MISMATCH " + r["file"] + " " + "; ".join(r["problems"])[:150]] += 1
    out.append("| problem | files |")
    out.append("|---|---|")
    for reason, n in reasons.most_common():
        out.append(f"| {reason} | {n} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--filter", default="", help="only files whose path contains this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--markdown", help="write the tables here (default stdout)")
    args = ap.parse_args()
    todo = entries(lambda e: args.filter in e["file"])
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=200) as pool:
        rows = pool.map(check, todo, chunksize=4)
    text = tables(rows) + f"\n\n{len(rows)} files in {time.perf_counter() - start:.0f} s\n"
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
