"""DetectionPostProcess (the tail of an SSD detector) as nn ops: box decoding, then non-maximum
suppression unrolled into a fixed number of "take the best, suppress its overlaps" steps.

What Arm NN computes (its reference backend, DetectionPostProcess.cpp, 23.08; the corpus records it):
- inputs: box encodings [1, N, 4] (ycenter, xcenter, h, w relative to the anchors), scores
  [1, N, numClasses + 1] (column 0 is the background, never detected), anchors [N, 4] (ycenter,
  xcenter, h, w). Quantized inputs are dequantized first; everything is computed in float32.
- decoding: yc = ey / scaleY * ah + ay, xc = ex / scaleX * aw + ax, half height
  0.5 * exp(eh / scaleH) * ah (width alike); corners (ymin, xmin, ymax, xmax) = centre -+ half.
- NMS over candidates (a score each and a box): those with score >= nmsScoreThreshold, in
  decreasing score order; each candidate not yet suppressed is kept and suppresses every later one
  whose IoU with it is > nmsIouThreshold (IoU = inter / (area_kept + area_other - inter)); at most
  a given number are kept.
- fast NMS (useRegularNms false): each box's candidates are its best min(maxClassesPerDetection,
  numClasses) classes, box-major; NMS keeps at most maxDetections. Quirk kept: NMS only looks at
  the first N of those N * k candidates and compares candidate e against the box of index e (which
  is its own box only when k is 1); the output box of candidate e is box e // k.
- regular NMS: NMS per class (detectionsPerClass kept each), then the maxDetections best of all
  kept ones (class-major order before sorting).
- outputs: boxes [1, D, 4], classes [1, D] (class index without the background), scores [1, D] and
  the count [1], all float32; rows past the count are zeros. D is the declared output size
  (maxDetections * maxClassesPerDetection); the count is at most maxDetections.

The unrolled form: candidates alive = score >= threshold; each step takes ARGMAX of the alive scores
(the others as -inf), records it (valid while any is alive), and kills it and every alive candidate
whose IoU with it exceeds the threshold (one IoU of the taken box against all, then SELECT). Taking
the best alive candidate and suppressing from it is Arm NN's sorted walk, because a candidate is
only ever suppressed by a better one that was kept. A step costs O(candidates) and there are at
most min(kept, candidates) steps, so the graph grows linearly with maxDetections. Regular NMS runs
the per-class NMS of every class at once on a [classes, N] tensor (detectionsPerClass steps), then
picks the maxDetections best of the classes' kept candidates the same way without suppression.

Ties: ARGMAX takes the first of equal scores (the lower box, then class index), the order TFLite's
kernel defines with its stable sort. Arm NN sorts with std::partial_sort, which orders equal scores as
its heap happens to leave them (the C++ library decides); equal scores among the candidates can
therefore come out in another order than CpuRef's, or another of two overlapping equal-score
candidates can be kept (the per-box best class is the same: a one-element partial sort keeps the
first maximum). Arm NN 20.08 also let suppressed candidates suppress (its issue 465); this follows
the fix, as 23.08 does.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nn2tosa.ir import TensorType, Value

from .layer import Layer
from .registry import rule


FLOAT_EXACT_INDICES = 1 << 24  # float32 holds every integer up to here


@dataclass
class _Boxes:
    """Corner boxes as rows [1, M] per coordinate, and their areas, for IoU against all of them."""

    table: Value  # [M, 5]: ymin, xmin, ymax, xmax, area (the taken box is read from here)
    ymin: Value
    xmin: Value
    ymax: Value
    xmax: Value
    area: Value


def _f32(layer: Layer, v: Value) -> Value:
    """The float32 value of v (dequantized, or cast from another float type), as Arm NN's decoders read it."""
    v = layer.real(v)
    t = layer.type_of(v)
    return v if t.dtype == "f32" else layer.op("nn.cast", [v], type=TensorType(t.shape, "f32"))


def _const(layer: Layer, value, dtype: str = "f32") -> Value:
    return layer.builder.constant(np.asarray(value), dtype)


def _column(layer: Layer, x: Value, k: int) -> Value:
    """Column k of a [rows, cols] tensor, as [rows, 1]."""
    rows = layer.type_of(x).shape[0]
    return layer.op("nn.slice", [x], {"begin": [0, k], "size": [rows, 1]})


