"""`nn2tosa check` and `nn2tosa run`: run a model on the TOSA reference model (from `tosa-tools`).

    nn2tosa check MODEL --inputs a.npy ... --expected e.npy ... [--tolerance fp32|fp16|quantized|mixed]
    nn2tosa check MODEL                       # random inputs: is the TOSA valid, does it run?
    nn2tosa run MODEL.tosa --inputs a.npy ... -o outdir

MODEL is any model nn2tosa reads (a .tosa runs as it is; anything else is converted first). Arrays
are given in the model's source types and the outputs come back in them: TOSA has no unsigned or
64-bit tensors, so a uint8 tensor travels as the same bits in int8 and an int64 one as int32
(values must fit), exactly as the converted graph carries them.

Tolerances (those of the corpus the converter is tested against), per output:
  fp32       max |expected - actual| / max(1, max |expected|) <= 1e-4
  fp16       the same ratio <= 3e-2
  quantized  integers within 1 of the expected value (floats as fp32)
  mixed      integers and booleans exact, floats as fp32
The default follows the model's types: quantized if an input or output is, fp16 if the TOSA graph
computes in 16-bit floats anywhere (an MPS fp16 graph has float32 inputs and outputs), fp32 if
every output is float, mixed otherwise.

The reference model (C++) runs in a forked child: a graph or arrays it cannot handle may crash it
(SIGSEGV, SIGABRT, SIGFPE), never nn2tosa. A .tosa is converted like any model first (read, checked,
MLIR-verified, written again by nn2tosa), so the reference model never sees a hostile file's bytes.

Exit status: 0 when the reference model ran the graph validly (and, with --expected, every output
is within tolerance); 1 when an output is not within tolerance, or a graph nn2tosa converted does
not run validly (a bug); 2 for bad arguments or arrays, when tosa-tools is missing, when the
reference model crashes or finds the result unpredictable on the arrays (given or random), or when
it (or tosa-validate) rejects a .tosa input.
"""
from __future__ import annotations

import argparse
import contextlib
import faulthandler
import os
import pickle
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from nn2tosa.diagnostics import InvalidInputError, Nn2TosaError, UsageError
from nn2tosa.ir import TensorType, Value
from nn2tosa.options import ConvertOptions

FLOAT_BOUND = {"fp32": 1e-4, "fp16": 3e-2, "quantized": 1e-4, "mixed": 1e-4}
INTEGER_BOUND = {"fp32": 0, "fp16": 0, "quantized": 1, "mixed": 0}
TOLERANCES = tuple(FLOAT_BOUND)


def reference_model() -> Any:
    """The tosa_reference_model module, or a UsageError saying how to get it."""
    os.environ.setdefault("TOSA_MODEL_NO_BACKTRACE", "1")  # else it attaches gdb on a fatal error
    try:
        import tosa_reference_model
    except ImportError:
        raise UsageError("running TOSA needs the TOSA reference model, which is not installed: "
                         "pip install tosa-tools") from None
    return tosa_reference_model


# ------------------------------------------------------------------------------ the model to run
@dataclass
class Runnable:
    """A .tosa ready for the reference model, and the source types of its inputs and outputs."""

    name: str
    tosa: bytes
    input_names: list[str]
    inputs: list[TensorType]  # source types (what the user's arrays hold)
    outputs: list[TensorType]
    output_names: list[str]
    level: str  # "EIGHTK" or "NONE"
    computes_16bit_float: bool = False  # some tensor of the TOSA graph is f16 or bf16
    result: Any = None  # the nn2tosa.api.Result of the conversion
    from_tosa: bool = False  # the input was a .tosa: what the reference model rejects is the file's fault
    # a program's mutable buffers, as extra inputs and outputs after the model's own (the io form:
    # the reference model's Python API starts every call from the variables' initial values, so
    # state is carried between calls here); their source types, and their initial values
    state: list[TensorType] = field(default_factory=list)
    state_names: list[str] = field(default_factory=list)
    variables: Any = None  # the conversion with state as TOSA variables (validated, and what users deploy)

    def initial_state(self) -> list[np.ndarray]:
        return [np.zeros(t.shape, dtype=t.numpy_dtype) for t in self.state]
    source: Any = None  # the source graph that was converted (nn2tosa.ir.Graph)


