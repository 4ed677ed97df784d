"""Resource limits (nn2tosa.limits), the semantic checks after reading, and all-or-nothing outputs.

The crafted files here are real corpus models with one field rewritten through the schema-aware
site map of bench/fuzz_long.py: a huge dimension claim, a deep rank, a list attribute of a
hundred thousand entries. Each must be refused with exit 2, one line naming the limit's option,
before anything large is allocated.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn2tosa import limits
from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.fileio import all_or_nothing, write_atomic
from nn2tosa.ir import Graph, TensorType
from nn2tosa.ir.limit_checks import check_graph
from nn2tosa.limits import LimitExceededError, Limits, parse_size, reserve, using

from conftest import CORPUS, fuzz_engine, requires_corpus


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nn2tosa", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


# ------------------------------------------------------------------------------ sizes and budget
def test_sizes_are_exact_for_huge_claims():
    assert limits.nbytes((1 << 31, 1 << 31, 1 << 31), "f32") == 4 << 93  # no int64 overflow
    assert limits.nbytes((2, -1, 3), "i8") == 6  # a dynamic dimension counts as 1
    assert limits.nbytes(10, "bf16") == 20
    assert limits.nbytes((4,), "i4") == 4  # int4 is held unpacked, one byte each
    assert limits.nbytes((4,), np.float64) == 32


@pytest.mark.parametrize("text, value", [("1024", 1024), ("64K", 64 << 10), ("512M", 512 << 20), ("2G", 2 << 30),
                                         ("2GiB", 2 << 30), ("3gb", 3 << 30), ("1T", 1 << 40)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "-1", "1.5G", "2X", "G"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_reserve_refuses_one_large_array_and_charges_the_total():
    with using(Limits(max_tensor_bytes=1000, max_total_bytes=2500)):
        assert limits.affordable((250,), "f32")
        assert not limits.affordable((251,), "f32")
        with pytest.raises(LimitExceededError, match="--max-tensor-bytes"):
            reserve((251,), "f32", "a fold")
        reserve((250,), "f32", "a fold")
        reserve((250,), "f32", "a fold")
        assert not limits.affordable((200,), "f32")  # 2000 spent, 800 more would pass 2500
        with pytest.raises(LimitExceededError, match="--max-total-bytes"):
            reserve((200,), "f32", "a fold")
    with using(Limits(max_tensor_bytes=1000, max_total_bytes=2500)):  # a new scope starts a new budget
        reserve((250,), "f32", "a fold")


def test_nothing_accumulates_outside_a_scope():
    """A long-lived process (the Python API) converting model after model keeps its full budget."""
    for _ in range(10):  # 10 GiB in all, above the 4 GiB total: fine, each outside any scope
        reserve((1 << 30,), "i8", "a fold")


def test_limits_are_scoped():
    default = limits.current()
    with using(Limits(max_ops=5)) as inner:
        assert limits.current() is inner
    assert limits.current() == default == Limits()


# ------------------------------------------------------------------------------ check_graph
def _graph(shape=(2, 3), dtype="f32") -> Graph:
    g = Graph()
    x = g.add_input(TensorType(shape, dtype), "x")
    y = g.add_op("nn.relu", [x], [TensorType(shape, dtype)])
    g.add_output((y, 0), "y")
    return g


def test_check_graph_accepts_a_small_graph():
    check_graph(_graph())


@pytest.mark.parametrize("limit, graph, message", [
    (Limits(max_tensor_bytes=23), _graph(), "takes 24 bytes, above the limit of 23 bytes .--max-tensor-bytes"),
    (Limits(max_rank=1), _graph(), "rank 2, above the limit of 1 .--max-rank"),
    (Limits(max_ops=1), _graph(), "2 operations, above the limit of 1 .--max-ops"),
    (Limits(), _graph((1 << 20, 1 << 20)), "takes 4096.0 GiB"),
    (Limits(), _graph((2, -3)), "negative dimension"),
])
def test_check_graph_refuses(limit, graph, message):
    with using(limit), pytest.raises(InvalidInputError, match=message):
        check_graph(graph)


def test_check_graph_refuses_long_lists_bad_constants_and_cycles():
    g = _graph()
    g.attrs(g.outputs[0].value.node)["perm"] = list(range(70000))
    with pytest.raises(LimitExceededError, match="lists 70000 values.*--max-list-length"):
        check_graph(g)

    g = Graph()
    c = g.add_op("nn.constant", (), [TensorType((2, 3), "f32")], {"value": np.zeros((3, 2), np.float32)})
    g.add_output((c, 0), "c")
    with pytest.raises(InvalidInputError, match=r"constant data of shape \[3, 2\].*does not match"):
        check_graph(g)
    g.attrs(c)["value"] = np.zeros((2, 3), np.int32)
    with pytest.raises(InvalidInputError, match="int32"):
        check_graph(g)

    g = _graph()
    relu = g.outputs[0].value.node
    other = g.add_op("nn.relu", [(relu, 0)], [TensorType((2, 3), "f32")])
    g.set_operand(relu, 0, (other, 0))
    with pytest.raises(InvalidInputError, match="cycle"):
        check_graph(g)


def test_check_graph_passes_every_corpus_model():
    """The defaults never refuse a real model (the whole corpus loads: frontend.load runs check_graph)."""
    from nn2tosa.frontend import load

    if not (CORPUS / "manifest.json").is_file():
        pytest.skip(f"corpus not found at {CORPUS}")
    engine = fuzz_engine()
    for fmt in ("armnn", "mps"):
        for path in engine.corpus_seeds(CORPUS, fmt):
            load(path)


# ------------------------------------------------------------------------------ crafted files
def _rewrite(path: Path, fmt: str, kind: str, field: str, value: int) -> bytes:
    """`path`'s bytes with every site of (`kind`, `field`) set to `value`."""
    engine = fuzz_engine()
    data = bytearray(path.read_bytes())
    sites = [s for s in engine.file_sites(bytes(data), fmt) if s.kind == kind and s.name == field]
    assert sites, f"no {kind} site {field} in {path.name}"
    for s in sites:
        engine.mutation._write_int(data, s.pos, s.size, value)
    return bytes(data)


