"""`nn2tosa compare`'s table on stdout and its JSON (`--json FILE`).

One line per source tensor, in graph order (worst first with `--sort`):

    #   tensor  type  status  shape dtype [quantization]  max abs  err  rel  mean  SQNR  cos  off

`err` is in output quantization steps (LSB) for integer tensors and in ULPs (of the tensor's largest
magnitude, in the type the converted graph computes it in) for float ones. The mark column says `>>`
for the first divergence (the first tensor in graph order beyond tolerance), `!` for any other
tensor beyond it, and `-` for a tensor not compared (the line says why: a layer fused into another
is compared there, its producer's own output is not visible).
"""
from __future__ import annotations

import json
import math
from typing import Any

from nn2tosa.comparison.run import CompareResult, Row


def _number(v: float | None, digits: int = 3) -> str:
    if v is None:
        return "-"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}g}"


def _quant(row: Row) -> str:
    q = row.point.type.quant
    if q is None:
        return ""
    if len(q.scales) == 1:
        return f" s={q.scales[0]:.4g} zp={q.zero_points[0]}"
    return f" per-axis {q.axis} ({len(q.scales)} scales)"


def _mark(row: Row) -> str:
    if row.first_divergence:
        return ">>"
    if row.metrics is None:
        return "-"
    return "" if row.metrics.ok else "!"


def format_table(result: CompareResult, sort: bool = False) -> str:
    rows = list(result.rows)
    if sort:
        rows.sort(key=lambda r: -(r.metrics.score if r.metrics else -1.0))
    head = ["", "#", "tensor", "type", "status", "shape dtype", "max abs", "err", "rel", "mean", "SQNR dB", "cos", "off"]
    lines = [head]
    notes = []
    for r in rows:
        p, m = r.point, r.metrics
        shape = f"{'x'.join(map(str, p.type.shape)) or 'scalar'} {p.type.dtype}{_quant(r)}"
        kind = p.op.split(".", 1)[-1]
        if m is None:
            lines.append([_mark(r), str(p.order), p.key, kind, p.status, shape] + ["-"] * 7)
            notes.append(f"  {p.key}: {r.reason}")
            continue
        err = f"{_number(m.lsb)} LSB" if m.lsb is not None else f"{_number(m.ulp)} ULP"
        lines.append([_mark(r), str(p.order), p.key, kind, p.status, shape, _number(m.max_abs), err,
                      _number(m.relative), _number(m.mean_abs), _number(m.sqnr_db), _number(m.cosine, 6),
                      f"{m.off}/{m.size}"])
        if p.note:
            notes.append(f"  {p.key}: {p.note}")
        if m.clipped:
            notes.append(f"  {p.key}: {m.clipped} of {m.size} reference values are outside its quantized range "
                         "(measured at the range's end)")
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = [f"{result.model}: {result.status} on {result.inputs}; reference: {result.reference}; "
           f"{result.tolerance} tolerance"]
    out += ["  ".join(cell.ljust(w) if i < 6 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths))).rstrip()
            for line in lines]
    if notes:
        out.append("notes:")
        out += notes
    out.append(summary(result))
    return "\n".join(out) + "\n"


def summary(result: CompareResult) -> str:
    compared = result.compared
    within = sum(1 for r in compared if r.metrics and r.metrics.ok)
    text = (f"{within} of {len(compared)} compared tensors within {result.tolerance} tolerance "
            f"({len(result.rows) - len(compared)} not compared)")
    if not compared:
        text += "\nnothing was compared: the reference holds none of the converted model's tensors"
    first = result.first_divergence
    if first is not None:
        feeds = ", ".join(f"{r.point.key} ({_verdict(r)})" for r in result.feeds_of(first)) or "graph inputs only"
        where = f" ({first.point.where})" if first.point.where else ""
        text += f"\nfirst divergence: {first.point.key} {first.point.op.split('.', 1)[-1]}{where}; fed by {feeds}"
    worst = result.worst()
    if worst is not None and worst.metrics is not None:
        m = worst.metrics
        err = f"{_number(m.lsb)} LSB" if m.lsb is not None else f"{_number(m.relative)} relative"
        text += f"\nlargest error: {worst.point.key} ({err}, SQNR {_number(m.sqnr_db)} dB)"
    if result.missing_reference:
        text += f"\nthe float reference stops early: {result.missing_reference}"
    return text


def _verdict(row: Row) -> str:
    if row.metrics is None:
        return "not compared"
    m = row.metrics
    err = f"{_number(m.lsb)} LSB" if m.lsb is not None else f"{_number(m.relative)} relative"
    return f"{'within' if m.ok else 'beyond'}, {err}"


def to_json(result: CompareResult) -> str:
    return json.dumps(result.as_dict(), indent=1, default=_plain) + "\n"


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):
        return v.item()
    return str(v)


__all__ = ["format_table", "summary", "to_json"]