def prepare(path: str, partition: int | None = None, options: ConvertOptions | None = None,
            **keywords: Any) -> Runnable:
    """Read `path` and convert it with `options` (or the ConvertOptions that `keywords` make, e.g.
    semantics="cpuref"; its `state` is chosen here: buffers as inputs and outputs for the reference
    model, and as variables for the report). A .tosa is converted too: the reference model then runs the
    flatbuffer nn2tosa writes from the graph it read and verified (operators in order, names and
    locations its own), never the file's bytes, on which a hostile file can crash it."""
    from nn2tosa.api import blame, convert, programs
    from nn2tosa.frontend import load
    from nn2tosa.options import CONVERT

    if options is None:
        options = ConvertOptions.from_keywords(keywords, what="prepare", stages=(CONVERT,))

    graphs = load(path, partitions=partition is not None)
    units = programs(graphs)  # a .tosa's branch graphs go with the function that runs them
    if partition is None and len(units) > 1:
        raise UsageError(f"{path} has {len(units)} partitions: choose one with --partition N")
    if partition is not None and not 0 <= partition < len(units):
        raise UsageError(f"--partition {partition}: {path} has {len(units)} partition(s)")
    unit = units[partition or 0]
    source = unit[0] if isinstance(unit, list) else unit  # the function first, then its branch graphs
    state = source.meta.get("state", [])  # (frontend/mps/program.py)
    buffers = {s["name"] for s in state}
    user_inputs = [n for n in source.inputs if source.input_name(n) not in buffers]
    user_outputs = [o for o in source.outputs if o.name not in {s["next"] for s in state}]
    try:
        result = convert(unit, source=path, options=replace(options, state="io"))
        result.mlir_module()  # MLIR's verifier sees the graph before the reference model does
        flatbuffer = result.tosa_flatbuffer()
        variables = convert(unit, source=path, options=replace(options, state="variables")) if buffers else None
    except Nn2TosaError as e:
        raise blame(e, graphs, path) from e
    # tensors only at a graph's boundary once it converted (a !tosa.shape there is no TOSA 1.0 graph)
    inputs = [source.tensor_type(Value(n, 0)) for n in user_inputs]
    outputs = [source.tensor_type(o.value) for o in user_outputs]
    state_inputs = [n for n in source.inputs if source.input_name(n) in buffers]
    return Runnable(path, flatbuffer, [source.input_name(n) for n in user_inputs], inputs, outputs,
                    [o.name for o in user_outputs], _level(result.target.level), _has_16bit_float(result.graph),
                    result, from_tosa=source.meta.get("format") == "tosa",
                    state=[source.tensor_type(Value(n, 0)) for n in state_inputs],
                    state_names=[source.input_name(n) for n in state_inputs], variables=variables,
                    source=source)


def _has_16bit_float(graph: Any) -> bool:
    return any(getattr(t, "dtype", None) in ("f16", "bf16") for _, types in graph.nx.nodes(data="types") for t in types)


def _level(level: str) -> str:
    return "EIGHTK" if level == "8k" else "NONE"


# ------------------------------------------------------------------------------ arrays in and out
def _describe(t: TensorType) -> str:
    return f"{'x'.join(map(str, t.shape)) or 'scalar'} {t.dtype}"