CRAFTED = [
    # (name, corpus file, format, site kind, field, value, message in stderr)
    ("armnn tensors claim 2^31 x 2^31 x ... elements", "armnn/perlayer_23.08/activation_abs_f32.armnn", "armnn",
     "dim", "dimensions", 0x7FFFFFFF, "--max-tensor-bytes"),
    # the MPS reader finds first that a weight's data cannot hold its claimed shape: refused all the same
    ("mps values claim 2^31 x 2^31 x ... elements", "mps/models/mlp_fp32.mpsgraph", "mps", "dim", "dims", 0x7FFFFFFF,
     r"--max-tensor-bytes|constant of type tensor<2147483647x2147483647xf32> holds \d+ bytes"),
]


@requires_corpus
@pytest.mark.parametrize("name, rel, fmt, kind, field, value, message", CRAFTED, ids=[c[0] for c in CRAFTED])
def test_huge_declared_tensor_is_refused_before_allocating(tmp_path, name, rel, fmt, kind, field, value, message):
    bad = tmp_path / ("bad" + Path(rel).suffix)
    bad.write_bytes(_rewrite(CORPUS / rel, fmt, kind, field, value))
    for args in (["inspect", str(bad)], ["convert", str(bad), "-o", str(tmp_path / "x.tosa")]):
        r = run_cli(*args)
        assert r.returncode == 2, r.stderr
        assert re.search(message, r.stderr) and len(r.stderr.splitlines()) == 1, r.stderr
        assert str(bad) in r.stderr
    assert not (tmp_path / "x.tosa").exists()


