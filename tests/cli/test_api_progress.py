"""The progress bar: drawn on a terminal for a large model, never in pipes or CI."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

from conftest import REPO

EXAMPLE = REPO / "examples" / "cnn_f32.armnn"


def convert(tmp_path, *, tty: bool, **env_changes: str | None) -> tuple[int, str]:
    """Run `nn2tosa convert` with stderr on a pseudo-terminal (or a pipe); returns (exit code, stderr)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["TERM"] = "xterm"
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    args = [sys.executable, "-m", "nn2tosa", "convert", str(EXAMPLE), "-o", str(tmp_path / "m.tosa")]
    if not tty:
        proc = subprocess.run(args, capture_output=True, env=env, timeout=120)
        return proc.returncode, proc.stderr.decode()
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode()


def test_a_large_model_on_a_terminal_shows_each_stage_then_erases_the_bar(tmp_path):
    code, err = convert(tmp_path, tty=True, NN2TOSA_PROGRESS_BYTES="0")  # every model counts as large
    assert code == 0
    for stage in ("load", "legalize-armnn", "canonicalize", "lower-to-tosa", "write tosa"):
        assert f" {stage}  " in err, (stage, err)
    assert err.count("\r\x1b[K[") >= 5 and err.endswith("\r\x1b[K")


def test_no_bar_for_a_small_model_in_pipes_or_in_ci(tmp_path):
    assert convert(tmp_path, tty=True) == (0, "")  # the example is far below the default size
    assert convert(tmp_path, tty=False, NN2TOSA_PROGRESS_BYTES="0") == (0, "")
    assert convert(tmp_path, tty=True, NN2TOSA_PROGRESS_BYTES="0", CI="true") == (0, "")
    assert convert(tmp_path, tty=True, NN2TOSA_PROGRESS_BYTES="0", TERM="dumb") == (0, "")