def to_boundary(array: np.ndarray, t: TensorType, what: str, file: str | None = None) -> np.ndarray:
    """`array` (in the source type `t`) as the TOSA graph's input holds it; InvalidInputError (naming
    `what` and the array's `file`) if it does not fit."""
    from nn2tosa.lowering.context import TOSA_ELEMENT_OF  # as lowering narrows boundary types

    want = t.numpy_dtype
    carried = TOSA_ELEMENT_OF.get(t.dtype)
    if tuple(array.shape) != tuple(t.shape) or array.dtype != want:
        raise InvalidInputError(f"{what} must be {_describe(t)} ({want}), the array is "
                                f"{'x'.join(map(str, array.shape)) or 'scalar'} {array.dtype}", file=file)
    if carried is None:
        return np.ascontiguousarray(array)
    from nn2tosa.ir import numpy_dtype

    target = numpy_dtype(carried)
    if target.itemsize == want.itemsize and want.kind in "ui":  # unsigned: the same bits, signed
        return np.ascontiguousarray(array).view(target)
    if want.kind in "iu" and array.size and (array.max() > np.iinfo(target).max or array.min() < np.iinfo(target).min):
        raise InvalidInputError(f"{what}: values must fit {carried}, the TOSA type that carries {t.dtype}",
                                file=file)
    return np.ascontiguousarray(array.astype(target))


def from_boundary(array: np.ndarray, t: TensorType) -> np.ndarray:
    """A reference-model output back in the source type `t`."""
    array = np.asarray(array).reshape(t.shape)
    want = t.numpy_dtype
    if array.dtype == want:
        return array
    # the same bits: unsigned carried as signed, bf16 (stored as uint16) returned as raw 2-byte strings
    if array.dtype.itemsize == want.itemsize and want.kind in "ui" and array.dtype.kind in "uiSV":
        return array.view(want)
    return array.astype(want)


def random_inputs(types: Sequence[TensorType], seed: int = 0) -> list[np.ndarray]:
    """Inputs of the right shapes and source types: floats uniform in [-1, 1], 8/16-bit integers over
    their whole range (quantized data), wider integers in [0, 4) (they are often indices or sizes),
    booleans either way."""
    rng = np.random.default_rng(seed)
    arrays = []
    for i, t in enumerate(types):
        if any(d < 0 for d in t.shape):
            raise UsageError(f"input {i} has the dynamic shape {t}: give its array with --inputs")
        dtype = t.numpy_dtype
        if t.dtype == "i1":
            a = rng.integers(0, 2, t.shape).astype(bool)
        elif dtype.kind == "f":
            a = rng.uniform(-1, 1, t.shape).astype(dtype)
        elif dtype.itemsize <= 2:
            info = np.iinfo(dtype)
            a = rng.integers(info.min, info.max, t.shape, endpoint=True).astype(dtype)
        else:
            a = rng.integers(0, 4, t.shape).astype(dtype)
        arrays.append(a)
    return arrays


def load_arrays(paths: Sequence[str]) -> list[np.ndarray]:
    arrays = []
    for p in paths:
        try:
            with open(p, "rb") as f:
                magic = f.read(6)
            if magic != b"\x93NUMPY":  # (numpy would take text for a pickle and talk about allow_pickle)
                raise InvalidInputError(f"not a .npy array: it starts with {magic!r}, where a .npy file "
                                        "starts with b'\\x93NUMPY' (numpy.save writes one)", file=p)
            arrays.append(np.load(p, allow_pickle=False))
        except FileNotFoundError:
            raise InvalidInputError("no such file", file=p) from None
        except IsADirectoryError:
            raise InvalidInputError("is a directory, not a .npy array", file=p) from None
        except (ValueError, OSError, EOFError) as e:
            raise InvalidInputError(f"not a .npy array: {' '.join(str(e).split())}", file=p) from None
    return arrays


# ------------------------------------------------------------------------------ running
@contextlib.contextmanager
def _captured_output() -> Iterator[list[str]]:
    """Hold what the reference model's C++ code writes to stdout and stderr (version warnings on every
    run); the caller shows it only when the run failed."""
    captured: list[str] = []
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as tmp:
        saved = [os.dup(1), os.dup(2)]
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            captured.append(tmp.read().decode(errors="replace"))


