"""The command line as a user runs it: exit codes, one-line errors, no partial outputs."""
import os

from conftest import run_cli

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
    assert "not a recognised model" in one_error_line(proc)


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
