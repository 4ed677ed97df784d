"""Control flow (COND_IF, WHILE_LOOP) and variables through both emitters.

Every input here is written by tosa-opt (--tosa-serialize) from MLIR; the checks use the real tools:
MLIR's parser and verifier (mlir-opt) and tosa-validate on the MLIR we write, the TOSA reference model
on the .tosa we write (same outputs as on tosa-opt's file, for both branches of a COND_IF and loops
that run zero, one and several times), and tosa-opt --tosa-deserialize reading our .tosa back.
"""
from __future__ import annotations

import functools
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli
from test_emit import TOSA_OPT, run_reference
from test_tosa_reader import CONTROL_FLOW_MLIR, VARIABLES_MLIR, tosa_opt_serialize

from nn2tosa.api import convert, programs
from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.frontend import load

MLIR_OPT = Path(sysconfig.get_paths()["purelib"]) / "mlir" / "bin" / "mlir-opt"

# A while_loop inside the then branch of a cond_if (y = n * x when cond, else |x|), and a variable:
# tosa-opt writes the variable's tensor into every block. The lit test converts the same file.
NESTED_MLIR = (Path(__file__).resolve().parents[2] / "lit_tests" / "frontend" / "tosa" / "Inputs"
               / "control_flow.mlir").read_text()

SOURCES = {"control_flow": CONTROL_FLOW_MLIR, "nested": NESTED_MLIR, "variables": VARIABLES_MLIR}
X = np.array([1.5, -2.0, 0.25], np.float32)
# Feeds per case: both branches of every cond_if; loops of 0, 1 and several iterations.
FEEDS = {
    "control_flow": [[np.array(c), X[:2], np.array(n, np.int32)] for c in (True, False) for n in (0, 1, 7)],
    "nested": [[np.array(c), X, np.array(n, np.int32)] for c in (True, False) for n in (0, 1, 5)],
    "variables": [[X[:2]]],
}


@functools.lru_cache(maxsize=None)
def tosa_opt_file(case: str) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return tosa_opt_serialize(SOURCES[case], Path(tmp))


@functools.lru_cache(maxsize=None)
def our_file(case: str) -> bytes:
    return convert(tosa_opt_file(case)).tosa_flatbuffer()


def deserialized(data: bytes, tmp_path: Path) -> str:
    """tosa-opt's MLIR of a .tosa (pretty form, no locations)."""
    source = tmp_path / "read.tosa"
    source.write_bytes(data)
    empty = tmp_path / "empty.mlir"
    empty.write_text("module {}\n")
    out = tmp_path / "read.mlir"  # not stdout: tosa-opt prints version warnings there
    r = subprocess.run([str(TOSA_OPT), f"--tosa-deserialize=tosa-flatbuffer-filename={source}", str(empty),
                        "-o", str(out)], capture_output=True, timeout=120, text=True)
    assert r.returncode == 0, r.stderr
    return out.read_text()


def op_sequence(mlir_text: str) -> list[str]:
    """The op names of a module in walk order (what the module computes, without names and locations)."""
    from mlir import ir

    from nn2tosa.ir.mlir_bridge import new_context

    names: list[str] = []
    with new_context():
        module = ir.Module.parse(mlir_text)

        def visit(op: ir.Operation) -> ir.WalkResult:
            names.append(op.name)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return names


# ------------------------------------------------------------------------------ .tosa
@pytest.mark.parametrize("case", SOURCES)
def test_reference_model_runs_our_tosa_as_it_runs_tosa_opts(case):
    theirs, ours = tosa_opt_file(case), our_file(case)
    for feeds in FEEDS[case]:
        expected = run_reference(theirs, feeds)
        got = run_reference(ours, feeds)
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b, err_msg=f"{case} {[f.tolist() for f in feeds]}")


def test_the_outputs_are_what_the_programs_compute():
    """Not only equal to tosa-opt's file: the values the MLIR says (so that neither file is trusted)."""
    for c, x, n in FEEDS["nested"]:
        [y] = run_reference(our_file("nested"), [c, x, n])
        np.testing.assert_allclose(y, x * n if c else np.abs(x))
    for c, x, n in FEEDS["control_flow"]:
        y, count = run_reference(our_file("control_flow"), [c, x, n])
        np.testing.assert_array_equal(y, x + x if c else x - x)
        assert count == 0


@pytest.mark.parametrize("case", SOURCES)
def test_second_round_is_byte_identical(case):
    ours = our_file(case)
    assert convert(ours).tosa_flatbuffer() == ours


@pytest.mark.parametrize("case", SOURCES)
def test_tosa_opt_reads_our_tosa_back_as_the_same_program(case, tmp_path):
    theirs = deserialized(tosa_opt_file(case), tmp_path)
    ours = deserialized(our_file(case), tmp_path)
    assert op_sequence(ours) == op_sequence(theirs)
    if case == "variables":
        assert "tosa.variable @state = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>" in ours


def test_branch_regions_follow_their_function_and_keep_their_names():
    """One region per graph: main first, then the branches in the order they are first named,
    breadth first; each region named after the graph the control-flow op names."""
    [main, *branches] = load(our_file("nested"))
    [cond_if] = [n for n in main.nodes() if main.op(n) == "tosa.cond_if"]
    then_graph, else_graph = main.attrs(cond_if)["then_graph"], main.attrs(cond_if)["else_graph"]
    names = [g.name for g in branches]
    assert names[:2] == [then_graph, else_graph] and len(names) == 4
    inner = {g.name: g for g in branches}[then_graph]
    [loop] = [n for n in inner.nodes() if inner.op(n) == "tosa.while_loop"]
    assert names[2:] == [inner.attrs(loop)["cond_graph"], inner.attrs(loop)["body_graph"]]


