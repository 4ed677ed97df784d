"""The pass manager: pipelines by name, verification, IR dumps, timing; dce and fold."""
import io

import numpy as np
import pytest

from nn2tosa.diagnostics import UsageError
from nn2tosa.ir import Graph, TensorType, Value, VerificationError
from nn2tosa.passes import PassManager, available_passes, register_pass

F = TensorType((2,), "f32")


def graph_with_dead_code():
    g = Graph()
    x = g.add_input(F, "x")
    a = g.add_op("nn.constant", [], [F], {"value": np.array([1, 2], np.float32)})
    b = g.add_op("nn.constant", [], [F], {"value": np.array([3, 4], np.float32)})
    s = g.add_op("nn.add", [Value(a), Value(b)], [F])
    g.add_op("nn.neg", [x], [F])  # dead
    m = g.add_op("nn.mul", [x, Value(s)], [F])
    g.add_output(Value(m), "y")
    return g


def test_dce_then_fold():
    g = graph_with_dead_code()
    PassManager.from_names("dce,fold").run(g)
    assert g.histogram() == {"nn.constant": 1, "nn.mul": 1}
    const = next(n for n in g.nodes() if g.op(n) == "nn.constant")
    np.testing.assert_array_equal(g.attrs(const)["value"], [4, 6])


def test_fold_does_not_fold_ops_reading_inputs():
    g = graph_with_dead_code()
    PassManager.from_names("fold").run(g)
    assert g.histogram()["nn.mul"] == 1 and g.histogram()["nn.neg"] == 1


def test_unknown_pass_lists_the_available_ones():
    with pytest.raises(UsageError, match="unknown pass nope; available: .*dce"):
        PassManager.from_names("dce,nope")


def test_verify_each_catches_a_broken_pass():
    @register_pass("test-break-graph")
    def break_graph(graph: Graph) -> None:
        """Adds an op with a missing operand."""
        graph.add_op("nn.add", [graph.input_values()[0]], [F])

    g = graph_with_dead_code()
    with pytest.raises(VerificationError, match="expects 2 operands"):
        PassManager.from_names("test-break-graph").run(g)
    PassManager.from_names("test-break-graph", verify_each=False).run(graph_with_dead_code())
    del available_passes.__globals__["_PASSES"]["test-break-graph"]


def test_print_ir_after_and_timing():
    out = io.StringIO()
    PassManager.from_names("dce,fold", print_ir_after=frozenset({"fold"}), timing=True, out=out).run(
        graph_with_dead_code()
    )
    text = out.getvalue()
    assert "IR Dump After fold" in text and "IR Dump After dce" not in text
    assert "Pass execution timing report" in text and " dce\n" in text and " fold\n" in text


def test_print_ir_after_a_pass_not_in_the_pipeline_is_an_error():
    with pytest.raises(UsageError, match="not in the pipeline"):
        PassManager.from_names("dce", print_ir_after=frozenset({"fold"})).run(graph_with_dead_code())


def test_a_conversion_loads_only_its_own_format():
    """The legalizations register when a pipeline names them, and reading one format does not import
    the other's reader: an Arm NN conversion never loads the MPS code, nor the reverse (start-up time)."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    probe = """
import sys
import nn2tosa
from nn2tosa.passes import available_passes, parse_pipeline
assert "nn2tosa.passes.legalize_mps" not in sys.modules and "nn2tosa.passes.legalize_armnn" not in sys.modules
nn2tosa.convert(sys.argv[1])
loaded = sorted(m for m in sys.modules if m in ("nn2tosa.passes.legalize_mps", "nn2tosa.passes.legalize_armnn",
                                                "nn2tosa.frontend.mps.reader", "nn2tosa.frontend.armnn.reader"))
print(",".join(loaded))
assert [p.name for p in parse_pipeline("legalize-mps,legalize-armnn")] == ["legalize-mps", "legalize-armnn"]
assert {"legalize-mps", "legalize-armnn", "canonicalize", "lower-to-tosa"} <= set(available_passes())
"""
    out = subprocess.run([sys.executable, "-c", probe, str(repo / "examples" / "cnn_f32.armnn")],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "nn2tosa.frontend.armnn.reader,nn2tosa.passes.legalize_armnn"


def test_instrumentations_see_every_pass_with_its_statistics():
    @register_pass("test-count-ops")
    def count_ops(graph: Graph) -> dict[str, int]:
        """Counts the ops (a pass with statistics)."""
        return {"ops": len(graph)}

    seen = []

    class Recorder:
        def before_pass(self, info, graph, index, total):
            seen.append(("before", info.name, index, total))

        def after_pass(self, info, graph, seconds, statistics):
            assert seconds >= 0
            seen.append(("after", info.name, statistics))

    try:
        PassManager.from_names("dce,test-count-ops", instrumentations=[Recorder()]).run(graph_with_dead_code())
    finally:
        del available_passes.__globals__["_PASSES"]["test-count-ops"]
    assert seen == [("before", "dce", 0, 2), ("after", "dce", {}),
                    ("before", "test-count-ops", 1, 2), ("after", "test-count-ops", {"ops": 5})]  # dce erased the neg


def test_convert_runs_the_pass_manager_and_reports_any_pass_statistics():
    """api.convert drives the same PassManager: a pass's statistics reach the report whatever its name."""
    from nn2tosa.api import convert

    @register_pass("test-statistics")
    def statistics(graph: Graph) -> dict[str, int]:
        """Reports one made-up rewrite."""
        return {"test-rewrite": 2}

    g = graph_with_dead_code()
    g.meta["format"] = "nn"
    try:
        result = convert(g, passes=["test-statistics", "canonicalize", "test-statistics", "lower-to-tosa"])
    finally:
        del available_passes.__globals__["_PASSES"]["test-statistics"]
    assert result.report.rewrites["test-rewrite"] == 4
    assert result.report.rewrites["constant-fold"] == 1  # canonicalize's, through the same hook
    assert list(result.report.timings)[:3] == ["test-statistics", "canonicalize", "lower-to-tosa"]


def test_passes_read_the_managers_context_and_leave_remarks():
    """A pass sees the context it runs under (not the graph's meta) and reports into its remarks; an
    unsupported op is kept there for a partial conversion's context, raised otherwise."""
    from nn2tosa.diagnostics import Unsupported, UnsupportedError
    from nn2tosa.ir import Graph
    from nn2tosa.passes.context import PassContext, pass_context, report_unsupported
    from nn2tosa.passes.manager import PassInfo

    seen = []

    def probe(graph: Graph) -> None:
        seen.append((pass_context().semantics, pass_context().target))
        report_unsupported([Unsupported("nn.thing", "here", "no lowering")])

    pipeline = [PassInfo("probe", probe, "a probe")]
    kept = PassContext("cpuref", "ethos-u55", keep_unsupported=True)
    PassManager(pipeline, verify_each=False, context=kept).run(Graph())
    assert seen == [("cpuref", "ethos-u55")] and [u.what for u in kept.remarks.unsupported] == ["nn.thing"]
    assert pass_context() == PassContext()  # outside a run: the defaults again
    with pytest.raises(UnsupportedError, match="no lowering"):
        PassManager(pipeline, verify_each=False).run(Graph())
    assert seen[-1] == ("litert", None)
