"""The Python API as a user calls it: load, convert, the Result's outputs, profiles, passes."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from mlir import ir
from mlir.passmanager import PassManager

import nn2tosa
from conftest import REPO
from nn2tosa.diagnostics import UnsupportedError, UsageError

EXAMPLE = REPO / "examples" / "cnn_f32.armnn"
EXAMPLE_INPUT = REPO / "examples" / "cnn_f32.input0.npy"
EXAMPLE_OUTPUT = REPO / "examples" / "cnn_f32.output0.npy"  # Arm NN CpuRef's output


def test_importing_the_package_loads_neither_mlir_nor_numpy():
    code = ("import sys, nn2tosa; before = [m for m in ('mlir', 'numpy') if m in sys.modules]; "
            "nn2tosa.convert; after = 'mlir' in sys.modules; "
            "from nn2tosa.cli import build_parser; build_parser(); print(before, after, 'mlir' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]", "False", "False"]


def test_converting_to_a_flatbuffer_loads_no_mlir():
    """MLIR (tens of MB) is imported only for an MLIR output: the pass pipeline that convert runs
    (the PassManager) imports the IR printer only to print."""
    code = (f"import sys, nn2tosa; nn2tosa.convert({str(EXAMPLE)!r}).tosa_flatbuffer(); "
            "print(sorted(m for m in sys.modules if m == 'mlir' or m.startswith('mlir.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_load_reads_a_path_or_bytes():
    from_path = nn2tosa.load(EXAMPLE)
    from_bytes = nn2tosa.load(EXAMPLE.read_bytes())
    assert from_path.histogram() == from_bytes.histogram()
    assert from_path.histogram()["armnn.Convolution2d"] == 1
    assert from_path.meta["format"] == "armnn"


def test_convert_leaves_the_loaded_graph_alone():
    graph = nn2tosa.load(EXAMPLE)
    before = graph.histogram()
    result = nn2tosa.convert(graph)
    assert graph.histogram() == before
    assert result.graph.histogram() and all(op.startswith("tosa.") for op in result.graph.histogram())
    assert isinstance(result, nn2tosa.Result)


def test_module_in_the_callers_context_goes_into_their_pass_manager():
    result = nn2tosa.convert(EXAMPLE)
    with ir.Context() as ctx:
        module = result.mlir_module(ctx)
        assert module.context is ctx
        assert result.mlir_module(ctx) is module  # built once per context
        PassManager.parse("builtin.module(tosa-to-linalg-pipeline)").run(module.operation)
        text = str(module)
    assert "linalg.conv_2d_nhwc_fhwc" in text and "tosa.conv2d" not in text
    assert "tosa.conv2d" in str(result.mlir_module())  # its own module is untouched


def test_text_and_bytecode_are_the_same_module():
    result = nn2tosa.convert(EXAMPLE)
    generic, pretty = result.mlir_text(), result.mlir_text(generic=False)
    assert '"tosa.conv2d"(' in generic and "tosa.conv2d %" in pretty
    printed = set()
    for source in (generic, pretty, result.mlir_bytecode()):
        with ir.Context():  # one each: resource blob names are unique per context
            printed.add(str(ir.Module.parse(source)))
    assert len(printed) == 1


def test_flatbuffer_reproduces_arm_nn():
    import tosa_reference_model as trm

    result = nn2tosa.convert(EXAMPLE)
    data = result.tosa_flatbuffer()
    assert data[4:8] == b"TOSA"
    outs, status = trm.run(data, [np.load(EXAMPLE_INPUT)], tosa_level="EIGHTK")
    assert str(status).endswith("TOSA_VALID")
    expected = np.load(EXAMPLE_OUTPUT)
    assert np.max(np.abs(outs[0].reshape(expected.shape) - expected)) <= 1e-4 * max(1, np.max(np.abs(expected)))
    assert result.tosa_flatbuffers() == [data]


def test_profile_sets_the_target_or_names_what_is_missing():
    result = nn2tosa.convert(EXAMPLE, profile="pro_fp+bf16")
    assert (result.target.profiles, result.target.extensions) == (("pro_fp",), ("bf16",))
    assert "extensions = [bf16]" in str(result.mlir_module().operation.attributes["tosa.target_env"])
    assert result.validate() == []
    with pytest.raises(UnsupportedError) as e:
        nn2tosa.convert(EXAMPLE, profile=["pro_int"])
    assert [i.what for i in e.value.items] == ["pro_fp"]
    assert "the requested target pro_int lacks" in str(e.value)
    with pytest.raises(UsageError, match="unknown: pro_gpu"):
        nn2tosa.convert(EXAMPLE, profile="pro_gpu")
    with pytest.raises(UsageError, match="at least one TOSA 1.0 profile"):
        nn2tosa.convert(EXAMPLE, profile="int16")


def test_passes_choose_the_pipeline():
    result = nn2tosa.convert(EXAMPLE, passes=["legalize-armnn"])
    ops = result.graph.histogram()
    assert "nn.conv2d" in ops and not any(op.startswith("tosa.") for op in ops)
    assert [k for k in result.report.timings if k != "report"] == ["load", "legalize-armnn"]
    with pytest.raises(UsageError, match="unknown pass"):
        nn2tosa.convert(EXAMPLE, passes=["legalize-armnn", "no-such-pass"])


def test_progress_is_told_every_stage():
    seen = []
    nn2tosa.convert(EXAMPLE, progress=lambda stage, i, n: seen.append((stage, i, n)))
    assert seen == [("load", 0, 1)] + [(p, i, 5) for i, p in enumerate(nn2tosa.api.tosa_pipeline("armnn"))]


def test_a_multi_function_result_writes_one_flatbuffer_each(tmp_path):
    g = nn2tosa.convert(EXAMPLE).graph
    other = g.copy()
    other.name = "second"
    result = nn2tosa.Result([g, other])
    assert result.graph is g and len(result.functions) == 2
    paths = result.write(str(tmp_path / "m.tosa"), "tosa")
    assert paths == [str(tmp_path / "m.main.tosa"), str(tmp_path / "m.second.tosa")]
    assert (tmp_path / "m.main.tosa").read_bytes() == (tmp_path / "m.second.tosa").read_bytes()
    with pytest.raises(ValueError, match="tosa_flatbuffers"):
        result.tosa_flatbuffer()
    assert 'sym_name = "second"' in result.mlir_text()


# ------------------------------------------------------------------------------ ConvertOptions
@pytest.mark.parametrize("options,message", [
    ({"semantics": "tflm"}, "semantics 'tflm': litert or cpuref"),
    ({"target": "ethos-u99"}, "target 'ethos-u99': one of ethos-u55, ethos-u65, ethos-u85"),
    ({"state": "globals"}, "state='globals': one of variables, io"),
    ({"tosa_version": "0.80"}, "tosa_version '0.80': one of 1.0, 0.100-draft"),
    ({"profile": "pro_int+int3"}, "unknown: int3"),
])
def test_convert_options_refuse_unknown_names_when_made(options, message):
    with pytest.raises(UsageError, match=message):
        nn2tosa.ConvertOptions(**options)
    with pytest.raises(UsageError, match=message):  # the keywords of convert build the same options
        nn2tosa.convert(EXAMPLE, **options) if "tosa_version" not in options else nn2tosa.convert_many([], ".", **options)


def test_convert_takes_options_or_keywords_alike():
    options = nn2tosa.ConvertOptions(profile=("pro_fp",), passes=nn2tosa.api.tosa_pipeline("armnn"))
    assert options.passes == tuple(nn2tosa.api.tosa_pipeline("armnn")) and hash(options)
    by_options = nn2tosa.convert(EXAMPLE, options=options)
    assert by_options.tosa_flatbuffer() == nn2tosa.convert(EXAMPLE, profile=["pro_fp"]).tosa_flatbuffer()
    assert by_options.target.profiles == ("pro_fp",)
    with pytest.raises(UsageError, match="together"):
        nn2tosa.convert(EXAMPLE, options=options, semantics="cpuref")
    with pytest.raises(UsageError, match="unknown option"):
        nn2tosa.convert(EXAMPLE, profle="pro_fp")
    with pytest.raises(UsageError, match="validate apply to written outputs"):  # convert writes nothing
        nn2tosa.convert(EXAMPLE, options=nn2tosa.ConvertOptions(validate=True))
    with pytest.raises(UsageError, match="host= names ops to leave to the host"):
        nn2tosa.convert(EXAMPLE, host=["Softmax"])


def test_the_command_line_builds_the_options_its_flags_say():
    from nn2tosa.cli import build_parser
    from nn2tosa.limits import Limits
    from nn2tosa.options import ConvertOptions

    args = build_parser().parse_args(["convert", "m.armnn", "-o", "m.tosa", "--semantics", "cpuref", "--partial",
                                      "--host", "Softmax", "--max-ops", "99", "--tosa-version", "0.100-draft"])
    assert ConvertOptions.from_arguments(args) == ConvertOptions(
        semantics="cpuref", partial=True, host=("Softmax",), tosa_version="0.100-draft", limits=Limits(max_ops=99))


def test_the_options_limits_bound_the_conversion():
    from nn2tosa.diagnostics import InvalidInputError
    from nn2tosa.limits import Limits

    with pytest.raises(InvalidInputError, match="more than 3 operations, the limit"):  # reading the file, too
        nn2tosa.convert(EXAMPLE, limits=Limits(max_ops=3))
    assert nn2tosa.convert(EXAMPLE, limits=Limits()).graph.histogram()


def test_importing_the_options_loads_neither_mlir_nor_numpy():
    code = ("import sys; from nn2tosa.options import ConvertOptions; ConvertOptions(semantics='cpuref'); "
            "print([m for m in ('mlir', 'numpy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[]"]