@requires_corpus
def test_limits_can_be_raised_and_lowered_from_the_command_line(tmp_path):
    model = CORPUS / "mps/models/mlp_fp32.mpsgraph"
    r = run_cli("inspect", str(model), "--max-tensor-bytes", "16")
    assert r.returncode == 2 and "--max-tensor-bytes" in r.stderr, r.stderr
    r = run_cli("inspect", str(model), "--max-ops", "1")
    assert r.returncode == 2 and "--max-ops" in r.stderr, r.stderr
    r = run_cli("convert", str(model), "-o", str(tmp_path / "x.mlir"), "--max-tensor-bytes", "1G", "--max-rank", "8")
    assert r.returncode == 0, r.stderr
    r = run_cli("convert", str(model), "-o", str(tmp_path / "x.mlir"), "--max-rank", "-1")
    assert r.returncode == 2 and "--max-rank" in r.stderr


# ------------------------------------------------------------------------------ all or nothing
def test_all_or_nothing_commits_every_output_together(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    with all_or_nothing():
        write_atomic(a, b"A")
        assert not a.exists()  # nothing appears before the scope ends
        write_atomic(b, lambda f: f.write(b"B"))
    assert a.read_bytes() == b"A" and b.read_bytes() == b"B"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.bin"]


def test_all_or_nothing_leaves_nothing_when_a_later_output_fails(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"old")

    def fail(f):
        f.write(b"half")
        raise RuntimeError("emitter failed")

    with pytest.raises(RuntimeError), all_or_nothing():
        write_atomic(a, b"new")
        write_atomic(b, fail)
    assert a.read_bytes() == b"old"  # the good output of the same run was not committed either
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin"]  # no temporaries


@requires_corpus
def test_convert_with_an_unwritable_second_output_writes_neither(tmp_path):
    model = CORPUS / "mps/models/mlp_fp32.mpsgraph"
    good = tmp_path / "x.tosa"
    good.write_bytes(b"previous good output")
    r = run_cli("convert", str(model), "-o", str(good), "-o", str(tmp_path / "missing-dir" / "x.mlir"))
    assert r.returncode == 2, r.stderr  # (refused before any work: a user error, issue 18)
    assert r.stderr.strip() == (f"nn2tosa: error: {tmp_path / 'missing-dir' / 'x.mlir'}: no such directory: "
                                f"{tmp_path / 'missing-dir'}")
    assert good.read_bytes() == b"previous good output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.tosa"]


@requires_corpus
def test_failed_conversion_keeps_existing_outputs(tmp_path):
    bad = tmp_path / "bad.armnn"
    bad.write_bytes((CORPUS / "armnn/perlayer_23.08/activation_abs_f32.armnn").read_bytes()[:200])
    outs = [tmp_path / "x.tosa", tmp_path / "x.mlir"]
    for o in outs:
        o.write_text("keep me")
    r = run_cli("convert", str(bad), "-o", str(outs[0]), "-o", str(outs[1]))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert [o.read_text() for o in outs] == ["keep me", "keep me"]
    assert sorted(os.listdir(tmp_path)) == ["bad.armnn", "x.mlir", "x.tosa"]


SPLAT_IR = """"func.func"() <{function_type = () -> tensor<SHAPExf32>, sym_name = "main"}> ({
  %0 = "nn.constant"() {value = dense<1.0> : tensor<SHAPExf32>} : () -> tensor<SHAPExf32>
  "func.return"(%0) : (tensor<SHAPExf32>) -> ()
}) : () -> ()
"""


def test_opt_refuses_a_splat_constant_too_large_to_build(tmp_path):
    """IR text can claim a huge constant in one short line (a splat): refused before numpy builds it."""
    ir = tmp_path / "g.mlir"
    ir.write_text(SPLAT_IR.replace("SHAPE", "65536x65536"))
    r = run_cli("opt", str(ir), "--passes=dce")
    assert r.returncode == 2, r.stderr
    assert "16.0 GiB" in r.stderr and "--max-tensor-bytes" in r.stderr and len(r.stderr.splitlines()) == 1
    r = run_cli("opt", str(ir), "--passes=dce", "--debug")
    assert "Traceback" in r.stderr and "LimitExceededError" in r.stderr
    ir.write_text(SPLAT_IR.replace("SHAPE", "4x4"))
    r = run_cli("opt", str(ir), "--passes=dce")
    assert r.returncode == 0 and "tensor<4x4xf32>" in r.stdout, r.stderr


