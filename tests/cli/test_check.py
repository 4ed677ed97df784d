"""`nn2tosa check` and `nn2tosa run`, as a user runs them."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from conftest import CORPUS, REPO, corpus_manifest, requires_corpus, run_cli

EXAMPLE = REPO / "examples" / "cnn_f32.armnn"
EXAMPLE_INPUT = REPO / "examples" / "cnn_f32.input0.npy"
EXAMPLE_OUTPUT = REPO / "examples" / "cnn_f32.output0.npy"


def test_check_against_arm_nns_output():
    proc = run_cli("check", str(EXAMPLE), "--inputs", str(EXAMPLE_INPUT), "--expected", str(EXAMPLE_OUTPUT))
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert "reference model: TOSA_VALID on given inputs" in out
    assert "tosa-validate (TOSA 1.0 pro_fp, level 8k): valid" in out
    assert "output 0 'probs' 1x10 f32: max relative error" in out and "within fp32 tolerance (0.0001)" in out
    assert "WARNING" not in out + proc.stderr.decode()  # the reference model's chatter is held back


def test_check_fails_on_outputs_out_of_tolerance(tmp_path):
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.load(EXAMPLE_OUTPUT) + np.float32(0.01))
    proc = run_cli("check", str(EXAMPLE), "--inputs", str(EXAMPLE_INPUT), "--expected", str(wrong))
    assert proc.returncode == 1
    assert "NOT within fp32 tolerance" in proc.stdout.decode() and "0 of 1 outputs" in proc.stdout.decode()
    # the looser fp16 bound accepts an error of 0.01
    proc = run_cli("check", str(EXAMPLE), "--inputs", str(EXAMPLE_INPUT), "--expected", str(wrong),
                   "--tolerance", "fp16")
    assert proc.returncode == 0 and "within fp16 tolerance (0.03)" in proc.stdout.decode()


def test_check_without_inputs_runs_random_ones():
    proc = run_cli("check", str(EXAMPLE), "--seed", "7")
    out = proc.stdout.decode()
    assert proc.returncode == 0, out
    assert "TOSA_VALID on random inputs (seed 7)" in out and "output 0 'probs' 1x10 f32: values in" in out


def test_arrays_that_do_not_fit_are_exit_2(tmp_path):
    proc = run_cli("check", str(EXAMPLE), "--inputs", str(EXAMPLE_OUTPUT))
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == (
        f"nn2tosa: error: {EXAMPLE_OUTPUT}: input 0 'input' must be 1x16x16x3 f32 (float32), the array is 1x10 float32")
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"not numpy")
    proc = run_cli("run", str(EXAMPLE), "--inputs", str(junk), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2 and b"not a .npy array" in proc.stderr
    proc = run_cli("check", str(EXAMPLE), "--inputs", str(EXAMPLE_INPUT), str(EXAMPLE_INPUT))
    assert proc.returncode == 2 and b"has 1 input(s) (input), 2 array(s) given" in proc.stderr


def test_without_tosa_tools_the_message_says_what_to_install(tmp_path):
    shadow = tmp_path / "tosa_reference_model"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('simulated: not installed')\n")
    import subprocess

    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run([sys.executable, "-m", "nn2tosa", "check", str(EXAMPLE)], capture_output=True, env=env,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == ("nn2tosa: error: running TOSA needs the TOSA reference model, which is not "
                                            "installed: pip install tosa-tools")


def test_run_writes_the_outputs(tmp_path):
    tosa = tmp_path / "cnn.tosa"
    assert run_cli("convert", str(EXAMPLE), "-o", str(tosa)).returncode == 0
    proc = run_cli("run", str(tosa), "--inputs", str(EXAMPLE_INPUT), "-o", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip() == f"{tmp_path / 'out' / 'output0.npy'}: 'probs' 1x10 float32"
    got, want = np.load(tmp_path / "out" / "output0.npy"), np.load(EXAMPLE_OUTPUT)
    assert got.shape == want.shape and np.max(np.abs(got - want)) <= 1e-4


def _entry(name: str) -> dict:
    return next(e for e in corpus_manifest() if e["file"] == name)


def _arrays(e: dict, key: str) -> list[str]:
    folder = (CORPUS / e["file"]).parent
    return [str(folder / f) for f in e[key]]


@requires_corpus
@pytest.mark.parametrize("name", [
    "armnn/pyarmnn_23.08/cnn_quant_qasymmu8.armnn",  # uint8 in and out, carried as int8
    "mps/models/cnn_fp16.mpsgraph",  # float32 at the boundary, fp16 inside: the fp16 tolerance
    "armnn/pyarmnn_23.08/splitter_exp_stack_argmax_comparison_logsoftmax_multiout.armnn",  # int32, bool, float
])
def test_check_corpus_models_with_the_source_runtimes_outputs(name):
    e = _entry(name)
    proc = run_cli("check", str(CORPUS / e["file"]), "--inputs", *_arrays(e, "input_files"),
                   "--expected", *_arrays(e, "expected_files"))
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert f"{len(e['expected_files'])} of {len(e['expected_files'])} outputs within {e['tolerance']} tolerance" in out


@requires_corpus
def test_run_gives_uint8_back(tmp_path):
    e = _entry("armnn/pyarmnn_23.08/cnn_quant_qasymmu8.armnn")
    proc = run_cli("run", str(CORPUS / e["file"]), "--inputs", *_arrays(e, "input_files"), "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    got, want = np.load(tmp_path / "output0.npy"), np.load(_arrays(e, "expected_files")[0])
    assert got.dtype == np.uint8 and np.max(np.abs(got.astype(int) - want.astype(int))) <= 1


# ------------------------------------------------------------------------------ hostile .tosa (issue 18)
REGRESSIONS = REPO / "tests" / "fuzz_regressions"


def test_a_crash_in_the_child_is_reported_not_suffered():
    from nn2tosa.check import ChildCrashed, in_child

    assert in_child(lambda: [np.arange(3)])[0].tolist() == [0, 1, 2]
    with pytest.raises(ChildCrashed, match="SIGABRT"):
        in_child(os.abort)


def test_a_tosa_the_reference_model_aborts_on_is_exit_2_naming_the_file():
    """Gather indices past the end: the reference model aborts (REQUIRE) in its child process."""
    path = REGRESSIONS / "tosa-check-signal-r2case174.tosa"
    proc = run_cli("check", str(path))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"", err
    assert err.count("\n") == 1
    assert err.startswith(f"nn2tosa: error: {path}: the TOSA reference model: CRASHED (SIGABRT) on random inputs (seed 0): ")


def test_a_tosa_is_run_as_nn2tosa_rewrites_it():
    """A region name of 70,000 characters crashed the reference model when it was handed the file's
    bytes; it runs what nn2tosa writes from the graph it read."""
    proc = run_cli("check", str(REGRESSIONS / "tosa-check-signal-f1b672434a8c.tosa"))
    assert proc.returncode == 0, proc.stderr
    assert "reference model: TOSA_VALID on random inputs" in proc.stdout.decode()
