"""Shared test fixtures: where the corpus is, and how to run the CLI as a user would."""
from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus"

os.environ.setdefault("TOSA_MODEL_NO_BACKTRACE", "1")

# a constraint a rule evaluates without declaring it would be missing from docs/supported_ops.md
import nn2tosa.ir.constraints  # noqa: E402

nn2tosa.ir.constraints.STRICT = True


def corpus_manifest() -> list[dict]:
    """The corpus manifest's entries, or [] when the corpus is absent."""
    path = CORPUS / "manifest.json"
    if not path.exists():
        return []
    return json.loads(path.read_text())["entries"]


requires_corpus = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(), reason=f"corpus not found at {CORPUS} (see DESIGN.md)"
)


@functools.lru_cache(maxsize=None)
def flatc_module(name: str) -> types.ModuleType:
    """flatc's Python code for schemas/<name>.fbs, an independent reader the tests check ours against.
    Only the .tosa schemas' code ships (nn2tosa.schemas.COMMITTED_CODE); the others' is made here, once
    per process, with the flatc tosa-tools installs."""
    from nn2tosa.schemas import COMMITTED_CODE, regenerate

    if name in COMMITTED_CODE:
        return importlib.import_module(f"nn2tosa.schemas.{name}_generated")
    flatc = regenerate.find_flatc()
    if flatc is None:
        pytest.skip("flatc not found (it comes with tosa-tools: site-packages/bin/flatc)", allow_module_level=True)
    made = regenerate.generate(flatc, Path(tempfile.mkdtemp(prefix="nn2tosa-flatc-")), (name,))[name]
    spec = importlib.util.spec_from_file_location(f"{name}_generated", made)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def compile_schema(text: str, includes: tuple[tuple[str, str], ...] = ()):
    """The schema model of .fbs `text` (`includes`: (path, text) of the files it includes), compiled
    by flatc to a .bfbs as regenerate.py compiles the packaged schemas, and loaded like them."""
    from nn2tosa.schemas import regenerate
    from nn2tosa.schemas.bfbs import load_bfbs

    flatc = regenerate.find_flatc()
    if flatc is None:
        pytest.skip("flatc not found (it comes with tosa-tools: site-packages/bin/flatc)")
    tmp = Path(tempfile.mkdtemp(prefix="nn2tosa-bfbs-"))
    (tmp / "test.fbs").write_text(text)
    for path, included in includes:
        (tmp / path).write_text(included)
    subprocess.run([flatc, *regenerate.BFBS_FLAGS, "--no-warnings", "-o", str(tmp), str(tmp / "test.fbs")],
                   check=True, capture_output=True)
    return load_bfbs((tmp / "test.bfbs").read_bytes(), "test.bfbs")


def run_cli(*args: str, input: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python -m nn2tosa ARGS` in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "nn2tosa", *args], capture_output=True, input=input, timeout=timeout
    )


def fuzz_engine():
    """bench/fuzz_long.py as a module (the fuzzing engine the short runs and crafted-file tests share)."""
    spec = importlib.util.spec_from_file_location("fuzz_long", REPO / "bench" / "fuzz_long.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fuzz_long", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def zoo_cluster():
    """A Dask distributed LocalCluster for the zoo's cluster runs (nn2tosa.zoo_dask.local_cluster): two worker
    processes of one thread, loopback only, no dashboard, a model whose worker died retried once. Started once
    for the whole session (its workers' start-up is most of a cluster test's time); yields the cluster."""
    pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install -e '.[test]')")
    from nn2tosa.zoo_dask import local_cluster

    cluster = local_cluster(workers=2, threads_per_worker=1)
    try:
        yield cluster
    finally:
        cluster.close()
