"""Flatbuffer schemas the project reads and writes, and what flatc compiles them to.

- `armnn.fbs`, `mps.fbs`, `tosa.fbs`: the schemas (package data), each with a first line naming its source;
  `tosa_0_100.fbs`: the seed's older TOSA layout (0.90 semantics, stamped 0.100.0 draft), for `--tosa-version 0.100-draft`;
  `pte.fbs`: the part of ExecuTorch's program schema the .pte reader uses.
- `<name>.bfbs`: flatc's binary schema of each (`flatc --binary --schema`): the readers' schema model
  is built from it (`bfbs.load_bfbs`), so slots, defaults and struct layouts are flatc's own.
- `tosa_generated.py`, `tosa_0_100_generated.py`: what `flatc --python --gen-onefile` makes of the schemas
  the `.tosa` writers build with; `reflection_generated.py`: the same for flatc's `reflection.fbs`, the
  schema of a .bfbs. All committed; `regenerate.py` remakes them and the .bfbs files, and `--check`
  tells whether they are current. flatc's code for `armnn.fbs` and `mps.fbs` is not shipped (the
  readers are schema-driven): the tests make it with flatc (tests/conftest.py `flatc_module`).
- `model`: the schema model (`Schema`: enums, unions, struct layouts, table slots and defaults).
- `flatread`: a schema-driven, bounds-checked reader (`FlatBuffer`, `Table`); `verify`: a whole-buffer
  verifier. Both raise `nn2tosa.diagnostics.InvalidInputError` on corrupt input and nothing else.

Typical use:
    from nn2tosa.schemas import load_schema
    from nn2tosa.schemas.flatread import FlatBuffer
    from nn2tosa.schemas.verify import verify_buffer
    fb = FlatBuffer(data, load_schema("armnn"))
    verify_buffer(fb)
    for layer in fb.root()["layers"]: ...
"""
from __future__ import annotations

import functools
import os
import pickle
import sys
import zlib
from pathlib import Path

from .model import Schema, SchemaError

__all__ = ["COMMITTED_CODE", "SCHEMA_NAMES", "Schema", "SchemaError", "load_schema", "schema_text"]

# The schemas the readers load (each ships as <name>.fbs and flatc's <name>.bfbs).
SCHEMA_NAMES = ("armnn", "mps", "tosa", "tosa_0_100", "pte")
# The schemas whose flatc Python code the package ships (<name>_generated.py): the .tosa writers use
# the TOSA ones, the .bfbs loader the reflection one.
COMMITTED_CODE = ("tosa", "tosa_0_100", "reflection")


def schema_text(name: str) -> str:
    """The text of the packaged schema `name` (one of SCHEMA_NAMES)."""
    return _package_file(_checked(name) + ".fbs").decode("utf-8")


def _checked(name: str) -> str:
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    return name


def _package_file(path: str) -> bytes:
    """A file of this package: beside this module (an installed or editable package: no
    importlib.resources, which imports zipfile & co. at every start), else through the import system."""
    beside = Path(__file__).parent / path
    if beside.is_file():
        return beside.read_bytes()
    from importlib import resources

    return resources.files(__name__).joinpath(path).read_bytes()


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> Schema:
    """The model of the packaged schema `name` (one of SCHEMA_NAMES), built once per process from
    flatc's binary schema `<name>.bfbs` (or read from its pickle in __pycache__: `bfbs.load_cached`).

    The returned model is shared: treat it as read-only.
    """
    path = _checked(name) + ".bfbs"
    beside = Path(__file__).parent / path
    if beside.is_file():  # an installed or editable package: the model may be cached beside it
        return _load_cached(beside)
    from .bfbs import load_bfbs

    return load_bfbs(_package_file(path), path)


def _load_cached(path: Path) -> Schema:
    """The model of the .bfbs file `path`, from its pickle in `path`'s `__pycache__` folder when that
    is current, else built (`bfbs.load_bfbs`) and pickled there for the next process.

    flatc's Python reflection code takes ~60 ms on the Arm NN schema (about twice what the hand-written
    .fbs parser it replaced took); unpickling takes ~5 ms. The cache lives where Python keeps its
    bytecode, keyed on the .bfbs bytes and on the source of the code that shapes the model (model.py,
    bfbs.py), written atomically. It is not bytecode: -B / PYTHONDONTWRITEBYTECODE (which this
    project's test machines set) does not stop it, as it does not stop mypy's or pytest's caches;
    in an unwritable folder each process builds the model."""
    data = path.read_bytes()
    here = Path(__file__).parent
    code = (here / "model.py").read_bytes() + (here / "bfbs.py").read_bytes()
    key = b"%08x\n" % zlib.crc32(code, zlib.crc32(data))
    cache = path.parent / "__pycache__" / f"{path.name}.{sys.implementation.cache_tag}.pickle"
    try:
        with open(cache, "rb") as fh:
            if fh.read(len(key)) == key:
                schema = pickle.load(fh)
                if isinstance(schema, Schema):
                    return schema
    except Exception:  # noqa: BLE001 - a missing, stale or unreadable cache is rebuilt
        pass
    from .bfbs import load_bfbs  # (imports flatc's reflection code and the flatbuffers runtime)

    schema = load_bfbs(data, path.name)
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(exist_ok=True)
        tmp.write_bytes(key + pickle.dumps(schema, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, cache)  # atomic: a concurrent process never reads half a file
    except OSError:
        pass
    return schema
