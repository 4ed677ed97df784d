"""Whole ExecuTorch programs (.pte): every corpus program converts to one TOSA function whose outputs on
the TOSA reference model equal PyTorch's (the corpus's expected arrays), the KV-cache decoder over its
3 steps with its buffers as state; corrupt plans are exit 2 and unsupported operators exit 3 (or the
host's, with --partial). The corpus is ../shared/corpus/mps/programs (README.md there)."""
from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn2tosa import convert
from nn2tosa.check import compare, prepare, run
from nn2tosa.frontend import load
from nn2tosa.frontend.mps.pte import read_program

PROGRAMS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "mps" / "programs"
STATELESS = ["control_single", "convnext_small", "cumsum_topk", "llama_prefill_dimorder", "llama_prefill_sdpa"]
DECODE = "llama_decode_kvcache"
# the CPU operator calls each program's plan makes (the corpus README's table)
CPU_CALLS = {"control_single": 0, "convnext_small": 1, "cumsum_topk": 2, "llama_prefill_dimorder": 9,
             "llama_prefill_sdpa": 3, DECODE: 11}

pytestmark = pytest.mark.skipif(not PROGRAMS.is_dir(), reason=f"the program corpus is not at {PROGRAMS}")


def _reference_model() -> None:
    pytest.importorskip("tosa_reference_model", reason="tosa-tools (the TOSA reference model) is not installed")


def _arrays(pattern: str) -> list[np.ndarray]:
    found, k = [], 0
    while (PROGRAMS / pattern.format(k=k)).exists():
        found.append(np.load(PROGRAMS / pattern.format(k=k)))
        k += 1
    return found


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nn2tosa", *args], capture_output=True, text=True, timeout=600)


# ------------------------------------------------------------------------------ one graph, one function
@pytest.mark.parametrize("name", STATELESS + [DECODE])
def test_a_program_is_one_graph_and_one_function(name: str):
    (g,) = load(PROGRAMS / f"{name}.pte")
    kernels = [n for n in g.nodes() if g.op(n) == "executorch.kernel"]
    if name == "control_single":  # one delegate call and nothing else: the delegate's graph itself
        assert g.meta["container"] == "pte" and not kernels
    else:
        assert g.meta["container"] == "program" and len(kernels) == CPU_CALLS[name]
        steps = g.meta["plan_steps"]
        assert [s["instruction"] for s in steps] == list(range(len(steps)))  # plan order
    result = convert(PROGRAMS / f"{name}.pte")
    assert len(result.functions) == 1 and len(result.tosa_flatbuffers()) == 1
    assert not any(result.graph.op(n).startswith(("mps.", "executorch.", "nn.")) for n in result.graph.nodes())
    assert result.validate() == []


@pytest.mark.parametrize("name", STATELESS)
def test_a_program_computes_what_pytorch_does(name: str):
    _reference_model()
    model = prepare(str(PROGRAMS / f"{name}.pte"))
    outputs, status, messages = run(model, _arrays(f"{name}.input{{k}}.npy"))
    assert status == "TOSA_VALID", messages
    expected = _arrays(f"{name}.expected{{k}}.npy")
    assert len(outputs) == len(expected)
    for e, actual in zip(expected, outputs):
        assert actual.dtype == e.dtype  # int64 top-k indices come back as int64
        c = compare(e, actual, "mixed")  # floats within 1e-4 relative, integers exactly
        assert c.ok, (name, c)


# ------------------------------------------------------------------------------ state
def _decode_steps() -> list[tuple[list[np.ndarray], np.ndarray]]:
    return [(_arrays(f"{DECODE}.step{s}.input{{k}}.npy"), np.load(PROGRAMS / f"{DECODE}.step{s}.expected0.npy"))
            for s in range(3)]


def test_decode_buffers_are_found_as_the_plan_writes_them():
    (g,) = load(PROGRAMS / f"{DECODE}.pte")
    meta = json.loads((PROGRAMS / f"{DECODE}.meta.json").read_text())
    want = [(f"buffer{b['plan_value_index']}", list(b["shape"]), {"int64": "i64", "float32": "f32"}[b["dtype"]])
            for b in meta["mutable_buffers"]]
    assert [(s["name"], s["shape"], s["dtype"]) for s in g.meta["state"]] == want
    assert all(s["initial"] == "zeros" for s in g.meta["state"])


