"""DetectionPostProcess converted whole (passes/legalize_armnn/detection.py), run on the TOSA reference model.

Two oracles: the corpus' DetectionPostProcess files with the outputs Arm NN CpuRef computed, and, for
sizes and options the corpus lacks (many anchors, several classes per box, quantized inputs), `cpuref`
below: a plain transcription of CpuRef's algorithm (DetectionPostProcess.cpp, Arm NN 23.08) with
Python loops and float32 arithmetic, written for this test and sharing no code with the converter.
Synthetic inputs have distinct scores: equal scores are ordered by std::partial_sort's heap in CpuRef
(see detection.py), which no sorted list reproduces."""
from __future__ import annotations

import numpy as np
import pytest

import nn2tosa
from conftest import requires_corpus
from corpus_harness import entries, entry_id, load_expected, load_inputs, model_path, run_reference
from nn2tosa.ir import Graph, Loc, Quant, TensorType, Value

F32 = np.float32
CORPUS_FILES = entries(lambda e: "DetectionPostProcess" in e.get("histogram", {}))


# ------------------------------------------------------------------------------ the corpus
@requires_corpus
def test_the_corpus_has_every_variant():
    names = {e["file"].rsplit("/", 1)[-1] for e in CORPUS_FILES}
    assert {"detectionpostprocess_fastnms_f32.armnn", "detectionpostprocess_regularnms_f32.armnn",
            "detectionpostprocess_fastnms_qu8.armnn"} <= names