def _first_max(layer: Layer, x: Value) -> Value:
    """The index of the first maximum of every row of x [G, M], as [G, 1] float32.

    Indices travel as float32 (exact below 2^24) and rows are read by one-hot comparison instead of
    GATHER, so that a float model needs only TOSA's floating-point profile: there, integers exist
    only as ARGMAX's result, which is cast to float at once."""
    g = layer.type_of(x).shape[0]
    index = layer.op("nn.argmax", [x], {"axis": 1, "keep_dims": False, "output_type": "i32"})
    return layer.reshape(layer.op("nn.cast", [index], type=TensorType((g,), "f32")), [g, 1])


def _lookup(layer: Layer, table: Value, index: Value) -> Value:
    """Rows of table [M, C] at the float indices index [S, 1], as [S, C] (exact: the one row each)."""
    op = layer.op
    m, c = layer.type_of(table).shape
    s = layer.type_of(index).shape[0]
    positions = _const(layer, np.arange(m, dtype=np.float32).reshape(1, m))
    hit = layer.reshape(op("nn.equal", [index, positions]), [s, m, 1])
    picked = op("nn.select", [hit, layer.reshape(table, [1, m, c]), _const(layer, -np.inf)])
    return op("nn.reduce_max", [picked], {"axes": [1], "keep_dims": False})


def _decode(layer: Layer, encodings: Value, anchors: Value) -> Value:
    """Corner boxes [N, 4] (ymin, xmin, ymax, xmax) from center-size encodings against the anchors."""
    a = layer.attrs
    op = layer.op
    ey, ex, eh, ew = (_column(layer, encodings, k) for k in range(4))
    ay, ax, ah, aw = (_column(layer, anchors, k) for k in range(4))

    def scaled(e: Value, scale: float) -> Value:
        return op("nn.div", [e, _const(layer, scale)])

    yc = op("nn.add", [op("nn.mul", [scaled(ey, a["scaleY"]), ah]), ay])
    xc = op("nn.add", [op("nn.mul", [scaled(ex, a["scaleX"]), aw]), ax])
    half = _const(layer, 0.5)
    half_h = op("nn.mul", [op("nn.mul", [half, op("nn.exp", [scaled(eh, a["scaleH"])])]), ah])
    half_w = op("nn.mul", [op("nn.mul", [half, op("nn.exp", [scaled(ew, a["scaleW"])])]), aw])
    corners = [op("nn.sub", [yc, half_h]), op("nn.sub", [xc, half_w]),
               op("nn.add", [yc, half_h]), op("nn.add", [xc, half_w])]
    return op("nn.concat", corners, {"axis": 1})


def _boxes(layer: Layer, corners: Value) -> _Boxes:
    """The IoU operands of corner boxes [M, 4]."""
    op = layer.op
    m = layer.type_of(corners).shape[0]
    ymin, xmin, ymax, xmax = (_column(layer, corners, k) for k in range(4))
    area = op("nn.mul", [op("nn.sub", [ymax, ymin]), op("nn.sub", [xmax, xmin])])
    table = op("nn.concat", [corners, area], {"axis": 1})
    row = [layer.reshape(v, [1, m]) for v in (ymin, xmin, ymax, xmax, area)]
    return _Boxes(table, *row)


def _overlapping(layer: Layer, boxes: _Boxes, taken: Value, iou_threshold: float) -> Value:
    """[G, M] booleans: IoU(taken box of group g, box m) > iou_threshold, as Arm NN computes the IoU
    (taken: [G, 1] float indices into the boxes)."""
    op = layer.op
    picked = _lookup(layer, boxes.table, taken)
    t_ymin, t_xmin, t_ymax, t_xmax, t_area = (_column(layer, picked, k) for k in range(5))
    zero = _const(layer, 0.0)
    height = op("nn.maximum", [op("nn.sub", [op("nn.minimum", [t_ymax, boxes.ymax]),
                                             op("nn.maximum", [t_ymin, boxes.ymin])]), zero])
    width = op("nn.maximum", [op("nn.sub", [op("nn.minimum", [t_xmax, boxes.xmax]),
                                            op("nn.maximum", [t_xmin, boxes.xmin])]), zero])
    inter = op("nn.mul", [height, width])
    union = op("nn.sub", [op("nn.add", [t_area, boxes.area]), inter])
    iou = op("nn.div", [inter, union])
    return op("nn.greater", [iou, _const(layer, iou_threshold)])


def keeps_a_detection(layer: Layer, steps: int) -> str | None:
    """DetectionPostProcess keeps at least one detection (maxDetections, and detectionsPerClass with
    regular NMS, are at least 1)."""
    if steps < 1:
        return "DetectionPostProcess that keeps no detection (maxDetections or detectionsPerClass 0)"
    return None


