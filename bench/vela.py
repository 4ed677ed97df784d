"""Vela on nn2tosa's TOSA against Vela on the TFLite model, for Ethos-U55 and Ethos-U85.

    python bench/vela.py [--filter SUBSTRING] [--jobs 2] [--accelerator ethos-u55-256 ...]
                         [--convert-option KEY=VALUE ...] [--isolate] [--markdown bench/results/vela.md]
                         [--json bench/results/vela.json]

Every `armnn/litert_*` corpus file (TFLiteConverter models parsed by Arm NN, each with its `.tflite`
beside it) and the bench ResNet-50 int8 (../shared/bench-pairs) is converted by nn2tosa to `.tosa`
(default semantics: LiteRT's integers) with the `--target` preset of each accelerator (ethos-u55 for
ethos-u55-256, ...; `--no-target` leaves it out), and Vela 5.2.0 (`ethos-u-vela`, the test extra)
compiles both the `.tosa` and the `.tflite` for each accelerator. The table gives, per route, whether Vela compiled
it (`yes`; for a `.tflite`, `cpu N` when N operators were left to the CPU, which TOSA input cannot do),
the `cycles_total` of Vela's summary, the TOSA / TFLite cycle ratio and Vela's message when it failed.
A model counts as compiled from TFLite only with every operator on the NPU.

`--partial` compares the routes where one of them leaves operators off the NPU: each model converted with
`--target PRESET --partial` (regions Vela runs whole, the rest to the host: nn2tosa/npu_regions.py), every
region compiled, against the `.tflite` with Vela's CPU fallback: the ops left to the host / CPU and the NPU
cycles of each route (`--markdown` then gets that table).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import CORPUS  # noqa: E402
from vela_harness import ACCELERATORS, VelaOutcome, compile_with_vela  # noqa: E402

BENCH_PAIRS = REPO.parent / "shared" / "bench-pairs"
EXTRA_MODELS = ("resnet50_int8",)


def models(substring: str = "") -> list[tuple[str, Path, Path]]:
    """(name, .armnn, .tflite) of every litert_* corpus file and the bench pairs, filtered by name."""
    found = []
    for armnn in sorted(CORPUS.glob("armnn/litert_*/*.armnn")):
        tflite = armnn.with_suffix(".tflite")
        if tflite.exists():
            found.append((str(armnn.relative_to(CORPUS / "armnn").with_suffix("")), armnn, tflite))
    for stem in EXTRA_MODELS:
        armnn, tflite = BENCH_PAIRS / f"{stem}.armnn", BENCH_PAIRS / f"{stem}.tflite"
        if armnn.exists() and tflite.exists():
            found.append((f"bench-pairs/{stem}", armnn, tflite))
    return [m for m in found if substring in m[0]]


def preset(accelerator: str) -> str:
    """nn2tosa's --target preset for a Vela accelerator configuration: ethos-u55-256 -> ethos-u55."""
    return accelerator.rsplit("-", 1)[0]


def convert_to_tosa(job: tuple[Path, Path, dict]) -> str | None:
    """nn2tosa's `.tosa` of the model at `out`; the error (first line) when it does not convert."""
    armnn, out, options = job
    import nn2tosa

    try:
        out.write_bytes(nn2tosa.convert(armnn, **options).tosa_flatbuffer())
    except Exception as err:  # recorded in the table: a conversion failure is a result here
        return f"nn2tosa: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    return None


def compile_job(job: tuple[Path, str, bool]) -> VelaOutcome:
    model, accelerator, isolate = job
    return compile_with_vela(model, accelerator, in_process=not isolate)


