"""Regenerate the committed flatc Python code from the packaged schemas (those in COMMITTED_CODE).

    python -m nn2tosa.schemas.regenerate            # rewrite schemas/*_generated.py
    python -m nn2tosa.schemas.regenerate --check    # exit 1 if any file differs from what flatc makes

flatc is looked up in $NN2TOSA_FLATC, then next to the tosa-tools install (`site-packages/bin/flatc`),
then on PATH. The committed files were made by flatc FLATC_VERSION; another version may generate
different text, so `--check` refuses to judge with one (exit 2).
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

from . import COMMITTED_CODE

FLATC_VERSION = "25.2.10"
HERE = Path(__file__).resolve().parent


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


def generate(flatc: str, out_dir: Path, names: tuple[str, ...] = COMMITTED_CODE) -> dict[str, Path]:
    """Run flatc on each packaged schema into `out_dir`; {name: generated file}."""
    made = {}
    for name in names:
        subprocess.run(
            [flatc, "--python", "--gen-onefile", "--no-warnings", "-o", str(out_dir), str(HERE / f"{name}.fbs")],
            check=True,
            capture_output=True,
        )
        made[name] = out_dir / f"{name}_generated.py"
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
        print(f"{flatc} is flatc {version}; the committed code comes from flatc {FLATC_VERSION}", file=sys.stderr)
        if args.check:
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        made = generate(flatc, Path(tmp))
        stale = []
        for name, path in made.items():
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
    print(f"regenerated {', '.join(stale)}" if stale else "generated code is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