def candidates_exact_in_float(layer: Layer, m: int) -> str | None:
    """DetectionPostProcess has at most 2^24 candidates per round of selection:
    their indices are carried as float32, exact up to there."""
    if m > FLOAT_EXACT_INDICES:
        return f"{m} candidates: indices carried as float32 are exact up to {FLOAT_EXACT_INDICES}"
    return None


def selects_a_class(layer: Layer, k: int) -> str | None:
    """With fast NMS, DetectionPostProcess's maxClassesPerDetection is at least 1."""
    if k < 1:
        return "DetectionPostProcess with maxClassesPerDetection 0 selects no class"
    return None


def has_a_class(layer: Layer, classes: int) -> str | None:
    """DetectionPostProcess's numClasses is at least 1."""
    if classes < 1:
        return "DetectionPostProcess with numClasses 0 has no class to detect"
    return None


def _take_best(layer: Layer, scores: Value, alive: Value, steps: int, boxes: _Boxes | None,
               iou_threshold: float) -> tuple[Value, Value, Value]:
    """`steps` rounds of: take the best alive candidate of each group (row of scores [G, M]), then
    kill it and (with boxes) every alive one overlapping it. Returns the taken indices [G, steps]
    (float), whether each was a real candidate [G, steps] (i1), and their scores [G, steps] (-inf
    where not)."""
    layer.check(keeps_a_detection, steps)
    op = layer.op
    m = layer.type_of(scores).shape[1]
    layer.check(candidates_exact_in_float, m)
    minus_inf = _const(layer, -np.inf)
    positions = _const(layer, np.arange(m, dtype=np.float32).reshape(1, m))
    taken, valid, best = [], [], []
    for step in range(steps):
        masked = op("nn.select", [alive, scores, minus_inf])
        index = _first_max(layer, masked)
        taken.append(index)
        valid.append(op("nn.reduce_any", [alive], {"axes": [1], "keep_dims": True}))
        best.append(op("nn.reduce_max", [masked], {"axes": [1], "keep_dims": True}))
        if step == steps - 1:
            break
        dead = op("nn.equal", [positions, index])
        if boxes is not None:
            dead = op("nn.logical_or", [dead, _overlapping(layer, boxes, index, iou_threshold)])
        alive = op("nn.logical_and", [alive, op("nn.logical_not", [dead])])
    taken_v, valid_v, best_v = (op("nn.concat", vs, {"axis": 1}) if len(vs) > 1 else vs[0]
                                for vs in (taken, valid, best))
    return taken_v, valid_v, best_v


def _nms(layer: Layer, scores: Value, boxes: _Boxes, keep: int) -> tuple[Value, Value, Value]:
    """Arm NN's NonMaxSuppression on every row of scores [G, M] at once, at most `keep` kept per row."""
    a = layer.attrs
    alive = layer.op("nn.greater_equal", [scores, _const(layer, a["nmsScoreThreshold"])])
    steps = min(keep, layer.type_of(scores).shape[1])  # no row keeps more than it has
    return _take_best(layer, scores, alive, steps, boxes, a["nmsIouThreshold"])


def _top_classes(layer: Layer, scores: Value, k: int) -> tuple[Value, Value]:
    """The k best classes of every box (scores [N, C] -> scores and float class indices [N, k]), best first."""
    if k == 1:
        return layer.op("nn.reduce_max", [scores], {"axes": [1], "keep_dims": True}), _first_max(layer, scores)
    every_class = _const(layer, np.ones(layer.type_of(scores).shape, dtype=bool), "i1")
    classes, _, best = _take_best(layer, scores, every_class, k, None, 0.0)
    return best, classes


def _column_vector(layer: Layer, v: Value) -> Value:
    """[1, S] or [S] -> [S, 1]."""
    return layer.reshape(v, [layer.type_of(v).num_elements, 1])