@requires_corpus
@pytest.mark.parametrize("e", CORPUS_FILES, ids=entry_id)
def test_corpus_file_matches_cpuref(e):
    """Boxes and scores within fp32 rounding, classes and the count exact; float files need only pro_fp."""
    result = nn2tosa.convert(model_path(e))
    outs, status = run_reference(result.tosa_flatbuffer(), load_inputs(e))
    assert status == "TOSA_VALID"
    boxes, classes, scores, count = load_expected(e)
    np.testing.assert_allclose(outs[0], boxes, atol=1e-5, rtol=0)
    np.testing.assert_array_equal(outs[1], classes)
    np.testing.assert_allclose(outs[2], scores, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(outs[3], count)
    quantized = any("quant" in i for i in e["inputs"])
    assert result.target.profiles == (("pro_int", "pro_fp") if quantized else ("pro_fp",))


# ------------------------------------------------------------------------------ an independent model of CpuRef
def _iou(a: np.ndarray, b: np.ndarray) -> F32:
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    h = max(min(a[2], b[2]) - max(a[0], b[0]), F32(0))
    w = max(min(a[3], b[3]) - max(a[1], b[1]), F32(0))
    inter = h * w
    return inter / (area_a + area_b - inter)


def _nms(corners: np.ndarray, scores: np.ndarray, count: int, keep: int, score_thr: F32, iou_thr: F32) -> list[int]:
    above = [i for i in range(count) if scores[i] >= score_thr]
    order = sorted(above, key=lambda i: -scores[i])  # stable: equal scores by index
    kept: list[int] = []
    suppressed = set()
    for rank, i in enumerate(order):
        if len(kept) >= min(keep, len(above)):
            break
        if i in suppressed:
            continue
        kept.append(i)
        for j in order[rank + 1:]:
            if _iou(corners[i], corners[j]) > iou_thr:
                suppressed.add(j)
    return kept


def cpuref(enc: np.ndarray, scores: np.ndarray, anchors: np.ndarray, a: dict, rows: int) -> list[np.ndarray]:
    n = enc.shape[1]
    enc, scores, anchors = enc.reshape(n, 4).astype(F32), scores.reshape(n, -1).astype(F32), anchors.astype(F32)
    corners = np.zeros((n, 4), F32)
    for i in range(n):
        ey, ex, eh, ew = enc[i]
        ay, ax, ah, aw = anchors[i]
        yc = ey / F32(a["scaleY"]) * ah + ay
        xc = ex / F32(a["scaleX"]) * aw + ax
        hh = F32(0.5) * np.exp(eh / F32(a["scaleH"])) * ah
        hw = F32(0.5) * np.exp(ew / F32(a["scaleW"])) * aw
        corners[i] = [yc - hh, xc - hw, yc + hh, xc + hw]
    classes = a["numClasses"]
    thr, iou_thr = F32(a["nmsScoreThreshold"]), F32(a["nmsIouThreshold"])
    if a["useRegularNms"]:
        picked_boxes, picked_scores, picked_classes = [], [], []
        for c in range(classes):
            column = scores[:, c + 1]
            for i in _nms(corners, column, n, a["detectionsPerClass"], thr, iou_thr):
                picked_boxes.append(i), picked_scores.append(column[i]), picked_classes.append(c)
        order = sorted(range(len(picked_scores)), key=lambda j: -picked_scores[j])[:a["maxDetections"]]
        found = [(picked_boxes[j], picked_classes[j], picked_scores[j]) for j in order]
    else:
        k = min(a["maxClassesPerDetection"], classes)
        best, best_class, box_of = [], [], []
        for i in range(n):
            row = scores[i, 1:]
            for c in sorted(range(classes), key=lambda c: -row[c])[:k]:
                best.append(row[c]), best_class.append(c), box_of.append(i)
        # CpuRef's NMS reads the first n candidates, each against the box of its candidate index
        kept = _nms(corners, np.array(best, F32), n, a["maxDetections"], thr, iou_thr)
        found = [(box_of[e], best_class[e], best[e]) for e in kept]
    out_boxes, out_classes, out_scores = np.zeros((1, rows, 4), F32), np.zeros((1, rows), F32), np.zeros((1, rows), F32)
    for r, (i, c, s) in enumerate(found[:rows]):
        out_boxes[0, r], out_classes[0, r], out_scores[0, r] = corners[i], c, s
    return [out_boxes, out_classes, out_scores, np.array([len(found)], F32)]


# ------------------------------------------------------------------------------ synthetic detectors
def detector(n: int, classes: int, attrs: dict, quant: tuple[Quant, Quant] | None = None,
             rows: int | None = None) -> tuple[Graph, np.ndarray]:
    """An Arm NN graph of one DetectionPostProcess layer over n random anchors, and the anchors."""
    rng = np.random.default_rng(n * 31 + classes)
    anchors = np.concatenate([rng.uniform(0.1, 0.9, (n, 2)), rng.uniform(0.1, 0.5, (n, 2))], axis=1).astype(F32)
    a = {"maxDetections": 5, "maxClassesPerDetection": 1, "detectionsPerClass": 3, "nmsScoreThreshold": 0.3,
         "nmsIouThreshold": 0.3, "numClasses": classes, "useRegularNms": False,
         "scaleX": 10.0, "scaleY": 10.0, "scaleW": 5.0, "scaleH": 5.0, **attrs}
    rows = a["maxDetections"] * a["maxClassesPerDetection"] if rows is None else rows
    g = Graph("detector", {"format": "armnn"})
    dtype = "ui8" if quant else "f32"
    enc = g.add_input(TensorType((1, n, 4), dtype, quant[0] if quant else None), "boxes", Loc("boxes", "layer 0"))
    sc = g.add_input(TensorType((1, n, classes + 1), dtype, quant[1] if quant else None), "scores",
                     Loc("scores", "layer 1"))
    loc = Loc("detect", "layer 2")
    anchors_node = g.add_op("armnn.Constant", (), [TensorType((n, 4), "f32")], {"value": anchors}, loc)
    out_types = [TensorType((1, rows, 4), "f32"), TensorType((1, rows), "f32"), TensorType((1, rows), "f32"),
                 TensorType((1,), "f32")]
    node = g.add_op("armnn.DetectionPostProcess", [enc, sc, Value(anchors_node, 0)], out_types, a, loc)
    for k in range(4):
        g.add_output(Value(node, k), f"output{k}")
    return g, anchors


def _distinct_scores(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.permutation(np.linspace(0.0, 1.0, int(np.prod(shape)), dtype=F32)).reshape(shape)


def _check(g: Graph, anchors: np.ndarray, enc: np.ndarray, scores: np.ndarray, real=lambda x, k: x) -> None:
    a = g.attrs(next(n for n in g.nodes() if g.op(n) == "armnn.DetectionPostProcess"))
    rows = g.type_of(g.outputs[0].value).shape[1]
    result = nn2tosa.convert(g)
    outs, status = run_reference(result.tosa_flatbuffer(), [enc.view(np.int8) if enc.dtype == np.uint8 else enc,
                                                            scores.view(np.int8) if scores.dtype == np.uint8 else scores])
    assert status == "TOSA_VALID"
    want = cpuref(real(enc, 0), real(scores, 1), anchors, a, rows)
    assert want[3][0] > 1, "the case should detect something"
    np.testing.assert_array_equal(outs[3], want[3])
    np.testing.assert_array_equal(outs[1], want[1])
    np.testing.assert_allclose(outs[0], want[0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(outs[2], want[2], atol=1e-6, rtol=0)


@pytest.mark.parametrize("attrs", [
    {},  # fast NMS, the best class of each box
    {"maxDetections": 8, "nmsIouThreshold": 0.1},  # heavy suppression: fewer found than asked
    {"maxClassesPerDetection": 2},  # CpuRef's quirk: candidates e < n against box e, output box e // 2
    {"useRegularNms": True},
    {"useRegularNms": True, "detectionsPerClass": 2, "maxDetections": 7, "nmsScoreThreshold": 0.05},
], ids=["fast", "fast-suppressing", "fast-2-classes", "regular", "regular-low-threshold"])
def test_synthetic_float_detector_matches_cpuref(attrs):
    n, classes = 24, 3
    g, anchors = detector(n, classes, attrs)
    rng = np.random.default_rng(7)
    _check(g, anchors, rng.normal(0, 1, (1, n, 4)).astype(F32), _distinct_scores(rng, (1, n, classes + 1)))


def test_unfilled_rows_are_zero_and_the_count_can_exceed_the_rows():
    """Rows past what NMS kept are zeros; declared rows beyond maxDetections stay zero; the count is
    what NMS kept (CpuRef writes numSelected, not the rows)."""
    n, classes = 16, 2
    g, anchors = detector(n, classes, {"maxDetections": 3}, rows=6)
    rng = np.random.default_rng(3)
    _check(g, anchors, rng.normal(0, 1, (1, n, 4)).astype(F32), _distinct_scores(rng, (1, n, classes + 1)))


def test_quantized_inputs_are_dequantized_as_cpuref_decodes_them():
    n, classes = 20, 2
    quant = (Quant((0.05,), (128,)), Quant((1 / 255,), (0,)))
    for regular in (False, True):
        g, anchors = detector(n, classes, {"useRegularNms": regular}, quant=quant)
        rng = np.random.default_rng(11)
        enc = rng.integers(60, 196, (1, n, 4)).astype(np.uint8)
        scores = rng.permutation(np.arange(40, 40 + 3 * n * (classes + 1), 3) % 256).astype(np.uint8)
        scores = scores.reshape(1, n, classes + 1)
        q = [(0.05, 128), (1 / 255, 0)]
        _check(g, anchors, enc, scores, real=lambda x, k: ((x.astype(F32) - q[k][1]) * F32(q[k][0])).astype(F32))


def test_equal_scores_are_taken_lowest_box_first():
    """The documented tie order: ARGMAX's first maximum, so the lower box index goes first."""
    n, classes = 4, 1
    g, anchors = detector(n, classes, {"maxDetections": 4, "nmsIouThreshold": 1.0})
    enc = np.zeros((1, n, 4), F32)
    scores = np.array([[[0, 0.5], [0, 0.9], [0, 0.5], [0, 0.9]]], F32)
    outs, _ = run_reference(nn2tosa.convert(g).tosa_flatbuffer(), [enc, scores])
    np.testing.assert_array_equal(outs[2], np.array([[0.9, 0.9, 0.5, 0.5]], F32))
    np.testing.assert_allclose(outs[0][0, :, 0], anchors[[1, 3, 0, 2], 0] - anchors[[1, 3, 0, 2], 2] / 2, atol=1e-6)


# ------------------------------------------------------------------------------ graph size
def _tosa_ops(n: int, classes: int, attrs: dict) -> int:
    g, _ = detector(n, classes, attrs)
    return len([m for m in nn2tosa.convert(g).graph.nodes()])


def test_graph_grows_with_steps_not_with_anchors():
    """One step is a fixed number of ops whatever the number of anchors or classes (the tensors grow)."""
    small, large = _tosa_ops(10, 2, {"maxDetections": 4}), _tosa_ops(200, 2, {"maxDetections": 4})
    assert small == large
    more_classes = _tosa_ops(10, 9, {"maxDetections": 4, "useRegularNms": True})
    assert more_classes == _tosa_ops(10, 2, {"maxDetections": 4, "useRegularNms": True})
    steps4, steps8 = _tosa_ops(40, 2, {"maxDetections": 4}), _tosa_ops(40, 2, {"maxDetections": 8})
    steps12 = _tosa_ops(40, 2, {"maxDetections": 12})
    assert steps12 - steps8 == steps8 - steps4 > 0  # linear in maxDetections


def test_refused_and_invalid_descriptors():
    from nn2tosa.diagnostics import InvalidInputError, UnsupportedError

    g, _ = detector(6, 2, {"scaleW": 0.0})
    with pytest.raises(InvalidInputError, match="scale"):
        nn2tosa.convert(g)
    g, _ = detector(6, 3, {"numClasses": 4}, rows=3)  # the scores do not fit numClasses: a damaged file
    with pytest.raises(InvalidInputError, match="numClasses"):
        nn2tosa.convert(g)
    g, _ = detector(6, 2, {"maxClassesPerDetection": 0}, rows=3)
    with pytest.raises(UnsupportedError, match="maxClassesPerDetection 0"):
        nn2tosa.convert(g)
    g, _ = detector(6, 2, {"useRegularNms": True, "detectionsPerClass": 0}, rows=3)
    with pytest.raises(UnsupportedError, match="keeps no detection"):
        nn2tosa.convert(g)