def test_decode_three_steps_with_state_carried():
    """Step S's logits depend on the cache rows steps < S wrote: all three equal PyTorch's only if the
    state is carried (and starts at zero)."""
    _reference_model()
    model = prepare(str(PROGRAMS / f"{DECODE}.pte"))
    assert model.state_names == [f"buffer{i}" for i in range(6)]
    state = model.initial_state()
    for inputs, expected in _decode_steps():
        outputs, status, messages = run(model, inputs, state=state)
        assert status == "TOSA_VALID", messages
        logits, state = outputs[0], outputs[1:]
        assert compare(expected, logits, "fp32").ok
    assert [int(state[0]), int(state[1])] == [3, 3]  # the counters: cache_position + 1
    # without carrying the caches, step 1 differs from PyTorch: the test above can fail
    outputs, _, _ = run(model, _decode_steps()[1][0])
    assert not compare(_decode_steps()[1][1], outputs[0], "fp32").ok


def test_decode_state_as_tosa_variables():
    """The default form: the float caches are TOSA variables (declared, read, written), the int64
    counters (int32 in TOSA) stay inputs and outputs, because TOSA 1.0 variables hold i8/f16/f32 only;
    the report says so. The .tosa runs on the reference model (step 0: variables start at zero)."""
    _reference_model()
    import tosa_reference_model

    result = convert(PROGRAMS / f"{DECODE}.pte")
    ops = [result.graph.op(n) for n in result.graph.nodes()]
    assert ops.count("tosa.variable") == 4 and ops.count("tosa.variable_read") == 4
    assert ops.count("tosa.variable_write") == 4
    assert "variable" in result.target.extensions and result.validate() == []
    assert [g for g in result.report.boundary_changes if g.startswith("state buffer")][0].startswith(
        "state buffer0 (i64[], carried as i32)")
    text = result.mlir_text(generic=False, elide_constants=True)
    assert re.search(r"tosa.variable @buffer2 = dense\S* : tensor<1x2x32x16xf32>", text), text[:2000]
    assert "tosa.variable_write @buffer5" in text
    inputs, expected = _decode_steps()[0]
    feed = [a.astype(np.int32) for a in inputs] + [np.zeros((), np.int32)] * 2
    outs, status = tosa_reference_model.run(result.tosa_flatbuffer(), feed, tosa_level="EIGHTK")
    assert str(status).endswith("TOSA_VALID")
    assert compare(expected, np.asarray(outs[0]).reshape(expected.shape), "fp32").ok


def test_state_io_names_the_buffers():
    result = convert(PROGRAMS / f"{DECODE}.pte", state="io")
    g = result.graph
    assert [g.input_name(n) for n in g.inputs] == ["input0", "input1"] + [f"buffer{i}" for i in range(6)]
    assert [o.name for o in g.outputs] == ["output0"] + [f"buffer{i}_next" for i in range(6)]
    assert not any(g.op(n).startswith("tosa.variable") for n in g.nodes())


def test_cli_check_steps():
    _reference_model()
    stem = str(PROGRAMS / DECODE)
    inputs = [f"{stem}.step{s}.input{k}.npy" for s in range(3) for k in range(2)]
    expected = [f"{stem}.step{s}.expected0.npy" for s in range(3)]
    r = _cli("check", f"{stem}.pte", "--steps", "3", "--inputs", *inputs, "--expected", *expected)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 of 3 outputs within fp32 tolerance" in r.stdout and "as TOSA variables: buffer2" in r.stdout
    r = _cli("check", f"{stem}.pte", "--steps", "3", "--inputs", *inputs[:4])
    assert r.returncode == 2 and "6 array(s) needed for 3 steps, 4 array(s) given" in r.stderr