def _fast(layer: Layer, corners: Value, class_scores: Value) -> tuple[Value, Value, Value, Value]:
    """Fast NMS: (valid [S, 1], scores [S, 1], classes [S, 1], boxes [S, 4]) of the S steps."""
    a = layer.attrs
    n, c = layer.type_of(class_scores).shape
    k = min(int(a["maxClassesPerDetection"]), c)
    layer.check(selects_a_class, k)
    best, classes = _top_classes(layer, class_scores, k)
    # candidates box-major; Arm NN's NMS reads the first N of them against boxes 0..N-1 (module doc)
    cand_scores = layer.reshape(best, [1, n * k])
    cand_classes = layer.reshape(classes, [n * k, 1])
    if k > 1:
        cand_scores = layer.op("nn.slice", [cand_scores], {"begin": [0, 0], "size": [1, n]})
    index, valid, score = (_column_vector(layer, v) for v in
                           _nms(layer, cand_scores, _boxes(layer, corners), int(a["maxDetections"])))
    cls = _lookup(layer, cand_classes, index)
    box_index = index if k == 1 else _lookup(layer, _const(layer, (np.arange(n) // k).reshape(n, 1)), index)
    return valid, score, cls, _lookup(layer, corners, box_index)


def _regular(layer: Layer, corners: Value, class_scores: Value) -> tuple[Value, Value, Value, Value]:
    """Regular NMS: per-class NMS of all classes at once, then the best maxDetections of what they kept."""
    a = layer.attrs
    c = layer.type_of(class_scores).shape[1]
    per_class = layer.transpose(class_scores, [1, 0])  # [C, N]
    index, valid, score = _nms(layer, per_class, _boxes(layer, corners), int(a["detectionsPerClass"]))
    kept = layer.type_of(index).shape[1]
    total = c * kept  # candidates class-major, each class's in its NMS order, as Arm NN lists them
    flat_index, flat_valid, flat_score = (layer.reshape(v, [1, total]) for v in (index, valid, score))
    steps = min(int(a["maxDetections"]), total)
    pick, picked_valid, picked_score = (_column_vector(layer, v) for v in
                                        _take_best(layer, flat_score, flat_valid, steps, None, 0.0))
    classes = _const(layer, np.repeat(np.arange(c), kept).reshape(total, 1))
    cls = _lookup(layer, classes, pick)
    box_index = _lookup(layer, layer.reshape(flat_index, [total, 1]), pick)
    return picked_valid, picked_score, cls, _lookup(layer, corners, box_index)


def _rows(layer: Layer, x: Value, rows: int) -> Value:
    """x [S, ...] with exactly `rows` rows: cut, or zeros appended (Arm NN's unfilled slots)."""
    t = layer.type_of(x)
    have = t.shape[0]
    if have > rows:
        return layer.op("nn.slice", [x], {"begin": [0] * t.rank, "size": [rows, *t.shape[1:]]})
    if have < rows:
        pads = [0, rows - have] + [0, 0] * (t.rank - 1)
        return layer.op("nn.pad", [x], {"pads": pads, "mode": "constant", "value": 0.0})
    return x


@rule("DetectionPostProcess",
      checks=(has_a_class, keeps_a_detection, candidates_exact_in_float, selects_a_class))
def _detection_post_process(layer: Layer) -> list[Value]:
    a = layer.attrs
    op = layer.op
    encodings, scores, anchors = layer.operands[:3]
    et, st = layer.type_of(encodings), layer.type_of(scores)
    if et.rank != 3 or et.shape[0] != 1 or et.shape[2] != 4:
        raise ValueError(f"box encodings of shape {list(et.shape)} are not [1, boxes, 4]")
    n = et.shape[1]
    classes = int(a["numClasses"])
    if list(st.shape) != [1, n, classes + 1]:
        raise ValueError(f"scores of shape {list(st.shape)} are not [1, {n}, numClasses + 1 = {classes + 1}]")
    layer.check(has_a_class, classes)
    if list(layer.type_of(anchors).shape) != [n, 4]:
        raise ValueError(f"anchors of shape {list(layer.type_of(anchors).shape)} are not [{n}, 4]")
    if any(float(a[s]) == 0.0 for s in ("scaleX", "scaleY", "scaleW", "scaleH")):
        raise ValueError("a box scale (scaleX/Y/W/H) is 0")
    corners = _decode(layer, layer.reshape(_f32(layer, encodings), [n, 4]), _f32(layer, anchors))
    class_scores = op("nn.slice", [layer.reshape(_f32(layer, scores), [n, classes + 1])],
                      {"begin": [0, 1], "size": [n, classes]})  # column 0 is the background
    if a["useRegularNms"]:
        valid, score, cls, box = _regular(layer, corners, class_scores)
    else:
        valid, score, cls, box = _fast(layer, corners, class_scores)
    zero, one = _const(layer, 0.0), _const(layer, 1.0)
    box, score, cls = (op("nn.select", [valid, v, zero]) for v in (box, score, cls))  # unfilled slots are 0
    count = op("nn.reduce_sum", [op("nn.select", [valid, one, zero])], {"axes": [0, 1], "keep_dims": False})
    box_t, cls_t, score_t, count_t = layer.result_types
    rows = box_t.shape[1]
    results = [layer.reshape(_rows(layer, box, rows), [1, rows, 4]),
               layer.reshape(_rows(layer, cls, rows), [1, rows]),
               layer.reshape(_rows(layer, score, rows), [1, rows]),
               layer.reshape(count, [1])]
    return [layer.finish(v, t) for v, t in zip(results, (box_t, cls_t, score_t, count_t))]
