"""The model-zoo benchmark: every model that exists as both a `.tflite` and the `.armnn` Arm NN's TfLite parser
wrote from it, converted to `.tosa` + `.mlirbc` by one `nn2tosa convert ... --out-dir` and by the peer, Arm's
C++ converter, run once per `.tflite` as its users run it:

    tosa-converter-for-tflite X.tflite --bytecode -o X.mlirbc
    tosa-opt X.mlirbc --tosa-serialize --tosa-flatbuffer-filename=X.tosa

(`pip install -e '.[test,bench]'`: the peer is pinned in the `bench` extra, tosa-opt comes with tosa-tools.)
Pairs: the corpus's armnn/tflite_*/ and armnn/litert_*/ folders and ../shared/bench-pairs, plus any folder
given with --pairs; a model the peer cannot convert is left out on both sides (zoo.json lists them). Whole
processes, CPU time (user + system, children included) and wall time; one unmeasured warm-up round, then
--runs rounds with peer and nn2tosa interleaved; medians. Target (issue 19):
nn2tosa's total CPU <= 0.5x the peer's sum. Writes bench/results/zoo.json and zoo.md (--out).

    python bench/zoo.py                       # 3 rounds, nn2tosa with -j 1 and -j 2
    python bench/zoo.py --runs 1 --only 'q8_*'
    python bench/zoo.py --cluster --runs 1    # the same zoo on a 2-worker Dask LocalCluster against -j 2

--cluster (issue 30; needs the `cluster` extra) measures the zoo's models the peer converts (one peer pass picks
them) with `convert --out-dir --scheduler` on a local cluster of 2 one-thread worker processes
(nn2tosa.zoo_dask.local_cluster) and with the local pool `-j 2`, one warm-up round each (the cluster's workers
start their converter processes then), and gives the walls, the CPU of everything taking part (the client, the
scheduler and nannies in this process, the workers and their converter processes) and the cluster's overhead per
model. Writes zoo_cluster.json / zoo_cluster.md.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import child_env, nn2tosa_cmd, run_measured, write_results  # noqa: E402  (the same process measurement)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PAIR_FOLDERS = [*sorted((SHARED / "corpus" / "armnn").glob("tflite_*")),
                *sorted((SHARED / "corpus" / "armnn").glob("litert_*")), SHARED / "bench-pairs"]
PEER = "tosa-converter-for-tflite"
TARGET_RATIO = 0.5


def find_pairs(folders: list[Path], only: list[str]) -> list[tuple[Path, Path]]:
    """(X.tflite, X.armnn) for every .tflite with its .armnn beside it, whose stem matches an --only pattern."""
    pairs = []
    for folder in folders:
        for tflite in sorted(folder.glob("*.tflite")):
            armnn = tflite.with_suffix(".armnn")
            if armnn.exists() and (not only or any(fnmatch.fnmatch(tflite.stem, p) for p in only)):
                pairs.append((tflite, armnn))
    return pairs


def tool(name: str) -> str:
    """A console script of this environment (where the peer and tosa-opt install), else from PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        sys.exit(f"bench/zoo.py: {name} not found: pip install -e '.[test,bench]'")
    return found


def run_peer(pairs: list[tuple[Path, Path]], work: Path, env: dict[str, str],
             failures: dict[str, str] | None = None) -> dict[str, Any]:
    """The peer on every .tflite: its two processes per model; per-model and total CPU and wall. A model it
    cannot convert goes into `failures` (path: its error) when given, else is an error."""
    converter, opt = tool(PEER), tool("tosa-opt")
    per_model = {}
    for k, (tflite, _) in enumerate(pairs):
        stem = work / f"{k}_{tflite.stem}"
        mlirbc, tosa = f"{stem}.mlirbc", f"{stem}.tosa"
        try:
            convert = run_measured([converter, str(tflite), "--bytecode", "-o", mlirbc], env)
            serialize = run_measured([opt, mlirbc, "--tosa-serialize", f"--tosa-flatbuffer-filename={tosa}"], env)
        except RuntimeError as e:
            if failures is None:
                raise
            said = next((line for line in str(e).splitlines() if "error:" in line), str(e))
            failures[str(tflite)] = said[said.find("error:"):][:300]
            continue
        per_model[str(tflite)] = {"cpu": convert["cpu"] + serialize["cpu"], "wall": convert["wall"] + serialize["wall"],
                                  "rss_mb": max(convert["rss_mb"], serialize["rss_mb"])}
    return {"cpu": sum(m["cpu"] for m in per_model.values()), "wall": sum(m["wall"] for m in per_model.values()),
            "models": per_model}