def run(model: Runnable, arrays: Sequence[np.ndarray], files: Sequence[str] = (),
        state: Sequence[np.ndarray] | None = None) -> tuple[list[np.ndarray], str, str]:
    """Run on the reference model: (outputs in the source types, status name, the model's messages).
    `files` names where the arrays came from, for error messages. A stateful model takes its buffers'
    values before the call as `state` (default: their initial values) and returns their values after
    it as further outputs, after its own."""
    trm = reference_model()
    if len(arrays) != len(model.inputs):
        raise UsageError(f"{model.name} has {len(model.inputs)} input(s) ({', '.join(model.input_names)}), "
                         f"{len(arrays)} array(s) given")
    array_files: list[str | None] = list(files) or [None] * len(arrays)
    feed = [to_boundary(a, t, f"input {i} '{n}'", f)
            for i, (a, t, n, f) in enumerate(zip(arrays, model.inputs, model.input_names, array_files))]
    state = model.initial_state() if state is None else state
    feed += [to_boundary(a, t, f"buffer '{n}'") for a, t, n in zip(state, model.state, model.state_names)]
    def reference_run() -> tuple[list[np.ndarray], str]:
        try:
            outs, status = trm.run(model.tosa, feed, tosa_level=model.level)
        except ValueError as e:
            return [], f"ERROR ({e})"
        return [np.asarray(o) for o in outs], str(status).rsplit(".", 1)[-1]

    with _captured_output() as messages:
        try:
            outs, status = in_child(reference_run)
        except ChildCrashed as e:
            outs, status = [], f"CRASHED ({e})"
    text = " ".join(line.strip() for line in messages[0].splitlines()
                    if line.strip() and "backward compatible" not in line)
    types = model.outputs + model.state
    if status != "TOSA_VALID" or len(outs) != len(types):
        return [], status, text
    names = model.output_names + [f"buffer '{n}' after the call" for n in model.state_names]
    for k, (o, t, name) in enumerate(zip(outs, types, names)):
        _check_reference_output(model, o, t, f"output {k} '{name}'" if k < len(model.outputs) else name)
    return [from_boundary(o, t) for o, t in zip(outs, types)], status, text


def _check_reference_output(model: Runnable, array: np.ndarray, t: TensorType, what: str) -> None:
    """The reference model's array for an output holds as many elements as the output's type, in a
    type of the same kind: the reference model reports TOSA_VALID for some outputs it cannot compute
    (an INT4 graph output comes back empty), so its arrays are checked, not trusted."""
    size = int(np.prod(t.shape, dtype=np.int64))
    want = t.numpy_dtype
    ok_kind = array.dtype.kind == want.kind or (array.dtype.kind in "ui" and want.kind in "ui") or t.dtype == "bf16"
    if array.size == size and ok_kind:
        return
    got = f"{array.size} value(s) of {array.dtype} for a {_describe(t)} tensor"
    if model.from_tosa:
        raise InvalidInputError(f"{what}: returned {got} (status TOSA_VALID): it cannot run this file",
                                file=model.name, where="the TOSA reference model")
    raise RuntimeError(f"{what}: the TOSA reference model returned {got} for a graph nn2tosa wrote (a bug)")


class ChildCrashed(Exception):
    """The child running the reference model died (its message: the signal or exit status)."""