def partial_job(job: tuple[Path, str]) -> dict:
    """`--target --partial` of one model for one accelerator: the host ops, and Vela on every region."""
    armnn, accelerator = job
    import nn2tosa
    from nn2tosa.vela_support import compile_tosa

    try:
        result = nn2tosa.convert(armnn, target=preset(accelerator), partial=True)
    except Exception as err:  # recorded in the table
        return {"error": f"nn2tosa: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
    outcomes = [compile_tosa(data, accelerator) for data in result.tosa_flatbuffers()] if result.functions else []
    return {"error": "", "regions": len(outcomes), "all_on_npu": all(o.all_on_npu for o in outcomes),
            "cycles": sum(o.cycles or 0 for o in outcomes),
            "host": [f"{h['op'].split('.', 1)[-1]} '{h['name']}'" for h in result.partition["host"]],
            "vela_compiles": result.partition["npu"].get("vela_compiles", 0)}


def partial_markdown(rows: list[dict], accelerators: list[str]) -> str:
    lines = ["Vela 5.2.0: nn2tosa `--target PRESET --partial` (regions Vela runs whole, the rest to the host) against "
             "the `.tflite` with Vela's CPU fallback, for every model where either route leaves operators off the NPU.",
             "", "| model | NPU | host ops, TOSA route | CPU ops, TFLite route | NPU regions | NPU cycles, TOSA | "
             "NPU cycles, TFLite | left to the host (TOSA route) |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        for accel in accelerators:
            part, tflite = r[accel]["partial"], VelaOutcome(**r[accel]["tflite"])
            if part.get("error"):
                lines.append(f"| {r['model']} | {accel} | error | {tflite.cpu_ops} | | | | {part['error']} |")
                continue
            if not part["host"] and tflite.all_on_npu:
                continue
            cycles = f"{tflite.cycles:,}" if tflite.cycles is not None else ""
            lines.append(f"| {r['model']} | {accel} | {len(part['host'])} | {tflite.cpu_ops} | {part['regions']} | "
                         f"{part['cycles']:,} | {cycles} | {', '.join(part['host'])} |")
    return "\n".join(lines) + "\n"


def _cell(outcome: VelaOutcome | None) -> tuple[str, str]:
    if outcome is None:
        return "no (not converted)", ""
    if not outcome.compiled:
        return "no", ""
    status = "yes" if outcome.all_on_npu else f"cpu {outcome.cpu_ops}"
    return status, f"{outcome.cycles:,}" if outcome.cycles is not None else ""


def markdown(rows: list[dict], accelerators: list[str], convert_options: dict) -> str:
    lines = []
    how = ", ".join(f"{k}={v}" for k, v in convert_options.items()) or "default options"
    lines.append(f"Vela 5.2.0 on nn2tosa's `.tosa` ({how}) and on the `.tflite` of {len(rows)} models.")
    lines.append("")
    for accel in accelerators:
        tosa = sum(r[accel]["tosa"] is not None and r[accel]["tosa"]["compiled"] for r in rows)
        tflite = sum(r[accel]["tflite"]["compiled"] and not r[accel]["tflite"]["cpu_ops"] for r in rows)
        partial = sum(r[accel]["tflite"]["compiled"] and r[accel]["tflite"]["cpu_ops"] > 0 for r in rows)
        missing = [r["model"] for r in rows if r[accel]["tflite"]["compiled"] and not r[accel]["tflite"]["cpu_ops"]
                   and not (r[accel]["tosa"] and r[accel]["tosa"]["compiled"])]
        both = [(r[accel]["tosa"]["cycles"], r[accel]["tflite"]["cycles"]) for r in rows
                if r[accel]["tosa"] and r[accel]["tosa"]["cycles"] and r[accel]["tflite"]["compiled"]
                and not r[accel]["tflite"]["cpu_ops"] and r[accel]["tflite"]["cycles"]]
        total_tosa, total_tflite = sum(t for t, _ in both), sum(f for _, f in both)
        lines.append(f"- **{accel}**: from TOSA {tosa} of {len(rows)} compile; from TFLite {tflite} with every "
                     f"operator on the NPU ({partial} more with CPU operators). Compiled from TFLite but not from "
                     f"TOSA: {', '.join(missing) if missing else 'none'}. Cycles over the {len(both)} models both "
                     f"routes compile: TOSA {total_tosa:,}, TFLite {total_tflite:,}"
                     f"{f' ({total_tosa / total_tflite:.2f}x)' if total_tflite else ''}; TOSA at or below TFLite on "
                     f"{sum(t <= f for t, f in both)} of them.")
    lines.append("")
    for accel in accelerators:
        lines += [f"### {accel}", "", "| model | TOSA | TFLite | TOSA cycles | TFLite cycles | ratio | Vela's message |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            cell = r[accel]
            tosa = VelaOutcome(**cell["tosa"]) if cell["tosa"] else None
            tflite = VelaOutcome(**cell["tflite"])
            (ts, tc), (fs, fc) = _cell(tosa), _cell(tflite)
            ratio = ""
            if tosa and tosa.cycles and tflite.all_on_npu and tflite.cycles:
                ratio = f"{tosa.cycles / tflite.cycles:.2f}"
            message = r["convert_error"] or (tosa.message if tosa else "")
            if not tflite.compiled:
                message = (message + "; " if message else "") + f"TFLite: {tflite.message}"
            lines.append(f"| {r['model']} | {ts} | {fs} | {tc} | {fc} | {ratio} | {message.replace('|', '/')} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--filter", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--accelerator", action="append", choices=ACCELERATORS,
                    help="an accelerator configuration (repeatable; default both)")
    ap.add_argument("--convert-option", action="append", default=[], metavar="KEY=VALUE",
                    help="an option of nn2tosa.convert, e.g. target=ethos-u55 (repeatable)")
    ap.add_argument("--no-target", action="store_true", help="convert without the accelerator's --target preset")
    ap.add_argument("--partial", action="store_true",
                    help="compare --target --partial (regions and host ops) with the .tflite's CPU fallback")
    ap.add_argument("--isolate", action="store_true",
                    help="run the `vela` command for each compilation instead of Vela in the worker processes")
    ap.add_argument("--markdown", default=str(REPO / "bench" / "results" / "vela.md"))
    ap.add_argument("--json", default=str(REPO / "bench" / "results" / "vela.json"))
    args = ap.parse_args(argv)
    accelerators = args.accelerator or list(ACCELERATORS)
    options = dict(item.split("=", 1) for item in args.convert_option)
    chosen = models(args.filter)
    if args.partial:
        return main_partial(chosen, accelerators, args)
    with tempfile.TemporaryDirectory(prefix="nn2tosa-vela-") as work, multiprocessing.Pool(args.jobs) as pool:
        conversions = [(armnn, Path(work) / f"{name.replace('/', '__')}.{accel}.tosa",
                        options if args.no_target else {"target": preset(accel), **options})
                       for name, armnn, _ in chosen for accel in accelerators]
        errors = dict(zip((out for _, out, _ in conversions), pool.map(convert_to_tosa, conversions)))
        jobs = []
        for _, tosa, _ in conversions:
            if errors[tosa] is None:
                jobs.append((tosa, tosa.suffixes[-2][1:]))
        jobs += [(tflite, accel) for _, _, tflite in chosen for accel in accelerators]
        outcomes = dict(zip(jobs, pool.map(compile_job, [(*job, args.isolate) for job in jobs], chunksize=1)))
        rows = []
        for name, _, tflite in chosen:
            row = {"model": name, "convert_error": ""}
            for accel in accelerators:
                tosa = Path(work) / f"{name.replace('/', '__')}.{accel}.tosa"
                row["convert_error"] = row["convert_error"] or errors[tosa] or ""
                t = outcomes.get((tosa, accel))
                row[accel] = {"tosa": t.as_dict() if t else None, "tflite": outcomes[(tflite, accel)].as_dict()}
            rows.append(row)
    described = options if args.no_target else {"target": "the accelerator's preset", **options}
    text = markdown(rows, accelerators, described)
    return publish(text, rows, args)


def publish(text: str, rows: list[dict], args: argparse.Namespace) -> int:
    """Print the table and write it (--markdown) and the rows (--json)."""
    print(text)
    for path, content in ((args.markdown, text), (args.json, json.dumps(rows, indent=1) + "\n")):
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(content)
    return 0


def main_partial(chosen: list[tuple[str, Path, Path]], accelerators: list[str], args: argparse.Namespace) -> int:
    with multiprocessing.Pool(args.jobs) as pool:
        parts = pool.map(partial_job, [(armnn, accel) for _, armnn, _ in chosen for accel in accelerators], chunksize=1)
        tflites = pool.map(compile_job, [(tflite, accel, args.isolate) for _, _, tflite in chosen
                                         for accel in accelerators], chunksize=1)
    rows, k = [], 0
    for name, _, _ in chosen:
        row: dict = {"model": name}
        for accel in accelerators:
            row[accel] = {"partial": parts[k], "tflite": tflites[k].as_dict()}
            k += 1
        rows.append(row)
    text = partial_markdown(rows, accelerators)
    return publish(text, rows, args)


if __name__ == "__main__":
    sys.exit(main())
