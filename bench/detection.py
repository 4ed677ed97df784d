"""Size and speed of DetectionPostProcess converted whole (passes/legalize_armnn/detection.py).

    python bench/detection.py [--repeat 3] [--no-run]

For the README's example detector (examples/ssd_tail.armnn) and for synthetic Arm NN detector tails of
SSD MobileNet's size (1917 anchors, 90 classes; fast NMS with maxDetections 10 and 100, regular NMS with
10 per class): TOSA op count, conversion time (median of --repeat, source graph to TOSA-level graph and
.tosa flatbuffer) and, unless --no-run, one run on the TOSA reference model (time and detection count).
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

import nn2tosa
from nn2tosa.ir import Graph, Loc, TensorType, Value

REPO = Path(__file__).resolve().parents[1]


def synthetic(n: int, classes: int, **attrs) -> Graph:
    """One DetectionPostProcess layer over n random anchors, as the Arm NN reader gives it."""
    rng = np.random.default_rng(0)
    anchors = np.concatenate([rng.uniform(0.05, 0.95, (n, 2)), rng.uniform(0.05, 0.4, (n, 2))], axis=1)
    a = {"maxDetections": 10, "maxClassesPerDetection": 1, "detectionsPerClass": 10, "nmsScoreThreshold": 0.3,
         "nmsIouThreshold": 0.6, "numClasses": classes, "useRegularNms": False,
         "scaleX": 10.0, "scaleY": 10.0, "scaleW": 5.0, "scaleH": 5.0, **attrs}
    rows = a["maxDetections"] * a["maxClassesPerDetection"]
    g = Graph("detector", {"format": "armnn"})
    enc = g.add_input(TensorType((1, n, 4), "f32"), "boxes", Loc("boxes", "layer 0"))
    scores = g.add_input(TensorType((1, n, classes + 1), "f32"), "scores", Loc("scores", "layer 1"))
    loc = Loc("detect", "layer 2")
    anchor_node = g.add_op("armnn.Constant", (), [TensorType((n, 4), "f32")], {"value": anchors.astype(np.float32)}, loc)
    types = [TensorType((1, rows, 4), "f32"), TensorType((1, rows), "f32"), TensorType((1, rows), "f32"),
             TensorType((1,), "f32")]
    node = g.add_op("armnn.DetectionPostProcess", [enc, scores, Value(anchor_node, 0)], types, a, loc)
    for k in range(4):
        g.add_output(Value(node, k), f"output{k}")
    return g


def measure(name: str, model, repeat: int, run: bool) -> None:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = nn2tosa.convert(model)
        flatbuffer = result.tosa_flatbuffer()
        times.append(time.perf_counter() - start)
    ops = sum(1 for n in result.graph.nodes() if result.graph.op(n).startswith("tosa."))
    line = f"{name:44s} {ops:7d} TOSA ops  convert {statistics.median(times):6.2f} s  {result.target}"
    if run:
        import tosa_reference_model as trm

        rng = np.random.default_rng(1)
        inputs = [rng.normal(0, 1, t.shape).astype(np.float32) if i == 0 else rng.uniform(0, 1, t.shape).astype(np.float32)
                  for i, t in enumerate(result.graph.types(n)[0] for n in result.graph.inputs)]
        start = time.perf_counter()
        outs, status = trm.run(flatbuffer, inputs, tosa_level="EIGHTK")
        line += f"  reference model {time.perf_counter() - start:6.2f} s ({str(status).rsplit('.', 1)[-1]}, " \
                f"{int(outs[3][0])} detections)"
    print(line, flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-run", action="store_true", help="skip the reference-model runs")
    args = p.parse_args()
    measure("examples/ssd_tail.armnn", str(REPO / "examples" / "ssd_tail.armnn"), args.repeat, not args.no_run)
    for name, graph in [
        ("1917 anchors, 90 classes, fast, 10", synthetic(1917, 90)),
        ("1917 anchors, 90 classes, fast, 100", synthetic(1917, 90, maxDetections=100)),
        ("1917 anchors, 90 classes, regular, 10/class", synthetic(1917, 90, useRegularNms=True)),
    ]:
        measure(name, graph, args.repeat, not args.no_run)


if __name__ == "__main__":
    main()
