"""Regenerate what flatc makes of the packaged schemas: the committed Python code (COMMITTED_CODE) and
the binary schemas (<name>.bfbs, every name in SCHEMA_NAMES) the readers' schema model is loaded from.

    python -m nn2tosa.schemas.regenerate            # rewrite schemas/*_generated.py and schemas/*.bfbs
    python -m nn2tosa.schemas.regenerate --check    # exit 1 if any file differs from what flatc makes

flatc is looked up in $NN2TOSA_FLATC, then next to the tosa-tools install (`site-packages/bin/flatc`),
then on PATH. The committed files were made by flatc FLATC_VERSION; another version may generate
different output, so `--check` refuses to judge with one (exit 2).
"""
from __future__ import annotations

import argparse
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from . import COMMITTED_CODE, SCHEMA_NAMES

FLATC_VERSION = "25.2.10"
HERE = Path(__file__).resolve().parent
# --bfbs-builtins keeps attributes such as force_align, --bfbs-comments the `///` docs (the Arm NN
# descriptor attributes' documentation comes from them).
BFBS_FLAGS = ("--binary", "--schema", "--bfbs-builtins", "--bfbs-comments")


def find_flatc() -> str | None:
    """The path of a flatc executable, or None."""
    env = os.environ.get("NN2TOSA_FLATC")
    if env:
        return env
    dirs = [sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib")]
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # some virtualenv layouts lack it
        pass
    for d in dirs:
        if d:
            candidate = Path(d) / "bin" / "flatc"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return shutil.which("flatc")


def flatc_version(flatc: str) -> str:
    """'25.2.10' from `flatc --version` ('flatc version 25.2.10')."""
    out = subprocess.run([flatc, "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().rsplit(" ", 1)[-1]


def _flatc(flatc: str, flags: tuple[str, ...], out_dir: Path, schema: Path) -> None:
    subprocess.run([flatc, *flags, "--no-warnings", "-o", str(out_dir), str(schema)], check=True, capture_output=True)


def generate(flatc: str, out_dir: Path, names: tuple[str, ...] = COMMITTED_CODE) -> dict[str, Path]:
    """Run flatc's Python generator on each packaged schema into `out_dir`; {name: generated file}."""
    made = {}
    for name in names:
        _flatc(flatc, ("--python", "--gen-onefile"), out_dir, HERE / f"{name}.fbs")
        made[name] = out_dir / f"{name}_generated.py"
    return made


def compile_binary(flatc: str, out_dir: Path, names: tuple[str, ...] = SCHEMA_NAMES) -> dict[str, Path]:
    """flatc's binary schema of each packaged schema into `out_dir`; {name: .bfbs file}."""
    made = {}
    for name in names:
        _flatc(flatc, BFBS_FLAGS, out_dir, HERE / f"{name}.fbs")
        made[name] = out_dir / f"{name}.bfbs"
    return made


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nn2tosa.schemas.regenerate", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if anything differs")
    args = ap.parse_args(argv)
    flatc = find_flatc()
    if flatc is None:
        print("flatc not found (install tosa-tools, put flatc on PATH or set NN2TOSA_FLATC)", file=sys.stderr)
        return 2
    version = flatc_version(flatc)
    if version != FLATC_VERSION:
        print(f"{flatc} is flatc {version}; the committed files come from flatc {FLATC_VERSION}", file=sys.stderr)
        if args.check:
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        made = list(generate(flatc, Path(tmp)).values()) + list(compile_binary(flatc, Path(tmp)).values())
        stale = []
        for path in made:
            target = HERE / path.name
            new = path.read_bytes()
            if target.is_file() and target.read_bytes() == new:
                continue
            stale.append(target.name)
            if not args.check:
                target.write_bytes(new)
    if args.check:
        for name in stale:
            print(f"{name} is out of date: run python -m nn2tosa.schemas.regenerate", file=sys.stderr)
        return 1 if stale else 0
    print(f"regenerated {', '.join(stale)}" if stale else "generated files are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