def run_nn2tosa(pairs: list[tuple[Path, Path]], work: Path, env: dict[str, str], jobs: int) -> dict[str, Any]:
    """One `nn2tosa convert` of every .armnn into a directory; the process's CPU (its workers included) and
    wall, and each model's conversion CPU from --summary-json."""
    out, summary = work / f"nn2tosa_j{jobs}", work / f"nn2tosa_j{jobs}.json"
    shutil.rmtree(out, ignore_errors=True)  # as for the peer: outputs written anew, not replaced
    run = run_measured([*nn2tosa_cmd(), "convert", *(str(a) for _, a in pairs), "--out-dir", str(out),
                        "--emit", "tosa,mlirbc", "-j", str(jobs), "--summary-json", str(summary)], env)
    results = json.loads(summary.read_text())["results"]
    failed = [r["input"] for r in results if r["status"] != "ok"]
    if failed:
        raise RuntimeError(f"nn2tosa did not convert {failed}")
    return {"cpu": run["cpu"], "wall": run["wall"], "rss_mb": run["rss_mb"],
            "models": {r["input"]: {"cpu": r["cpu_seconds"], "wall": r["seconds"]} for r in results}}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the totals, and of each model's numbers, over the rounds."""
    totals = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "models"}
    models = {m: {k: statistics.median(r["models"][m][k] for r in runs) for k in runs[0]["models"][m]}
              for m in runs[0]["models"]}
    return {**totals, "models": models}


def markdown(results: dict[str, Any]) -> str:
    peer = results["peer"]
    failed = results["peer_failures"]
    lines = [f"{results['models']} models ({results['machine']}; {results['runs']} rounds, medians; "
             f"seconds unless marked)" + (f"; left out: the {len(failed)} `.tflite` the peer cannot convert ("
                                          + ", ".join(Path(f).stem for f in failed) + ")" if failed else ""), "",
             "| run | processes | CPU | wall | CPU vs peer |", "|---|---|---|---|---|",
             f"| peer: `{PEER}` + `tosa-opt --tosa-serialize`, per model | {2 * results['models']} "
             f"| {peer['cpu']:.2f} | {peer['wall']:.2f} | 1.00x |"]
    for name, run in results["nn2tosa"].items():
        lines.append(f"| nn2tosa: one `convert --out-dir --emit tosa,mlirbc {name}` | 1 + workers "
                     f"| {run['cpu']:.2f} | {run['wall']:.2f} | {run['cpu'] / peer['cpu']:.2f}x |")
    for t in results["targets"]:
        lines.append("")
        lines.append(f"Target: {t['target']}: {t['measured']:.2f}x (limit {t['limit']}x): "
                     f"{'met' if t['met'] else 'NOT met'}.")
    one = next(iter(results["nn2tosa"].values()))
    startup = one["cpu"] - sum(m["cpu"] for m in one["models"].values())
    lines += ["", f"Of nn2tosa's CPU, the conversions in the workers take {one['cpu'] - startup:.2f} s; the rest, "
                  f"{startup:.2f} s, is the one start-up (imports before the workers fork) and the process overhead.",
              "", "The models that take longest (CPU; nn2tosa: the model's conversion in its worker):", "",
              "| model | peer | nn2tosa | ratio |", "|---|---|---|---|"]
    rows = sorted(peer["models"], key=lambda m: -peer["models"][m]["cpu"])[:8]
    for tflite in rows:
        armnn = str(Path(tflite).with_suffix(".armnn"))
        ours = one["models"][armnn]["cpu"]
        theirs = peer["models"][tflite]["cpu"]
        lines.append(f"| {Path(tflite).parent.name}/{Path(tflite).stem} | {theirs:.3f} | {ours:.3f} "
                     f"| {ours / theirs:.2f}x |")
    return "\n".join(lines) + "\n"