# ------------------------------------------------------------------------------ passes that build arrays
def _broadcasts(count: int, size: int) -> Graph:
    """`count` nn.broadcast_to ops, each widening a 1-element constant to `size` float32 elements."""
    g = Graph()
    for i in range(count):
        c = g.add_op("nn.constant", (), [TensorType((1,), "f32")], {"value": np.ones(1, np.float32)})
        b = g.add_op("nn.broadcast_to", [(c, 0)], [TensorType((size,), "f32")], {"shape": [size]})
        g.add_output((b, 0), f"y{i}")
    return g


def _ops(g: Graph) -> list[str]:
    return sorted(g.op(n) for n in g.nodes())


def test_fold_leaves_what_the_limits_cannot_afford():
    from nn2tosa.passes.fold import fold

    with using(Limits(max_tensor_bytes=4000)):
        g = _broadcasts(1, 1001)  # 4004 bytes
        fold(g)
        assert _ops(g) == ["nn.broadcast_to", "nn.constant"]
        g = _broadcasts(1, 1000)
        fold(g)
        assert _ops(g) == ["nn.constant"] and g.attrs(g.outputs[0].value.node)["value"].shape == (1000,)
    with using(Limits(max_tensor_bytes=4000, max_total_bytes=10000)):  # two of three fit the total
        g = _broadcasts(3, 1000)
        fold(g)
        assert _ops(g).count("nn.broadcast_to") == 1


def test_builder_constants_are_charged_to_the_total():
    from nn2tosa.ir import Builder

    with using(Limits(max_tensor_bytes=4000, max_total_bytes=6000)):
        b = Builder(Graph())
        b.constant(np.zeros(1000, np.float32))
        with pytest.raises(LimitExceededError, match="a constant built by a pass.*--max-total-bytes"):
            b.constant(np.zeros(1000, np.float32))


def test_opt_refuses_ir_text_nested_deeper_than_the_mlir_parser_survives(tmp_path):
    """200,000 nested brackets crash MLIR's recursive parser (a segmentation fault); refused first."""
    from nn2tosa.ir.text import MAX_NESTING, ParseError, check_nesting

    deep = ('"func.func"() <{function_type = () -> (), sym_name = "main", x = DEEP}> ({\n'
            '  "func.return"() : () -> ()\n}) : () -> ()\n')
    ir = tmp_path / "deep.mlir"
    ir.write_text(deep.replace("DEEP", "[" * 200_000 + "]" * 200_000))
    r = run_cli("opt", str(ir), "--passes=dce")
    assert r.returncode == 2 and r.stderr == f"nn2tosa: error: {ir}: line 1: brackets nest deeper than 1000 levels\n"
    check_nesting(deep.replace("DEEP", "[" * (MAX_NESTING - 2) + "]" * (MAX_NESTING - 2)))  # inside <{ }>
    check_nesting('"' + "[" * 5000 + '" -> "\\"((("')  # brackets in strings and arrows do not count
    with pytest.raises(ParseError, match="line 3"):
        check_nesting("\n\n" + "(" * (MAX_NESTING + 1))


@requires_corpus
def test_copies_the_readers_make_count_towards_the_total(tmp_path):
    """Unpacked int4 weights are a copy: charged to --max-total-bytes like a pass's arrays."""
    model = CORPUS / "mps/models/qlinear_int4_group32_fp32.mpsgraph"
    r = run_cli("inspect", str(model), "--max-total-bytes", "1K")
    assert r.returncode == 2, r.stderr
    assert "unpacking int4 constant data" in r.stderr and "--max-total-bytes" in r.stderr
    assert run_cli("inspect", str(model)).returncode == 0


def test_a_graph_stops_growing_at_the_op_limit():
    g = Graph()
    x = g.add_input(TensorType((1,), "f32"), "x")
    with using(Limits(max_ops=3)):
        g.add_op("nn.relu", [x], [TensorType((1,), "f32")])
        g.add_op("nn.relu", [x], [TensorType((1,), "f32")])
        with pytest.raises(LimitExceededError, match="more than 3 operations.*--max-ops"):
            g.add_op("nn.relu", [x], [TensorType((1,), "f32")])
    assert len(g) == 3