def test_cli_convert_state_io_and_partition(tmp_path: Path):
    out = tmp_path / "d.mlir"
    r = _cli("convert", str(PROGRAMS / f"{DECODE}.pte"), "--state", "io", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "tosa.variable" not in out.read_text()
    r = _cli("convert", str(PROGRAMS / f"{DECODE}.pte"), "--partition", "1", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert '"partition1"' in out.read_text()
    assert len(load(PROGRAMS / f"{DECODE}.pte", partitions=True)) == 3


def test_cli_inspect_shows_the_plan():
    r = _cli("inspect", str(PROGRAMS / f"{DECODE}.pte"))
    assert r.returncode == 0, r.stderr
    assert "    5 delegate 1: 212 MPS nodes" in r.stdout
    assert "   13 aten::copy_(%5:float[1, 2, 32, 16], %22:float[1, 2, 32, 16], False) writes %5" in r.stdout
    assert "buffer0: scalar i64 (value %0), mutated, initial zeros" in r.stdout
    info = json.loads(_cli("inspect", "--json", str(PROGRAMS / "cumsum_topk.pte")).stdout)
    assert [s.get("operator", s["kind"]) for s in info["plan_steps"]] == [
        "delegate", "aten::cumsum.out", "delegate", "aten::topk.values", "delegate"]
    assert info["buffers"] == []


# ------------------------------------------------------------------------------ corrupt and unsupported plans
def _instruction(data: bytes, k: int):
    plan = read_program(memoryview(data)).get("execution_plan")[0]
    return plan, plan.get("chains")[0].get("instructions")[k].get("instr_args")


def _patched(tmp_path: Path, name: str, patch) -> Path:
    data = bytearray((PROGRAMS / f"{name}.pte").read_bytes())
    patch(data)
    path = tmp_path / f"{name}.pte"
    path.write_bytes(bytes(data))
    return path


def test_bad_value_index_is_exit_2(tmp_path: Path):
    def patch(data: bytearray) -> None:
        _, call = _instruction(bytes(data), 1)  # aten::cumsum.out
        start, _ = call.vector_span("args")
        struct.pack_into("<i", data, start, 9999)

    r = _cli("convert", str(_patched(tmp_path, "cumsum_topk", patch)), "-o", str(tmp_path / "x.mlir"))
    assert r.returncode == 2, r.stderr
    assert "instruction 1 (aten::cumsum.out): value index 9999 is out of range (the plan has 14 values)" in r.stderr
    assert not (tmp_path / "x.mlir").exists()


def test_operator_index_out_of_range_is_exit_2(tmp_path: Path):
    def patch(data: bytearray) -> None:
        _, call = _instruction(bytes(data), 3)  # aten::topk.values, operator 1 (operator 0 is not written)
        struct.pack_into("<i", data, call._pos(call._plan("op_index")), 7)

    r = _cli("convert", str(_patched(tmp_path, "cumsum_topk", patch)), "-o", str(tmp_path / "x.mlir"))
    assert r.returncode == 2, r.stderr
    assert "instruction 3: operator index 7 is out of range (the plan has 2)" in r.stderr


def test_wrong_evalue_kind_is_exit_2(tmp_path: Path):
    """cumsum's dim (an Int), retagged as a Bool: the call reads a boolean where it needs an integer."""
    def patch(data: bytearray) -> None:
        plan, call = _instruction(bytes(data), 1)
        value = plan.get("values")[int(call.get("args")[1])]
        tag = value._pos(value._plan("val").tag_plan())
        data[tag] = 3  # KernelTypes.Bool

    r = _cli("convert", str(_patched(tmp_path, "cumsum_topk", patch)), "-o", str(tmp_path / "x.mlir"))
    assert r.returncode == 2, r.stderr
    assert "instruction 1 (aten::cumsum): argument 1 is True, where an integer is needed" in r.stderr


def test_unknown_operator_is_unsupported_or_left_to_the_host(tmp_path: Path):
    def patch(data: bytearray) -> None:
        i = bytes(data).index(b"aten::topk")
        data[i:i + 10] = b"aten::topq"

    path = _patched(tmp_path, "cumsum_topk", patch)
    r = _cli("convert", str(path), "-o", str(tmp_path / "x.mlir"))
    assert r.returncode == 3 and "instruction 3 (aten::topq): no legalization rule for this operator" in r.stderr
    r = _cli("convert", str(path), "--partial", "-o", str(tmp_path / "x.tosa"))
    assert r.returncode == 0, r.stderr
    sidecar = json.loads((tmp_path / "x.partition.json").read_text())
    (host,) = sidecar["host"]
    assert host["name"] == "instruction 3" and host["call"]["operator"] == "aten::topq.values"
    assert [a["kind"] for a in host["call"]["arguments"]] == ["Tensor", "Int", "Int", "Bool", "Bool", "Tensor",
                                                              "Tensor"]
    order = [s.get("host") or s["function"] for s in sidecar["steps"]]
    assert order.index("instruction 3") < len(order) - 1  # the last partition runs after it
