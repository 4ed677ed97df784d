"""IREE compiles the KV-cache decoder's TOSA MLIR (its caches as tosa.variable, which IREE lowers to
module globals) and runs its 3 steps in one module instance: the globals carry the caches from call to
call, and the logits equal PyTorch's. `iree-compile` runs as a command: IREE's compiler bindings and the
MLIR bindings nn2tosa uses cannot share a process (both load their own nanobind). The MLIR goes as text:
IREE 3.13 reads MLIR 22's bytecode of tosa.variable with a different property layout."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nn2tosa import convert
from nn2tosa.check import compare

PROGRAMS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus" / "mps" / "programs"
DECODE = "llama_decode_kvcache"
IREE_COMPILE = shutil.which("iree-compile") or str(Path(sys.executable).parent / "iree-compile")

pytestmark = [pytest.mark.skipif(not PROGRAMS.is_dir(), reason=f"the program corpus is not at {PROGRAMS}"),
              pytest.mark.skipif(not Path(IREE_COMPILE).exists(), reason="iree-base-compiler is not installed")]


def test_iree_runs_the_decoder_with_state_as_globals(tmp_path: Path):
    runtime = pytest.importorskip("iree.runtime", reason="iree-base-runtime is not installed")
    result = convert(PROGRAMS / f"{DECODE}.pte")  # the caches as TOSA variables, the int32 counters as io
    assert sum(result.graph.op(n) == "tosa.variable" for n in result.graph.nodes()) == 4
    mlir = tmp_path / "decode.mlir"
    result.write(str(mlir), "mlir")
    vmfb = tmp_path / "decode.vmfb"
    compiled = subprocess.run([IREE_COMPILE, str(mlir), "--iree-input-type=tosa", "--iree-hal-target-device=local",
                               "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=generic",
                               "-o", str(vmfb)], capture_output=True, text=True, timeout=600)
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    ctx = runtime.SystemContext(config=runtime.Config("local-task"))
    ctx.add_vm_module(runtime.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes()))
    main = ctx.modules.module[result.graph.name]
    counters = [np.zeros((), np.int32)] * 2
    for step in range(3):
        inputs = [np.load(PROGRAMS / f"{DECODE}.step{step}.input{k}.npy").astype(np.int32) for k in range(2)]
        logits, *counters = [np.asarray(o.to_host()) for o in main(*inputs, *counters)]
        expected = np.load(PROGRAMS / f"{DECODE}.step{step}.expected0.npy")
        c = compare(expected, logits.reshape(expected.shape), "fp32")
        assert c.ok, (step, c)
    assert [int(c) for c in counters] == [3, 3]