# ------------------------------------------------------------------------------ MLIR
@pytest.mark.parametrize("case", SOURCES)
def test_mlir_opt_parses_and_verifies_our_mlir(case, tmp_path):
    result = convert(tosa_opt_file(case))
    path = tmp_path / "out.mlir"
    result.write(str(path), "mlir")
    r = subprocess.run([str(MLIR_OPT), str(path)], capture_output=True, timeout=120, text=True)
    assert r.returncode == 0, r.stderr
    assert op_sequence(r.stdout) == op_sequence(path.read_text())
    assert result.validate() == []


def test_branches_are_regions_of_their_op_not_functions():
    result = convert(tosa_opt_file("nested"))
    assert result.report.functions == ["main"] and len(result.functions) == 5
    text = result.mlir_text()
    ops = op_sequence(text)
    assert ops.count("func.func") == 1
    # pre-order: the while_loop and its regions sit inside the cond_if's then region, before the else region's abs
    assert ops.index("tosa.cond_if") < ops.index("tosa.while_loop") < ops.index("tosa.abs")
    assert ops.count("tosa.yield") == 4 and ops.count("func.return") == 1
    assert 'tosa.tensor_name = "cond"' in text and "nn2tosa.name" not in text


@pytest.mark.parametrize("case", ["variables", "nested"])
def test_variables_are_declared_once_in_the_module(case):
    """In the nested case every branch graph read from tosa-opt's file declares the variable again."""
    assert sum(g.histogram().get("tosa.variable", 0) for g in load(tosa_opt_file(case))) >= 1
    result = convert(tosa_opt_file(case))
    ops = op_sequence(result.mlir_text())
    assert ops[:3] == ["builtin.module", "tosa.variable", "func.func"] and ops.count("tosa.variable") == 1
    assert "variable" in result.target.extensions


def test_target_names_the_controlflow_extension():
    result = convert(tosa_opt_file("nested"))
    assert "controlflow" in result.target.extensions
    assert result.validate() == []


# ------------------------------------------------------------------------------ refusals
def test_a_graph_naming_itself_is_unsupported():
    graphs = load(tosa_opt_file("control_flow"))
    main = graphs[0]
    [cond_if] = [n for n in main.nodes() if main.op(n) == "tosa.cond_if"]
    then_graph = main.attrs(cond_if)["then_graph"]
    main.attrs(cond_if)["then_graph"] = "main"
    with pytest.raises(UnsupportedError, match="every graph is a branch of another"):
        convert([g for g in graphs if g.name != then_graph])


def test_a_branch_running_itself_through_another_is_unsupported():
    """The then branch's while_loop made to run the then branch as its body: a cycle below main."""
    [main, *branches] = load(tosa_opt_file("nested"))
    [cond_if] = [n for n in main.nodes() if main.op(n) == "tosa.cond_if"]
    then_graph = {g.name: g for g in branches}[main.attrs(cond_if)["then_graph"]]
    [loop] = [n for n in then_graph.nodes() if then_graph.op(n) == "tosa.while_loop"]
    then_graph.attrs(loop)["body_graph"] = then_graph.name  # (the old body is now a function of its own)
    result = convert([main, *branches])
    with pytest.raises(UnsupportedError, match="recursion"):
        result.mlir_text()
    with pytest.raises(UnsupportedError, match="recursion"):
        result.tosa_flatbuffers()


def test_a_branch_missing_from_the_graphs_given_is_unsupported():
    main = load(tosa_opt_file("control_flow"))[0]
    with pytest.raises(UnsupportedError, match="is not among the graphs"):
        convert(main).mlir_text()


def test_programs_groups_each_function_with_its_branches():
    graphs = load(tosa_opt_file("nested"))
    [unit] = programs(graphs)
    assert unit[0] is graphs[0] and sorted(g.name for g in unit) == sorted(g.name for g in graphs)
    plain = load(tosa_opt_file("variables"))
    assert programs(plain) == plain


def test_the_0100_layout_refuses_control_flow_with_the_reason(tmp_path):
    source = tmp_path / "cf.tosa"
    source.write_bytes(tosa_opt_file("control_flow"))
    r = run_cli("convert", str(source), "--tosa-version", "0.100-draft", "-o", str(tmp_path / "out.tosa"))
    assert r.returncode == 3
    message = r.stderr.decode()
    assert "written in the TOSA 1.0 layout only" in message and "Traceback" not in message


def test_run_takes_a_tosa_with_control_flow_as_one_model(tmp_path):
    """`nn2tosa run` (nn2tosa/check.py) groups the branch graphs with main, as convert does."""
    source = tmp_path / "nested.tosa"
    source.write_bytes(tosa_opt_file("nested"))
    feeds = [np.array(True), X, np.array(3, np.int32)]
    paths = []
    for i, feed in enumerate(feeds):
        paths.append(tmp_path / f"in{i}.npy")
        np.save(paths[-1], feed)
    r = run_cli("run", str(source), "--inputs", *map(str, paths), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out" / "output0.npy"), 3 * X)
