"""What a converted model's tensors are compared against (`compare --reference REF`).

- a directory of .npy files, one per source tensor, named `LAYER:SLOT.npy` (Point.file_name: the
  Arm NN layer name or the MPS node, ":" and the output slot; characters other than letters, digits
  and `:-._ ` percent-encoded), in the source type (a quantized tensor's stored integers, or its
  real values as floats). `nn2tosa compare MODEL --list-tensors` prints the names;
- Arm NN's own debug output: the JSON lines CpuRef's Debug workload prints when
  `OptimizerOptions::m_Debug` puts a Debug layer after every layer output but Output layers (one
  object per line: layerGuid, layerName, outputSlot, shape, min, max, data; quantized tensors as
  their stored integers; floats with 6 significant digits), or the directory of `LAYER.numpy` files
  newer Arm NN writes the same records to with `m_DebugToFile`. Records are found by layer name and
  slot (a repeated name, by element count and then order); the files are indexed once and each
  record read when its tensor comes;
- `float`: the float64 evaluation of the source graph's nn form, quantized tensors dequantized
  (FloatReference below).

Each gives `get(point) -> (array, is_real)` or None when it has no such tensor, and `inputs(points)`:
the arrays of the graph inputs when it holds them (a debug dump records its Input layers).
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from nn2tosa.comparison.points import Point
from nn2tosa.diagnostics import InvalidInputError


class Reference(Protocol):
    description: str

    def get(self, point: Point) -> tuple[np.ndarray, bool] | None: ...

    def inputs(self, points: Sequence[Point]) -> list[np.ndarray] | None: ...


def open_reference(ref: str) -> Reference:
    if ref == "float":
        raise ValueError("the float reference is made by FloatReference (it needs the model)")
    if os.path.isdir(ref):
        dumped = sorted(str(p) for p in Path(ref).glob("*.numpy"))
        return ArmnnDebugDump(ref, dumped) if dumped and not any(Path(ref).glob("*.npy")) else NpyDirectory(ref)
    if not os.path.exists(ref):
        raise InvalidInputError("no such file or directory (--reference takes a directory of .npy files, "
                                "an Arm NN debug dump, or 'float')", file=ref)
    return ArmnnDebugDump(ref)


def stored_arrays(ref: Reference, points: Sequence[Point]) -> list[np.ndarray] | None:
    """The reference's arrays of `points` in their source types' storage form (None if one is missing)."""
    arrays = []
    for p in points:
        got = ref.get(p)
        if got is None:
            return None
        array, is_real = got
        if is_real and p.type.quant is not None:
            from nn2tosa.comparison.nn_numpy import to_storage

            array = to_storage(array, p.type)
        arrays.append(np.asarray(array).astype(p.type.numpy_dtype).reshape(p.type.shape))
    return arrays


class NpyDirectory:
    def __init__(self, path: str):
        self.path = path
        self.description = f"the .npy files in {path}"

    def get(self, point: Point) -> tuple[np.ndarray, bool] | None:
        file = os.path.join(self.path, point.file_name)
        if not os.path.exists(file):
            return None
        from nn2tosa.check import load_arrays

        array = load_arrays([file])[0]
        if array.size != point.type.num_elements:
            raise InvalidInputError(f"holds {array.size} values, tensor {point.key} has shape "
                                    f"{list(point.type.shape)}", file=file)
        return array, point.type.quant is not None and array.dtype.kind == "f"

    def inputs(self, points: Sequence[Point]) -> list[np.ndarray] | None:
        return stored_arrays(self, points)


class ArmnnDebugDump:
    """Arm NN's Debug-layer records: one file of JSON lines (m_Debug: what CpuRef prints to stdout), or
    the directory m_DebugToFile fills (newer Arm NN: `ArmNNIntermediateLayerOutputs/LAYER.numpy`, one
    record per file, the last slot written for a layer with several)."""

    def __init__(self, path: str, files: Sequence[str] | None = None):
        self.description = f"Arm NN's debug dump {path}"
        # (layer, slot) -> [(file, offset, size, line number)]; sizes as Python ints (a hostile shape cannot wrap)
        self.records: dict[tuple[str, int], list[tuple[str, int, int, int]]] = {}
        self.used: set[tuple[str, int]] = set()
        for file in files or [path]:
            with open(file, "rb") as f:
                offset = 0
                for number, line in enumerate(f, 1):
                    if line.strip():
                        name, slot, shape = _record_head(line, file, number)
                        self.records.setdefault((name, slot), []).append((file, offset, math.prod(shape), number))
                    offset += len(line)
        if not self.records:
            raise InvalidInputError("holds no Arm NN debug records (one JSON object per line with layerName, "
                                    "outputSlot, shape and data)", file=path)

    def get(self, point: Point) -> tuple[np.ndarray, bool] | None:
        size = point.type.num_elements
        candidates = [r for r in self.records.get((point.layer, point.slot), []) if r[2] == size]
        fresh = [r for r in candidates if r[:2] not in self.used] or candidates  # a repeated name: in order
        if not fresh:
            return None
        file, offset, _, number = fresh[0]
        self.used.add((file, offset))
        with open(file, "rb") as f:
            f.seek(offset)
            line = f.readline()
        try:  # the head was read when the dump was opened; the data is read and checked only now
            record = json.loads(line)
            data = np.asarray(record["data"], dtype=np.float64).reshape(record["shape"])
        except (ValueError, KeyError, TypeError, OverflowError) as e:
            raise InvalidInputError(f"layer '{point.layer}' slot {point.slot}: its data is not {size} numbers of "
                                    f"shape {list(point.type.shape)} ({type(e).__name__}: {str(e)[:120]})",
                                    file=file, where=f"line {number}") from None
        if point.type.quant is not None or point.type.numpy_dtype.kind in "iub":
            return data.round().astype(np.int64), False  # stored integers, as the Debug layer prints them
        return data, True

    def inputs(self, points: Sequence[Point]) -> list[np.ndarray] | None:
        return stored_arrays(self, points)


def _record_head(line: bytes, path: str, number: int) -> tuple[str, int, list[int]]:
    """(layerName, outputSlot, shape) of a record line, read without parsing its data."""
    try:
        cut = line.index(b'"data"')
        head = json.loads(line[:cut].rstrip().rstrip(b",") + b"}")
        return str(head["layerName"]), int(head["outputSlot"]), [int(d) for d in head["shape"]]
    except (ValueError, KeyError, TypeError):
        raise InvalidInputError("is not an Arm NN debug record (a JSON object with layerName, outputSlot, "
                                "shape, data)", file=path, where=f"line {number}") from None


class FloatReference:
    """The source graph's nn form (after legalization, before any fusion) evaluated in float64 with
    every quantized tensor dequantized (nn2tosa.comparison.nn_numpy, evaluate(real=True)): the values the
    model means, with no rounding to its types. Each source tensor's value is written to a temporary
    directory as it is computed, so no more than the evaluation's live values are held at once."""

    description = "nn2tosa's float64 reference of the source graph"

    def __init__(self, source: Any, inputs: Sequence[np.ndarray], points: Sequence[Point]):
        from nn2tosa.api import convert, tosa_pipeline
        from nn2tosa.comparison.nn_numpy import evaluate
        from nn2tosa.comparison.points import boundary_values

        passes = tosa_pipeline(source.meta.get("format", "unknown"))[:1]  # legalize only
        nn = convert(source, passes=passes).graph
        self.dir = tempfile.TemporaryDirectory(prefix="nn2tosa-float-")
        self.files: dict[str, str] = {}
        self.missing = ""
        wanted: dict[Any, list[Point]] = {}
        by_loc = boundary_values(nn)
        slots: dict[Any, int] = {}
        for p in points:
            slots[p.loc] = slots.get(p.loc, 0) + 1
        for p in points:
            if p.status == "input":
                continue
            size = p.type.num_elements
            candidates = [v for v in by_loc.get(p.loc, []) if nn.tensor_type(v).num_elements == size]
            if slots[p.loc] > 1:  # a multi-output layer legalizes to one op with its results in slot order
                candidates = [v for v in candidates if v.index == p.slot] or candidates[p.slot:p.slot + 1]
            if candidates:
                wanted.setdefault(candidates[-1], []).append(p)
        inputs_by_name = {nn.input_name(n): a for n, a in zip(nn.inputs, inputs)}

        def visit(value: Any, array: np.ndarray) -> None:
            for p in wanted.get(value, []):
                file = os.path.join(self.dir.name, f"{len(self.files)}.npy")
                np.save(file, array)
                self.files[p.key] = file

        try:
            evaluate(nn, inputs_by_name, real=True, visit=visit)
        except NotImplementedError as e:  # the tensors computed before it stay
            self.missing = str(e)
        self.inputs_given = list(inputs)

    def get(self, point: Point) -> tuple[np.ndarray, bool] | None:
        file = self.files.get(point.key)
        return None if file is None else (np.load(file), True)

    def inputs(self, points: Sequence[Point]) -> list[np.ndarray] | None:
        return self.inputs_given


__all__ = ["Reference", "open_reference", "stored_arrays", "NpyDirectory", "ArmnnDebugDump", "FloatReference"]
