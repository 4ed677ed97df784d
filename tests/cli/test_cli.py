"""The command line as a user runs it: exit codes, one-line errors, no partial outputs."""
import os

from conftest import REPO, run_cli

IR = """func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %d = "nn.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %m = "nn.mul"(%x, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %m : tensor<2xf32>
}
"""


def one_error_line(proc) -> str:
    err = proc.stderr.decode()
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("nn2tosa: error: ")
    return lines[0]


def test_opt_runs_passes(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text(IR)
    out = tmp_path / "out.mlir"
    proc = run_cli("opt", str(src), "--passes=dce", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "nn.neg" not in out.read_text() and "nn.mul" in out.read_text()


def test_opt_reads_stdin():
    proc = run_cli("opt", "-", "--passes=dce", input=IR.encode())
    assert proc.returncode == 0 and b"nn.mul" in proc.stdout


def test_bad_ir_text_is_exit_2_with_position(tmp_path):
    src = tmp_path / "bad.mlir"
    src.write_text("func.func @f() {\n  %x = nonsense\n}\n")
    proc = run_cli("opt", str(src))
    assert proc.returncode == 2
    assert "bad.mlir: line 2 col" in one_error_line(proc)


def test_missing_file_is_exit_2(tmp_path):
    proc = run_cli("inspect", str(tmp_path / "nope.armnn"))
    assert proc.returncode == 2
    assert "no such file" in one_error_line(proc)


def test_unrecognised_model_is_exit_2(tmp_path):
    src = tmp_path / "junk.bin"
    src.write_bytes(os.urandom(64) + b"\0" * 64)
    proc = run_cli("inspect", str(src))
    assert proc.returncode == 2
    line = one_error_line(proc)
    # where, and what the first bytes were taken for by each format
    assert f"{src}: offset 0x0: not a recognised model: bytes 4..8 are " in line
    assert all(what in line for what in ("b'TOSA'", "b'MP00'", "ExecuTorch", "Arm NN"))
    short = tmp_path / "short.bin"
    short.write_bytes(b"abc")
    proc = run_cli("inspect", str(short))
    assert proc.returncode == 2
    assert one_error_line(proc).startswith(f"nn2tosa: error: {short}: offset 0x0: 3 bytes is too short for any model")


def test_unknown_pass_and_output_kind_are_usage_errors(tmp_path):
    src = tmp_path / "in.mlir"
    src.write_text(IR)
    assert run_cli("opt", str(src), "--passes=nope").returncode == 2
    proc = run_cli("convert", str(src), "-o", str(tmp_path / "x.onnx"))
    assert proc.returncode == 2 and "unknown output kind" in one_error_line(proc)


def test_debug_shows_the_traceback(tmp_path):
    proc = run_cli("inspect", str(tmp_path / "nope.armnn"), "--debug")
    assert proc.returncode == 2 and "Traceback" in proc.stderr.decode()


def test_failed_run_leaves_an_existing_output_untouched(tmp_path):
    src = tmp_path / "bad.mlir"
    src.write_text("not mlir")
    out = tmp_path / "out.mlir"
    out.write_text("previous good output")
    assert run_cli("opt", str(src), "-o", str(out)).returncode == 2
    assert out.read_text() == "previous good output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir", "out.mlir"]


def test_help_and_version():
    assert run_cli("--help").returncode == 0
    assert run_cli("--version").stdout.startswith(b"nn2tosa ")


# ------------------------------------------------------------------------------ user errors (issue 18)
EXAMPLE = REPO / "examples" / "cnn_f32.armnn"
EXAMPLE_INPUT = REPO / "examples" / "cnn_f32.input0.npy"


def test_output_in_a_missing_directory_is_exit_2_naming_it(tmp_path):
    out = tmp_path / "nonexistent_dir" / "y.tosa"
    proc = run_cli("convert", str(EXAMPLE), "-o", str(out))
    assert proc.returncode == 2
    assert one_error_line(proc) == f"nn2tosa: error: {out}: no such directory: {out.parent}"


def test_output_naming_a_directory_is_exit_2_and_writes_nothing(tmp_path):
    existing = tmp_path / "adir.tosa"
    existing.mkdir()
    proc = run_cli("convert", str(EXAMPLE), "-o", str(existing))
    assert proc.returncode == 2
    assert one_error_line(proc) == f"nn2tosa: error: {existing}: is a directory, not an output file name"
    slash = f"{tmp_path / 'new.tosa'}/"  # a trailing slash names a directory: never a file called new.tosa
    proc = run_cli("convert", str(EXAMPLE), "-o", slash)
    assert proc.returncode == 2 and one_error_line(proc).startswith(f"nn2tosa: error: {slash}: is a directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir.tosa"] and not list(existing.iterdir())


def test_the_same_output_twice_is_a_usage_error():
    proc = run_cli("convert", str(EXAMPLE), "-o", "-", "-o", "-")
    assert proc.returncode == 2 and proc.stdout == b""
    assert one_error_line(proc) == "nn2tosa: error: -: given twice as an output"


def test_run_into_an_existing_file_is_exit_2(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    proc = run_cli("run", str(EXAMPLE), "--inputs", str(EXAMPLE_INPUT), "-o", str(afile))
    assert proc.returncode == 2
    assert one_error_line(proc) == f"nn2tosa: error: {afile}: exists and is not a directory (the outputs go into a directory)"
    assert afile.read_text() == "mine"


def test_run_with_a_text_file_for_inputs_says_it_is_not_npy(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("1 2 3\n")
    proc = run_cli("run", str(EXAMPLE), "--inputs", str(text), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert line.startswith(f"nn2tosa: error: {text}: not a .npy array: it starts with b'1 2 3") and "pickle" not in line
    assert not (tmp_path / "out").exists()


def test_check_with_an_expected_array_of_the_wrong_shape_names_both_shapes():
    proc = run_cli("check", str(EXAMPLE), "--inputs", str(EXAMPLE_INPUT), "--expected", str(EXAMPLE_INPUT))
    assert proc.returncode == 2
    assert one_error_line(proc) == (f"nn2tosa: error: {EXAMPLE_INPUT}: output 0 'probs' is 1x10 f32, the expected "
                                    "array is 1x16x16x3 float32")


def test_a_closed_pipe_ends_quietly_with_the_sigpipe_status(tmp_path):
    """`nn2tosa convert m -o m.tosa -o - | true`: the reader is gone before the module is written; the
    other output is not left behind (stdout is written before any file appears)."""
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write gets EPIPE
    tosa = tmp_path / "m.tosa"
    proc = subprocess.run([sys.executable, "-m", "nn2tosa", "convert", str(EXAMPLE), "-o", str(tosa), "-o", "-"],
                          stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    os.close(write_end)
    assert proc.returncode == 128 + 13 and proc.stderr == b""  # as a C tool killed by SIGPIPE
    assert list(tmp_path.iterdir()) == []


def test_opt_list_passes_needs_no_input_but_opt_without_input_is_exit_2():
    proc = run_cli("opt", "--list-passes")
    assert proc.returncode == 0 and b"dce" in proc.stdout and proc.stderr == b""
    proc = run_cli("opt")
    assert proc.returncode == 2 and "required: input" in one_error_line(proc)


def test_no_arguments_prints_the_usage_and_the_commands():
    proc = run_cli()
    assert proc.returncode == 2
    out = proc.stdout.decode()
    assert out.startswith("usage: nn2tosa") and all(c in out for c in ("convert", "check", "run", "inspect", "graph",
                                                                        "opt"))
    assert one_error_line(proc) == "nn2tosa: error: no command given"