def in_child(fn: Callable[[], Any], while_running: Callable[[], None] | None = None) -> Any:
    """fn() computed in a forked child and its result pickled back: the reference model is C++ that
    a graph it does not expect can crash (SIGSEGV, SIGABRT), which must not take nn2tosa with it.
    A child that dies is ChildCrashed here. `while_running()` runs in the parent meanwhile (reading
    what the child writes to a FIFO). Without fork (Windows), fn() runs in-process."""
    if not hasattr(os, "fork"):
        if while_running is not None:
            raise UsageError("reading the reference model's intermediate tensors needs os.fork")
        return fn()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no Python cleanup on the way out (it shares the parent's files)
        os.close(read_end)
        faulthandler.disable()  # a crash is reported by the parent, in one line, not dumped here
        try:
            try:
                payload = pickle.dumps(("ok", fn()))
            except BaseException as e:
                payload = pickle.dumps(("error", f"{type(e).__name__}: {e}"))
            with os.fdopen(write_end, "wb") as f:
                f.write(payload)
        finally:
            os._exit(0)
    os.close(write_end)
    if while_running is not None:
        while_running()
    with os.fdopen(read_end, "rb") as f:  # read before waiting: a large result fills the pipe
        payload = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        raise ChildCrashed(signal.Signals(os.WTERMSIG(status)).name)
    if not payload:
        raise ChildCrashed(f"exit status {os.waitstatus_to_exitcode(status)}")
    kind, value = pickle.loads(payload)  # (written by our own child, never by the input)
    if kind == "error":
        raise RuntimeError(f"in the reference model's process: {value}")
    return value


def refuse_invalid_run(model: Runnable, status: str, messages: str, given: str, problems: Sequence[str] = (), *,
                       random_arrays: bool = False) -> None:
    """InvalidInputError (exit 2, naming the model) when the run failed for the input's sake: the
    reference model crashed or found the result unpredictable while computing (a gather index past
    the end, an integer division by zero: the arrays, given or random, are outside what the model
    accepts), or, for a .tosa input, rejected the graph or tosa-validate did. A graph nn2tosa
    converted that the reference model finds invalid is left to the caller (a bug: exit 1)."""
    detail = f": {messages[:300]}" if messages else ""
    if status.startswith(("CRASHED", "TOSA_UNPREDICTABLE")) or (model.from_tosa and status != "TOSA_VALID"):
        hint = " (give arrays the model accepts with --inputs)" if random_arrays else ""
        raise InvalidInputError(f"{status} on {given}{detail}{hint}", file=model.name,
                                where="the TOSA reference model")
    if model.from_tosa and problems:
        raise InvalidInputError(f"fails tosa-validate for {model.result.target}: {'; '.join(problems)}",
                                file=model.name)


# ------------------------------------------------------------------------------ judging
def default_tolerance(model: Runnable) -> str:
    types = model.inputs + model.outputs
    if any(t.quant is not None for t in types):
        return "quantized"
    floats = [t for t in model.outputs if t.numpy_dtype.kind == "f" or t.dtype == "bf16"]
    if model.computes_16bit_float:
        return "fp16"
    return "fp32" if len(floats) == len(model.outputs) else "mixed"


@dataclass
class Comparison:
    ok: bool
    max_error: float
    kind: str  # "relative" (floats) or "absolute" (integers)
    bound: float
    note: str = ""


def float_error(expected: np.ndarray, actual: np.ndarray) -> tuple[float, int, int]:
    """How far float `actual` is from `expected` (same shape): the largest |difference| over the elements
    finite in both, relative to max(1, the largest of those |expected|); how many elements are NaN in
    one but not the other; how many are infinite in either and unequal."""
    w, g = expected.astype(np.float64), actual.astype(np.float64)
    nan = np.isnan(w) != np.isnan(g)
    both = ~np.isnan(w) & ~np.isnan(g)
    inf = both & (np.isinf(w) | np.isinf(g)) & (w != g)
    finite = both & np.isfinite(w) & np.isfinite(g)
    scale = max(1.0, float(np.max(np.abs(w[finite])))) if finite.any() else 1.0
    err = float(np.max(np.abs(w[finite] - g[finite]))) / scale if finite.any() else 0.0
    return err, int(nan.sum()), int(inf.sum())


def compare(expected: np.ndarray, actual: np.ndarray, tolerance: str) -> Comparison:
    """One output against its expected array under `tolerance` (see the module docstring)."""
    if expected.size != actual.size:
        return Comparison(False, float("inf"), "shape", 0, f"{actual.size} elements, expected {expected.size}")
    actual = actual.reshape(expected.shape)
    if expected.dtype.kind == "f":
        bound = FLOAT_BOUND[tolerance]
        err, nan, inf = float_error(expected, actual)
        note = ", ".join(f"{n} {k} mismatches" for k, n in (("NaN", nan), ("inf", inf)) if n)
        return Comparison(err <= bound and not note, err, "relative", bound, note)
    bound = INTEGER_BOUND[tolerance]
    g = actual.view(expected.dtype) if actual.dtype.itemsize == expected.dtype.itemsize else actual
    diff = np.abs(expected.astype(np.int64) - g.astype(np.int64))
    err = float(diff.max()) if diff.size else 0.0
    return Comparison(err <= bound, err, "absolute", bound)


# ------------------------------------------------------------------------------ commands
def _per_step(arrays: list[np.ndarray], files: Sequence[str], names: Sequence[str], steps: int, what: str,
              name: str) -> list[tuple[list[np.ndarray], list[str]]]:
    """`arrays` (given step after step) cut into `steps` groups, one array per name."""
    count = len(names)
    if arrays and len(arrays) != count * steps:
        per = f" per step: {count * steps} array(s) needed for {steps} steps," if steps > 1 else ","
        raise UsageError(f"{name} has {count} {what}(s) ({', '.join(names)}){per} {len(arrays)} array(s) given")
    files = list(files) or [""] * len(arrays)
    return [(arrays[k * count:(k + 1) * count], files[k * count:(k + 1) * count]) for k in range(steps)]


def _steps(args: argparse.Namespace) -> int:
    steps = getattr(args, "steps", None) or 1
    if steps < 1:
        raise UsageError(f"--steps {steps}: at least 1")
    return steps


def cmd_check(args: argparse.Namespace) -> int:
    reference_model()  # before any work: say at once when the reference model is missing
    steps = _steps(args)
    model = prepare(args.input, args.partition, ConvertOptions.from_arguments(args))
    given_arrays = load_arrays(args.inputs)
    inputs = _per_step(given_arrays, args.inputs, model.input_names, steps, "input", model.name)
    if not args.inputs:
        inputs = [(random_inputs(model.inputs, args.seed + k), []) for k in range(steps)]
    expected_steps = _per_step(load_arrays(args.expected), args.expected, model.output_names, steps, "output",
                               model.name)
    for expected, files in expected_steps:
        for i, (e, t, name, path) in enumerate(zip(expected, model.outputs, model.output_names, files)):
            if tuple(e.shape) != tuple(t.shape):
                raise InvalidInputError(f"output {i} '{name}' is {_describe(t)}, the expected array is "
                                        f"{'x'.join(map(str, e.shape)) or 'scalar'} {e.dtype}", file=path)
    problems = model.result.validate()
    given = "given inputs" if args.inputs else f"random inputs (seed {args.seed})"
    state = model.initial_state()
    ok, failed, total = True, 0, 0
    tolerance = args.tolerance or default_tolerance(model)
    for step, ((arrays, files), (expected, _)) in enumerate(zip(inputs, expected_steps)):
        outputs, status, messages = run(model, arrays, files, state)
        refuse_invalid_run(model, status, messages, given, problems, random_arrays=not args.inputs)
        head = f"step {step}: " if steps > 1 else ""
        if step == 0 or status != "TOSA_VALID":
            print(f"{model.name}: {head}reference model: {status} on {given}"
                  + (f" ({messages})" if status != "TOSA_VALID" and messages else ""))
        if step == 0:
            print(f"tosa-validate ({model.result.target}): " + ("valid" if not problems else "; ".join(problems)))
            if model.variables is not None:
                _describe_state(model)
        ok = ok and status == "TOSA_VALID" and not problems
        if not outputs:
            return 0 if ok else 1
        outputs, state = outputs[:len(model.outputs)], outputs[len(model.outputs):]
        failed += _judge(model, outputs, expected, tolerance, head)
        total += len(outputs)
    if expected_steps[0][0]:
        print(f"{total - failed} of {total} outputs within {tolerance} tolerance")
    return 0 if ok and not failed else 1


def _describe_state(model: Runnable) -> None:
    """What the stateful form holds: the buffers made TOSA variables (validated here), the ones kept
    as inputs and outputs, and how the steps carry state on the reference model."""
    variables = model.variables
    made = variables.graph.meta.get("state_variables", [])
    problems = variables.validate()
    print(f"state: {len(model.state)} buffer(s); as TOSA variables: {', '.join(made) or 'none'} "
          f"(tosa-validate {variables.target}: {'valid' if not problems else '; '.join(problems)})")
    for item in variables.report.boundary_changes:
        if item.startswith("state "):
            print(f"  {item[6:]}")
    print("  steps carry every buffer as an input and an output (--state io) on the reference model, whose "
          "Python API starts each call from the variables' initial values")


def _judge(model: Runnable, outputs: list[np.ndarray], expected: list[np.ndarray], tolerance: str, head: str) -> int:
    """Print each output against its expected array (or its range); the number not within tolerance."""
    failed = 0
    for i, (name, t, actual) in enumerate(zip(model.output_names, model.outputs, outputs)):
        what = f"{head}output {i} '{name}' {_describe(t)}"
        if not expected:
            finite = actual[np.isfinite(actual)] if actual.dtype.kind == "f" else actual
            span = f"values in [{finite.min()}, {finite.max()}]" if finite.size else "no finite values"
            print(f"{what}: {span}")
            continue
        c = compare(expected[i], actual, tolerance)
        failed += not c.ok
        verdict = "within" if c.ok else "NOT within"
        bound = f"{c.bound:g}" if c.kind == "relative" else f"{int(c.bound)}"
        note = f", {c.note}" if c.note else ""
        print(f"{what}: max {c.kind} error {c.max_error:.3g}{note}, {verdict} {tolerance} tolerance ({bound})")
    return failed


def cmd_run(args: argparse.Namespace) -> int:
    from nn2tosa.fileio import check_output_path, write_atomic

    check_output_path(args.output, directory=True)
    reference_model()
    steps = _steps(args)
    model = prepare(args.input, args.partition, ConvertOptions.from_arguments(args))
    inputs = _per_step(load_arrays(args.inputs), args.inputs, model.input_names, steps, "input", model.name)
    state = model.initial_state()
    results = []
    for arrays, files in inputs:
        outputs, status, messages = run(model, arrays, files, state)
        refuse_invalid_run(model, status, messages, "given inputs")
        if status != "TOSA_VALID":
            print(f"{model.name}: reference model: {status}" + (f" ({messages})" if messages else ""))
            return 1
        results.append(outputs[:len(model.outputs)])
        state = outputs[len(model.outputs):]
    out_dir = Path(args.output)
    out_dir.mkdir(parents=True, exist_ok=True)  # (check_output_path refused an existing file before the run)
    for step, outputs in enumerate(results):
        for i, (name, array) in enumerate(zip(model.output_names, outputs)):
            path = out_dir / (f"step{step}.output{i}.npy" if steps > 1 else f"output{i}.npy")
            write_atomic(path, _npy_bytes(array))
            print(f"{path}: '{name}' {'x'.join(map(str, array.shape)) or 'scalar'} {array.dtype}")
    return 0


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


__all__ = ["prepare", "run", "compare", "random_inputs", "to_boundary", "from_boundary", "default_tolerance",
           "Runnable", "Comparison", "cmd_check", "cmd_run"]