def run_cluster_mode(pairs: list[tuple[Path, Path]], work: Path, env: dict[str, str], runs: int) -> dict[str, Any]:
    """The zoo with -j 2 and on a 2-worker LocalCluster, interleaved, one warm-up round: per round each side's wall,
    CPU (the cluster's: the client process + this process's scheduler and nannies + the workers' process trees)
    and the models' conversion seconds from --summary-json."""
    import psutil

    from nn2tosa.zoo_dask import local_cluster

    me = psutil.Process()

    def tree_cpu() -> float:
        total = 0.0
        for p in [me, *me.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    def one(where: list[str], tag: str) -> dict[str, Any]:
        out, summary = work / f"nn2tosa_{tag}", work / f"nn2tosa_{tag}.json"
        shutil.rmtree(out, ignore_errors=True)
        before = tree_cpu()
        run = run_measured([*nn2tosa_cmd(), "convert", *(str(a) for _, a in pairs), "--out-dir", str(out),
                            "--emit", "tosa,mlirbc", *where, "--summary-json", str(summary)], env)
        results = json.loads(summary.read_text())["results"]
        failed = [r["input"] for r in results if r["status"] != "ok"]
        if failed:
            raise RuntimeError(f"nn2tosa {tag} did not convert {failed}")
        return {"wall": run["wall"], "client_cpu": run["cpu"], "cpu": run["cpu"] + tree_cpu() - before,
                "conversion_seconds": sum(r["seconds"] for r in results),
                "conversion_cpu": sum(r["cpu_seconds"] for r in results)}

    cluster = local_cluster(workers=2, threads_per_worker=1)
    rounds: dict[str, list[dict[str, Any]]] = {"-j 2": [], "cluster": []}
    try:
        for round_ in range(runs + 1):  # round 0 warms both sides
            local = one(["-j", "2"], "j2")
            on_cluster = one(["--scheduler", cluster.scheduler_address], "cluster")
            print(f"round {round_}{' (warm-up)' if round_ == 0 else ''}: -j 2 {local['wall']:.2f} s wall, "
                  f"cluster {on_cluster['wall']:.2f} s wall", file=sys.stderr)
            if round_ > 0:
                rounds["-j 2"].append(local)
                rounds["cluster"].append(on_cluster)
    finally:
        cluster.close()
    return {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in rounds.items()}


def cluster_markdown(results: dict[str, Any]) -> str:
    local, cluster, n = results["runs_by_pool"]["-j 2"], results["runs_by_pool"]["cluster"], results["models"]
    lines = [f"{n} models, `.tosa` + `.mlirbc` each ({results['machine']}; {results['runs']} round(s) after a "
             "warm-up, medians; seconds)", "",
             "| run | wall | CPU (all processes) | client CPU | conversions' wall (sum) | conversions' CPU (sum) |",
             "|---|---|---|---|---|---|"]
    for name, r in (("local pool `-j 2`", local), ("2-worker LocalCluster `--scheduler`", cluster)):
        lines.append(f"| {name} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['client_cpu']:.2f} "
                     f"| {r['conversion_seconds']:.2f} | {r['conversion_cpu']:.2f} |")
    lines += ["", f"The cluster's overhead per model: {1000 * (cluster['wall'] - local['wall']) / n:.0f} ms of wall "
                  f"and {1000 * (cluster['cpu'] - local['cpu']) / n:.0f} ms of CPU (its wall and CPU minus the "
                  f"local pool's, over {n} models)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="measured rounds (default 3), after one warm-up")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="nn2tosa's -j values (default 1 2)")
    parser.add_argument("--pairs", type=Path, nargs="*", default=[], help="more folders of X.tflite + X.armnn")
    parser.add_argument("--only", nargs="*", default=[], metavar="GLOB", help="only models whose stem matches")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results", help="where zoo.json/zoo.md go")
    parser.add_argument("--cluster", action="store_true",
                        help="the zoo on a 2-worker Dask LocalCluster against -j 2 (zoo_cluster.json/.md)")
    args = parser.parse_args()
    pairs = find_pairs(PAIR_FOLDERS + args.pairs, args.only)
    if not pairs:
        sys.exit("bench/zoo.py: no .tflite with an .armnn beside it (is ../shared there?)")
    print(f"{len(pairs)} models: {', '.join(sorted({str(t.parent.relative_to(t.parent.parent)) for t, _ in pairs}))}",
          file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="nn2tosa-zoo-") as tmp:
        work = Path(tmp)
        env = child_env(work / "pycache")
        failures: dict[str, str] = {}  # what the peer cannot convert is left out on both sides
        run_peer(pairs, work, env, failures)  # (and warms the page cache and the pycache)
        pairs = [(t, a) for t, a in pairs if str(t) not in failures]
        print(f"the peer converts {len(pairs)} of them", file=sys.stderr)
        if args.cluster:
            by_pool = run_cluster_mode(pairs, work, env, args.runs)
            write_results(args.out, "zoo_cluster", {
                "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
                           f"Python {platform.python_version()}",
                "runs": args.runs, "models": len(pairs), "peer_failures": failures, "runs_by_pool": by_pool,
            }, cluster_markdown)
            return
        peer_runs: list[dict[str, Any]] = []
        our_runs: dict[int, list[dict[str, Any]]] = {j: [] for j in args.jobs}
        for round_ in range(args.runs + 1):  # round 0 warms nn2tosa's side
            peer = run_peer(pairs, work, env)
            ours = {j: run_nn2tosa(pairs, work, env, j) for j in args.jobs}
            print(f"round {round_}{' (warm-up)' if round_ == 0 else ''}: peer {peer['cpu']:.2f} s CPU, "
                  + ", ".join(f"nn2tosa -j {j} {r['cpu']:.2f} s CPU" for j, r in ours.items()), file=sys.stderr)
            if round_ > 0:
                peer_runs.append(peer)
                for j, r in ours.items():
                    our_runs[j].append(r)
    peer = median_run(peer_runs)
    nn2tosa = {f"-j {j}": median_run(runs) for j, runs in our_runs.items()}
    ratio = min(r["cpu"] for r in nn2tosa.values()) / peer["cpu"]
    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
                   f"Python {platform.python_version()}",
        "runs": args.runs, "models": len(pairs), "pairs": [[str(t), str(a)] for t, a in pairs],
        "peer_failures": failures,
        "peer": peer, "nn2tosa": nn2tosa,
        "targets": [{"target": "zoo: nn2tosa total CPU / the peer's sum", "measured": ratio, "limit": TARGET_RATIO,
                     "met": ratio <= TARGET_RATIO}],
    }
    write_results(args.out, "zoo", results, markdown)


if __name__ == "__main__":
    main()
