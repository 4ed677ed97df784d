"""A regular (non-editable) install puts nothing but the nn2tosa package into site-packages."""
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def test_regular_install_has_only_nn2tosa(tmp_path):
    target = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "--target", str(target), str(REPO)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    top = sorted(p.name for p in target.iterdir() if p.name != "bin")
    assert top[0] == "nn2tosa" and len(top) == 2 and top[1].startswith("nn2tosa-") and top[1].endswith(".dist-info"), top
    pkg = target / "nn2tosa"
    for sub in ("frontend", "passes", "lowering", "schemas", "ir"):
        assert (pkg / sub / "__init__.py").exists(), sub
    from nn2tosa.schemas import SCHEMA_NAMES

    for name in SCHEMA_NAMES:  # the schemas, and flatc's binary schemas the readers load at run time
        for suffix in (".fbs", ".bfbs"):
            assert (pkg / "schemas" / (name + suffix)).exists(), name + suffix
    # flatc's code ships for the schemas the .tosa writers build with and for reflection.fbs (the .bfbs
    # loader reads with it) only: the readers are schema-driven
    shipped = sorted(p.name for p in (pkg / "schemas").glob("*_generated.py"))
    assert shipped == ["reflection_generated.py", "tosa_0_100_generated.py", "tosa_generated.py"], shipped
    # the installed copy imports on its own (without this checkout on sys.path)
    check = subprocess.run(
        [sys.executable, "-c", "import nn2tosa.frontend, nn2tosa.passes, nn2tosa.lowering, nn2tosa.schemas, "
         "nn2tosa.cli; print(nn2tosa.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(target)},
    )
    assert check.returncode == 0, check.stderr
    assert Path(check.stdout.strip()).is_relative_to(target)
